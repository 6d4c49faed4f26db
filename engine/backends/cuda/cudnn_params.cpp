#include "engine/backends/cuda/cudnn_params.h"

#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/pool2d.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
void requireRank4(const Shape& s, const char* what) {
  if (s.size() != 4)
    throw std::invalid_argument(std::string("cuDNN: expected a 4-d ") + what + ", found " +
                                shapeToString(s));
}

// cudnnGetConvolution2dForwardOutputDim's formula, written as cuDNN documents it (not through the
// CPU's convOutputSize, so the test comparing the two can fail).
std::int64_t cudnnConvOutput(std::int64_t in, std::int64_t k, std::int64_t pad, std::int64_t stride,
                             std::int64_t dilation) {
  const std::int64_t span = in + 2 * pad - ((k - 1) * dilation + 1);
  return span < 0 ? 0 : 1 + span / stride;
}

void setGeometry(ConvDescriptorParams& d, const Conv2dParams& p) {
  d.padH = cudnnInt(p.padding[0], "padding");
  d.padW = cudnnInt(p.padding[1], "padding");
  d.strideH = cudnnInt(p.stride[0], "stride");
  d.strideW = cudnnInt(p.stride[1], "stride");
  d.dilationH = cudnnInt(p.dilation[0], "dilation");
  d.dilationW = cudnnInt(p.dilation[1], "dilation");
  d.groups = cudnnInt(p.groups, "groups");
}

std::array<int, 4> dims(const Shape& s, const char* what) {
  return {cudnnInt(s[0], what), cudnnInt(s[1], what), cudnnInt(s[2], what), cudnnInt(s[3], what)};
}

// x (N, C, H, W) and w (O, C/groups, KH, KW) set: checks the channels and computes y.
void finishConv(ConvDescriptorParams& d) {
  const int c = d.x[1], o = d.w[0];
  if (c % d.groups != 0 || d.w[1] * d.groups != c || o % d.groups != 0)
    throw std::invalid_argument("cuDNN convolution: the input " + dimsString(d.x) +
                                " and the filters " + dimsString(d.w) +
                                " do not fit groups=" + std::to_string(d.groups));
  const std::int64_t oh = cudnnConvOutput(d.x[2], d.w[2], d.padH, d.strideH, d.dilationH);
  const std::int64_t ow = cudnnConvOutput(d.x[3], d.w[3], d.padW, d.strideW, d.dilationW);
  if (oh < 1 || ow < 1)
    throw std::invalid_argument("cuDNN convolution: the padded input " + dimsString(d.x) +
                                " is smaller than the dilated filters " + dimsString(d.w));
  d.y = {d.x[0], o, cudnnInt(oh, "output height"), cudnnInt(ow, "output width")};
}
}  // namespace

int cudnnInt(std::int64_t value, const char* what) {
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string("cuDNN: ") + what + " " + std::to_string(value) +
                                " does not fit cuDNN's int");
  return static_cast<int>(value);
}

std::string dimsString(const std::array<int, 4>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
         ", " + std::to_string(d[3]) + ")";
}

ConvDescriptorParams convDescriptor(const Conv2dParams& p, const Shape& x, const Shape& w) {
  requireRank4(x, "input");
  requireRank4(w, "filter tensor");
  ConvDescriptorParams d;
  setGeometry(d, p);
  d.x = dims(x, "input dimension");
  d.w = dims(w, "filter dimension");
  finishConv(d);
  return d;
}

ConvDescriptorParams convGradInputsDescriptor(const Conv2dParams& p, const Shape& w,
                                              const Shape& gy, std::int64_t h, std::int64_t wd) {
  requireRank4(w, "filter tensor");
  requireRank4(gy, "output gradient");
  ConvDescriptorParams d;
  setGeometry(d, p);
  d.w = dims(w, "filter dimension");
  d.x = {cudnnInt(gy[0], "batch"), cudnnInt(w[1] * p.groups, "input channels"),
         cudnnInt(h, "input height"), cudnnInt(wd, "input width")};
  finishConv(d);
  if (d.y != dims(gy, "output gradient dimension"))
    throw std::invalid_argument("cuDNN convolution gradient: the output gradient " +
                                shapeToString(gy) + " is not the convolution's output " +
                                dimsString(d.y) + " for an input " + dimsString(d.x));
  return d;
}

ConvDescriptorParams convGradWeightsDescriptor(const Conv2dParams& p, const Shape& x,
                                               const Shape& gy, std::int64_t kh, std::int64_t kw) {
  requireRank4(x, "input");
  requireRank4(gy, "output gradient");
  ConvDescriptorParams d;
  setGeometry(d, p);
  d.x = dims(x, "input dimension");
  if (x[1] % p.groups != 0)
    throw std::invalid_argument(
        "cuDNN convolution gradient: the input " + shapeToString(x) +
        " has channels not divisible by groups=" + std::to_string(p.groups));
  d.w = {cudnnInt(gy[1], "output channels"), cudnnInt(x[1] / p.groups, "channels per group"),
         cudnnInt(kh, "filter height"), cudnnInt(kw, "filter width")};
  finishConv(d);
  if (d.y != dims(gy, "output gradient dimension"))
    throw std::invalid_argument("cuDNN convolution gradient: the output gradient " +
                                shapeToString(gy) + " is not the convolution's output " +
                                dimsString(d.y) + " for filters " + dimsString(d.w));
  return d;
}

