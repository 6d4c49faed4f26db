#include "engine/ops/graph/op_from_graph.h"

#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/traversal.h"
#include "engine/io/graph_json.h"
#include "engine/ops/basic.h"
#include "engine/ops/register_ops.h"

#include <atomic>
#include <unordered_map>
#include <unordered_set>

namespace tscope::engine {

namespace {

std::string describe(const Variable& v) {
  std::string s = v.name().empty() ? v.type().str() : "'" + v.name() + "' (" + v.type().str() + ")";
  if (!v.site().empty()) s += ", created at " + v.site().str();
  return s;
}

// Inner scopes are stored relative to the scope the op was built in: a block built inside
// NameScope("encoder") keeps "attention", not "encoder/attention", so expanding it under another
// scope does not repeat the path.
SharedString relativeScope(const std::string& scope, const std::string& base) {
  if (base.empty() || scope.compare(0, base.size(), base) != 0) return scope;
  if (scope.size() == base.size()) return SharedString();
  if (scope[base.size()] != kScopeSeparator) return scope;
  return scope.substr(base.size() + 1);
}

std::unique_ptr<FunctionGraph> cloneInner(const std::vector<VarPtr>& inputs,
                                          const std::vector<VarPtr>& outputs,
                                          const std::string& label) {
  const std::string op = "OpFromGraph{" + label + "}";
  if (outputs.empty()) throw GraphError(op + ": expected at least one output");
  std::unordered_set<const Variable*> given;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const VarPtr& in = inputs[i];
    if (!in) throw GraphError(op + ": inner input " + std::to_string(i) + " is null");
    if (in->owner())
      throw GraphError(op + ": inner input " + std::to_string(i) + " " + describe(*in) +
                       " is computed by " + in->owner()->op().str() +
                       "; inner inputs must be free variables (Variable::create)");
    if (in->kind() != Variable::Kind::Regular)
      throw GraphError(op + ": inner input " + std::to_string(i) + " " + describe(*in) + " is a " +
                       (in->kind() == Variable::Kind::Constant ? "constant" : "shared variable") +
                       "; inner inputs must be free variables (Variable::create)");
    if (!given.insert(in.get()).second)
      throw GraphError(op + ": inner input " + std::to_string(i) + " " + describe(*in) +
                       " is listed twice");
  }
  for (std::size_t o = 0; o < outputs.size(); ++o)
    if (!outputs[o]) throw GraphError(op + ": inner output " + std::to_string(o) + " is null");
  for (const VarPtr& v : graphInputs(outputs)) {
    if (v->kind() == Variable::Kind::Shared)
      throw GraphError(
          op + ": the inner graph uses the shared variable " + describe(*v) +
          "; shared variables inside an OpFromGraph are not supported, pass it as an input");
    if (!given.count(v.get()))
      throw GraphError(op + ": the inner graph depends on the free variable " + describe(*v) +
                       ", which is not among its inputs");
  }
  auto graph = std::make_unique<FunctionGraph>(inputs, outputs, FunctionGraph::Ownership::Clone);
  const std::string base = currentScope();
  for (Apply* node : graph->nodes()) node->setScope(relativeScope(node->scope(), base));
  // Test values belong to the outer graph's inputs; inside the op they would make two ops built
  // from the same graph unequal (props) and bloat every file.
  for (Variable* v : graph->variables()) {
    v->setScope(relativeScope(v->scope(), base));
    v->clearTestValue();
  }
  return graph;
}

}  // namespace

std::string joinScope(std::string_view outer, std::string_view inner) {
  if (outer.empty()) return std::string(inner);
  if (inner.empty()) return std::string(outer);
  return std::string(outer) + kScopeSeparator + std::string(inner);
}

OpFromGraph::OpFromGraph(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                         std::string label, bool isInline, OpFromGraphOverrides overrides)
    : m_overrides(std::move(overrides)), m_label(std::move(label)), m_inline(isInline) {
  if (m_label.empty())
    throw GraphError("OpFromGraph: the label is empty; name the subgraph (\"gelu_block\")");
  m_graph = cloneInner(inputs, outputs, m_label);
  init();
}

