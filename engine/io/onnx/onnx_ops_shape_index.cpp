// ONNX's indexing ops: Slice (a Subtensor; bounds constant or computed), Gather (a Subtensor for
// a scalar index, an AdvancedSubtensor1/AdvancedSubtensor for index arrays), GatherElements
// (an AdvancedSubtensor with index grids on the other axes), GatherND (an AdvancedSubtensor),
// ScatterND and ScatterElements (AdvancedSetSubtensor/AdvancedIncSubtensor) and NonZero (the
// engine's NonZero).

#include "engine/graph/apply.h"
#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/shape/nonzero.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>

namespace tscope::engine::io::onnx_import {

namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

// One bound per sliced axis: constants (clamped, Note [Huge bounds]) or computed 0-d scalars.
std::vector<IdxBound> boundsInput(const NodeContext& ctx, int input, std::string_view what) {
  std::vector<IdxBound> out;
  for (const VarPtr& e : vectorInputEntries(ctx, input, what)) out.emplace_back(e);
  return out;
}

std::vector<IdxBound> boundsAttr(const NodeContext& ctx, std::string_view name) {
  std::vector<IdxBound> out;
  for (std::int64_t v : ctx.attrInts(name)) out.emplace_back(clampHugeBound(v));
  return out;
}

// Note [ONNX Slice is numpy's]: ONNX clamps starts to [0, d] and ends to [-1, d] ([0, d - 1]
// and [-1, d - 1] for negative steps) after adding d to negative ones, which is Python's
// slice.indices(), what Subtensor does: INT64_MAX ends mean "to the end", INT64_MIN ends with a
// negative step "through index 0". Starts, ends and axes are attributes before opset 10, inputs
// (axes and steps optional) from it on; axes must be constants, the bounds may be computed.
std::vector<VarPtr> convertSlice(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  std::vector<IdxBound> starts, ends, steps;
  std::optional<std::vector<std::int64_t>> axes;
  if (ctx.opset() < 10) {
    starts = boundsAttr(ctx, "starts");
    ends = boundsAttr(ctx, "ends");
    if (ctx.hasAttr("axes")) axes = ctx.attrInts("axes");
  } else {
    starts = boundsInput(ctx, 1, "the starts");
    ends = boundsInput(ctx, 2, "the ends");
    if (ctx.hasInput(3)) axes = ctx.constantInts(3, "the axes");
    if (ctx.hasInput(4)) steps = boundsInput(ctx, 4, "the steps");
  }
  const std::size_t n = starts.size();
  if (!axes) {
    axes.emplace();
    for (std::size_t i = 0; i < n; ++i) axes->push_back(static_cast<std::int64_t>(i));
  }
  if (steps.empty()) steps.assign(n, IdxBound(std::int64_t{1}));
  if (ends.size() != n || axes->size() != n || steps.size() != n)
    ctx.fail("expected starts, ends, axes and steps of one length, found " +
             str(static_cast<std::int64_t>(n)) + ", " +
             str(static_cast<std::int64_t>(ends.size())) + ", " +
             str(static_cast<std::int64_t>(axes->size())) + ", " +
             str(static_cast<std::int64_t>(steps.size())));
  std::vector<Idx> index(static_cast<std::size_t>(rank), Idx::all());
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t i = 0; i < n; ++i) {
    const int axis = ctx.axis((*axes)[i], rank);
    if (seen[static_cast<std::size_t>(axis)])
      ctx.fail("expected distinct axes, found axis " + str(axis) + " twice");
    seen[static_cast<std::size_t>(axis)] = true;
    if (steps[i].value() == 0) ctx.fail("expected non-zero steps, found 0 for axis " + str(axis));
    index[static_cast<std::size_t>(axis)] = Idx::slice(starts[i], ends[i], steps[i]);
  }
  return {subtensor(x, index)};
}

// The variable x is the shape of (x = ShapeOp(y)), or null.
VarPtr shapeSource(const VarPtr& x) {
  const Apply* node = x->owner();
  if (!node || !dynamic_cast<const ShapeOp*>(&node->op())) return nullptr;
  return node->inputs()[0];
}

