// ONNX's layout ops: Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Concat, Split, Expand,
// Tile, each one engine node (DimShuffle, Reshape, Join, Split, Alloc, Tile) where the shape is
// known while importing, with the shape arithmetic in front of it where it is computed; and
// DepthToSpace / SpaceToDepth, a Reshape, a DimShuffle and a Reshape. Indexing (Slice, Gather,
// GatherElements) is in onnx_ops_shape_index.cpp, the tensor makers (Shape, Size, Constant,
// ConstantOfShape, Range, EyeLike) in onnx_ops_shape_make.cpp.

#include "engine/graph/apply.h"
#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>

namespace tscope::engine::io::onnx_import {

namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

// The axes of a rank-`rank` tensor the list names, normalised; fails on a repeated axis.
std::vector<int> distinctAxes(const NodeContext& ctx, const std::vector<std::int64_t>& axes,
                              int rank) {
  std::vector<int> out;
  for (std::int64_t a : axes) {
    const int axis = ctx.axis(a, rank);
    if (std::find(out.begin(), out.end(), axis) != out.end())
      ctx.fail("expected distinct axes, found axis " + str(axis) + " twice");
    out.push_back(axis);
  }
  return out;
}

// Flatten: (d0 * ... * d(axis-1), d(axis) * ... * d(r-1)); axis in [-r, r].
std::vector<VarPtr> convertFlatten(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  std::int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    ctx.fail("expected axis in [" + str(-rank) + ", " + str(rank) + "], found " +
             str(ctx.attrInt("axis", 1)));
  const ShapeExpr dims = shapeOf(x);
  const auto split = dims.begin() + axis;
  return {reshape(x, ShapeExpr{sizeProduct(std::span(dims.begin(), split)),
                               sizeProduct(std::span(split, dims.end()))})};
}

// Note [Reshape zeros]: without allowzero (and always before opset 14) a 0 in the shape copies
// the input's dimension at that position. Constant entries are resolved here; a computed entry
// becomes `entry == 0 ? dim : entry`, except one that is itself a dimension (ShapeI, which
// `Gather(Shape(x), i)` imports as): that is taken as it is, so the common
// `x.view(x.size(0), -1)` stays a plain Reshape. It differs from ONNX only when that dimension
// is 0 at run time, an empty tensor.
std::vector<VarPtr> convertReshape(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  const bool allowZero = ctx.opset() >= 14 && ctx.attrInt("allowzero", 0) != 0;
  if (allowZero && !ctx.constantInput(1)) return {reshape(x, asInt64(ctx.input(1)))};
  ShapeExpr entries = vectorInputEntries(ctx, 1, "the shape");
  int inferred = -1;
  bool hasZero = false;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const int index = static_cast<int>(i);
    VarPtr& e = entries[i];
    const std::optional<std::int64_t> c = constantIntValue(e);
    if (!c) {
      const Apply* owner = e->owner();
      if (!allowZero && index < rank && !(owner && dynamic_cast<const ShapeI*>(&owner->op())))
        e = where(eq(e, constantInt(0)), shapeI(x, index), e);
      continue;
    }
    if (*c < -1)
      ctx.fail("expected shape entries >= -1, found " + str(*c) + " at entry " + str(index));
    if (*c == -1) {
      if (inferred >= 0)
        ctx.fail("expected at most one -1 in the shape, found two (entries " + str(inferred) +
                 " and " + str(index) + ")");
      inferred = index;
    } else if (*c == 0 && allowZero) {
      hasZero = true;
    } else if (*c == 0) {
      if (index >= rank)
        ctx.fail("shape entry " + str(index) +
                 " is 0 (copy the input's dimension), but the input " + x->type().str() +
                 " has no axis " + str(index));
      e = shapeI(x, index);
    }
  }
  if (hasZero && inferred >= 0)
    ctx.fail("expected no -1 in a shape with a 0 entry when allowzero=1");
  std::vector<std::int64_t> known;
  for (const VarPtr& e : entries)
    if (auto c = constantIntValue(e)) known.push_back(*c);
  if (known.size() != entries.size()) return {reshape(x, entries)};
  if (x->type().isFullyKnown()) {
    const std::int64_t n = shapeNumel(x->type().shape());
    std::int64_t product = 1;
    for (std::int64_t d : known)
      if (d != -1) product *= d;
    const bool fits = inferred >= 0 ? (product != 0 && n % product == 0) : product == n;
    if (!fits)
      ctx.fail("cannot reshape " + x->type().str() + " (" + str(n) + " elements) into " +
               shapeToString(known));
  }
  return {reshape(x, known)};
}

