#include "engine/ops/blas/det.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <cmath>
#include <utility>

namespace tscope::engine {

namespace {

// The determinant of the n x n row-major matrix a (overwritten by its LU factors).
double luDeterminant(double* a, std::int64_t n) {
  double det = 1;
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t pivot = k;
    for (std::int64_t i = k + 1; i < n; ++i)
      if (std::abs(a[i * n + k]) > std::abs(a[pivot * n + k])) pivot = i;
    if (a[pivot * n + k] == 0) return 0;
    if (pivot != k) {
      for (std::int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[pivot * n + j]);
      det = -det;
    }
    const double p = a[k * n + k];
    det *= p;
    for (std::int64_t i = k + 1; i < n; ++i) {
      const double f = a[i * n + k] / p;
      for (std::int64_t j = k + 1; j < n; ++j) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return det;
}

}  // namespace

std::vector<TensorType> Det::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  const int r = t.ndim();
  if (r < 2 || !isFloat(t.dtype()) ||
      (t.isDimKnown(r - 1) && t.isDimKnown(r - 2) && t.shape()[r - 1] != t.shape()[r - 2]))
    throwInputError(inputs, 0, "a float tensor of square matrices (..., n, n)");
  std::vector<std::int64_t> shape(t.shape().begin(), t.shape().end() - 2);
  return {TensorType(t.dtype(), shape, t.device())};
}

void Det::perform(const Apply&, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const Shape& s = x.shape();
  const std::int64_t n = s[s.size() - 1];
  if (s[s.size() - 2] != n)
    throw std::invalid_argument("expected square matrices, found shape " + shapeToString(s));
  const Shape outShape(s.begin(), s.end() - 2);
  const std::vector<double> values = x.toDoubles();
  std::int64_t count = 1;
  for (std::int64_t d : outShape) count *= d;
  std::vector<double> dets(static_cast<std::size_t>(count));
  std::vector<double> m(static_cast<std::size_t>(n * n));
  for (std::int64_t b = 0; b < count; ++b) {
    std::copy(values.begin() + b * n * n, values.begin() + (b + 1) * n * n, m.begin());
    dets[static_cast<std::size_t>(b)] = luDeterminant(m.data(), n);
  }
  *outputs[0] = Tensor::fromDoubles(x.dtype(), outShape, dets);
}

std::vector<ShapeExpr> Det::inferShape(const Apply&, std::span<const ShapeExpr> inputShapes) const {
  return {ShapeExpr(inputShapes[0].begin(), inputShapes[0].end() - 2)};
}

std::vector<Grad> Det::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::undefined(
      "Det has no gradient yet: it is det(x) * inv(x)^T, and the engine has no matrix inverse")};
}

OpPtr Det::fromProps(const nlohmann::json& props) {
  shape_detail::propKeys(props, "Det", {});
  return std::make_shared<Det>();
}

VarPtr det(const VarPtr& x, std::source_location site) {
  return (*std::make_shared<Det>())({x}, site);
}

void registerDetOps(OpRegistry& registry) {
  registry.add("Det", &Det::fromProps);
}

}  // namespace tscope::engine
