// Conv and ConvTranspose with 1, 2 and 3 spatial axes on the engine's Conv2d and Conv2dGradInputs.
//
// Note [ONNX convolutions on Conv2d]: the engine has one 2-d convolution with symmetric padding
// (Conv2d) and its gradient wrt the input, which is the transposed convolution
// (Conv2dGradInputs(w, x, H, W): out[h] += x[i] w[k] at h = i * stride - pad + k * dilation, for
// the output size H given). The ONNX forms map onto them as follows.
// - 2-d Conv: one Conv2d; the symmetric part min(begin, end) of each axis' pads goes to the op,
//   the rest is zero padding of the input (a Join) so asymmetric and SAME pads keep the windows'
//   alignment.
// - 1-d: a size-1 axis is inserted before the spatial one (input and filters) and dropped after.
// - 3-d Conv with kD depth taps: output depth od reads input depths od * sd - pd + kd * dd. The kD
//   strided depth slices of the depth-padded input are stacked next to the channels, depth is
//   folded into the batch and the taps into the channels, giving ONE Conv2d over (N * OD, groups *
//   kD * C/groups, H, W) with filters (O, kD * C/groups, KH, KW); the channel order (group, tap,
//   channel) keeps each group's taps inside its group.
// - 2-d ConvTranspose: one Conv2dGradInputs with the begin pads as its padding when the output
//   size fits the op's geometry (0 <= output_padding + begin - end < stride, PyTorch's exports);
//   otherwise the full output (no padding) cropped / zero-extended to ONNX's pads.
// - 3-d ConvTranspose: depth is folded into the batch and the kD taps into the output channels of
//   one Conv2dGradInputs; with sd - 1 zero slabs put after each input depth, each tap's slabs are
//   added (IncSubtensor, contiguous so that export can write it) at depths id * sd + kd * dd of a
//   zero tensor, and the depth pads are cropped.
#include "engine/io/onnx/onnx_ops_nn_common.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>

