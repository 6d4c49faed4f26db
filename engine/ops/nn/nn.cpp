#include "engine/ops/nn/nn.h"

#include "engine/graph/op_registry.h"
#include "engine/ops/nn/channel_blocks.h"

namespace tscope::engine {

void registerNnOps(OpRegistry& registry) {
  registry.add("Softmax", &Softmax::fromProps);
  registry.add("LogSoftmax", &LogSoftmax::fromProps);
  registry.add("SoftmaxGrad", &SoftmaxGrad::fromProps);
  registry.add("LogSoftmaxGrad", &LogSoftmaxGrad::fromProps);
  registry.add("OneHot", &OneHot::fromProps);
  registry.add("CategoricalCrossEntropy", &CategoricalCrossEntropy::fromProps);
  registry.add("SoftmaxCrossEntropyWithLogits", &SoftmaxCrossEntropyWithLogits::fromProps);
  registry.add("SoftmaxCrossEntropyGrad", &SoftmaxCrossEntropyGrad::fromProps);
  registry.add("Conv2d", &Conv2d::fromProps);
  registry.add("Conv2dGradInputs", &Conv2dGradInputs::fromProps);
  registry.add("Conv2dGradWeights", &Conv2dGradWeights::fromProps);
  registry.add("FusedConv2d", &FusedConv2d::fromProps);
  registry.add("BlockedConv2d", &BlockedConv2d::fromProps);
  registry.add("ToChannelBlocks", &ToChannelBlocks::fromProps);
  registry.add("FromChannelBlocks", &FromChannelBlocks::fromProps);
  registry.add("MaxPool2d", &MaxPool2d::fromProps);
  registry.add("MaxPool2dGrad", &MaxPool2dGrad::fromProps);
  registry.add("MaxPool2dGradGrad", &MaxPool2dGradGrad::fromProps);
  registry.add("AvgPool2d", &AvgPool2d::fromProps);
  registry.add("AvgPool2dGrad", &AvgPool2dGrad::fromProps);
  registry.add("BatchNormTrain", &BatchNormTrain::fromProps);
  registry.add("BatchNormInference", &BatchNormInference::fromProps);
}

}  // namespace tscope::engine
