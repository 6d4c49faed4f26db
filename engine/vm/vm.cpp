#include "engine/vm/vm.h"

#include "engine/graph/errors.h"
#include "engine/graph/inner_graphs.h"
#include "engine/graph/op.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/tensor/device_memory.h"
#include "engine/vm/cancel.h"
#include "engine/vm/clock.h"
#include "engine/vm/correlation.h"
#include "engine/vm/vm_helpers.h"
#include "engine/vm/vm_internal.h"

#include <algorithm>
#include <unordered_map>

namespace tscope::engine {

namespace {

using vmclock::nowNs;  // Note [VM clock]
using namespace vm_detail;

}  // namespace

VM::VM(std::shared_ptr<const Program> program, VMOptions options)
    : m_program(std::move(program)), m_options(options) {
  if (!m_program) throw GraphError("VM: the program is null");
  m_root = std::make_unique<Frame>(*m_program);
  m_stack.push_back(m_root.get());
}

VM::VM(const FunctionGraph& graph, std::vector<Apply*> schedule, VMOptions options)
    : VM(linkProgram(graph, std::move(schedule), LinkOptions{.keepBuffers = options.keepBuffers}),
         options) {}

VM::~VM() = default;

std::size_t VM::pc() const {
  return m_root->pc;
}

VM::FrameInfo VM::frame(std::size_t index) const {
  if (index >= m_stack.size())
    throw std::out_of_range("VM::frame: frame " + std::to_string(index) + " of " +
                            std::to_string(m_stack.size()));
  const Frame& f = *m_stack[index];
  return {f.program,
          f.pc,
          f.callerNodeId,
          f.callerPosition,
          f.loop ? f.iteration : -1,
          f.loop ? f.loop->steps : 0};
}

VM::Frame& VM::frameFor(const Program& program) {
  auto& slot = m_children[&program];
  if (!slot) slot = std::make_unique<Frame>(program);
  if (slot->caller != nullptr)
    throw std::logic_error("VM: the inner graph of node " + std::to_string(slot->callerNodeId) +
                           " is entered while it is already running (a recursive inner graph)");
  if (m_options.timing && slot->timing == nullptr) {
    auto& t = m_timings[&program];
    t.resize(program.nodes().size());
    slot->timing = t.data();
  }
  return *slot;
}

void VM::clearFrame(Frame& f) {
  const StoragePlan& plan = f.program->plan();
  for (std::size_t s = 0; s < f.storage.size(); ++s)
    if (plan.producer[s] >= 0) f.storage[s] = Tensor();
  for (std::uint32_t s : f.program->inputSlots()) f.storage[s] = Tensor();
  f.caller = nullptr;
  f.pc = 0;
  f.loop.reset();
  f.iteration = -1;
}

namespace {

// Note [Overwrite spares]: the private copy start() makes of an input a node overwrites (the
// shared W that a guarded or stepped SGD step updates in place) goes into the buffer the previous
// call's copy came from when nothing else holds it any more: after finish() the shared variable
// holds the updated copy and the VM the old value's buffer, so two buffers alternate and no call
// allocates (and faults in) a fresh one. A buffer anyone else still holds is never written.
Tensor privateCopy(Tensor& spare, const Tensor& value) {
  // A device value (a device-resident parameter) is copied on its device (copyInto,
  // cloneOnDevice): no byte crosses to the host.
  const bool reusable = spare.defined() && spare.storage().use_count() == 1 &&
                        spare.dtype() == value.dtype() && spare.shape() == value.shape() &&
                        spare.isContiguous() && spare.offset() == 0 &&
                        spare.device() == value.device();
  Tensor copy;
  if (reusable) {
    copy = std::move(spare);
    copyInto(copy, value);
  } else {
    copy = cloneOnDevice(value);
  }
  spare = value;
  return copy;
}

constexpr std::size_t kNoCommit = static_cast<std::size_t>(-1);

}  // namespace

bool VM::commitNextRun() {
  applyObserverChanges();
  m_commitNext = m_options.retain == Retain::AfterLastUse && m_breaks.empty() &&
                 !(m_options.breakOps && m_program->hasBreakOps()) &&
                 std::none_of(m_observers.begin(), m_observers.end(),
                              [](const auto& o) { return o->mayInterrupt(); });
  return m_commitNext;
}

bool VM::committed() const {
  return m_commitAt != kNoCommit &&
         (m_root->pc > m_commitAt || (m_root->pc == m_commitAt && m_stack.size() > 1));
}

void VM::start(std::span<const Tensor> inputValues) {
  if (m_status == Status::Running)
    throw std::logic_error("VM::start: called while the VM is running (from an observer)");
  const Program& p = *m_program;
  const auto& inputs = p.graph().inputs();
  if (inputValues.size() != inputs.size())
    throw std::invalid_argument("VM::start: expected " + std::to_string(inputs.size()) +
                                " input values, found " + std::to_string(inputValues.size()));
  // Abandon a paused or failed execution's inner frames.
  while (m_stack.size() > 1) {
    clearFrame(*m_stack.back());
    m_stack.pop_back();
  }
  m_path.clear();
  m_iterations.clear();
  Frame& f = *m_root;
  const auto inputSlots = p.inputSlots();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Variable& in = *inputs[i];
    Tensor& slot = f.storage[inputSlots[i]];
    if (inputValues[i].defined()) {
      slot = inputValues[i];
    } else if (in.kind() == Variable::Kind::Shared) {
      // On the device for a device-resident twin (Note [Device-resident shared variables]).
      slot = static_cast<const SharedVariable&>(in).placedValue();
    } else {
      throw std::invalid_argument("VM::start: no value for input " + std::to_string(i) + " (" +
                                  in.displayName() + ")");
    }
  }
  const StoragePlan& plan = p.plan();
  if (!plan.keepBuffers)
    for (std::size_t s = 0; s < f.storage.size(); ++s)
      if (plan.producer[s] >= 0) f.storage[s] = Tensor();
  // Note [Overwritten inputs]: a node that overwrites an input (destroyMap) whose buffer is a
  // graph input's (the shared W of Gemm{inplace} in an SGD step, directly or through views) writes
  // into the buffer start() puts in that input's slot. start() hands it the shared variable's own
  // buffer only when nothing outside the shared variable and this VM holds it; a caller that kept
  // the value (`Tensor seen = w->value()`), or any other input value, gets a private copy first,
  // so no value the caller can still see ever changes.
  f.overwriteSpares.resize(plan.overwrittenInputs.size());
  for (std::size_t k = 0; k < plan.overwrittenInputs.size(); ++k) {
    const std::size_t i = plan.overwrittenInputs[k];
    Tensor& slot = f.storage[inputSlots[i]];
    if (!slot.defined()) continue;
    // Holders the buffer may have: the shared variable's value (when it came from there), this
    // slot, and with keepBuffers a computed value of the previous call that aliases it (without,
    // those slots were just cleared). Any other holder, another input's slot included, is a
    // reader the overwrite must not reach.
    long expected = (inputValues[i].defined() ? 0 : 1) + 1;
    if (plan.keepBuffers)
      for (std::size_t s = 0; s < f.storage.size(); ++s)
        if (plan.producer[s] >= 0 && f.storage[s].storage() == slot.storage()) ++expected;
    if (slot.storage().use_count() > expected) slot = privateCopy(f.overwriteSpares[k], slot);
  }
  // Note [Committed runs]: the first node that overwrites a shared input ends the window in
  // which a stop is honoured.
  m_commitAt = kNoCommit;
  if (std::exchange(m_commitNext, false))
    for (const StoragePlan::Overwrite& o : plan.overwrites)
      if (o.graphInput >= 0 &&
          inputs[static_cast<std::size_t>(o.graphInput)]->kind() == Variable::Kind::Shared)
        m_commitAt = std::min<std::size_t>(m_commitAt, o.position);
  f.pc = 0;
  f.timing = nullptr;
  if (m_options.timing) {
    auto& t = m_timings[&p];
    t.resize(p.nodes().size());
    f.timing = t.data();
  }
  m_error = nullptr;
  m_pauseReason = PauseReason::None;
  m_breakOpNode = nullptr;
  m_boundaryVisited = false;
  // A request made before this start() was for the execution it replaces.
  m_pauseRequested.store(false, std::memory_order_release);
  m_stopRequested.store(false, std::memory_order_release);
  applyObserverChanges();
  m_status = f.hot.empty() ? Status::Finished : Status::Ready;
  for (std::size_t k = 0; k < m_observers.size(); ++k) m_observers[k]->onStart(*this);
  if (f.hot.empty())
    for (std::size_t k = 0; k < m_observers.size(); ++k) m_observers[k]->onFinish(*this);
}

