// fitReplacement (Note [Fitting the replacement] in pattern.h): a replacement keeps the dtype and
// the broadcast shape of the output it replaces.
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/alloc.h"
#include "engine/rewrite/pattern.h"
#include "engine/rewrite/shape_feature.h"

#include <queue>

#include <algorithm>
#include <limits>
#include <tuple>
#include <unordered_map>

namespace tscope::engine {

namespace {

// Note [Broadcast leaves]: an Elemwise output has the numpy broadcast of its inputs' shapes
// (0-d inputs change no size). Broadcasting is commutative, associative and idempotent, so the
// shape of a variable is the broadcast of any set of "leaves" reached by replacing Elemwise
// outputs by their inputs, and two variables whose leaf sets are equal have the same shape,
// however their elementwise trees are arranged (add(add(a, b), c) and add(c, b, a)). The sets are
// compared by expanding, newest first, only the variables that one side has and the other lacks,
// so the work is proportional to what the rewrite changed, not to the graph above it.
struct BroadcastLeaves {
  std::vector<VarPtr> built;  // leaves of the replacement
  std::vector<VarPtr> old;    // leaves of the replaced output
  bool equal = false;
};

BroadcastLeaves compareLeaves(const VarPtr& built, const VarPtr& old) {
  struct Side {
    std::unordered_map<const Variable*, VarPtr> set;
  };
  Side sides[2];
  // Variables outside the graph (new) first, then the highest id: the most recent nodes are the
  // ones a rewrite changed.
  const auto key = [](const VarPtr& v) {
    return v->fgraph() ? v->id() : std::numeric_limits<std::int64_t>::max();
  };
  using Entry = std::tuple<std::int64_t, int, VarPtr>;
  const auto later = [](const Entry& a, const Entry& b) { return std::get<0>(a) < std::get<0>(b); };
  std::priority_queue<Entry, std::vector<Entry>, decltype(later)> queue(later);
  const auto add = [&](const VarPtr& v, int side) {
    if (v->type().ndim() == 0 || !sides[side].set.emplace(v.get(), v).second) return;
    if (!sides[1 - side].set.contains(v.get())) queue.emplace(key(v), side, v);
  };
  add(built, 0);
  add(old, 1);
  const auto inputsOf = [](const VarPtr& v) { return v->owner() ? v->owner()->nInputs() : 0; };
  std::size_t budget = 256 + 4 * static_cast<std::size_t>(inputsOf(built) + inputsOf(old));
  while (!queue.empty() && budget > 0) {
    const auto [k, side, v] = queue.top();
    queue.pop();
    (void)k;
    Side& mine = sides[side];
    if (!mine.set.contains(v.get()) || sides[1 - side].set.contains(v.get())) continue;
    const Apply* a = v->owner();
    if (!a || !elemwiseScalarOp(*a)) continue;  // a leaf: the other side may still reach it
    --budget;
    mine.set.erase(v.get());
    for (const VarPtr& in : a->inputs()) add(in, side);
  }
  BroadcastLeaves r;
  for (const auto& [p, v] : sides[0].set) r.built.push_back(v);
  for (const auto& [p, v] : sides[1].set) r.old.push_back(v);
  r.equal = sides[0].set.size() == sides[1].set.size() &&
            std::all_of(r.built.begin(), r.built.end(),
                        [&](const VarPtr& v) { return sides[1].set.contains(v.get()); });
  return r;
}

bool contains(const std::vector<VarPtr>& set, const VarPtr& v) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

// The terms of a dimension that is the maximum of several (Elemwise's inferShape writes the
// broadcast of unknown sizes as nested maximum nodes, in the order of the operands).
void maximumTerms(const VarPtr& d, std::vector<VarPtr>& out, int depth = 0) {
  if (const Apply* a = d->owner(); a && depth < 16 && isElemwise(*a, ScalarOp::Maximum)) {
    for (const VarPtr& in : a->inputs()) maximumTerms(in, out, depth + 1);
    return;
  }
  out.push_back(d);
}

bool sameTerm(const VarPtr& a, const VarPtr& b) {
  if (a == b) return true;
  const auto ca = constantIntValue(a), cb = constantIntValue(b);
  if (ca || cb) return ca && cb && *ca == *cb;
  const Apply* oa = a->owner();
  const Apply* ob = b->owner();
  const auto* sa = oa ? dynamic_cast<const ShapeI*>(&oa->op()) : nullptr;
  const auto* sb = ob ? dynamic_cast<const ShapeI*>(&ob->op()) : nullptr;
  return sa && sb && sa->axis() == sb->axis() && oa->input(0) == ob->input(0);
}

// Two symbolic sizes that are maximums of the same terms in another order or nesting.
bool sameMaximum(const VarPtr& a, const VarPtr& b) {
  std::vector<VarPtr> ta, tb;
  maximumTerms(a, ta);
  maximumTerms(b, tb);
  const auto covered = [](const std::vector<VarPtr>& xs, const std::vector<VarPtr>& ys) {
    return std::all_of(xs.begin(), xs.end(), [&](const VarPtr& x) {
      return std::any_of(ys.begin(), ys.end(), [&](const VarPtr& y) { return sameTerm(x, y); });
    });
  };
  return covered(ta, tb) && covered(tb, ta);
}

bool knownSameShape(RewriteContext& ctx, const VarPtr& a, const VarPtr& b,
                    const BroadcastLeaves& leaves) {
  const TensorType& ta = a->type();
  const TensorType& tb = b->type();
  if (ta.ndim() != tb.ndim()) return false;
  if (ta.isFullyKnown() && tb.isFullyKnown()) return ta.shape() == tb.shape();
  if (leaves.equal) return true;
  ShapeFeature& shapes = ctx.shapes();
  if (shapes.sameShape(a, b)) return true;
  for (int axis = 0; axis < ta.ndim(); ++axis) {
    const auto sa = shapes.staticDim(a, axis), sb = shapes.staticDim(b, axis);
    if (sa || sb) {
      if (!(sa && sb && *sa == *sb)) return false;
      continue;
    }
    if (!sameMaximum(shapes.dimOf(a, axis), shapes.dimOf(b, axis))) return false;
  }
  return true;
}

// True when a shape expression of old reads old itself (the ShapeFeature's fallback for an op
// without inferShape is Shape_i(old)): broadcasting a replacement to it would make the
// replacement depend on what it replaces. Shape expressions are small trees whose leaves are
// Shape_i of other variables; the walk stops at those and gives up (true) past a bound.
bool shapeReads(const ShapeExpr& shape, const VarPtr& old) {
  constexpr std::size_t kLimit = 256;
  std::vector<const Variable*> stack;
  for (const VarPtr& e : shape) stack.push_back(e.get());
  std::size_t visited = 0;
  while (!stack.empty()) {
    const Variable* v = stack.back();
    stack.pop_back();
    if (v == old.get() || ++visited > kLimit) return true;
    const Apply* a = v->owner();
    if (!a) continue;
    const std::string name = a->op().name();
    if (name == "ShapeI" || name == "Shape") {
      if (a->input(0) == old) return true;
      continue;
    }
    for (const VarPtr& in : a->inputs()) stack.push_back(in.get());
  }
  return false;
}

// built broadcast to old's shape: with second(leaf, built) for each broadcast leaf of old that
// built lacks when built's leaves are among old's (Note [Broadcast leaves]: the result then has
// exactly old's leaves), else with Alloc to the ShapeFeature's shape of old.
VarPtr broadcastTo(RewriteContext& ctx, VarPtr built, const VarPtr& old,
                   const BroadcastLeaves& leaves) {
  const auto& lb = leaves.built;
  const auto& lo = leaves.old;
  if (std::all_of(lb.begin(), lb.end(), [&](const VarPtr& v) { return contains(lo, v); })) {
    std::vector<VarPtr> missing;
    for (const VarPtr& v : lo)
      if (!contains(lb, v)) missing.push_back(v);
    std::sort(missing.begin(), missing.end(),
              [](const VarPtr& a, const VarPtr& b) { return a->id() < b->id(); });
    for (const VarPtr& v : missing) built = elemwise(ScalarOp::Second, {v, built});
    return built;
  }
  const ShapeExpr& shape = ctx.shapes().shapeOf(old);
  if (shapeReads(shape, old)) return nullptr;
  return alloc(built, shape);
}

}  // namespace

VarPtr fitReplacement(RewriteContext& ctx, VarPtr built, const VarPtr& old) {
  if (!built || built == old) return nullptr;
  const TensorType& want = old->type();
  try {
    if (built->type().dtype() != want.dtype()) built = cast(built, want.dtype());
    const BroadcastLeaves leaves = compareLeaves(built, old);
    if (!knownSameShape(ctx, built, old, leaves)) built = broadcastTo(ctx, built, old, leaves);
  } catch (const TypeError&) {
    return nullptr;
  }
  if (!built || !built->type().isSubtypeOf(want)) return nullptr;
  return built;
}

}  // namespace tscope::engine
