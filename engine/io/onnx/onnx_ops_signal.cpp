// ONNX's DFT, STFT and MaxUnpool, as exact compositions, and MelWeightMatrix, a constant.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/shape/advanced_index.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"

#include <cmath>
#include <numbers>
#include <utility>

namespace tscope::engine::io::onnx_import {

namespace {

// Note [DFT as two matrix products]: along the signal axis (static length n), X_k = sum_t x_t
// e^(-+2 pi i k t / n) is, for x = a + ib, re = a C + b S and im = b C - a S (forward; the signs of
// the S terms flip and both divide by n for the inverse), with C[t, k] = cos(2 pi t k / n) and
// S[t, k] = sin(2 pi t k / n), k < n (or n / 2 + 1 when onesided). Computed in float64 and rounded
// once to the input's dtype, so terms that cancel (a real signal's zero imaginary parts) stay near
// 0 rather than float32's 1e-5. The output's last axis holds [re, im].
// The DFT of a + ib (float64, b may be null) along their last axis, of length n: (re, im).
std::pair<VarPtr, VarPtr> dftLast(const VarPtr& a, const VarPtr& b, std::int64_t n, bool inverse,
                                  bool onesided) {
  const std::int64_t m = onesided ? n / 2 + 1 : n;
  std::vector<double> c(static_cast<std::size_t>(n * m)), s(c.size());
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t k = 0; k < m; ++k) {
      // (t * k) mod n keeps the angle small, so large n loses no precision.
      const double angle =
          2 * std::numbers::pi * static_cast<double>((t * k) % n) / static_cast<double>(n);
      c[static_cast<std::size_t>(t * m + k)] = std::cos(angle);
      s[static_cast<std::size_t>(t * m + k)] = std::sin(angle);
    }
  const VarPtr cm = constant(Tensor::fromDoubles(DType::Float64, {n, m}, c));
  const VarPtr sm = constant(Tensor::fromDoubles(DType::Float64, {n, m}, s));
  VarPtr re = dot(a, cm), im = neg(dot(a, sm));
  if (inverse) im = neg(im);
  if (b) {
    const VarPtr bs = dot(b, sm);
    re = inverse ? sub(re, bs) : add(re, bs);
    im = add(im, dot(b, cm));
  }
  if (inverse) {
    const VarPtr count = constant(static_cast<double>(n), DType::Float64);
    re = trueDiv(re, count);
    im = trueDiv(im, count);
  }
  return {re, im};
}

std::vector<VarPtr> convertDft(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  const DType dtype = x->type().dtype();
  if (rank < 2 || !isFloat(dtype) || !x->type().isDimKnown(rank - 1) ||
      (x->type().shape()[static_cast<std::size_t>(rank - 1)] != 1 &&
       x->type().shape()[static_cast<std::size_t>(rank - 1)] != 2))
    ctx.fail("input 0: expected a float tensor whose last axis is 1 (real) or 2 (complex), found " +
             x->type().str());
  if (ctx.hasInput(1)) ctx.unsupported("DFT with a dft_length input");
  const int axis = ctx.axis(ctx.attrInt("axis", 1), rank);
  if (axis == rank - 1) ctx.fail("attribute 'axis': expected an axis other than the last one");
  const std::int64_t n = x->type().shape()[static_cast<std::size_t>(axis)];
  if (n == kUnknownDim) ctx.unsupported("DFT along an axis whose size is not static");
  const bool inverse = ctx.attrInt("inverse", 0) != 0;
  const bool onesided = ctx.attrInt("onesided", 0) != 0;
  if (inverse && onesided) ctx.fail("expected inverse and onesided not both set");
  // The signal axis last, of the value without its complex axis.
  std::vector<int> toLast;
  for (int d = 0; d < rank - 1; ++d)
    if (d != axis) toLast.push_back(d);
  toLast.push_back(axis);
  std::vector<int> back(static_cast<std::size_t>(rank - 1));
  for (int d = 0; d < rank - 1; ++d)
    back[static_cast<std::size_t>(toLast[static_cast<std::size_t>(d)])] = d;
  auto part = [&](int k) {
    return transpose(cast(select(x, rank - 1, k), DType::Float64), toLast);
  };
  const VarPtr a = part(0);
  const VarPtr b = x->type().shape()[static_cast<std::size_t>(rank - 1)] == 2 ? part(1) : nullptr;
  const auto [re, im] = dftLast(a, b, n, inverse, onesided);
  return {cast(stack({transpose(re, back), transpose(im, back)}, rank - 1), dtype)};
}

// STFT(signal (B, L, 1 or 2), frame_step[, window (N)][, frame_length]): frames of N samples every
// frame_step (a constant; computed ones convert when the node runs), times the window, each
// transformed as in Note [DFT as two matrix products]; onesided (the default) keeps N / 2 + 1
// bins. Output (B, frames, bins, 2).
std::vector<VarPtr> convertStft(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const DType dtype = x->type().dtype();
  const auto& xs = x->type().shape();
  if (x->type().ndim() != 3 || !isFloat(dtype) || (xs[2] != 1 && xs[2] != 2) ||
      xs[1] == kUnknownDim)
    ctx.fail("input 0 (signal): expected a float (batch, length, 1 or 2) of static length, found " +
             x->type().str());
  const std::vector<std::int64_t> step = ctx.constantInts(1, "STFT's frame_step");
  if (step.size() != 1 || step[0] < 1)
    ctx.fail("input 1 (frame_step): expected one positive value");
  std::int64_t n = -1;
  if (ctx.hasInput(3)) {
    const std::vector<std::int64_t> len = ctx.constantInts(3, "STFT's frame_length");
    if (len.size() != 1) ctx.fail("input 3 (frame_length): expected one value");
    n = len[0];
  }
  if (ctx.hasInput(2)) {
    const TensorType& w = ctx.input(2)->type();
    if (w.ndim() != 1 || !w.isDimKnown(0))
      ctx.fail("input 2 (window): expected a 1-d window of static length, found " + w.str());
    if (n >= 0 && n != w.shape()[0])
      ctx.fail("expected frame_length " + std::to_string(n) + " to match the window's length " +
               std::to_string(w.shape()[0]));
    n = w.shape()[0];
  }
  if (n < 1 || n > xs[1]) ctx.fail("expected a frame length from 1 to the signal's length");
  const bool onesided = ctx.attrInt("onesided", 1) != 0;
  const std::int64_t frames = (xs[1] - n) / step[0] + 1;
  std::vector<std::int64_t> at;
  for (std::int64_t f = 0; f < frames; ++f)
    for (std::int64_t t = 0; t < n; ++t) at.push_back(f * step[0] + t);
  const VarPtr index = constant(tensorOfInts(at));
  auto framed = [&](int k) {
    VarPtr v = reshape(take(cast(select(x, 2, k), DType::Float64), index, 1),
                       ShapeExpr{shapeI(x, 0), constantInt(frames), constantInt(n)});
    if (ctx.hasInput(2)) v = mul(v, cast(ctx.input(2), DType::Float64));
    return v;
  };
  const VarPtr a = framed(0);
  const VarPtr b = xs[2] == 2 ? framed(1) : nullptr;
  const auto [re, im] = dftLast(a, b, n, false, onesided);
  return {cast(stack({re, im}, 3), dtype)};
}

// MaxUnpool(x, indices[, output_shape]): zeros of the output shape with x's values at `indices`.
// The indices are flat positions in the default output (N, C, (d - 1) * stride + kernel - pads),
// as MaxPool's Indices output writes them; with output_shape they keep their coordinates in the
// larger output (as ONNX's reference and ONNX Runtime place them). Duplicate indices: the last
// in row-major order wins. An index out of range fails the run (the scatter's bounds check).
std::vector<VarPtr> convertMaxUnpool(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const VarPtr indices = asInt64(ctx.input(1));
  const int rank = ctx.rank(0);
  const int spatial = rank - 2;
  if (spatial < 1) ctx.fail("input 0: expected (N, C, d1, ...), found " + x->type().str());
  const auto kernel = ctx.attrInts("kernel_shape");
  const auto strides = ctx.attrInts("strides", std::vector<std::int64_t>(kernel.size(), 1));
  const auto pads = ctx.attrInts("pads", std::vector<std::int64_t>(2 * kernel.size(), 0));
  if (static_cast<int>(kernel.size()) != spatial || static_cast<int>(strides.size()) != spatial ||
      static_cast<int>(pads.size()) != 2 * spatial)
    ctx.fail("expected kernel_shape and strides of " + std::to_string(spatial) +
             " values and pads of " + std::to_string(2 * spatial));
  std::vector<std::int64_t> full = x->type().shape();
  for (int i = 0; i < rank; ++i)
    if (full[static_cast<std::size_t>(i)] == kUnknownDim)
      ctx.unsupported("MaxUnpool of an input whose shape is not static");
  for (int i = 0; i < spatial; ++i) {
    const auto k = static_cast<std::size_t>(i);
    full[k + 2] = (full[k + 2] - 1) * strides[k] + kernel[k] - pads[k] - pads[k + kernel.size()];
    if (full[k + 2] < 1) ctx.fail("the output would have a spatial size below 1");
  }
  ShapeExpr out = constantShape(full);
  if (ctx.hasInput(2)) {
    out = vectorInputEntries(ctx, 2, "output_shape");
    if (static_cast<int>(out.size()) != rank)
      ctx.fail("input 2 (output_shape): expected " + std::to_string(rank) + " entries, found " +
               std::to_string(out.size()));
  }
  // Decode each index in the default shape, encode it in the output's.
  VarPtr rest = indices;
  VarPtr position = constantInt(0);
  VarPtr stride = constantInt(1);
  for (int d = rank - 1; d >= 0; --d) {
    const VarPtr size = constantInt(full[static_cast<std::size_t>(d)]);
    const VarPtr coord = mod(rest, size);
    rest = intDiv(rest, size);
    position = add(position, mul(coord, stride));
    stride = mul(stride, asInt64(out[static_cast<std::size_t>(d)]));
  }
  const VarPtr flat = zeros(ShapeExpr{sizeProduct(out)}, x->type().dtype());
  const VarPtr filled = advancedSetSubtensor(flat, flatten(x), {flatten(position)});
  return {reshape(filled, out)};
}

// Note [MelWeightMatrix]: the matrix depends on its five scalar inputs alone, so it is computed
// here, as ONNX's reference computes it (the mel edges in float32, the bins in float64, triangles
// of integer bins), and the node becomes a constant; inputs computed at run time defer the node
// (Note [Run-time ONNX values]).
std::vector<VarPtr> convertMelWeightMatrix(NodeContext& ctx) {
  const char* const names[] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                               "upper_edge_hertz"};
  double in[5];
  for (int i = 0; i < 5; ++i) {
    const std::vector<double> v = ctx.constantDoubles(i, names[i]);
    if (v.size() != 1)
      ctx.fail("input " + std::to_string(i) + " (" + names[i] + "): expected a scalar, found " +
               std::to_string(v.size()) + " values");
    in[i] = v[0];
  }
  const auto bins = static_cast<std::int64_t>(in[0]), dft = static_cast<std::int64_t>(in[1]),
             rate = static_cast<std::int64_t>(in[2]);
  if (bins < 1 || bins > 4096 || dft < 1 || dft > (1 << 20) || rate < 1)
    ctx.fail(
        "expected num_mel_bins in [1, 4096], dft_length in [1, 2^20] and sample_rate >= 1, "
        "found " +
        std::to_string(bins) + ", " + std::to_string(dft) + " and " + std::to_string(rate));
  const auto to = static_cast<int>(ctx.attrInt("output_datatype", 1));
  const std::optional<DType> dtype = dtypeFromOnnx(to);
  if (!dtype || !isFloat(*dtype)) ctx.unsupported("MelWeightMatrix of " + onnxTypeName(to));
  auto mel = [](double hertz) {
    return 2595.0f * std::log10(1.0f + static_cast<float>(hertz) / 700.0f);
  };
  const float low = mel(in[3]), high = mel(in[4]);
  const float step = (high - low) / static_cast<float>(bins + 2);
  std::vector<std::int64_t> edge;
  for (std::int64_t k = 0; k < bins + 2; ++k) {
    const double f = static_cast<double>(k) * static_cast<double>(step) + static_cast<double>(low);
    const double hertz = 700.0 * (std::pow(10.0, f / 2595.0) - 1.0);
    edge.push_back(static_cast<std::int64_t>(
        std::floor(static_cast<double>(dft + 1) * hertz / static_cast<double>(rate))));
  }
  const std::int64_t rows = dft / 2 + 1;
  if (rows * bins > (std::int64_t{1} << 22))
    ctx.fail("expected at most 2^22 entries in the matrix, found " + std::to_string(rows) + " x " +
             std::to_string(bins));
  std::vector<double> w(static_cast<std::size_t>(rows * bins), 0.0);
  auto at = [&](std::int64_t j, std::int64_t i) -> double& {
    if (j < 0 || j >= rows)
      ctx.fail("the mel band " + std::to_string(i) + " reaches the frequency bin " +
               std::to_string(j) + ", past the " + std::to_string(rows) +
               " bins of the spectrum (is upper_edge_hertz above sample_rate / 2?)");
    return w[static_cast<std::size_t>(j * bins + i)];
  };
  for (std::int64_t i = 0; i < bins; ++i) {
    const std::int64_t lo = edge[static_cast<std::size_t>(i)];
    const std::int64_t mid = edge[static_cast<std::size_t>(i + 1)];
    const std::int64_t hi = edge[static_cast<std::size_t>(i + 2)];
    if (mid == lo)
      at(mid, i) = 1;
    else
      for (std::int64_t j = lo; j <= mid; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (std::int64_t j = mid; j < hi; ++j)
      at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  return {constant(Tensor::fromDoubles(*dtype, {rows, bins}, w))};
}

}  // namespace

void registerSignalConverters(ConverterTable& table) {
  table.add("MelWeightMatrix", &convertMelWeightMatrix);
  table.add("DFT", &convertDft);
  table.add("STFT", &convertStft);
  table.add("MaxUnpool", &convertMaxUnpool);
}

}  // namespace tscope::engine::io::onnx_import
