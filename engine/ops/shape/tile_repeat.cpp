#include "engine/ops/shape/tile_repeat.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <numeric>

namespace tscope::engine {

using namespace shape_detail;

namespace {
constexpr std::int64_t kMaxCount = std::int64_t{1} << 31;

// reps padded with leading 1s to n entries (np.tile).
std::vector<std::int64_t> padFront(const std::vector<std::int64_t>& v, std::size_t n,
                                   std::int64_t fill) {
  std::vector<std::int64_t> out(n - std::min(n, v.size()), fill);
  out.insert(out.end(), v.begin(), v.end());
  return out;
}
}  // namespace

// --- Tile ----------------------------------------------------------------------------------------

Tile::Tile(std::vector<std::int64_t> reps) : m_reps(std::move(reps)) {
  if (m_reps.size() > 64) throw std::invalid_argument("Tile: at most 64 reps");
  for (std::int64_t r : m_reps)
    if (r < 0 || r > kMaxCount)
      throw std::invalid_argument("Tile: each rep must be in 0..2^31, found " + std::to_string(r));
}

std::vector<TensorType> Tile::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& x = inputs[0]->type();
  const std::size_t n = std::max(static_cast<std::size_t>(x.ndim()), m_reps.size());
  const auto reps = padFront(m_reps, n, 1);
  auto shape = padFront(x.shape(), n, 1);
  for (std::size_t j = 0; j < n; ++j)
    if (shape[j] != kUnknownDim) shape[j] *= reps[j];
  return {TensorType(x.dtype(), std::move(shape), x.device())};
}

void Tile::perform(const Apply&, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const std::size_t n = std::max(static_cast<std::size_t>(x.ndim()), m_reps.size());
  const auto reps = padFront(m_reps, n, 1);
  const auto xShape = padFront(x.shape(), n, 1);
  const auto xStrides = padFront(x.strides(), n, 0);
  Shape shape(n);
  for (std::size_t j = 0; j < n; ++j) shape[j] = xShape[j] * reps[j];
  Tensor& out = reuseOrAllocate(outputs[0], x.dtype(), shape);
  if (out.numel() == 0) return;
  // The output seen as (reps0, x0, reps1, x1, ...): every (reps) block is a copy of x, which is
  // x seen with stride 0 on the reps axes.
  const Strides s = contiguousStrides(shape);
  Shape blocks;
  Strides outStrides, inStrides;
  for (std::size_t j = 0; j < n; ++j) {
    blocks.push_back(reps[j]);
    blocks.push_back(xShape[j]);
    outStrides.push_back(xShape[j] * s[j]);
    outStrides.push_back(s[j]);
    inStrides.push_back(0);
    inStrides.push_back(xStrides[j]);
  }
  Tensor dst = out.view(blocks, std::move(outStrides), out.offset());
  dst.copyFrom(x.view(blocks, std::move(inStrides), x.offset()));
}

std::vector<ShapeExpr> Tile::inferShape(const Apply& node,
                                        std::span<const ShapeExpr> inputShapes) const {
  const std::size_t n = static_cast<std::size_t>(node.outputRef(0).type().ndim());
  const auto reps = padFront(m_reps, n, 1);
  ShapeExpr xs(n - inputShapes[0].size(), constantInt(1));
  xs.insert(xs.end(), inputShapes[0].begin(), inputShapes[0].end());
  ShapeExpr out;
  for (std::size_t j = 0; j < n; ++j) out.push_back(intMul(xs[j], constantInt(reps[j])));
  return {out};
}