// Note [Gather]: ONNX's Gather is numpy's take with an index array of any rank: the output is
// x.shape[:axis] + indices.shape + x.shape[axis + 1:], negative indices counting from the end.
// A scalar index is a Subtensor (the axis goes); a 1-d index on axis 0 an AdvancedSubtensor1 (an
// embedding lookup); anything else one AdvancedSubtensor with full slices before the axis (a single
// index array keeps its place, Note [Advanced index layout]). Gather of Shape(y) with constant
// indices reads y's dimensions (ShapeI), so shapes computed from it stay static where y's are.
std::vector<VarPtr> convertGather(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const VarPtr& indices = ctx.input(1);
  const TensorType& t = x->type();
  const int axis = ctx.axis(ctx.attrInt("axis", 0), t.ndim());
  if (!isInteger(indices->type().dtype()))
    ctx.fail("expected integer indices, found " + indices->type().str());
  const std::int64_t dim = t.shape()[static_cast<std::size_t>(axis)];
  const std::optional<Tensor> known = ctx.constantInput(1);
  std::vector<std::int64_t> values;
  if (known) {
    values = tensorInts(*known);
    for (std::int64_t& v : values) {
      if (dim != kUnknownDim && (v < -dim || v >= dim))
        ctx.fail("index " + str(v) + " is out of range for axis " + str(axis) + " of " + t.str());
      if (v < 0 && dim != kUnknownDim) v += dim;
    }
  }
  if (const VarPtr y = shapeSource(x); y && known && known->ndim() <= 1) {
    std::vector<VarPtr> dims;
    for (std::int64_t v : values) dims.push_back(shapeI(y, static_cast<int>(v)));
    if (known->ndim() == 0) return {dims[0]};
    return {makeVector(dims, DType::Int64)};
  }
  if (indices->type().ndim() == 0)
    return {select(x, axis, known ? IdxBound(values[0]) : IdxBound(asInt64(indices)))};
  if (axis == 0 && indices->type().ndim() == 1) return {advancedSubtensor1(x, indices)};
  std::vector<AdvIdx> index(static_cast<std::size_t>(axis), AdvIdx(Idx::all()));
  index.emplace_back(indices);
  return {advancedSubtensor(x, index)};
}

// Note [GatherElements]: out[i][j][k] = x[i][indices[i][j][k]][k] for axis 1: an advanced index
// with `indices` on the axis and on every other axis a grid arange(d) shaped to broadcast along
// its own axis only, so the arrays broadcast to indices' shape, which is the output's.
std::vector<VarPtr> convertGatherElements(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const VarPtr& indices = ctx.input(1);
  const int rank = ctx.rank(0);
  if (indices->type().ndim() != rank)
    ctx.fail("expected indices of x's rank " + str(rank) + ", found " + indices->type().str());
  if (!isInteger(indices->type().dtype()))
    ctx.fail("expected integer indices, found " + indices->type().str());
  const int axis = ctx.axis(ctx.attrInt("axis", 0), rank);
  if (rank == 1) return {advancedSubtensor1(x, indices)};
  std::vector<AdvIdx> index;
  for (int a = 0; a < rank; ++a) {
    if (a == axis) {
      index.emplace_back(indices);
      continue;
    }
    std::vector<int> order(static_cast<std::size_t>(rank), DimShuffle::kNewAxis);
    order[static_cast<std::size_t>(a)] = 0;
    index.emplace_back(dimshuffle(arange(shapeI(indices, a)), order));
  }
  return {advancedSubtensor(x, index)};
}

