#pragma once
// cuDNN's handle and descriptors for the kernels of this folder (conv_kernel.cpp, pool_kernel.cpp,
// softmax_kernel.cpp). Internal: it includes cudnn.h, so no public header may include it. Built
// only when cuDNN was found (TSCOPE_HAVE_CUDNN).
//
// The kernels use cuDNN's classic API (cudnnConvolutionForward, cudnnPoolingForward,
// cudnnSoftmaxForward...), deprecated in cuDNN 9 in favour of the graph API but still shipped in
// its cnn and ops libraries; float32 NCHW only, packed tensors.

#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/cudnn_params.h"

#include <cudnn.h>

#define TSCOPE_CUDNN_CHECK(call) ::tscope::engine::cuda::checkCudnn(static_cast<int>(call), #call)

namespace tscope::engine::cuda {

// The process's cuDNN handle, created on first use and bound to the runtime's stream (Note [One
// stream]).
cudnnHandle_t cudnnHandle();

// A packed float32 NCHW tensor descriptor.
class TensorDesc {
 public:
  explicit TensorDesc(const std::array<int, 4>& nchw);
  ~TensorDesc() { cudnnDestroyTensorDescriptor(m_desc); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  operator cudnnTensorDescriptor_t() const { return m_desc; }

 private:
  cudnnTensorDescriptor_t m_desc = nullptr;
};

// Float32 OIHW filters.
class FilterDesc {
 public:
  explicit FilterDesc(const std::array<int, 4>& oihw);
  ~FilterDesc() { cudnnDestroyFilterDescriptor(m_desc); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  operator cudnnFilterDescriptor_t() const { return m_desc; }

 private:
  cudnnFilterDescriptor_t m_desc = nullptr;
};

// Cross-correlation with the geometry and groups of p, float32 accumulation, FMA math (no TF32:
// CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores on Ampere and later, 10 mantissa bits,
// which the parity tolerances of float32 do not allow).
class ConvDesc {
 public:
  explicit ConvDesc(const ConvDescriptorParams& p);
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(m_desc); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  operator cudnnConvolutionDescriptor_t() const { return m_desc; }

 private:
  cudnnConvolutionDescriptor_t m_desc = nullptr;
};

class PoolDesc {
 public:
  explicit PoolDesc(const PoolDescriptorParams& p);
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(m_desc); }
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
  operator cudnnPoolingDescriptor_t() const { return m_desc; }

 private:
  cudnnPoolingDescriptor_t m_desc = nullptr;
};

class ActivationDesc {
 public:
  // mode CUDNN_ACTIVATION_RELU or CUDNN_ACTIVATION_CLIPPED_RELU (coef: the upper bound).
  ActivationDesc(cudnnActivationMode_t mode, double coef);
  ~ActivationDesc() { cudnnDestroyActivationDescriptor(m_desc); }
  ActivationDesc(const ActivationDesc&) = delete;
  ActivationDesc& operator=(const ActivationDesc&) = delete;
  operator cudnnActivationDescriptor_t() const { return m_desc; }

 private:
  cudnnActivationDescriptor_t m_desc = nullptr;
};

}  // namespace tscope::engine::cuda
