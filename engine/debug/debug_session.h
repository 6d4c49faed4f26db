#pragma once
// DebugSession: a debugger over one compiled Function (issue 18): run, step, step into inner
// graphs, breakpoints from outside the graph, BreakPoint ops, NanGuard pauses, reading and
// editing values at a pause, recompute after an edit, restart, stop. The GUI and `tensorscope
// debug` drive exactly this API.
//
//   Function f = compile({x}, {loss}, updates, {.mode = Mode::FastRun});
//   DebugSession s(f);
//   int bp = s.addBreakpoint(parseBreakSpec("op:Elemwise{log}@nan")).get();
//   s.start({xValue}).get();                         // Ready: nothing ran
//   SessionState st = s.run().get();                 // Paused (Breakpoint), or Finished
//   if (st.phase == SessionPhase::Paused) {
//     for (const ValueView& v : s.values(0).get()) show(v.name, v.stats);
//     s.setValue("h", edited, 0).get();              // checked against h's type
//     RecomputeResult r = s.recompute().get();       // only the nodes downstream of h
//     st = s.run().get();                            // continues with the edited values
//   }
//   if (st.phase == SessionPhase::Finished) outputs = s.finish().get();  // applies the updates
//
// Note [Session thread]: the session owns one worker thread, and that thread alone drives the
// Function's VM (Function::begin, run, step, value reads and edits). Every command is queued and
// answered in order through its future; a command's errors (wrong state, unknown node or
// variable, a tensor of the wrong type) arrive as exceptions through that future and change
// nothing. Two commands act at once, without waiting for the queue: stop() and interrupt() ask
// the running VM to stop or pause at the next node boundary (stop also inside long kernels,
// engine/vm/cancel.h), then queue their answer. state() returns the latest snapshot without
// waiting for the worker. While a session exists, nothing else may use the Function.
//
// Note [Session phases]:
//
//   Idle --start()--> Ready --run/step*--> (Running) --+--> Paused   --run/step*--> (Running)
//                       ^                              +--> Finished --finish()--> Idle
//                       |                              +--> Failed
//                       +--- start() / restart() ------+--> Stopped  (stop() from any phase)
//
// - Paused: a breakpoint hit, a BreakPoint op's condition held, NanGuard paused, a step ended, or
//   interrupt() was called. Every value computed so far can be read, in every frame.
// - Finished: the last node ran; finish() applies the updates and returns the outputs; until
//   then no shared variable changed. Failed: a node threw (an ExecutionError, with its node).
// - Stopped: stop() ended the execution; it applied no update, every shared variable is as it
//   was before start(), and the Function is ready for the next start().
// - Running is what state() shows while a run or step command executes on the worker.
//
// Note [Session values]: the session runs the VM with Retain::All (unless options say otherwise),
// so every value computed in the execution stays readable and as it was computed until the next
// start. Values handed out (ValueView::value) are deep copies, safe on any thread. Names: a
// variable's name ("h"), "#ID" (a variable id), or "node:ID" / "node:ID.K" (output K of node ID,
// output 0 by default), looked up in the frame given.
//
// Note [Edits and recompute]: setValue replaces the value of a variable that is already computed
// (a graph input, a shared value, or an output of a node that ran), whether its readers ran or
// not; a value not computed yet is refused (the VM writes it when its node runs). The new value
// must have the variable's dtype, rank and static dimensions. Continuing uses the edited values.
// After edits of values that nodes already read, recompute() re-runs, in schedule order, only the
// executed nodes downstream of the edited values (in the frames where the edits were made), and
// reports which values changed; undoEdit() puts the original value back (call recompute() again
// to propagate that).