// Note [ScatterND]: out = copy(data); out[indices[i][:k]] = updates[i] for every i of
// indices.shape[:-1], k = indices.shape[-1] (static), updates of shape indices.shape[:-1] +
// data.shape[k:]. That is numpy's out[idx[..., 0], ..., idx[..., k-1]] = updates: k adjacent
// index arrays of shape indices.shape[:-1] leading the index, whose broadcast shape comes first
// (Note [Advanced index layout]), followed by data's remaining axes, which is updates' shape. So
// ScatterND is an AdvancedSetSubtensor (reduction "none") or AdvancedIncSubtensor ("add", where
// duplicates accumulate as ONNX says) with indices computed at run time as readily as constant
// ones. ONNX leaves duplicate indices undefined without a reduction; here the last one in
// indices' row-major order wins, as AdvancedSetSubtensor does. Negative indices count from the
// end (as ONNX Runtime reads them); an index out of range is a run-time error of the node. The
// reductions "mul", "max" and "min" have no engine op: they are unrolled (Note [ScatterND by
// rows]).
//
// Note [ScatterND by rows]: with reduction mul, max or min, each of the M =
// prod(indices.shape[:-1]) update rows is applied in turn, out[idx_i] = f(out[idx_i], updates_i),
// one AdvancedSubtensor and one AdvancedSetSubtensor per row with 0-d indices; so duplicate indices
// combine, in indices' order, exactly as ONNX's reference does. M must be static and at most
// kMaxScatterRows.
constexpr std::int64_t kMaxScatterRows = 1024;

std::vector<VarPtr> convertScatterND(NodeContext& ctx) {
  const VarPtr& data = ctx.input(0);
  const VarPtr& indices = ctx.input(1);
  const VarPtr& updates = ctx.input(2);
  const std::string reduction = ctx.opset() >= 16 ? ctx.attrString("reduction", "none") : "none";
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    ctx.fail("expected reduction none, add, mul, max or min, found '" + reduction + "'");
  const TensorType& it = indices->type();
  if (!isInteger(it.dtype()) || it.ndim() < 1)
    ctx.fail("expected integer indices of rank >= 1, found " + it.str());
  const int rank = data->type().ndim();
  const std::int64_t k = it.shape().back();
  if (k == kUnknownDim)
    ctx.unsupported("ScatterND with indices whose last dimension is not static");
  if (k < 1 || k > rank)
    ctx.fail("expected indices whose last dimension is in [1, " + str(rank) + "] for data " +
             data->type().str() + ", found " + it.str());
  if (updates->type().dtype() != data->type().dtype())
    ctx.fail("expected updates of data's dtype, found " + updates->type().str() + " for data " +
             data->type().str());
  std::vector<std::int64_t> want(it.shape().begin(), it.shape().end() - 1);
  want.insert(want.end(), data->type().shape().begin() + k, data->type().shape().end());
  const auto& got = updates->type().shape();
  bool fits = got.size() == want.size();
  for (std::size_t i = 0; fits && i < want.size(); ++i)
    fits = got[i] == kUnknownDim || want[i] == kUnknownDim || got[i] == want[i];
  if (!fits)
    ctx.fail("expected updates of shape indices.shape[:-1] + data.shape[" + str(k) + ":] = " +
             TensorType(data->type().dtype(), want).str() + ", found " + updates->type().str());
  const VarPtr idx = asInt64(indices);
  std::vector<AdvIdx> index;
  for (std::int64_t j = 0; j < k; ++j) index.emplace_back(select(idx, it.ndim() - 1, IdxBound(j)));
  for (std::int64_t a = k; a < rank; ++a) index.emplace_back(Idx::all());
  if (reduction == "add") return {advancedIncSubtensor(data, updates, index)};
  if (reduction == "none") return {advancedSetSubtensor(data, updates, index)};
  std::int64_t rows = 1;
  for (int a = 0; a + 1 < it.ndim(); ++a) {
    if (it.shape()[static_cast<std::size_t>(a)] == kUnknownDim)
      ctx.unsupported("ScatterND with reduction '" + reduction + "' and indices of dynamic shape");
    rows *= it.shape()[static_cast<std::size_t>(a)];
  }
  if (rows > kMaxScatterRows)
    ctx.unsupported("ScatterND with reduction '" + reduction + "' over " + str(rows) +
                    " index rows (at most " + str(kMaxScatterRows) + ")");
  const VarPtr flatIdx = reshape(idx, ShapeExpr{constantInt(rows), constantInt(k)});
  ShapeExpr updateShape{constantInt(rows)};
  for (std::int64_t a = k; a < rank; ++a) updateShape.push_back(shapeI(data, static_cast<int>(a)));
  const VarPtr flatUpdates = reshape(updates, updateShape);
  VarPtr out = data;
  for (std::int64_t i = 0; i < rows; ++i) {
    const VarPtr row = select(flatIdx, 0, IdxBound(i));
    std::vector<AdvIdx> at;
    for (std::int64_t j = 0; j < k; ++j) at.emplace_back(select(row, 0, IdxBound(j)));
    for (std::int64_t a = k; a < rank; ++a) at.emplace_back(Idx::all());
    const VarPtr old = advancedSubtensor(out, at);
    const VarPtr update = select(flatUpdates, 0, IdxBound(i));
    const VarPtr combined = reduction == "mul"   ? mul(old, update)
                            : reduction == "max" ? maximum(old, update)
                                                 : minimum(old, update);
    out = advancedSetSubtensor(out, combined, at);
  }
  return {out};
}