NodeEvent VM::eventFor(const Frame& f, std::size_t position) const {
  const Hot& t = f.hot[position];
  return NodeEvent{std::span<const std::int64_t>(m_path),
                   position,
                   *t.node,
                   f.inputs(t),
                   f.outputs(t),
                   0,
                   0,
                   std::span<const std::int64_t>(m_iterations)};
}

void VM::rethrowWithContext(const Frame& f, const Hot& t, const std::exception& e) const {
  std::string msg = t.op->str() + " (node " + std::to_string(t.node->id()) + ")";
  for (std::size_t k = m_stack.size(); k-- > 1;) {
    const Frame& inner = *m_stack[k];
    const Hot& call = inner.caller->hot[inner.callerPosition];
    msg += " in " + call.op->str() + " (node " + std::to_string(call.node->id()) + ")";
    if (inner.loop) msg += " iteration " + std::to_string(inner.iteration);
  }
  if (!t.node->site().empty()) msg += ", created at " + t.node->site().str();
  msg += ", failed: ";
  msg += e.what();
  msg += "; input shapes ";
  for (std::uint32_t i = 0; i < t.nIn; ++i) {
    const Tensor* in = f.ptrs[t.in + i];
    if (i) msg += ", ";
    msg += in->defined() ? std::string(dtypeName(in->dtype())) + " " + shapeToString(in->shape())
                         : "(undefined)";
  }
  throw ExecutionError(msg, t.node->id(), m_path);
}

