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
#include <unordered_map>
#include <unordered_set>

namespace tscope::engine::debug {

class BreakpointObserver;
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
  std::thread worker;

  // The published snapshot and the pause callback.
  mutable std::mutex stateMutex;
  SessionState published;
  std::function<void(const SessionState&)> pauseCallback;

  // Set by stop() before its command is queued; run commands queued before it do not run.
  std::atomic<int> pendingStops{0};
  // Whether a run command is driving the VM (interrupt() only then asks for a pause).
  std::atomic<bool> driving{false};
  std::atomic<bool> interruptRequested{false};

  // ---- worker-only ----
  std::optional<Execution> execution;
  SessionPhase phase = SessionPhase::Idle;
  std::uint64_t serial = 0;
  bool started = false;  // restart() has arguments to repeat
  std::vector<Tensor> startArgs;
  // Every shared variable of the graph with its value at start() (restart puts them back).
  std::vector<std::pair<SharedVariable*, Tensor>> sharedAtStart;
  std::vector<ProgramNode> allNodes;  // the program tree, outer program first
  std::map<int, Breakpoint> breakpoints;
  int nextBreakpointId = 1;
  std::shared_ptr<BreakpointObserver> breakpointObserver;
  bool observersAttached = false;
  std::shared_ptr<NanGuard> nanGuard;
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
  void requireExecution(const char* command) const;
  void abandon();
  void syncObservers();
  void dropStaleEdits();

  // Breakpoints (session_breakpoints.cpp).
  void collectNodes();
  Breakpoint resolve(const BreakpointSpec& spec, bool onOriginalGraph) const;
  void rebuildBreakpointTable();
  std::vector<const Apply*> findNodes(std::int64_t id) const;

  // Values (session_values.cpp).
  const Variable& lookup(std::string_view nameOrId, std::size_t frame) const;
  ValueView view(const Variable& var, std::size_t frame, const Tensor& value) const;
  std::vector<ValueView> values(std::size_t frame) const;
  void setValue(std::string_view nameOrId, const Tensor& value, std::size_t frame);
  void undoEdit(std::string_view nameOrId, std::size_t frame);
  RecomputeResult recompute();
};

// A stop: the message of a command refused in the current phase.
[[noreturn]] void refuseInPhase(const char* command, SessionPhase phase, const char* needs);

}  // namespace tscope::engine::debug