// Note [ScatterElements]: out = copy(data); out[i][indices[i][j][k]][k] = updates[i][j][k] for
// axis 1, the write-side twin of GatherElements (Note [GatherElements]): the same index arrays,
// `indices` on the axis and an arange grid on every other axis, broadcasting to indices' shape,
// which is updates'. So one AdvancedSetSubtensor (reduction "none"; duplicates, undefined in
// ONNX, resolve as the last in indices' row-major order) or AdvancedIncSubtensor ("add"), with
// indices constant or computed; negative indices count from the end. Scatter (opsets 9-10) is the
// same op under its old name. The reductions "mul", "max" and "min" have no engine op and are
// refused.
std::vector<VarPtr> convertScatterElements(NodeContext& ctx) {
  const VarPtr& data = ctx.input(0);
  const VarPtr& indices = ctx.input(1);
  const VarPtr& updates = ctx.input(2);
  const int rank = ctx.rank(0);
  const std::string reduction = ctx.opset() >= 16 ? ctx.attrString("reduction", "none") : "none";
  if (reduction != "none" && reduction != "add") {
    if (reduction == "mul" || reduction == "max" || reduction == "min")
      ctx.unsupported(ctx.opType() + " with reduction '" + reduction + "'");
    ctx.fail("attribute 'reduction': expected none, add, mul, max or min, found '" + reduction +
             "'");
  }
  const TensorType& it = indices->type();
  if (!isInteger(it.dtype()) || it.ndim() != rank)
    ctx.fail("input 1 (indices): expected integer indices of data's rank " + str(rank) +
             ", found " + it.str());
  if (updates->type().dtype() != data->type().dtype() || updates->type().ndim() != rank)
    ctx.fail("input 2 (updates): expected a tensor of data's dtype and of indices' shape " +
             it.str() + ", found " + updates->type().str());
  for (int a = 0; a < rank; ++a) {
    const std::int64_t i = it.shape()[static_cast<std::size_t>(a)];
    const std::int64_t u = updates->type().shape()[static_cast<std::size_t>(a)];
    if (i != kUnknownDim && u != kUnknownDim && i != u)
      ctx.fail("input 2 (updates): expected indices' shape " + it.str() + ", found " +
               updates->type().str());
  }
  const int axis = ctx.axis(ctx.attrInt("axis", 0), rank);
  std::vector<AdvIdx> index;
  for (int a = 0; a < rank; ++a) {
    if (a == axis) {
      index.emplace_back(asInt64(indices));
      continue;
    }
    std::vector<int> order(static_cast<std::size_t>(rank), DimShuffle::kNewAxis);
    order[static_cast<std::size_t>(a)] = 0;
    index.emplace_back(dimshuffle(arange(shapeI(indices, a)), order));
  }
  if (reduction == "add") return {advancedIncSubtensor(data, updates, index)};
  return {advancedSetSubtensor(data, updates, index)};
}