OpFromGraph::OpFromGraph(std::shared_ptr<const FunctionGraph> graph, std::string label,
                         bool isInline, OpFromGraphOverrides overrides)
    : m_graph(std::move(graph)),
      m_overrides(std::move(overrides)),
      m_label(std::move(label)),
      m_inline(isInline) {
  if (!m_graph) throw GraphError("OpFromGraph{" + m_label + "}: the inner graph is null");
  init();
}

OpFromGraph::~OpFromGraph() = default;

void OpFromGraph::init() {
  if (m_label.empty())
    throw GraphError("OpFromGraph: the label is empty; name the subgraph (\"gelu_block\")");
  if (m_label.find(kScopeSeparator) != std::string::npos)
    throw GraphError("OpFromGraph: the label '" + m_label +
                     "' contains '/', which separates scope levels");
  if (m_graph->outputs().empty()) throw GraphError(str() + ": the inner graph has no outputs");
  for (std::size_t i = 0; i < m_graph->inputs().size(); ++i) {
    const Variable& in = *m_graph->inputs()[i];
    if (in.kind() != Variable::Kind::Regular || in.owner())
      throw GraphError(str() + ": inner input " + std::to_string(i) + " " + describe(in) +
                       " is not a free variable");
  }
  for (const Variable* v : m_graph->variables())
    if (v->kind() == Variable::Kind::Shared)
      throw GraphError(
          str() + ": the inner graph uses the shared variable " + describe(*v) +
          "; shared variables inside an OpFromGraph are not supported, pass it as an input");
  const std::vector<Apply*> order = m_graph->toposort();
  for (const Apply* node : order) m_executable = m_executable && node->op().isExecutable();
  m_order.assign(order.begin(), order.end());
  m_connection = innerConnectionPattern(*m_graph, m_order);
  m_props = {{"label", m_label}, {"inline", m_inline}, {"graph", io::graphToJson(*m_graph)}};
  checkOverrides();
}