void VM::fail(Frame& f, std::exception_ptr error, bool nodeRan) {
  m_status = Status::Failed;
  m_error = error;
  if (m_observers.empty()) return;
  // The node that failed is f.hot[pc] unless it ran (an afterNode threw): then the one before.
  const std::size_t pos = nodeRan && f.pc > 0 ? f.pc - 1 : f.pc;
  if (pos >= f.hot.size()) return;
  const NodeEvent event = eventFor(f, pos);
  CallbackScope scope(m_inCallbacks);
  for (std::size_t k = 0; k < m_observers.size(); ++k) {
    try {
      m_observers[k]->onError(*this, event, error);
    } catch (...) {
      // The first failure stands (observer.h).
    }
  }
}

void VM::pause(PauseReason reason) {
  m_status = Status::Paused;
  m_pauseReason = reason;
}

void VM::stopRun() {
  m_status = Status::Stopped;
  m_pauseReason = PauseReason::None;
  m_stopRequested.store(false, std::memory_order_release);
  m_pauseRequested.store(false, std::memory_order_release);
}

namespace {
// Note [Out-of-place instead of a copy]: with Retain::All an in-place node must leave its input as
// it was (copy-on-destroy). For an elementwise node (Elemwise, Composite) the op's out-of-place
// form computes the same values into a fresh output buffer, which costs what the in-place kernel
// costs and saves the copy of the input (a full read and write of it per node and call). The
// out-of-place ops are made once per op and thread (ops are immutable values; the cache keeps the
// in-place op alive so its address is not reused). Other in-place ops (Gemm on W) still copy:
// their out-of-place form copies too. So does a node that runs a device kernel (the out-of-place
// form's perform is the CPU reference), on its device (cloneOnDevice).
const Op* outOfPlaceFor(const Apply& node) {
  const std::string name = node.op().name();
  if (name != "Elemwise" && name != "Composite") return nullptr;
  thread_local std::unordered_map<const Op*, std::pair<OpPtr, OpPtr>> cache;
  auto it = cache.find(&node.op());
  if (it == cache.end())
    it = cache.emplace(&node.op(), std::pair<OpPtr, OpPtr>{node.opPtr(), node.op().outOfPlace()})
             .first;
  return it->second.second.get();
}
}  // namespace

