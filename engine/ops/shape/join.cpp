#include "engine/ops/shape/join.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/ops/shape/shape_vector.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/tensor/tensor.h"

#include <cstring>

namespace tscope::engine {

using namespace shape_detail;

// --- Join ----------------------------------------------------------------------------------------

Join::Join(int axis) : m_axis(axis) {
  if (axis < 0 || axis > 63)
    throw std::invalid_argument("Join: axis must be in 0..63, found " + std::to_string(axis));
}

std::vector<TensorType> Join::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.empty()) throw TypeError(str() + ": expected one or more inputs, found none");
  const TensorType& first = inputs[0]->type();
  if (first.ndim() <= m_axis)
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(m_axis));
  DType dtype = first.dtype();
  std::vector<std::int64_t> shape = first.shape();
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const TensorType& t = inputs[k]->type();
    if (t.ndim() != first.ndim() || t.device() != first.device())
      throwInputError(inputs, static_cast<int>(k),
                      "a " + std::to_string(first.ndim()) + "-d tensor on " +
                          std::string(deviceName(first.device())) + " like input 0 (" +
                          first.str() + ")");
    dtype = promoteTypes(dtype, t.dtype());
    for (std::size_t a = 0; a < shape.size(); ++a) {
      const std::int64_t d = t.shape()[a];
      if (static_cast<int>(a) == m_axis) {
        shape[a] = (shape[a] == kUnknownDim || d == kUnknownDim) ? kUnknownDim : shape[a] + d;
      } else if (d != kUnknownDim) {
        if (shape[a] != kUnknownDim && shape[a] != d)
          throwInputError(inputs, static_cast<int>(k),
                          "the size " + std::to_string(shape[a]) + " on axis " + std::to_string(a) +
                              " (all inputs must agree on every axis but the join axis " +
                              std::to_string(m_axis) + "; input 0 is " + first.str() + ")");
        shape[a] = d;
      }
    }
  }
  return {TensorType(dtype, std::move(shape), first.device())};
}

std::pair<Shape, DType> Join::outputShapeAndDType(std::span<const Tensor* const> inputs) const {
  const Tensor& first = *inputs[0];
  const std::size_t axis = static_cast<std::size_t>(m_axis);
  Shape shape = first.shape();
  if (first.ndim() <= m_axis)
    throw std::invalid_argument(str() + ": input 0 of shape " + shapeToString(first.shape()) +
                                " has no axis " + std::to_string(m_axis));
  DType dtype = first.dtype();
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const Tensor& t = *inputs[k];
    bool ok = t.ndim() == first.ndim();
    for (std::size_t a = 0; ok && a < shape.size(); ++a)
      if (a != axis && t.shape()[a] != first.shape()[a]) ok = false;
    if (!ok)
      throw std::invalid_argument(
          str() + ": input " + std::to_string(k) + " has shape " + shapeToString(t.shape()) +
          " and input 0 has shape " + shapeToString(first.shape()) +
          "; they must agree on every axis but the join axis " + std::to_string(m_axis));
    shape[axis] += t.shape()[axis];
    dtype = promoteTypes(dtype, t.dtype());
  }
  return {std::move(shape), dtype};
}

void Join::perform(const Apply&, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) const {
  const std::size_t axis = static_cast<std::size_t>(m_axis);
  const auto [shape, dtype] = outputShapeAndDType(inputs);
  bool fast = true;
  for (const Tensor* t : inputs) fast = fast && t->isContiguous() && t->dtype() == dtype;
  Tensor& out = reuseOrAllocate(outputs[0], dtype, shape);
  if (fast) {
    // Row-major: for each index of the axes before `axis`, each input contributes one contiguous
    // chunk of (its size on axis) x (the inner sizes) elements.
    std::int64_t outer = 1, inner = 1;
    for (std::size_t a = 0; a < axis; ++a) outer *= shape[a];
    for (std::size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
    const std::size_t item = out.itemSize();
    auto* dst = static_cast<std::byte*>(out.rawData());
    for (std::int64_t o = 0; o < outer; ++o) {
      for (const Tensor* t : inputs) {
        const std::size_t bytes = static_cast<std::size_t>(t->shape()[axis] * inner) * item;
        if (bytes == 0) continue;
        std::memcpy(
            dst, static_cast<const std::byte*>(t->rawData()) + static_cast<std::size_t>(o) * bytes,
            bytes);
        dst += bytes;
      }
    }
    return;
  }
  std::int64_t offset = 0;
  for (const Tensor* t : inputs) {
    const std::int64_t n = t->shape()[axis];
    Tensor part = out.slice(m_axis, offset, offset + n);
    part.copyFrom(*t);
    offset += n;
  }
}

std::vector<ShapeExpr> Join::inferShape(const Apply& node,
                                        std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out = inputShapes[0];
  const auto& known = node.outputRef(0).type().shape();
  VarPtr total = constantInt(0);
  for (const ShapeExpr& s : inputShapes) total = intAdd(total, s[static_cast<std::size_t>(m_axis)]);
  out[static_cast<std::size_t>(m_axis)] = total;
  for (std::size_t a = 0; a < out.size(); ++a)
    if (known[a] != kUnknownDim) out[a] = constantInt(known[a]);
  return {out};
}

std::vector<Grad> Join::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& g = outputGrads[0];
  std::vector<VarPtr> sizes;
  for (const VarPtr& in : node.inputs()) sizes.push_back(shapeI(in, m_axis));
  std::vector<VarPtr> parts = node.nInputs() == 1
                                  ? std::vector<VarPtr>{g}
                                  : split(g, makeVector(sizes, DType::Int64), m_axis);
  std::vector<Grad> grads;
  for (int k = 0; k < node.nInputs(); ++k) {
    if (!isFloat(node.input(k)->type().dtype()))
      grads.push_back(Grad::disconnected());  // integer inputs carry no gradient
    else
      grads.push_back(parts[static_cast<std::size_t>(k)]);
  }
  return grads;
}

