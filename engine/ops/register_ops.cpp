#include "engine/ops/register_ops.h"

#include "engine/ops/basic.h"
#include "engine/ops/blas/det.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/unary_math.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/nn/nms.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/nn/roi_align.h"
#include "engine/ops/nn/tfidf.h"
#include "engine/ops/random/random_ops.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/unique.h"
#include "engine/ops/transfer/transfer.h"

namespace tscope::engine {

void registerAllOps(OpRegistry& registry) {
  registerBasicOps(registry);
  registerElemwiseOps(registry);
  registerUnaryMathOps(registry);
  registerShapeOps(registry);
  registerUniqueOps(registry);
  registerBlasOps(registry);
  registerDetOps(registry);
  registerNnOps(registry);
  registerNmsOps(registry);
  registerRoiAlignOps(registry);
  registerTfIdfOps(registry);
  registerRandomOps(registry);
  registerGraphOps(registry);
  registerReduceOps(registry);
  registerDebugOps(registry);
  registerControlOps(registry);
  registerTransferOps(registry);
}

const OpRegistry& defaultOpRegistry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerAllOps(r);
    return r;
  }();
  return registry;
}

}  // namespace tscope::engine
