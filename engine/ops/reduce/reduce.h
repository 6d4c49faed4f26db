#pragma once
// Reductions as the user writes them: sum, prod, max, min, all, any, argmax, argmin, mean, var,
// stddev, logsumexp. `auto loss = mean(sqr(y - t));  auto p = argmax(scores, -1);`
//
// Axes: a list of axes, negative ones counting from the end (-1 is the last); an empty list means
// every axis (Note [Empty axes mean all] in careduce.h). An axis out of range or given twice throws
// TypeError naming the builder, the axes and the input's type.
// Note [keepdims]: keepdims is not an op prop: the builder reduces, then a DimShuffle puts a
// broadcastable axis back where each reduced axis was, so rewrites see one canonical CAReduce
// and the result broadcasts against the input.

#include "engine/graph/op.h"
#include "engine/ops/reduce/argreduce.h"
#include "engine/ops/reduce/careduce.h"
#include "engine/ops/reduce/cumsum.h"

#include <optional>
#include <source_location>
#include <vector>

namespace tscope::engine {

class OpRegistry;
using Axes = std::vector<int>;

// Sum and product; dtype overrides the output dtype (Note [Reduction dtypes]).
VarPtr sum(const VarPtr& x, Axes axes = {}, bool keepdims = false,
           std::optional<DType> dtype = std::nullopt,
           std::source_location site = std::source_location::current());
VarPtr prod(const VarPtr& x, Axes axes = {}, bool keepdims = false,
            std::optional<DType> dtype = std::nullopt,
            std::source_location site = std::source_location::current());
VarPtr max(const VarPtr& x, Axes axes = {}, bool keepdims = false,
           std::source_location site = std::source_location::current());
VarPtr min(const VarPtr& x, Axes axes = {}, bool keepdims = false,
           std::source_location site = std::source_location::current());
VarPtr all(const VarPtr& x, Axes axes = {}, bool keepdims = false,
           std::source_location site = std::source_location::current());
VarPtr any(const VarPtr& x, Axes axes = {}, bool keepdims = false,
           std::source_location site = std::source_location::current());

// The index of the first maximum (minimum) along axis, or into the flattened tensor when axis is
// nullopt; int64. NaN counts as the maximum and the minimum (numpy).
VarPtr argmax(const VarPtr& x, std::optional<int> axis = std::nullopt, bool keepdims = false,
              std::source_location site = std::source_location::current());
VarPtr argmin(const VarPtr& x, std::optional<int> axis = std::nullopt, bool keepdims = false,
              std::source_location site = std::source_location::current());

// sum / count, the count taken from the symbolic shape (works with unknown dimensions). Integer
// and bool inputs give float64, floats their own dtype (float16 sums in float32), as numpy.
VarPtr mean(const VarPtr& x, Axes axes = {}, bool keepdims = false,
            std::source_location site = std::source_location::current());
// mean((x - mean(x))^2) * count / (count - ddof); same dtypes as mean.
VarPtr var(const VarPtr& x, Axes axes = {}, bool keepdims = false, int ddof = 0,
           std::source_location site = std::source_location::current());
// sqrt(var(...)): numpy's std (named stddev so it does not read as the std namespace).
VarPtr stddev(const VarPtr& x, Axes axes = {}, bool keepdims = false, int ddof = 0,
              std::source_location site = std::source_location::current());
// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the (finite) max: no overflow for
// large x; float result (integers upgrade as exp does).
VarPtr logsumexp(const VarPtr& x, Axes axes = {}, bool keepdims = false,
                 std::source_location site = std::source_location::current());

// The axes normalised for a rank-ndim input: negative ones wrapped, sorted; empty -> every axis.
// Throws TypeError naming `what` (the builder) for an axis out of range or repeated.
std::vector<int> normalizeAxes(const Axes& axes, int ndim, const std::string& what,
                               const TensorType& type);
// x with a broadcastable axis inserted at each of `axes` (sorted; positions in the result): the
// inverse of reducing over those axes. x must have rank outNdim - axes.size().
VarPtr restoreAxes(const VarPtr& x, const std::vector<int>& axes, int outNdim,
                   std::source_location site = std::source_location::current());
// The number of elements along axes of x, as a 0-d int64 (a constant when static).
VarPtr countAlong(const VarPtr& x, const std::vector<int>& axes,
                  std::source_location site = std::source_location::current());

void registerReduceOps(OpRegistry& registry);

}  // namespace tscope::engine
