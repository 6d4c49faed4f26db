#pragma once
// The CUDA kernels the backend registers (cuda_backend.cpp), each with KernelFn's signature
// (engine/compile/kernel.h): inputs and outputs are device tensors; outputs are allocated here
// from the caching allocator. Internal to this folder.

#include "engine/compile/kernel.h"
#include "engine/ops/elemwise/scalar_op.h"
#include "engine/tensor/tensor.h"

#include <memory>
#include <vector>

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

// BatchNormTrain and BatchNormInference through cuDNN (batchnorm_kernel.cpp).
void batchNormTrainKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                          std::span<Tensor* const> outputs);
void batchNormInferenceKernel(const Op& op, const Apply& node,
                              std::span<const Tensor* const> inputs,
                              std::span<Tensor* const> outputs);

// Registers the cuDNN kernels above and their placement rules (Note [cuDNN placement rules]).
void registerCudnnKernels(KernelRegistry& kernels, DeviceSupport& rules);
// Registers the shape, indexing, argmax, cross-entropy and random kernels below, their rules and
// their host values (op_rules.cpp, Note [Op placement rules]).
void registerOpKernels(KernelRegistry& kernels, DeviceSupport& rules);

// Shape and indexing (shape_kernel.cpp, Note [Shape kernels] in shape_codegen.h). Subtensor,
// Split, SpecifyShape, Shape and ShapeI need no kernel of their own: their perform makes views
// (or reads metadata) and runs as performKernel.
void reshapeKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs);
void incSubtensorKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs);
void advancedSubtensor1Kernel(const Op& op, const Apply& node,
                              std::span<const Tensor* const> inputs,
                              std::span<Tensor* const> outputs);
void advancedIncSubtensor1Kernel(const Op& op, const Apply& node,
                                 std::span<const Tensor* const> inputs,
                                 std::span<Tensor* const> outputs);
void joinKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs);
void allocKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                 std::span<Tensor* const> outputs);
// A view's perform run as the device kernel (views, metadata, transfers), under the node's scope.
void performKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs);

// SumToShape (a broadcast gradient summed back): the reduction kernel over the leading and the
// stretched axes, in g's dtype (float16 in float32); the sizes are host values.
void sumToShapeKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs);
// The reduction kernel of `scalar` over the axes flagged in `reduced` (Note [Reduction kernels]):
// a new contiguous device tensor of the kept axes.
Tensor reduceOnDevice(ScalarOp scalar, const Tensor& x, const std::vector<bool>& reduced, DType acc,
                      DType out);

// Argmax and Argmin (Note [Reduction kernels]).
void argReduceKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs);

// The cross-entropy family (crossentropy_kernel.cpp, Note [Cross-entropy kernels] in
// nn_codegen.h).
void oneHotKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs);
void categoricalCrossEntropyKernel(const Op& op, const Apply& node,
                                   std::span<const Tensor* const> inputs,
                                   std::span<Tensor* const> outputs);
void softmaxCrossEntropyKernel(const Op& op, const Apply& node,
                               std::span<const Tensor* const> inputs,
                               std::span<Tensor* const> outputs);
void softmaxCrossEntropyGradKernel(const Op& op, const Apply& node,
                                   std::span<const Tensor* const> inputs,
                                   std::span<Tensor* const> outputs);

// RandomUniform, RandomNormal, RandomIntegers through cuRAND (random_kernel.cpp, Note [Device
// random numbers]).
void randomKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs);

// A contiguous copy of a device tensor on the device (t itself when already contiguous).
Tensor deviceContiguous(const Tensor& t);

// Device copies (shape_kernel.cpp): dst and src of one shape (src may broadcast with stride 0),
// src converted to dst's dtype as numpy's astype; add: dst += src. dst is a writable device view.
void copyOnDevice(Tensor dst, const Tensor& src, bool add = false);
// A new contiguous device tensor of dtype holding t's values.
Tensor contiguousCopy(const Tensor& t, DType dtype);
// Every element of the device view dst set to value (a one-element host tensor, converted).
void fillOnDevice(Tensor dst, const Tensor& value);

// A device word a kernel sets to the smallest bad item it finds (atomicMin), all ones when none:
// how the indexing kernels report the CPU's out-of-range errors. read() synchronises the stream.
class ErrorWord {
 public:
  ErrorWord();  // allocated and set to all ones on the stream
  void* device() { return m_memory.get(); }
  // The smallest item recorded, or -1.
  long long read() const;

 private:
  std::shared_ptr<void> m_memory;
};

}  // namespace tscope::engine::cuda
