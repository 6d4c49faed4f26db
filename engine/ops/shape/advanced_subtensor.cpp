#include "engine/ops/shape/advanced_subtensor.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <cstring>

namespace tscope::engine {

using namespace shape_detail;

namespace {
// The rows idx names, each checked and wrapped (negative counts from the end).
std::vector<std::int64_t> checkedRows(const std::string& op, const Tensor& idxValue,
                                      std::int64_t size) {
  std::vector<std::int64_t> rows = readIndices(idxValue, op + ": idx");
  for (std::int64_t& r : rows) {
    if (r < -size || r >= size)
      throw std::out_of_range(op + ": index " + std::to_string(r) +
                              " is out of bounds for axis 0 with size " + std::to_string(size));
    if (r < 0) r += size;
  }
  return rows;
}

void checkIndexVector(const Op& op, std::span<const VarPtr> inputs, int index) {
  const TensorType& t = inputs[static_cast<std::size_t>(index)]->type();
  if (t.ndim() != 1 || !isInteger(t.dtype()))
    throw TypeError(op.str() + ": input " + std::to_string(index) +
                    (inputs[static_cast<std::size_t>(index)]->name().empty()
                         ? std::string()
                         : " ('" + inputs[static_cast<std::size_t>(index)]->name() + "')") +
                    ": expected a 1-d integer index vector, found " + t.str());
}

// The shape of the rows x[idx] selects: (len(idx),) + x.shape[1:].
std::vector<std::int64_t> gatheredShape(const TensorType& x, const TensorType& idx) {
  std::vector<std::int64_t> shape = x.shape();
  shape[0] = idx.shape()[0];
  return shape;
}

std::int64_t rowSize(const Shape& shape) {
  std::int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}
}  // namespace

// --- AdvancedSubtensor1 --------------------------------------------------------------------------

std::vector<TensorType> AdvancedSubtensor1::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  const TensorType& x = inputs[0]->type();
  if (x.ndim() == 0) throwInputError(inputs, 0, "a tensor of rank 1 or more");
  checkIndexVector(*this, inputs, 1);
  return {TensorType(x.dtype(), gatheredShape(x, inputs[1]->type()), x.device())};
}

void AdvancedSubtensor1::perform(const Apply&, std::span<const Tensor* const> inputs,
                                 std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const std::vector<std::int64_t> rows = checkedRows(str(), *inputs[1], x.shape()[0]);
  Shape shape = x.shape();
  shape[0] = static_cast<std::int64_t>(rows.size());
  Tensor& out = reuseOrAllocate(outputs[0], x.dtype(), shape);
  if (x.isContiguous()) {
    const std::size_t bytes = static_cast<std::size_t>(rowSize(x.shape())) * x.itemSize();
    const auto* src = static_cast<const std::byte*>(x.rawData());
    auto* dst = static_cast<std::byte*>(out.rawData());
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (bytes)
        std::memcpy(dst + k * bytes, src + static_cast<std::size_t>(rows[k]) * bytes, bytes);
    return;
  }
  for (std::size_t k = 0; k < rows.size(); ++k) {
    Tensor row = out.select(0, static_cast<std::int64_t>(k));
    row.copyFrom(x.select(0, rows[k]));
  }
}

std::vector<ShapeExpr> AdvancedSubtensor1::inferShape(
    const Apply&, std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out = inputShapes[0];
  out[0] = inputShapes[1][0];
  return {out};
}

std::vector<Grad> AdvancedSubtensor1::pullback(const Apply& node,
                                               std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  return {advancedIncSubtensor1(zerosLike(x), outputGrads[0], node.input(1)), Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> AdvancedSubtensor1::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{operator()({tangents[0], node.input(1)})};
}

std::vector<std::vector<bool>> AdvancedSubtensor1::connectionPattern(const Apply&) const {
  return {{true}, {false}};
}

OpPtr AdvancedSubtensor1::fromProps(const nlohmann::json& props) {
  propKeys(props, "AdvancedSubtensor1", {});
  return std::make_shared<AdvancedSubtensor1>();
}

// --- AdvancedIncSubtensor1 -----------------------------------------------------------------------

nlohmann::json AdvancedIncSubtensor1::props() const {
  return {{"set_instead_of_inc", m_set}, {"inplace", m_inplace}};
}

std::string AdvancedIncSubtensor1::str() const {
  return std::string(m_set ? "AdvancedSetSubtensor1" : "AdvancedIncSubtensor1") +
         (m_inplace ? "{inplace}" : "");
}

std::vector<TensorType> AdvancedIncSubtensor1::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 3);
  const TensorType& x = inputs[0]->type();
  const TensorType& y = inputs[1]->type();
  if (x.ndim() == 0) throwInputError(inputs, 0, "a tensor of rank 1 or more");
  checkIndexVector(*this, inputs, 2);
  if (y.device() != x.device())
    throwInputError(inputs, 1, "a tensor on " + std::string(deviceName(x.device())));
  if (promoteTypes(y.dtype(), x.dtype()) != x.dtype())
    throwInputError(inputs, 1,
                    "a tensor whose dtype converts to x's " + std::string(dtypeName(x.dtype())) +
                        " without loss");
  const std::vector<std::int64_t> region = gatheredShape(x, inputs[2]->type());
  if (auto why = staticBroadcastError(y.shape(), region))
    throwInputError(inputs, 1,
                    "a tensor that broadcasts to x[idx] of shape " + staticShapeStr(region) + " (" +
                        *why + ")");
  return {x};
}

