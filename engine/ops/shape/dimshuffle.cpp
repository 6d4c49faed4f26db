#include "engine/ops/shape/dimshuffle.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/specify_shape.h"
#include "engine/tensor/tensor.h"

#include <algorithm>

namespace tscope::engine {

DimShuffle::DimShuffle(int inputNdim, std::vector<int> order)
    : m_inputNdim(inputNdim), m_order(std::move(order)) {
  if (inputNdim < 0 || inputNdim > 64)
    throw std::invalid_argument("DimShuffle: input_ndim must be in 0..64, found " +
                                std::to_string(inputNdim));
  if (m_order.size() > 64) throw std::invalid_argument("DimShuffle: more than 64 output axes");
  std::vector<bool> used(static_cast<std::size_t>(inputNdim), false);
  for (int axis : m_order) {
    if (axis == kNewAxis) continue;
    if (axis < 0 || axis >= inputNdim)
      throw std::invalid_argument("DimShuffle: axis " + std::to_string(axis) +
                                  " in the order is out of range for a " +
                                  std::to_string(inputNdim) + "-d input");
    if (used[static_cast<std::size_t>(axis)])
      throw std::invalid_argument("DimShuffle: axis " + std::to_string(axis) +
                                  " appears twice in the order");
    used[static_cast<std::size_t>(axis)] = true;
  }
}

nlohmann::json DimShuffle::props() const {
  nlohmann::json order = nlohmann::json::array();
  for (int axis : m_order)
    order.push_back(axis == kNewAxis ? nlohmann::json("x") : nlohmann::json(axis));
  return {{"input_ndim", m_inputNdim}, {"order", order}};
}

std::string DimShuffle::str() const {
  std::string out = "DimShuffle{";
  for (std::size_t i = 0; i < m_order.size(); ++i) {
    if (i) out += ",";
    out += m_order[i] == kNewAxis ? "x" : std::to_string(m_order[i]);
  }
  return out + "}";
}

std::vector<TensorType> DimShuffle::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (t.ndim() != m_inputNdim)
    throwInputError(inputs, 0, "a " + std::to_string(m_inputNdim) + "-d tensor");
  for (int axis = 0; axis < m_inputNdim; ++axis) {
    if (std::find(m_order.begin(), m_order.end(), axis) != m_order.end()) continue;
    if (t.shape()[static_cast<std::size_t>(axis)] != 1)
      throwInputError(inputs, 0,
                      "axis " + std::to_string(axis) + " of static size 1 (it is dropped)");
  }
  std::vector<std::int64_t> shape;
  for (int axis : m_order)
    shape.push_back(axis == kNewAxis ? 1 : t.shape()[static_cast<std::size_t>(axis)]);
  return {TensorType(t.dtype(), std::move(shape), t.device())};
}

void DimShuffle::perform(const Apply&, std::span<const Tensor* const> inputs,
                         std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  if (x.ndim() != m_inputNdim)
    throw std::invalid_argument(str() + ": expected a " + std::to_string(m_inputNdim) +
                                "-d value, found shape " + shapeToString(x.shape()));
  Shape shape;
  Strides strides;
  shape.reserve(m_order.size());
  strides.reserve(m_order.size());
  for (int axis : m_order) {
    if (axis == kNewAxis) {
      shape.push_back(1);
      strides.push_back(0);
    } else {
      shape.push_back(x.shape()[static_cast<std::size_t>(axis)]);
      strides.push_back(x.strides()[static_cast<std::size_t>(axis)]);
    }
  }
  for (int axis = 0; axis < m_inputNdim; ++axis) {
    if (std::find(m_order.begin(), m_order.end(), axis) == m_order.end() &&
        x.shape()[static_cast<std::size_t>(axis)] != 1)
      throw std::invalid_argument(str() + ": drops axis " + std::to_string(axis) +
                                  ", which must have size 1; found shape " +
                                  shapeToString(x.shape()));
  }
  *outputs[0] = x.view(std::move(shape), std::move(strides), x.offset());
}

std::vector<ShapeExpr> DimShuffle::inferShape(const Apply&,
                                              std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out;
  for (int axis : m_order)
    out.push_back(axis == kNewAxis ? constantInt(1)
                                   : inputShapes[0][static_cast<std::size_t>(axis)]);
  return {out};
}

std::vector<Grad> DimShuffle::pullback(const Apply&, std::span<const VarPtr> outputGrads) const {
  // Input axis j takes the output axis that holds it; an input axis the op dropped (size 1) comes
  // back as a new broadcastable axis. The output's new axes are dropped, so the gradient must
  // know they have size 1 (refineShape asserts it when its type does not).
  std::vector<std::int64_t> ones(m_order.size(), kUnknownDim);
  std::vector<int> gradOrder;
  for (int j = 0; j < m_inputNdim; ++j) {
    auto it = std::find(m_order.begin(), m_order.end(), j);
    gradOrder.push_back(it == m_order.end() ? kNewAxis : static_cast<int>(it - m_order.begin()));
  }
  for (std::size_t i = 0; i < m_order.size(); ++i)
    if (m_order[i] == kNewAxis) ones[i] = 1;
  VarPtr g = refineShape(outputGrads[0], ones);
  VarPtr gx =
      std::make_shared<DimShuffle>(static_cast<int>(m_order.size()), gradOrder)->operator()({g});
  return {gx};
}

