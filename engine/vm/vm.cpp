#include "engine/vm/vm.h"

#include "engine/graph/errors.h"
#include "engine/graph/op.h"

#include <algorithm>

namespace tscope::engine {

VM::VM(const FunctionGraph& graph, std::vector<Apply*> schedule, VMOptions options)
    : m_graph(graph), m_schedule(std::move(schedule)), m_options(options) {
  const auto& vars = graph.variables();
  m_slots.reserve(vars.size());
  m_storage.resize(vars.size());
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const Variable* v = vars[i];
    m_slots.set(v, static_cast<std::uint32_t>(i));
    if (v->kind() == Variable::Kind::Constant) m_storage[i] = static_cast<const Constant&>(*v).value();
  }
  for (const VarPtr& in : graph.inputs()) m_inputSlots.push_back(static_cast<std::uint32_t>(slotOf(*in)));
  for (const VarPtr& out : graph.outputs()) m_outputSlots.push_back(static_cast<std::uint32_t>(slotOf(*out)));

  // Last reader of every intermediate (Note [VM storage]).
  std::vector<std::int64_t> lastUse(vars.size(), -1);
  std::vector<bool> pinned(vars.size(), false);
  for (std::uint32_t s : m_outputSlots) pinned[s] = true;
  for (std::size_t pos = 0; pos < m_schedule.size(); ++pos) {
    const Apply* node = m_schedule[pos];
    for (const VarPtr& in : node->inputs()) lastUse[slotOf(*in)] = static_cast<std::int64_t>(pos);
    for (int o = 0; o < node->nOutputs(); ++o) {
      const std::size_t s = slotOf(node->outputRef(o));
      lastUse[s] = std::max(lastUse[s], static_cast<std::int64_t>(pos));
    }
  }
  std::vector<std::vector<std::uint32_t>> freeAfter(m_schedule.size());
  if (!m_options.keepBuffers) {
    for (std::size_t s = 0; s < vars.size(); ++s)
      if (!pinned[s] && vars[s]->owner() != nullptr && lastUse[s] >= 0)
        freeAfter[static_cast<std::size_t>(lastUse[s])].push_back(static_cast<std::uint32_t>(s));
  }

  m_thunks.reserve(m_schedule.size());
  for (std::size_t pos = 0; pos < m_schedule.size(); ++pos) {
    const Apply* node = m_schedule[pos];
    if (node->fgraph() != &graph)
      throw GraphError("VM: the schedule holds " + node->str() + ", which is not a node of this graph");
    if (!node->op().isExecutable())
      throw GraphError("VM: " + node->op().str() + " (node " + std::to_string(node->id()) +
                       ") cannot be executed: it is an opaque op loaded from a file");
    Thunk t{};
    t.op = &node->op();
    t.node = node;
    t.inBegin = static_cast<std::uint32_t>(m_inPtrs.size());
    t.nIn = static_cast<std::uint32_t>(node->nInputs());
    for (const VarPtr& in : node->inputs()) m_inPtrs.push_back(&m_storage[slotOf(*in)]);
    t.outBegin = static_cast<std::uint32_t>(m_outPtrs.size());
    t.nOut = static_cast<std::uint32_t>(node->nOutputs());
    for (int o = 0; o < node->nOutputs(); ++o) m_outPtrs.push_back(&m_storage[slotOf(node->outputRef(o))]);
    t.freeBegin = static_cast<std::uint32_t>(m_freeSlots.size());
    t.nFree = static_cast<std::uint32_t>(freeAfter[pos].size());
    m_freeSlots.insert(m_freeSlots.end(), freeAfter[pos].begin(), freeAfter[pos].end());
    m_thunks.push_back(t);
  }

