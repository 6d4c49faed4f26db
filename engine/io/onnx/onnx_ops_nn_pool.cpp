// MaxPool and AveragePool (1 to 3 spatial axes), GlobalAveragePool, GlobalMaxPool and LRN.
//
// Note [ONNX pooling on Pool2d]: the engine pools 2-d (MaxPool2d, AvgPool2d) with symmetric
// padding smaller than the kernel, floor rounding, and an average that divides by KH * KW
// (include_pad) or by the window's elements inside its input. An ONNX pool over H and W becomes
// one such op where it can:
// - Output sizes are ONNX's: floor or ceil of (in + pads - kernel) / stride + 1, where in ceil mode
//   a last window that would start in the end padding is dropped (PyTorch's rule, which ONNX's
//   spec states from opset 19; ONNX 1.12's shape inference still counts it, so a model without
//   the declared output size PyTorch writes fails the importer's type check there). Ceil mode
//   thus extends the end padding so that floor rounding gives the same windows.
// - Per axis the op takes p = min(begin, end, kernel - 1) as its padding; the remaining pads are
//   added to the input explicitly (-inf for max, which never wins, 0 for average).
// - Max needs nothing more. For average, the divisor of every window is compared with ONNX's:
//   count_include_pad counts the pads but not the ceil-mode extension, otherwise only the image.
//   When the op's divisor (with include_pad either way) matches at every output position the op
//   is the whole result; otherwise the op runs with include_pad and the result is scaled by a
//   constant (KH * KW / ONNX's divisor) per output position.
// - 1-d pools insert a size-1 axis; 3-d pools fold depth into the channels, pool H and W as
//   above, then pool depth with `kernel` strided slices combined by max / add (windowReduce) and,
//   for the average, a per-depth divisor: the window counts of a box are products over the axes,
//   so averaging axis by axis is exact. MaxPool with dilations uses the slices on every axis.
#include "engine/io/onnx/onnx_ops_nn_common.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>
#include <limits>

namespace tscope::engine::io::onnx_import {

namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

// One pooled axis: the ONNX window, the output size (static, or kUnknownDim), and the end pad
// including the ceil-mode extension.
struct PoolAxis {
  WindowAxis window;
  std::int64_t out = kUnknownDim;
  std::int64_t padEnd = 0;  // >= window.padEnd
};

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
  return -floorDiv(-a, b);
}

// The output size and the extended end pad of each axis (Note [ONNX pooling on Pool2d]).
std::vector<PoolAxis> planPool(const NodeContext& ctx, const std::vector<WindowAxis>& windows,
                               bool ceilMode) {
  std::vector<PoolAxis> axes;
  for (const WindowAxis& a : windows) {
    PoolAxis p{a, kUnknownDim, a.padEnd};
    if (a.known()) {
      const std::int64_t span = a.in + a.padBegin + a.padEnd - a.extent();
      if (span < 0)
        ctx.fail("the padded input size " + std::to_string(a.in + a.padBegin + a.padEnd) +
                 " is smaller than the kernel (" + std::to_string(a.extent()) + ")");
      p.out = (ceilMode ? ceilDiv(span, a.stride) : floorDiv(span, a.stride)) + 1;
      if (ceilMode && (p.out - 1) * a.stride >= a.in + a.padBegin) --p.out;
      p.padEnd = std::max(a.padEnd, (p.out - 1) * a.stride + a.extent() - a.in - a.padBegin);
    } else if (ceilMode) {
      ctx.unsupported(ctx.opType() + " with ceil_mode on an input of dynamic spatial size");
    }
    axes.push_back(p);
  }
  return axes;
}

// ONNX's divisor of each average window along one axis (static sizes).
std::vector<double> onnxCounts(const PoolAxis& p, bool includePad) {
  const WindowAxis& a = p.window;
  std::vector<double> counts;
  for (std::int64_t o = 0; o < p.out; ++o) {
    const std::int64_t u = o * a.stride - a.padBegin;
    const std::int64_t hi = std::min(u + a.kernel, includePad ? a.in + a.padEnd : a.in);
    counts.push_back(static_cast<double>(hi - (includePad ? u : std::max<std::int64_t>(u, 0))));
  }
  return counts;
}

// The engine op's padding on an axis (the rest is explicit).
std::int64_t opPadding(const PoolAxis& p) {
  return std::min({p.window.padBegin, p.padEnd, p.window.kernel - 1});
}

