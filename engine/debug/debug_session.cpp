// DebugSession: the worker thread, the command queue, and the commands that drive the VM
// (Note [Session thread], Note [Session phases] in debug_session.h).
#include "engine/debug/debug_session_impl.h"
#include "engine/graph/apply.h"
#include "engine/graph/loop_body.h"
#include "engine/graph/op.h"
#include "engine/ops/debug/breakpoint.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace tscope::engine::debug {

namespace {

constexpr std::string_view kPauseKindNames[] = {"none",        "breakpoint", "breakpoint-op",
                                                "nan-guard",   "step",       "stop-requested",
                                                "interrupted", "finished",   "error"};
static_assert(std::size(kPauseKindNames) == static_cast<std::size_t>(PauseKind::Error) + 1);
constexpr std::string_view kPhaseNames[] = {"idle",     "ready",  "running", "paused",
                                            "finished", "failed", "stopped"};
static_assert(std::size(kPhaseNames) == static_cast<std::size_t>(SessionPhase::Stopped) + 1);

}  // namespace

std::string_view pauseKindName(PauseKind kind) {
  return kPauseKindNames[static_cast<std::size_t>(kind)];
}
std::string_view phaseName(SessionPhase phase) {
  return kPhaseNames[static_cast<std::size_t>(phase)];
}

void refuseInPhase(const char* command, SessionPhase phase, const char* needs) {
  throw std::logic_error(std::string(command) + ": needs " + needs + ", but the session is " +
                         std::string(phaseName(phase)));
}

DebugSession::Impl::Impl(Function& f, DebugSessionOptions o)
    : function(f), vm(f.vm()), options(std::move(o)) {}

void DebugSession::Impl::loop() {
  while (true) {
    std::function<void()> command;
    // Note [Worker spin]: a caller that loops (run(args), finish(), run(args), ...) queues its next
    // command a few microseconds after the last answer; waiting that long awake instead of
    // sleeping on the condition variable saves a thread wake-up per command (tens of
    // microseconds on a virtual machine, a few percent of a 2 ms training step:
    // bench_session). The spin is bounded (100 us), so an idle session sleeps. (A spin on the
    // processor's pause hint instead of yield measured no better on the 2-core VM: the answer's
    // wake-up of the waiting caller, not the worker's, is what a command costs there.)
    const auto spinStart = std::chrono::steady_clock::now();
    while (queued.load(std::memory_order_acquire) == 0 &&
           std::chrono::steady_clock::now() - spinStart < std::chrono::microseconds(100))
      std::this_thread::yield();
    {
      std::unique_lock lock(queueMutex);
      queueCv.wait(lock, [&] { return quit || (!queue.empty() && !inlineCall); });
      if (quit) break;  // what is still queued is dropped: its futures report a broken promise
      command = std::move(queue.front());
      queue.pop_front();
      queued.fetch_sub(1, std::memory_order_acq_rel);
      running = true;
    }
    command();
    std::lock_guard lock(queueMutex);
    running = false;
  }
  // Leave the Function as the session found it (the VM belongs to this thread until here).
  abandon();
  if (observersAttached) {
    if (breakpointObserver) vm.removeObserver(*breakpointObserver);
    if (nanGuardObserver) vm.removeObserver(*nanGuardObserver);
    for (const auto& o : options.observers) vm.removeObserver(*o);
    vm.setRetain(savedRetain);
    vm.setTiming(savedTiming);
    vm.setBreakOps(savedBreakOps);
  }
  std::lock_guard lock(queueMutex);
  queue.clear();
}

