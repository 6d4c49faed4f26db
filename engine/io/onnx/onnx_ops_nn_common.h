#pragma once
// Shared by the neural-network converters (onnx_ops_nn*.cpp): the window geometry of Conv,
// ConvTranspose, MaxPool and AveragePool (kernel, strides, dilations, pads, auto_pad), and the
// padding and sliding-window compositions they fall back on where the engine's 2-d ops
// (Conv2d, Conv2dGradInputs, MaxPool2d, AvgPool2d: symmetric padding only) do not fit.

#include "engine/io/onnx/onnx_convert.h"

#include <cstdint>
#include <vector>

namespace tscope::engine::io::onnx_import {

// One spatial axis of a windowed op, in ONNX's terms: window i covers the input positions
// i * stride - padBegin + j * dilation for j in [0, kernel). Pads may be negative only where a
// converter says so (ConvTranspose's output_shape can ask for a larger output than the pads give).
struct WindowAxis {
  std::int64_t in = kUnknownDim;  // the input size along the axis; kUnknownDim when not static
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t dilation = 1;
  std::int64_t padBegin = 0;
  std::int64_t padEnd = 0;

  // The span of one window: dilation * (kernel - 1) + 1.
  std::int64_t extent() const { return dilation * (kernel - 1) + 1; }
  bool known() const { return in != kUnknownDim; }
};

// Reads strides, dilations (when withDilations; else 1) and the explicit pads of a node over the
// spatial axes 2.. of input 0, for the kernel sizes given (auto_pad is not applied). Fails on
// lists of the wrong length, non-positive kernels, strides or dilations and negative pads.
std::vector<WindowAxis> readWindow(const NodeContext& ctx, const std::vector<std::int64_t>& kernel,
                                   bool withDilations);
// Applies auto_pad the way Conv and the pools read it: SAME_UPPER / SAME_LOWER give the output
// ceil(in / stride), the total padding split evenly with the odd one at the end (UPPER) or the
// beginning (LOWER), and need static spatial sizes; VALID drops the pads; NOTSET keeps them.
void applyAutoPad(const NodeContext& ctx, std::vector<WindowAxis>& axes);
// The auto_pad attribute ("NOTSET" when absent or empty); fails on an unknown value.
std::string readAutoPad(const NodeContext& ctx);

// --- compositions ------------------------------------------------------------------------------
// x with `before` and `after` elements of `value` added along axis (a Join with Alloc blocks; x
// itself when both are 0). Works with unknown sizes on the other axes.
VarPtr padAxis(const VarPtr& x, int axis, std::int64_t before, std::int64_t after, double value);
// x with `dropBegin` elements removed at the start of axis and `dropEnd` at its end; a negative
// count adds that many elements of `value` instead. Both counts are static even where x's size is
// not, so this works with unknown sizes.
VarPtr cropOrExtend(const VarPtr& x, int axis, std::int64_t dropBegin, std::int64_t dropEnd,
                    double value);
// The max (or the sum) over each window along one axis of an already padded x, as `kernel`
// strided slices combined elementwise: out[o] = reduce_j x[o * stride + j * dilation] for o in
// [0, count). Needs count >= 1 and (count - 1) * stride + dilation * (kernel - 1) < x's size.
VarPtr windowReduce(const VarPtr& x, int axis, std::int64_t kernel, std::int64_t stride,
                    std::int64_t dilation, std::int64_t count, bool takeMax);
// A per-channel vector (C) as (1, C, 1, ..., 1) of the given rank, to broadcast against NC...
VarPtr channelVector(const VarPtr& v, int rank);
// a * b for 0-d int64 shape entries, folded when both are constants.
VarPtr dimProduct(const VarPtr& a, const VarPtr& b);
// floor(a / b) for integers (C++ rounds towards zero).
std::int64_t floorDiv(std::int64_t a, std::int64_t b);

// --- the converters of each file, registered by registerNnConverters ---------------------------
void registerConvConverters(ConverterTable& table);  // Conv, ConvTranspose
void registerPoolConverters(ConverterTable& table);  // MaxPool, AveragePool, Global*Pool, LRN

}  // namespace tscope::engine::io::onnx_import
