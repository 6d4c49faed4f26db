#include "engine/graph/apply.h"

#include "engine/graph/errors.h"
#include "engine/graph/op.h"

namespace tscope::engine {

namespace {
void requireInputs(const Op& op, const std::vector<VarPtr>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i])
      throw GraphError(op.str() + ": input " + std::to_string(i) + " is a null variable");
}
}  // namespace

ApplyPtr Apply::create(OpPtr op, std::vector<VarPtr> inputs, std::vector<TensorType> outputTypes,
                       SourceSite site) {
  if (!op) throw GraphError("Apply::create: no op given");
  requireInputs(*op, inputs);
  ApplyPtr node = std::make_shared<Apply>(Token{});
  node->m_op = std::move(op);
  node->m_inputs = std::move(inputs);
  node->m_scope = currentScope();
  node->m_site = std::move(site);
  node->m_outputs.reserve(outputTypes.size());
  for (std::size_t i = 0; i < outputTypes.size(); ++i) {
    auto out = std::unique_ptr<Variable>(
        new Variable(std::move(outputTypes[i]), Variable::Kind::Regular, {}));
    out->m_owner = node.get();
    out->m_index = static_cast<int>(i);
    out->m_site = node->m_site;
    node->m_outputs.push_back(std::move(out));
  }
  return node;
}

// Note [Iterative release]: a long chain of nodes would be destroyed recursively (each node drops
// the last handle to its input's owner), overflowing the stack around 100k nodes. The outermost
// destructor drains a worklist instead; nested destructors only hand their inputs to it.
Apply::~Apply() {
  static thread_local std::vector<VarPtr>* pending = nullptr;
  if (pending) {
    for (auto& in : m_inputs) pending->push_back(std::move(in));
    return;
  }
  std::vector<VarPtr> worklist;
  pending = &worklist;
  for (auto& in : m_inputs) worklist.push_back(std::move(in));
  while (!worklist.empty()) {
    VarPtr last = std::move(worklist.back());
    worklist.pop_back();
    last.reset();  // may destroy an Apply, which appends its inputs to the worklist
  }
  pending = nullptr;
}

void Apply::presetId(std::int64_t id) {
  if (m_fgraph) throw GraphError("presetId: node " + str() + " is already in a graph");
  m_id = id;
}

VarPtr Apply::output(int i) {
  return VarPtr(shared_from_this(), m_outputs.at(static_cast<std::size_t>(i)).get());
}

std::vector<VarPtr> Apply::outputs() {
  std::vector<VarPtr> out;
  out.reserve(m_outputs.size());
  for (int i = 0; i < nOutputs(); ++i) out.push_back(output(i));
  return out;
}

ApplyPtr Apply::cloneWithNewInputs(std::vector<VarPtr> inputs) const {
  if (inputs.size() != m_inputs.size())
    throw GraphError(str() + ": cloneWithNewInputs got " + std::to_string(inputs.size()) +
                     " inputs, expected " + std::to_string(m_inputs.size()));
  requireInputs(*m_op, inputs);
  // As create() builds a node, without its list of output types: a clone of a large graph makes
  // one of these per node.
  ApplyPtr copy = std::make_shared<Apply>(Token{});
  copy->m_op = m_op;
  copy->m_inputs = std::move(inputs);
  copy->m_scope = m_scope;
  copy->m_site = m_site;
  copy->m_gradientOf = m_gradientOf;
  copy->m_id = m_id;
  copy->m_outputs.reserve(m_outputs.size());
  for (std::size_t i = 0; i < m_outputs.size(); ++i) {
    const Variable& src = *m_outputs[i];
    auto dst =
        std::unique_ptr<Variable>(new Variable(src.m_type, Variable::Kind::Regular, src.m_name));
    dst->m_owner = copy.get();
    dst->m_index = static_cast<int>(i);
    dst->m_scope = src.m_scope;
    dst->m_site = src.m_site;
    dst->m_testValue = src.m_testValue;
    dst->m_id = src.m_id;
    copy->m_outputs.push_back(std::move(dst));
  }
  return copy;
}

std::string Apply::str() const {
  std::string out = m_op->str() + "(";
  for (std::size_t i = 0; i < m_inputs.size(); ++i) {
    if (i) out += ", ";
    out += m_inputs[i]->displayName();
  }
  return out + ")";
}

}  // namespace tscope::engine
