#include "engine/ops/control/ifelse.h"

#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/traversal.h"
#include "engine/io/graph_json.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/register_ops.h"

#include <unordered_map>
#include <unordered_set>

namespace tscope::engine {

namespace {

std::string describe(const Variable& v) {
  std::string s = v.name().empty() ? v.type().str() : "'" + v.name() + "' (" + v.type().str() + ")";
  if (!v.site().empty()) s += ", created at " + v.site().str();
  return s;
}

// The graph rebuilt on `inputs` (one per graph input) through makeNode; one variable per output.
std::vector<VarPtr> rebuild(const FunctionGraph& g, std::span<const VarPtr> inputs) {
  std::unordered_map<const Variable*, VarPtr> map;
  for (std::size_t i = 0; i < inputs.size(); ++i) map.emplace(g.inputs()[i].get(), inputs[i]);
  auto lookup = [&](const VarPtr& v) -> VarPtr {
    if (auto it = map.find(v.get()); it != map.end()) return it->second;
    VarPtr copy = v->cloneDetached();  // a constant of g: a variable belongs to one graph
    copy->presetId(-1);
    map.emplace(v.get(), copy);
    return copy;
  };
  for (const Apply* node : g.toposort()) {
    std::vector<VarPtr> ins;
    for (const VarPtr& in : node->inputs()) ins.push_back(lookup(in));
    ApplyPtr copy = node->op().makeNode(std::move(ins));
    copy->setSite(node->site());
    copy->setScope(node->scope());
    for (int o = 0; o < node->nOutputs(); ++o) map.emplace(&node->outputRef(o), copy->output(o));
  }
  std::vector<VarPtr> outs;
  for (const VarPtr& out : g.outputs()) outs.push_back(lookup(out));
  return outs;
}

struct Built {
  std::shared_ptr<const IfElse> op;
  std::vector<VarPtr> inputs;  // the node's inputs: cond, then the boundary
};

// Note [IfElse bodies]: both branches rebuilt on fresh free variables standing for cond and the
// boundary, then cloned into two graphs with the same inputs.
Built buildIfElse(const VarPtr& cond, const std::vector<VarPtr>& thenOutputs,
                  const std::vector<VarPtr>& elseOutputs, const std::vector<VarPtr>& boundary,
                  const std::string& label) {
  const std::string op = "IfElse{" + label + "}";
  if (!cond) throw TypeError(op + ": the condition is null");
  if (cond->type().ndim() != 0)
    throw TypeError(op + ": the condition " + describe(*cond) +
                    " must be 0-d (bool or numeric; nonzero takes the then branch)");
  if (thenOutputs.empty() || thenOutputs.size() != elseOutputs.size())
    throw TypeError(op + ": the then branch has " + std::to_string(thenOutputs.size()) +
                    " outputs and the else branch " + std::to_string(elseOutputs.size()) +
                    "; expected the same number, at least one");
  for (std::size_t o = 0; o < thenOutputs.size(); ++o) {
    if (!thenOutputs[o] || !elseOutputs[o])
      throw TypeError(op + ": output " + std::to_string(o) + " of the " +
                      (thenOutputs[o] ? "else" : "then") + " branch is null");
    const TensorType& a = thenOutputs[o]->type();
    const TensorType& b = elseOutputs[o]->type();
    if (a.dtype() != b.dtype() || a.ndim() != b.ndim() || a.device() != b.device())
      throw TypeError(op + ": output " + std::to_string(o) + " is " + a.str() +
                      " in the then branch and " + b.str() +
                      " in the else branch; expected the same dtype and rank (a branch of "
                      "another rank: Note [IfElse branches of another rank])");
  }
  Built built;
  built.inputs.push_back(cond);
  std::unordered_map<const Variable*, VarPtr> map;
  std::vector<VarPtr> innerInputs;
  VarPtr condIn = Variable::create(cond->type(), cond->name().empty() ? "cond" : cond->name());
  map.emplace(cond.get(), condIn);
  innerInputs.push_back(condIn);
  for (const VarPtr& b : boundary) {
    if (!b) throw GraphError(op + ": a branch input is null");
    if (map.count(b.get())) continue;
    VarPtr fresh = Variable::create(b->type(), b->name());
    map.emplace(b.get(), fresh);
    innerInputs.push_back(fresh);
    built.inputs.push_back(b);
  }
  std::vector<VarPtr> all(thenOutputs);
  all.insert(all.end(), elseOutputs.begin(), elseOutputs.end());
  for (Apply* node : ancestorNodes(all, [&](const Variable& v) { return map.count(&v) > 0; })) {
    std::vector<VarPtr> ins;
    for (const VarPtr& in : node->inputs()) {
      auto it = map.find(in.get());
      if (it != map.end()) {
        ins.push_back(it->second);
      } else if (in->kind() == Variable::Kind::Constant) {
        ins.push_back(in);
      } else {
        throw GraphError(op + ": a branch uses " + describe(*in) + " (input of " +
                         node->op().str() + ", node " + std::to_string(node->id()) +
                         "), which is not among the branch inputs");
      }
    }
    std::vector<TensorType> types = node->op().outputTypes(ins);
    ApplyPtr copy = Apply::create(node->opPtr(), std::move(ins), std::move(types), node->site());
    copy->setScope(node->scope());
    for (int o = 0; o < node->nOutputs(); ++o) {
      copy->outputRef(o).setName(node->outputRef(o).name());
      map.emplace(&node->outputRef(o), copy->output(o));
    }
  }
  auto mapped = [&](const std::vector<VarPtr>& outs) {
    std::vector<VarPtr> r;
    for (const VarPtr& v : outs) {
      auto it = map.find(v.get());
      if (it != map.end())
        r.push_back(it->second);
      else if (v->kind() == Variable::Kind::Constant)
        r.push_back(v);
      else
        throw GraphError(op + ": a branch output is " + describe(*v) +
                         ", which is not among the branch inputs");
    }
    return r;
  };
  auto makeGraph = [&](const std::vector<VarPtr>& outs) {
    auto g = std::make_shared<FunctionGraph>(innerInputs, mapped(outs));
    for (Variable* v : g->variables()) v->clearTestValue();
    return std::shared_ptr<const FunctionGraph>(std::move(g));
  };
  built.op = std::make_shared<const IfElse>(makeGraph(thenOutputs), makeGraph(elseOutputs), label);
  return built;
}

}  // namespace

IfElse::IfElse(std::shared_ptr<const FunctionGraph> thenGraph,
               std::shared_ptr<const FunctionGraph> elseGraph, std::string label)
    : m_then(std::move(thenGraph)), m_else(std::move(elseGraph)), m_label(std::move(label)) {
  if (m_label.empty()) throw GraphError("IfElse: the label is empty");
  if (!m_then || !m_else) throw GraphError(str() + ": a branch graph is null");
  const auto& ti = m_then->inputs();
  const auto& ei = m_else->inputs();
  if (ti.empty() || ti.size() != ei.size())
    throw GraphError(str() + ": the then graph has " + std::to_string(ti.size()) +
                     " inputs and the else graph " + std::to_string(ei.size()) +
                     "; expected the same, the condition first");
  for (std::size_t i = 0; i < ti.size(); ++i)
    if (ti[i]->type() != ei[i]->type())
      throw TypeError(str() + ": inner input " + std::to_string(i) + " is " + ti[i]->type().str() +
                      " in the then graph and " + ei[i]->type().str() + " in the else graph");
  if (ti[0]->type().ndim() != 0)
    throw TypeError(str() + ": inner input 0 (the condition) is " + ti[0]->type().str() +
                    "; expected a 0-d tensor");
  const auto& to = m_then->outputs();
  const auto& eo = m_else->outputs();
  if (to.empty() || to.size() != eo.size())
    throw TypeError(str() + ": the then branch has " + std::to_string(to.size()) +
                    " outputs and the else branch " + std::to_string(eo.size()) +
                    "; expected the same number, at least one");
  for (std::size_t o = 0; o < to.size(); ++o) {
    const TensorType& a = to[o]->type();
    const TensorType& b = eo[o]->type();
    if (a.dtype() != b.dtype() || a.ndim() != b.ndim() || a.device() != b.device())
      throw TypeError(str() + ": output " + std::to_string(o) + " is " + a.str() +
                      " in the then branch and " + b.str() +
                      " in the else branch; expected the same dtype and rank (a branch of "
                      "another rank: Note [IfElse branches of another rank])");
    std::vector<std::int64_t> shape(a.shape());
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != b.shape()[d]) shape[d] = kUnknownDim;
    m_types.emplace_back(a.dtype(), std::move(shape), a.device());
  }
  for (const Apply* n : m_then->toposort()) {
    m_thenOrder.push_back(n);
    m_executable = m_executable && n->op().isExecutable();
  }
  for (const Apply* n : m_else->toposort()) {
    m_elseOrder.push_back(n);
    m_executable = m_executable && n->op().isExecutable();
  }
  const auto ct = innerConnectionPattern(*m_then, m_thenOrder);
  const auto ce = innerConnectionPattern(*m_else, m_elseOrder);
  m_connection = ct;
  for (std::size_t i = 0; i < ct.size(); ++i)
    for (std::size_t o = 0; o < to.size(); ++o) m_connection[i][o] = i == 0 || ct[i][o] || ce[i][o];
  m_props = {
      {"label", m_label}, {"then", io::graphToJson(*m_then)}, {"else", io::graphToJson(*m_else)}};
}