namespace {
// A distinct id per callable override (Note [OpFromGraph overrides]): equal props, equal ops.
std::int64_t nextCallableId() {
  static std::atomic<std::int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

void OpFromGraph::checkOverrides() {
  const std::size_t nIn = m_graph->inputs().size(), nOut = m_graph->outputs().size();
  auto checkGraph = [&](const std::shared_ptr<const OpFromGraph>& g, const char* what,
                        std::size_t extra, std::size_t outs, const char* extraWhat) {
    const std::size_t ins = g->body().inputs().size(), gives = g->body().outputs().size();
    if (ins != nIn + extra || gives != outs)
      throw GraphError(str() + ": the " + what + " override " + g->str() + " takes " +
                       std::to_string(ins) + " inputs and gives " + std::to_string(gives) +
                       "; expected " + std::to_string(nIn) + " inputs + " + std::to_string(extra) +
                       " " + extraWhat + " and " + std::to_string(outs) + " outputs");
  };
  nlohmann::json notSaveable;
  if (m_overrides.grad && m_overrides.gradGraph)
    throw GraphError(str() + ": set either a gradient override callable or a graph, not both");
  if (m_overrides.rop && m_overrides.ropGraph)
    throw GraphError(str() + ": set either an R-op override callable or a graph, not both");
  if (m_overrides.gradGraph) {
    checkGraph(m_overrides.gradGraph, "gradient", nOut, nIn, "output gradients");
    m_props["grad_override"] = m_overrides.gradGraph->props();
  } else if (m_overrides.grad) {
    m_props["grad_override"] = {{"callable", nextCallableId()}};
    notSaveable =
        "its gradient override is a C++ callable, which a file cannot hold (give an "
        "OpFromGraph as gradGraph to save it)";
  }
  if (m_overrides.ropGraph) {
    checkGraph(m_overrides.ropGraph, "R-op", nIn, nOut, "tangents");
    m_props["rop_override"] = m_overrides.ropGraph->props();
  } else if (m_overrides.rop) {
    m_props["rop_override"] = {{"callable", nextCallableId()}};
    notSaveable =
        "its R-op override is a C++ callable, which a file cannot hold (give an "
        "OpFromGraph as ropGraph to save it)";
  }
  if (!notSaveable.is_null()) m_props["not_saveable"] = notSaveable;
}

std::string OpFromGraph::str() const {
  return "OpFromGraph{" + m_label + "}";
}

std::vector<TensorType> OpFromGraph::outputTypes(std::span<const VarPtr> inputs) const {
  const auto& inner = m_graph->inputs();
  checkInputCount(inputs, inner.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& want = inner[i]->type();
    const TensorType& got = inputs[i]->type();
    if (got.dtype() != want.dtype() || !got.isCompatibleWith(want)) {
      std::string expected = want.str() + " (the type of inner input " + std::to_string(i);
      if (!inner[i]->name().empty()) expected += " '" + inner[i]->name() + "'";
      throwInputError(inputs, static_cast<int>(i), expected + ")");
    }
  }
  std::vector<TensorType> types;
  for (const VarPtr& out : m_graph->outputs()) types.push_back(out->type());
  return types;
}

// Note [OpFromGraph reference]: perform evaluates the body node by node with each inner op's own
// perform, on values local to the call: no compile, no shared state, so any number of threads may
// run it at once. An inner node that overwrites an input (an inplace op in a body loaded from a
// file) gets a copy, so the caller's values never change. Compiled functions do not come here:
// they run the optimized body as a VM frame.
void OpFromGraph::perform(const Apply&, std::span<const Tensor* const> inputs,
                          std::span<Tensor* const> outputs) const {
  evaluateGraph(*m_graph, m_order, inputs, outputs, str());
}

std::vector<std::vector<bool>> innerConnectionPattern(const FunctionGraph& graph,
                                                      std::span<const Apply* const> order) {
  const auto& ins = graph.inputs();
  const auto& outs = graph.outputs();
  std::vector<std::vector<bool>> c(ins.size(), std::vector<bool>(outs.size(), false));
  for (std::size_t i = 0; i < ins.size(); ++i) {
    std::unordered_set<const Variable*> dep{ins[i].get()};
    for (const Apply* node : order) {
      const auto pattern = node->op().connectionPattern(*node);
      for (int k = 0; k < node->nInputs(); ++k) {
        if (!dep.count(node->input(k).get())) continue;
        for (int o = 0; o < node->nOutputs(); ++o)
          if (pattern[static_cast<std::size_t>(k)][static_cast<std::size_t>(o)])
            dep.insert(&node->outputRef(o));
      }
    }
    for (std::size_t o = 0; o < outs.size(); ++o) c[i][o] = dep.count(outs[o].get()) > 0;
  }
  return c;
}

void evaluateGraph(const FunctionGraph& graph, std::span<const Apply* const> order,
                   std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
                   const std::string& what) {
  std::unordered_map<const Variable*, Tensor> values;
  values.reserve(graph.variables().size());
  const auto& innerInputs = graph.inputs();
  for (std::size_t i = 0; i < innerInputs.size(); ++i) values[innerInputs[i].get()] = *inputs[i];
  auto valueOf = [&](const Variable& v) -> Tensor& {
    if (v.kind() == Variable::Kind::Constant) {
      auto [it, fresh] = values.try_emplace(&v);
      if (fresh) it->second = static_cast<const Constant&>(v).value();
      return it->second;
    }
    return values[&v];
  };
  std::vector<Tensor> ins, outs;
  std::vector<const Tensor*> inPtrs;
  std::vector<Tensor*> outPtrs;
  for (const Apply* node : order) {
    ins.clear();
    for (const VarPtr& in : node->inputs()) ins.push_back(valueOf(*in));
    for (const auto& [output, destroyed] : node->op().destroyMap())
      for (int i : destroyed)
        if (i >= 0 && i < node->nInputs())
          ins[static_cast<std::size_t>(i)] = ins[static_cast<std::size_t>(i)].clone();
    outs.assign(static_cast<std::size_t>(node->nOutputs()), Tensor());
    inPtrs.clear();
    outPtrs.clear();
    for (const Tensor& t : ins) inPtrs.push_back(&t);
    for (Tensor& t : outs) outPtrs.push_back(&t);
    try {
      node->op().perform(*node, inPtrs, outPtrs);
    } catch (const std::exception& e) {
      throw std::runtime_error(what + ": the inner " + node->op().str() + " (node " +
                               std::to_string(node->id()) + ") failed: " + e.what());
    }
    for (int o = 0; o < node->nOutputs(); ++o)
      values[&node->outputRef(o)] = std::move(outs[static_cast<std::size_t>(o)]);
  }
  const auto& innerOutputs = graph.outputs();
  for (std::size_t o = 0; o < innerOutputs.size(); ++o) {
    Tensor value = valueOf(*innerOutputs[o]);
    // An inner output that is an inner input (or a view of one), or the same variable as an
    // earlier output, would alias a buffer the op does not declare (viewMap is empty).
    bool shared = false;
    for (const Tensor* t : inputs) shared = shared || value.sharesStorageWith(*t);
    for (std::size_t k = 0; k < o; ++k) shared = shared || value.sharesStorageWith(*outputs[k]);
    *outputs[o] = shared ? value.clone() : std::move(value);
  }
}

std::vector<VarPtr> OpFromGraph::expand(std::span<const VarPtr> inputs, const std::string& scope,
                                        bool testValues) const {
  const auto& innerInputs = m_graph->inputs();
  if (inputs.size() != innerInputs.size())
    throw GraphError(str() + ": expand got " + std::to_string(inputs.size()) +
                     " inputs, expected " + std::to_string(innerInputs.size()));
  std::unordered_map<const Variable*, VarPtr> map;
  for (std::size_t i = 0; i < inputs.size(); ++i) map.emplace(innerInputs[i].get(), inputs[i]);
  auto lookup = [&](const VarPtr& v) -> VarPtr {
    if (auto it = map.find(v.get()); it != map.end()) return it->second;
    // A constant of the inner graph: a variable belongs to one graph, so the expansion gets a copy.
    VarPtr copy = v->cloneDetached();
    copy->presetId(-1);
    copy->setScope(joinScope(scope, v->scope()));
    map.emplace(v.get(), copy);
    return copy;
  };
  for (const Apply* node : m_graph->toposort()) {
    std::vector<VarPtr> ins;
    ins.reserve(node->inputs().size());
    for (const VarPtr& in : node->inputs()) ins.push_back(lookup(in));
    ApplyPtr copy;
    if (testValues) {
      copy = node->op().makeNode(std::move(ins));
      copy->setSite(node->site());
    } else {
      std::vector<TensorType> types =
          node->op().isExecutable() ? node->op().outputTypes(ins) : std::vector<TensorType>();
      if (types.empty())
        for (int o = 0; o < node->nOutputs(); ++o) types.push_back(node->outputRef(o).type());
      copy = Apply::create(node->opPtr(), std::move(ins), std::move(types), node->site());
    }
    copy->setScope(joinScope(scope, node->scope()));
    for (int o = 0; o < node->nOutputs(); ++o) {
      Variable& dst = copy->outputRef(o);
      const Variable& src = node->outputRef(o);
      dst.setName(src.name());
      dst.setScope(joinScope(scope, src.scope()));
      dst.setSite(src.site());
      map.emplace(&src, copy->output(o));
    }
  }
  std::vector<VarPtr> outs;
  for (const VarPtr& out : m_graph->outputs()) outs.push_back(lookup(out));
  return outs;
}

std::vector<VarPtr> OpFromGraph::apply(std::vector<VarPtr> inputs,
                                       std::source_location site) const {
  return makeNode(std::move(inputs), site)->outputs();
}

std::vector<ShapeExpr> OpFromGraph::inferShape(const Apply& node,
                                               std::span<const ShapeExpr> inputShapes) const {
  // The inner graph on the node's inputs, without values; its nodes' inferShape from the given
  // input shapes outward. The expressions may name expanded nodes (a Reshape's shape vector):
  // they are built on the outer variables, so a rewrite can import them.
  const std::vector<VarPtr> outs = expand(node.inputs(), node.scope(), false);
  std::unordered_map<const Variable*, ShapeExpr> shapes;
  std::unordered_set<const Variable*> stop;
  for (int i = 0; i < node.nInputs(); ++i) {
    shapes.emplace(node.input(i).get(), inputShapes[static_cast<std::size_t>(i)]);
    stop.insert(node.input(i).get());
  }
  auto shapeFor = [&](const VarPtr& v) -> ShapeExpr {
    if (auto it = shapes.find(v.get()); it != shapes.end()) return it->second;
    return shapeOf(v);
  };
  for (Apply* inner : ancestorNodes(outs, [&](const Variable& v) { return stop.count(&v) > 0; })) {
    std::vector<ShapeExpr> in;
    for (const VarPtr& v : inner->inputs()) in.push_back(shapeFor(v));
    std::vector<ShapeExpr> out;
    try {
      out = inner->op().inferShape(*inner, in);
    } catch (const NotImplementedError&) {
      out.clear();
      for (int o = 0; o < inner->nOutputs(); ++o) out.push_back(shapeOf(inner->output(o)));
    }
    if (out.size() != static_cast<std::size_t>(inner->nOutputs()))
      throw std::logic_error(str() + ": the inner " + inner->op().str() + " inferred " +
                             std::to_string(out.size()) + " shapes for " +
                             std::to_string(inner->nOutputs()) + " outputs");
    for (int o = 0; o < inner->nOutputs(); ++o)
      shapes[&inner->outputRef(o)] = std::move(out[static_cast<std::size_t>(o)]);
  }
  std::vector<ShapeExpr> result;
  for (const VarPtr& out : outs) result.push_back(shapeFor(out));
  return result;
}

std::vector<VarPtr> OpFromGraph::distinctSlots(const Apply& node) {
  std::vector<VarPtr> slots;
  std::unordered_set<const Variable*> seen;
  for (const VarPtr& in : node.inputs())
    slots.push_back(seen.insert(in.get()).second ? in : identity(in));
  return slots;
}

std::vector<Grad> OpFromGraph::pullback(const Apply& node,
                                        std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> result(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  if (m_overrides.grad || m_overrides.gradGraph) {
    // Note [OpFromGraph overrides].
    std::vector<VarPtr> grads;
    if (m_overrides.gradGraph) {
      std::vector<VarPtr> ins(node.inputs().begin(), node.inputs().end());
      ins.insert(ins.end(), outputGrads.begin(), outputGrads.end());
      grads = m_overrides.gradGraph->apply(std::move(ins));
    } else {
      grads = m_overrides.grad(node.inputs(), outputGrads);
    }
    if (grads.size() != result.size())
      throw GraphError(str() + ": the gradient override gave " + std::to_string(grads.size()) +
                       " gradients; expected one per input (" + std::to_string(result.size()) +
                       ")");
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i]) continue;
      const TensorType& want = node.input(static_cast<int>(i))->type();
      if (grads[i]->type().dtype() != want.dtype() || grads[i]->type().ndim() != want.ndim())
        throw TypeError(str() + ": the gradient override gave " + grads[i]->type().str() +
                        " for input " + std::to_string(i) + ", expected " + want.str());
      result[i] = Grad(grads[i]);
    }
    return result;
  }
  std::vector<VarPtr> wrt;
  std::vector<std::size_t> which;
  const std::vector<VarPtr> slots = distinctSlots(node);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    bool connected = false;
    for (bool c : m_connection[i]) connected = connected || c;
    if (connected) {
      wrt.push_back(slots[i]);
      which.push_back(i);
    }
  }
  if (wrt.empty()) return result;
  // Theano's default OpFromGraph gradient: the inner graph rebuilt on the outer inputs, then
  // differentiated like any other graph.
  const std::vector<VarPtr> outs = expand(slots, joinScope(currentScope(), m_label));
  GradOptions options;
  options.disconnected = DisconnectedPolicy::Ignore;
  options.allowUndefined = true;
  const std::vector<VarPtr> grads =
      grad(outs, std::vector<VarPtr>(outputGrads.begin(), outputGrads.end()), wrt, options);
  for (std::size_t k = 0; k < which.size(); ++k)
    result[which[k]] =
        grads[k] ? Grad(grads[k])
                 : Grad::undefined(str() + ": the inner graph has no gradient for input " +
                                   std::to_string(which[k]));
  return result;
}

