// ONNX's tensor makers: Shape, Size, Constant, ConstantOfShape, Range, EyeLike; and Trilu, which
// masks with the same diagonal arithmetic as EyeLike.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>
#include <cmath>

namespace tscope::engine::io::onnx_import {

namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

// Shape: the 1-d int64 vector of x's dimensions; from opset 15 the part [start, end) of it, each
// bound counting from the end when negative and clamped to [0, rank]. A constant when the type
// knows those dimensions (Note [Static shapes stay static]), else a Shape node (sliced).
//
// Note [Static shapes stay static]: shapes that PyTorch computes (Shape -> Gather -> Concat ->
// Reshape) depend on a graph input, so the importer cannot fold them as constants. Returning the
// known dimensions as a constant here, and reading dimensions rather than elements of a Shape in
// Gather and in vectorInputEntries, keeps the static sizes visible to the ops downstream.
std::vector<VarPtr> convertShape(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const std::int64_t rank = ctx.rank(0);
  auto bound = [&](std::string_view name, std::int64_t fallback) {
    std::int64_t v = ctx.opset() >= 15 ? ctx.attrInt(name, fallback) : fallback;
    if (v < 0) v += rank;
    return std::clamp<std::int64_t>(v, 0, rank);
  };
  const std::int64_t start = bound("start", 0);
  const std::int64_t end = std::max(start, bound("end", rank));
  const std::vector<std::int64_t>& dims = x->type().shape();
  const auto first = dims.begin() + start, last = dims.begin() + end;
  if (std::find(first, last, kUnknownDim) == last)
    return {constant(tensorOfInts(std::vector(first, last)))};
  const VarPtr shape = shapeVector(x);
  if (start == 0 && end == rank) return {shape};
  return {slice(shape, 0, start, end)};
}

std::vector<VarPtr> convertSize(NodeContext& ctx) {
  const ShapeExpr dims = shapeOf(ctx.input(0));
  return {sizeProduct(dims)};
}

// Constant: exactly one of value (a tensor), value_float(s), value_int(s); strings and sparse
// tensors have no Tensorscope form.
std::vector<VarPtr> convertConstant(NodeContext& ctx) {
  int given = 0;
  for (const auto& a : ctx.proto().attribute()) {
    ++given;
    const std::string& name = a.name();
    if (name == "sparse_value" || name == "value_string" || name == "value_strings")
      ctx.unsupported("Constant with the attribute '" + name + "'");
  }
  if (given != 1) ctx.fail("expected exactly one value attribute, found " + str(given));
  if (ctx.hasAttr("value")) return {constant(ctx.attrTensor("value"))};
  if (ctx.hasAttr("value_float")) return {constant(ctx.attrFloat("value_float"), DType::Float32)};
  if (ctx.hasAttr("value_int")) return {constantInt(ctx.attrInt("value_int"))};
  if (ctx.hasAttr("value_floats")) {
    const std::vector<double> v = ctx.attrFloats("value_floats");
    return {
        constant(Tensor::fromDoubles(DType::Float32, {static_cast<std::int64_t>(v.size())}, v))};
  }
  if (ctx.hasAttr("value_ints")) return {constant(tensorOfInts(ctx.attrInts("value_ints")))};
  ctx.fail("expected one of value, value_float(s), value_int(s), found '" +
           ctx.proto().attribute(0).name() + "'");
}

// ConstantOfShape: an Alloc of the one-element `value` (float32 0 by default) to the shape,
// which may be computed.
std::vector<VarPtr> convertConstantOfShape(NodeContext& ctx) {
  Tensor value = Tensor::scalar(DType::Float32, 0.0);
  if (ctx.hasAttr("value")) {
    const Tensor given = ctx.attrTensor("value");
    if (given.numel() != 1)
      ctx.fail("expected a one-element value, found " + str(given.numel()) + " elements");
    value = given.contiguous().reshape({});
  }
  const ShapeExpr shape = vectorInputEntries(ctx, 0, "the shape");
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (auto d = constantIntValue(shape[i]); d && *d < 0)
      ctx.fail("expected sizes >= 0, found " + str(*d) + " at entry " +
               str(static_cast<std::int64_t>(i)));
  return {alloc(constant(value), shape)};
}

// Range: numpy's arange(start, limit, delta) in the inputs' dtype, max(ceil((limit - start) /
// delta), 0) elements.
std::vector<VarPtr> convertRange(NodeContext& ctx) {
  const VarPtr& start = ctx.input(0);
  for (int i = 0; i < 3; ++i)
    if (ctx.input(i)->type().ndim() != 0)
      ctx.fail("expected scalar (0-d) start, limit and delta, found " + ctx.input(i)->type().str() +
               " at input " + str(i));
  if (auto delta = ctx.constantInput(2); delta && delta->item() == 0)
    ctx.fail("expected a non-zero delta, found 0");
  VarPtr out = arange(start, ctx.input(1), ctx.input(2), start->type().dtype());
  // Bounds known while importing (constants, shapes) give the length; float bounds from
  // initializers are shared variables, whose values the type cannot know, but ONNX's shape
  // inference read them. Either length is asserted (SpecifyShape) so the type has it.
  std::vector<std::int64_t> length{kUnknownDim};
  const auto s = ctx.constantInput(0), l = ctx.constantInput(1), d = ctx.constantInput(2);
  if (s && l && d && d->item() != 0)
    length[0] = std::max<std::int64_t>(
        0, static_cast<std::int64_t>(std::ceil((l->item() - s->item()) / d->item())));
  else if (const auto inferred = ctx.inferredOutputType(0); inferred && inferred->ndim() == 1)
    length = inferred->shape();
  out = refineShape(out, length);
  return {out};
}

// EyeLike: ones on the k-th diagonal of a matrix shaped like x, in the attribute dtype (x's by
// default): a constant when x's shape is static, else arange(rows)[:, None] + k == arange(cols).
std::vector<VarPtr> convertEyeLike(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const TensorType& t = x->type();
  if (t.ndim() != 2) ctx.fail("expected a 2-d input, found " + t.str());
  DType dtype = t.dtype();
  if (ctx.hasAttr("dtype")) {
    const auto onnxType = static_cast<int>(ctx.attrInt("dtype"));
    const std::optional<DType> d = dtypeFromOnnx(onnxType);
    if (!d) ctx.unsupported("EyeLike of dtype " + onnxTypeName(onnxType));
    dtype = *d;
  }
  const std::int64_t k = ctx.attrInt("k", 0);
  if (t.isFullyKnown()) {
    const std::int64_t rows = t.shape()[0], cols = t.shape()[1];
    Tensor eye(dtype, {rows, cols});
    for (std::int64_t r = 0; r < rows; ++r)
      if (r + k >= 0 && r + k < cols) eye.set({r, r + k}, 1.0);
    return {constant(eye)};
  }
  const VarPtr rows = dimshuffle(arange(shapeI(x, 0)), {0, DimShuffle::kNewAxis});
  const VarPtr cols = dimshuffle(arange(shapeI(x, 1)), {DimShuffle::kNewAxis, 0});
  return {cast(eq(add(rows, constantInt(k)), cols), dtype)};
}

// Trilu (opset 14): x with the elements below (upper = 1) or above (upper = 0) the k-th diagonal
// of its last two axes set to zero: where(col - row >= k, x, 0), or <= k. k is the optional 0-d
// integer input 1 (0 without it) and may be computed at run time.
std::vector<VarPtr> convertTrilu(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank < 2) ctx.fail("input 0: expected a tensor of rank 2 or more, found " + x->type().str());
  VarPtr k = constantInt(0);
  if (ctx.hasInput(1)) {
    k = ctx.input(1);
    if (!isInteger(k->type().dtype()) || k->type().ndim() != 0)
      ctx.fail("input 1 (k): expected a 0-d integer, found " + k->type().str());
    k = asInt64(k);
  }
  const VarPtr rows = dimshuffle(arange(shapeI(x, rank - 2)), {0, DimShuffle::kNewAxis});
  const VarPtr cols = dimshuffle(arange(shapeI(x, rank - 1)), {DimShuffle::kNewAxis, 0});
  const VarPtr offset = sub(cols, rows);
  const VarPtr keep = ctx.attrInt("upper", 1) != 0 ? ge(offset, k) : le(offset, k);
  return {where(keep, x, constant(0.0, x->type().dtype()))};
}

}  // namespace

void registerTensorMakingConverters(ConverterTable& table) {
  table.add("Shape", &convertShape);
  table.add("Size", &convertSize);
  table.add("Constant", &convertConstant);
  table.add("ConstantOfShape", &convertConstantOfShape);
  table.add("Range", &convertRange);
  table.add("EyeLike", &convertEyeLike);
  table.add("Trilu", &convertTrilu);
}

}  // namespace tscope::engine::io::onnx_import
