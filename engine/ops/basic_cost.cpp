// The cost of ShapeI (Op::cost): a shape query reads no tensor data.

#include "engine/ops/basic.h"
#include "engine/ops/cost_common.h"

namespace tscope::engine {

// One int64 written (Note [Shape op cost]).
OpCost ShapeI::cost(const Apply&, std::span<const Shape>) const {
  OpCost c = cost::view();
  c.bytesWritten = sizeof(std::int64_t);
  return c;
}

}  // namespace tscope::engine