SessionState DebugSession::Impl::snapshot(PauseKind reason) const {
  SessionState s = details;
  s.phase = phase;
  s.reason = reason;
  s.serial = serial;
  s.frames.clear();
  const bool active = execution.has_value() && phase != SessionPhase::Idle &&
                      phase != SessionPhase::Stopped && vm.status() != VM::Status::Idle;
  if (!active) return s;
  for (std::size_t k = 0; k <= vm.depth(); ++k) {
    const VM::FrameInfo info = vm.frame(k);
    FrameView v;
    v.callerNodeId = info.callerNodeId;
    if (k > 0) v.callerOp = vm.frame(k - 1).program->schedule()[info.callerPosition]->op().str();
    v.pc = info.pc;
    v.iteration = info.iteration;
    v.iterations = info.iterations;
    v.scheduleSize = info.program->schedule().size();
    v.program = info.program;
    if (info.pc < v.scheduleSize) {
      const Apply& next = *info.program->schedule()[info.pc];
      v.nextNodeId = next.id();
      v.nextNodeOp = next.op().str();
    }
    s.frames.push_back(std::move(v));
  }
  // The node that ran last: the one before the innermost pc, or the node whose frame was just
  // entered.
  const VM::FrameInfo inner = vm.frame(vm.depth());
  if (inner.pc > 0)
    s.lastNodeId = inner.program->schedule()[inner.pc - 1]->id();
  else if (vm.depth() > 0)
    s.lastNodeId = inner.callerNodeId;
  else
    s.lastNodeId = -1;
  return s;
}

SessionState DebugSession::Impl::publish(PauseKind reason, bool newSerial) {
  if (newSerial) ++serial;
  const SessionState s = snapshot(reason);
  std::function<void(const SessionState&)> callback;
  {
    std::lock_guard lock(stateMutex);
    published = s;
    if (newSerial) callback = pauseCallback;
  }
  if (callback) callback(s);
  return s;
}

void DebugSession::Impl::requireExecution(const char* command) const {
  if (!execution || phase == SessionPhase::Idle || phase == SessionPhase::Stopped)
    refuseInPhase(command, phase, "a started execution");
}

void DebugSession::Impl::abandon() {
  if (execution) {
    // Note [Session phases]: a stopped execution applies no update. Finishing the VM's run as
    // Stopped also releases the frames it was paused in.
    const VM::Status st = vm.status();
    if (st == VM::Status::Ready || st == VM::Status::Paused) {
      vm.requestStop();
      try {
        vm.run();
      } catch (...) {
        // A stop never runs a node; nothing to report.
      }
    }
    execution.reset();
  }
  edits.clear();
  dirty.clear();
  details = {};
  if (phase != SessionPhase::Idle) phase = SessionPhase::Stopped;
}

void DebugSession::Impl::syncObservers() {
  if (!observersAttached) {
    savedRetain = vm.retain();
    savedTiming = vm.timing();
    savedBreakOps = vm.breakOps();
    for (const auto& o : options.observers) vm.addObserver(o);
    if (nanGuardObserver) vm.addObserver(nanGuardObserver);
    observersAttached = true;
  }
  vm.setRetain(options.retain);
  vm.setTiming(options.timing);
  vm.setBreakOps(options.breakOps);
  // The breakpoint observer only while an enabled breakpoint exists: without it the session's
  // run costs what a plain execution costs (Note [Session cost] in bench_session.cpp).
  if (!breakpointObserver) breakpointObserver = std::make_shared<BreakpointObserver>(*this);
  breakpointObserver->rebuild(breakpoints);
  const bool want = !breakpointObserver->empty();
  const bool has = std::any_of(vm.observers().begin(), vm.observers().end(),
                               [&](const auto& o) { return o.get() == breakpointObserver.get(); });
  if (want && !has) vm.addObserver(breakpointObserver);
  if (!want && has) vm.removeObserver(*breakpointObserver);
}

