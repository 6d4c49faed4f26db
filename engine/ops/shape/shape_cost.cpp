// The costs of the shape and indexing family (Op::cost): views, shape queries, copies,
// concatenation, allocation, gathers and scatters.

#include "engine/ops/cost_common.h"
#include "engine/ops/shape/advanced_index.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/nonzero.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/shape_vector.h"
#include "engine/ops/shape/specify_shape.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/ops/shape/tile_repeat.h"
#include "engine/ops/shape/topk.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>

namespace tscope::engine {

// Note [Shape op cost]: a view (DimShuffle, Reshape, SpecifyShape, Subtensor, Split) moves no
// tensor data: known, 0 flops, 0 bytes. Reshape copies when its input is not contiguous, which
// the shapes alone cannot tell; the model counts the usual view. Shape and MakeVector move a few
// int64s and count them. Copies (Tile, Repeat, Join, Alloc, ARange, OneHot) read their inputs once
// and write their outputs: bytes only, 0 flops.
OpCost DimShuffle::cost(const Apply&, std::span<const Shape>) const {
  return cost::view();
}
OpCost Reshape::cost(const Apply&, std::span<const Shape>) const {
  return cost::view();
}
OpCost SpecifyShape::cost(const Apply&, std::span<const Shape>) const {
  return cost::view();
}
OpCost Subtensor::cost(const Apply&, std::span<const Shape>) const {
  return cost::view();
}
OpCost Split::cost(const Apply&, std::span<const Shape>) const {
  return cost::view();
}

OpCost ShapeOp::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  OpCost c = cost::view();
  c.bytesWritten = static_cast<double>(in[0].size()) * sizeof(std::int64_t);
  return c;
}

OpCost MakeVector::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape outs[] = {Shape{static_cast<std::int64_t>(in.size())}};
  return cost::movement(node, in, outs);
}

namespace {

OpCost copyCost(const Apply& node, std::span<const Shape> in) {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  return cost::movement(node, in, *out);
}

}  // namespace

OpCost Tile::cost(const Apply& node, std::span<const Shape> in) const {
  return copyCost(node, in);
}
OpCost Repeat::cost(const Apply& node, std::span<const Shape> in) const {
  return copyCost(node, in);
}
OpCost Alloc::cost(const Apply& node, std::span<const Shape> in) const {
  return copyCost(node, in);
}
// ARange(start, stop, step): ceil((stop - start) / step) elements, from the inputs' values when
// they are constants (its inferShape's division does not fold), else as copyCost finds it.
OpCost ARange::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in) || node.nInputs() != 3) return {};
  const Tensor* start = valueOf(*node.input(0));
  const Tensor* stop = valueOf(*node.input(1));
  const Tensor* step = valueOf(*node.input(2));
  if (start && stop && step && start->numel() == 1 && stop->numel() == 1 && step->numel() == 1) {
    const double a = start->toDoubles()[0], b = stop->toDoubles()[0], d = step->toDoubles()[0];
    if (d == 0 || !std::isfinite(a) || !std::isfinite(b) || !std::isfinite(d)) return {};
    const double n = std::max(0.0, std::ceil((b - a) / d));
    const Shape outs[] = {Shape{static_cast<std::int64_t>(n)}};
    return cost::movement(node, in, outs);
  }
  return copyCost(node, in);
}

// Join{axis}(a, b, ...): every input read, their concatenation written (the sum of their sizes).
OpCost Join::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  OpCost c = cost::view();
  c.bytesRead = cost::allInputBytes(node, in);
  c.bytesWritten = c.bytesRead;
  return c;
}

// Note [Gather and scatter cost]: a gather reads the elements it picks, not its whole source (an
// embedding lookup of 32 rows out of a million reads 32 rows), plus its indices, and writes its
// result; a scatter (the inc/set forms) reads y and the indices, reads and writes the region of x
// they address (y's size), adds once per element of y for inc (0 for set), and, when it is not
// inplace, first copies x (x read and written whole).
namespace {

OpCost gatherCost(const Apply& node, std::span<const Shape> in) {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  OpCost c = cost::view();
  c.bytesWritten = cost::allOutputBytes(node, *out);
  c.bytesRead = c.bytesWritten;
  for (int i = 1; i < node.nInputs(); ++i) c.bytesRead += cost::inputBytes(node, in, i);
  return c;
}

OpCost scatterCost(const Apply& node, std::span<const Shape> in, bool set, bool inplace) {
  if (!cost::fits(node, in) || node.nInputs() < 2) return {};
  const DType dtype = node.input(0)->type().dtype();
  const double region = cost::bytes(in[1], dtype);
  OpCost c = cost::view();
  c.flops = set ? 0 : cost::elements(in[1]);
  for (int i = 1; i < node.nInputs(); ++i) c.bytesRead += cost::inputBytes(node, in, i);
  c.bytesRead += set ? 0 : region;
  c.bytesWritten = region;
  if (!inplace) {
    c.bytesRead += cost::inputBytes(node, in, 0);
    c.bytesWritten += cost::inputBytes(node, in, 0);
  }
  return c;
}

}  // namespace

OpCost AdvancedSubtensor1::cost(const Apply& node, std::span<const Shape> in) const {
  return gatherCost(node, in);
}
OpCost AdvancedSubtensor::cost(const Apply& node, std::span<const Shape> in) const {
  return gatherCost(node, in);
}
OpCost AdvancedIncSubtensor1::cost(const Apply& node, std::span<const Shape> in) const {
  return scatterCost(node, in, m_set, m_inplace);
}
OpCost AdvancedIncSubtensor::cost(const Apply& node, std::span<const Shape> in) const {
  return scatterCost(node, in, m_set, m_inplace);
}
OpCost IncSubtensor::cost(const Apply& node, std::span<const Shape> in) const {
  return scatterCost(node, in, m_set, m_inplace);
}

// TopK{axis,k}: a selection of k out of n along the axis costs about n log2(k) comparisons per
// row (a heap of k; at least one per element); x read, values and indices written.
OpCost TopK::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  OpCost c = cost::movement(node, in, *out);
  const double k = static_cast<double>(m_k);
  c.flops = cost::elements(in[0]) * std::max(1.0, std::ceil(std::log2(k + 1)));
  return c;
}

// NonZero: its output's size depends on x's values, which a cost from shapes cannot know:
// unknown on purpose (unless the output type happens to be static).
OpCost NonZero::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  return cost::movement(node, in, *out, 1);
}

}  // namespace tscope::engine