// The engine op's divisor of each window along one axis: its input is the image with the explicit
// pads, [-(begin - p), in + end - p) in ONNX's coordinates.
std::vector<double> opCounts(const PoolAxis& p, bool includePad) {
  const WindowAxis& a = p.window;
  const std::int64_t pad = opPadding(p);
  std::vector<double> counts;
  for (std::int64_t o = 0; o < p.out; ++o) {
    const std::int64_t u = o * a.stride - a.padBegin;
    const std::int64_t n =
        std::min(u + a.kernel, a.in + p.padEnd - pad) - std::max(u, -(a.padBegin - pad));
    counts.push_back(static_cast<double>(includePad ? a.kernel : n));
  }
  return counts;
}

// MaxPool2d / AvgPool2d over x (N, C, H, W) with ONNX's geometry on H and W.
VarPtr pool2d(const NodeContext& ctx, const VarPtr& x, const PoolAxis& h, const PoolAxis& w,
              bool takeMax, bool countIncludePad) {
  const PoolAxis* axes[2] = {&h, &w};
  Pool2dParams params;
  VarPtr padded = x;
  for (int i = 0; i < 2; ++i) {
    const PoolAxis& p = *axes[i];
    const std::int64_t pad = opPadding(p);
    const auto k = static_cast<std::size_t>(i);
    params.kernel[k] = p.window.kernel;
    params.stride[k] = p.window.stride;
    params.padding[k] = pad;
    padded =
        padAxis(padded, 2 + i, p.window.padBegin - pad, p.padEnd - pad, takeMax ? kMinusInf : 0.0);
  }
  // The op's floor rounding gives more windows than ONNX's ceil mode keeps only where a window
  // starting in the end padding was dropped (an end pad >= the kernel); drop them here too.
  const auto cropToOutput = [&](VarPtr y) {
    for (int i = 0; i < 2; ++i) {
      const PoolAxis& p = *axes[i];
      if (p.out == kUnknownDim) continue;
      const WindowAxis& a = p.window;
      if (floorDiv(a.in + a.padBegin + p.padEnd - a.kernel, a.stride) + 1 > p.out)
        y = slice(y, 2 + i, IdxBound(), p.out);
    }
    return y;
  };
  if (takeMax) return cropToOutput(maxPool2d(padded, params));

  const bool known = h.window.known() && w.window.known();
  if (!known) {
    // Floor mode (planPool): include_pad windows never leave the pads, so the op's KH * KW is
    // ONNX's divisor; without include_pad it is when no pad is explicit.
    const bool explicitPads =
        h.window.padBegin != h.window.padEnd || w.window.padBegin != w.window.padEnd ||
        opPadding(h) != h.window.padBegin || opPadding(w) != w.window.padBegin;
    if (!countIncludePad && explicitPads)
      ctx.unsupported("AveragePool with asymmetric pads on an input of dynamic spatial size");
    params.includePad = countIncludePad;
    return avgPool2d(padded, params);
  }
  const auto onnxH = onnxCounts(h, countIncludePad), onnxW = onnxCounts(w, countIncludePad);
  for (bool flag : {countIncludePad, !countIncludePad}) {
    if (opCounts(h, flag) == onnxH && opCounts(w, flag) == onnxW) {
      params.includePad = flag;
      return cropToOutput(avgPool2d(padded, params));
    }
  }
  params.includePad = true;
  const double window = static_cast<double>(h.window.kernel * w.window.kernel);
  std::vector<double> scale;
  for (double ch : onnxH)
    for (double cw : onnxW) scale.push_back(window / (ch * cw));
  const Tensor factor = Tensor::fromDoubles(x->type().dtype(), {h.out, w.out}, scale);
  return mul(cropToOutput(avgPool2d(padded, params)), constant(factor));
}