SessionState DebugSession::Impl::drive(const char* command, const std::function<void(VM&)>& how) {
  if (phase != SessionPhase::Ready && phase != SessionPhase::Paused)
    refuseInPhase(command, phase, "a ready or paused execution (start() first)");
  if (pendingStops.load(std::memory_order_acquire) > 0) {
    // A stop() was called after this command was queued: it does not run.
    abandon();
    return publish(PauseKind::StopRequested);
  }
  syncObservers();
  details = {};
  details.message = std::string(command) + ": running";
  phase = SessionPhase::Running;
  publish(PauseKind::None, false);
  std::exception_ptr failure;
  {
    std::lock_guard lock(driveMutex);
    driving = true;
  }
  try {
    how(vm);
  } catch (...) {
    failure = std::current_exception();
  }
  {
    std::lock_guard lock(driveMutex);
    driving = false;
  }
  const bool interrupted = interruptRequested.exchange(false);
  const int hit = breakpointObserver ? breakpointObserver->takeHit() : -1;
  std::shared_ptr<const NanReport> nan = takeNanReport();
  PauseKind reason = PauseKind::None;
  const VM::Status st = vm.status();
  if (st == VM::Status::Failed || failure) {
    phase = SessionPhase::Failed;
    reason = PauseKind::Error;
    try {
      if (failure) std::rethrow_exception(failure);
      if (vm.error()) std::rethrow_exception(vm.error());
      details.error = "the execution failed";
    } catch (const ExecutionError& e) {
      details.error = e.what();
      details.errorNodeId = e.nodeId();
    } catch (const std::exception& e) {
      details.error = e.what();
    } catch (...) {
      details.error = "unknown exception";
    }
    details.message = "error: " + details.error;
  } else if (st == VM::Status::Stopped) {
    execution.reset();
    edits.clear();
    dirty.clear();
    phase = SessionPhase::Stopped;
    reason = PauseKind::StopRequested;
    details.message = "stopped";
  } else if (hit >= 0 || nan || st == VM::Status::Paused) {
    // A pause asked for after the last node leaves the VM finished: the session still pauses
    // there first, with every value in place; the next run() finishes.
    phase = SessionPhase::Paused;
    if (hit >= 0) {
      reason = PauseKind::Breakpoint;
      details.breakpointId = hit;
      const auto it = breakpoints.find(hit);
      const std::string spec = it != breakpoints.end() ? toString(it->second.info.spec) : "?";
      details.message = "breakpoint " + std::to_string(hit) + " (" + spec + ") hit at node " +
                        std::to_string(breakpointObserver->hitNode());
      if (it != breakpoints.end() && !it->second.info.note.empty())
        details.message += "; " + it->second.info.note;
      if (it != breakpoints.end() && it->second.info.spec.temporary) {
        breakpoints.erase(it);
        syncObservers();
      }
    } else if (nan) {
      reason = PauseKind::NanGuard;
      details.nan = std::move(nan);
      details.message = "NanGuard: " + nanSummary(*details.nan);
    } else if (vm.pauseReason() == VM::PauseReason::BreakPointOp && vm.breakOpNode()) {
      reason = PauseKind::BreakPointOp;
      const Apply& node = *vm.breakOpNode();
      const auto* op = dynamic_cast<const BreakPointOp*>(&node.op());
      details.breakOpName = op ? op->label() : node.op().str();
      details.breakOpNodeId = node.id();
      details.message = "BreakPoint '" + details.breakOpName + "' (node " +
                        std::to_string(node.id()) + ") condition held";
    } else if (vm.pauseReason() == VM::PauseReason::Step ||
               vm.pauseReason() == VM::PauseReason::Breakpoint) {
      reason = PauseKind::Step;  // a step, or runToNode's break position
      details.message = "step";
    } else if (vm.pauseReason() == VM::PauseReason::Observer && !iterationTarget.empty()) {
      reason = PauseKind::Step;  // runToIteration arrived
      details.message = iterationTarget;
      iterationTarget.clear();
    } else {
      reason = PauseKind::Interrupted;  // interrupt(), or another observer's pause request
      details.message = interrupted ? "interrupted" : "paused by an observer's request";
    }
  } else {
    phase = SessionPhase::Finished;
    reason = PauseKind::Finished;
    details.message = "finished";
  }
  dropStaleEdits();
  return publish(reason);
}

// ---- the commands (each runs on the worker, in order) ----

DebugSession::DebugSession(Function& f, DebugSessionOptions options)
    : m_impl(std::make_unique<Impl>(f, std::move(options))) {
  m_impl->worker = std::thread([impl = m_impl.get()] { impl->loop(); });
}

DebugSession::~DebugSession() {
  Impl& s = *m_impl;
  s.pendingStops.fetch_add(1, std::memory_order_acq_rel);
  s.vm.requestStop();  // a run in progress ends at the next boundary or kernel block
  {
    std::lock_guard lock(s.queueMutex);
    s.quit = true;
  }
  s.queueCv.notify_all();
  if (s.worker.joinable()) s.worker.join();
}