#include "engine/compile/function.h"
#include "engine/debug/breakpoints.h"
#include "engine/debug/value_stats.h"
#include "engine/tensor/tensor.h"
#include "engine/vm/observer.h"

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::debug {

// NanGuard (engine/debug/nan_guard.h): its options and the report of a NanGuard pause.
struct NanGuardOptions;
struct NanReport;

struct DebugSessionOptions {
  // Retain::All keeps every value readable at a pause, and recompute() needs it.
  Retain retain = Retain::All;
  // BreakPoint ops in the graph pause the session when their condition holds.
  bool breakOps = true;
  // Kernel timings (VM::timings) and NodeEvent t0/t1.
  bool timing = false;
  // More observers attached to the VM for the session's executions (a profiler).
  std::vector<std::shared_ptr<ExecutionObserver>> observers;
};

struct BreakpointInfo {
  int id = 0;
  BreakpointSpec spec;
  int hits = 0;
  // The optimized-graph nodes it breaks on (outer graph and inner graphs).
  std::vector<std::int64_t> nodes;
  // How it was resolved, when that is worth saying ("node 12 was fused into Composite node 40").
  std::string note;
};

enum class PauseKind {
  None,
  Breakpoint,    // SessionState::breakpointId
  BreakPointOp,  // SessionState::breakOpName; its outputs are the monitored values
  NanGuard,      // SessionState::nan
  Step,          // step, stepInto, stepOut, runToNode ended
  StopRequested,
  Interrupted,  // interrupt()
  Finished,
  Error,  // SessionState::error, errorNodeId
};
enum class SessionPhase { Idle, Ready, Running, Paused, Finished, Failed, Stopped };
std::string_view pauseKindName(PauseKind kind);  // "breakpoint", "breakpoint-op", "nan-guard", ...
std::string_view phaseName(SessionPhase phase);  // "idle", "ready", ...

struct FrameView {
  std::int64_t callerNodeId = -1;  // -1 for the outer frame
  std::string callerOp;            // the op of the caller node ("OpFromGraph{...}")
  std::size_t pc = 0;              // the next position to run in this frame's schedule
  std::int64_t nextNodeId = -1;    // -1 at the end of the schedule
  std::string nextNodeOp;
  std::size_t scheduleSize = 0;
  // Note [Loop frames] (engine/vm/vm.h): the iteration this frame runs and the loop's step count
  // when its caller is a loop (a Scan); -1 and 0 otherwise.
  std::int64_t iteration = -1;
  std::int64_t iterations = 0;
  // The frame's linked program (its schedule() for a listing around pc); immutable, owned by the
  // Function, so it may be read on any thread while the Function lives.
  const Program* program = nullptr;
};

// An immutable snapshot of the session.
struct SessionState {
  SessionPhase phase = SessionPhase::Idle;
  PauseKind reason = PauseKind::None;
  std::uint64_t serial = 0;       // one per pause (and per finish, failure, stop)
  std::vector<FrameView> frames;  // outer first; empty when no execution is active
  int breakpointId = -1;          // PauseKind::Breakpoint
  std::string breakOpName;        // PauseKind::BreakPointOp
  std::int64_t breakOpNodeId = -1;
  std::shared_ptr<const NanReport> nan;  // PauseKind::NanGuard
  std::string error;                     // PauseKind::Error (the ExecutionError's message)
  std::int64_t errorNodeId = -1;
  std::int64_t lastNodeId = -1;  // the node that ran last (in any frame)
  std::string message;           // one line for a status bar or a terminal
};

struct ValueView {
  std::int64_t varId = -1;
  std::string name;              // Variable::displayName()
  std::int64_t producerId = -1;  // the node that computed it; -1 for an input, shared or constant
  int outputIndex = 0;
  std::size_t frame = 0;
  Tensor value;  // a deep copy
  TensorStats stats;
  bool edited = false;  // set with setValue and not undone
};

struct RecomputeResult {
  std::vector<std::int64_t> rerunNodes;   // in the order they ran
  std::vector<std::int64_t> changedVars;  // variable ids whose value is not bitwise the same
};

class DebugSession {
 public:
  // Starts the worker thread (Note [Session thread]); f must outlive the session.
  explicit DebugSession(Function& f, DebugSessionOptions options = {});
  ~DebugSession();  // stops a running execution and joins the worker
  DebugSession(const DebugSession&) = delete;
  DebugSession& operator=(const DebugSession&) = delete;

  // Begins an execution on args (checked as Function::begin does): Ready, nothing ran. An earlier
  // execution that did not finish() is abandoned and applies no update.
  std::future<SessionState> start(std::vector<Tensor> args);
  // Continue: until a pause, the end, a failure or a stop.
  std::future<SessionState> run();
  // start(args) and run() as one command (one hand-off to the worker: what a loop of calls that
  // should only stop at a breakpoint uses).
  std::future<SessionState> run(std::vector<Tensor> args);
  std::future<SessionState> continueRun() { return run(); }
  // One node of the innermost frame (a node with an inner graph runs whole: step over).
  std::future<SessionState> step();
  // Into the inner graph of the next node (OpFromGraph body, the taken IfElse branch), else step.
  std::future<SessionState> stepInto();
  // Until the innermost frame returned (at the outer frame: run()).
  std::future<SessionState> stepOut();
  // Until just before node `nodeId` (of the outer graph or an inner one) runs; a breakpoint or
  // another pause on the way stops first. Refused for an unknown node or one that already ran.
  std::future<SessionState> runToNode(std::int64_t nodeId);
  // Until just before the body of loop node `nodeId` (a Scan, of the outer graph or an inner
  // one) starts iteration `iteration`: the innermost frame is then that loop's, at pc 0, with
  // FrameView::iteration == iteration. A breakpoint or another pause on the way stops first; a
  // loop with fewer steps finishes without pausing there. Refused for an unknown node, a node
  // that is not a loop, or a negative iteration.
  std::future<SessionState> runToIteration(std::int64_t nodeId, std::int64_t iteration);
  // Starts again with the same arguments and the same shared values (the random state included)
  // as the last start(): the same values again. Also after finish() applied updates (they are
  // undone first). Ready, nothing ran. The argument tensors of start() are held, not copied:
  // do not write into them while you may restart.
  std::future<SessionState> restart();
  // From every phase, also in the middle of a long node: ends the execution (Stopped, no update);
  // from Idle it changes nothing.
  std::future<SessionState> stop();
  // Pauses a running execution at the next node boundary (Interrupted); when nothing runs, it
  // answers the current state.
  std::future<SessionState> interrupt();

  // Breakpoints (engine/debug/breakpoints.h). onOriginalGraph: a Node target names a node of the
  // graph as built; the breakpoint follows it into the optimized graph through the rewrite log.
  // Refused (std::invalid_argument): an unknown node, variable, op type or scope, a condition on
  // outputs of the wrong dtype.
  std::future<int> addBreakpoint(BreakpointSpec spec, bool onOriginalGraph = false);
  std::future<void> removeBreakpoint(int id);
  std::future<void> setBreakpointEnabled(int id, bool enabled);
  std::future<std::vector<BreakpointInfo>> breakpoints();

  // Every value computed so far in frame `frame` (0: the outer graph; frames() in the state).
  std::future<std::vector<ValueView>> values(std::size_t frame = 0);
  // One value (Note [Session values] for names); nullopt when it is not computed yet. Throws for
  // an unknown name or frame.
  std::future<std::optional<ValueView>> value(std::string nameOrId, std::size_t frame = 0);
  // The inputs of the next node of the innermost frame.
  std::future<std::vector<ValueView>> nextInputs();
  // Note [Edits and recompute]. Throws std::invalid_argument naming the variable, the expected
  // and the found type; std::logic_error when not paused or the value is not computed yet.
  std::future<void> setValue(std::string nameOrId, Tensor value, std::size_t frame = 0);
  std::future<RecomputeResult> recompute();
  std::future<void> undoEdit(std::string nameOrId, std::size_t frame = 0);

  // After Finished: applies the updates and returns the outputs (Execution::finish); Idle after.
  std::future<std::vector<Tensor>> finish();
  // start(args), run() and, when the run finished without a pause, finish(), as one command: the
  // outputs, or nullopt when the execution paused, failed or was stopped (it then stays so:
  // state() says why, and the other commands go on from there). Made while the session is idle
  // (nothing queued or running), it runs on the calling thread and returns a ready future, so a
  // training loop through the session costs no thread hand-off per step (Note [Inline call] in
  // debug_session.cpp; Note [Session cost] in tests/bench/bench_session.cpp); its onPause
  // callback then runs on that thread. When nothing can pause it (Retain::AfterLastUse, no enabled
  // breakpoint, no pausing NanGuard or observer) the run is committed (Note [Committed runs] in
  // engine/vm/vm.h): shared variables are updated in place with no copy per call, a stop() that
  // arrives after the first in-place update lets the call run to its end and apply its updates
  // (whole), and restart() cannot repeat the call afterwards.
  std::future<std::optional<std::vector<Tensor>>> call(std::vector<Tensor> args);

  // NanGuard with action Pause for the session's executions (nullopt: off); takes effect at the
  // next start().
  std::future<void> setNanGuard(std::optional<NanGuardOptions> options);

  // The latest snapshot; thread-safe, never waits for the worker.
  SessionState state() const;
  // Called on the worker with every new state that has a serial (pauses, finish, failure, stop).
  // The callback may queue commands but must not wait for their futures (it runs on the thread
  // that answers them).
  void onPause(std::function<void(const SessionState&)> callback);
  const Function& function() const;

  struct Impl;  // internal: engine/debug/debug_session_impl.h

 private:
  std::unique_ptr<Impl> m_impl;
};

}  // namespace tscope::engine::debug
