#include "engine/grad/grad.h"

#include "engine/graph/apply.h"
#include "engine/graph/config.h"
#include "engine/graph/traversal.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/reshape.h"

#include <unordered_map>
#include <unordered_set>

namespace tscope::engine {

namespace {

std::string describeVar(const Variable& v) {
  std::string s = v.displayName() + " (" + v.type().str() + ")";
  if (!v.site().empty()) s += ", created at " + v.site().str();
  return s;
}

// The variables that depend on any of `from` (through each node's connection pattern), over the
// nodes in `order` (topological).
std::unordered_set<const Variable*> dependents(const std::vector<Apply*>& order,
                                               const std::vector<VarPtr>& from) {
  std::unordered_set<const Variable*> dep;
  for (const VarPtr& v : from) dep.insert(v.get());
  for (Apply* node : order) {
    bool any = false;
    for (const VarPtr& in : node->inputs()) any = any || dep.count(in.get());
    if (!any) continue;
    const auto pattern = node->op().connectionPattern(*node);
    for (int i = 0; i < node->nInputs(); ++i) {
      if (!dep.count(node->input(i).get())) continue;
      for (int o = 0; o < node->nOutputs(); ++o)
        if (pattern[static_cast<std::size_t>(i)][static_cast<std::size_t>(o)])
          dep.insert(&node->outputRef(o));
    }
  }
  return dep;
}

// A gradient for `var`: the same type family (dtype cast for float variables).
VarPtr fitGradient(const VarPtr& g, const Variable& var, const Apply& node, int index) {
  if (g->type().ndim() != var.type().ndim())
    throw GradientError("grad: " + node.op().str() + " returned a gradient of rank " +
                        std::to_string(g->type().ndim()) + " (" + g->type().str() +
                        ") for its input " + std::to_string(index) + " " + describeVar(var) +
                        "; a gradient must have its input's shape");
  if (g->type().dtype() != var.type().dtype() && isFloat(var.type().dtype()))
    return cast(g, var.type().dtype());
  return g;
}

VarPtr sumAll(std::vector<VarPtr> terms) {
  if (terms.size() == 1) return terms[0];
  return elemwise(ScalarOp::Add, std::move(terms));
}

// Note [Gradient origin] (apply.h): tags the nodes the pullback or pushforward of `node` built,
// walking up from its results. The walk stops at forward nodes, at variables without an owner,
// and at nodes already tagged: by an earlier pullback (tagged == null: any node with an origin),
// or, for Rop, by an earlier node of this Rop (the nodes in *tagged; the nested grad() of the
// double-pullback trick tags its nodes after the pullback's nodes, which this re-tags).
void tagOrigin(std::span<const VarPtr> results, const Apply& node,
               const std::unordered_set<const Apply*>& forward,
               std::unordered_set<const Apply*>* tagged, const char* kind) {
  std::shared_ptr<const GradientOrigin> origin;
  std::vector<Apply*> work;
  auto visit = [&](const VarPtr& v) {
    if (!v || !v->owner()) return;
    Apply* owner = v->owner();
    if (forward.count(owner)) return;
    if (tagged ? tagged->count(owner) > 0 : owner->gradientOf() != nullptr) return;
    if (!origin)
      origin = std::make_shared<const GradientOrigin>(
          GradientOrigin{node.id(), node.op().str(), node.scope(), node.site(), kind});
    owner->setGradientOf(origin);
    if (tagged) tagged->insert(owner);
    work.push_back(owner);
  };
  for (const VarPtr& r : results) visit(r);
  while (!work.empty()) {
    Apply* n = work.back();
    work.pop_back();
    for (const VarPtr& in : n->inputs()) visit(in);
  }
}

// The nodes the gradient walk must not tag: everything the outputs and the given seeds (output
// gradients, eval points) depend on.
std::unordered_set<const Apply*> forwardNodes(std::span<const VarPtr> outputs,
                                              std::span<const VarPtr> seeds) {
  std::vector<VarPtr> roots(outputs.begin(), outputs.end());
  for (const VarPtr& s : seeds)
    if (s) roots.push_back(s);
  const std::vector<Apply*> all = ancestorNodes(roots);
  return {all.begin(), all.end()};
}

struct Accumulated {
  std::vector<VarPtr> terms;
  std::string undefinedWhy;  // non-empty: an undefined gradient reached this variable
};

}  // namespace

std::vector<VarPtr> grad(const std::vector<VarPtr>& outputs, const std::vector<VarPtr>& outputGrads,
                         const std::vector<VarPtr>& wrt, GradOptions options) {
  if (outputs.size() != outputGrads.size())
    throw GradientError("grad: expected one output gradient per output (" +
                        std::to_string(outputs.size()) + "), found " +
                        std::to_string(outputGrads.size()));
  for (std::size_t i = 0; i < wrt.size(); ++i)
    if (!wrt[i]) throw GradientError("grad: wrt[" + std::to_string(i) + "] is null");
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o]) throw GradientError("grad: output " + std::to_string(o) + " is null");
    if (outputGrads[o] && outputGrads[o]->type().ndim() != outputs[o]->type().ndim())
      throw GradientError("grad: the gradient given for output " + std::to_string(o) + " " +
                          describeVar(*outputs[o]) + " has type " + outputGrads[o]->type().str() +
                          "; expected the output's rank");
  }

  // Only nodes between wrt and the outputs matter; the walk stops at wrt.
  std::unordered_set<const Variable*> wrtSet;
  for (const VarPtr& w : wrt) wrtSet.insert(w.get());
  const std::vector<Apply*> order =
      ancestorNodes(outputs, [&](const Variable& v) { return wrtSet.count(&v) > 0; });
  const auto dep = dependents(order, wrt);
  const auto forward = forwardNodes(outputs, outputGrads);

  std::unordered_map<const Variable*, Accumulated> acc;
  for (std::size_t o = 0; o < outputs.size(); ++o)
    if (outputGrads[o] && dep.count(outputs[o].get()))
      acc[outputs[o].get()].terms.push_back(outputGrads[o]);

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Apply* node = *it;
    bool anyOutput = false;
    std::string undefinedWhy;
    for (int o = 0; o < node->nOutputs(); ++o) {
      auto found = acc.find(&node->outputRef(o));
      if (found == acc.end()) continue;
      anyOutput = true;
      if (!found->second.undefinedWhy.empty()) undefinedWhy = found->second.undefinedWhy;
    }
    if (!anyOutput) continue;
    bool anyInputNeeded = false;
    for (const VarPtr& in : node->inputs()) anyInputNeeded = anyInputNeeded || dep.count(in.get());
    if (!anyInputNeeded) continue;

    if (!undefinedWhy.empty()) {
      // An undefined gradient flows to every connected input.
      for (const VarPtr& in : node->inputs())
        if (dep.count(in.get())) acc[in.get()].undefinedWhy = undefinedWhy;
      continue;
    }
    std::vector<VarPtr> gOut;
    for (int o = 0; o < node->nOutputs(); ++o) {
      const VarPtr out = node->output(o);
      auto found = acc.find(out.get());
      gOut.push_back(found != acc.end() && !found->second.terms.empty()
                         ? sumAll(found->second.terms)
                         : zerosLike(out));
    }
    std::vector<Grad> gIn = node->op().pullback(*node, gOut);
    if (gIn.size() != static_cast<std::size_t>(node->nInputs()))
      throw GradientError("grad: " + node->op().str() + " returned " + std::to_string(gIn.size()) +
                          " gradients for " + std::to_string(node->nInputs()) + " inputs");
    {
      std::vector<VarPtr> built;
      for (const Grad& g : gIn)
        if (g.kind == Grad::Kind::Value) built.push_back(g.value);
      tagOrigin(built, *node, forward, nullptr, "grad");
    }
    for (int i = 0; i < node->nInputs(); ++i) {
      const VarPtr& in = node->input(i);
      if (!dep.count(in.get())) continue;
      Grad& g = gIn[static_cast<std::size_t>(i)];
      switch (g.kind) {
        case Grad::Kind::Value:
          acc[in.get()].terms.push_back(fitGradient(g.value, *in, *node, i));
          tagOrigin(std::span(&acc[in.get()].terms.back(), 1), *node, forward, nullptr, "grad");
          break;
        case Grad::Kind::Undefined:
          acc[in.get()].undefinedWhy =
              g.why + " (at " + node->op().str() +
              (node->site().empty() ? std::string() : ", created at " + node->site().str()) + ")";
          break;
        case Grad::Kind::Disconnected:
          break;
      }
    }
  }

  std::vector<VarPtr> result;
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    const VarPtr& w = wrt[i];
    auto found = acc.find(w.get());
    if (found != acc.end() && !found->second.undefinedWhy.empty()) {
      if (options.allowUndefined) {
        result.push_back(nullptr);
        continue;
      }
      throw GradientError("grad: the gradient with respect to wrt[" + std::to_string(i) + "] " +
                          describeVar(*w) + " is undefined: " + found->second.undefinedWhy);
    }
    if (found == acc.end() || found->second.terms.empty()) {
      const std::string msg = "grad: the cost does not depend on wrt[" + std::to_string(i) + "] " +
                              describeVar(*w) + " (it is disconnected from the outputs)";
      if (options.disconnected == DisconnectedPolicy::Raise)
        throw GradientError(msg + "; pass DisconnectedPolicy::Warn or Ignore to get zeros");
      if (options.disconnected == DisconnectedPolicy::Warn) warn(msg + "; its gradient is zero");
      result.push_back(zerosLike(w));
      continue;
    }
    result.push_back(sumAll(found->second.terms));
  }
  return result;
}

