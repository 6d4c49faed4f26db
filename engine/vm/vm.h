#pragma once
// VM: runs a linked Program one node at a time (DESIGN.md "Execution"). The VM only dispatches:
// the schedule, the storage plan and the kernels come from compile (engine/compile/program.h).
//
// Note [VM states]:
//
//   Idle --start()--> Ready --run()/step*()--> Running --+--> Paused   --run()/step*()--> Running
//     ^                 ^                                +--> Finished --start()--> Ready
//     +--(never ran)    +------------ start() -----------+--> Failed   --start()--> Ready
//                                                        +--> Stopped  --start()--> Ready
//
// - Ready: inputs are set, nothing ran. Running: inside run() or a step (what an observer sees).
// - Paused: stopped at a node boundary, with pauseReason(): a pause request, a break position, an
//   observer's pauseBefore verdict, or the end of a step. Every computed value is inspectable and
//   may be replaced (setValue); run() or a step continues. Resuming does not stop again at the
//   boundary it is paused at for a break position or a verdict (as a debugger steps off a
//   breakpoint), but a pause requested while paused is honoured at once by run().
// - Finished: the outer schedule ran; outputValues() is valid. Failed: a kernel or an observer
//   threw; error() holds the exception (rethrown to the caller of run() or step once), pc() stays
//   on the node that failed, which is never retried: run() and the steps return Failed until the
//   next start().
// - Stopped: requestStop() (any thread) ended the execution between nodes or inside a long
//   kernel (Note [Cancellation seam] in cancel.h); like Failed, nothing more runs and no update
//   is applied until the next start(). A stop request is honoured also by a run() or step
//   called while Ready or Paused.
//
// Note [Frames]: the VM holds a stack of frames, each a program with its own pc and storage: the
// outer program, and one frame per inner graph being executed (a node whose op has an inner graph
// enters the child program compile linked for it; the node's outputs are the frame's outputs when
// it returns). step() runs the next node of the innermost frame, a node with a frame included
// (step over); stepInto() enters it instead; stepOut() runs until the innermost frame returned;
// run() runs until the end, a pause or a failure. Observers see inner nodes with their frame
// path (Note [Node events] in observer.h).
//
// Note [Loop frames]: a node whose op is a loop (LoopBody, engine/graph/loop_body.h: a Scan)
// enters its child program once per iteration, in the same frame: the op computes the inner
// inputs of iteration k from the node's inputs and what the earlier iterations gave, and collects
// each iteration's outputs into buffers it allocated once for the whole loop. The frame keeps its
// place on the stack between iterations (FrameInfo::iteration, NodeEvent::iterations), so step()
// runs the loop whole, stepInto() enters iteration 0, and at the end of an iteration stepInto()
// moves to the next one; stepOut() runs to the end of the loop. The caller node's beforeNode
// comes before iteration 0 and its afterNode after the last; a loop of zero steps enters no frame.
//
// Note [Retain policy]: by default a slot is freed after its last reader (StoragePlan). With
// Retain::All (the debugger) every slot keeps its value until the next start(), and a node that
// overwrites an input in place writes into a copy instead, so every retained value stays what it
// was when it was computed (copy-on-destroy). An inner frame's values live while the frame is on
// the stack: returning hands its outputs to the caller node and releases the rest. A value is
// "computed" when its producer's position
// lies before the frame's pc, never because a slot happens to hold a buffer (keepBuffers keeps
// the previous call's buffers in the slots).
//
// Threads: the VM is single-threaded by contract: one thread calls every member, except
// requestPause() and requestStop(), which any thread may call at any time. Observers are called on
// the running thread; addObserver/removeObserver from a callback take effect at the next node
// boundary. Values leave the VM for other threads only as snapshots (snapshot(): deep copies).