std::optional<std::vector<VarPtr>> DimShuffle::pushforward(const Apply&,
                                                           std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  // The dropped axes have size 1 in the input; the tangent must say so too.
  std::vector<std::int64_t> ones(static_cast<std::size_t>(m_inputNdim), kUnknownDim);
  for (int axis = 0; axis < m_inputNdim; ++axis)
    if (std::find(m_order.begin(), m_order.end(), axis) == m_order.end())
      ones[static_cast<std::size_t>(axis)] = 1;
  return std::vector<VarPtr>{operator()({refineShape(tangents[0], ones)})};
}

OpPtr DimShuffle::fromProps(const nlohmann::json& props) {
  if (!props.contains("input_ndim") || !props["input_ndim"].is_number_integer())
    throw std::invalid_argument("DimShuffle: props need \"input_ndim\" (an integer)");
  if (!props.contains("order") || !props["order"].is_array())
    throw std::invalid_argument("DimShuffle: props need \"order\" (an array of axes and \"x\")");
  std::int64_t ndim = props["input_ndim"].get<std::int64_t>();
  if (ndim < 0 || ndim > 64) throw std::invalid_argument("DimShuffle: input_ndim must be in 0..64");
  std::vector<int> order;
  for (const auto& entry : props["order"]) {
    if (entry.is_string() && entry.get<std::string>() == "x") {
      order.push_back(kNewAxis);
    } else if (entry.is_number_integer() && entry.get<std::int64_t>() >= 0 &&
               entry.get<std::int64_t>() < 64) {
      order.push_back(static_cast<int>(entry.get<std::int64_t>()));
    } else {
      throw std::invalid_argument(
          "DimShuffle: each order entry must be an axis in 0..63 or \"x\", found " + entry.dump());
    }
  }
  return std::make_shared<DimShuffle>(static_cast<int>(ndim), std::move(order));
}

VarPtr dimshuffle(const VarPtr& x, std::vector<int> order, std::source_location site) {
  return std::make_shared<DimShuffle>(x->type().ndim(), std::move(order))->operator()({x}, site);
}

VarPtr transpose(const VarPtr& x, std::source_location site) {
  std::vector<int> order;
  for (int axis = x->type().ndim() - 1; axis >= 0; --axis) order.push_back(axis);
  return dimshuffle(x, std::move(order), site);
}

VarPtr transpose(const VarPtr& x, std::vector<int> perm, std::source_location site) {
  const int ndim = x->type().ndim();
  if (static_cast<int>(perm.size()) != ndim)
    throw TypeError("transpose: expected a permutation of " + std::to_string(ndim) + " axes for " +
                    x->type().str() + ", found " + std::to_string(perm.size()) + " axes");
  std::vector<bool> seen(static_cast<std::size_t>(ndim), false);
  for (int& axis : perm) {
    const int given = axis;
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim || seen[static_cast<std::size_t>(axis)])
      throw TypeError("transpose: axis " + std::to_string(given) +
                      " is out of range or repeated for " + x->type().str());
    seen[static_cast<std::size_t>(axis)] = true;
  }
  return dimshuffle(x, std::move(perm), site);
}

VarPtr expandDims(const VarPtr& x, int axis, std::source_location site) {
  const int ndim = x->type().ndim();
  const int given = axis;
  if (axis < 0) axis += ndim + 1;
  if (axis < 0 || axis > ndim)
    throw TypeError("expandDims: axis " + std::to_string(given) + " is out of range [" +
                    std::to_string(-ndim - 1) + ", " + std::to_string(ndim) + "] for " +
                    x->type().str());
  std::vector<int> order;
  for (int i = 0; i < ndim; ++i) {
    if (i == axis) order.push_back(DimShuffle::kNewAxis);
    order.push_back(i);
  }
  if (axis == ndim) order.push_back(DimShuffle::kNewAxis);
  return dimshuffle(x, std::move(order), site);
}

VarPtr squeeze(const VarPtr& x, int axis, std::source_location site) {
  const int ndim = x->type().ndim();
  const int given = axis;
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim)
    throw TypeError("squeeze: axis " + std::to_string(given) + " is out of range for " +
                    x->type().str());
  const std::int64_t d = x->type().shape()[static_cast<std::size_t>(axis)];
  if (d != 1 && d != kUnknownDim)
    throw TypeError("squeeze: axis " + std::to_string(given) + " of " + x->type().str() +
                    " has size " + std::to_string(d) + ", expected 1");
  std::vector<std::int64_t> ones(static_cast<std::size_t>(ndim), kUnknownDim);
  ones[static_cast<std::size_t>(axis)] = 1;
  VarPtr y = refineShape(x, ones, site);
  std::vector<int> order;
  for (int i = 0; i < ndim; ++i)
    if (i != axis) order.push_back(i);
  return dimshuffle(y, std::move(order), site);
}

VarPtr squeeze(const VarPtr& x, std::source_location site) {
  std::vector<int> order;
  for (int i = 0; i < x->type().ndim(); ++i)
    if (x->type().shape()[static_cast<std::size_t>(i)] != 1) order.push_back(i);
  if (static_cast<int>(order.size()) == x->type().ndim()) return x;
  return dimshuffle(x, std::move(order), site);
}

}  // namespace tscope::engine