IfElse::~IfElse() = default;

std::string IfElse::str() const {
  return "IfElse{" + m_label + "}";
}

std::vector<TensorType> IfElse::outputTypes(std::span<const VarPtr> inputs) const {
  const auto& inner = m_then->inputs();
  checkInputCount(inputs, inner.size());
  if (inputs[0]->type().ndim() != 0)
    throwInputError(inputs, 0, "a 0-d condition (bool or numeric; nonzero takes the then branch)");
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const TensorType& want = inner[i]->type();
    const TensorType& got = inputs[i]->type();
    if (got.dtype() != want.dtype() || !got.isCompatibleWith(want))
      throwInputError(inputs, static_cast<int>(i),
                      want.str() + " (the type of branch input " + std::to_string(i) + ")");
  }
  return m_types;
}

std::size_t IfElse::selectInnerGraph(std::span<const Tensor* const> inputs) const {
  return BreakPointOp::holds(*inputs[0]) ? 0 : 1;
}

void IfElse::perform(const Apply&, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  const bool taken = selectInnerGraph(inputs) == 0;
  evaluateGraph(taken ? *m_then : *m_else, taken ? m_thenOrder : m_elseOrder, inputs, outputs,
                str() + " (" + (taken ? "then" : "else") + " branch)");
}