std::optional<std::vector<VarPtr>> OpFromGraph::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (m_overrides.rop || m_overrides.ropGraph) {
    // Note [OpFromGraph overrides]: zeros for the inputs held fixed.
    std::vector<VarPtr> full;
    for (int i = 0; i < node.nInputs(); ++i)
      full.push_back(tangents[static_cast<std::size_t>(i)] ? tangents[static_cast<std::size_t>(i)]
                                                           : zerosLike(node.input(i)));
    std::vector<VarPtr> out;
    if (m_overrides.ropGraph) {
      std::vector<VarPtr> ins(node.inputs().begin(), node.inputs().end());
      ins.insert(ins.end(), full.begin(), full.end());
      out = m_overrides.ropGraph->apply(std::move(ins));
    } else {
      out = m_overrides.rop(node.inputs(), full);
    }
    if (out.size() != static_cast<std::size_t>(node.nOutputs()))
      throw GraphError(str() + ": the R-op override gave " + std::to_string(out.size()) +
                       " tangents; expected one per output (" + std::to_string(node.nOutputs()) +
                       ")");
    return out;
  }
  const std::vector<VarPtr> slots = distinctSlots(node);
  std::vector<VarPtr> wrt, points;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (tangents[i]) {
      wrt.push_back(slots[i]);
      points.push_back(tangents[i]);
    }
  if (wrt.empty()) return std::vector<VarPtr>(static_cast<std::size_t>(node.nOutputs()));
  return Rop(expand(slots, joinScope(currentScope(), m_label)), wrt, points);
}

