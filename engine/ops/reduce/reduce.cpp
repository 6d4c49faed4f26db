#include "engine/ops/reduce/reduce.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/dimshuffle.h"

#include <algorithm>
#include <limits>

namespace tscope::engine {

namespace {

std::string axesStr(const Axes& axes) {
  std::string s = "[";
  for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

VarPtr reduce(ScalarOp op, const char* what, const VarPtr& x, const Axes& axes, bool keepdims,
              std::optional<DType> dtype, Site site) {
  const int nd = x->type().ndim();
  std::vector<int> ax = normalizeAxes(axes, nd, what, x->type());
  std::optional<std::vector<int>> opAxes;
  // Every axis is spelled as null, so equal reductions are equal ops whatever the caller wrote.
  if (static_cast<int>(ax.size()) != nd) opAxes = ax;
  VarPtr r = std::make_shared<CAReduce>(op, std::move(opAxes), dtype)->operator()({x}, site);
  return keepdims ? restoreAxes(r, ax, nd, site) : r;
}

// The element count along axes as a 0-d constant or expression of dtype.
VarPtr countAs(const VarPtr& x, const std::vector<int>& axes, DType dtype, Site site) {
  const VarPtr n = countAlong(x, axes, site);
  if (auto c = constantIntValue(n)) return constant(static_cast<double>(*c), dtype, site);
  return cast(n, dtype, site);
}

// The float dtype statistics are computed in (numpy's mean: integers -> float64; float16 in
// float32).
DType statDtype(DType in) {
  if (!isFloat(in)) return DType::Float64;
  return in == DType::Float16 ? DType::Float32 : in;
}

VarPtr argReduce(ArgReduce::Kind kind, const VarPtr& x, std::optional<int> axis, bool keepdims,
                 Site site) {
  const int nd = x->type().ndim();
  const char* what = kind == ArgReduce::Kind::Max ? "argmax" : "argmin";
  std::vector<int> restored;
  if (axis) {
    restored = normalizeAxes({*axis}, nd, what, x->type());
    axis = restored[0];
  } else {
    restored = normalizeAxes({}, nd, what, x->type());
  }
  VarPtr r = std::make_shared<ArgReduce>(kind, axis)->operator()({x}, site);
  return keepdims ? restoreAxes(r, restored, nd, site) : r;
}

}  // namespace

std::vector<int> normalizeAxes(const Axes& axes, int ndim, const std::string& what,
                               const TensorType& type) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int a : axes) {
    const int b = a < 0 ? a + ndim : a;
    if (b < 0 || b >= ndim)
      throw TypeError(what + ": axis " + std::to_string(a) + " is out of range for " + type.str() +
                      " (valid axes: " + std::to_string(-ndim) + ".." + std::to_string(ndim - 1) +
                      ")");
    out.push_back(b);
  }
  std::sort(out.begin(), out.end());
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i] == out[i - 1])
      throw TypeError(what + ": axis " + std::to_string(out[i]) + " is repeated in " +
                      axesStr(axes) + " for " + type.str());
  return out;
}

VarPtr restoreAxes(const VarPtr& x, const std::vector<int>& axes, int outNdim, Site site) {
  if (axes.empty()) return x;
  if (x->type().ndim() + static_cast<int>(axes.size()) != outNdim)
    throw TypeError("restoreAxes: " + x->type().str() + " with " + std::to_string(axes.size()) +
                    " axes restored does not have rank " + std::to_string(outNdim));
  std::vector<int> order;
  int next = 0;
  for (int i = 0; i < outNdim; ++i)
    order.push_back(std::binary_search(axes.begin(), axes.end(), i) ? DimShuffle::kNewAxis
                                                                    : next++);
  return dimshuffle(x, std::move(order), site);
}

VarPtr countAlong(const VarPtr& x, const std::vector<int>& axes, Site site) {
  std::int64_t known = 1;
  VarPtr dynamic;
  for (int a : axes) {
    const std::int64_t d = x->type().shape()[static_cast<std::size_t>(a)];
    if (d != kUnknownDim) {
      known *= d;
    } else {
      VarPtr s = shapeI(x, a, site);
      dynamic = dynamic ? mul(dynamic, s, site) : s;
    }
  }
  if (!dynamic) return constantInt(known, site);
  return known == 1 ? dynamic : mul(dynamic, constantInt(known, site), site);
}

