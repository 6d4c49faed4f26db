// The cuDNN kernels' registration and placement rules (Note [CUDA placement rules] in
// cuda_backend.cpp): which convolution, pooling, softmax and batch-norm nodes move to the GPU.
#include "engine/backends/cuda/cudnn_common.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/rewrite/rules/gpu_placement.h"

namespace tscope::engine::cuda {

namespace {
// Note [cuDNN placement rules]: the kernels are float32 only (float64, float16 and bfloat16 stay
// on the CPU, documented in docs/gpu.md); every tensor value of the node is float32 except the 0-d
// int64 sizes the gradient ops take (Conv2dGradInputs' H and W, Conv2dGradWeights' KH and KW,
// AvgPool2dGrad's H and W).
bool float32Node(const Apply& node) {
  for (const VarPtr& in : node.inputs()) {
    const TensorType& t = in->type();
    if (t.dtype() != DType::Float32 && !(t.dtype() == DType::Int64 && t.ndim() == 0)) return false;
  }
  for (int o = 0; o < node.nOutputs(); ++o)
    if (node.outputRef(o).type().dtype() != DType::Float32) return false;
  return node.nInputs() > 0 && node.input(0)->type().dtype() == DType::Float32;
}

// Note [Batch norm on cuDNN] (cudnn_params.h): float32, the kept axes one block, and an epsilon
// cuDNN accepts (>= CUDNN_BN_MIN_EPSILON of the cuDNN this build compiled against: 0.0 in cuDNN
// 9, so every epsilon the op allows (>= 0) qualifies there; 1e-5 in cuDNN 7 and before, where a
// node with epsilon 1e-6 stays on the CPU).
bool batchNormRule(const Apply& node) {
  const auto& op = static_cast<const BatchNormFamilyOp&>(node.op());
  return float32Node(node) && batchNormAxesFit(node.input(0)->type().ndim(), op.axes()) &&
         batchNormEpsilonFits(op.epsilon(), cudnnBatchNormMinEpsilon());
}

// cuDNN's activations: relu, and clip only as min(max(v, 0), hi) (its clipped relu).
bool fusedConvRule(const Apply& node) {
  const auto& a = static_cast<const FusedConv2d&>(node.op()).activation();
  if (a.kind == cpu::ConvActivation::Clip && !(a.lo == 0.0 && a.hi >= 0.0)) return false;
  return float32Node(node);
}
}  // namespace

double cudnnBatchNormMinEpsilon() {
  return CUDNN_BN_MIN_EPSILON;
}

void registerCudnnKernels(KernelRegistry& kernels, DeviceSupport& rules) {
  const Device d = Device::Cuda;
  struct Entry {
    const char* op;
    KernelFn fn;
    NodeSupportFn rule;
  };
  const Entry entries[] = {
      {"Conv2d", &conv2dKernel, &float32Node},
      {"FusedConv2d", &fusedConv2dKernel, &fusedConvRule},
      {"Conv2dGradInputs", &conv2dGradInputsKernel, &float32Node},
      {"Conv2dGradWeights", &conv2dGradWeightsKernel, &float32Node},
      {"MaxPool2d", &poolKernel, &float32Node},
      {"AvgPool2d", &poolKernel, &float32Node},
      {"MaxPool2dGrad", &maxPoolGradKernel, &float32Node},
      {"AvgPool2dGrad", &avgPoolGradKernel, &float32Node},
      {"Softmax", &softmaxKernel, &float32Node},
      {"LogSoftmax", &softmaxKernel, &float32Node},
      {"SoftmaxGrad", &softmaxGradKernel, &float32Node},
      {"LogSoftmaxGrad", &softmaxGradKernel, &float32Node},
      {"BatchNormTrain", &batchNormTrainKernel, &batchNormRule},
      {"BatchNormInference", &batchNormInferenceKernel, &batchNormRule},
  };
  for (const Entry& e : entries) {
    kernels.add(e.op, d, e.fn, "cudnn");
    rules.add(e.op, d, e.rule);
  }
}

}  // namespace tscope::engine::cuda
