#include "engine/rewrite/shape_feature.h"

#include "engine/graph/config.h"
#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/tensor/tensor.h"

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tscope::engine {

namespace {

std::string nodeWhere(const Apply& node) {
  std::string s = node.op().str() + " (node " + std::to_string(node.id());
  if (!node.site().empty()) s += ", created at " + node.site().str();
  return s + ")";
}

// Two Constants with the same dtype, shape and values (the leaves of shape expressions are small).
bool sameConstant(const Variable& a, const Variable& b) {
  if (a.kind() != Variable::Kind::Constant || b.kind() != Variable::Kind::Constant) return false;
  const Tensor& x = static_cast<const Constant&>(a).value();
  const Tensor& y = static_cast<const Constant&>(b).value();
  return x.dtype() == y.dtype() && x.shape() == y.shape() && x.toDoubles() == y.toDoubles();
}

}  // namespace

// --- Lookups -------------------------------------------------------------------------------------

const ShapeExpr& ShapeFeature::shapeOf(const VarPtr& var) {
  if (!m_graph)
    throw std::logic_error("ShapeFeature::shapeOf: the feature is not attached to a FunctionGraph");
  if (!var) throw std::invalid_argument("ShapeFeature::shapeOf: the variable is null");
  if (auto it = m_cache.find(var.get()); it != m_cache.end()) return it->second.shape;
  // Note [Iterative shape inference]: a variable stays on the stack until its producer's inputs
  // all have entries; then the producer's inferShape fills the entries of all its outputs.
  std::vector<VarPtr> stack{var};
  while (!stack.empty()) {
    const VarPtr v = stack.back();
    if (m_cache.contains(v.get())) {
      stack.pop_back();
      continue;
    }
    Apply* node = v->owner();
    if (!node) {
      store(v, shapeOfFreeVariable(v));
      stack.pop_back();
      continue;
    }
    bool ready = true;
    for (const VarPtr& in : node->inputs()) {
      if (!m_cache.contains(in.get())) {
        stack.push_back(in);
        ready = false;
      }
    }
    if (!ready) continue;
    stack.pop_back();
    computeNode(*node);
  }
  return m_cache.at(var.get()).shape;
}

VarPtr ShapeFeature::dimOf(const VarPtr& var, int axis) {
  if (!var || axis < 0 || axis >= var->type().ndim())
    throw std::out_of_range("ShapeFeature::dimOf: axis " + std::to_string(axis) +
                            " is out of range for " +
                            (var ? var->type().str() : std::string("a null variable")));
  return shapeOf(var)[static_cast<std::size_t>(axis)];
}

std::optional<std::int64_t> ShapeFeature::staticDim(const VarPtr& var, int axis) {
  if (!var || axis < 0 || axis >= var->type().ndim())
    throw std::out_of_range("ShapeFeature::staticDim: axis " + std::to_string(axis) +
                            " is out of range for " +
                            (var ? var->type().str() : std::string("a null variable")));
  const std::int64_t known = var->type().shape()[static_cast<std::size_t>(axis)];
  if (known != kUnknownDim) return known;
  // Entries are folded when they are computed (normalizeDim), so a constant here is all there is.
  return constantIntValue(dimOf(var, axis));
}

bool ShapeFeature::sameShape(const VarPtr& a, const VarPtr& b) {
  if (a->type().ndim() != b->type().ndim()) return false;
  if (a == b) return true;
  for (int axis = 0; axis < a->type().ndim(); ++axis) {
    const std::optional<std::int64_t> sa = staticDim(a, axis), sb = staticDim(b, axis);
    if (sa && sb) {
      if (*sa != *sb) return false;
      continue;
    }
    if (sa || sb) return false;  // one static, the other symbolic: not provably equal
    if (!sameDim(dimOf(a, axis), dimOf(b, axis))) return false;
  }
  return true;
}

bool ShapeFeature::sameDim(const VarPtr& a, const VarPtr& b) {
  std::vector<std::pair<const Variable*, const Variable*>> stack{{a.get(), b.get()}};
  std::size_t visited = 0;
  while (!stack.empty()) {
    const auto [x, y] = stack.back();
    stack.pop_back();
    if (x == y) continue;
    if (++visited > kCompareNodeLimit) return false;
    if (x->kind() == Variable::Kind::Constant || y->kind() == Variable::Kind::Constant) {
      if (sameConstant(*x, *y)) continue;
      // A constant against an expression that folds to the same value.
      const auto value = [](const Variable& v) -> std::optional<std::int64_t> {
        if (!v.owner()) return std::nullopt;
        return foldInt(v.owner()->output(v.index()));
      };
      const auto cx = x->kind() == Variable::Kind::Constant && x->type().ndim() == 0
                          ? std::optional<std::int64_t>(static_cast<std::int64_t>(
                                static_cast<const Constant&>(*x).value().item()))
                          : value(*x);
      const auto cy = y->kind() == Variable::Kind::Constant && y->type().ndim() == 0
                          ? std::optional<std::int64_t>(static_cast<std::int64_t>(
                                static_cast<const Constant&>(*y).value().item()))
                          : value(*y);
      if (!cx || !cy || *cx != *cy) return false;
      continue;
    }
    const Apply* ox = x->owner();
    const Apply* oy = y->owner();
    if (!ox || !oy) return false;  // distinct free variables
    if (x->index() != y->index() || ox->nInputs() != oy->nInputs() || !ox->op().equals(oy->op()))
      return false;
    for (int i = 0; i < ox->nInputs(); ++i)
      stack.emplace_back(ox->input(i).get(), oy->input(i).get());
  }
  return true;
}

std::optional<std::int64_t> ShapeFeature::foldInt(const VarPtr& expr) {
  if (!expr) return std::nullopt;
  if (auto c = constantIntValue(expr)) return c;
  if (expr->type().ndim() != 0 || !isInteger(expr->type().dtype()) || !expr->owner())
    return std::nullopt;
  // Post-order over the expression's nodes, iteratively; a free non-constant leaf stops the fold.
  std::vector<Apply*> order;
  std::unordered_set<const Apply*> seen;
  std::vector<std::pair<Apply*, bool>> stack{{expr->owner(), false}};
  while (!stack.empty()) {
    auto [node, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      order.push_back(node);
      continue;
    }
    if (!seen.insert(node).second) continue;
    if (seen.size() > kFoldNodeLimit || !node->op().isExecutable()) return std::nullopt;
    stack.emplace_back(node, true);
    for (const VarPtr& in : node->inputs()) {
      if (in->owner()) {
        if (!seen.contains(in->owner())) stack.emplace_back(in->owner(), false);
      } else if (in->kind() != Variable::Kind::Constant) {
        return std::nullopt;
      }
    }
  }
  try {
    std::unordered_map<const Variable*, Tensor> values;
    for (Apply* node : order) {
      std::vector<const Tensor*> ins;
      for (const VarPtr& in : node->inputs())
        ins.push_back(in->owner() ? &values.at(in.get())
                                  : &static_cast<const Constant&>(*in).value());
      std::vector<Tensor> results(static_cast<std::size_t>(node->nOutputs()));
      std::vector<Tensor*> outs;
      for (Tensor& t : results) outs.push_back(&t);
      node->op().perform(*node, ins, outs);
      for (int o = 0; o < node->nOutputs(); ++o)
        values.emplace(&node->outputRef(o), std::move(results[static_cast<std::size_t>(o)]));
    }
    const Tensor& result = values.at(expr.get());
    if (result.ndim() != 0 || !isInteger(result.dtype())) return std::nullopt;
    return static_cast<std::int64_t>(result.item());
  } catch (const std::exception&) {
    return std::nullopt;  // a shape expression that fails on its constants: not foldable here
  }
}

// --- Computing entries ---------------------------------------------------------------------------

void ShapeFeature::computeNode(Apply& node) {
  std::vector<ShapeExpr> inputShapes;
  inputShapes.reserve(static_cast<std::size_t>(node.nInputs()));
  for (const VarPtr& in : node.inputs()) inputShapes.push_back(m_cache.at(in.get()).shape);
  std::vector<ShapeExpr> inferred;
  try {
    ++m_inferCount;
    inferred = node.op().inferShape(node, inputShapes);
  } catch (const std::exception& e) {
    // The header's fallback: the output's own Shape_i per unknown axis. An op without inferShape
    // is expected; one whose inferShape fails is worth a warning (Theano's ShapeFeature does the
    // same), but not worth failing the compilation for.
    if (!dynamic_cast<const NotImplementedError*>(&e))
      warn("ShapeFeature: " + nodeWhere(node) + ": inferShape failed (" + e.what() +
           "); its output shapes are read at run time instead");
    inferred.clear();
    for (int o = 0; o < node.nOutputs(); ++o)
      inferred.push_back(shapeOfFreeVariable(node.output(o)));
  }
  if (static_cast<int>(inferred.size()) != node.nOutputs())
    throw std::logic_error("ShapeFeature: " + nodeWhere(node) + ": inferShape returned " +
                           std::to_string(inferred.size()) + " shapes, expected one per output (" +
                           std::to_string(node.nOutputs()) + ")");
  for (int o = 0; o < node.nOutputs(); ++o) {
    ShapeExpr& shape = inferred[static_cast<std::size_t>(o)];
    const int ndim = node.outputRef(o).type().ndim();
    if (static_cast<int>(shape.size()) != ndim)
      throw std::logic_error("ShapeFeature: " + nodeWhere(node) + ": inferShape returned " +
                             std::to_string(shape.size()) + " dimensions for output " +
                             std::to_string(o) + ", expected " + std::to_string(ndim) +
                             " (its type is " + node.outputRef(o).type().str() + ")");
    for (int axis = 0; axis < ndim; ++axis)
      shape[static_cast<std::size_t>(axis)] =
          normalizeDim(node, o, axis, shape[static_cast<std::size_t>(axis)]);
    VarPtr out = node.output(o);
    store(out, std::move(shape));
    for (const VarPtr& in : node.inputs()) m_cache.at(in.get()).derived.push_back(out.get());
  }
}

VarPtr ShapeFeature::normalizeDim(const Apply& node, int output, int axis, const VarPtr& inferred) {
  const std::int64_t known = node.outputRef(output).type().shape()[static_cast<std::size_t>(axis)];
  if (known != kUnknownDim) return constInt(known);
  if (!inferred || inferred->type().ndim() != 0 || !isInteger(inferred->type().dtype()))
    throw std::logic_error(
        "ShapeFeature: " + nodeWhere(node) + ": inferShape gave output " + std::to_string(output) +
        " axis " + std::to_string(axis) + " " +
        (inferred ? "a " + inferred->type().str() : std::string("no expression")) +
        ", expected a 0-d integer");
  if (auto value = foldInt(inferred)) return constInt(*value);
  return inferred->type().dtype() == DType::Int64 ? inferred : cast(inferred, DType::Int64);
}

ShapeExpr ShapeFeature::shapeOfFreeVariable(const VarPtr& var) {
  ShapeExpr shape;
  const auto& known = var->type().shape();
  for (int axis = 0; axis < var->type().ndim(); ++axis) {
    const std::int64_t k = known[static_cast<std::size_t>(axis)];
    shape.push_back(k != kUnknownDim ? constInt(k)
                                     : std::make_shared<ShapeI>(axis)->operator()({var}));
  }
  return shape;
}

ShapeFeature::Entry& ShapeFeature::store(const VarPtr& var, ShapeExpr shape) {
  auto [it, inserted] = m_cache.try_emplace(var.get(), Entry{var, std::move(shape), {}});
  if (inserted && var->fgraph() != m_graph) m_outside.push_back(var.get());
  return it->second;
}

VarPtr ShapeFeature::constInt(std::int64_t value) {
  VarPtr& c = m_constants[value];
  if (!c) c = constantInt(value);
  return c;
}

// --- Forgetting (Note [Shape cache invalidation]) ------------------------------------------------

void ShapeFeature::forget(const Variable* var) {
  std::vector<VarPtr> released;  // variables freed only after the walk, outside the map
  std::vector<const Variable*> work{var};
  while (!work.empty()) {
    const Variable* v = work.back();
    work.pop_back();
    auto it = m_cache.find(v);
    if (it == m_cache.end()) continue;
    work.insert(work.end(), it->second.derived.begin(), it->second.derived.end());
    released.push_back(std::move(it->second.var));
    m_cache.erase(it);
  }
}

void ShapeFeature::forgetOutputs(const Apply& node) {
  for (int o = 0; o < node.nOutputs(); ++o) forget(&node.outputRef(o));
}

void ShapeFeature::onAttach(FunctionGraph& fg) {
  if (m_graph && m_graph != &fg)
    throw std::logic_error(
        "ShapeFeature: already attached to another FunctionGraph (one feature serves one graph)");
  m_graph = &fg;
}

void ShapeFeature::onDetach(FunctionGraph&) {
  m_cache.clear();
  m_outside.clear();
  m_constants.clear();
  m_graph = nullptr;
}

void ShapeFeature::onPrune(FunctionGraph&, Apply& node, std::string_view) {
  forgetOutputs(node);
}

void ShapeFeature::onChangeInput(FunctionGraph&, Apply* node, int, const VarPtr&, const VarPtr&,
                                 std::string_view) {
  if (node) forgetOutputs(*node);
}

void ShapeFeature::onChangeEnd(FunctionGraph&, std::string_view) {
  std::vector<const Variable*> outside;
  outside.swap(m_outside);
  for (const Variable* v : outside) {
    auto it = m_cache.find(v);
    if (it == m_cache.end()) continue;
    if (it->second.var->fgraph() == m_graph) continue;  // imported by the change: a graph entry now
    forget(v);
  }
}

}  // namespace tscope::engine