std::vector<ShapeExpr> IfElse::inferShape(const Apply& node,
                                          std::span<const ShapeExpr> inputShapes) const {
  // Each branch's output shapes from the input shapes; a dimension is kept when it is a constant
  // or one of the given input dimensions (an expression on a branch's inner variables would
  // compute the branch outside the IfElse), and when both branches give the same.
  std::unordered_set<const Variable*> given;
  for (const ShapeExpr& s : inputShapes)
    for (const VarPtr& d : s) given.insert(d.get());
  auto branchShapes = [&](const FunctionGraph& g, const std::vector<const Apply*>& order) {
    std::unordered_map<const Variable*, ShapeExpr> shapes;
    for (std::size_t i = 0; i < g.inputs().size(); ++i)
      shapes.emplace(g.inputs()[i].get(), inputShapes[i]);
    auto shapeFor = [&](const VarPtr& v) -> ShapeExpr {
      if (auto it = shapes.find(v.get()); it != shapes.end()) return it->second;
      ShapeExpr s;  // unknown dims as null; constants from the type
      for (std::int64_t d : v->type().shape())
        s.push_back(d == kUnknownDim ? VarPtr() : constantInt(d));
      return s;
    };
    for (const Apply* inner : order) {
      std::vector<ShapeExpr> in;
      bool complete = true;
      for (const VarPtr& v : inner->inputs()) {
        in.push_back(shapeFor(v));
        for (const VarPtr& d : in.back()) complete = complete && d != nullptr;
      }
      std::vector<ShapeExpr> out;
      if (complete) {
        try {
          out = inner->op().inferShape(*inner, in);
        } catch (const std::exception&) {
          out.clear();
        }
      }
      for (int o = 0; o < inner->nOutputs(); ++o) {
        ShapeExpr s = o < static_cast<int>(out.size())
                          ? out[static_cast<std::size_t>(o)]
                          : shapeFor(const_cast<Apply*>(inner)->output(o));
        for (VarPtr& d : s)
          if (d && !given.count(d.get()) && !constantIntValue(d)) d = nullptr;
        shapes[&inner->outputRef(o)] = std::move(s);
      }
    }
    std::vector<ShapeExpr> result;
    for (const VarPtr& out : g.outputs()) result.push_back(shapeFor(out));
    return result;
  };
  const auto a = branchShapes(*m_then, m_thenOrder);
  const auto b = branchShapes(*m_else, m_elseOrder);
  std::vector<ShapeExpr> result;
  for (int o = 0; o < node.nOutputs(); ++o) {
    ShapeExpr s;
    const ShapeExpr& sa = a[static_cast<std::size_t>(o)];
    const ShapeExpr& sb = b[static_cast<std::size_t>(o)];
    for (std::size_t d = 0; d < sa.size(); ++d) {
      const VarPtr& x = sa[d];
      const VarPtr& y = d < sb.size() ? sb[d] : VarPtr();
      const auto cx = x ? constantIntValue(x) : std::nullopt;
      const auto cy = y ? constantIntValue(y) : std::nullopt;
      if (x && x == y)
        s.push_back(x);
      else if (cx && cy && *cx == *cy)
        s.push_back(x);
      else
        s.push_back(shapeI(const_cast<Apply&>(node).output(o), static_cast<int>(d)));
    }
    result.push_back(std::move(s));
  }
  return result;
}