#include "engine/compile/program.h"
#include "engine/graph/function_graph.h"
#include "engine/tensor/tensor.h"
#include "engine/vm/observer.h"

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tscope::engine {

class CorrelationSink;

// A node failed while running: names the op, the node id, the frames it ran in, its creation site
// and input shapes.
class ExecutionError : public std::runtime_error {
 public:
  ExecutionError(const std::string& message, std::int64_t nodeId,
                 std::vector<std::int64_t> framePath = {})
      : std::runtime_error(message), m_nodeId(nodeId), m_framePath(std::move(framePath)) {}
  std::int64_t nodeId() const { return m_nodeId; }
  // The outer node ids of the frames the node ran in (empty at the top level).
  const std::vector<std::int64_t>& framePath() const { return m_framePath; }

 private:
  std::int64_t m_nodeId;
  std::vector<std::int64_t> m_framePath;
};

enum class Retain { AfterLastUse, All };

struct VMOptions {
  // Only for the VM(graph, schedule) constructor, which links its own program.
  bool keepBuffers = false;
  Retain retain = Retain::AfterLastUse;
  // One steady-clock pair around every kernel (NodeEvent t0/t1, timings()).
  bool timing = false;
  // Pause after a BreakPoint node whose condition holds (Note [BreakPoint at run time] in
  // engine/ops/debug/breakpoint.h). Off: BreakPoint nodes are plain views.
  bool breakOps = false;
};

class VM {
 public:
  enum class Status { Idle, Ready, Running, Paused, Finished, Failed, Stopped };
  // BreakPointOp: a BreakPoint node's condition held (breakOps on); the VM stopped after it.
  enum class PauseReason { None, Requested, Breakpoint, Observer, Step, BreakPointOp };

  explicit VM(std::shared_ptr<const Program> program, VMOptions options = {});
  // Links `schedule` (every node of graph, in an executable order) itself; graph must outlive the
  // VM. For tests and tools that run a FunctionGraph without compile().
  VM(const FunctionGraph& graph, std::vector<Apply*> schedule, VMOptions options = {});
  ~VM();
  VM(const VM&) = delete;
  VM& operator=(const VM&) = delete;

  // Begins an execution: inputValues[i] is the value of graph().inputs()[i] (already checked by
  // the caller; an undefined value for a shared variable reads its current value). Any earlier
  // execution is abandoned. Status becomes Ready (Finished for an empty schedule).
  void start(std::span<const Tensor> inputValues);
  // Runs until the end, a pause or a failure (rethrown). Returns Finished or Paused (Failed when
  // called after a failure).
  Status run();
  // Step over: runs the next node of the innermost frame (a node with an inner graph runs whole,
  // stopping only at a pause inside it). At the end of an inner frame, returns from it. False
  // when there was nothing to run (not started, finished or failed).
  bool step();
  // Runs one unit: a node, entering a frame, or returning from one.
  bool stepInto();
  // Runs until the innermost frame returned (at the top level: run()).
  Status stepOut();
  // Asks the VM to stop at the next node boundary; thread-safe, sticky until a pause consumes it
  // (a request made before run() stops run() before the first node).
  void requestPause() { m_pauseRequested.store(true, std::memory_order_release); }
  bool pauseRequested() const { return m_pauseRequested.load(std::memory_order_acquire); }
  // Asks the VM to stop (Status::Stopped) at the next node boundary or inside a long kernel;
  // thread-safe, sticky until a stop consumes it or the next start().
  void requestStop() {
    m_stopRequested.store(true, std::memory_order_release);
    m_pauseRequested.store(true, std::memory_order_release);
  }
  bool stopRequested() const { return m_stopRequested.load(std::memory_order_acquire); }
  // Note [Committed runs]: asks the next start() for a committed run, one that goes to its end
  // without pausing (a plain call, DebugSession::call). Its in-place updates of graph inputs
  // (Gemm{inplace} on a shared W) write into the inputs' own buffers, with no private copy per
  // call; so that a stop never leaves a parameter half-updated, stop and pause requests are
  // honoured only up to the first node that overwrites a graph input. From that node on the run
  // goes to its end (kernels no longer see the stop flag); the request then waits for the next
  // start(), and the run's updates are whole. Granted only when nothing can pause the run:
  // Retain::AfterLastUse, no breaks, breakOps off, no observer that mayInterrupt(). Returns
  // whether it was granted (applies pending observer changes first). Without an input the
  // schedule overwrites, a committed run is an ordinary one.
  bool commitNextRun();
  // True once a committed run has reached its first overwrite of a graph input.
  bool committed() const;
  Status status() const { return m_status; }
  PauseReason pauseReason() const { return m_pauseReason; }
  // The failure of a Failed run (null otherwise) and its message.
  const std::exception_ptr& error() const { return m_error; }
  std::string errorMessage() const;

  // Break positions (Note [VM states]): stop before `node` runs; node is a node of the outer
  // graph or of any child program's graph.
  void setBreakBefore(const Apply& node, bool on = true);
  void clearBreakpoints() { m_breaks.clear(); }
  bool hasBreakBefore(const Apply& node) const { return m_breaks.count(&node) > 0; }

  // Note [BreakPoint at run time]: with breakOps on, a BreakPoint node whose condition holds
  // pauses the VM right after it (in any frame), pc past it, reason BreakPointOp; resuming does
  // not stop again at that boundary for a break position or a verdict.
  void setBreakOps(bool on) { m_options.breakOps = on; }
  bool breakOps() const { return m_options.breakOps; }
  // After a pause with PauseReason::BreakPointOp: the BreakPoint node that paused (its outputs
  // are the monitored values, readable with value()); null otherwise.
  const Apply* breakOpNode() const { return m_breakOpNode; }

  void setRetain(Retain retain) { m_options.retain = retain; }
  Retain retain() const { return m_options.retain; }
  void setTiming(bool on) { m_options.timing = on; }
  bool timing() const { return m_options.timing; }
  // Per node of `program` (the outer one or a child): time in its kernel (or its frame) summed
  // over calls since construction or resetTimings(), when timing is on.
  struct NodeTiming {
    std::int64_t totalNs = 0;
    std::int64_t calls = 0;
    std::int64_t lastNs = 0;
  };
  std::span<const NodeTiming> timings(const Program& program) const;
  void resetTimings();

  const Program& program() const { return *m_program; }
  const std::shared_ptr<const Program>& programPtr() const { return m_program; }
  const FunctionGraph& graph() const { return m_program->graph(); }
  const std::vector<Apply*>& schedule() const { return m_program->schedule(); }
  // Index of the next node to run in the outer frame.
  std::size_t pc() const;

  // Frames: 0 is the outer one, depth() the innermost.
  struct FrameInfo {
    const Program* program = nullptr;
    std::size_t pc = 0;              // next node to run in this frame
    std::int64_t callerNodeId = -1;  // the outer node this frame runs for (-1 for frame 0)
    std::size_t callerPosition = 0;  // its position in the frame below
    // Note [Loop frames]: the iteration running in this frame and the loop's step count; -1 and 0
    // for a frame whose caller is not a loop.
    std::int64_t iteration = -1;
    std::int64_t iterations = 0;
  };
  std::size_t depth() const { return m_stack.size() - 1; }
  FrameInfo frame(std::size_t index) const;
  // The caller node ids of frames 1..depth().
  const std::vector<std::int64_t>& framePath() const { return m_path; }
  // One per framePath() entry: the iteration of that frame (Note [Loop frames]), -1 when its
  // caller is not a loop.
  const std::vector<std::int64_t>& frameIterations() const { return m_iterations; }

  // The value of a variable, looked up from the innermost frame outwards; null when it is not
  // computed yet in this execution, was freed after its last use, or belongs to no active frame.
  const Tensor* value(const Variable& var) const;
  const Tensor* value(std::size_t frameIndex, const Variable& var) const;
  // A deep copy, safe to hand to another thread; nullopt when value() is null.
  std::optional<Tensor> snapshot(const Variable& var) const;
  // Replaces a computed value (at a pause), filtered against the variable's type.
  void setValue(const Variable& var, const Tensor& value);
  // Note [Update double buffering]: after a finished run with keepBuffers, Function hands the
  // buffer a shared variable held before its update back to the node that computes the update, so
  // the next call writes the new value into it instead of allocating (reuseOrAllocate still checks
  // that nothing else holds the buffer). `input` is the shared variable's graph input, whose slot
  // lets go of the buffer; `computed` is the update's value.
  void recycleBuffer(const Variable& input, const Variable& computed, Tensor buffer);
  // The graph outputs' values after a finished run (moved out of the storage unless keepBuffers
  // or Retain::All).
  std::vector<Tensor> outputValues();

  void addObserver(std::shared_ptr<ExecutionObserver> observer);
  void removeObserver(const ExecutionObserver& observer);
  const std::vector<std::shared_ptr<ExecutionObserver>>& observers() const { return m_observers; }

  // Note [Correlation] (engine/vm/correlation.h): the sink gets push(framePath, nodeId) / pop()
  // around every node's work, so a GPU source can map its records to nodes; null removes it.
  // May be called at any time, from an observer's callback included (the profiler installs its
  // GPU source's sink in onStart); pop() must not throw.
  void setCorrelationSink(std::shared_ptr<CorrelationSink> sink);
  const std::shared_ptr<CorrelationSink>& correlationSink() const { return m_correlation; }

 private:
  struct Hot;
  struct Frame;
  enum class Drive { Run, StepOver, StepInto, StepOut };
  Status drive(Drive how);
  Status driveLoop(Drive how, std::size_t startDepth, bool stepping);
  bool runFast();
  bool boundaryPauses(Frame& f, bool first);
  void runNode(Frame& f);
  void enterFrame(Frame& f);
  void returnFromFrame();
  // Note [Loop frames]: sets the inner inputs of iteration c.iteration (a failure of the op fails
  // the VM and is rethrown); finishLoop hands the collected outputs to the caller node.
  void beginIteration(Frame& f, Frame& c);
  void finishLoop(Frame& f, Frame& c);
  void finishRun();
  void pause(PauseReason reason);
  void stopRun();
  void fail(Frame& f, std::exception_ptr error, bool nodeRan);
  [[noreturn]] void rethrowWithContext(const Frame& f, const Hot& t, const std::exception& e) const;
  NodeEvent eventFor(const Frame& f, std::size_t position) const;
  void applyObserverChanges();
  Frame& frameFor(const Program& program);
  const Frame* frameOf(const Variable& var, std::int64_t* slot) const;
  void clearFrame(Frame& f);

  std::shared_ptr<const Program> m_program;
  VMOptions m_options;
  std::unique_ptr<Frame> m_root;
  std::unordered_map<const Program*, std::unique_ptr<Frame>> m_children;
  std::vector<Frame*> m_stack;
  std::vector<std::int64_t> m_path;
  std::vector<std::int64_t> m_iterations;  // one per m_path entry
  std::unordered_set<const Apply*> m_breaks;
  std::unordered_map<const Program*, std::vector<NodeTiming>> m_timings;
  std::vector<std::shared_ptr<ExecutionObserver>> m_observers;
  std::shared_ptr<CorrelationSink> m_correlation;
  std::vector<std::pair<std::shared_ptr<ExecutionObserver>, const ExecutionObserver*>> m_pending;
  Status m_status = Status::Idle;
  PauseReason m_pauseReason = PauseReason::None;
  std::exception_ptr m_error;
  // Whether the current boundary was already checked for breaks (Note [VM states]).
  bool m_boundaryVisited = false;
  bool m_inCallbacks = false;
  // The BreakPoint node of a BreakPointOp pause, set by runNode when its condition held.
  const Apply* m_breakOpNode = nullptr;
  std::atomic<bool> m_pauseRequested{false};
  // Also raises m_pauseRequested, so the hot loop checks one flag (Note [Cancellation seam]).
  std::atomic<bool> m_stopRequested{false};
  // Note [Committed runs]: set by commitNextRun(), consumed by start(); the root-frame position of
  // a committed run's first overwrite of a graph input (none: SIZE_MAX).
  bool m_commitNext = false;
  std::size_t m_commitAt = static_cast<std::size_t>(-1);
};

std::string_view statusName(VM::Status status);
// "none", "requested", "breakpoint", "observer", "step", "breakpoint-op".
std::string_view pauseReasonName(VM::PauseReason reason);

}  // namespace tscope::engine