std::vector<Grad> Tile::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const VarPtr& g = outputGrads[0];
  const std::size_t n = static_cast<std::size_t>(g->type().ndim());
  const auto reps = padFront(m_reps, n, 1);
  const ShapeExpr xShape = shapeOf(x);
  ShapeExpr xs(n - xShape.size(), constantInt(1));
  xs.insert(xs.end(), xShape.begin(), xShape.end());
  // g as (reps0, x0, reps1, x1, ...), summed over the reps axes.
  ShapeExpr blocks;
  Axes repAxes;
  for (std::size_t j = 0; j < n; ++j) {
    if (reps[j] != 1) repAxes.push_back(static_cast<int>(blocks.size()));
    if (reps[j] != 1) blocks.push_back(constantInt(reps[j]));
    blocks.push_back(xs[j]);
  }
  VarPtr gx = g;
  if (!repAxes.empty()) gx = sum(reshape(g, blocks), repAxes);
  return {gx->type().ndim() == x->type().ndim() ? gx : reshape(gx, xShape)};
}

std::optional<std::vector<VarPtr>> Tile::pushforward(const Apply&,
                                                     std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{operator()({tangents[0]})};
}

OpPtr Tile::fromProps(const nlohmann::json& props) {
  propKeys(props, "Tile", {"reps"});
  return std::make_shared<Tile>(propIntList(props, "Tile", "reps", 0, kMaxCount, 64));
}

// --- Repeat --------------------------------------------------------------------------------------

Repeat::Repeat(std::vector<std::int64_t> repeats, int axis)
    : m_repeats(std::move(repeats)), m_axis(axis) {
  if (m_repeats.empty())
    throw std::invalid_argument("Repeat: expected one or more repeats, found none");
  if (axis < 0 || axis > 63)
    throw std::invalid_argument("Repeat: axis must be in 0..63, found " + std::to_string(axis));
  for (std::int64_t r : m_repeats)
    if (r < 0 || r > kMaxCount)
      throw std::invalid_argument("Repeat: each count must be in 0..2^31, found " +
                                  std::to_string(r));
}

std::vector<TensorType> Repeat::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& x = inputs[0]->type();
  if (x.ndim() <= m_axis)
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(m_axis));
  std::vector<std::int64_t> shape = x.shape();
  std::int64_t& d = shape[static_cast<std::size_t>(m_axis)];
  if (uniform()) {
    d = m_repeats[0] == 0 ? 0 : (d == kUnknownDim ? kUnknownDim : d * m_repeats[0]);
  } else {
    if (d != kUnknownDim && d != static_cast<std::int64_t>(m_repeats.size()))
      throwInputError(inputs, 0,
                      "a tensor with " + std::to_string(m_repeats.size()) + " elements on axis " +
                          std::to_string(m_axis) + " (one per repeat count)");
    d = std::accumulate(m_repeats.begin(), m_repeats.end(), std::int64_t{0});
  }
  return {TensorType(x.dtype(), std::move(shape), x.device())};
}

void Repeat::perform(const Apply&, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const std::size_t axis = static_cast<std::size_t>(m_axis);
  const std::int64_t d = x.shape().at(axis);
  if (!uniform() && d != static_cast<std::int64_t>(m_repeats.size()))
    throw std::invalid_argument(str() + ": expected " + std::to_string(m_repeats.size()) +
                                " elements on axis " + std::to_string(m_axis) + ", found shape " +
                                shapeToString(x.shape()));
  Shape shape = x.shape();
  shape[axis] = uniform() ? d * m_repeats[0]
                          : std::accumulate(m_repeats.begin(), m_repeats.end(), std::int64_t{0});
  Tensor& out = reuseOrAllocate(outputs[0], x.dtype(), shape);
  if (out.numel() == 0) return;
  if (uniform()) {
    // The output seen as (..., d, r, ...): each element of x repeated along the new r axis.
    const std::int64_t r = m_repeats[0];
    const Strides s = contiguousStrides(shape);
    Shape blocks = x.shape();
    blocks.insert(blocks.begin() + static_cast<std::ptrdiff_t>(axis) + 1, r);
    Strides outStrides = s;
    outStrides[axis] = s[axis] * r;
    outStrides.insert(outStrides.begin() + static_cast<std::ptrdiff_t>(axis) + 1, s[axis]);
    Strides inStrides = x.strides();
    inStrides.insert(inStrides.begin() + static_cast<std::ptrdiff_t>(axis) + 1, 0);
    Tensor dst = out.view(blocks, std::move(outStrides), out.offset());
    dst.copyFrom(x.view(blocks, std::move(inStrides), x.offset()));
    return;
  }
  std::int64_t offset = 0;
  for (std::int64_t i = 0; i < d; ++i) {
    const std::int64_t r = m_repeats[static_cast<std::size_t>(i)];
    if (r == 0) continue;
    Tensor dst = out.slice(m_axis, offset, offset + r);
    dst.copyFrom(x.slice(m_axis, i, i + 1).broadcastTo(dst.shape()));
    offset += r;
  }
}

