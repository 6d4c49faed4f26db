#pragma once
// The neural-network op family: softmax and log-softmax, cross-entropy losses, 2-d convolution and
// pooling, batch normalization (each with its gradient ops), and registerNnOps.

#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/nn/softmax.h"

namespace tscope::engine {

class OpRegistry;

void registerNnOps(OpRegistry& registry);

}  // namespace tscope::engine
