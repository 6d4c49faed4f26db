#pragma once
// Profiler: the CPU event source of the profiler, an ExecutionObserver that times every node a VM
// runs (outer nodes and the nodes of inner frames: OpFromGraph bodies, IfElse branches), counts
// the bytes each node allocates and frees (engine/tensor/alloc_hook.h), keeps the live and peak
// memory of each run, and a bounded timeline of node events. snapshot() turns what it measured
// into a Profile (profiling/profile.h).
//
//   auto profiler = std::make_shared<prof::Profiler>();
//   engine::Function f = engine::compile({x}, {y}, {}, {.mode = Mode::FastRun,
//                                                       .observers = {profiler}});
//   f(args);                        // warm-up: not measured
//   profiler->setMeasuring(true);
//   for (int i = 0; i < 10; ++i) f(args);
//   prof::Profile p = profiler->snapshot(f);
//
// profileFunction (profiling/profile_run.h) does all of this for one Function.
//
// Note [Profiler hot path]: the Profiler sizes its tables once per program
// (Program::totalNodeCount(): one slot per node of the program and of every child program, under
// the caller node it runs for) and the event ring by chunks, so a measured node costs no map
// lookup, no string and no allocation: beforeNode pushes (slot, allocation counters) on a small
// stack, afterNode pops it, adds the node's time and bytes to the slot's per-run sums (one cache
// line per node, in an array of their own), compares a hash of the call's shapes with the last
// one recorded (the slot's shape vectors are written only when it changed) and writes one
// NodeEventRecord into the ring. Per-run sums become samples (TimeStats over runs) at onFinish.
// Times come from the VM's own clock pair around the kernel (the Profiler turns VMOptions::timing
// on in onStart), so they exclude every observer's cost, the Profiler's included; a node with an
// inner graph is timed from entering its frame to returning from it (its inner nodes and their
// observers included: inclusive time).
//
// Note [Runs that do not finish]: a run's figures are committed at onFinish. A run that fails
// (onError), is stopped, or is abandoned by the next start() adds nothing: no samples, no calls,
// no run span, and its events are taken back out of the ring. A paused run (a DebugSession at a
// breakpoint) goes on counting when it resumes; its wall time includes the pause.
//
// Threads: the callbacks run on the thread that runs the VM; snapshot(), setMeasuring() and
// reset() are called between calls from that thread (or with the VM idle).

#include "engine/compile/function.h"
#include "engine/tensor/alloc_hook.h"
#include "engine/vm/observer.h"
#include "profiling/profile.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace tscope::prof {

struct ProfilerOptions {
  // Node events kept for the timeline (the capture budget, Note [Capture budget] in profiler.cpp):
  // 2^18 = 262,144 events, enough for 1,000 runs of ResNet-18 fast_run (docs/profiling.md).
  std::int64_t maxEvents = std::int64_t{1} << 18;
  bool memory = true;  // the allocation hook (bytes allocated/freed, live, peak)
  bool events = true;  // keep NodeEventRecords for the timeline
  // The time source, in nanoseconds; empty: the VM's clock (steady-clock nanoseconds, the pair
  // the VM reads around each kernel). Set, it is read around each node instead of the VM's pair
  // and at the start and end of each run: tests give a fake clock.
  std::function<std::int64_t()> clock;
};

class Profiler : public engine::ExecutionObserver {
 public:
  explicit Profiler(ProfilerOptions options = {});
  ~Profiler() override;

  // Only runs that start while measuring count; the others are warm-up runs (counted as such).
  void setMeasuring(bool on) { m_measuring = on; }
  bool measuring() const { return m_measuring; }
  // Forgets everything measured (the tables stay sized for the program). A Profiler observes one
  // program: attached to a VM of another, it starts over for that one at its next measured run.
  void reset();
  // Everything measured so far, for `function` (its program names the nodes; its rewrite profile
  // and compile times fill the summary). Throws std::invalid_argument when the Profiler measured
  // another program than function's.
  Profile snapshot(const engine::Function& function) const;
  // The same for a program without a Function (no compile figures).
  Profile snapshot(const engine::Program& program) const;