VarPtr sum(const VarPtr& x, Axes axes, bool keepdims, std::optional<DType> dtype, Site site) {
  return reduce(ScalarOp::Add, "sum", x, axes, keepdims, dtype, site);
}
VarPtr prod(const VarPtr& x, Axes axes, bool keepdims, std::optional<DType> dtype, Site site) {
  return reduce(ScalarOp::Mul, "prod", x, axes, keepdims, dtype, site);
}
VarPtr max(const VarPtr& x, Axes axes, bool keepdims, Site site) {
  return reduce(ScalarOp::Maximum, "max", x, axes, keepdims, std::nullopt, site);
}
VarPtr min(const VarPtr& x, Axes axes, bool keepdims, Site site) {
  return reduce(ScalarOp::Minimum, "min", x, axes, keepdims, std::nullopt, site);
}
VarPtr all(const VarPtr& x, Axes axes, bool keepdims, Site site) {
  return reduce(ScalarOp::And, "all", x, axes, keepdims, std::nullopt, site);
}
VarPtr any(const VarPtr& x, Axes axes, bool keepdims, Site site) {
  return reduce(ScalarOp::Or, "any", x, axes, keepdims, std::nullopt, site);
}

VarPtr argmax(const VarPtr& x, std::optional<int> axis, bool keepdims, Site site) {
  return argReduce(ArgReduce::Kind::Max, x, axis, keepdims, site);
}
VarPtr argmin(const VarPtr& x, std::optional<int> axis, bool keepdims, Site site) {
  return argReduce(ArgReduce::Kind::Min, x, axis, keepdims, site);
}

VarPtr mean(const VarPtr& x, Axes axes, bool keepdims, Site site) {
  const DType in = x->type().dtype();
  const DType dt = statDtype(in);
  const std::vector<int> ax = normalizeAxes(axes, x->type().ndim(), "mean", x->type());
  VarPtr s = sum(x, ax, keepdims, dt == in ? std::nullopt : std::optional<DType>(dt), site);
  VarPtr r = trueDiv(s, countAs(x, ax, dt, site), site);
  return isFloat(in) && in != dt ? cast(r, in, site) : r;
}

VarPtr var(const VarPtr& x, Axes axes, bool keepdims, int ddof, Site site) {
  const DType in = x->type().dtype();
  const DType dt = statDtype(in);
  const std::vector<int> ax = normalizeAxes(axes, x->type().ndim(), "var", x->type());
  const VarPtr xf = dt == in ? x : cast(x, dt, site);
  const VarPtr d = sub(xf, mean(xf, ax, true, site), site);
  const VarPtr ss = sum(mul(d, d, site), ax, keepdims, std::nullopt, site);
  VarPtr n = countAs(x, ax, dt, site);
  if (ddof != 0) n = sub(n, constant(static_cast<double>(ddof), dt, site), site);
  VarPtr r = trueDiv(ss, n, site);
  return isFloat(in) && in != dt ? cast(r, in, site) : r;
}

VarPtr stddev(const VarPtr& x, Axes axes, bool keepdims, int ddof, Site site) {
  return sqrt(var(x, std::move(axes), keepdims, ddof, site), site);
}

VarPtr logsumexp(const VarPtr& x, Axes axes, bool keepdims, Site site) {
  const DType in = x->type().dtype();
  const int nd = x->type().ndim();
  const std::vector<int> ax = normalizeAxes(axes, nd, "logsumexp", x->type());
  const VarPtr xf = isFloat(in) ? x : cast(x, upgradeToFloat(in), site);
  const DType dt = xf->type().dtype();
  // Shift by the max so exp never overflows; where the max is infinite (all -inf, or a +inf) the
  // shift would make inf - inf = NaN, so shift by 0 there (scipy does the same).
  const VarPtr m = max(xf, ax, true, site);
  const VarPtr finite =
      lt(abs(m, site), constant(std::numeric_limits<double>::infinity(), dt, site), site);
  const VarPtr shift = where(finite, m, constant(0.0, dt, site), site);
  const VarPtr s = sum(exp(sub(xf, shift, site), site), ax, keepdims, std::nullopt, site);
  VarPtr base = shift;
  if (!keepdims) {
    std::vector<int> kept;
    for (int i = 0; i < nd; ++i)
      if (!std::binary_search(ax.begin(), ax.end(), i)) kept.push_back(i);
    base = dimshuffle(shift, std::move(kept), site);
  }
  return add(log(s, site), base, site);
}

void registerReduceOps(OpRegistry& registry) {
  registry.add("CAReduce", &CAReduce::fromProps);
  registry.add("Argmax", &ArgReduce::fromPropsMax);
  registry.add("Argmin", &ArgReduce::fromPropsMin);
  registry.add("CumSum", &CumSum::fromProps);
}

}  // namespace tscope::engine
