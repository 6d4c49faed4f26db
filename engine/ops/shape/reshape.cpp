#include "engine/ops/shape/reshape.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/ops/shape/shape_vector.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/tensor/reshape_strides.h"
#include "engine/tensor/tensor.h"

#include <cstdlib>

namespace tscope::engine {

using namespace shape_detail;

namespace {
// The entries of the shape input that are constants (nullopt where symbolic); empty when the
// input is neither a constant nor a MakeVector.
std::vector<std::optional<std::int64_t>> staticEntries(const VarPtr& shape, int ndim) {
  std::vector<std::optional<std::int64_t>> out(static_cast<std::size_t>(ndim));
  if (shape->kind() == Variable::Kind::Constant) {
    const std::vector<double> values = static_cast<const Constant&>(*shape).value().toDoubles();
    for (std::size_t i = 0; i < out.size() && i < values.size(); ++i)
      out[i] = static_cast<std::int64_t>(values[i]);
  } else if (shape->owner() && dynamic_cast<const MakeVector*>(&shape->owner()->op())) {
    for (std::size_t i = 0; i < out.size() && i < shape->owner()->inputs().size(); ++i)
      out[i] = constantIntValue(shape->owner()->inputs()[i]);
  }
  return out;
}

std::string reshapeError(const std::string& op, const std::string& from, std::int64_t n,
                         const std::string& to, const std::string& why) {
  return op + ": cannot reshape " + from + " (" + std::to_string(n) + " elements) into " + to + why;
}
}  // namespace

Reshape::Reshape(int ndim) : m_ndim(ndim) {
  if (ndim < 0 || ndim > 64)
    throw std::invalid_argument("Reshape: ndim must be in 0..64, found " + std::to_string(ndim));
}

std::vector<TensorType> Reshape::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  const TensorType& x = inputs[0]->type();
  const TensorType& s = inputs[1]->type();
  if (s.ndim() != 1 || !isInteger(s.dtype()) ||
      (s.shape()[0] != kUnknownDim && s.shape()[0] != m_ndim))
    throwInputError(inputs, 1, "a 1-d integer shape vector of length " + std::to_string(m_ndim));
  const auto entries = staticEntries(inputs[1], m_ndim);
  std::vector<std::int64_t> shape(static_cast<std::size_t>(m_ndim), kUnknownDim);
  int inferred = -1;
  bool allKnown = true;
  std::int64_t product = 1;
  for (int i = 0; i < m_ndim; ++i) {
    const auto& e = entries[static_cast<std::size_t>(i)];
    if (!e) {
      allKnown = false;
      continue;
    }
    if (*e < -1)
      throwInputError(inputs, 1,
                      "sizes >= 0 (or -1 once), found " + std::to_string(*e) + " at entry " +
                          std::to_string(i));
    if (*e == -1) {
      if (inferred >= 0)
        throwInputError(inputs, 1,
                        "at most one -1 entry, found two (entries " + std::to_string(inferred) +
                            " and " + std::to_string(i) + ")");
      inferred = i;
      continue;
    }
    shape[static_cast<std::size_t>(i)] = *e;
    product *= *e;
  }
  if (x.isFullyKnown() && allKnown) {
    const std::int64_t n = shapeNumel(x.shape());
    std::string to = staticShapeStr(shape);
    if (inferred >= 0) {
      if (product == 0 || n % product != 0)
        throw TypeError(
            reshapeError(str(), x.str(), n, to, ": the -1 entry cannot make the sizes match"));
      shape[static_cast<std::size_t>(inferred)] = n / product;
    } else if (product != n) {
      throw TypeError(
          reshapeError(str(), x.str(), n, to, " (" + std::to_string(product) + " elements)"));
    }
  }
  return {TensorType(x.dtype(), std::move(shape), x.device())};
}

Shape Reshape::outputShape(const Shape& xShape, const Tensor& shapeValue) const {
  Shape shape = readIndices(shapeValue, str() + ": shape");
  const std::int64_t n = shapeNumel(xShape);
  auto fail = [&](const std::string& why) {
    std::vector<std::int64_t> shown(shape.begin(), shape.end());
    return std::invalid_argument(
        reshapeError(str(), shapeToString(xShape), n, shapeToString(shown), why));
  };
  if (static_cast<int>(shape.size()) != m_ndim)
    throw fail(": expected " + std::to_string(m_ndim) + " sizes");
  int inferred = -1;
  std::int64_t product = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) throw fail(": at most one size may be -1");
      inferred = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw fail(": sizes must be >= 0 or -1");
    } else if (__builtin_mul_overflow(product, shape[i], &product)) {
      throw fail(": the element count overflows int64");
    }
  }
  if (inferred >= 0) {
    if (product == 0 || n % product != 0) throw fail(": the -1 entry cannot make the sizes match");
    shape[static_cast<std::size_t>(inferred)] = n / product;
  } else if (product != n) {
    throw fail(" (" + std::to_string(product) + " elements)");
  }
  return shape;
}