void VM::runNode(Frame& f) {
  const std::size_t pos = f.pc;
  // Note [Committed runs]: from the first overwrite on, kernels no longer see the stop flag (this
  // drive()'s CancellationScope restores it).
  if (m_commitAt != kNoCommit && m_root->pc >= m_commitAt) detail::t_cancelFlag = nullptr;
  const Hot& t = f.hot[pos];
  const bool observed = !m_observers.empty();
  NodeEvent event = observed ? eventFor(f, pos) : NodeEvent{{}, pos, *t.node, {}, {}, 0, 0};
  if (observed) {
    notifyObservers(
        m_observers, m_inCallbacks, false,
        [&](ExecutionObserver& o) { o.beforeNode(*this, event); },
        [&](std::exception_ptr e) { fail(f, e, false); });
  }
  const bool timed = m_options.timing;
  std::exception_ptr failure;
  {
    // Note [Correlation]: the copy-on-destroy copies are the node's work too; the bracket closes
    // before the observers hear of a failure.
    const CorrelationScope correlation(m_correlation.get(), m_path, t.node->id());
    // Note [Retain policy]: copy-on-destroy.
    std::vector<Tensor> saved;
    // A node running a device kernel keeps it (the out-of-place form's perform is the CPU's):
    // its input is copied on the device instead.
    const bool onDevice = f.program->nodes()[pos].kernel.device != Device::Cpu;
    const Op* fresh = m_options.retain == Retain::All && t.nDestroy > 0 && !onDevice
                          ? outOfPlaceFor(*t.node)
                          : nullptr;
    if (fresh)  // an output slot that is an input slot would lose the input: copy instead
      for (Tensor* const out : f.outputs(t))
        for (const Tensor* in : f.inputs(t))
          if (out == in) fresh = nullptr;
    const bool protect = m_options.retain == Retain::All && t.nDestroy > 0 && !fresh;
    if (protect) {
      const auto& overwrites = f.program->plan().overwrites;
      for (std::uint32_t d = 0; d < t.nDestroy; ++d) {
        Tensor& slot = f.storage[overwrites[t.destroyBegin + d].slot];
        saved.push_back(slot);
        if (slot.defined()) slot = cloneOnDevice(slot);  // on the slot's own device
      }
    }
    auto restore = [&] {
      if (!protect) return;
      const auto& overwrites = f.program->plan().overwrites;
      for (std::uint32_t d = 0; d < t.nDestroy; ++d)
        f.storage[overwrites[t.destroyBegin + d].slot] = saved[d];
    };
    if (timed) event.t0 = nowNs();
    try {
      if (fresh) {
        // Note [Out-of-place instead of a copy]: the output gets a buffer of its own.
        for (Tensor* const out : f.outputs(t)) *out = Tensor();
        try {
          fresh->perform(*t.node, f.inputs(t), f.outputs(t));
        } catch (const ExecutionError&) {
          throw;
        } catch (const ExecutionCancelled&) {
          throw;
        } catch (const std::exception& e) {
          rethrowWithContext(f, t, e);
        }
      } else {
        if (t.seed && m_options.retain != Retain::All) seedOutputs(f, t);
        invokeKernel(f, t, [&](const std::exception& e) { rethrowWithContext(f, t, e); });
        if (t.seed) recordLayouts(f, t);
      }
    } catch (const ExecutionCancelled&) {
      restore();  // drive() stops the run
      throw;
    } catch (...) {
      restore();
      failure = std::current_exception();
    }
    if (!failure) {
      if (timed) {
        event.t1 = nowNs();
        addTiming(f.timing, pos, event.t1 - event.t0);
      }
      restore();
    }
  }
  if (failure) {
    fail(f, failure, false);
    std::rethrow_exception(failure);
  }
  ++f.pc;
  if (observed) {
    notifyObservers(
        m_observers, m_inCallbacks, true, [&](ExecutionObserver& o) { o.afterNode(*this, event); },
        [&](std::exception_ptr e) { fail(f, e, true); });
  }
  // Note [BreakPoint at run time]: the condition is input 0; the node's slots stay until the
  // pause is over (a monitored value nothing reads later would be freed right here).
  if (t.breakOp && m_options.breakOps && BreakPointOp::holds(*f.ptrs[t.in])) {
    m_breakOpNode = t.node;
    return;
  }
  if (m_options.retain != Retain::All) freeAfter(f, t, f.program->plan());
}

