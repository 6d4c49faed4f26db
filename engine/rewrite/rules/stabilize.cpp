// The stabilize phase (issue 4): rewrites that compute the same value without the overflow,
// underflow or cancellation of the form the user wrote. Simple algebra is in the pattern table;
// forms that need more than a pattern (several outputs, a DimShuffle to see through, a condition
// on the shapes) are hand-written below it.
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/rewrite/pattern.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/rewrite/shape_feature.h"

#include <unordered_set>

namespace tscope::engine {

namespace {

const std::vector<std::string> kTags = {"fast_run", "stabilize"};

template <class OpT>
const OpT* opOf(const Variable& v) {
  return v.owner() ? dynamic_cast<const OpT*>(&v.owner()->op()) : nullptr;
}

// --- log(sum(exp(x))) -> logsumexp(x)
// --------------------------------------------------------------

// True for the exp(x - shift) inside logsumexp's own graph (reduce.cpp), shift = where(finite,
// m, 0) with m the max of x: that sum is already stable, and rewriting it again would loop.
bool isShiftedByItsMax(const VarPtr& expInput) {
  const Apply* sub = producedBy(*expInput, ScalarOp::Sub);
  if (!sub) return false;
  const Apply* shift = producedBy(*sub->input(1), ScalarOp::Switch);
  if (!shift) return false;
  const Variable* m = shift->input(1).get();
  if (opOf<DimShuffle>(*m)) m = m->owner()->input(0).get();
  const auto* red = opOf<CAReduce>(*m);
  return red && red->scalarOp() == ScalarOp::Maximum && m->owner()->input(0) == sub->input(0);
}

// log(sum(exp(x), axes)) -> logsumexp(x, axes), and log(DimShuffle(sum(exp(x)))) (keepdims) ->
// DimShuffle(logsumexp(x)): log is elementwise, so it commutes with any DimShuffle.
Replacements localLogSumExp(RewriteContext& ctx, Apply& node) {
  if (!isElemwise(node, ScalarOp::Log)) return {};
  VarPtr s = node.input(0);
  const DimShuffle* keep = opOf<DimShuffle>(*s);
  if (keep) s = s->owner()->input(0);
  const auto* red = opOf<CAReduce>(*s);
  if (!red || red->scalarOp() != ScalarOp::Add) return {};
  const VarPtr& e = s->owner()->input(0);
  const Apply* exp = producedBy(*e, ScalarOp::Exp);
  // A sum with its own output dtype (sum(..., dtype=float64)) computes in another precision than
  // logsumexp would: leave it.
  if (!exp || s->type().dtype() != e->type().dtype() || isShiftedByItsMax(exp->input(0))) return {};
  const int ndim = e->type().ndim();
  std::vector<int> axes = red->axesFor(ndim);
  if (axes.empty())
    for (int i = 0; i < ndim; ++i) axes.push_back(i);
  const VarPtr out = node.output(0);
  try {
    VarPtr built = logsumexp(exp->input(0), axes);
    if (keep) built = dimshuffle(built, keep->order());
    if (VarPtr fitted = fitReplacement(ctx, built, out)) return {{out, fitted}};
  } catch (const TypeError&) {
  }
  return {};
}

// --- Softmax and cross-entropy
// ------------------------------------------------------------------------

// True when var's computation reads `target` (a bounded walk up the producers).
bool dependsOn(const VarPtr& var, const Variable& target) {
  std::vector<const Variable*> stack{var.get()};
  std::unordered_set<const Apply*> seen;
  while (!stack.empty()) {
    const Variable* v = stack.back();
    stack.pop_back();
    if (v == &target) return true;
    const Apply* a = v->owner();
    if (!a || !seen.insert(a).second) continue;
    for (const VarPtr& in : a->inputs()) stack.push_back(in.get());
  }
  return false;
}

// The logits a softmax matrix was computed from: x for softmax(x) or for the softmax output of
// softmax_crossentropy_with_logits(x, t); var itself otherwise.
const Variable* logitsOf(const VarPtr& var) {
  const Apply* a = var->owner();
  if (a && (dynamic_cast<const Softmax*>(&a->op()) ||
            (dynamic_cast<const SoftmaxCrossEntropyWithLogits*>(&a->op()) && var->index() == 1)))
    return a->input(0).get();
  return var.get();
}

// Note [Cross-entropy rows]: the fused ops raise unless the targets have exactly the rows of the
// logits, where the elementwise form they replace would broadcast targets of one row. A rewrite to
// them applies when the rows are known equal: statically, by the ShapeFeature, or because a
// cross-entropy node of the graph already takes these targets with the same logits (it raises
// for other rows, so the graph never runs with them). The per-row gradient g of the gradient
// form only needs compatible static sizes: it is the gradient of the per-row loss, which the
// pullback gives the loss's shape.
bool checkedByCrossEntropy(RewriteContext& ctx, const VarPtr& targets, const VarPtr& x) {
  const FunctionGraph& g = ctx.graph();
  if (!g.contains(*targets)) return false;
  for (const Client& c : g.clients(*targets)) {
    if (c.isOutput() || c.index != 1) continue;
    const Op& op = c.node->op();
    if ((dynamic_cast<const CategoricalCrossEntropy*>(&op) ||
         dynamic_cast<const SoftmaxCrossEntropyWithLogits*>(&op)) &&
        logitsOf(c.node->input(0)) == logitsOf(x))
      return true;
  }
  return false;
}

// Class indices: their count is the number of rows of x.
bool rowsAgree(RewriteContext& ctx, const VarPtr& targets, const VarPtr& x) {
  ShapeFeature& shapes = ctx.shapes();
  const auto a = shapes.staticDim(targets, 0), b = shapes.staticDim(x, 0);
  if (a && b) return *a == *b;
  return shapes.dimOf(targets, 0) == shapes.dimOf(x, 0) || checkedByCrossEntropy(ctx, targets, x);
}

// A distribution per row: the shape of x.
bool distributionFits(RewriteContext& ctx, const VarPtr& q, const VarPtr& x) {
  return ctx.shapes().sameShape(q, x) || checkedByCrossEntropy(ctx, q, x);
}

bool rowsCompatible(const VarPtr& a, const VarPtr& b) {
  const std::int64_t x = a->type().shape()[0], y = b->type().shape()[0];
  return x == kUnknownDim || y == kUnknownDim || x == y;
}

// True when the depth of a one-hot matrix is the number of columns of x.
bool depthIsColumns(RewriteContext& ctx, const VarPtr& depth, const VarPtr& x) {
  const auto d = constantIntValue(depth);
  const auto k = ctx.shapes().staticDim(x, 1);
  if (d && k) return *d == *k;
  const auto* shapeI = opOf<ShapeI>(*depth);
  if (shapeI && shapeI->axis() == 1 && logitsOf(depth->owner()->input(0)) == logitsOf(x))
    return true;
  return ctx.shapes().dimOf(x, 1) == depth;
}

// categorical_crossentropy(softmax(z, axis=1), t) -> softmax_crossentropy_with_logits(z, t). When
// the softmax has other clients they take the fused op's softmax output, unless t is computed
// from the softmax (the fused node would then feed itself).
Replacements localSoftmaxCrossEntropy(RewriteContext& ctx, Apply& node) {
  if (!dynamic_cast<const CategoricalCrossEntropy*>(&node.op())) return {};
  const VarPtr& p = node.input(0);
  const VarPtr& t = node.input(1);
  const auto* sm = opOf<Softmax>(*p);
  if (!sm || p->type().ndim() != 2 || sm->axisFor(2) != 1) return {};
  std::vector<VarPtr> fused;
  try {
    fused = softmaxCrossEntropyWithLogitsAndSoftmax(p->owner()->input(0), t);
  } catch (const TypeError&) {
    return {};
  }
  const VarPtr out = node.output(0);
  if (!fused[0]->type().isSubtypeOf(out->type())) return {};
  Replacements r{{out, fused[0]}};
  const FunctionGraph& g = ctx.graph();
  const bool shared = nodeClientCount(g, *p) > 1 || isGraphOutput(g, *p);
  if (shared && fused[1]->type().isSubtypeOf(p->type()) && !dependsOn(t, *p))
    r.emplace_back(p, fused[1]);
  return r;
}

// The negative log-likelihood written with log_softmax and targets as a distribution (one-hot or
// soft): -sum(q * log_softmax(x, axis=1), axis=1) -> softmax_crossentropy_with_logits(x, q), with
// the class indices t instead of q when q = one_hot(t, columns of x).
Replacements localLogSoftmaxNll(RewriteContext& ctx, Apply& node) {
  static const Pattern kForms[] = {
      Pattern::parse("-sum(q * log_softmax(x, axis=1), axis=1)"),
      Pattern::parse("sum(-q * log_softmax(x, axis=1), axis=1)"),
      Pattern::parse("sum(q * -log_softmax(x, axis=1), axis=1)"),
  };
  static const PatternConstraints kMatrices = [] {
    PatternConstraints c;
    c.variables["x"] = ofRank(2);
    c.variables["q"] = ofRank(2);
    return c;
  }();
  const VarPtr out = node.output(0);
  for (const Pattern& form : kForms) {
    const auto m = form.match(out, ctx, kMatrices);
    if (!m) continue;
    const VarPtr& x = (*m)["x"];
    VarPtr q = (*m)["q"];
    VarPtr targets;
    if (const auto* oh = opOf<OneHot>(*q)) {
      const VarPtr& t = q->owner()->input(0);
      if (oh->dtype() == x->type().dtype() && depthIsColumns(ctx, q->owner()->input(1), x) &&
          rowsAgree(ctx, t, x))
        targets = t;
    }
    if (!targets && q->type().dtype() == x->type().dtype() && distributionFits(ctx, q, x))
      targets = q;
    if (!targets) continue;
    try {
      VarPtr loss = softmaxCrossEntropyWithLogits(x, targets);
      if (VarPtr fitted = fitReplacement(ctx, loss, out)) return {{out, fitted}};
    } catch (const TypeError&) {
    }
  }
  return {};
}

// The gradient CategoricalCrossEntropy's pullback builds, pushed through softmax:
//   SoftmaxGrad(-(g * one_hot(t)) / (sm + (1 - one_hot(t))), sm) -> SoftmaxCrossEntropyGrad(gv, sm,
//   t) SoftmaxGrad(-(g * q) / sm, sm)                              -> SoftmaxCrossEntropyGrad(gv,
//   sm, q)
// with g = DimShuffle{0,x}(gv). Both sides are gv (sm * sum(q) - q) per row, but the left one
// divides by sm, which underflows to 0 for confident predictions and turns the gradient into NaN.
Replacements localSoftmaxCrossEntropyGrad(RewriteContext& ctx, Apply& node) {
  static const Pattern kClasses = Pattern::parse("-(g * oh) / (sm + (1 - oh))");
  static const Pattern kDistribution = Pattern::parse("-(g * q) / sm");
  const auto* grad = dynamic_cast<const SoftmaxGrad*>(&node.op());
  const VarPtr& dp = node.input(0);
  const VarPtr& sm = node.input(1);
  if (!grad || sm->type().ndim() != 2 || grad->axisFor(2) != 1) return {};
  VarPtr g, targets;
  if (const auto m = kClasses.match(dp, ctx)) {
    const VarPtr& oh = (*m)["oh"];
    if ((*m)["sm"] != sm || !opOf<OneHot>(*oh)) return {};
    const VarPtr& t = oh->owner()->input(0);
    if (!depthIsColumns(ctx, oh->owner()->input(1), sm) || !rowsAgree(ctx, t, sm)) return {};
    g = (*m)["g"];
    targets = t;
  } else if (const auto m2 = kDistribution.match(dp, ctx)) {
    if ((*m2)["sm"] != sm || !distributionFits(ctx, (*m2)["q"], sm)) return {};
    g = (*m2)["g"];
    targets = (*m2)["q"];
  } else {
    return {};
  }
  // g must be a column of per-row gradients, the shape the pullback gives it.
  const auto* col = opOf<DimShuffle>(*g);
  if (!col || col->order() != std::vector<int>{0, DimShuffle::kNewAxis}) return {};
  const VarPtr& gv = g->owner()->input(0);
  if (gv->type().dtype() != sm->type().dtype() || !rowsCompatible(gv, sm)) return {};
  const VarPtr out = node.output(0);
  try {
    if (VarPtr fitted = fitReplacement(ctx, softmaxCrossEntropyGrad(gv, sm, targets), out))
      return {{out, fitted}};
  } catch (const TypeError&) {
  }
  return {};
}

}  // namespace

void registerStabilizeRewrites(RewriteDb& db) {
  const auto add = [&db](NodeRewriterPtr r) { db.add(Phase::Stabilize, std::move(r), kTags); };
  // Before local_log1m, which would take log(1 - sigmoid(x)) to the less accurate
  // log1p(-sigmoid(x)).
  add(patternRewriter("local_log1m_sigmoid",
                      "log(1 - sigmoid(x)) -> -softplus(x)\n"
                      "log1p(-sigmoid(x)) -> -softplus(x)"));
  add(patternRewriter("local_log_sigmoid", "log(sigmoid(x)) -> -softplus(-x)"));
  add(patternRewriter("local_log1p", "log(1 + x) -> log1p(x)"));
  add(patternRewriter("local_log1m", "log(1 - x) -> log1p(-x)"));
  add(patternRewriter("local_expm1",
                      "exp(x) - 1 -> expm1(x)\n"
                      "exp(x) + -1 -> expm1(x)"));
  add(patternRewriter("local_log_softmax", "log(softmax(x, axis=a)) -> log_softmax(x, axis=a)"));
  add(nodeRewriter("local_logsumexp", {"Elemwise"}, &localLogSumExp));
  add(nodeRewriter("local_softmax_crossentropy", {"CategoricalCrossEntropy"},
                   &localSoftmaxCrossEntropy));
  add(nodeRewriter("local_log_softmax_nll", {"Elemwise", "CAReduce"}, &localLogSoftmaxNll));
  add(nodeRewriter("local_softmax_crossentropy_grad", {"SoftmaxGrad"},
                   &localSoftmaxCrossEntropyGrad));
}

}  // namespace tscope::engine