std::optional<std::vector<VarPtr>> Join::pushforward(const Apply& node,
                                                     std::span<const VarPtr> tangents) const {
  bool any = false;
  std::vector<VarPtr> parts;
  for (int k = 0; k < node.nInputs(); ++k) {
    const VarPtr& t = tangents[static_cast<std::size_t>(k)];
    any = any || t != nullptr;
    parts.push_back(t ? t : zerosLike(node.input(k)));
  }
  if (!any) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{operator()(std::move(parts))};
}

OpPtr Join::fromProps(const nlohmann::json& props) {
  propKeys(props, "Join", {"axis"});
  return std::make_shared<Join>(static_cast<int>(propInt(props, "Join", "axis", 0, 63)));
}

// --- Split ---------------------------------------------------------------------------------------

Split::Split(int axis, int nSplits) : m_axis(axis), m_nSplits(nSplits) {
  if (axis < 0 || axis > 63)
    throw std::invalid_argument("Split: axis must be in 0..63, found " + std::to_string(axis));
  if (nSplits < 1 || nSplits > 100000)
    throw std::invalid_argument("Split: n_splits must be in 1..100000, found " +
                                std::to_string(nSplits));
}

std::vector<TensorType> Split::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  const TensorType& x = inputs[0]->type();
  const TensorType& s = inputs[1]->type();
  if (x.ndim() <= m_axis)
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(m_axis));
  if (s.ndim() != 1 || !isInteger(s.dtype()) ||
      (s.shape()[0] != kUnknownDim && s.shape()[0] != m_nSplits))
    throwInputError(inputs, 1, "a 1-d integer vector of " + std::to_string(m_nSplits) + " sizes");
  std::vector<std::optional<std::int64_t>> sizes(static_cast<std::size_t>(m_nSplits));
  if (auto entries = vectorEntries(inputs[1]))
    for (std::size_t i = 0; i < sizes.size() && i < entries->size(); ++i)
      sizes[i] = constantIntValue((*entries)[i]);
  std::int64_t total = 0;
  bool allKnown = true;
  for (const auto& size : sizes) {
    if (!size) {
      allKnown = false;
      continue;
    }
    if (*size < 0) throwInputError(inputs, 1, "sizes >= 0, found " + std::to_string(*size));
    total += *size;
  }
  const std::int64_t n = x.shape()[static_cast<std::size_t>(m_axis)];
  if (allKnown && n != kUnknownDim && total != n)
    throwInputError(inputs, 1,
                    "sizes that add up to " + std::to_string(n) + " (axis " +
                        std::to_string(m_axis) + " of " + x.str() + "), found a total of " +
                        std::to_string(total));
  std::vector<TensorType> out;
  for (const auto& size : sizes) {
    std::vector<std::int64_t> shape = x.shape();
    shape[static_cast<std::size_t>(m_axis)] = size.value_or(kUnknownDim);
    out.emplace_back(x.dtype(), std::move(shape), x.device());
  }
  return out;
}

void Split::perform(const Apply&, std::span<const Tensor* const> inputs,
                    std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const std::vector<std::int64_t> sizes = readIndices(*inputs[1], str() + ": sizes");
  const std::int64_t n = x.shape().at(static_cast<std::size_t>(m_axis));
  std::int64_t total = 0;
  bool ok = static_cast<int>(sizes.size()) == m_nSplits;
  for (std::int64_t s : sizes) {
    ok = ok && s >= 0;
    total += s;
  }
  if (!ok || total != n)
    throw std::invalid_argument(str() + ": expected " + std::to_string(m_nSplits) +
                                " sizes >= 0 that add up to " + std::to_string(n) + " (axis " +
                                std::to_string(m_axis) + " of shape " + shapeToString(x.shape()) +
                                "), found " + shapeToString(sizes));
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    *outputs[i] = x.slice(m_axis, offset, offset + sizes[i]);
    offset += sizes[i];
  }
}