std::vector<VarPtr> grad(const VarPtr& cost, const std::vector<VarPtr>& wrt, GradOptions options) {
  if (!cost) throw GradientError("grad: the cost is null");
  if (cost->type().ndim() != 0)
    throw GradientError("grad: the cost must be a scalar (0-d), found " + describeVar(*cost) +
                        "; reduce it first (sum, mean)");
  if (!isFloat(cost->type().dtype()))
    throw GradientError("grad: the cost must be a float, found " + describeVar(*cost));
  return grad(std::vector<VarPtr>{cost}, std::vector<VarPtr>{constant(1.0, cost->type().dtype())},
              wrt, options);
}

VarPtr grad(const VarPtr& cost, const VarPtr& wrt, GradOptions options) {
  return grad(cost, std::vector<VarPtr>{wrt}, options)[0];
}

std::vector<VarPtr> Lop(const std::vector<VarPtr>& f, const std::vector<VarPtr>& wrt,
                        const std::vector<VarPtr>& evalPoints, GradOptions options) {
  return grad(f, evalPoints, wrt, options);
}

std::vector<VarPtr> Rop(const std::vector<VarPtr>& f, const std::vector<VarPtr>& wrt,
                        const std::vector<VarPtr>& evalPoints) {
  if (wrt.size() != evalPoints.size())
    throw GradientError("Rop: expected one eval point per wrt (" + std::to_string(wrt.size()) +
                        "), found " + std::to_string(evalPoints.size()));
  std::unordered_map<const Variable*, VarPtr> tangent;
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    if (!wrt[i] || !evalPoints[i]) throw GradientError("Rop: wrt and eval points must not be null");
    if (wrt[i]->type().ndim() != evalPoints[i]->type().ndim())
      throw GradientError("Rop: eval point " + std::to_string(i) + " has type " +
                          evalPoints[i]->type().str() + "; expected the type of " +
                          describeVar(*wrt[i]));
    tangent[wrt[i].get()] = evalPoints[i];
  }
  std::unordered_set<const Variable*> wrtSet;
  for (const VarPtr& w : wrt) wrtSet.insert(w.get());
  const std::vector<Apply*> order =
      ancestorNodes(f, [&](const Variable& v) { return wrtSet.count(&v) > 0; });
  const auto forward = forwardNodes(f, evalPoints);
  std::unordered_set<const Apply*> tagged;
  for (Apply* node : order) {
    std::vector<VarPtr> tIn;
    bool any = false;
    for (const VarPtr& in : node->inputs()) {
      auto found = tangent.find(in.get());
      tIn.push_back(found != tangent.end() ? found->second : nullptr);
      any = any || tIn.back() != nullptr;
    }
    if (!any) continue;
    std::optional<std::vector<VarPtr>> tOut = node->op().pushforward(*node, tIn);
    if (!tOut) {
      // The double-pullback trick: the pullback is linear in the output gradients u, so
      // J v = d<J^T u, v>/du. u are zeros of the outputs' shapes (any value works).
      std::vector<VarPtr> u;
      for (int o = 0; o < node->nOutputs(); ++o) u.push_back(zerosLike(node->output(o)));
      std::vector<Grad> back = node->op().pullback(*node, u);
      std::vector<VarPtr> lin, dir;
      for (int i = 0; i < node->nInputs(); ++i) {
        if (!tIn[static_cast<std::size_t>(i)]) continue;
        const Grad& g = back[static_cast<std::size_t>(i)];
        if (g.kind == Grad::Kind::Undefined)
          throw GradientError("Rop: " + node->op().str() +
                              " has neither a pushforward nor a defined pullback for input " +
                              std::to_string(i) + ": " + g.why);
        if (g.kind == Grad::Kind::Disconnected) continue;
        lin.push_back(g.value);
        dir.push_back(tIn[static_cast<std::size_t>(i)]);
      }
      tOut = std::vector<VarPtr>(static_cast<std::size_t>(node->nOutputs()));
      if (!lin.empty()) {
        GradOptions opts;
        opts.disconnected = DisconnectedPolicy::Ignore;
        std::vector<VarPtr> jv = grad(lin, dir, u, opts);
        for (int o = 0; o < node->nOutputs(); ++o)
          (*tOut)[static_cast<std::size_t>(o)] = jv[static_cast<std::size_t>(o)];
      }
    }
    for (int o = 0; o < node->nOutputs(); ++o) {
      VarPtr t = (*tOut)[static_cast<std::size_t>(o)];
      if (!t) continue;
      const Variable& out = node->outputRef(o);
      if (t->type().dtype() != out.type().dtype() && isFloat(out.type().dtype()))
        t = cast(t, out.type().dtype());
      tangent[&out] = t;
      tagOrigin(std::span(&t, 1), *node, forward, &tagged, "rop");
    }
  }
  std::vector<VarPtr> result;
  for (const VarPtr& out : f) {
    auto found = tangent.find(out.get());
    result.push_back(found != tangent.end() ? found->second : zerosLike(out));
  }
  return result;
}

}  // namespace tscope::engine

