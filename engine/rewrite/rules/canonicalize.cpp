// The canonicalize phase (issue 4): rewrites that put expressions in one canonical form, so that
// merge finds equal expressions and the later phases see fewer shapes of the same computation.
// Every rewrite keeps the replaced output's type exactly (Note [Fitting the replacement] in
// pattern.h): a simplification that would change the dtype casts, one that would lose the
// broadcast shape broadcasts (second or Alloc), and one that cannot be made to fit does not apply.
//
// Note [Canonical algebra and IEEE values]: some identities hold for real numbers but not for
// every float. Like Theano, canonicalize applies
//   x - x -> 0        (NaN - NaN and Inf - Inf are NaN)
//   x * y / y -> x    (y = 0 or Inf gives NaN before)
//   exp(log(x)) -> x  (defined for x > 0 only; x < 0 gave NaN)
// and so removes NaNs such inputs would have produced. It does NOT rewrite x * 0 -> 0 for floats,
// where the NaN of Inf * 0 is the common symptom of a real bug that NanGuard should catch: that
// one applies only to integer and bool products, which cannot hold NaN or Inf.
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/shape_vector.h"
#include "engine/rewrite/pattern.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/rewrite/shape_feature.h"

#include <algorithm>
#include <cmath>

namespace tscope::engine {

namespace {

const std::vector<std::string> kTags = {"fast_run", "fast_compile", "canonicalize"};

// The add or mul an Elemwise node computes (not inplace: canonicalize runs before inplace, and an
// inplace node's buffer belongs to the DestroyHandler's plan).
std::optional<ScalarOp> addOrMul(const Apply& node) {
  const auto op = elemwiseScalarOp(node);
  if (!op || (*op != ScalarOp::Add && *op != ScalarOp::Mul) || !node.op().destroyMap().empty())
    return std::nullopt;
  return op;
}

Replacements replaceWith(RewriteContext& ctx, Apply& node, VarPtr built) {
  const VarPtr out = node.output(0);
  if (VarPtr fitted = fitReplacement(ctx, std::move(built), out)) return {{out, fitted}};
  return {};
}

// Whether input `in` of an add/mul of `op` computing in `dtype` is itself such a node that only
// this one reads: then its operands can take its place.
bool absorbable(const FunctionGraph& g, const VarPtr& in, ScalarOp op, DType dtype) {
  const Apply* inner = in->owner();
  return inner && addOrMul(*inner) == op && in->type().dtype() == dtype &&
         nodeClientCount(g, *in) == 1 && !isGraphOutput(g, *in);
}

// True when value is an integer that dtype (an integer type) holds exactly.
bool isExactInteger(double value, DType dtype) {
  if (std::nearbyint(value) != value) return false;
  const double bits = 8.0 * static_cast<double>(dtypeSize(dtype));
  const double lo = isSigned(dtype) ? -std::ldexp(1.0, static_cast<int>(bits) - 1) : 0.0;
  const double hi =
      std::min(std::ldexp(1.0, static_cast<int>(bits) - (isSigned(dtype) ? 1 : 0)) - 1.0,
               9007199254740992.0);  // 2^53: above it a double no longer counts exactly
  return value >= lo && value <= hi;
}

// Note [Canonical add and mul]: add and mul chains become one n-ary node with sorted operands.
//  - Flatten: add(add(a, b), c) -> add(a, b, c) when the inner node has no other client and
//    computes in the outer node's dtype (add(add(int8, int8), int32) wraps at int8 inside;
//    flattening would compute it in int32 and change the value). The top of a chain flattens the
//    whole tree below it at once and the nodes under it leave it to the top: flattening (and
//    sorting) bottom-up, one level per change, would rebuild ever wider nodes, quadratic in the
//    chain's length.
//  - Sort: variables by id, then constants that are not one repeated value (in their order),
//    then one constant combining every scalar-valued Constant (their sum or product, in their
//    promoted dtype and broadcast shape; integer constants only when the result is exact in
//    their dtype). Merge then sees x + y and y + x, or (x * 2) * 3 and x * 6, as one expression.
// Both keep the dtype and the broadcast shape exactly (the same operands, Note [Broadcast
// leaves] in pattern_fit.cpp).
Replacements canonicalAddMul(RewriteContext& ctx, Apply& node) {
  const auto op = addOrMul(node);
  if (!op) return {};
  const FunctionGraph& g = ctx.graph();
  const VarPtr out = node.output(0);
  const DType dtype = out->type().dtype();
  if (absorbable(g, out, *op, dtype)) {
    const Client& parent = g.clients(*out).front();
    if (!parent.isOutput() && addOrMul(*parent.node) == op &&
        parent.node->outputRef(0).type().dtype() == dtype)
      return {};
  }
  std::vector<VarPtr> variables, arrays, scalars;
  std::vector<double> values;
  std::vector<VarPtr> stack(node.inputs().rbegin(), node.inputs().rend());
  while (!stack.empty()) {
    VarPtr in = std::move(stack.back());
    stack.pop_back();
    if (absorbable(g, in, *op, dtype)) {
      const auto& ins = in->owner()->inputs();
      stack.insert(stack.end(), ins.rbegin(), ins.rend());
    } else if (in->kind() != Variable::Kind::Constant) {
      variables.push_back(std::move(in));
    } else if (const auto v = scalarConstantValue(*in); v && in->type().dtype() != DType::Bool) {
      scalars.push_back(std::move(in));
      values.push_back(*v);
    } else {
      arrays.push_back(std::move(in));
    }
  }
  if (variables.empty() && arrays.empty()) return {};  // all constants: constant folding's job
  std::stable_sort(variables.begin(), variables.end(),
                   [](const VarPtr& a, const VarPtr& b) { return a->id() < b->id(); });
  if (scalars.size() > 1) {
    double value = *op == ScalarOp::Add ? 0.0 : 1.0;
    DType cdtype = scalars.front()->type().dtype();
    std::vector<std::vector<std::int64_t>> shapes;
    for (std::size_t i = 0; i < scalars.size(); ++i) {
      value = *op == ScalarOp::Add ? value + values[i] : value * values[i];
      cdtype = promoteTypes(cdtype, scalars[i]->type().dtype());
      shapes.push_back(scalars[i]->type().shape());
    }
    const auto shape = broadcastStaticShapes(shapes);
    const bool exact = isFloat(cdtype) ? !std::isnan(value) : isExactInteger(value, cdtype);
    if (shape && exact) scalars = {constant(Tensor::full(cdtype, *shape, value))};
  }
  std::vector<VarPtr> ordered = std::move(variables);
  ordered.insert(ordered.end(), arrays.begin(), arrays.end());
  ordered.insert(ordered.end(), scalars.begin(), scalars.end());
  if (ordered == node.inputs()) return {};
  const VarPtr built = ordered.size() == 1 ? ordered.front() : elemwise(*op, ordered);
  if (!built->type().isSubtypeOf(out->type())) return {};
  return {{out, built}};
}

// x * 1 and 1 * x -> x (mul_one); x + 0 and 0 + x -> x (add_zero), any number of operands.
NodeRewriteFn dropIdentity(ScalarOp op, double identity) {
  return [op, identity](RewriteContext& ctx, Apply& node) -> Replacements {
    if (addOrMul(node) != op) return {};
    std::vector<VarPtr> kept;
    for (const VarPtr& in : node.inputs())
      if (!isConstantValue(*in, identity)) kept.push_back(in);
    if (kept.size() == static_cast<std::size_t>(node.nInputs()) || kept.empty()) return {};
    return replaceWith(ctx, node, kept.size() == 1 ? kept.front() : elemwise(op, kept));
  };
}

// x * 0 -> 0 for integer and bool products only (Note [Canonical algebra and IEEE values]).
Replacements mulByZero(RewriteContext& ctx, Apply& node) {
  if (addOrMul(node) != ScalarOp::Mul) return {};
  const DType dtype = node.outputRef(0).type().dtype();
  if (isFloat(dtype)) return {};
  const auto& ins = node.inputs();
  if (std::none_of(ins.begin(), ins.end(),
                   [](const VarPtr& v) { return isConstantValue(*v, 0.0); }))
    return {};
  return replaceWith(ctx, node, constant(0.0, dtype));
}

// --- DimShuffle and Reshape chains
// ------------------------------------------------------------------

// DimShuffle{o2}(DimShuffle{o1}(x)) -> DimShuffle{o1[o2]}(x): output axis i of the outer one is
// axis o2[i] of the inner output, which is x's axis o1[o2[i]] (or a new axis when either is "x").
// Axes either one drops have static size 1 in x, so the composed order is a valid DimShuffle.
Replacements composeDimShuffle(RewriteContext& ctx, Apply& node) {
  const auto* outer = dynamic_cast<const DimShuffle*>(&node.op());
  Apply* innerNode = node.input(0)->owner();
  const auto* inner = innerNode ? dynamic_cast<const DimShuffle*>(&innerNode->op()) : nullptr;
  if (!outer || !inner) return {};
  std::vector<int> order;
  for (int o : outer->order())
    order.push_back(o == DimShuffle::kNewAxis ? DimShuffle::kNewAxis
                                              : inner->order()[static_cast<std::size_t>(o)]);
  const VarPtr& x = innerNode->input(0);
  bool identity = static_cast<int>(order.size()) == x->type().ndim();
  for (std::size_t i = 0; identity && i < order.size(); ++i)
    identity = order[i] == static_cast<int>(i);
  return replaceWith(ctx, node, identity ? x : dimshuffle(x, order));
}

// DimShuffle{0,1,...,n-1}(x) -> x.
Replacements dropIdentityDimShuffle(RewriteContext& ctx, Apply& node) {
  const auto* ds = dynamic_cast<const DimShuffle*>(&node.op());
  if (!ds || static_cast<int>(ds->order().size()) != ds->inputNdim()) return {};
  for (std::size_t i = 0; i < ds->order().size(); ++i)
    if (ds->order()[i] != static_cast<int>(i)) return {};
  return replaceWith(ctx, node, node.input(0));
}

// Reshape(Reshape(x, s1), s2) -> Reshape(x, s2): the row-major order of the elements is the same.
Replacements composeReshape(RewriteContext& ctx, Apply& node) {
  if (!dynamic_cast<const Reshape*>(&node.op())) return {};
  Apply* inner = node.input(0)->owner();
  if (!inner || !dynamic_cast<const Reshape*>(&inner->op())) return {};
  VarPtr built;
  try {
    built = node.opPtr()->operator()({inner->input(0), node.input(1)});
  } catch (const TypeError&) {
    return {};
  }
  return replaceWith(ctx, node, built);
}

}  // namespace

void registerCanonicalizeRewrites(RewriteDb& db) {
  const auto add = [&db](NodeRewriterPtr r) { db.add(Phase::Canonicalize, std::move(r), kTags); };
  add(nodeRewriter("add_mul_canonical", {"Elemwise"}, &canonicalAddMul));
  add(nodeRewriter("mul_one", {"Elemwise"}, dropIdentity(ScalarOp::Mul, 1.0)));
  add(nodeRewriter("add_zero", {"Elemwise"}, dropIdentity(ScalarOp::Add, 0.0)));
  add(nodeRewriter("mul_zero", {"Elemwise"}, &mulByZero));
  add(patternRewriter("sub_zero", "x - 0 -> x"));
  add(patternRewriter("div_one", "x / 1 -> x"));
  add(patternRewriter("sub_self", "x - x -> 0"));
  add(patternRewriter("mul_div_cancel", "x * y / y -> x"));
  add(patternRewriter("neg_neg", "-(-x) -> x"));
  add(patternRewriter("add_neg_to_sub", "x + -y -> x - y"));
  add(patternRewriter("zero_sub_to_neg", "0 - x -> -x"));
  add(patternRewriter("exp_log", "exp(log(x)) -> x"));
  add(patternRewriter("log_exp", "log(exp(x)) -> x"));
  add(nodeRewriter("dimshuffle_compose", {"DimShuffle"}, &composeDimShuffle));
  add(nodeRewriter("dimshuffle_identity", {"DimShuffle"}, &dropIdentityDimShuffle));
  add(nodeRewriter("reshape_compose", {"Reshape"}, &composeReshape));
}

}  // namespace tscope::engine