std::vector<ShapeExpr> Split::inferShape(const Apply& node,
                                         std::span<const ShapeExpr> inputShapes) const {
  std::optional<ShapeExpr> entries = vectorEntries(node.input(1));
  std::vector<ShapeExpr> out;
  for (int i = 0; i < m_nSplits; ++i) {
    ShapeExpr shape = inputShapes[0];
    const std::int64_t known = node.outputRef(i).type().shape()[static_cast<std::size_t>(m_axis)];
    if (known != kUnknownDim)
      shape[static_cast<std::size_t>(m_axis)] = constantInt(known);
    else if (entries)
      shape[static_cast<std::size_t>(m_axis)] = (*entries)[static_cast<std::size_t>(i)];
    else
      shape[static_cast<std::size_t>(m_axis)] = toInt64(select(node.input(1), 0, i));
    out.push_back(std::move(shape));
  }
  return out;
}

std::vector<Grad> Split::pullback(const Apply&, std::span<const VarPtr> outputGrads) const {
  // grad() passes zeros for a piece the cost does not use, so every piece has a gradient.
  std::vector<VarPtr> parts(outputGrads.begin(), outputGrads.end());
  return {std::make_shared<Join>(m_axis)->operator()(std::move(parts)), Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> Split::pushforward(const Apply& node,
                                                      std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>(static_cast<std::size_t>(m_nSplits), nullptr);
  return makeNode({tangents[0], node.input(1)})->outputs();
}

std::vector<std::vector<bool>> Split::connectionPattern(const Apply&) const {
  return {std::vector<bool>(static_cast<std::size_t>(m_nSplits), true),
          std::vector<bool>(static_cast<std::size_t>(m_nSplits), false)};
}

ViewMap Split::viewMap() const {
  ViewMap m;
  for (int i = 0; i < m_nSplits; ++i) m[i] = {0};
  return m;
}

OpPtr Split::fromProps(const nlohmann::json& props) {
  propKeys(props, "Split", {"axis", "n_splits"});
  return std::make_shared<Split>(static_cast<int>(propInt(props, "Split", "axis", 0, 63)),
                                 static_cast<int>(propInt(props, "Split", "n_splits", 1, 100000)));
}

// --- Builders ------------------------------------------------------------------------------------

namespace {
int normalizeAxis(const char* what, int axis, int ndim, const VarPtr& x) {
  const int given = axis;
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim)
    throw TypeError(std::string(what) + ": axis " + std::to_string(given) +
                    " is out of range for " + x->type().str());
  return axis;
}
}  // namespace

VarPtr join(int axis, const std::vector<VarPtr>& tensors, std::source_location site) {
  if (tensors.empty()) throw TypeError("join: expected one or more tensors, found none");
  axis = normalizeAxis("join", axis, tensors[0]->type().ndim(), tensors[0]);
  return std::make_shared<Join>(axis)->operator()(tensors, site);
}

VarPtr concatenate(const std::vector<VarPtr>& tensors, int axis, std::source_location site) {
  return join(axis, tensors, site);
}

VarPtr stack(const std::vector<VarPtr>& tensors, int axis, std::source_location site) {
  if (tensors.empty()) throw TypeError("stack: expected one or more tensors, found none");
  const int ndim = tensors[0]->type().ndim() + 1;
  axis = normalizeAxis("stack", axis, ndim, tensors[0]);
  std::vector<VarPtr> expanded;
  for (const VarPtr& t : tensors) expanded.push_back(expandDims(t, axis, site));
  return std::make_shared<Join>(axis)->operator()(expanded, site);
}

std::vector<VarPtr> split(const VarPtr& x, const std::vector<std::int64_t>& sizes, int axis,
                          std::source_location site) {
  std::vector<double> values(sizes.begin(), sizes.end());
  return split(
      x,
      constant(Tensor::fromDoubles(DType::Int64, {static_cast<std::int64_t>(sizes.size())}, values),
               site),
      axis, site);
}

std::vector<VarPtr> split(const VarPtr& x, const VarPtr& sizes, int axis,
                          std::source_location site) {
  axis = normalizeAxis("split", axis, x->type().ndim(), x);
  const TensorType& t = sizes->type();
  if (t.ndim() != 1 || t.shape()[0] == kUnknownDim || t.shape()[0] < 1)
    throw TypeError("split: the sizes must be a 1-d integer vector of static length >= 1, found " +
                    t.str());
  return std::make_shared<Split>(axis, static_cast<int>(t.shape()[0]))
      ->makeNode({x, sizes}, site)
      ->outputs();
}

}  // namespace tscope::engine