std::vector<ShapeExpr> Repeat::inferShape(const Apply& node,
                                          std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out = inputShapes[0];
  const std::int64_t known = node.outputRef(0).type().shape()[static_cast<std::size_t>(m_axis)];
  VarPtr& d = out[static_cast<std::size_t>(m_axis)];
  d = known != kUnknownDim ? constantInt(known) : intMul(d, constantInt(m_repeats[0]));
  return {out};
}

std::vector<Grad> Repeat::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const VarPtr& g = outputGrads[0];
  const int ndim = x->type().ndim();
  if (uniform()) {
    // g as (..., d, r, ...), summed over r.
    ShapeExpr blocks = shapeOf(x);
    blocks.insert(blocks.begin() + m_axis + 1, constantInt(m_repeats[0]));
    return {sum(reshape(g, blocks), {m_axis + 1})};
  }
  // Output element k comes from element idx[k] of the axis: the gradient scatters g back with
  // duplicates accumulated (AdvancedIncSubtensor1), on the axis moved to the front.
  std::vector<double> idx;
  for (std::size_t i = 0; i < m_repeats.size(); ++i)
    idx.insert(idx.end(), static_cast<std::size_t>(m_repeats[i]), static_cast<double>(i));
  VarPtr idxVar =
      constant(Tensor::fromDoubles(DType::Int64, {static_cast<std::int64_t>(idx.size())}, idx));
  std::vector<int> front{m_axis}, back;
  for (int i = 0; i < ndim; ++i)
    if (i != m_axis) front.push_back(i);
  for (int i = 1; i <= m_axis; ++i) back.push_back(i);
  back.push_back(0);
  for (int i = m_axis + 1; i < ndim; ++i) back.push_back(i);
  VarPtr xFront = dimshuffle(x, front);
  VarPtr gx = advancedIncSubtensor1(zerosLike(xFront), dimshuffle(g, front), idxVar);
  return {dimshuffle(gx, back)};
}

std::optional<std::vector<VarPtr>> Repeat::pushforward(const Apply&,
                                                       std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{operator()({tangents[0]})};
}

OpPtr Repeat::fromProps(const nlohmann::json& props) {
  propKeys(props, "Repeat", {"repeats", "axis"});
  return std::make_shared<Repeat>(propIntList(props, "Repeat", "repeats", 0, kMaxCount, 1 << 20),
                                  static_cast<int>(propInt(props, "Repeat", "axis", 0, 63)));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr tile(const VarPtr& x, const std::vector<std::int64_t>& reps, std::source_location site) {
  return std::make_shared<Tile>(reps)->operator()({x}, site);
}

VarPtr repeat(const VarPtr& x, std::int64_t repeats, std::optional<int> axis,
              std::source_location site) {
  return repeat(x, std::vector<std::int64_t>{repeats}, axis, site);
}

VarPtr repeat(const VarPtr& x, const std::vector<std::int64_t>& repeats, std::optional<int> axis,
              std::source_location site) {
  if (!axis) return repeat(flatten(x, 1, site), repeats, 0, site);
  int a = *axis;
  const int ndim = x->type().ndim();
  if (a < 0) a += ndim;
  if (a < 0 || a >= ndim)
    throw TypeError("repeat: axis " + std::to_string(*axis) + " is out of range for " +
                    x->type().str());
  return std::make_shared<Repeat>(repeats, a)->operator()({x}, site);
}

}  // namespace tscope::engine
