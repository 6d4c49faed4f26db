#include "engine/ops/shape/specify_shape.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape_common.h"

namespace tscope::engine {

using namespace shape_detail;

std::vector<TensorType> SpecifyShape::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.empty())
    throw TypeError(str() + ": expected x and one size per axis, found no inputs");
  const TensorType& t = inputs[0]->type();
  if (inputs.size() != static_cast<std::size_t>(t.ndim()) + 1)
    throw TypeError(str() + ": expected " + std::to_string(t.ndim() + 1) + " inputs (x of type " +
                    t.str() + " and one size per axis), found " + std::to_string(inputs.size()));
  std::vector<std::int64_t> shape = t.shape();
  for (int i = 0; i < t.ndim(); ++i) {
    const VarPtr& d = inputs[static_cast<std::size_t>(i) + 1];
    if (d->type().ndim() != 0 || !isInteger(d->type().dtype()))
      throwInputError(inputs, i + 1, "a 0-d integer (the size of axis " + std::to_string(i) + ")");
    auto c = constantIntValue(d);
    if (!c || *c == -1) continue;
    if (*c < -1) throwInputError(inputs, i + 1, "a size >= 0 (or -1 for any)");
    shape[static_cast<std::size_t>(i)] = *c;
  }
  for (int i = 0; i < t.ndim(); ++i) {
    const auto known = t.shape()[static_cast<std::size_t>(i)];
    if (known != kUnknownDim && known != shape[static_cast<std::size_t>(i)])
      throwInputError(inputs, 0, "a tensor of shape " + staticShapeStr(shape));
  }
  return {TensorType(t.dtype(), std::move(shape), t.device())};
}

void SpecifyShape::perform(const Apply& node, std::span<const Tensor* const> inputs,
                           std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  std::vector<std::int64_t> expected;
  bool ok = true;
  for (int i = 0; i < x.ndim(); ++i) {
    const std::int64_t d = readIndex(*inputs[static_cast<std::size_t>(i) + 1],
                                     str() + ": size of axis " + std::to_string(i));
    expected.push_back(d < 0 ? kUnknownDim : d);
    if (d >= 0 && x.shape()[static_cast<std::size_t>(i)] != d) ok = false;
  }
  if (!ok)
    throw std::invalid_argument(
        str() + ": expected shape " + staticShapeStr(expected) + ", found " +
        shapeToString(x.shape()) +
        (node.site().empty() ? "" : "; the shape was specified at " + node.site().str()));
  *outputs[0] = x;
}

std::vector<ShapeExpr> SpecifyShape::inferShape(const Apply& node,
                                                std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out;
  const auto& known = node.outputRef(0).type().shape();
  for (std::size_t i = 0; i < known.size(); ++i) {
    if (known[i] != kUnknownDim) {
      out.push_back(constantInt(known[i]));
      continue;
    }
    const VarPtr& d = node.input(static_cast<int>(i) + 1);
    if (constantIntValue(d)) {  // -1: unchecked
      out.push_back(inputShapes[0][i]);
      continue;
    }
    VarPtr d64 = toInt64(d);
    out.push_back(intWhere(lt(d64, constantInt(0)), inputShapes[0][i], d64));
  }
  return {out};
}

std::vector<Grad> SpecifyShape::pullback(const Apply& node,
                                         std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  grads[0] = outputGrads[0];
  return grads;
}

std::optional<std::vector<VarPtr>> SpecifyShape::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  std::vector<VarPtr> inputs(node.inputs().begin(), node.inputs().end());
  inputs[0] = tangents[0];
  return std::vector<VarPtr>{operator()(std::move(inputs))};
}

std::vector<std::vector<bool>> SpecifyShape::connectionPattern(const Apply& node) const {
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(node.nInputs()), {false});
  pattern[0] = {true};
  return pattern;
}

OpPtr SpecifyShape::fromProps(const nlohmann::json& props) {
  propKeys(props, "SpecifyShape", {});
  return std::make_shared<SpecifyShape>();
}

namespace {
const OpPtr& sharedSpecifyShape() {
  static const OpPtr op = std::make_shared<SpecifyShape>();
  return op;
}
}  // namespace

VarPtr specifyShape(const VarPtr& x, const ShapeExpr& dims, std::source_location site) {
  if (static_cast<int>(dims.size()) != x->type().ndim())
    throw TypeError("specifyShape: expected " + std::to_string(x->type().ndim()) + " sizes for " +
                    x->type().str() + ", found " + std::to_string(dims.size()));
  std::vector<VarPtr> inputs{x};
  inputs.insert(inputs.end(), dims.begin(), dims.end());
  return sharedSpecifyShape()->operator()(std::move(inputs), site);
}

VarPtr specifyShape(const VarPtr& x, const std::vector<std::int64_t>& dims,
                    std::source_location site) {
  ShapeExpr exprs;
  for (std::int64_t d : dims) exprs.push_back(constantInt(d < 0 ? -1 : d, site));
  return specifyShape(x, exprs, site);
}

VarPtr refineShape(const VarPtr& x, const std::vector<std::int64_t>& shape,
                   std::source_location site) {
  const auto& have = x->type().shape();
  bool needed = false;
  for (std::size_t i = 0; i < shape.size() && i < have.size(); ++i)
    if (shape[i] != kUnknownDim && have[i] != shape[i]) needed = true;
  if (!needed) return x;
  return specifyShape(x, shape, site);
}

}  // namespace tscope::engine