std::vector<VarPtr> convertTranspose(NodeContext& ctx) {
  const int rank = ctx.rank(0);
  std::vector<std::int64_t> fallback;
  for (int i = rank - 1; i >= 0; --i) fallback.push_back(i);
  const std::vector<std::int64_t> perm = ctx.attrInts("perm", fallback);
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  if (static_cast<int>(perm.size()) != rank)
    ctx.fail("expected perm to list " + str(rank) + " axes, found " +
             str(static_cast<std::int64_t>(perm.size())));
  std::vector<int> order;
  for (std::int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<std::size_t>(p)])
      ctx.fail("expected perm to be a permutation of 0.." + str(rank - 1) + ", found " +
               shapeToString(perm));
    seen[static_cast<std::size_t>(p)] = true;
    order.push_back(static_cast<int>(p));
  }
  return {transpose(ctx.input(0), order)};
}

// Squeeze: the listed axes (attribute before opset 13, input from it), or every axis of static
// size 1 when none are listed.
std::vector<VarPtr> convertSqueeze(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const TensorType& t = x->type();
  const int rank = t.ndim();
  std::vector<int> axes;
  if (auto listed = intsAttrOrInput(ctx, "axes", 1, 13)) {
    axes = distinctAxes(ctx, *listed, rank);
  } else {
    for (int i = 0; i < rank; ++i) {
      if (!t.isDimKnown(i))
        ctx.unsupported("Squeeze without axes of " + t.str() +
                        ", whose sizes are unknown while importing");
      if (t.shape()[static_cast<std::size_t>(i)] == 1) axes.push_back(i);
    }
  }
  std::sort(axes.begin(), axes.end());
  bool allStatic = true;
  for (int a : axes) {
    const std::int64_t d = t.shape()[static_cast<std::size_t>(a)];
    if (d != 1 && d != kUnknownDim)
      ctx.fail("cannot squeeze axis " + str(a) + " of " + t.str() + ": its size is " + str(d) +
               ", not 1");
    allStatic = allStatic && d == 1;
  }
  if (allStatic) {
    std::vector<int> order;
    for (int i = 0; i < rank; ++i)
      if (!std::binary_search(axes.begin(), axes.end(), i)) order.push_back(i);
    return {dimshuffle(x, order)};
  }
  // An axis of unknown size is checked at run time (squeeze asserts it is 1).
  VarPtr out = x;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) out = squeeze(out, *it);
  return {out};
}

std::vector<VarPtr> convertUnsqueeze(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const auto listed = intsAttrOrInput(ctx, "axes", 1, 13);
  if (!listed) ctx.fail("expected the axes to insert, found none");
  const int outRank = ctx.rank(0) + static_cast<int>(listed->size());
  const std::vector<int> axes = distinctAxes(ctx, *listed, outRank);
  std::vector<int> order;
  int next = 0;
  for (int i = 0; i < outRank; ++i)
    order.push_back(std::find(axes.begin(), axes.end(), i) != axes.end() ? DimShuffle::kNewAxis
                                                                         : next++);
  return {dimshuffle(x, order)};
}

std::vector<VarPtr> convertConcat(NodeContext& ctx) {
  std::vector<VarPtr> inputs;
  for (int i = 0; i < ctx.nInputs(); ++i)
    if (ctx.hasInput(i)) inputs.push_back(ctx.input(i));
  if (inputs.empty()) ctx.fail("expected at least one input, found none");
  const int rank = inputs[0]->type().ndim();
  for (const VarPtr& v : inputs)
    if (v->type().ndim() != rank)
      ctx.fail("expected inputs of one rank, found " + inputs[0]->type().str() + " and " +
               v->type().str());
  const int axis = ctx.axis(ctx.attrInt("axis"), rank);
  if (inputs.size() == 1) return {identity(inputs[0])};
  return {join(axis, inputs)};
}