void VM::enterFrame(Frame& f) {
  const std::size_t pos = f.pc;
  const Hot& t = f.hot[pos];
  if (!m_observers.empty()) {
    const NodeEvent event = eventFor(f, pos);
    notifyObservers(
        m_observers, m_inCallbacks, false,
        [&](ExecutionObserver& o) { o.beforeNode(*this, event); },
        [&](std::exception_ptr e) { fail(f, e, false); });
  }
  // Note [Several inner graphs] (engine/graph/inner_graphs.h): only the body the op selects runs
  // (IfElse's taken branch).
  std::size_t body = 0;
  if (t.nChildren > 1) {
    try {
      // Note [Correlation]: choosing the body may read a device value.
      const CorrelationScope correlation(m_correlation.get(), m_path, t.node->id());
      body = dynamic_cast<const AlternativeBodies&>(*t.op).selectInnerGraph(f.inputs(t));
    } catch (const std::exception& e) {
      try {
        rethrowWithContext(f, t, e);
      } catch (...) {
        fail(f, std::current_exception(), false);
        throw;
      }
    }
    if (body >= t.nChildren) {
      try {
        throw ExecutionError(t.op->str() + " (node " + std::to_string(t.node->id()) +
                                 ") selected inner graph " + std::to_string(body) + " of " +
                                 std::to_string(t.nChildren),
                             t.node->id(), m_path);
      } catch (...) {
        fail(f, std::current_exception(), false);
        throw;
      }
    }
  }
  Frame& c = frameFor(*f.program->children()[static_cast<std::size_t>(t.child) + body]);
  if (t.loop) {
    // Note [Loop frames]: the op checks its inputs and allocates its outputs once.
    try {
      const CorrelationScope correlation(m_correlation.get(), m_path, t.node->id());
      c.loop = t.loop->loopBegin(*t.node, f.inputs(t));
    } catch (const std::exception& e) {
      try {
        rethrowWithContext(f, t, e);
      } catch (...) {
        fail(f, std::current_exception(), false);
        throw;
      }
    }
    c.iteration = 0;
    c.callerNodeId = t.node->id();
    c.callerPosition = pos;
    c.t0 = m_options.timing ? nowNs() : 0;
    if (c.loop->steps <= 0) {
      finishLoop(f, c);
      return;
    }
    c.pc = 0;
    c.caller = &f;
    m_stack.push_back(&c);
    m_path.push_back(t.node->id());
    m_iterations.push_back(0);
    beginIteration(f, c);
    return;
  }
  const auto inputSlots = c.program->inputSlots();
  for (std::size_t i = 0; i < inputSlots.size(); ++i) c.storage[inputSlots[i]] = *f.ptrs[t.in + i];
  c.pc = 0;
  c.caller = &f;
  c.callerNodeId = t.node->id();
  c.callerPosition = pos;
  c.t0 = m_options.timing ? nowNs() : 0;
  m_stack.push_back(&c);
  m_path.push_back(t.node->id());
  m_iterations.push_back(-1);
}

void VM::returnFromFrame() {
  Frame& c = *m_stack.back();
  Frame& f = *c.caller;
  const std::size_t pos = c.callerPosition;
  const Hot& t = f.hot[pos];
  if (t.loop && c.loop) {
    // Note [Loop frames]: the iteration's outputs go to the op; the next iteration starts in the
    // same frame, or the loop is over.
    try {
      const CorrelationScope correlation(
          m_correlation.get(), std::span<const std::int64_t>(m_path).first(m_path.size() - 1),
          t.node->id());
      t.loop->loopCollect(*c.loop, c.iteration, c.loopOut);
    } catch (const std::exception& e) {
      const std::int64_t k = c.iteration;
      clearFrame(c);
      m_stack.pop_back();
      m_path.pop_back();
      m_iterations.pop_back();
      try {
        rethrowWithContext(f, t, loopFailure(e, k));
      } catch (...) {
        fail(f, std::current_exception(), false);
        throw;
      }
    }
    if (++c.iteration < c.loop->steps) {
      const StoragePlan& plan = c.program->plan();
      for (std::size_t s = 0; s < c.storage.size(); ++s)
        if (plan.producer[s] >= 0) c.storage[s] = Tensor();
      c.pc = 0;
      m_iterations.back() = c.iteration;
      beginIteration(f, c);
      return;
    }
    m_stack.pop_back();
    m_path.pop_back();
    m_iterations.pop_back();
    finishLoop(f, c);
    return;
  }
  const auto outputSlots = c.program->outputSlots();
  // Note [Correlation]: a copied output is the caller node's work (m_path still names its frame).
  const CorrelationScope correlation(m_correlation.get(),
                                     std::span<const std::int64_t>(m_path).first(m_path.size() - 1),
                                     t.node->id());
  for (std::size_t o = 0; o < outputSlots.size(); ++o) {
    Tensor value = c.storage[outputSlots[o]];
    // An inner output that is an inner input (or a view of one), or the same variable as an
    // earlier output, would alias a buffer the node does not declare (its viewMap is empty).
    bool shared = false;
    for (std::uint32_t i = 0; i < t.nIn && !shared; ++i)
      shared = value.sharesStorageWith(*f.ptrs[t.in + i]);
    for (std::size_t k = 0; k < o && !shared; ++k)
      shared = value.sharesStorageWith(*f.ptrs[t.out + k]);
    *f.ptrs[t.out + o] = shared ? cloneOnDevice(value) : std::move(value);
  }
  const std::int64_t t0 = c.t0;
  clearFrame(c);
  m_stack.pop_back();
  m_path.pop_back();
  m_iterations.pop_back();
  NodeEvent event = eventFor(f, pos);
  if (m_options.timing) {
    event.t0 = t0;
    event.t1 = nowNs();
    addTiming(f.timing, pos, event.t1 - event.t0);
  }
  ++f.pc;
  if (!m_observers.empty()) {
    notifyObservers(
        m_observers, m_inCallbacks, true, [&](ExecutionObserver& o) { o.afterNode(*this, event); },
        [&](std::exception_ptr e) { fail(f, e, true); });
  }
  if (m_options.retain != Retain::All) freeAfter(f, t, f.program->plan());
}