SessionState DebugSession::Impl::startExecution(std::vector<Tensor> args, bool runToEnd) {
  collectNodes();
  // Note [Restart state]: restart() repeats this call: the same argument tensors (held, not
  // copied: the caller must not write into them meanwhile) and the shared values as they are
  // now. Those stay as they are until finish() applies the updates, which keeps the values
  // they replace (sharedAtStart); holding nothing before that keeps the VM's buffer
  // recycling between calls (Note [Update double buffering] in vm.h) intact.
  std::vector<Tensor> copies = std::move(args);
  syncObservers();
  Execution e = function.begin(copies, {.runToEnd = runToEnd});  // ArgumentError: nothing changed
  updatedInPlace = false;
  edits.clear();
  dirty.clear();
  execution.emplace(std::move(e));
  ++executions;
  startArgs = std::move(copies);
  sharedAtStart.clear();
  started = true;
  details = {};
  phase = vm.status() == VM::Status::Finished ? SessionPhase::Finished : SessionPhase::Ready;
  details.message = phase == SessionPhase::Ready ? "ready" : "finished (empty graph)";
  return publish(phase == SessionPhase::Ready ? PauseKind::None : PauseKind::Finished);
}

std::future<SessionState> DebugSession::start(std::vector<Tensor> args) {
  Impl& s = *m_impl;
  return s.submit<SessionState>(
      [&s, args = std::move(args)]() mutable { return s.startExecution(std::move(args)); });
}

std::future<SessionState> DebugSession::run(std::vector<Tensor> args) {
  Impl& s = *m_impl;
  return s.submit<SessionState>([&s, args = std::move(args)]() mutable {
    const SessionState ready = s.startExecution(std::move(args));
    if (ready.phase != SessionPhase::Ready) return ready;
    return s.drive("run", [](VM& vm) { vm.run(); });
  });
}

std::future<SessionState> DebugSession::restart() {
  Impl& s = *m_impl;
  return s.submit<SessionState>([&s]() {
    if (!s.started) throw std::logic_error("restart: nothing was started yet; call start() first");
    if (s.updatedInPlace)
      throw std::logic_error(
          "restart: the last call() wrote its updates into the shared variables in place (a "
          "committed run: no copy of the values they replaced was made), so it cannot be "
          "repeated; start() a new execution instead");
    if (s.execution) {
      s.abandon();
    }
    // The shared values of the last start() (finish() may have applied updates since).
    for (auto& [sv, value] : s.sharedAtStart)
      if (!sv->placedValue().sharesStorageWith(value) || sv->placedValue().shape() != value.shape())
        sv->setValueBorrowed(value);
    s.sharedAtStart.clear();  // the shared values are those of the last start() again
    s.syncObservers();
    s.execution.emplace(s.function.begin(s.startArgs));
    ++s.executions;
    s.edits.clear();
    s.dirty.clear();
    s.details = {};
    s.phase = s.vm.status() == VM::Status::Finished ? SessionPhase::Finished : SessionPhase::Ready;
    s.details.message = "restarted";
    return s.publish(s.phase == SessionPhase::Ready ? PauseKind::None : PauseKind::Finished);
  });
}

std::future<SessionState> DebugSession::run() {
  Impl& s = *m_impl;
  return s.submit<SessionState>([&s]() { return s.drive("run", [](VM& vm) { vm.run(); }); });
}

std::future<SessionState> DebugSession::step() {
  Impl& s = *m_impl;
  return s.submit<SessionState>([&s]() { return s.drive("step", [](VM& vm) { vm.step(); }); });
}

std::future<SessionState> DebugSession::stepInto() {
  Impl& s = *m_impl;
  return s.submit<SessionState>(
      [&s]() { return s.drive("stepInto", [](VM& vm) { vm.stepInto(); }); });
}

std::future<SessionState> DebugSession::stepOut() {
  Impl& s = *m_impl;
  return s.submit<SessionState>(
      [&s]() { return s.drive("stepOut", [](VM& vm) { vm.stepOut(); }); });
}

