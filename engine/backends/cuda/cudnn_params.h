#pragma once
// The parameters of cuDNN's descriptors, computed from the engine's op props and runtime shapes
// without cuDNN (its types stay in the .cpp files that call it): what the kernels
// (conv_kernel.cpp, pool_kernel.cpp, softmax_kernel.cpp) pass to cudnnSet*Descriptor, and the
// output shapes cuDNN's own formulas give, which tests/engine/cuda/tst_cudnn_params.cpp compares
// with the CPU ops' shapes on a machine without a GPU. Internal to this folder.

#include "engine/tensor/tensor.h"

#include <array>
#include <cstdint>
#include <string>

namespace tscope::engine {
struct Conv2dParams;
struct Pool2dParams;
}  // namespace tscope::engine

namespace tscope::engine::cuda {

// cuDNN takes ints: a value that does not fit throws std::invalid_argument naming what.
int cudnnInt(std::int64_t value, const char* what);

// cudnnSetConvolution2dDescriptor + cudnnSetConvolutionGroupCount, and the NCHW / OIHW dims.
struct ConvDescriptorParams {
  int padH = 0, padW = 0, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int groups = 1;
  std::array<int, 4> x{}, w{}, y{};  // input (N, C, H, W), filters (O, C/groups, KH, KW), output
};
// From the props and the shapes of x (N, C, H, W) and w (O, C/groups, KH, KW); y by cuDNN's
// formula (cudnnGetConvolution2dForwardOutputDim): 1 + (H + 2 pad - ((KH - 1) dil + 1)) / stride.
// Throws std::invalid_argument when the ranks, channels or groups do not fit or the output is
// empty.
ConvDescriptorParams convDescriptor(const Conv2dParams& p, const Shape& x, const Shape& w);
// The same for the gradient ops, where the input's (gradient wrt the input) or the filters'
// (gradient wrt the filters) spatial size is given: x (N, C, H, W) from w, gy and (H, W);
// w (O, C/groups, KH, KW) from x, gy and (KH, KW). Checks that gy has the forward's output shape.
ConvDescriptorParams convGradInputsDescriptor(const Conv2dParams& p, const Shape& w,
                                              const Shape& gy, std::int64_t h, std::int64_t wd);
ConvDescriptorParams convGradWeightsDescriptor(const Conv2dParams& p, const Shape& x,
                                               const Shape& gy, std::int64_t kh, std::int64_t kw);

enum class PoolMode : std::uint8_t { Max, AverageCountPadding, AverageExcludePadding };

// cudnnSetPooling2dDescriptor and the NCHW dims of x and y.
struct PoolDescriptorParams {
  PoolMode mode = PoolMode::Max;
  int windowH = 1, windowW = 1, padH = 0, padW = 0, strideH = 1, strideW = 1;
  std::array<int, 4> x{}, y{};
};
// average: AvgPool2d's family (include_pad picks the mode), else max. y by cuDNN's formula
// (cudnnGetPooling2dForwardOutputDim): 1 + (H + 2 pad - window) / stride.
PoolDescriptorParams poolDescriptor(const Pool2dParams& p, bool average, const Shape& x);

// Softmax along `axis` as cuDNN's CUDNN_SOFTMAX_MODE_CHANNEL over an NCHW tensor: N = the product
// of the dims before the axis, C = the axis, H = the product after it, W = 1. axis may be
// negative (from the end), as the op's prop.
struct SoftmaxLayout {
  int n = 1, c = 1, h = 1, w = 1;
};
SoftmaxLayout softmaxLayout(const Shape& shape, int axis);

// "(8, 3, 32, 32)".
std::string dimsString(const std::array<int, 4>& dims);

}  // namespace tscope::engine::cuda