namespace tscope::engine::io::onnx_import {

namespace {

// The rank of input 0 (3, 4 or 5) and its float dtype; fails otherwise.
int checkConvInputs(const NodeContext& ctx) {
  const int rank = ctx.rank(0);
  if (rank > 5)
    ctx.unsupported(ctx.opType() + " with " + std::to_string(rank - 2) + " spatial axes");
  if (rank < 3)
    ctx.fail("expected input 0 of rank 3 to 5 (N, C, spatial...), found " +
             ctx.input(0)->type().str());
  if (ctx.rank(1) != rank)
    ctx.fail("expected filters of rank " + std::to_string(rank) + ", found " +
             ctx.input(1)->type().str());
  const DType dtype = ctx.input(0)->type().dtype();
  if (dtype != DType::Float32 && dtype != DType::Float64)
    ctx.unsupported(ctx.opType() + " on " + std::string(dtypeName(dtype)) + " tensors");
  if (ctx.input(1)->type().dtype() != dtype)
    ctx.fail("expected filters of the input's dtype " + std::string(dtypeName(dtype)) + ", found " +
             ctx.input(1)->type().str());
  return rank;
}

// The kernel sizes: kernel_shape when given (checked against the filters' static sizes), else
// the filters' spatial sizes, which must then be static.
std::vector<std::int64_t> kernelSizes(const NodeContext& ctx, int nSpatial) {
  const TensorType& w = ctx.input(1)->type();
  std::vector<std::int64_t> attr = ctx.attrInts("kernel_shape", std::vector<std::int64_t>{});
  if (!attr.empty() && static_cast<int>(attr.size()) != nSpatial)
    ctx.fail("expected kernel_shape with " + std::to_string(nSpatial) + " entries, found " +
             std::to_string(attr.size()));
  std::vector<std::int64_t> kernel(static_cast<std::size_t>(nSpatial));
  for (int i = 0; i < nSpatial; ++i) {
    const std::int64_t dim = w.shape()[static_cast<std::size_t>(i + 2)];
    const auto k = static_cast<std::size_t>(i);
    if (!attr.empty() && dim != kUnknownDim && dim != attr[k])
      ctx.fail("kernel_shape " + std::to_string(attr[k]) + " disagrees with the filters " +
               w.str());
    if (attr.empty() && dim == kUnknownDim)
      ctx.unsupported(ctx.opType() + " with filters of dynamic spatial size and no kernel_shape");
    kernel[k] = attr.empty() ? dim : attr[k];
  }
  return kernel;
}

std::int64_t groupAttr(const NodeContext& ctx) {
  const std::int64_t group = ctx.attrInt("group", 1);
  if (group < 1) ctx.fail("expected group >= 1, found " + std::to_string(group));
  return group;
}

// Fails when a static padded input is smaller than the dilated kernel.
void checkWindowFits(const NodeContext& ctx, const std::vector<WindowAxis>& axes) {
  for (const WindowAxis& a : axes)
    if (a.known() && a.in + a.padBegin + a.padEnd < a.extent())
      ctx.fail("the padded input size " + std::to_string(a.in + a.padBegin + a.padEnd) +
               " is smaller than the dilated kernel (" + std::to_string(a.extent()) + ")");
}

// A spatial axis of size 1 with a 1-tap kernel: what 1-d ops add to use the 2-d ones.
constexpr WindowAxis kUnitAxis{1, 1, 1, 1, 0, 0};

// Conv2d with ONNX's pads on x (N, C, H, W) and w (O, C/group, KH, KW) (Note [ONNX convolutions on
// Conv2d]).
VarPtr conv2dPadded(const VarPtr& x, const VarPtr& w, const WindowAxis& h, const WindowAxis& wd,
                    std::int64_t group) {
  Conv2dParams params;
  params.groups = group;
  VarPtr padded = x;
  const WindowAxis* axes[2] = {&h, &wd};
  for (int i = 0; i < 2; ++i) {
    const WindowAxis& a = *axes[i];
    const std::int64_t symmetric = std::min(a.padBegin, a.padEnd);
    const auto k = static_cast<std::size_t>(i);
    params.stride[k] = a.stride;
    params.dilation[k] = a.dilation;
    params.padding[k] = symmetric;
    padded = padAxis(padded, 2 + i, a.padBegin - symmetric, a.padEnd - symmetric, 0.0);
  }
  return conv2d(padded, w, params);
}

// 3-d Conv as one Conv2d over depth slices folded into batch and channels.
VarPtr conv3d(const NodeContext& ctx, const VarPtr& x, const VarPtr& w,
              const std::vector<WindowAxis>& axes, std::int64_t group) {
  const WindowAxis& d = axes[0];
  if (!d.known()) ctx.unsupported("3-d Conv on an input of dynamic depth");
  const VarPtr padded = padAxis(x, 2, d.padBegin, d.padEnd, 0.0);
  const std::int64_t outDepth = floorDiv(d.in + d.padBegin + d.padEnd - d.extent(), d.stride) + 1;
  std::vector<VarPtr> taps;  // each (N, C, OD, H, W)
  for (std::int64_t kd = 0; kd < d.kernel; ++kd) {
    const std::int64_t start = kd * d.dilation;
    taps.push_back(slice(padded, 2, start, start + (outDepth - 1) * d.stride + 1, d.stride));
  }
  const VarPtr stacked = taps.size() == 1 ? expandDims(taps[0], 1) : stack(taps, 1);
  const VarPtr n = shapeI(x, 0), h = shapeI(x, 3), wd = shapeI(x, 4), cg = shapeI(w, 1);
  const VarPtr g = constantInt(group), kD = constantInt(d.kernel), od = constantInt(outDepth);
  // (N, kD, g, C/g, OD, H, W) -> (N, OD, g, kD, C/g, H, W) -> (N * OD, g * kD * C/g, H, W).
  const VarPtr split = reshape(stacked, ShapeExpr{n, kD, g, cg, od, h, wd});
  const VarPtr x4 = reshape(transpose(split, {0, 4, 2, 1, 3, 5, 6}),
                            ShapeExpr{constantInt(-1), dimProduct(dimProduct(g, kD), cg), h, wd});
  // (O, C/g, kD, KH, KW) -> (O, kD, C/g, KH, KW) -> (O, kD * C/g, KH, KW).
  const VarPtr w4 =
      reshape(transpose(w, {0, 2, 1, 3, 4}),
              ShapeExpr{shapeI(w, 0), dimProduct(kD, cg), shapeI(w, 3), shapeI(w, 4)});
  const VarPtr y4 = conv2dPadded(x4, w4, axes[1], axes[2], group);  // (N * OD, O, OH, OW)
  const VarPtr y = reshape(y4, ShapeExpr{n, od, shapeI(y4, 1), shapeI(y4, 2), shapeI(y4, 3)});
  return transpose(y, {0, 2, 1, 3, 4});
}

// Checks the channel counts where the types know them. Conv: filters (O, C/group, ...) with O
// divisible by group. ConvTranspose: filters (C, Cout/group, ...) with C divisible by group.
void checkChannels(const NodeContext& ctx, std::int64_t group, bool transposed) {
  const std::int64_t c = ctx.input(0)->type().shape()[1];
  const auto& w = ctx.input(1)->type().shape();
  const std::int64_t expected =
      transposed ? w[0] : (w[1] == kUnknownDim ? kUnknownDim : w[1] * group);
  if (c != kUnknownDim && expected != kUnknownDim && c != expected)
    ctx.fail("expected filters for " + std::to_string(c) + " input channels in " +
             std::to_string(group) + " group(s), found " + ctx.input(1)->type().str());
  if (w[0] != kUnknownDim && w[0] % group != 0)
    ctx.fail("expected filters whose dimension 0 divides into group=" + std::to_string(group) +
             " groups, found " + ctx.input(1)->type().str());
}

std::vector<VarPtr> convertConv(NodeContext& ctx) {
  const int rank = checkConvInputs(ctx);
  const int nSpatial = rank - 2;
  const std::int64_t group = groupAttr(ctx);
  checkChannels(ctx, group, false);
  std::vector<WindowAxis> axes = readWindow(ctx, kernelSizes(ctx, nSpatial), true);
  applyAutoPad(ctx, axes);
  checkWindowFits(ctx, axes);
  const VarPtr& x = ctx.input(0);
  const VarPtr& w = ctx.input(1);
  VarPtr y;
  if (nSpatial == 1)
    y = squeeze(conv2dPadded(expandDims(x, 2), expandDims(w, 2), kUnitAxis, axes[0], group), 2);
  else if (nSpatial == 2)
    y = conv2dPadded(x, w, axes[0], axes[1], group);
  else
    y = conv3d(ctx, x, w, axes, group);
  if (ctx.hasInput(2)) y = add(y, channelVector(ctx.input(2), rank));
  return {y};
}

// --- ConvTranspose -------------------------------------------------------------------------------

// One spatial axis of a transposed convolution: its pads resolved (output_shape, auto_pad) and
// output_padding. The output size is stride * (in - 1) + extent + outputPadding - pads.
struct TransposedAxis {
  WindowAxis window;
  std::int64_t outputPadding = 0;

