// The costs of the reduction family (Op::cost): CAReduce (sum, prod, max, min, all, any),
// ArgReduce (argmax, argmin) and CumSum.

#include "engine/ops/cost_common.h"
#include "engine/ops/reduce/argreduce.h"
#include "engine/ops/reduce/careduce.h"
#include "engine/ops/reduce/cumsum.h"

#include <algorithm>

namespace tscope::engine {

// Note [Reduction cost]: a reduction folds its scalar op once per element of its input (one flop
// per reduced input element; the n - 1 of an exact count differ by the output's size, which the
// convention drops), reads the input once and writes the kept axes' result. A reduction over an
// axis of size 0 computes nothing and writes the identity.
OpCost CAReduce::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape& x = in[0];
  const std::vector<int> axes = axesFor(static_cast<int>(x.size()));
  Shape kept;
  for (int a = 0; a < static_cast<int>(x.size()); ++a)
    if (std::find(axes.begin(), axes.end(), a) == axes.end())
      kept.push_back(x[static_cast<std::size_t>(a)]);
  const Shape outs[] = {kept};
  OpCost c = cost::movement(node, in, outs);
  c.flops = cost::elements(x);
  return c;
}

// Argmax/argmin: one comparison per input element; an int64 per kept position written.
OpCost ArgReduce::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  OpCost c = cost::movement(node, in, *out);
  c.flops = cost::elements(in[0]);
  return c;
}

// A running sum: one add per element, x read, the same shape written.
OpCost CumSum::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape outs[] = {in[0]};
  return cost::movement(node, in, outs, 1);
}

}  // namespace tscope::engine