std::future<SessionState> DebugSession::runToNode(std::int64_t nodeId) {
  Impl& s = *m_impl;
  return s.submit<SessionState>([&s, nodeId]() {
    if (s.phase != SessionPhase::Ready && s.phase != SessionPhase::Paused)
      refuseInPhase("runToNode", s.phase, "a ready or paused execution (start() first)");
    const ProgramNode* target = nullptr;
    for (const ProgramNode& n : s.allNodes)
      if (n.node->id() == nodeId) {
        target = &n;
        break;
      }
    if (!target)
      throw std::invalid_argument("runToNode: no node " + std::to_string(nodeId) +
                                  " in the optimized graph or its inner graphs");
    for (std::size_t k = 0; k <= s.vm.depth(); ++k) {
      const VM::FrameInfo info = s.vm.frame(k);
      if (info.program == target->program && target->position < info.pc)
        throw std::logic_error("runToNode: node " + std::to_string(nodeId) + " (" +
                               target->node->op().str() + ") already ran in this execution (" +
                               "position " + std::to_string(target->position) + ", pc " +
                               std::to_string(info.pc) + "); restart() to run it again");
    }
    const bool had = s.vm.hasBreakBefore(*target->node);
    s.vm.setBreakBefore(*target->node, true);
    struct Clear {
      VM& vm;
      const Apply& node;
      bool had;
      ~Clear() {
        if (!had) vm.setBreakBefore(node, false);
      }
    } clear{s.vm, *target->node, had};
    return s.drive("runToNode", [](VM& vm) { vm.run(); });
  });
}

namespace {
// Note [Loop frames]: pauses before the first node of a loop's body in one iteration.
class IterationTarget final : public ExecutionObserver {
 public:
  IterationTarget(std::int64_t node, std::int64_t iteration, bool& arrived)
      : m_node(node), m_iteration(iteration), m_arrived(arrived) {}
  bool pauseBefore(const VM&, const NodeEvent& e) override {
    if (e.position != 0 || e.framePath.empty() || e.framePath.back() != m_node ||
        e.iterations.empty() || e.iterations.back() != m_iteration)
      return false;
    m_arrived = true;
    return true;
  }

 private:
  std::int64_t m_node, m_iteration;
  bool& m_arrived;
};
}  // namespace

std::future<SessionState> DebugSession::runToIteration(std::int64_t nodeId,
                                                       std::int64_t iteration) {
  Impl& s = *m_impl;
  return s.submit<SessionState>([&s, nodeId, iteration]() {
    if (s.phase != SessionPhase::Ready && s.phase != SessionPhase::Paused)
      refuseInPhase("runToIteration", s.phase, "a ready or paused execution (start() first)");
    if (iteration < 0)
      throw std::invalid_argument("runToIteration: iteration " + std::to_string(iteration) +
                                  "; expected an iteration >= 0");
    const Apply* target = nullptr;
    for (const ProgramNode& n : s.allNodes)
      if (n.node->id() == nodeId) {
        target = n.node;
        break;
      }
    if (!target)
      throw std::invalid_argument("runToIteration: no node " + std::to_string(nodeId) +
                                  " in the optimized graph or its inner graphs");
    if (!dynamic_cast<const LoopBody*>(&target->op()))
      throw std::invalid_argument("runToIteration: node " + std::to_string(nodeId) + " (" +
                                  target->op().str() + ") is not a loop (a Scan)");
    bool arrived = false;
    auto observer = std::make_shared<IterationTarget>(nodeId, iteration, arrived);
    s.vm.addObserver(observer);
    struct Remove {
      VM& vm;
      const ExecutionObserver& o;
      ~Remove() { vm.removeObserver(o); }
    } remove{s.vm, *observer};
    s.iterationTarget = "iteration " + std::to_string(iteration) + " of " + target->op().str() +
                        " (node " + std::to_string(nodeId) + ")";
    SessionState st = s.drive("runToIteration", [](VM& vm) { vm.run(); });
    s.iterationTarget.clear();
    return st;
  });
}

std::future<SessionState> DebugSession::stop() {
  Impl& s = *m_impl;
  s.pendingStops.fetch_add(1, std::memory_order_acq_rel);
  s.vm.requestStop();  // acts now, also inside a long kernel (Note [Cancellation seam])
  return s.submit<SessionState>([&s]() {
    struct Done {
      std::atomic<int>& n;
      ~Done() { n.fetch_sub(1, std::memory_order_acq_rel); }
    } done{s.pendingStops};
    if (s.phase == SessionPhase::Idle || s.phase == SessionPhase::Stopped)
      return s.publish(s.phase == SessionPhase::Idle ? PauseKind::None : PauseKind::StopRequested,
                       false);
    s.abandon();
    s.details.message = "stopped";
    return s.publish(PauseKind::StopRequested);
  });
}