  // The output before cropping: stride * (in - 1) + extent.
  std::int64_t full() const { return window.stride * (window.in - 1) + window.extent(); }
  // The op's own geometry holds with the begin pad as padding (Note [ONNX convolutions on Conv2d]).
  bool direct() const {
    const std::int64_t slack = outputPadding + window.padBegin - window.padEnd;
    return window.padBegin >= 0 && slack >= 0 && slack < window.stride;
  }
};

// ConvTranspose over x (N, Cin, H, W) and w (Cin, Cout/group, KH, KW): one Conv2dGradInputs, with
// a crop or zero extension where the pads do not fit its geometry.
VarPtr convTranspose2d(const VarPtr& x, const VarPtr& w, const TransposedAxis& h,
                       const TransposedAxis& wd, std::int64_t group) {
  Conv2dParams params;
  params.groups = group;
  const TransposedAxis* axes[2] = {&h, &wd};
  const bool direct = h.direct() && wd.direct();
  VarPtr sizes[2];
  for (int i = 0; i < 2; ++i) {
    const TransposedAxis& t = *axes[i];
    const WindowAxis& a = t.window;
    const auto k = static_cast<std::size_t>(i);
    params.stride[k] = a.stride;
    params.dilation[k] = a.dilation;
    params.padding[k] = direct ? a.padBegin : 0;
    // direct: the ONNX output size; else the full output.
    const std::int64_t shrink = direct ? a.padBegin + a.padEnd - t.outputPadding : 0;
    if (a.known())
      sizes[i] = constantInt(t.full() - shrink);
    else  // stride * (in - 1) + extent - shrink, symbolically
      sizes[i] = add(mul(shapeI(x, 2 + i), constantInt(a.stride)),
                     constantInt(a.extent() - a.stride - shrink));
  }
  VarPtr y = conv2dGradInputs(w, x, sizes[0], sizes[1], params);
  if (!direct)
    for (int i = 0; i < 2; ++i)
      y = cropOrExtend(y, 2 + i, axes[i]->window.padBegin,
                       axes[i]->window.padEnd - axes[i]->outputPadding, 0.0);
  return y;
}

// 3-d ConvTranspose: one Conv2dGradInputs over depth folded into the batch and taps into the
// output channels, then a scatter-add of each tap's slab along depth.
VarPtr convTranspose3d(const NodeContext& ctx, const VarPtr& x, const VarPtr& w,
                       const std::vector<TransposedAxis>& axes, std::int64_t group) {
  const TransposedAxis& d = axes[0];
  const WindowAxis& dw = d.window;
  if (!dw.known()) ctx.unsupported("3-d ConvTranspose on an input of dynamic depth");
  const VarPtr n = shapeI(x, 0), h = shapeI(x, 3), wd = shapeI(x, 4);
  const VarPtr cin = shapeI(w, 0), coutg = shapeI(w, 1);
  const VarPtr g = constantInt(group), kD = constantInt(dw.kernel), depth = constantInt(dw.in);
  // x (N, Cin, D, H, W) -> (N * D, Cin, H, W).
  const VarPtr x4 = reshape(transpose(x, {0, 2, 1, 3, 4}), ShapeExpr{constantInt(-1), cin, h, wd});
  // w (Cin, Cout/g, kD, KH, KW) -> (Cin, kD * Cout/g, KH, KW): output channel (group, tap,
  // channel).
  const VarPtr w4 = reshape(transpose(w, {0, 2, 1, 3, 4}),
                            ShapeExpr{cin, dimProduct(kD, coutg), shapeI(w, 3), shapeI(w, 4)});
  const VarPtr z4 = convTranspose2d(x4, w4, axes[1], axes[2], group);
  const VarPtr oh = shapeI(z4, 2), ow = shapeI(z4, 3);
  VarPtr z = reshape(z4, ShapeExpr{n, depth, g, kD, coutg, oh, ow});
  // Output depth id * sd + kd * dd receives tap kd of input depth id: sd - 1 zero slabs go after
  // each input depth (the last ones dropped), then each tap adds its slab at offset kd * dd.
  const std::int64_t spread = (dw.in - 1) * dw.stride + 1;
  if (dw.stride > 1) {
    const VarPtr slots = padAxis(expandDims(z, 2), 2, 0, dw.stride - 1, 0.0);
    z = slice(reshape(slots, ShapeExpr{n, constantInt(dw.in * dw.stride), g, kD, coutg, oh, ow}), 1,
              IdxBound(), spread);
  }
  const std::int64_t full = d.full();
  VarPtr acc = zeros(ShapeExpr{n, constantInt(full), g, coutg, oh, ow}, x->type().dtype());
  for (std::int64_t kd = 0; kd < dw.kernel; ++kd) {
    const std::int64_t start = kd * dw.dilation;
    acc = incSubtensor(slice(acc, 1, start, start + spread), select(z, 3, kd));
  }
  const VarPtr y = transpose(
      reshape(acc, ShapeExpr{n, constantInt(full), dimProduct(g, coutg), oh, ow}), {0, 2, 1, 3, 4});
  return cropOrExtend(y, 2, dw.padBegin, dw.padEnd - d.outputPadding, 0.0);
}

// The axes of a ConvTranspose with pads resolved: output_shape (spatial sizes, or N, C and
// spatial sizes) and auto_pad SAME_* give total = full + output_padding - output, split as the ONNX
// spec says (SAME_UPPER: floor(total / 2) at the beginning; otherwise the larger half there). A
// negative total (an output larger than full) extends the output with zeros.
std::vector<TransposedAxis> transposedAxes(const NodeContext& ctx, int nSpatial) {
  const std::vector<WindowAxis> windows = readWindow(ctx, kernelSizes(ctx, nSpatial), true);
  const auto n = static_cast<std::size_t>(nSpatial);
  const auto outputPadding = ctx.attrInts("output_padding", std::vector<std::int64_t>(n, 0));
  std::vector<std::int64_t> outputShape = ctx.attrInts("output_shape", std::vector<std::int64_t>{});
  if (outputShape.size() == n + 2) outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (outputPadding.size() != n || (!outputShape.empty() && outputShape.size() != n))
    ctx.fail("expected output_padding and output_shape with " + std::to_string(n) +
             " entries (one per spatial axis)");
  const std::string mode = readAutoPad(ctx);
  const bool same = mode == "SAME_UPPER" || mode == "SAME_LOWER";
  std::vector<TransposedAxis> axes(n);
  for (std::size_t i = 0; i < n; ++i) {
    TransposedAxis& t = axes[i];
    t.window = windows[i];
    t.outputPadding = outputPadding[i];
    if (t.outputPadding < 0)
      ctx.fail("expected output_padding >= 0, found " + std::to_string(t.outputPadding));
    WindowAxis& a = t.window;
    if (!outputShape.empty() || same) {
      if (!a.known())
        ctx.unsupported("ConvTranspose with output_shape or auto_pad " + mode +
                        " on an input of dynamic spatial size");
      const std::int64_t out = outputShape.empty() ? a.in * a.stride : outputShape[i];
      if (out < 1) ctx.fail("expected output_shape entries >= 1, found " + std::to_string(out));
      const std::int64_t total = t.full() + t.outputPadding - out;
      const std::int64_t half = floorDiv(total, 2);
      a.padBegin = mode == "SAME_UPPER" ? half : total - half;
      a.padEnd = total - a.padBegin;
    } else if (mode == "VALID") {
      a.padBegin = a.padEnd = 0;
    }
    if (a.known() && t.full() + t.outputPadding - a.padBegin - a.padEnd < 1)
      ctx.fail("the pads leave an empty output along spatial axis " + std::to_string(i));
  }
  return axes;
}

std::vector<VarPtr> convertConvTranspose(NodeContext& ctx) {
  const int rank = checkConvInputs(ctx);
  const int nSpatial = rank - 2;
  const std::int64_t group = groupAttr(ctx);
  checkChannels(ctx, group, true);
  const std::vector<TransposedAxis> axes = transposedAxes(ctx, nSpatial);
  const VarPtr& x = ctx.input(0);
  const VarPtr& w = ctx.input(1);
  VarPtr y;
  if (nSpatial == 1)
    y = squeeze(convTranspose2d(expandDims(x, 2), expandDims(w, 2), TransposedAxis{kUnitAxis, 0},
                                axes[0], group),
                2);
  else if (nSpatial == 2)
    y = convTranspose2d(x, w, axes[0], axes[1], group);
  else
    y = convTranspose3d(ctx, x, w, axes, group);
  if (ctx.hasInput(2)) y = add(y, channelVector(ctx.input(2), rank));
  return {y};
}

// Note [Integer convolutions]: ConvInteger is Conv of (x - x_zero_point) and (w - w_zero_point)
// in float64, exact while every sum of products stays below 2^53 (8-bit operands: any kernel),
// cast to int32; QLinearConv requantizes that sum plus the int32 bias B with x_scale * w_scale /
// y_scale (w_scale per output channel or one), rounds half to even, adds y_zero_point and
// saturates, as ONNX's reference.
VarPtr shifted(const NodeContext& ctx, int value, int zeroPoint, bool perChannel) {
  VarPtr v = cast(ctx.input(value), DType::Float64);
  if (!ctx.hasInput(zeroPoint)) return v;
  VarPtr zp = cast(ctx.input(zeroPoint), DType::Float64);
  const int rank = ctx.rank(value);
  if (perChannel && zp->type().ndim() == 1 &&
      !(zp->type().isDimKnown(0) && zp->type().shape()[0] == 1)) {
    std::vector<int> order(static_cast<std::size_t>(rank), DimShuffle::kNewAxis);
    order[0] = 0;  // w (M, C/group, k...): one zero point per output channel
    zp = dimshuffle(zp, order);
  } else if (zp->type().ndim() == 1) {
    zp = reshape(zp, std::vector<std::int64_t>{});
  }
  return sub(v, zp);
}

std::vector<VarPtr> convertConvInteger(NodeContext& ctx) {
  NodeContext conv = ctx.withInputs({shifted(ctx, 0, 2, false), shifted(ctx, 1, 3, true)});
  return {cast(convertConv(conv)[0], DType::Int32)};
}

std::vector<VarPtr> convertQLinearConv(NodeContext& ctx) {
  const DType out = ctx.input(7)->type().dtype();
  double lo = 0, hi = 255;
  if (out == DType::Int8)
    lo = -128, hi = 127;
  else if (out != DType::UInt8)
    ctx.unsupported("QLinearConv to " + std::string(dtypeName(out)));
  std::vector<VarPtr> operands{shifted(ctx, 0, 2, false), shifted(ctx, 3, 5, true)};
  if (ctx.hasInput(8)) operands.push_back(cast(ctx.input(8), DType::Float64));
  NodeContext conv = ctx.withInputs(std::move(operands));
  const VarPtr acc = convertConv(conv)[0];
  const int rank = acc->type().ndim();
  const DType f = DType::Float64;
  VarPtr wScale = cast(ctx.input(4), f);
  if (wScale->type().ndim() == 1) wScale = channelVector(wScale, rank);
  const VarPtr multiplier = trueDiv(mul(cast(ctx.input(1), f), wScale), cast(ctx.input(6), f));
  const VarPtr y = add(round(mul(acc, multiplier)), cast(ctx.input(7), f));
  return {cast(clip(y, constant(lo, f), constant(hi, f)), out)};
}

}  // namespace

void registerConvConverters(ConverterTable& table) {
  table.add("ConvInteger", convertConvInteger);
  table.add("QLinearConv", convertQLinearConv);
  table.add("Conv", convertConv);
  table.add("ConvTranspose", convertConvTranspose);
}

}  // namespace tscope::engine::io::onnx_import