  // The profiler's clock (nanoseconds): ProfilerOptions::clock, else the VM's.
  std::int64_t now() const;
  // The last finished measured run's call spanned [startNs, endNs] on now()'s clock (a caller
  // that timed the whole Function call, argument checks and updates included): it replaces the
  // span from onStart to onFinish for the call time and the run's slice in the trace.
  void recordCallSpan(std::int64_t startNs, std::int64_t endNs);

  std::int64_t measuredRuns() const { return static_cast<std::int64_t>(m_runs.size()); }
  // Runs abandoned because the profiler itself failed (Note [Profiler failures] in profiler.cpp).
  std::int64_t lostRuns() const { return m_lostRuns; }
  const ProfilerOptions& options() const { return m_options; }

  void onStart(engine::VM& vm) override;
  void beforeNode(engine::VM& vm, const engine::NodeEvent& event) override;
  void afterNode(engine::VM& vm, const engine::NodeEvent& event) override;
  void onError(engine::VM& vm, const engine::NodeEvent& event, const std::exception_ptr&) override;
  void onFinish(engine::VM& vm) override;
  // Note [Passive observers]: the profiler never pauses, stops or fails a run (its callbacks
  // catch their own failures, Note [Profiler failures] in profiler.cpp).
  bool mayInterrupt() const override { return false; }

 private:
  struct Slot;
  struct Hot;
  struct Open;
  struct Ring;
  void build(std::shared_ptr<const engine::Program> program);
  void addSlots(const engine::Program& program, std::int32_t parent, std::int32_t body,
                const std::vector<std::int64_t>& framePath);
  std::int32_t slotOf(const engine::VM& vm, const engine::NodeEvent& event) const;
  void onStartImpl(engine::VM& vm);
  void beforeNodeImpl(engine::VM& vm, const engine::NodeEvent& event);
  void afterNodeImpl(engine::VM& vm, const engine::NodeEvent& event);
  void onFinishImpl(engine::VM& vm);
  template <class Body>
  void guarded(Body&& body) noexcept;
  void settleTrailingFrees();
  static void recordShapes(Slot& slot, const engine::NodeEvent& event);
  void abandonRun();
  void endRun();
  Profile snapshotOf(const engine::Program& program) const;

  ProfilerOptions m_options;
  bool m_measuring = false;
  std::shared_ptr<const engine::Program> m_program;
  std::vector<Slot> m_slots;
  std::vector<Hot> m_hot;  // one per slot
  std::vector<Open> m_open;
  std::unique_ptr<Ring> m_ring;
  // The current run (Note [Runs that do not finish]).
  bool m_inRun = false;
  std::int64_t m_runStart = 0;
  std::int64_t m_runLive0 = 0;
  std::int64_t m_runPeak = 0;
  std::int64_t m_runFirstEvent = 0;
  std::vector<std::int32_t> m_touched;  // slots that ran in the current run
  engine::AllocationCounters* m_counters = nullptr;
  engine::AllocationCounters* m_previousCounters = nullptr;
  bool m_installed = false;
  std::int32_t m_trailSlot = -1;  // the node whose trailing frees are not settled yet
  std::int64_t m_trailFreed = 0;
  // Committed runs.
  std::vector<RunSpan> m_runs;
  std::vector<double> m_inNodes;  // seconds in top-level nodes, per run
  std::int64_t m_peakLive = 0;
  std::int64_t m_warmupRuns = 0;
  std::int64_t m_originNs = 0;
  bool m_haveOrigin = false;
  std::int64_t m_lostRuns = 0;
};

// Where the lead wires the cost model at merge (P2's Op::cost): fills profile.cost from the
// node's op and the last measured input shapes; leaves it unknown until then.
void fillCost(NodeProfile& profile, const engine::Apply& node);

}  // namespace tscope::prof