void VM::finishRun() {
  m_status = Status::Finished;
  m_pauseReason = PauseReason::None;
  CallbackScope scope(m_inCallbacks);
  for (std::size_t k = 0; k < m_observers.size(); ++k) m_observers[k]->onFinish(*this);
}

bool VM::boundaryPauses(Frame& f, bool firstOfStep) {
  // Note [Committed runs]: the boundary before the first overwrite still stops (nothing written).
  if (committed()) return false;
  if (m_stopRequested.load(std::memory_order_acquire)) {
    stopRun();
    return true;
  }
  if (!firstOfStep && m_pauseRequested.load(std::memory_order_acquire)) {
    m_pauseRequested.store(false, std::memory_order_release);
    pause(PauseReason::Requested);
    return true;
  }
  if (m_boundaryVisited) return false;
  if (f.pc >= f.hot.size()) return false;
  if (!m_breaks.empty() && m_breaks.count(f.hot[f.pc].node)) {
    m_boundaryVisited = true;
    pause(PauseReason::Breakpoint);
    return true;
  }
  if (!m_observers.empty()) {
    const NodeEvent event = eventFor(f, f.pc);
    CallbackScope scope(m_inCallbacks);
    for (std::size_t k = 0; k < m_observers.size(); ++k) {
      bool verdict = false;
      try {
        verdict = m_observers[k]->pauseBefore(*this, event);
      } catch (...) {
        fail(f, std::current_exception(), false);
        throw;
      }
      if (verdict) {
        m_boundaryVisited = true;
        pause(PauseReason::Observer);
        return true;
      }
    }
  }
  return false;
}

// The hot loop (Note [Storage plan]): no observers, breaks or frames: one indirect call per node
// and a relaxed check for a pause request. Returns false at a node with an inner graph, which the
// general loop runs. With the timing flag, one clock reading per node (Note [VM clock]): a node's
// time runs from the previous node's end to its own, its frees and the loop included.
// Note [Correlation]: the loop is instantiated with and without a correlation sink, so a VM
// without one runs exactly the loop it ran before the brackets existed.
bool VM::runFast() {
  const bool timed = m_options.timing;
  Frame& f = *m_root;
  const std::size_t n = f.hot.size();
  const Hot* hot = f.hot.data();
  const StoragePlan& plan = m_program->plan();
  CorrelationSink* const sink = m_correlation.get();
  const std::size_t commitAt = m_commitAt;
  auto loop = [&]<bool kCorrelated>() {
    std::int64_t previous = timed ? nowNs() : 0;
    while (f.pc < n) {
      // Note [Committed runs]: requests wait from the first overwrite on (commitAt: none = max).
      if (f.pc <= commitAt && m_pauseRequested.load(std::memory_order_relaxed)) {
        if (m_stopRequested.load(std::memory_order_acquire)) {
          stopRun();
          return true;
        }
        m_pauseRequested.store(false, std::memory_order_release);
        pause(PauseReason::Requested);
        return true;
      }
      const Hot& t = hot[f.pc];
      if (t.child >= 0) return false;
      if (f.pc == commitAt) detail::t_cancelFlag = nullptr;  // drive()'s scope restores it
      if (t.seed) seedOutputs(f, t);                         // Note [Recycled buffers]
      try {
        if constexpr (kCorrelated) {
          const CorrelationScope correlation(sink, {}, t.node->id());
          invokeKernel(f, t, [&](const std::exception& e) { rethrowWithContext(f, t, e); });
        } else {
          invokeKernel(f, t, [&](const std::exception& e) { rethrowWithContext(f, t, e); });
        }
      } catch (const ExecutionCancelled&) {
        stopRun();
        return true;
      } catch (...) {
        fail(f, std::current_exception(), false);
        throw;
      }
      if (t.seed) recordLayouts(f, t);
      freeAfter(f, t, plan);
      if (timed) {
        const std::int64_t now = nowNs();
        addTiming(f.timing, f.pc, now - previous);
        previous = now;
      }
      ++f.pc;
    }
    finishRun();
    return true;
  };
  return sink ? loop.template operator()<true>() : loop.template operator()<false>();
}

