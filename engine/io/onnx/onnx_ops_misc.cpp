// Converters of Pad (opsets 2 to 18) and TopK (1 to 18); Resize and Upsample are in
// onnx_ops_resize.cpp, GridSample in onnx_ops_grid_sample.cpp.
#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/topk.h"

#include <algorithm>

namespace tscope::engine::io::onnx_import {

namespace {

// d + n for a 0-d int64 size, folded when d is a constant.
VarPtr dimPlus(const VarPtr& d, std::int64_t n) {
  if (n == 0) return d;
  if (auto v = constantIntValue(d)) return constantInt(*v + n);
  return add(d, constantInt(n));
}

// --- Pad -----------------------------------------------------------------------------------------

// Begin/end pads per axis (ONNX gives all begins, then all ends; from opset 18 for `axes` only).
struct Pads {
  std::vector<std::int64_t> begin, end;
};

Pads readPads(const NodeContext& ctx, int rank) {
  const bool fromInput = ctx.opset() >= 11;
  const std::vector<std::int64_t> pads =
      fromInput ? ctx.constantInts(1, "Pad's pads") : ctx.attrInts("pads");
  std::vector<int> axes;
  if (fromInput && ctx.opset() >= 18 && ctx.hasInput(3)) {
    for (std::int64_t a : ctx.constantInts(3, "Pad's axes"))
      axes.push_back(ctx.axis(a, rank, "axes"));
  } else {
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  }
  const std::size_t n = axes.size();
  if (pads.size() != 2 * n)
    ctx.fail("pads: expected " + std::to_string(2 * n) + " values (begin and end for " +
             std::to_string(n) + " axes), found " + std::to_string(pads.size()));
  // Sizes are int64 arithmetic later: a pad beyond 2^40 elements is no real model's.
  for (std::int64_t v : pads)
    if (v > (std::int64_t{1} << 40) || v < -(std::int64_t{1} << 40))
      ctx.fail("pads: expected values within +-2^40, found " + std::to_string(v));
  Pads p{std::vector<std::int64_t>(static_cast<std::size_t>(rank), 0),
         std::vector<std::int64_t>(static_cast<std::size_t>(rank), 0)};
  for (std::size_t i = 0; i < n; ++i) {
    p.begin[static_cast<std::size_t>(axes[i])] = pads[i];
    p.end[static_cast<std::size_t>(axes[i])] = pads[n + i];
  }
  return p;
}

// The fill value of constant mode as a 0-d variable of x's dtype.
VarPtr padValue(const NodeContext& ctx, DType dtype) {
  if (ctx.opset() < 11) return constant(ctx.attrFloat("value", 0.0), dtype);
  if (!ctx.hasInput(2)) return constant(0.0, dtype);
  VarPtr v = ctx.input(2);
  if (v->type().ndim() == 1 && v->type().shape()[0] == 1)
    v = reshape(v, std::vector<std::int64_t>{});
  if (v->type().ndim() != 0)
    ctx.fail("constant_value: expected a scalar, found " + v->type().str());
  return v->type().dtype() == dtype ? v : cast(v, dtype);
}

std::vector<VarPtr> convertPad(NodeContext& ctx) {
  VarPtr x = ctx.input(0);
  const int rank = ctx.rank(0);
  const std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    if (mode == "wrap") ctx.unsupported("Pad mode 'wrap'");
    ctx.fail("attribute 'mode': expected constant, reflect or edge, found '" + mode + "'");
  }
  Pads pads = readPads(ctx, rank);
  const auto& shape = x->type().shape();

  // Negative pads crop first.
  std::vector<Idx> crop;
  bool cropping = false;
  for (std::size_t a = 0; a < pads.begin.size(); ++a) {
    const std::int64_t b = pads.begin[a], e = pads.end[a];
    cropping = cropping || b < 0 || e < 0;
    crop.push_back(Idx::slice(b < 0 ? IdxBound(-b) : IdxBound(), e < 0 ? IdxBound(e) : IdxBound()));
    if (shape[a] != kUnknownDim &&
        shape[a] + std::min<std::int64_t>(b, 0) + std::min<std::int64_t>(e, 0) < 0)
      ctx.fail("pads crop axis " + std::to_string(a) + " of size " + std::to_string(shape[a]) +
               " by more than its size");
    pads.begin[a] = std::max<std::int64_t>(b, 0);
    pads.end[a] = std::max<std::int64_t>(e, 0);
  }
  if (cropping) x = subtensor(x, crop);