namespace tscope::engine {

VarPtr jacobian(const VarPtr& expression, const VarPtr& wrt) {
  if (!expression || !wrt) throw GradientError("jacobian: the expression and wrt must not be null");
  const TensorType& et = expression->type();
  if (!isFloat(et.dtype()))
    throw GradientError("jacobian: the expression must be a float, found " +
                        describeVar(*expression));
  for (std::int64_t d : et.shape())
    if (d == kUnknownDim)
      throw GradientError(
          "jacobian: the expression's shape must be static (one gradient per element), found " +
          describeVar(*expression) + "; specify its shape first (specifyShape)");
  const std::int64_t n = shapeNumel(et.shape());
  std::vector<VarPtr> rows;
  rows.reserve(static_cast<std::size_t>(n));
  GradOptions opts;
  opts.disconnected = DisconnectedPolicy::Ignore;
  for (std::int64_t i = 0; i < n; ++i) {
    // Row i: the gradient of element i, i.e. the pullback of the one-hot direction e_i.
    Tensor onehot(et.dtype(), et.shape());
    onehot.reshape({n}).set({i}, 1.0);
    rows.push_back(grad(std::vector<VarPtr>{expression}, std::vector<VarPtr>{constant(onehot)},
                        {wrt}, opts)[0]);
  }
  if (n == 0)
    throw GradientError("jacobian: the expression " + describeVar(*expression) +
                        " has no elements");
  VarPtr stacked = stack(rows, 0);  // (n, *wrt.shape)
  ShapeExpr shape;
  for (std::int64_t d : et.shape()) shape.push_back(constantInt(d));
  for (const VarPtr& d : shapeOf(wrt)) shape.push_back(d);
  return reshape(stacked, shape);
}

VarPtr hessian(const VarPtr& cost, const VarPtr& wrt) {
  VarPtr g = grad(cost, wrt, GradOptions{DisconnectedPolicy::Ignore, false});
  // The gradient has wrt's shape; the Jacobian needs it static.
  for (std::int64_t d : g->type().shape())
    if (d == kUnknownDim)
      throw GradientError("hessian: wrt must have a static shape, found " + describeVar(*wrt));
  return jacobian(g, wrt);
}

}  // namespace tscope::engine