std::vector<Grad> IfElse::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> result(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  std::vector<std::size_t> which;  // differentiable inputs connected to an output
  for (int i = 1; i < node.nInputs(); ++i) {
    bool connected = false;
    for (bool c : m_connection[static_cast<std::size_t>(i)]) connected = connected || c;
    if (connected && isFloat(node.input(i)->type().dtype()))
      which.push_back(static_cast<std::size_t>(i));
  }
  if (which.empty()) return result;
  // Note [IfElse bodies]: the gradient is an IfElse whose branches differentiate each body, on
  // fresh variables for cond, the inputs and the output gradients.
  std::vector<VarPtr> fresh, boundary, outer;
  fresh.push_back(Variable::create(node.input(0)->type(), "cond"));
  for (int i = 1; i < node.nInputs(); ++i) {
    fresh.push_back(Variable::create(node.input(i)->type(), node.input(i)->name()));
    boundary.push_back(fresh.back());
    outer.push_back(node.input(i));
  }
  std::vector<VarPtr> gradIns;
  for (std::size_t o = 0; o < outputGrads.size(); ++o) {
    gradIns.push_back(Variable::create(outputGrads[o]->type(), "g" + std::to_string(o)));
    boundary.push_back(gradIns.back());
    outer.push_back(outputGrads[o]);
  }
  std::vector<VarPtr> wrt;
  for (std::size_t i : which) wrt.push_back(fresh[i]);
  GradOptions options;
  options.disconnected = DisconnectedPolicy::Ignore;
  options.allowUndefined = true;
  auto branchGrads = [&](const FunctionGraph& g) {
    const std::vector<VarPtr> outs = rebuild(g, fresh);
    std::vector<VarPtr> grads = grad(outs, gradIns, wrt, options);
    for (std::size_t k = 0; k < grads.size(); ++k)
      if (!grads[k]) grads[k] = zerosLike(wrt[k]);
    return grads;
  };
  const std::vector<VarPtr> gt = branchGrads(*m_then);
  const std::vector<VarPtr> ge = branchGrads(*m_else);
  Built built = buildIfElse(fresh[0], gt, ge, boundary, "grad_" + m_label);
  // built.inputs is [fresh cond, boundary...] in order (every boundary variable is distinct).
  std::vector<VarPtr> ins{node.input(0)};
  ins.insert(ins.end(), outer.begin(), outer.end());
  const std::vector<VarPtr> grads = built.op->makeNode(std::move(ins))->outputs();
  for (std::size_t k = 0; k < which.size(); ++k) result[which[k]] = Grad(grads[k]);
  return result;
}