// Pools one axis of x with strided slices (Note [ONNX pooling on Pool2d]); static sizes only.
VarPtr poolAxisBySlices(const VarPtr& x, int axis, const PoolAxis& p, bool takeMax,
                        bool countIncludePad) {
  const WindowAxis& a = p.window;
  const VarPtr padded = padAxis(x, axis, a.padBegin, p.padEnd, takeMax ? kMinusInf : 0.0);
  const VarPtr pooled = windowReduce(padded, axis, a.kernel, a.stride, a.dilation, p.out, takeMax);
  if (takeMax) return pooled;
  std::vector<double> inverse;
  for (double c : onnxCounts(p, countIncludePad)) inverse.push_back(1.0 / c);
  Shape shape(static_cast<std::size_t>(x->type().ndim()), 1);
  shape[static_cast<std::size_t>(axis)] = p.out;
  return mul(pooled, constant(Tensor::fromDoubles(x->type().dtype(), shape, inverse)));
}

// Note [MaxPool indices]: MaxPool's second output holds, for each output, the flat index into x
// (row-major over N, C and the spatial axes; with storage_order 1 the spatial part is
// column-major) of the first element of its window, in window order, that equals the maximum y.
// The windows are read as one strided slice per kernel offset of x padded with -inf, each with a
// constant offset map and a mask of the positions inside x; walking the offsets from the last to
// the first, idx = where(candidate == y && inside, base + offset, idx) leaves the first match.
// base = (n * C + c) * (the spatial size) comes from the run-time N and C. Static spatial sizes.
VarPtr maxPoolIndices(const NodeContext& ctx, const VarPtr& x, const VarPtr& y,
                      const std::vector<PoolAxis>& axes) {
  const auto nAxes = axes.size();
  for (const PoolAxis& p : axes)
    if (!p.window.known() || p.out == kUnknownDim)
      ctx.unsupported("MaxPool's Indices output on an input of dynamic spatial size");
  const bool columnMajor = ctx.attrInt("storage_order", 0) != 0;
  std::vector<std::int64_t> placeValue(nAxes, 1);  // the index step of each spatial axis
  std::int64_t spatial = 1;
  for (std::size_t i = 0; i < nAxes; ++i) {
    const std::size_t a = columnMajor ? i : nAxes - 1 - i;
    placeValue[a] = spatial;
    spatial *= axes[a].window.in;
  }
  // base: (N, C, 1, ..., 1) int64.
  const VarPtr n = arange(shapeI(x, 0)), c = arange(shapeI(x, 1));
  std::vector<int> nOrder{0, DimShuffle::kNewAxis}, cOrder{DimShuffle::kNewAxis, 0};
  for (std::size_t i = 0; i < nAxes; ++i) {
    nOrder.push_back(DimShuffle::kNewAxis);
    cOrder.push_back(DimShuffle::kNewAxis);
  }
  const VarPtr base = mul(add(mul(dimshuffle(n, nOrder), shapeI(x, 1)), dimshuffle(c, cOrder)),
                          constantInt(spatial));
  VarPtr padded = x;
  for (std::size_t i = 0; i < nAxes; ++i)
    padded = padAxis(padded, 2 + static_cast<int>(i), axes[i].window.padBegin, axes[i].padEnd,
                     kMinusInf);
  Shape outShape(2, 1);
  std::int64_t outCount = 1;
  for (const PoolAxis& p : axes) {
    outShape.push_back(p.out);
    outCount *= p.out;
  }
  std::int64_t candidates = 1;
  for (const PoolAxis& p : axes) candidates *= p.window.kernel;
  // The offset maps are built while importing, and each kernel position is a few nodes: at most
  // 4096 kernel positions and 2^22 entries in all, so that a bogus kernel or size cannot make the
  // import build millions of nodes or allocate gigabytes.
  if (candidates > 4096 || outCount > (std::int64_t{1} << 22) / candidates)
    ctx.unsupported("MaxPool's Indices output over " + std::to_string(outCount) +
                    " output positions with " + std::to_string(candidates) +
                    " kernel positions (at most 4096 kernel positions and 2^22 together)");
  VarPtr idx = constantInt(0);
  for (std::int64_t k = candidates - 1; k >= 0; --k) {
    std::vector<std::int64_t> offset(nAxes);  // the kernel offset of candidate k, row-major
    for (std::int64_t rest = k, i = static_cast<std::int64_t>(nAxes) - 1; i >= 0; --i) {
      offset[static_cast<std::size_t>(i)] = rest % axes[static_cast<std::size_t>(i)].window.kernel;
      rest /= axes[static_cast<std::size_t>(i)].window.kernel;
    }
    VarPtr value = padded;
    for (std::size_t i = 0; i < nAxes; ++i) {
      const WindowAxis& a = axes[i].window;
      const std::int64_t start = offset[i] * a.dilation;
      value = slice(value, 2 + static_cast<int>(i), start, start + (axes[i].out - 1) * a.stride + 1,
                    a.stride);
    }
    std::vector<double> flat(static_cast<std::size_t>(outCount)), inside(flat.size());
    for (std::int64_t o = 0; o < outCount; ++o) {
      std::int64_t rest = o, at = 0;
      bool ok = true;
      for (std::int64_t i = static_cast<std::int64_t>(nAxes) - 1; i >= 0; --i) {
        const auto u = static_cast<std::size_t>(i);
        const WindowAxis& a = axes[u].window;
        const std::int64_t out = rest % axes[u].out;
        rest /= axes[u].out;
        const std::int64_t pos = out * a.stride - a.padBegin + offset[u] * a.dilation;
        ok = ok && pos >= 0 && pos < a.in;
        at += pos * placeValue[u];
      }
      flat[static_cast<std::size_t>(o)] = static_cast<double>(at);
      inside[static_cast<std::size_t>(o)] = ok ? 1.0 : 0.0;
    }
    const VarPtr hit =
        logicalAnd(eq(value, y), constant(Tensor::fromDoubles(DType::Bool, outShape, inside)));
    const VarPtr at = add(base, constant(Tensor::fromDoubles(DType::Int64, outShape, flat)));
    idx = where(hit, at, idx);
  }
  return idx;
}

