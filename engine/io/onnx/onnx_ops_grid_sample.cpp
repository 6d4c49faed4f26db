// The converter of GridSample (opsets 16 to 18; F.grid_sample), modes bilinear, nearest and bicubic
// with zeros, border and reflection padding.
//
// Note [GridSample as gathers]: out[n, c, i, j] samples x[n, c] at the point grid[n, i, j] =
// (gx, gy) in [-1, 1]^2 (outside it: padding). Each coordinate is mapped to pixels exactly as
// PyTorch's grid_sampler_compute_source_index does (align_corners: (g + 1) / 2 * (size - 1), else
// ((g + 1) * size - 1) / 2; then clipped for border, reflected and clipped for reflection), in the
// grid's dtype. Nearest rounds half to even (nearbyint) and reads one pixel; bilinear reads the
// four around floor(ix), floor(iy) with the weights (x1 - ix)(y1 - iy), (ix - x0)(y1 - iy),
// (x1 - ix)(iy - y0), (ix - x0)(iy - y0), summed in that order. A pixel outside x reads 0 (zeros
// padding; with border and reflection only bilinear's far neighbour of an edge pixel, whose weight
// is 0, can be outside). Every read is one AdvancedSubtensor of x in (N, H, W, C) order with index
// arrays (n, row, column) of the grid's shape (N, H', W'), the row and column clamped into x so any
// coordinate gathers safely and masked by where they were outside. So no new engine op: the
// gradient in x (scattered adds) and in the grid (through the weights; floor and rounding have
// none, as in PyTorch) and fast_run's fusion come with the elementwise and indexing ops.
#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/shape/shape.h"