std::future<SessionState> DebugSession::interrupt() {
  Impl& s = *m_impl;
  {
    std::lock_guard lock(s.driveMutex);
    if (s.driving) {
      s.interruptRequested.store(true);
      s.vm.requestPause();
    }
  }
  return s.submit<SessionState>([&s]() { return s.snapshot(s.published.reason); });
}

std::future<int> DebugSession::addBreakpoint(BreakpointSpec spec, bool onOriginalGraph) {
  Impl& s = *m_impl;
  return s.submit<int>([&s, spec = std::move(spec), onOriginalGraph]() {
    s.collectNodes();
    Breakpoint bp = s.resolve(spec, onOriginalGraph);  // throws: nothing changed
    const int id = s.nextBreakpointId++;
    bp.info.id = id;
    s.breakpoints.emplace(id, std::move(bp));
    return id;
  });
}

std::future<void> DebugSession::removeBreakpoint(int id) {
  Impl& s = *m_impl;
  return s.submit<void>([&s, id]() {
    if (s.breakpoints.erase(id) == 0)
      throw std::invalid_argument("removeBreakpoint: no breakpoint " + std::to_string(id));
  });
}

std::future<void> DebugSession::setBreakpointEnabled(int id, bool enabled) {
  Impl& s = *m_impl;
  return s.submit<void>([&s, id, enabled]() {
    const auto it = s.breakpoints.find(id);
    if (it == s.breakpoints.end())
      throw std::invalid_argument("setBreakpointEnabled: no breakpoint " + std::to_string(id));
    it->second.info.spec.enabled = enabled;
  });
}

std::future<std::vector<BreakpointInfo>> DebugSession::breakpoints() {
  Impl& s = *m_impl;
  return s.submit<std::vector<BreakpointInfo>>([&s]() {
    std::vector<BreakpointInfo> out;
    for (const auto& [id, bp] : s.breakpoints) out.push_back(bp.info);
    return out;
  });
}

std::future<std::vector<ValueView>> DebugSession::values(std::size_t frame) {
  Impl& s = *m_impl;
  return s.submit<std::vector<ValueView>>([&s, frame]() {
    s.requireExecution("values");
    return s.values(frame);
  });
}

std::future<std::optional<ValueView>> DebugSession::value(std::string nameOrId, std::size_t frame) {
  Impl& s = *m_impl;
  return s.submit<std::optional<ValueView>>(
      [&s, key = std::move(nameOrId), frame]() -> std::optional<ValueView> {
        s.requireExecution("value");
        const Variable& var = s.lookup(key, frame);
        const Tensor* t = s.vm.value(frame, var);
        if (!t) return std::nullopt;
        return s.view(var, frame, *t);
      });
}

std::future<std::vector<ValueView>> DebugSession::nextInputs() {
  Impl& s = *m_impl;
  return s.submit<std::vector<ValueView>>([&s]() {
    s.requireExecution("nextInputs");
    std::vector<ValueView> out;
    const std::size_t k = s.vm.depth();
    const VM::FrameInfo info = s.vm.frame(k);
    if (info.pc >= info.program->schedule().size()) return out;
    const Apply& node = *info.program->schedule()[info.pc];
    for (const VarPtr& in : node.inputs())
      if (const Tensor* t = s.vm.value(k, *in)) out.push_back(s.view(*in, k, *t));
    return out;
  });
}

std::future<void> DebugSession::setValue(std::string nameOrId, Tensor value, std::size_t frame) {
  Impl& s = *m_impl;
  return s.submit<void>([&s, key = std::move(nameOrId), value = std::move(value), frame]() {
    if (s.phase != SessionPhase::Paused && s.phase != SessionPhase::Ready)
      refuseInPhase("setValue", s.phase, "a ready or paused execution");
    s.setValue(key, value, frame);
  });
}

std::future<RecomputeResult> DebugSession::recompute() {
  Impl& s = *m_impl;
  return s.submit<RecomputeResult>([&s]() { return s.recompute(); });
}