std::vector<std::vector<bool>> IfElse::connectionPattern(const Apply&) const {
  return m_connection;
}

OpPtr IfElse::fromProps(const nlohmann::json& props) {
  if (!props.is_object() || !props.contains("label") || !props["label"].is_string() ||
      !props.contains("then") || !props["then"].is_object() || !props.contains("else") ||
      !props["else"].is_object())
    throw std::invalid_argument(
        "IfElse: expected props {\"label\": string, \"then\": GRAPH, \"else\": GRAPH}, found "
        "keys " +
        [&] {
          std::string k;
          if (props.is_object())
            for (const auto& [key, v] : props.items()) k += (k.empty() ? "" : ", ") + key;
          return k.empty() ? std::string("(none)") : k;
        }());
  for (const auto& [key, value] : props.items())
    if (key != "label" && key != "then" && key != "else")
      throw std::invalid_argument("IfElse: unknown prop \"" + key +
                                  "\"; expected \"label\", \"then\", \"else\"");
  const std::string label = props["label"].get<std::string>();
  try {
    std::shared_ptr<const FunctionGraph> t = io::graphFromJson(
        props["then"], defaultOpRegistry(), "IfElse{" + label + "} prop \"then\"");
    std::shared_ptr<const FunctionGraph> e = io::graphFromJson(
        props["else"], defaultOpRegistry(), "IfElse{" + label + "} prop \"else\"");
    return std::make_shared<const IfElse>(std::move(t), std::move(e), label);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
}

std::vector<VarPtr> ifelse(const VarPtr& cond, const std::vector<VarPtr>& thenOutputs,
                           const std::vector<VarPtr>& elseOutputs,
                           const std::vector<VarPtr>& inputs, const std::string& label,
                           std::source_location site) {
  Built built = buildIfElse(cond, thenOutputs, elseOutputs, inputs, label);
  return built.op->makeNode(std::move(built.inputs), site)->outputs();
}

std::vector<VarPtr> ifelse(const VarPtr& cond, const std::vector<VarPtr>& thenOutputs,
                           const std::vector<VarPtr>& elseOutputs, const std::string& label,
                           std::source_location site) {
  std::vector<VarPtr> all(thenOutputs);
  all.insert(all.end(), elseOutputs.begin(), elseOutputs.end());
  for (const VarPtr& v : all)
    if (!v) throw TypeError("IfElse{" + label + "}: a branch output is null");
  return ifelse(cond, thenOutputs, elseOutputs, graphInputs(all), label, site);
}

VarPtr ifelse(const VarPtr& cond, const VarPtr& thenOutput, const VarPtr& elseOutput,
              std::source_location site) {
  return ifelse(cond, std::vector<VarPtr>{thenOutput}, std::vector<VarPtr>{elseOutput}, "ifelse",
                site)[0];
}

void registerControlOps(OpRegistry& registry) {
  registry.add("IfElse", &IfElse::fromProps);
  registerScanOps(registry);
}

}  // namespace tscope::engine