namespace tscope::engine::io::onnx_import {

namespace {

enum class Padding { Zeros, Border, Reflection };

// PyTorch's reflect_coordinates: c reflected into [twiceLow / 2, twiceHigh / 2] (span 0: 0).
VarPtr reflect(const VarPtr& c, const VarPtr& twiceLow, const VarPtr& twiceHigh) {
  const DType dt = c->type().dtype();
  const VarPtr two = constant(2, dt);
  const VarPtr low = trueDiv(twiceLow, two);
  const VarPtr span = trueDiv(sub(twiceHigh, twiceLow), two);
  const VarPtr in = abs(sub(c, low));
  const VarPtr extra = mod(in, span);
  const VarPtr flips = floor(trueDiv(in, span));
  const VarPtr even = eq(mod(flips, two), constant(0, dt));
  const VarPtr reflected = where(even, add(extra, low), add(sub(span, extra), low));
  return where(eq(span, constant(0, dt)), constant(0, dt), reflected);
}

// A pixel position c along an axis of `size` pixels with the padding applied (PyTorch's
// compute_coordinates): clipped for border, reflected and clipped for reflection, as is for zeros.
VarPtr padCoordinate(VarPtr c, const VarPtr& size, bool alignCorners, Padding padding) {
  const DType dt = c->type().dtype();
  const VarPtr one = constant(1, dt), two = constant(2, dt), zero = constant(0, dt);
  const VarPtr last = sub(size, one);
  if (padding == Padding::Reflection) {
    c = alignCorners ? reflect(c, zero, mul(two, last))
                     : reflect(c, neg(one), sub(mul(two, size), one));
  }
  if (padding != Padding::Zeros) c = clip(c, zero, last);
  return c;
}

// A normalised coordinate g in [-1, 1] as a pixel position along an axis of `size` pixels
// (PyTorch's grid_sampler_unnormalize).
VarPtr unnormalize(const VarPtr& g, const VarPtr& size, bool alignCorners) {
  const DType dt = g->type().dtype();
  const VarPtr one = constant(1, dt), two = constant(2, dt);
  return alignCorners ? mul(trueDiv(add(g, one), two), sub(size, one))
                      : trueDiv(sub(mul(add(g, one), size), one), two);
}

// The same, padded (grid_sampler_compute_source_index).
VarPtr sourceIndex(const VarPtr& g, const VarPtr& size, bool alignCorners, Padding padding) {
  return padCoordinate(unnormalize(g, size, alignCorners), size, alignCorners, padding);
}

// PyTorch's bicubic weights (cubic convolution, A = -0.75) of the taps at floor(c) - 1 ..
// floor(c) + 2 for t = c - floor(c).
std::vector<VarPtr> cubicWeights(const VarPtr& t) {
  const DType dt = t->type().dtype();
  const double a = -0.75;
  auto c = [&](double v) { return constant(v, dt); };
  // ((A + 2) d - (A + 3)) d^2 + 1 for |d| <= 1; ((A d - 5A) d + 8A) d - 4A for 1 < |d| < 2.
  auto near = [&](const VarPtr& d) {
    return add(mul(mul(sub(mul(c(a + 2), d), c(a + 3)), d), d), c(1));
  };
  auto far = [&](const VarPtr& d) {
    return sub(mul(add(mul(sub(mul(c(a), d), c(5 * a)), d), c(8 * a)), d), c(4 * a));
  };
  return {far(add(t, c(1))), near(t), near(sub(c(1), t)), far(sub(c(2), t))};
}

struct Sampler {
  VarPtr xt;      // x as (N, H, W, C)
  VarPtr batch;   // arange(N) as (N, 1, 1)
  VarPtr height;  // H and W in the grid's dtype
  VarPtr width;
};

// weight * xt[n, row, col] as (N, H', W', C), 0 where (row, col) is outside x; row and col are
// integral values in the grid's dtype. A null weight reads the pixel alone (nearest).
VarPtr tap(const Sampler& s, const VarPtr& row, const VarPtr& col, const VarPtr& weight) {
  const DType dt = row->type().dtype();
  const VarPtr zero = constant(0, dt), one = constant(1, dt);
  const VarPtr inside = logicalAnd(logicalAnd(ge(row, zero), lt(row, s.height)),
                                   logicalAnd(ge(col, zero), lt(col, s.width)));
  const VarPtr r = cast(clip(row, zero, sub(s.height, one)), DType::Int64);
  const VarPtr c = cast(clip(col, zero, sub(s.width, one)), DType::Int64);
  const VarPtr value = advancedSubtensor(s.xt, {AdvIdx(s.batch), AdvIdx(r), AdvIdx(c)});
  const DType xdt = s.xt->type().dtype();
  if (!weight) return where(expandDims(inside, 3), value, constant(0, xdt));
  return mul(value, expandDims(where(inside, cast(weight, xdt), constant(0, xdt)), 3));
}

std::vector<VarPtr> convertGridSample(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  VarPtr grid = ctx.input(1);
  const std::string mode = ctx.attrString("mode", "bilinear");
  const std::string paddingName = ctx.attrString("padding_mode", "zeros");
  const bool alignCorners = ctx.attrInt("align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    ctx.fail("attribute 'mode': expected bilinear, nearest or bicubic, found '" + mode + "'");
  Padding padding = Padding::Zeros;
  if (paddingName == "border")
    padding = Padding::Border;
  else if (paddingName == "reflection")
    padding = Padding::Reflection;
  else if (paddingName != "zeros")
    ctx.fail("attribute 'padding_mode': expected zeros, border or reflection, found '" +
             paddingName + "'");
  if (ctx.rank(0) != 4)
    ctx.fail("input 0 (X): expected a 4-d tensor (N, C, H, W), found " + x->type().str());
  const TensorType& gt = grid->type();
  if (gt.ndim() != 4 || (gt.shape()[3] != kUnknownDim && gt.shape()[3] != 2) ||
      !isFloat(gt.dtype()))
    ctx.fail("input 1 (grid): expected a floating-point tensor (N, H_out, W_out, 2), found " +
             gt.str());
  if (mode != "nearest" && !isFloat(x->type().dtype()))
    ctx.unsupported("GridSample in " + mode + " mode of a " +
                    std::string(dtypeName(x->type().dtype())) +
                    " input (expected a floating-point input 0)");

  const DType dt = gt.dtype();
  Sampler s;
  s.xt = dimshuffle(x, {0, 2, 3, 1});
  s.batch = dimshuffle(arange(shapeI(x, 0)), {0, DimShuffle::kNewAxis, DimShuffle::kNewAxis});
  s.height = cast(shapeI(x, 2), dt);
  s.width = cast(shapeI(x, 3), dt);
  const VarPtr gx = select(grid, 3, IdxBound(std::int64_t{0}));
  const VarPtr gy = select(grid, 3, IdxBound(std::int64_t{1}));
  VarPtr out;
  if (mode == "bicubic") {
    // Note [Bicubic GridSample]: as PyTorch, the 4 x 4 pixels around the unpadded position, each
    // tap's coordinates padded on their own (so border repeats and reflection mirrors the edge
    // pixels), weighted by the cubic convolution weights of the fractional parts.
    const VarPtr ix = unnormalize(gx, s.width, alignCorners);
    const VarPtr iy = unnormalize(gy, s.height, alignCorners);
    const VarPtr x0 = floor(ix), y0 = floor(iy);
    const std::vector<VarPtr> wx = cubicWeights(sub(ix, x0)), wy = cubicWeights(sub(iy, y0));
    for (int i = 0; i < 4; ++i) {
      const VarPtr row =
          padCoordinate(add(y0, constant(i - 1, dt)), s.height, alignCorners, padding);
      for (int j = 0; j < 4; ++j) {
        const VarPtr col =
            padCoordinate(add(x0, constant(j - 1, dt)), s.width, alignCorners, padding);
        const VarPtr term =
            tap(s, row, col, mul(wx[static_cast<std::size_t>(j)], wy[static_cast<std::size_t>(i)]));
        out = out ? add(out, term) : term;
      }
    }
    return {dimshuffle(out, {0, 3, 1, 2})};
  }
  const VarPtr ix = sourceIndex(gx, s.width, alignCorners, padding);
  const VarPtr iy = sourceIndex(gy, s.height, alignCorners, padding);
  if (mode == "nearest") {
    out = tap(s, round(iy), round(ix), nullptr);
  } else {
    const VarPtr one = constant(1, dt);
    const VarPtr x0 = floor(ix), y0 = floor(iy);
    const VarPtr x1 = add(x0, one), y1 = add(y0, one);
    const VarPtr wx0 = sub(x1, ix), wx1 = sub(ix, x0), wy0 = sub(y1, iy), wy1 = sub(iy, y0);
    out = tap(s, y0, x0, mul(wx0, wy0));
    out = add(out, tap(s, y0, x1, mul(wx1, wy0)));
    out = add(out, tap(s, y1, x0, mul(wx0, wy1)));
    out = add(out, tap(s, y1, x1, mul(wx1, wy1)));
  }
  return {dimshuffle(out, {0, 3, 1, 2})};
}

}  // namespace

void registerGridSampleConverters(ConverterTable& table) {
  table.add("GridSample", &convertGridSample);
}

}  // namespace tscope::engine::io::onnx_import