std::future<void> DebugSession::undoEdit(std::string nameOrId, std::size_t frame) {
  Impl& s = *m_impl;
  return s.submit<void>([&s, key = std::move(nameOrId), frame]() {
    if (s.phase != SessionPhase::Paused && s.phase != SessionPhase::Ready)
      refuseInPhase("undoEdit", s.phase, "a ready or paused execution");
    s.undoEdit(key, frame);
  });
}

std::future<std::optional<std::vector<Tensor>>> DebugSession::call(std::vector<Tensor> args) {
  Impl& s = *m_impl;
  auto work = [&s, args = std::move(args)]() mutable -> std::optional<std::vector<Tensor>> {
    // Note [Committed runs] in vm.h: a call goes to its end, so its in-place updates need no
    // copy; a stop() after the first of them lets the call finish with its updates whole.
    const SessionState ready = s.startExecution(std::move(args), true);
    if (ready.phase != SessionPhase::Ready) return std::nullopt;
    if (s.drive("run", [](VM& vm) { vm.run(); }).phase != SessionPhase::Finished)
      return std::nullopt;
    const bool inPlace = s.vm.committed();
    std::vector<Tensor> outputs = s.finishExecution();
    s.updatedInPlace = inPlace;
    return outputs;
  };
  // Note [Inline call]: a call made while the worker is idle and nothing is queued runs on the
  // caller's thread: a training loop through the session then costs no thread hand-off per step
  // (two wake-ups, tens of microseconds on a virtual machine: bench_session). The worker takes
  // no command meanwhile (inlineCall, under queueMutex), so the worker-only state is still
  // touched by one thread at a time, ordered by the mutex; commands queued meanwhile (a stop()
  // from another thread: its requestStop() acts at once) run after it, in order. Its onPause
  // callback runs on the caller's thread.
  {
    std::unique_lock lock(s.queueMutex);
    if (s.quit || !s.queue.empty() || s.running || s.inlineCall) {
      lock.unlock();
      return s.submit<std::optional<std::vector<Tensor>>>(std::move(work));
    }
    s.inlineCall = true;
  }
  std::promise<std::optional<std::vector<Tensor>>> promise;
  try {
    promise.set_value(work());
  } catch (...) {
    promise.set_exception(std::current_exception());
  }
  {
    std::lock_guard lock(s.queueMutex);
    s.inlineCall = false;
  }
  s.queueCv.notify_all();
  return promise.get_future();
}

std::future<std::vector<Tensor>> DebugSession::finish() {
  Impl& s = *m_impl;
  return s.submit<std::vector<Tensor>>([&s]() { return s.finishExecution(); });
}

std::vector<Tensor> DebugSession::Impl::finishExecution() {
  Impl& s = *this;
  {
    if (!s.execution || s.vm.status() != VM::Status::Finished ||
        (s.phase != SessionPhase::Finished && s.phase != SessionPhase::Paused))
      refuseInPhase("finish", s.phase, "a finished execution (run() to the end first)");
    // Note [Restart state]: the values the updates replace. Not after a committed run: its updates
    // already overwrote them, restart() refuses to repeat it, and holding the buffers would make
    // the next call's start() copy every parameter it updates in place (Note [Overwritten
    // inputs] in vm.cpp).
    s.sharedAtStart.clear();
    if (!s.vm.committed())
      for (const VarPtr& in : s.function.graph().inputs())
        if (in->kind() == Variable::Kind::Shared) {
          auto* sv = static_cast<SharedVariable*>(in.get());
          // Where the function reads it: a device-resident twin's device copy, not a host copy
          // (Note [Device-resident shared variables]).
          s.sharedAtStart.emplace_back(sv, sv->placedValue());
        }
    std::vector<Tensor> outputs = s.execution->finish();
    s.execution.reset();
    s.edits.clear();
    s.dirty.clear();
    s.phase = SessionPhase::Idle;
    s.details = {};
    s.details.message = "finished; updates applied";
    s.publish(PauseKind::Finished);
    return outputs;
  }
}

SessionState DebugSession::state() const {
  std::lock_guard lock(m_impl->stateMutex);
  return m_impl->published;
}

void DebugSession::onPause(std::function<void(const SessionState&)> callback) {
  std::lock_guard lock(m_impl->stateMutex);
  m_impl->pauseCallback = std::move(callback);
}

const Function& DebugSession::function() const {
  return m_impl->function;
}

}  // namespace tscope::engine::debug