std::vector<std::vector<bool>> OpFromGraph::connectionPattern(const Apply&) const {
  return m_connection;
}

OpPtr OpFromGraph::fromProps(const nlohmann::json& props) {
  if (!props.is_object())
    throw std::invalid_argument(
        "OpFromGraph: expected props {\"label\", \"inline\", \"graph\"}, found " + props.dump());
  for (const auto& [key, value] : props.items())
    if (key != "label" && key != "inline" && key != "graph" && key != "grad_override" &&
        key != "rop_override" && key != "not_saveable")
      throw std::invalid_argument(
          "OpFromGraph: unknown prop \"" + key +
          "\"; expected \"label\", \"inline\", \"graph\", \"grad_override\", \"rop_override\"");
  if (props.contains("not_saveable"))
    throw std::invalid_argument("OpFromGraph: cannot be rebuilt from props: " +
                                props["not_saveable"].dump());
  if (!props.contains("label") || !props["label"].is_string())
    throw std::invalid_argument("OpFromGraph: prop \"label\" must be a string");
  if (!props.contains("inline") || !props["inline"].is_boolean())
    throw std::invalid_argument("OpFromGraph: prop \"inline\" must be true or false");
  if (!props.contains("graph") || !props["graph"].is_object())
    throw std::invalid_argument(
        "OpFromGraph: prop \"graph\" must be a graph object (docs/tsg-format.md)");
  const std::string label = props["label"].get<std::string>();
  try {
    std::shared_ptr<const FunctionGraph> graph = io::graphFromJson(
        props["graph"], defaultOpRegistry(), "OpFromGraph{" + label + "} prop \"graph\"");
    OpFromGraphOverrides overrides;
    auto overrideGraph = [&](const char* key) -> std::shared_ptr<const OpFromGraph> {
      if (!props.contains(key)) return nullptr;
      auto op = std::dynamic_pointer_cast<const OpFromGraph>(fromProps(props[key]));
      if (!op)
        throw std::invalid_argument(std::string("OpFromGraph: prop \"") + key +
                                    "\" is not an OpFromGraph");
      return op;
    };
    overrides.gradGraph = overrideGraph("grad_override");
    overrides.ropGraph = overrideGraph("rop_override");
    return std::make_shared<const OpFromGraph>(std::move(graph), label, props["inline"].get<bool>(),
                                               std::move(overrides));
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
}

std::shared_ptr<const OpFromGraph> opFromGraph(const std::vector<VarPtr>& inputs,
                                               const std::vector<VarPtr>& outputs,
                                               std::string label, bool isInline) {
  return std::make_shared<const OpFromGraph>(inputs, outputs, std::move(label), isInline);
}

std::shared_ptr<const OpFromGraph> opFromGraph(const std::vector<VarPtr>& inputs,
                                               const std::vector<VarPtr>& outputs,
                                               std::string label, OpFromGraphOverrides overrides,
                                               bool isInline) {
  return std::make_shared<const OpFromGraph>(inputs, outputs, std::move(label), isInline,
                                             std::move(overrides));
}

void registerGraphOps(OpRegistry& registry) {
  registry.add("OpFromGraph", &OpFromGraph::fromProps);
}

}  // namespace tscope::engine
