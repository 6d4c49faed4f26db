#pragma once
// DebugSession's private state, shared by debug_session.cpp (the worker and the run commands),
// session_breakpoints.cpp (breakpoints) and session_values.cpp (values, edits, recompute).
// Everything below `worker-only` is touched by the worker thread alone (Note [Session thread]).

#include "engine/debug/debug_session.h"
#include "engine/vm/vm.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tscope::engine::debug {

class NanGuard;

// One node of the program tree (the outer program and every child program, recursively).
struct ProgramNode {
  const Program* program;
  std::size_t position;
  const Apply* node;
};

struct Breakpoint {
  BreakpointInfo info;
  // The nodes it breaks on, and per node the output indices its condition reads (all outputs
  // the condition applies to; the one variable for a Variable target).
  std::unordered_map<const Apply*, std::vector<int>> outputs;
};

struct Edit {
  const Program* program;  // the frame's program: an edit lives as long as its frame
  std::size_t frame;
  const Variable* var;
  Tensor original;
};

// Evaluates the breakpoints after each node they name (Note [Breakpoint conditions]); a hit asks
// the VM to pause at the next boundary. Attached only while an enabled breakpoint exists.
class BreakpointObserver final : public ExecutionObserver {
 public:
  explicit BreakpointObserver(DebugSession::Impl& session) : m_session(session) {}
  void rebuild(const std::map<int, Breakpoint>& breakpoints);
  bool empty() const { return m_table.empty(); }
  void afterNode(VM& vm, const NodeEvent& event) override;
  // The breakpoint that asked for the pending pause (-1: none), and its node.
  int takeHit() { return std::exchange(m_hit, -1); }
  std::int64_t hitNode() const { return m_hitNode; }
  void setMuted(bool muted) { m_muted = muted; }

 private:
  struct Previous {
    Tensor value;
    std::uint64_t generation = 0;
  };
  DebugSession::Impl& m_session;
  std::unordered_map<const Apply*, std::vector<int>> m_table;  // node -> enabled breakpoints
  std::unordered_map<const Variable*, Previous> m_previous;    // @changed: the last value
  int m_hit = -1;
  std::int64_t m_hitNode = -1;
  bool m_muted = false;
};

struct DebugSession::Impl {
  Impl(Function& f, DebugSessionOptions options);

  Function& function;
  VM& vm;
  DebugSessionOptions options;

  // The queue (Note [Session thread]).
  std::mutex queueMutex;
  std::condition_variable queueCv;
  std::deque<std::function<void()>> queue;
  bool quit = false;
  std::atomic<std::size_t> queued{0};  // queue.size(), read without the lock (Note [Worker spin])
  // Under queueMutex: the worker runs a command; a call() runs on its caller's thread (Note
  // [Inline call] in debug_session.cpp: the worker takes no command meanwhile).
  bool running = false;
  bool inlineCall = false;
  std::thread worker;

  // The published snapshot and the pause callback.
  mutable std::mutex stateMutex;
  SessionState published;
  std::function<void(const SessionState&)> pauseCallback;

  // Set by stop() before its command is queued; run commands queued before it do not run.
  std::atomic<int> pendingStops{0};
  // Whether a run command is driving the VM (interrupt() only then asks for a pause).
  std::mutex driveMutex;  // driving changes under it, so interrupt() never reaches a later run
  bool driving = false;
  std::atomic<bool> interruptRequested{false};
  // runToIteration's target while it drives ("iteration 7 of Scan{rnn} (node 9)"): an observer
  // pause then ends as a step with this message.
  std::string iterationTarget;