void AdvancedIncSubtensor1::perform(const Apply&, std::span<const Tensor* const> inputs,
                                    std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  Tensor& out = prepareIncOutput(x, outputs[0], m_inplace);
  const std::vector<std::int64_t> rows = checkedRows(str(), *inputs[2], x.shape()[0]);
  Shape region = x.shape();
  region[0] = static_cast<std::int64_t>(rows.size());
  const Tensor y = broadcastOperand(*inputs[1], region, str() + ": y");
  if (rows.empty()) return;

  // Fast path: same dtype, rows of y contiguous (y itself, or one row broadcast to all).
  const bool rowsContiguous = y.select(0, 0).isContiguous() && out.isContiguous();
  bool done = false;
  if (rowsContiguous && y.dtype() == out.dtype()) {
    dispatchDType(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, bool>) {
        const std::int64_t n = rowSize(out.shape());
        T* dst = out.data<T>();
        const T* src = static_cast<const T*>(y.rawData());
        const std::int64_t ys = y.strides()[0];
        // Rows are visited in order, so duplicates accumulate (inc) or the last one wins (set).
        for (std::size_t k = 0; k < rows.size(); ++k) {
          T* d = dst + rows[k] * n;
          const T* s = src + static_cast<std::int64_t>(k) * ys;
          if (m_set) {
            for (std::int64_t j = 0; j < n; ++j) d[j] = s[j];
          } else {
            for (std::int64_t j = 0; j < n; ++j) d[j] = static_cast<T>(d[j] + s[j]);
          }
        }
        done = true;
      }
    });
  }
  if (done) return;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    Tensor dst = out.select(0, rows[k]);
    const Tensor src = y.select(0, static_cast<std::int64_t>(k));
    if (m_set)
      dst.copyFrom(src);
    else
      addElements(dst, src);
  }
}

std::vector<ShapeExpr> AdvancedIncSubtensor1::inferShape(
    const Apply&, std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> AdvancedIncSubtensor1::pullback(const Apply& node,
                                                  std::span<const VarPtr> outputGrads) const {
  const VarPtr& g = outputGrads[0];
  const VarPtr& x = node.input(0);
  const VarPtr& y = node.input(1);
  const VarPtr& idx = node.input(2);
  std::vector<Grad> grads(3, Grad::disconnected());
  if (isFloat(x->type().dtype()))
    grads[0] = m_set ? advancedSetSubtensor1(g, constant(0.0, g->type().dtype()), idx) : g;
  if (isFloat(y->type().dtype())) grads[1] = sumToShapeOf(advancedSubtensor1(g, idx), y);
  return grads;
}

std::optional<std::vector<VarPtr>> AdvancedIncSubtensor1::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[0] && !tangents[1]) return std::vector<VarPtr>{nullptr};
  VarPtr tx = tangents[0] ? tangents[0] : zerosLike(node.input(0));
  VarPtr ty = tangents[1] ? tangents[1] : constant(0.0, node.input(1)->type().dtype());
  return std::vector<VarPtr>{
      std::make_shared<AdvancedIncSubtensor1>(m_set)->operator()({tx, ty, node.input(2)})};
}

std::vector<std::vector<bool>> AdvancedIncSubtensor1::connectionPattern(const Apply&) const {
  return {{true}, {true}, {false}};
}

DestroyMap AdvancedIncSubtensor1::destroyMap() const {
  if (!m_inplace) return {};
  return {{0, {0}}};
}

OpPtr AdvancedIncSubtensor1::fromProps(const nlohmann::json& props) {
  const std::string op = "AdvancedIncSubtensor1";
  propKeys(props, op, {"set_instead_of_inc", "inplace"});
  return std::make_shared<AdvancedIncSubtensor1>(propBool(props, op, "set_instead_of_inc", false),
                                                 propBool(props, op, "inplace", false));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr advancedSubtensor1(const VarPtr& x, const VarPtr& idx, std::source_location site) {
  static const OpPtr op = std::make_shared<AdvancedSubtensor1>();
  return op->operator()({x, idx}, site);
}

VarPtr advancedIncSubtensor1(const VarPtr& x, const VarPtr& y, const VarPtr& idx,
                             std::source_location site) {
  static const OpPtr op = std::make_shared<AdvancedIncSubtensor1>(false);
  return op->operator()({x, y, idx}, site);
}

VarPtr advancedSetSubtensor1(const VarPtr& x, const VarPtr& y, const VarPtr& idx,
                             std::source_location site) {
  static const OpPtr op = std::make_shared<AdvancedIncSubtensor1>(true);
  return op->operator()({x, y, idx}, site);
}

VarPtr take(const VarPtr& x, const VarPtr& idx, int axis, std::source_location site) {
  const int ndim = x->type().ndim();
  const int given = axis;
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim)
    throw TypeError("take: axis " + std::to_string(given) + " is out of range for " +
                    x->type().str());
  if (axis == 0) return advancedSubtensor1(x, idx, site);
  std::vector<int> front{axis};
  for (int i = 0; i < ndim; ++i)
    if (i != axis) front.push_back(i);
  VarPtr gathered = advancedSubtensor1(dimshuffle(x, front, site), idx, site);
  std::vector<int> back;
  for (int i = 1; i <= axis; ++i) back.push_back(i);
  back.push_back(0);
  for (int i = axis + 1; i < ndim; ++i) back.push_back(i);
  return dimshuffle(gathered, back, site);
}

}  // namespace tscope::engine
