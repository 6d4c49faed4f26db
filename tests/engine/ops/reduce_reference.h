#pragma once
// Naive reference loops for the reduction and BLAS tests: every value is computed in double, one
// element at a time, from the row-major multi-index, independently of the kernels under test.

#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace tscope::test {

using namespace tscope::engine;

// The row-major multi-index of flat element i of shape.
inline std::vector<std::int64_t> unravel(std::int64_t i, const Shape& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (int a = static_cast<int>(shape.size()) - 1; a >= 0; --a) {
    const auto u = static_cast<std::size_t>(a);
    idx[u] = shape[u] == 0 ? 0 : i % shape[u];
    i = shape[u] == 0 ? 0 : i / shape[u];
  }
  return idx;
}

// Folds f over `axes` (non-negative) of x; returns the kept shape and the values in row-major
// order. op: "sum", "prod", "max", "min", "all", "any". max/min propagate NaN.
inline std::pair<Shape, std::vector<double>> referenceReduce(const Tensor& x, std::vector<int> axes,
                                                             const std::string& op) {
  if (axes.empty())
    for (int a = 0; a < x.ndim(); ++a) axes.push_back(a);
  auto reduced = [&](int a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); };
  Shape outShape;
  for (int a = 0; a < x.ndim(); ++a)
    if (!reduced(a)) outShape.push_back(x.shape()[static_cast<std::size_t>(a)]);
  double init = 0;
  if (op == "prod" || op == "all") init = 1;
  if (op == "max") init = -std::numeric_limits<double>::infinity();
  if (op == "min") init = std::numeric_limits<double>::infinity();
  std::vector<double> out(static_cast<std::size_t>(shapeNumel(outShape)), init);
  const std::vector<double> values = x.toDoubles();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const auto idx = unravel(i, x.shape());
    std::int64_t o = 0;
    for (int a = 0; a < x.ndim(); ++a)
      if (!reduced(a))
        o = o * x.shape()[static_cast<std::size_t>(a)] + idx[static_cast<std::size_t>(a)];
    double& acc = out[static_cast<std::size_t>(o)];
    const double v = values[static_cast<std::size_t>(i)];
    if (op == "sum")
      acc += v;
    else if (op == "prod")
      acc *= v;
    else if (op == "max")
      acc = (std::isnan(acc) || std::isnan(v)) ? std::nan("") : std::max(acc, v);
    else if (op == "min")
      acc = (std::isnan(acc) || std::isnan(v)) ? std::nan("") : std::min(acc, v);
    else if (op == "all")
      acc = (acc != 0 && v != 0) ? 1 : 0;
    else if (op == "any")
      acc = (acc != 0 || v != 0) ? 1 : 0;
  }
  return {outShape, out};
}

// numpy's matmul of a (..., m, k) and b (..., k, n) with vectors promoted, in double.
inline Tensor referenceMatmul(const Tensor& a0, const Tensor& b0, DType dtype) {
  Tensor a = a0.ndim() == 1 ? a0.expandDims(0) : a0;
  Tensor b = b0.ndim() == 1 ? b0.expandDims(1) : b0;
  const std::size_t ra = a.shape().size(), rb = b.shape().size();
  const std::int64_t m = a.shape()[ra - 2], k = a.shape()[ra - 1], n = b.shape()[rb - 1];
  const std::size_t nb = std::max(ra, rb) - 2;
  Shape batch(nb);
  for (std::size_t i = 0; i < nb; ++i) {
    const std::int64_t da = i + (ra - 2) >= nb ? a.shape()[i + (ra - 2) - nb] : 1;
    const std::int64_t db = i + (rb - 2) >= nb ? b.shape()[i + (rb - 2) - nb] : 1;
    batch[i] = std::max(da, db);
  }
  Shape fa = batch, fb = batch, fc = batch;
  fa.insert(fa.end(), {m, k});
  fb.insert(fb.end(), {k, n});
  fc.insert(fc.end(), {m, n});
  const Tensor A = a.broadcastTo(fa), B = b.broadcastTo(fb);
  Tensor C = Tensor::zeros(DType::Float64, fc);
  for (std::int64_t i = 0; i < C.numel(); ++i) {
    auto idx = unravel(i, fc);
    double s = 0;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      auto ia = idx, ib = idx;
      ia[nb + 1] = kk;
      ib[nb] = kk;
      s += A.at(ia) * B.at(ib);
    }
    C.set(idx, s);
  }
  Shape outShape = batch;
  if (a0.ndim() > 1) outShape.push_back(m);
  if (b0.ndim() > 1) outShape.push_back(n);
  return C.reshape(outShape).astype(dtype);
}

}  // namespace tscope::test
