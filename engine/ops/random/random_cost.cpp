// The cost of the random sampling ops (Op::cost).

#include "engine/ops/cost_common.h"
#include "engine/ops/random/random_ops.h"

namespace tscope::engine {

// Note [Random op cost]: the Philox rounds are integer work, which a flop count does not see;
// the stated per-element counts are the floating-point steps after the bits are drawn: uniform
// scales and shifts (2), integers scales, floors and shifts (2), normal is Box-Muller (log, sqrt,
// multiply, cos or sin, multiply by std, add the mean: 6). Bytes: the state read and the new state
// and the sample written; the dims and parameters (0-d) are read too. The sample's shape comes
// from its dims' values (Note [Cost output shapes]): unknown when they do not fold.
OpCost RandomOp::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  const double perElement = m_distribution == RandomDistribution::Normal ? 6 : 2;
  OpCost c = cost::movement(node, in, *out);
  c.flops = perElement * cost::elements((*out)[1]);
  return c;
}

}  // namespace tscope::engine