// The pooled values of x over the planned axes (Note [ONNX pooling on Pool2d]).
VarPtr poolValues(const NodeContext& ctx, const VarPtr& x, const std::vector<WindowAxis>& windows,
                  const std::vector<PoolAxis>& axes, bool takeMax, bool countIncludePad) {
  const int rank = ctx.rank(0);
  const bool dilated = std::any_of(windows.begin(), windows.end(),
                                   [](const WindowAxis& a) { return a.dilation != 1; });
  if (dilated) {
    VarPtr y = x;
    for (int i = 0; i < rank - 2; ++i) {
      if (!windows[static_cast<std::size_t>(i)].known())
        ctx.unsupported("MaxPool with dilations on an input of dynamic spatial size");
      y = poolAxisBySlices(y, 2 + i, axes[static_cast<std::size_t>(i)], true, false);
    }
    return y;
  }
  const PoolAxis unit{WindowAxis{1, 1, 1, 1, 0, 0}, 1, 0};
  if (rank == 3)
    return squeeze(pool2d(ctx, expandDims(x, 2), unit, axes[0], takeMax, countIncludePad), 2);
  if (rank == 4) return pool2d(ctx, x, axes[0], axes[1], takeMax, countIncludePad);
  // 3-d: (N, C, D, H, W) -> (N, C * D, H, W), pool H and W, then depth by slices.
  if (!windows[0].known()) ctx.unsupported(ctx.opType() + " on an input of dynamic depth");
  const VarPtr n = shapeI(x, 0), c = shapeI(x, 1), depth = shapeI(x, 2);
  const VarPtr folded = reshape(x, ShapeExpr{n, dimProduct(c, depth), shapeI(x, 3), shapeI(x, 4)});
  const VarPtr pooled = pool2d(ctx, folded, axes[1], axes[2], takeMax, countIncludePad);
  const VarPtr unfolded =
      reshape(pooled, ShapeExpr{n, c, depth, shapeI(pooled, 2), shapeI(pooled, 3)});
  return poolAxisBySlices(unfolded, 2, axes[0], takeMax, countIncludePad);
}

