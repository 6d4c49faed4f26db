#pragma once
// The CUDA kernels the backend registers (cuda_backend.cpp), each with KernelFn's signature
// (engine/compile/kernel.h): inputs and outputs are device tensors; outputs are allocated here
// from the caching allocator. Internal to this folder.

#include "engine/compile/kernel.h"
#include "engine/tensor/tensor.h"

namespace tscope::engine {
class DeviceSupport;
}

namespace tscope::engine::cuda {

// Elemwise and Composite: the NVRTC kernel generated from the node's scalar program
// (elemwise_kernel.cpp, Note [Elementwise kernels]).
void elemwiseKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor* const> outputs);
// CAReduce with add, mul, maximum or minimum (Note [Reduction kernels]).
void reduceKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs);
// SumToShape (a gradient summed to its variable's shape) as a sum reduction (Note [SumToShape on
// the device] in elemwise_kernel.cpp).
void sumToShapeKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs);
// Dot on float32 (cublasSgemm, Sgemv, Sdot) and float16 (cublasGemmEx on the tensor cores,
// float32 accumulation; Note [Half products] in blas_kernel.cpp); Gemm and Gemv on float32.
void dotKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs);
void gemmKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs);
void gemvKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs);

// cuDNN (built with TSCOPE_HAVE_CUDNN; cudnn_rules.cpp registers them): Conv2d, FusedConv2d and
// the two convolution gradients (conv_kernel.cpp), pooling (pool_kernel.cpp), softmax
// (softmax_kernel.cpp).
void conv2dKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs);
void fusedConv2dKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs);
void conv2dGradInputsKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                            std::span<Tensor* const> outputs);
void conv2dGradWeightsKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                             std::span<Tensor* const> outputs);
void poolKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs);
void maxPoolGradKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs);
void avgPoolGradKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs);
void softmaxKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs);
void softmaxGradKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs);

// Registers the cuDNN kernels above and their placement rules (Note [cuDNN placement rules]).
void registerCudnnKernels(KernelRegistry& kernels, DeviceSupport& rules);

// A contiguous copy of a device tensor on the device (t itself when already contiguous).
Tensor deviceContiguous(const Tensor& t);

}  // namespace tscope::engine::cuda