// Split: sizes from the attribute 'split' (before opset 13) or input 1 (from it); else
// num_outputs chunks of ceil(d / n) with a smaller last one (opset 18); else as many equal parts
// as the node has outputs.
std::vector<VarPtr> convertSplit(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int axis = ctx.axis(ctx.attrInt("axis", 0), ctx.rank(0));
  const int n = ctx.nOutputs();
  const std::int64_t dim = x->type().shape()[static_cast<std::size_t>(axis)];
  if (ctx.opset() >= 13 && ctx.hasInput(1) && !ctx.constantInput(1)) {
    const VarPtr& sizes = ctx.input(1);
    if (sizes->type().ndim() != 1 || sizes->type().shape()[0] != n)
      ctx.fail("expected " + str(n) + " split sizes (one per output), found " +
               sizes->type().str());
    if (n == 1) return {identity(x)};
    return split(x, asInt64(sizes), axis);
  }
  if (auto sizes = intsAttrOrInput(ctx, "split", 1, 13)) {
    if (static_cast<int>(sizes->size()) != n)
      ctx.fail("expected " + str(n) + " split sizes (one per output), found " +
               str(static_cast<std::int64_t>(sizes->size())));
    std::int64_t total = 0;
    for (std::int64_t s : *sizes) {
      if (s < 0 || s > (std::int64_t{1} << 40))
        ctx.fail("expected split sizes from 0 to 2^40, found " + shapeToString(*sizes));
      total += s;
    }
    if (dim != kUnknownDim && total != dim)
      ctx.fail("expected the split sizes " + shapeToString(*sizes) + " to add up to " + str(dim) +
               " (axis " + str(axis) + " of " + x->type().str() + "), found " + str(total));
    if (n == 1) return {identity(x)};
    return split(x, *sizes, axis);
  }
  const bool chunks = ctx.opset() >= 18 && ctx.hasAttr("num_outputs");
  if (chunks && ctx.attrInt("num_outputs") != n)
    ctx.fail("expected num_outputs to equal the number of outputs " + str(n) + ", found " +
             str(ctx.attrInt("num_outputs")));
  if (n == 1) return {identity(x)};
  if (dim != kUnknownDim) {
    if (!chunks && dim % n != 0)
      ctx.fail("cannot split axis " + str(axis) + " of " + x->type().str() + " into " + str(n) +
               " equal parts");
    const std::int64_t part = chunks ? (dim + n - 1) / n : dim / n;
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(n), part);
    sizes.back() = dim - part * (n - 1);
    if (sizes.back() < 0)
      ctx.fail("cannot split axis " + str(axis) + " of " + x->type().str() + " into " + str(n) +
               " chunks");
    return split(x, sizes, axis);
  }
  const VarPtr d = shapeI(x, axis);
  const VarPtr count = constantInt(n);
  const VarPtr part = chunks ? intDiv(add(d, constantInt(n - 1)), count) : intDiv(d, count);
  std::vector<VarPtr> sizes(static_cast<std::size_t>(n), part);
  sizes.back() = sub(d, mul(part, constantInt(n - 1)));
  return split(x, makeVector(sizes, DType::Int64), axis);
}

// Expand: x broadcast with the shape by numpy's rules (both ways: a 1 in the shape keeps x's
// size), as one Alloc of x. Per output axis (aligned on the right) the size is x's when the
// shape says 1 or has no entry, the shape's when x has none or a static 1, else the larger of
// the two at run time.
std::vector<VarPtr> convertExpand(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const TensorType& t = x->type();
  const ShapeExpr shape = vectorInputEntries(ctx, 1, "the shape");
  const int rank = t.ndim();
  const int n = static_cast<int>(shape.size());
  const int outRank = std::max(rank, n);
  ShapeExpr out;
  for (int i = 0; i < outRank; ++i) {
    const int xi = i - (outRank - rank);
    const int si = i - (outRank - n);
    if (si < 0) {
      out.push_back(shapeI(x, xi));
      continue;
    }
    const VarPtr& s = shape[static_cast<std::size_t>(si)];
    if (xi < 0) {
      out.push_back(s);
      continue;
    }
    const std::int64_t xd = t.shape()[static_cast<std::size_t>(xi)];
    const std::optional<std::int64_t> sd = constantIntValue(s);
    if (sd && *sd < 0)
      ctx.fail("expected shape entries >= 0, found " + str(*sd) + " at entry " + str(si));
    if (sd == 1) {
      out.push_back(shapeI(x, xi));
    } else if (sd) {
      if (xd != kUnknownDim && xd != 1 && xd != *sd)
        ctx.fail("cannot expand " + t.str() + " to size " + str(*sd) + " on axis " + str(i) +
                 ": axis " + str(xi) + " has size " + str(xd));
      out.push_back(s);
    } else if (xd == 1) {
      out.push_back(s);
    } else if (xd != kUnknownDim) {
      out.push_back(shapeI(x, xi));
    } else {
      out.push_back(maximum(s, shapeI(x, xi)));
    }
  }
  return {alloc(x, out)};
}

std::vector<VarPtr> convertTile(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const std::vector<std::int64_t> reps = ctx.constantInts(1, "repeats");
  if (static_cast<int>(reps.size()) != ctx.rank(0))
    ctx.fail("expected one repeat count per axis of " + x->type().str() + ", found " +
             shapeToString(reps));
  for (std::int64_t r : reps)
    if (r < 0) ctx.fail("expected repeat counts >= 0, found " + shapeToString(reps));
  return {tile(x, reps)};
}