  // ---- worker-only ----
  std::optional<Execution> execution;
  SessionPhase phase = SessionPhase::Idle;
  SessionState details;  // the last pause's breakpoint, BreakPoint op, report, error, message
  Retain savedRetain = Retain::AfterLastUse;  // the VM's settings before the session
  bool savedTiming = false, savedBreakOps = false;
  std::uint64_t serial = 0;
  bool started = false;  // restart() has arguments to repeat
  // The last call() was a committed run that wrote its updates in place (Note [Committed runs]
  // in vm.h): no copy of the values they replaced exists, so restart() refuses to repeat it.
  bool updatedInPlace = false;
  std::uint64_t executions = 0;  // start() and restart() calls (@changed compares across them)
  std::vector<Tensor> startArgs;
  // Every shared variable of the graph with its value before finish() applied the updates of the
  // last start() (restart puts them back; Note [Restart state] in debug_session.cpp).
  std::vector<std::pair<SharedVariable*, Tensor>> sharedAtStart;
  std::vector<ProgramNode> allNodes;  // the program tree, outer program first
  std::map<int, Breakpoint> breakpoints;
  int nextBreakpointId = 1;
  std::shared_ptr<BreakpointObserver> breakpointObserver;
  bool observersAttached = false;
  std::shared_ptr<NanGuard> nanGuard;
  std::shared_ptr<ExecutionObserver> nanGuardObserver;  // the same guard, as an observer
  std::vector<Edit> edits;
  std::unordered_set<const Variable*> dirty;  // edited or undone since the last recompute

  // The worker.
  void loop();
  template <class T>
  std::future<T> submit(std::function<T()> work);

  // Runs (debug_session.cpp).
  SessionState snapshot(PauseKind reason) const;
  SessionState publish(PauseKind reason, bool newSerial = true);
  SessionState drive(const char* command, const std::function<void(VM&)>& how);
  // runToEnd: call()'s execution (Function::BeginOptions).
  SessionState startExecution(std::vector<Tensor> args, bool runToEnd = false);
  void requireExecution(const char* command) const;
  void abandon();
  void syncObservers();
  void dropStaleEdits();

  // Breakpoints (session_breakpoints.cpp).
  void collectNodes();
  Breakpoint resolve(const BreakpointSpec& spec, bool onOriginalGraph) const;
  // finish()'s work (on the worker): applies the updates, returns the outputs.
  std::vector<Tensor> finishExecution();
  // A Node target whose key is a path into inner graphs ("5/12"): its nodes into targets.
  void resolvePath(const BreakpointSpec& spec, bool onOriginalGraph, const std::string& what,
                   Breakpoint& bp, std::vector<std::pair<const Apply*, int>>& targets) const;
  std::vector<const Apply*> findNodes(std::int64_t id) const;
  // NanGuard (session_nan_guard.cpp): the report of a NanGuard pause, null when none.
  std::shared_ptr<const NanReport> takeNanReport();
  static std::string nanSummary(const NanReport& report);

  // Values (session_values.cpp).
  const Variable& lookup(std::string_view nameOrId, std::size_t frame) const;
  ValueView view(const Variable& var, std::size_t frame, const Tensor& value) const;
  std::vector<ValueView> values(std::size_t frame) const;
  void setValue(std::string_view nameOrId, const Tensor& value, std::size_t frame);
  void undoEdit(std::string_view nameOrId, std::size_t frame);
  RecomputeResult recompute();
};

template <class T>
inline std::future<T> DebugSession::Impl::submit(std::function<T()> work) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> future = promise->get_future();
  {
    std::lock_guard lock(queueMutex);
    if (quit) {
      promise->set_exception(
          std::make_exception_ptr(std::logic_error("the debug session is closing")));
      return future;
    }
    queue.push_back([promise, work = std::move(work)] {
      try {
        if constexpr (std::is_void_v<T>) {
          work();
          promise->set_value();
        } else {
          promise->set_value(work());
        }
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
    queued.fetch_add(1, std::memory_order_acq_rel);
  }
  queueCv.notify_one();
  return future;
}

// Throws std::logic_error: `command` needs `needs`, and the session is in `phase`.
[[noreturn]] void refuseInPhase(const char* command, SessionPhase phase, const char* needs);

}  // namespace tscope::engine::debug
