#include "engine/ops/shape/assert_type.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/cost_common.h"
#include "engine/ops/shape/shape_common.h"

namespace tscope::engine {

using namespace shape_detail;

namespace {
// True when a value of `shape` is a value of the static shape `want`.
bool fits(std::span<const std::int64_t> shape, std::span<const std::int64_t> want) {
  if (shape.size() != want.size()) return false;
  for (std::size_t d = 0; d < want.size(); ++d)
    if (want[d] != kUnknownDim && shape[d] != want[d]) return false;
  return true;
}
}  // namespace

AssertType::AssertType(std::vector<std::int64_t> shape) : m_shape(std::move(shape)) {
  for (std::int64_t d : m_shape)
    if (d < kUnknownDim)
      throw std::invalid_argument(
          "AssertType: expected dimensions >= 0 (or -1 for unknown), found " +
          staticShapeStr(m_shape));
}

std::vector<TensorType> AssertType::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  return {TensorType(t.dtype(), m_shape, t.device())};
}

OpCost AssertType::cost(const Apply&, std::span<const Shape>) const {
  return cost::view();
}

void AssertType::perform(const Apply& node, std::span<const Tensor* const> inputs,
                         std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  if (!fits(x.shape(), m_shape))
    throw std::invalid_argument(
        str() + ": expected a value of shape " + staticShapeStr(m_shape) + ", found shape " +
        shapeToString(x.shape()) +
        (node.site().empty() ? "" : "; the type was asserted at " + node.site().str()));
  *outputs[0] = x;
}

std::vector<ShapeExpr> AssertType::inferShape(const Apply& node,
                                              std::span<const ShapeExpr> inputShapes) const {
  // A dimension the op knows is a constant; else x's, when the ranks agree; else (a node that
  // fails whenever it runs) the output's own runtime size.
  ShapeExpr out;
  for (std::size_t d = 0; d < m_shape.size(); ++d) {
    if (m_shape[d] != kUnknownDim)
      out.push_back(constantInt(m_shape[d]));
    else if (inputShapes[0].size() == m_shape.size())
      out.push_back(inputShapes[0][d]);
    else
      out.push_back(shapeI(const_cast<Apply&>(node).output(0), static_cast<int>(d)));
  }
  return {out};
}

std::vector<Grad> AssertType::pullback(const Apply& node,
                                       std::span<const VarPtr> outputGrads) const {
  // Note [IfElse branches of another rank]: back to x's shape, checked the same way, and naming
  // the same site when it fails.
  VarPtr g = assertType(outputGrads[0], node.input(0)->type().shape());
  if (g != outputGrads[0]) g->owner()->setSite(node.site());
  return {Grad(g)};
}

std::optional<std::vector<VarPtr>> AssertType::pushforward(const Apply&,
                                                           std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{assertType(tangents[0], m_shape)};
}

OpPtr AssertType::fromProps(const nlohmann::json& props) {
  propKeys(props, "AssertType", {"shape"});
  return std::make_shared<AssertType>(
      propIntList(props, "AssertType", "shape", kUnknownDim, INT64_MAX, 64));
}

VarPtr assertType(const VarPtr& x, const std::vector<std::int64_t>& shape,
                  std::source_location site) {
  if (!x) throw TypeError("assertType: x is null");
  if (fits(x->type().shape(), shape)) return x;
  return std::make_shared<AssertType>(shape)->operator()({x}, site);
}

}  // namespace tscope::engine
