#include "engine/backends/cuda/cudnn_common.h"

#include "engine/backends/cuda/device_runtime.h"

#include <cuda_runtime.h>
#include <mutex>

namespace tscope::engine::cuda {

cudnnHandle_t cudnnHandle() {
  static std::mutex mutex;
  static cudnnHandle_t handle = nullptr;
  std::lock_guard lock(mutex);
  if (handle == nullptr) {
    void* stream = CudaRuntime::instance().stream();  // throws CudaUnavailable without a device
    cudnnHandle_t h = nullptr;
    TSCOPE_CUDNN_CHECK(cudnnCreate(&h));
    TSCOPE_CUDNN_CHECK(cudnnSetStream(h, static_cast<cudaStream_t>(stream)));
    handle = h;
  }
  return handle;
}

TensorDesc::TensorDesc(const std::array<int, 4>& d) {
  TSCOPE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m_desc));
  TSCOPE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d[0],
                                                d[1], d[2], d[3]));
}

FilterDesc::FilterDesc(const std::array<int, 4>& d) {
  TSCOPE_CUDNN_CHECK(cudnnCreateFilterDescriptor(&m_desc));
  TSCOPE_CUDNN_CHECK(cudnnSetFilter4dDescriptor(m_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d[0],
                                                d[1], d[2], d[3]));
}

ConvDesc::ConvDesc(const ConvDescriptorParams& p) {
  TSCOPE_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&m_desc));
  TSCOPE_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(m_desc, p.padH, p.padW, p.strideH, p.strideW,
                                                     p.dilationH, p.dilationW,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TSCOPE_CUDNN_CHECK(cudnnSetConvolutionGroupCount(m_desc, p.groups));
  TSCOPE_CUDNN_CHECK(cudnnSetConvolutionMathType(m_desc, CUDNN_FMA_MATH));
}

PoolDesc::PoolDesc(const PoolDescriptorParams& p) {
  TSCOPE_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&m_desc));
  // Max: the deterministic variant, whose backward routes each gradient to one element of the
  // window (the CPU gives it to the first maximum; cuDNN's choice among ties is its own).
  const cudnnPoolingMode_t mode = p.mode == PoolMode::Max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                  : p.mode == PoolMode::AverageCountPadding
                                      ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                      : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  TSCOPE_CUDNN_CHECK(cudnnSetPooling2dDescriptor(m_desc, mode, CUDNN_PROPAGATE_NAN, p.windowH,
                                                 p.windowW, p.padH, p.padW, p.strideH, p.strideW));
}

ActivationDesc::ActivationDesc(cudnnActivationMode_t mode, double coef) {
  TSCOPE_CUDNN_CHECK(cudnnCreateActivationDescriptor(&m_desc));
  TSCOPE_CUDNN_CHECK(cudnnSetActivationDescriptor(m_desc, mode, CUDNN_PROPAGATE_NAN, coef));
}

}  // namespace tscope::engine::cuda
