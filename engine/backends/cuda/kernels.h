#pragma once
// The CUDA kernels the backend registers (cuda_backend.cpp), each with KernelFn's signature
// (engine/compile/kernel.h): inputs and outputs are device tensors; outputs are allocated here
// from the caching allocator. Internal to this folder.

#include "engine/compile/kernel.h"
#include "engine/tensor/tensor.h"

namespace tscope::engine::cuda {

// Elemwise and Composite: the NVRTC kernel generated from the node's scalar program
// (elemwise_kernel.cpp, Note [Elementwise kernels]).
void elemwiseKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor* const> outputs);
// CAReduce with add, mul, maximum or minimum (Note [Reduction kernels]).
void reduceKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs);
// Dot, Gemm, Gemv on float32 through cuBLAS (blas_kernel.cpp).
void dotKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs);
void gemmKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs);
void gemvKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs);

// A contiguous copy of a device tensor on the device (t itself when already contiguous).
Tensor deviceContiguous(const Tensor& t);

}  // namespace tscope::engine::cuda
