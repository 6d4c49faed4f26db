// The shape and indexing family's registration (declared in dimshuffle.h, called from
// registerAllOps).
#include "engine/graph/op_registry.h"
#include "engine/ops/shape/assert_type.h"
#include "engine/ops/shape/nonzero.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/topk.h"

namespace tscope::engine {

void registerShapeOps(OpRegistry& registry) {
  registry.add("DimShuffle", &DimShuffle::fromProps);
  registry.add("Shape", &ShapeOp::fromProps);
  registry.add("MakeVector", &MakeVector::fromProps);
  registry.add("SpecifyShape", &SpecifyShape::fromProps);
  registry.add("AssertType", &AssertType::fromProps);
  registry.add("Reshape", &Reshape::fromProps);
  registry.add("Join", &Join::fromProps);
  registry.add("Split", &Split::fromProps);
  registry.add("Alloc", &Alloc::fromProps);
  registry.add("ARange", &ARange::fromProps);
  registry.add("Tile", &Tile::fromProps);
  registry.add("Repeat", &Repeat::fromProps);
  registry.add("Subtensor", &Subtensor::fromProps);
  registry.add("IncSubtensor", &IncSubtensor::fromProps);
  registry.add("AdvancedSubtensor1", &AdvancedSubtensor1::fromProps);
  registry.add("AdvancedIncSubtensor1", &AdvancedIncSubtensor1::fromProps);
  registry.add("AdvancedSubtensor", &AdvancedSubtensor::fromProps);
  registry.add("AdvancedIncSubtensor", &AdvancedIncSubtensor::fromProps);
  registry.add("TopK", &TopK::fromProps);
  registry.add("NonZero", &NonZero::fromProps);
}

}  // namespace tscope::engine