  bool padding = false;
  for (std::size_t a = 0; a < pads.begin.size(); ++a)
    padding = padding || pads.begin[a] > 0 || pads.end[a] > 0;
  if (!padding) return {cropping ? x : identity(x)};

  if (mode == "constant") {
    // A filled tensor of the padded shape with x written into its middle.
    ShapeExpr padded;
    std::vector<Idx> middle;
    for (int a = 0; a < rank; ++a) {
      const auto i = static_cast<std::size_t>(a);
      padded.push_back(dimPlus(shapeI(x, a), pads.begin[i] + pads.end[i]));
      middle.push_back(
          Idx::slice(pads.begin[i], pads.end[i] > 0 ? IdxBound(-pads.end[i]) : IdxBound()));
    }
    return {setSubtensor(alloc(padValue(ctx, x->type().dtype()), padded), x, middle)};
  }
  // edge and reflect: one axis after another, so corners take the already padded values.
  for (int a = 0; a < rank; ++a) {
    const auto i = static_cast<std::size_t>(a);
    const std::int64_t before = pads.begin[i], after = pads.end[i];
    if (before == 0 && after == 0) continue;
    const std::int64_t n = x->type().shape()[i];
    std::vector<VarPtr> parts;
    if (mode == "edge") {
      if (n == 0) ctx.fail("edge padding of axis " + std::to_string(a) + ", which is empty");
      auto repeated = [&](const VarPtr& edge, std::int64_t count) {
        std::vector<std::int64_t> reps(static_cast<std::size_t>(rank), 1);
        reps[i] = count;
        return tile(edge, reps);
      };
      if (before > 0) parts.push_back(repeated(slice(x, a, 0, 1), before));
      parts.push_back(x);
      if (after > 0) parts.push_back(repeated(slice(x, a, -1, std::nullopt), after));
    } else {
      if (n != kUnknownDim && (before >= n || after >= n))
        ctx.fail("reflect pads of axis " + std::to_string(a) + " (" + std::to_string(before) +
                 ", " + std::to_string(after) + "): expected each smaller than the axis size " +
                 std::to_string(n));
      // x[before:0:-1] and x[-2:-2-after:-1]: the mirror images without the edge element.
      if (before > 0) parts.push_back(slice(x, a, before, 0, -1));
      parts.push_back(x);
      if (after > 0) parts.push_back(slice(x, a, -2, -2 - after, -1));
    }
    x = join(a, parts);
  }
  return {x};
}

// --- TopK ----------------------------------------------------------------------------------------

std::vector<VarPtr> convertTopK(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input 0: expected a tensor of rank 1 or more, found a scalar");
  std::int64_t k = 0;
  if (ctx.opset() < 10) {
    k = ctx.attrInt("k");
  } else {
    const auto value = ctx.constantInput(1);
    if (!value) ctx.needsConstant(1, "TopK's k");
    if (value->numel() != 1)
      ctx.fail("input 1 (K): expected a single value, found shape " +
               shapeToString(value->shape()));
    k = static_cast<std::int64_t>(value->item());
  }
  const int axis = ctx.axis(ctx.attrInt("axis", -1), rank);
  const bool largest = ctx.opset() < 11 || ctx.attrInt("largest", 1) != 0;
  const std::int64_t n = x->type().shape()[static_cast<std::size_t>(axis)];
  if (k < 0) ctx.fail("k: expected k >= 0, found " + std::to_string(k));
  if (n != kUnknownDim && k > n)
    ctx.fail("k = " + std::to_string(k) + " is larger than axis " + std::to_string(axis) +
             " of size " + std::to_string(n));
  // `sorted` = 0 leaves the order to the runtime; sorted output is one valid answer.
  auto [values, indices] = topk(x, k, axis, largest);
  return {values, indices};
}

}  // namespace

void registerMiscConverters(ConverterTable& table) {
  registerResizeConverters(table);
  registerGridSampleConverters(table);
  registerLossConverters(table);
  registerExtraMathConverters(table);
  registerExtraMiscConverters(table);
  registerSignalConverters(table);
  table.add("Pad", &convertPad);
  table.add("TopK", &convertTopK);
}

}  // namespace tscope::engine::io::onnx_import