  // Note [Overwritten inputs]: a node that overwrites an input (destroyMap) whose buffer is a graph
  // input's (the shared W of Gemm{inplace} in an SGD step, directly or through views) writes into
  // the buffer start() puts in that input's slot. start() hands it the shared variable's own
  // buffer only when nothing outside the shared variable and this VM holds it; a caller that kept
  // the value (`Tensor seen = w->value()`), or any other input value, gets a private copy first,
  // so no value the caller can still see ever changes.
  std::vector<bool> overwritten(vars.size(), false);
  for (const Apply* node : m_schedule)
    for (const auto& [output, destroyed] : node->op().destroyMap())
      for (int i : destroyed) {
        if (i < 0 || i >= node->nInputs()) continue;
        const Variable* v = node->input(i).get();
        // Up the view chain: output o of a view op aliases the input its viewMap names.
        while (const Apply* owner = v->owner()) {
          const ViewMap views = owner->op().viewMap();
          const auto it = views.find(v->index());
          if (it == views.end() || it->second.empty()) break;
          v = owner->input(it->second.front()).get();
        }
        if (!v->owner()) overwritten[slotOf(*v)] = true;
      }
  for (std::size_t i = 0; i < m_inputSlots.size(); ++i)
    if (overwritten[m_inputSlots[i]]) m_overwrittenInputs.push_back(i);
}

VM::~VM() = default;

std::size_t VM::slotOf(const Variable& var) const {
  const std::uint32_t* s = m_slots.find(&var);
  if (s == nullptr)
    throw GraphError("VM: the variable " + var.displayName() + " is not in the graph this VM runs");
  return *s;
}

