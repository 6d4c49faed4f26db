// Shape rewrites (phase canonicalize, tags fast_run, fast_compile, canonicalize, shape): answer
// shape questions from the ShapeFeature instead of from computed values, and drop shape ops that
// change nothing.
//
//   Shape(x)          -> MakeVector(d0, d1, ...)   (a constant vector when every dim is static)
//   ShapeI{i}(x)      -> di                        (a constant when static)
//   SpecifyShape(x, s) -> x                         when x's shape already says s
//   Reshape(x, s)     -> x                         when s is x's own shape
//   Alloc(v, s)       -> v                         when v already has shape s and v's dtype
//
// Note [Shape of known shape]: the point of the first two is that x's producer is no longer
// needed when only its shape was used. A replacement that still reads x (a Shape_i of x itself,
// the fallback of an op without inferShape) would keep that work alive and could undo itself, so
// it is not made; expressions of other variables (the graph inputs' shapes, a Reshape's shape
// vector) are.

#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/shape_vector.h"
#include "engine/ops/shape/specify_shape.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/rewrite/shape_feature.h"
#include "engine/tensor/tensor.h"

#include <unordered_set>

namespace tscope::engine {

namespace {

// How many expression nodes readsVariable() looks at before it gives up (and says yes).
constexpr std::size_t kExpressionWalkLimit = 512;

// True when computing the expressions needs x itself (Note [Shape of known shape]). The walk
// stops at variables of the graph: they are computed already and, being the inputs of x's
// producers' shape inference, upstream of x. A walk that grows past the limit answers true, the
// safe answer.
bool readsVariable(const ShapeExpr& exprs, const Variable& x, const FunctionGraph& fg) {
  std::vector<const Variable*> stack;
  for (const VarPtr& e : exprs) stack.push_back(e.get());
  std::unordered_set<const Variable*> seen;
  while (!stack.empty()) {
    const Variable* v = stack.back();
    stack.pop_back();
    if (v == &x) return true;
    if (!seen.insert(v).second) continue;
    if (seen.size() > kExpressionWalkLimit) return true;
    if (v->fgraph() == &fg || !v->owner()) continue;
    for (const VarPtr& in : v->owner()->inputs()) stack.push_back(in.get());
  }
  return false;
}

// Shape(x) -> MakeVector of x's dims, or a constant vector when they are all static.
Replacements shapeOfKnownShape(RewriteContext& ctx, Apply& node) {
  const VarPtr& x = node.input(0);
  const ShapeExpr& dims = ctx.shapes().shapeOf(x);
  const std::vector<std::int64_t> known = staticShape(dims);
  bool allStatic = true;
  for (std::int64_t d : known) allStatic = allStatic && d != kUnknownDim;
  if (allStatic) {
    std::vector<double> values(known.begin(), known.end());
    const Tensor value =
        Tensor::fromDoubles(DType::Int64, {static_cast<std::int64_t>(known.size())}, values);
    return {{node.output(0), constant(value)}};
  }
  // The Shape of a graph input is as cheap as shapes get; a MakeVector of its Shape_i gains
  // nothing.
  if (!x->owner() || readsVariable(dims, *x, ctx.graph())) return {};
  return {{node.output(0), makeVector(dims, DType::Int64)}};
}

// ShapeI{i}(x) -> x's inferred dim i.
Replacements shapeIOfKnownShape(RewriteContext& ctx, Apply& node) {
  const VarPtr& x = node.input(0);
  const int axis = static_cast<const ShapeI&>(node.op()).axis();
  const VarPtr dim = ctx.shapes().dimOf(x, axis);
  if (constantIntValue(dim)) return {{node.output(0), dim}};
  if (!x->owner() || readsVariable({dim}, *x, ctx.graph())) return {};
  return {{node.output(0), dim}};
}

// SpecifyShape(x, d...) -> x when each d is -1 or already x's dim.
Replacements uselessSpecifyShape(RewriteContext& ctx, Apply& node) {
  const VarPtr& x = node.input(0);
  const VarPtr out = node.output(0);
  if (!x->type().isSubtypeOf(out->type())) return {};  // the op tells the type something x's lacks
  ShapeFeature& shapes = ctx.shapes();
  for (int axis = 0; axis < x->type().ndim(); ++axis) {
    const VarPtr& d = node.input(axis + 1);
    if (auto c = ShapeFeature::foldInt(d)) {
      if (*c < 0) continue;  // unchecked axis
      if (shapes.staticDim(x, axis) == *c) continue;
      return {};
    }
    if (!ShapeFeature::sameDim(d, shapes.dimOf(x, axis))) return {};
  }
  return {{out, x}};
}

// Reshape(x, s) -> x when s is x's shape: entry by entry (one -1 standing for the only axis left
// over), or by the ShapeFeature's shapes of x and the result.
Replacements uselessReshape(RewriteContext& ctx, Apply& node) {
  const VarPtr& x = node.input(0);
  const VarPtr out = node.output(0);
  const int ndim = out->type().ndim();
  if (x->type().ndim() != ndim || !x->type().isSubtypeOf(out->type())) return {};
  ShapeFeature& shapes = ctx.shapes();
  if (shapes.sameShape(x, out)) return {{out, x}};
  const VarPtr& target = node.input(1);
  // The entries as the graph holds them (a MakeVector's inputs or a constant's values); reading
  // other vectors would build new nodes that cannot compare equal anyway.
  if (target->kind() != Variable::Kind::Constant &&
      !(target->owner() && dynamic_cast<const MakeVector*>(&target->owner()->op())))
    return {};
  const std::optional<ShapeExpr> entries = vectorEntries(target);
  if (!entries || static_cast<int>(entries->size()) != ndim) return {};
  int inferred = 0;
  bool othersStaticNonZero = true;
  for (int axis = 0; axis < ndim; ++axis) {
    const VarPtr& e = (*entries)[static_cast<std::size_t>(axis)];
    const std::optional<std::int64_t> c = ShapeFeature::foldInt(e);
    const std::optional<std::int64_t> have = shapes.staticDim(x, axis);
    if (c && *c == -1) {
      ++inferred;
      continue;
    }
    othersStaticNonZero = othersStaticNonZero && have && *have > 0;
    if (c ? have == *c : ShapeFeature::sameDim(e, shapes.dimOf(x, axis))) continue;
    return {};
  }
  // With one -1 the left-over axis is numel / (the others), x's own size, as long as the others
  // are not 0 (0 / 0 makes the -1 ambiguous, which Reshape reports at run time).
  if (inferred > 1 || (inferred == 1 && ndim > 1 && !othersStaticNonZero)) return {};
  return {{out, x}};
}

// Alloc(v, d...) -> v when v has the output's dtype and shape already.
Replacements uselessAlloc(RewriteContext& ctx, Apply& node) {
  const VarPtr& value = node.input(0);
  const VarPtr out = node.output(0);
  if (value->type().ndim() != out->type().ndim() || value->type().dtype() != out->type().dtype() ||
      !value->type().isSubtypeOf(out->type()))
    return {};
  if (!ctx.shapes().sameShape(value, out)) return {};
  return {{out, value}};
}

}  // namespace

void registerShapeRewrites(RewriteDb& db) {
  const std::vector<std::string> tags{"fast_run", "fast_compile", "canonicalize", "shape"};
  db.add(Phase::Canonicalize, nodeRewriter("shape_of_known_shape", {"Shape"}, shapeOfKnownShape),
         tags);
  db.add(Phase::Canonicalize,
         nodeRewriter("shape_i_of_known_shape", {"ShapeI"}, shapeIOfKnownShape), tags);
  db.add(Phase::Canonicalize,
         nodeRewriter("useless_specify_shape", {"SpecifyShape"}, uselessSpecifyShape), tags);
  db.add(Phase::Canonicalize, nodeRewriter("useless_reshape", {"Reshape"}, uselessReshape), tags);
  db.add(Phase::Canonicalize, nodeRewriter("useless_alloc", {"Alloc"}, uselessAlloc), tags);
}

}  // namespace tscope::engine