PoolDescriptorParams poolDescriptor(const Pool2dParams& p, bool average, const Shape& x) {
  requireRank4(x, "pooling input");
  PoolDescriptorParams d;
  d.mode = !average       ? PoolMode::Max
           : p.includePad ? PoolMode::AverageCountPadding
                          : PoolMode::AverageExcludePadding;
  d.windowH = cudnnInt(p.kernel[0], "window");
  d.windowW = cudnnInt(p.kernel[1], "window");
  d.padH = cudnnInt(p.padding[0], "padding");
  d.padW = cudnnInt(p.padding[1], "padding");
  d.strideH = cudnnInt(p.stride[0], "stride");
  d.strideW = cudnnInt(p.stride[1], "stride");
  d.x = dims(x, "pooling input dimension");
  // cudnnGetPooling2dForwardOutputDim's formula.
  const int spanH = d.x[2] + 2 * d.padH - d.windowH, spanW = d.x[3] + 2 * d.padW - d.windowW;
  if (spanH < 0 || spanW < 0)
    throw std::invalid_argument("cuDNN pooling: the padded input " + dimsString(d.x) +
                                " is smaller than the window (" + std::to_string(d.windowH) + ", " +
                                std::to_string(d.windowW) + ")");
  d.y = {d.x[0], d.x[1], 1 + spanH / d.strideH, 1 + spanW / d.strideW};
  return d;
}

SoftmaxLayout softmaxLayout(const Shape& shape, int axis) {
  const int ndim = static_cast<int>(shape.size());
  const int a = axis < 0 ? axis + ndim : axis;
  if (ndim == 0 || a < 0 || a >= ndim)
    throw std::invalid_argument("cuDNN softmax: axis " + std::to_string(axis) +
                                " is not an axis of a tensor of shape " + shapeToString(shape));
  std::int64_t before = 1, after = 1;
  for (int i = 0; i < a; ++i) before *= shape[static_cast<std::size_t>(i)];
  for (int i = a + 1; i < ndim; ++i) after *= shape[static_cast<std::size_t>(i)];
  SoftmaxLayout l;
  l.n = cudnnInt(before, "softmax outer size");
  l.c = cudnnInt(shape[static_cast<std::size_t>(a)], "softmax axis size");
  l.h = cudnnInt(after, "softmax inner size");
  // cuDNN's tensor descriptors hold at most 2^31 - 1 elements.
  cudnnInt(before * shape[static_cast<std::size_t>(a)] * after, "softmax element count");
  return l;
}

bool batchNormAxesFit(int ndim, const std::vector<int>& axes) {
  if (axes.empty()) return false;
  std::vector<bool> reduced(static_cast<std::size_t>(std::max(ndim, 0)), false);
  for (int a : axes) {
    if (a < 0 || a >= ndim) return false;
    reduced[static_cast<std::size_t>(a)] = true;
  }
  // reduced... kept... reduced...: at most one switch from reduced to kept and one back.
  int switches = 0;
  for (std::size_t d = 1; d < reduced.size(); ++d)
    if (reduced[d] != reduced[d - 1]) ++switches;
  if (ndim == 0) return false;
  if (reduced.front() && reduced.back()) return switches == 0 || switches == 2;
  return switches <= 1;
}

BatchNormLayout batchNormLayout(const Shape& shape, const std::vector<int>& axes) {
  const int ndim = static_cast<int>(shape.size());
  if (!batchNormAxesFit(ndim, axes)) {
    std::string list;
    for (int a : axes) list += (list.empty() ? "" : ", ") + std::to_string(a);
    throw std::invalid_argument("cuDNN batch norm: axes [" + list + "] of a " +
                                std::to_string(ndim) +
                                "-d tensor are not a prefix and a suffix of its axes");
  }
  std::vector<bool> reduced(shape.size(), false);
  for (int a : axes) reduced[static_cast<std::size_t>(a)] = true;
  std::int64_t n = 1, c = 1, h = 1;
  bool seenKept = false;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) {
      seenKept = true;
      c *= shape[d];
    } else if (!seenKept) {
      n *= shape[d];
    } else {
      h *= shape[d];
    }
  }
  BatchNormLayout l;
  l.n = cudnnInt(n, "the batch-norm N (the reduced axes before the kept ones)");
  l.c = cudnnInt(c, "the batch-norm C (the kept axes)");
  l.h = cudnnInt(h, "the batch-norm H (the reduced axes after the kept ones)");
  l.m = n * h;
  return l;
}

}  // namespace tscope::engine::cuda
