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
#include <vector>

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

// Note [Batch norm on cuDNN]: BatchNormTrain / BatchNormInference over `axes` as cuDNN's
// CUDNN_BATCHNORM_SPATIAL over an NCHW tensor, which normalizes per C over N, H and W: N = the
// product of the reduced axes before the kept ones, C = the product of the kept axes, H = the
// product of the reduced axes after them, W = 1. This needs the kept axes to be one block (the
// reduced axes a prefix and a suffix of x's axes: NCHW with axes [0, 2, 3], (N, F) with [0],
// NHWC with [0, 1, 2]); other axis sets (axes [1] of a 3-d x) stay on the CPU. The statistics'
// keepdims tensors, contiguous, are then C values in the kept axes' row-major order, which is
// the order of cuDNN's 1xCx1x1 descriptor. m = N H is the number of elements per statistic.
struct BatchNormLayout {
  int n = 1, c = 1, h = 1, w = 1;
  std::int64_t m = 1;
};
// Whether the axes of a rank-ndim x fit (a prefix and a suffix, at least one axis).
bool batchNormAxesFit(int ndim, const std::vector<int>& axes);
// Throws std::invalid_argument when they do not fit or a product exceeds cuDNN's int.
BatchNormLayout batchNormLayout(const Shape& shape, const std::vector<int>& axes);
// cuDNN refuses an epsilon below CUDNN_BN_MIN_EPSILON: the placement rule's test.
inline bool batchNormEpsilonFits(double epsilon, double minimum) {
  return epsilon >= minimum;
}
// CUDNN_BN_MIN_EPSILON of the cuDNN this build compiled against (cudnn_rules.cpp; built with
// cuDNN only).
double cudnnBatchNormMinEpsilon();

// "(8, 3, 32, 32)".
std::string dimsString(const std::array<int, 4>& dims);

}  // namespace tscope::engine::cuda