VM::Status VM::drive(Drive how) {
  if (m_status != Status::Ready && m_status != Status::Paused) return m_status;
  const std::size_t startDepth = depth();
  const bool stepping = how == Drive::StepInto || how == Drive::StepOver;
  m_status = Status::Running;
  m_pauseReason = PauseReason::None;
  m_breakOpNode = nullptr;
  // Note [Cancellation seam]: long kernels on this thread see requestStop().
  const CancellationScope cancellation(&m_stopRequested);
  try {
    return driveLoop(how, startDepth, stepping);
  } catch (const ExecutionCancelled&) {
    stopRun();
    return m_status;
  }
}

VM::Status VM::driveLoop(Drive how, std::size_t startDepth, bool stepping) {
  bool first = true;
  while (true) {
    applyObserverChanges();
    if (how == Drive::Run && m_stack.size() == 1 && m_observers.empty() && m_breaks.empty() &&
        m_options.retain == Retain::AfterLastUse && (!first || !m_boundaryVisited) &&
        !(m_options.breakOps && m_program->hasBreakOps())) {
      if (runFast()) return m_status;
    }
    Frame& f = *m_stack.back();
    if (boundaryPauses(f, first && stepping)) return m_status;
    first = false;
    if (m_stack.size() == 1 && f.pc >= f.hot.size()) {
      // Paused after a BreakPoint that was the last node.
      finishRun();
      return m_status;
    }
    if (f.pc >= f.hot.size())
      returnFromFrame();
    else if (f.hot[f.pc].child >= 0)
      enterFrame(f);
    else
      runNode(f);
    m_boundaryVisited = false;
    if (m_breakOpNode) {
      // Note [BreakPoint at run time]: this pause ends a step too; resuming moves past this
      // boundary. At the end of the schedule the run still pauses first (the values are there).
      m_pauseRequested.store(false, std::memory_order_release);
      m_boundaryVisited = true;
      pause(PauseReason::BreakPointOp);
      return m_status;
    }
    if (m_stack.size() == 1 && m_root->pc >= m_root->hot.size()) {
      finishRun();
      return m_status;
    }
    if (how == Drive::StepInto || (how == Drive::StepOver && depth() <= startDepth) ||
        (how == Drive::StepOut && depth() < startDepth)) {
      // The step ends here: a request made during it is satisfied by this pause, and resuming
      // moves past this boundary (Note [VM states]). A stop request still stops, except past a
      // committed run's first overwrite (Note [Committed runs]).
      if (m_stopRequested.load(std::memory_order_acquire) && !committed()) {
        stopRun();
        return m_status;
      }
      m_pauseRequested.store(false, std::memory_order_release);
      m_boundaryVisited = true;
      pause(PauseReason::Step);
      return m_status;
    }
  }
}

VM::Status VM::run() {
  return drive(Drive::Run);
}

bool VM::step() {
  if (m_status != Status::Ready && m_status != Status::Paused) return false;
  drive(Drive::StepOver);
  return true;
}

bool VM::stepInto() {
  if (m_status != Status::Ready && m_status != Status::Paused) return false;
  drive(Drive::StepInto);
  return true;
}

VM::Status VM::stepOut() {
  return drive(Drive::StepOut);
}

}  // namespace tscope::engine