// Note [GatherND]: out[b..., i...] = data[b..., indices[b..., i..., :]] with b the batch_dims
// leading axes shared by data and indices, k = indices.shape[-1] (static) entries indexing data's
// next k axes; the output is indices.shape[:-1] + data.shape[batch_dims + k:]. That is numpy's
// data[g_0, ..., g_{b-1}, idx[..., 0], ..., idx[..., k-1]] where g_a = arange(d_a) shaped to
// broadcast along indices' axis a only: b + k adjacent index arrays broadcasting to
// indices.shape[:-1], which leads the result (Note [Advanced index layout]), data's remaining axes
// after it. One AdvancedSubtensor, indices computed at run time or constant; negative indices
// count from the end, as for ScatterND (Note [ScatterND]). torch's boolean-mask indexing (x[m])
// exports as GatherND of Transpose(NonZero(m)).
std::vector<VarPtr> convertGatherND(NodeContext& ctx) {
  const VarPtr& data = ctx.input(0);
  const VarPtr& indices = ctx.input(1);
  const TensorType& it = indices->type();
  if (!isInteger(it.dtype()) || it.ndim() < 1)
    ctx.fail("input 1 (indices): expected integer indices of rank >= 1, found " + it.str());
  const int rank = data->type().ndim();
  const std::int64_t b = ctx.opset() >= 12 ? ctx.attrInt("batch_dims", 0) : 0;
  if (b < 0 || b >= std::min<std::int64_t>(rank, it.ndim()))
    ctx.fail("attribute 'batch_dims': expected 0 to " +
             str(std::min<std::int64_t>(rank, it.ndim()) - 1) + " for data " + data->type().str() +
             " and indices " + it.str() + ", found " + str(b));
  const std::int64_t k = it.shape().back();
  if (k == kUnknownDim)
    ctx.unsupported("GatherND with indices whose last dimension is not static (input 1 " +
                    it.str() + ")");
  if (k < 1 || b + k > rank)
    ctx.fail("input 1 (indices): expected a last dimension in [1, " + str(rank - b) +
             "] for data " + data->type().str() + " and batch_dims " + str(b) + ", found " +
             it.str());
  const VarPtr idx = asInt64(indices);
  std::vector<AdvIdx> index;
  for (std::int64_t a = 0; a < b; ++a) {
    std::vector<int> order(static_cast<std::size_t>(it.ndim() - 1), DimShuffle::kNewAxis);
    order[static_cast<std::size_t>(a)] = 0;
    index.emplace_back(dimshuffle(arange(shapeI(data, static_cast<int>(a))), order));
  }
  for (std::int64_t j = 0; j < k; ++j) index.emplace_back(select(idx, it.ndim() - 1, IdxBound(j)));
  for (std::int64_t a = b + k; a < rank; ++a) index.emplace_back(Idx::all());
  return {advancedSubtensor(data, index)};
}

// NonZero (opsets 9-18): the engine's NonZero, (rank, count) int64 positions in row-major order.
// ONNX Runtime reads a 0-d input as one element; that form is refused.
std::vector<VarPtr> convertNonZero(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  if (ctx.rank(0) == 0)
    ctx.unsupported("NonZero of a 0-d tensor (input 0 " + x->type().str() +
                    "; expected rank 1 or more)");
  return {nonzero(x)};
}

}  // namespace

void registerIndexConverters(ConverterTable& table) {
  table.add("Slice", &convertSlice);
  table.add("Gather", &convertGather);
  table.add("GatherElements", &convertGatherElements);
  table.add("GatherND", &convertGatherND);
  table.add("NonZero", &convertNonZero);
  table.add("ScatterElements", &convertScatterElements);
  table.add("Scatter", &convertScatterElements);
  table.add("ScatterND", &convertScatterND);
}

}  // namespace tscope::engine::io::onnx_import