void VM::start(std::span<const Tensor> inputValues) {
  const auto& inputs = m_graph.inputs();
  if (inputValues.size() != inputs.size())
    throw std::invalid_argument("VM::start: expected " + std::to_string(inputs.size()) + " input values, found " +
                                std::to_string(inputValues.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Variable& in = *inputs[i];
    Tensor& slot = m_storage[m_inputSlots[i]];
    if (inputValues[i].defined()) {
      slot = inputValues[i];
    } else if (in.kind() == Variable::Kind::Shared) {
      slot = static_cast<const SharedVariable&>(in).value();
    } else {
      throw std::invalid_argument("VM::start: no value for input " + std::to_string(i) + " (" + in.displayName() + ")");
    }
  }
  if (!m_options.keepBuffers)
    for (std::size_t pos = 0; pos < m_schedule.size(); ++pos)
      for (int o = 0; o < m_schedule[pos]->nOutputs(); ++o) m_storage[slotOf(m_schedule[pos]->outputRef(o))] = Tensor();
  for (std::size_t i : m_overwrittenInputs) {
    Tensor& slot = m_storage[m_inputSlots[i]];
    if (!slot.defined()) continue;
    // Holders the buffer may have: the shared variable's value (when it came from there), this
    // slot, and with keepBuffers a computed value of the previous call that aliases it (without,
    // those slots were just cleared). Any other holder, another input's slot included, is a reader
    // the overwrite must not reach.
    long expected = (inputValues[i].defined() ? 0 : 1) + 1;
    if (m_options.keepBuffers) {
      const auto& vars = m_graph.variables();
      for (std::size_t s = 0; s < m_storage.size(); ++s)
        if (vars[s]->owner() != nullptr && m_storage[s].storage() == slot.storage()) ++expected;
    }
    if (slot.storage().use_count() > expected) slot = slot.clone();
  }
  m_pc = 0;
  m_pauseRequested.store(false, std::memory_order_relaxed);
  m_status = m_schedule.empty() ? Status::Finished : Status::Paused;
  for (const auto& obs : m_observers) obs->onStart(*this);
  if (m_schedule.empty())
    for (const auto& obs : m_observers) obs->onFinish(*this);
}

void VM::rethrowWithContext(const Thunk& t, const std::exception& e) const {
  std::string msg = t.op->str() + " (node " + std::to_string(t.node->id()) + ")";
  if (!t.node->site().empty()) msg += ", created at " + t.node->site().str();
  msg += ", failed: ";
  msg += e.what();
  msg += "; input shapes ";
  for (std::uint32_t i = 0; i < t.nIn; ++i) {
    const Tensor* in = m_inPtrs[t.inBegin + i];
    if (i) msg += ", ";
    msg += in->defined() ? std::string(dtypeName(in->dtype())) + " " + shapeToString(in->shape()) : "(undefined)";
  }
  throw ExecutionError(msg, t.node->id());
}

inline void VM::runNode(const Thunk& t) {
  try {
    t.op->perform(*t.node, std::span<const Tensor* const>(m_inPtrs.data() + t.inBegin, t.nIn),
                  std::span<Tensor* const>(m_outPtrs.data() + t.outBegin, t.nOut));
  } catch (const ExecutionError&) {
    throw;
  } catch (const std::exception& e) {
    rethrowWithContext(t, e);
  }
  for (std::uint32_t f = 0; f < t.nFree; ++f) m_storage[m_freeSlots[t.freeBegin + f]] = Tensor();
}

bool VM::step() {
  if (m_status != Status::Paused || m_pc >= m_thunks.size()) return false;
  const Thunk& t = m_thunks[m_pc];
  for (const auto& obs : m_observers) obs->beforeNode(*this, *t.node, m_pc);
  runNode(t);
  for (const auto& obs : m_observers) obs->afterNode(*this, *t.node, m_pc);
  ++m_pc;
  if (m_pc == m_thunks.size()) {
    m_status = Status::Finished;
    for (const auto& obs : m_observers) obs->onFinish(*this);
  }
  return true;
}

VM::Status VM::run() {
  if (m_status != Status::Paused) return m_status;
  m_pauseRequested.store(false, std::memory_order_relaxed);
  if (m_observers.empty()) {
    // The hot loop (Note [VM storage]): one indirect call per node.
    const std::size_t n = m_thunks.size();
    const Thunk* thunks = m_thunks.data();
    while (m_pc < n) {
      runNode(thunks[m_pc]);
      ++m_pc;
      if (m_pauseRequested.load(std::memory_order_relaxed) && m_pc < n) return m_status;
    }
    m_status = Status::Finished;
    return m_status;
  }
  while (step()) {
    if (m_status == Status::Finished) break;
    if (m_pauseRequested.load(std::memory_order_relaxed)) {
      m_pauseRequested.store(false, std::memory_order_relaxed);
      return m_status;
    }
  }
  return m_status;
}

const Tensor* VM::value(const Variable& var) const {
  const std::uint32_t* s = m_slots.find(&var);
  if (s == nullptr || !m_storage[*s].defined()) return nullptr;
  return &m_storage[*s];
}

void VM::setValue(const Variable& var, const Tensor& value) {
  m_storage[slotOf(var)] = var.type().filter(value, "the new value of " + var.displayName());
}

void VM::recycleBuffer(const Variable& input, const Variable& computed, Tensor buffer) {
  if (!m_options.keepBuffers || m_status != Status::Finished || computed.owner() == nullptr) return;
  m_storage[slotOf(input)] = Tensor();
  m_storage[slotOf(computed)] = std::move(buffer);
}

std::vector<Tensor> VM::outputValues() {
  if (m_status != Status::Finished)
    throw std::logic_error("VM::outputValues: the run has not finished (" + std::to_string(m_pc) + " of " +
                           std::to_string(m_thunks.size()) + " nodes ran)");
  std::vector<Tensor> out;
  out.reserve(m_outputSlots.size());
  for (std::uint32_t s : m_outputSlots) out.push_back(m_storage[s]);
  if (!m_options.keepBuffers)
    for (std::uint32_t s : m_outputSlots)
      if (m_graph.variables()[s]->owner() != nullptr) m_storage[s] = Tensor();
  return out;
}

void VM::addObserver(std::shared_ptr<ExecutionObserver> observer) {
  if (observer) m_observers.push_back(std::move(observer));
}

void VM::removeObserver(const ExecutionObserver& observer) {
  std::erase_if(m_observers, [&](const auto& o) { return o.get() == &observer; });
}

}  // namespace tscope::engine