// x: input 0, or for MaxPool of small integers and float16 input 0 in float64. MaxPool's second
// output, the indices, when the model uses it (Note [MaxPool indices]).
std::vector<VarPtr> convertPool(NodeContext& ctx, bool takeMax, const VarPtr& x) {
  const int rank = ctx.rank(0);
  if (rank > 5)
    ctx.unsupported(ctx.opType() + " with " + std::to_string(rank - 2) + " spatial axes");
  if (rank < 3)
    ctx.fail("expected input 0 of rank 3 to 5 (N, C, spatial...), found " + x->type().str());
  const DType dtype = x->type().dtype();
  if (dtype != DType::Float32 && dtype != DType::Float64)
    ctx.unsupported(ctx.opType() + " on " + std::string(dtypeName(dtype)) + " tensors");
  const auto kernel = ctx.attrInts("kernel_shape");
  if (static_cast<int>(kernel.size()) != rank - 2)
    ctx.fail("expected kernel_shape with " + std::to_string(rank - 2) + " entries, found " +
             std::to_string(kernel.size()));
  std::vector<WindowAxis> windows = readWindow(ctx, kernel, takeMax);
  applyAutoPad(ctx, windows);
  const bool ceilMode = ctx.attrInt("ceil_mode", 0) != 0;
  const bool countIncludePad = !takeMax && ctx.attrInt("count_include_pad", 0) != 0;
  const std::vector<PoolAxis> axes = planPool(ctx, windows, ceilMode);

  const VarPtr y = poolValues(ctx, x, windows, axes, takeMax, countIncludePad);
  if (takeMax && ctx.nOutputs() > 1 && ctx.wantsOutput(1))
    return {y, maxPoolIndices(ctx, x, y, axes)};
  return {y};
}

// Note [MaxPool of integers]: a maximum is one of its inputs, so MaxPool of int8, uint8, int16,
// int32 or float16 is exact through float64 (which holds each of their values) and back.
std::vector<VarPtr> convertMaxPool(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const DType dtype = x->type().dtype();
  if (dtype == DType::UInt8 || dtype == DType::Int8 || dtype == DType::Int16 ||
      dtype == DType::Int32 || dtype == DType::Float16) {
    std::vector<VarPtr> y = convertPool(ctx, true, cast(x, DType::Float64));
    y[0] = cast(y[0], dtype);
    return y;
  }
  return convertPool(ctx, true, x);
}
std::vector<VarPtr> convertAveragePool(NodeContext& ctx) {
  return convertPool(ctx, false, ctx.input(0));
}

// The spatial axes 2.. of input 0 (rank >= 3).
Axes spatialAxes(const NodeContext& ctx) {
  const int rank = ctx.rank(0);
  if (rank < 3)
    ctx.fail("expected input 0 of rank >= 3 (N, C, spatial...), found " +
             ctx.input(0)->type().str());
  Axes axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return axes;
}

std::vector<VarPtr> convertGlobalAveragePool(NodeContext& ctx) {
  return {mean(ctx.input(0), spatialAxes(ctx), true)};
}

std::vector<VarPtr> convertGlobalMaxPool(NodeContext& ctx) {
  return {max(ctx.input(0), spatialAxes(ctx), true)};
}

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)])^beta; the window sum is `size` slices
// of the zero-padded squares (negative stops: no static channel count needed).
std::vector<VarPtr> convertLrn(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  if (ctx.rank(0) < 3)
    ctx.fail("expected input 0 of rank >= 3 (N, C, spatial...), found " + x->type().str());
  if (!isFloat(x->type().dtype())) ctx.fail("expected a float input, found " + x->type().str());
  const std::int64_t size = ctx.attrInt("size");
  if (size < 1) ctx.fail("expected size >= 1, found " + std::to_string(size));
  const double alpha = ctx.attrFloat("alpha", 1e-4), beta = ctx.attrFloat("beta", 0.75),
               bias = ctx.attrFloat("bias", 1.0);
  const VarPtr padded = padAxis(mul(x, x), 1, (size - 1) / 2, size - 1 - (size - 1) / 2, 0.0);
  VarPtr sum;
  for (std::int64_t j = 0; j < size; ++j) {
    const std::int64_t dropEnd = size - 1 - j;
    const VarPtr part = slice(padded, 1, j, dropEnd > 0 ? IdxBound(-dropEnd) : IdxBound());
    sum = sum ? add(sum, part) : part;
  }
  const VarPtr base =
      add(scalarLike(bias, x), mul(sum, scalarLike(alpha / static_cast<double>(size), x)));
  return {trueDiv(x, pow(base, scalarLike(beta, x)))};
}

}  // namespace

void registerPoolConverters(ConverterTable& table) {
  table.add("MaxPool", convertMaxPool);
  table.add("AveragePool", convertAveragePool);
  table.add("GlobalAveragePool", convertGlobalAveragePool);
  table.add("GlobalMaxPool", convertGlobalMaxPool);
  table.add("LRN", convertLrn);
}

}  // namespace tscope::engine::io::onnx_import
