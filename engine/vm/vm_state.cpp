// The VM's inspection side (values, frames, timings, breaks, observers, names); the dispatch is
// in vm.cpp.
#include "engine/graph/errors.h"
#include "engine/tensor/device_memory.h"
#include "engine/vm/correlation.h"
#include "engine/vm/vm.h"
#include "engine/vm/vm_internal.h"

#include <algorithm>

namespace tscope::engine {

std::string_view statusName(VM::Status status) {
  switch (status) {
    case VM::Status::Idle:
      return "idle";
    case VM::Status::Ready:
      return "ready";
    case VM::Status::Running:
      return "running";
    case VM::Status::Paused:
      return "paused";
    case VM::Status::Finished:
      return "finished";
    case VM::Status::Failed:
      return "failed";
    case VM::Status::Stopped:
      break;
  }
  return "stopped";
}

std::string_view pauseReasonName(VM::PauseReason reason) {
  switch (reason) {
    case VM::PauseReason::None:
      return "none";
    case VM::PauseReason::Requested:
      return "requested";
    case VM::PauseReason::Breakpoint:
      return "breakpoint";
    case VM::PauseReason::Observer:
      return "observer";
    case VM::PauseReason::Step:
      return "step";
    case VM::PauseReason::BreakPointOp:
      break;
  }
  return "breakpoint-op";
}

// One node as the dispatch loop reads it: a compact copy of the program's LinkedNode with its
// operands resolved into this frame's storage.
std::string VM::errorMessage() const {
  if (!m_error) return {};
  try {
    std::rethrow_exception(m_error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

void VM::setBreakBefore(const Apply& node, bool on) {
  if (on)
    m_breaks.insert(&node);
  else
    m_breaks.erase(&node);
}

std::span<const VM::NodeTiming> VM::timings(const Program& program) const {
  auto it = m_timings.find(&program);
  if (it == m_timings.end()) return {};
  return it->second;
}

void VM::resetTimings() {
  for (auto& [program, t] : m_timings) std::fill(t.begin(), t.end(), NodeTiming{});
}

const VM::Frame* VM::frameOf(const Variable& var, std::int64_t* slot) const {
  for (std::size_t k = m_stack.size(); k-- > 0;) {
    const std::int64_t s = m_stack[k]->program->slotOf(var);
    if (s >= 0) {
      *slot = s;
      return m_stack[k];
    }
  }
  return nullptr;
}

namespace {
bool computedIn(const StoragePlan& plan, std::size_t pc, std::int64_t slot) {
  const std::int32_t producer = plan.producer[static_cast<std::size_t>(slot)];
  return producer < 0 || static_cast<std::size_t>(producer) < pc;
}
}  // namespace

const Tensor* VM::value(const Variable& var) const {
  if (m_status == Status::Idle) return nullptr;
  std::int64_t s = -1;
  const Frame* f = frameOf(var, &s);
  if (!f || !computedIn(f->program->plan(), f->pc, s)) return nullptr;
  const Tensor& t = f->storage[static_cast<std::size_t>(s)];
  return t.defined() ? &t : nullptr;
}

const Tensor* VM::value(std::size_t frameIndex, const Variable& var) const {
  if (m_status == Status::Idle || frameIndex >= m_stack.size()) return nullptr;
  const Frame& f = *m_stack[frameIndex];
  const std::int64_t s = f.program->slotOf(var);
  if (s < 0 || !computedIn(f.program->plan(), f.pc, s)) return nullptr;
  const Tensor& t = f.storage[static_cast<std::size_t>(s)];
  return t.defined() ? &t : nullptr;
}

std::optional<Tensor> VM::snapshot(const Variable& var) const {
  const Tensor* t = value(var);
  if (!t) return std::nullopt;
  return hostCopy(*t);  // Note [Reading device values] (engine/tensor/device_memory.h)
}

void VM::setValue(const Variable& var, const Tensor& value) {
  std::int64_t s = -1;
  const Frame* cf = frameOf(var, &s);
  if (!cf)
    throw GraphError("VM::setValue: the variable " + var.displayName() +
                     " is not in a frame this VM runs");
  if (m_status == Status::Running && !m_inCallbacks)
    throw std::logic_error("VM::setValue: the VM is running");
  if (m_status != Status::Idle && !computedIn(cf->program->plan(), cf->pc, s))
    throw std::logic_error("VM::setValue: " + var.displayName() +
                           " is not computed yet; a value can be replaced once its node ran");
  Frame& f = const_cast<Frame&>(*cf);
  f.storage[static_cast<std::size_t>(s)] =
      var.type().filter(value, "the new value of " + var.displayName());
}

void VM::recycleBuffer(const Variable& input, const Variable& computed, Tensor buffer) {
  if (!m_program->plan().keepBuffers || m_status != Status::Finished || computed.owner() == nullptr)
    return;
  const std::int64_t in = m_program->slotOf(input), out = m_program->slotOf(computed);
  if (in < 0 || out < 0) return;
  m_root->storage[static_cast<std::size_t>(in)] = Tensor();
  m_root->storage[static_cast<std::size_t>(out)] = std::move(buffer);
}

std::vector<Tensor> VM::outputValues() {
  if (m_status != Status::Finished)
    throw std::logic_error("VM::outputValues: the run has not finished (" + std::to_string(pc()) +
                           " of " + std::to_string(m_root->hot.size()) + " nodes ran, status " +
                           std::string(statusName(m_status)) + ")");
  const auto outputSlots = m_program->outputSlots();
  std::vector<Tensor> out;
  out.reserve(outputSlots.size());
  for (std::uint32_t s : outputSlots) out.push_back(m_root->storage[s]);
  if (!m_program->plan().keepBuffers && m_options.retain != Retain::All) {
    const StoragePlan& plan = m_program->plan();
    for (std::uint32_t s : outputSlots)
      if (plan.producer[s] >= 0) m_root->storage[s] = Tensor();
  }
  return out;
}

// Note [Correlation]: every bracket opens and closes inside one VM member and holds the sink it
// pushed to, and no observer callback runs inside one, so the sink may change at any time, from a
// callback included.
void VM::setCorrelationSink(std::shared_ptr<CorrelationSink> sink) {
  m_correlation = std::move(sink);
}

void VM::addObserver(std::shared_ptr<ExecutionObserver> observer) {
  if (!observer) return;
  if (m_inCallbacks || m_status == Status::Running) {
    const ExecutionObserver* none = nullptr;
    m_pending.emplace_back(std::move(observer), none);
    return;
  }
  m_observers.push_back(std::move(observer));
}

void VM::removeObserver(const ExecutionObserver& observer) {
  if (m_inCallbacks || m_status == Status::Running) {
    m_pending.emplace_back(nullptr, &observer);
    return;
  }
  std::erase_if(m_observers, [&](const auto& o) { return o.get() == &observer; });
}

void VM::applyObserverChanges() {
  if (m_pending.empty()) return;
  for (auto& [add, remove] : m_pending) {
    if (add)
      m_observers.push_back(std::move(add));
    else
      // The binding is copied into the lambda: clang 14 (the fuzz build) cannot capture a
      // structured binding.
      std::erase_if(m_observers, [r = remove](const auto& o) { return o.get() == r; });
  }
  m_pending.clear();
}

}  // namespace tscope::engine