// --- DepthToSpace / SpaceToDepth (PixelShuffle / PixelUnshuffle) -------------------------------

// d * b or d / b for a 0-d int64 size, folded when d is a constant.
VarPtr dimTimes(const VarPtr& d, std::int64_t b) {
  return sizeProduct(std::vector<VarPtr>{d, constantInt(b)});
}
VarPtr dimOver(const VarPtr& d, std::int64_t b) {
  if (auto v = constantIntValue(d)) return constantInt(*v / b);
  return intDiv(d, constantInt(b));
}

// The blocksize of a 4-d input whose axis `axis` (called `what`) splits into blocks of b, or of b^2
// when `squared`; fails naming the sizes when a static one does not divide.
std::int64_t blockSize(const NodeContext& ctx, int axis, bool squared, std::string_view what) {
  if (ctx.rank(0) != 4)
    ctx.fail("input 0: expected a 4-d tensor (N, C, H, W), found " + ctx.input(0)->type().str());
  const std::int64_t b = ctx.attrInt("blocksize");
  if (b < 1 || b > (std::int64_t{1} << 20))
    ctx.fail("attribute 'blocksize': expected a value from 1 to 2^20, found " + str(b));
  const std::int64_t n = ctx.input(0)->type().shape()[static_cast<std::size_t>(axis)];
  const std::int64_t divisor = squared ? b * b : b;
  if (n != kUnknownDim && n % divisor != 0)
    ctx.fail("input 0: expected " + std::string(what) + " divisible by " + str(divisor) +
             " (blocksize " + str(b) + "), found " + str(n));
  return b;
}

// DepthToSpace: (N, C, H, W) -> (N, C / b^2, H * b, W * b). DCR reads the channels as
// (b, b, C / b^2), CRD (PyTorch's PixelShuffle) as (C / b^2, b, b).
std::vector<VarPtr> convertDepthToSpace(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const std::int64_t b = blockSize(ctx, 1, true, "the channels (axis 1)");
  const std::string mode = ctx.opset() >= 11 ? ctx.attrString("mode", "DCR") : "DCR";
  if (mode != "DCR" && mode != "CRD")
    ctx.fail("attribute 'mode': expected DCR or CRD, found '" + mode + "'");
  const ShapeExpr d = shapeOf(x);
  const VarPtr c = dimOver(d[1], b * b), bb = constantInt(b);
  const bool dcr = mode == "DCR";
  const VarPtr split = reshape(
      x, dcr ? ShapeExpr{d[0], bb, bb, c, d[2], d[3]} : ShapeExpr{d[0], c, bb, bb, d[2], d[3]});
  const VarPtr moved = dimshuffle(
      split, dcr ? std::vector<int>{0, 3, 4, 1, 5, 2} : std::vector<int>{0, 1, 4, 2, 5, 3});
  return {reshape(moved, ShapeExpr{d[0], c, dimTimes(d[2], b), dimTimes(d[3], b)})};
}

// SpaceToDepth: (N, C, H, W) -> (N, C * b^2, H / b, W / b), the channels as (b, b, C) (the inverse
// of DCR; PyTorch's PixelUnshuffle exports as Reshape/Transpose instead).
std::vector<VarPtr> convertSpaceToDepth(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const std::int64_t b = blockSize(ctx, 2, false, "the height (axis 2)");
  blockSize(ctx, 3, false, "the width (axis 3)");
  const ShapeExpr d = shapeOf(x);
  const VarPtr h = dimOver(d[2], b), w = dimOver(d[3], b), bb = constantInt(b);
  const VarPtr split = reshape(x, ShapeExpr{d[0], d[1], h, bb, w, bb});
  const VarPtr moved = dimshuffle(split, std::vector<int>{0, 3, 5, 1, 2, 4});
  return {reshape(moved, ShapeExpr{d[0], dimTimes(d[1], b * b), h, w})};
}

}  // namespace

void registerShapeConverters(ConverterTable& table) {
  table.add("Flatten", &convertFlatten);
  table.add("Reshape", &convertReshape);
  table.add("Transpose", &convertTranspose);
  table.add("Squeeze", &convertSqueeze);
  table.add("Unsqueeze", &convertUnsqueeze);
  table.add("Concat", &convertConcat);
  table.add("Split", &convertSplit);
  table.add("Expand", &convertExpand);
  table.add("Tile", &convertTile);
  table.add("DepthToSpace", &convertDepthToSpace);
  table.add("SpaceToDepth", &convertSpaceToDepth);
  registerIndexConverters(table);
  registerTensorMakingConverters(table);
}

}  // namespace tscope::engine::io::onnx_import