void Reshape::perform(const Apply&, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  Shape shape = outputShape(x.shape(), *inputs[1]);
  // Note [Reshape views]: a view whenever strides exist that read x in row-major order as the new
  // shape (numpy's no-copy reshape), not only when x is contiguous: attention's heads split from a
  // slice of the fused q/k/v projection ((T, 1, 256) with row step 768 -> (T, 4, 64)) stay views,
  // and the batched products that read them take the row step as their leading dimension.
  if (std::optional<Strides> strides = reshapeStrides(x.shape(), x.strides(), shape)) {
    *outputs[0] = x.view(std::move(shape), std::move(*strides), x.offset());
    return;
  }
  Tensor& out = reuseOrAllocate(outputs[0], x.dtype(), shape);
  // The new buffer seen with x's shape: a row-major copy of x is the reshaped value.
  out.view(x.shape(), contiguousStrides(x.shape()), out.offset()).copyFrom(x);
}

std::vector<ShapeExpr> Reshape::inferShape(const Apply& node,
                                           std::span<const ShapeExpr> inputShapes) const {
  const auto& known = node.outputRef(0).type().shape();
  ShapeExpr out(static_cast<std::size_t>(m_ndim));
  bool allKnown = true;
  for (int i = 0; i < m_ndim; ++i) {
    if (known[static_cast<std::size_t>(i)] != kUnknownDim)
      out[static_cast<std::size_t>(i)] = constantInt(known[static_cast<std::size_t>(i)]);
    else
      allKnown = false;
  }
  if (allKnown) return {out};
  std::optional<ShapeExpr> entries = vectorEntries(node.input(1));
  if (!entries) {
    ShapeExpr read;
    for (int i = 0; i < m_ndim; ++i) read.push_back(toInt64(select(node.input(1), 0, i)));
    entries = std::move(read);
  }
  // Theano's trick for the -1 entry: with one -1 among the entries their product is minus the
  // product of the others, so rest = numel / |product| is the inferred size, and each entry is
  // itself unless it is -1.
  const VarPtr numel = intProduct(inputShapes[0]);
  const VarPtr product = intProduct(*entries);
  VarPtr absProduct;
  if (auto p = constantIntValue(product))
    absProduct = constantInt(std::llabs(*p));
  else
    absProduct = abs(product);
  const VarPtr rest = intFloorDiv(numel, intMax(absProduct, constantInt(1)));
  for (int i = 0; i < m_ndim; ++i) {
    VarPtr& o = out[static_cast<std::size_t>(i)];
    if (o) continue;
    const VarPtr& e = (*entries)[static_cast<std::size_t>(i)];
    if (auto c = constantIntValue(e))
      o = *c == -1 ? rest : e;
    else
      o = intWhere(eq(e, constantInt(-1)), rest, e);
  }
  return {out};
}

std::vector<Grad> Reshape::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  return {reshape(outputGrads[0], shapeOf(x)), Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> Reshape::pushforward(const Apply& node,
                                                        std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{operator()({tangents[0], node.input(1)})};
}

std::vector<std::vector<bool>> Reshape::connectionPattern(const Apply&) const {
  return {{true}, {false}};
}

OpPtr Reshape::fromProps(const nlohmann::json& props) {
  propKeys(props, "Reshape", {"ndim"});
  return std::make_shared<Reshape>(static_cast<int>(propInt(props, "Reshape", "ndim", 0, 64)));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr reshape(const VarPtr& x, const std::vector<std::int64_t>& shape, std::source_location site) {
  std::vector<double> values(shape.begin(), shape.end());
  VarPtr s = constant(
      Tensor::fromDoubles(DType::Int64, {static_cast<std::int64_t>(shape.size())}, values), site);
  return reshape(x, s, site);
}

VarPtr reshape(const VarPtr& x, const ShapeExpr& shape, std::source_location site) {
  std::vector<VarPtr> entries;
  for (const VarPtr& e : shape) entries.push_back(toInt64(e, site));
  return reshape(x, makeVector(entries, DType::Int64, site), site);
}

VarPtr reshape(const VarPtr& x, const VarPtr& shape, std::source_location site) {
  const TensorType& t = shape->type();
  if (t.ndim() != 1 || t.shape()[0] == kUnknownDim)
    throw TypeError("reshape: the shape must be a 1-d integer vector of static length, found " +
                    t.str());
  return std::make_shared<Reshape>(static_cast<int>(t.shape()[0]))->operator()({x, shape}, site);
}

VarPtr flatten(const VarPtr& x, int ndim, std::source_location site) {
  const int xNdim = x->type().ndim();
  if (ndim < 1 || ndim > std::max(xNdim, 1))
    throw TypeError("flatten: ndim must be in [1, " + std::to_string(std::max(xNdim, 1)) +
                    "] for " + x->type().str() + ", found " + std::to_string(ndim));
  const ShapeExpr dims = shapeOf(x, site);
  ShapeExpr shape(dims.begin(), dims.begin() + (ndim - 1));
  shape.push_back(
      intProduct(std::span<const VarPtr>(dims).subspan(static_cast<std::size_t>(ndim - 1)), site));
  return reshape(x, shape, site);
}

}  // namespace tscope::engine
