#include "engine/ops/blas/gemm.h"

#include "engine/backends/cpu/gemm.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/tensor/tensor.h"

#include <array>
#include <vector>

namespace tscope::engine {

// --- matmulStrided -------------------------------------------------------------------------------

namespace {

struct Layout {
  bool ok = false;
  bool trans = false;  // column-major: pass as a transposed row-major operand
  std::int64_t ld = 0;
};

// Note [Row-major GEMM] in backends/cpu/gemm.h: a matrix the kernel takes as it is has unit stride
// along one axis and, along the other, a stride that keeps rows (columns) apart.
Layout layoutOf(std::int64_t rows, std::int64_t cols, std::int64_t sr, std::int64_t sc) {
  if ((cols <= 1 || sc == 1) && (rows <= 1 || sr >= cols))
    return {true, false, rows <= 1 ? std::max<std::int64_t>(cols, 1) : sr};
  if ((rows <= 1 || sr == 1) && (cols <= 1 || sc >= rows))
    return {true, true, cols <= 1 ? std::max<std::int64_t>(rows, 1) : sc};
  return {};
}

template <class T>
std::vector<std::remove_const_t<T>> pack(const MatrixView<T>& v) {
  std::vector<std::remove_const_t<T>> out(static_cast<std::size_t>(v.rows * v.cols));
  for (std::int64_t i = 0; i < v.rows; ++i)
    for (std::int64_t j = 0; j < v.cols; ++j)
      out[static_cast<std::size_t>(i * v.cols + j)] = v.data[i * v.rowStride + j * v.colStride];
  return out;
}

}  // namespace

template <class T>
void matmulStrided(MatrixView<const T> x, MatrixView<const T> y, MatrixView<T> c, T alpha, T beta) {
  const std::int64_t m = c.rows, n = c.cols, k = x.cols;
  if (m == 0 || n == 0) return;
  std::vector<T> xbuf, ybuf;
  Layout lx = layoutOf(x.rows, x.cols, x.rowStride, x.colStride);
  if (!lx.ok) {
    xbuf = pack(x);
    x = {xbuf.data(), m, k, k, 1};
    lx = {true, false, std::max<std::int64_t>(k, 1)};
  }
  Layout ly = layoutOf(y.rows, y.cols, y.rowStride, y.colStride);
  if (!ly.ok) {
    ybuf = pack(y);
    y = {ybuf.data(), k, n, n, 1};
    ly = {true, false, n};
  }
  const Layout lc = layoutOf(c.rows, c.cols, c.rowStride, c.colStride);
  if (lc.ok && !lc.trans) {
    cpu::gemm(lx.trans, ly.trans, m, n, k, alpha, x.data, lx.ld, y.data, ly.ld, beta, c.data,
              lc.ld);
  } else if (lc.ok) {
    // A column-major C is a row-major C^T = Y^T X^T.
    cpu::gemm(!ly.trans, !lx.trans, n, m, k, alpha, y.data, ly.ld, x.data, lx.ld, beta, c.data,
              lc.ld);
  } else {
    std::vector<T> cbuf = beta == T(0)
                              ? std::vector<T>(static_cast<std::size_t>(m * n))
                              : pack(MatrixView<const T>{c.data, m, n, c.rowStride, c.colStride});
    cpu::gemm(lx.trans, ly.trans, m, n, k, alpha, x.data, lx.ld, y.data, ly.ld, beta, cbuf.data(),
              n);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        c.data[i * c.rowStride + j * c.colStride] = cbuf[static_cast<std::size_t>(i * n + j)];
  }
}

template void matmulStrided<float>(MatrixView<const float>, MatrixView<const float>,
                                   MatrixView<float>, float, float);
template void matmulStrided<double>(MatrixView<const double>, MatrixView<const double>,
                                    MatrixView<double>, double, double);

// --- The ops -------------------------------------------------------------------------------------

namespace {

template <class T>
MatrixView<const T> matrixOf(const Tensor& t) {
  // A vector is a column (n x 1).
  if (t.ndim() == 1) return {t.data<T>(), t.shape()[0], 1, t.strides()[0], 1};
  return {t.data<T>(), t.shape()[0], t.shape()[1], t.strides()[0], t.strides()[1]};
}
template <class T>
MatrixView<T> mutableMatrixOf(Tensor& t) {
  if (t.ndim() == 1) return {t.data<T>(), t.shape()[0], 1, t.strides()[0], 1};
  return {t.data<T>(), t.shape()[0], t.shape()[1], t.strides()[0], t.strides()[1]};
}
template <class T>
MatrixView<const T> rowOf(const Tensor& t) {  // a vector as a 1 x n matrix
  return {t.data<T>(), 1, t.shape()[0], t.shape()[0], t.strides()[0]};
}

// The buffer the result goes to: the first input itself in place, else the output storage, filled
// with a copy of the first input when its old contents matter (keep).
Tensor targetFor(bool inplace, const Tensor& first, Tensor* out, bool keep) {
  if (inplace) return first;  // shares the storage: destroyMap {0: [0]}
  Tensor& t = reuseOrAllocate(out, first.dtype(), first.shape());
  if (keep) t.copyFrom(first);
  return t;
}

// An operand that shares the destroyed buffer must be read before it is overwritten.
Tensor unaliased(const Tensor& operand, const Tensor& target) {
  return operand.sharesStorageWith(target) ? operand.clone() : operand;
}

std::string shapesStr(std::initializer_list<std::pair<const char*, const Tensor*>> items) {
  std::string s;
  for (const auto& [name, t] : items)
    s += (s.empty() ? "" : ", ") + std::string(name) + " " + shapeToString(t->shape());
  return s;
}

const char* const kGemmNames[] = {"Z", "alpha", "X", "Y", "beta"};
const char* const kGemvNames[] = {"y", "alpha", "A", "x", "beta"};
const char* const kGerNames[] = {"A", "alpha", "x", "y"};

std::string dimStr(std::int64_t d) {
  return d == kUnknownDim ? "?" : std::to_string(d);
}
bool conflict(std::int64_t a, std::int64_t b) {
  return a != kUnknownDim && b != kUnknownDim && a != b;
}

}  // namespace

DestroyMap BlasOp::destroyMap() const {
  if (!m_inplace) return {};
  return {{0, {0}}};
}

std::vector<ShapeExpr> BlasOp::inferShape(const Apply&,
                                          std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

DType BlasOp::checkInputs(std::span<const VarPtr> inputs, std::span<const int> ranks) const {
  checkInputCount(inputs, ranks.size());
  const char* const* names = name() == "Gemm"   ? kGemmNames
                             : name() == "Gemv" ? kGemvNames
                                                : kGerNames;
  const DType dtype = inputs[0]->type().dtype();
  if (dtype != DType::Float32 && dtype != DType::Float64)
    throwInputError(inputs, 0, "a float32 or float64 tensor (" + std::string(names[0]) + ")");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const TensorType& t = inputs[i]->type();
    if (t.dtype() != dtype || t.ndim() != ranks[i] || t.device() != inputs[0]->type().device())
      throwInputError(inputs, static_cast<int>(i),
                      "a " + std::to_string(ranks[i]) + "-d " + std::string(dtypeName(dtype)) +
                          " tensor (" + names[i] + ")");
  }
  return dtype;
}

bool BlasOp::readInplace(const std::string& op, const nlohmann::json& props) {
  if (!props.is_object()) throw std::invalid_argument(op + ": props must be a JSON object");
  for (const auto& [key, value] : props.items())
    if (key != "inplace") throw std::invalid_argument(op + ": unknown prop \"" + key + "\"");
  if (!props.contains("inplace")) return false;
  if (!props["inplace"].is_boolean())
    throw std::invalid_argument(op + ": \"inplace\" must be true or false");
  return props["inplace"].get<bool>();
}

// Gemm: (Z, alpha, X, Y, beta) -> beta * Z + alpha * X . Y

std::vector<TensorType> Gemm::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputs(inputs, std::array{2, 0, 2, 2, 0});
  const auto& z = inputs[0]->type().shape();
  const auto& x = inputs[2]->type().shape();
  const auto& y = inputs[3]->type().shape();
  if (conflict(x[1], y[0]) || conflict(z[0], x[0]) || conflict(z[1], y[1]))
    throw TypeError(str() + ": the shapes do not fit beta * Z + alpha * X . Y: Z " +
                    inputs[0]->type().str() + ", X " + inputs[2]->type().str() + ", Y " +
                    inputs[3]->type().str());
  return {inputs[0]->type()};
}

void Gemm::perform(const Apply&, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) const {
  const Tensor &z = *inputs[0], &x = *inputs[2], &y = *inputs[3];
  if (x.shape()[1] != y.shape()[0] || z.shape()[0] != x.shape()[0] || z.shape()[1] != y.shape()[1])
    throw std::invalid_argument(str() + ": the shapes do not fit beta * Z + alpha * X . Y: " +
                                shapesStr({{"Z", &z}, {"X", &x}, {"Y", &y}}));
  const double alpha = inputs[1]->item(), beta = inputs[4]->item();
  Tensor target = targetFor(inplace(), z, outputs[0], beta != 0.0);
  const Tensor xs = unaliased(x, target), ys = unaliased(y, target);
  if (z.dtype() == DType::Float32)
    matmulStrided<float>(matrixOf<float>(xs), matrixOf<float>(ys), mutableMatrixOf<float>(target),
                         static_cast<float>(alpha), static_cast<float>(beta));
  else
    matmulStrided<double>(matrixOf<double>(xs), matrixOf<double>(ys),
                          mutableMatrixOf<double>(target), alpha, beta);
  *outputs[0] = target;
}

std::vector<Grad> Gemm::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr &z = node.input(0), &alpha = node.input(1), &x = node.input(2), &y = node.input(3),
               &beta = node.input(4);
  const VarPtr& g = outputGrads[0];
  return {Grad(mul(beta, g)), Grad(sum(mul(g, dot(x, y)))), Grad(mul(alpha, dot(g, transpose(y)))),
          Grad(mul(alpha, dot(transpose(x), g))), Grad(sum(mul(g, z)))};
}

OpPtr Gemm::fromProps(const nlohmann::json& props) {
  return std::make_shared<Gemm>(readInplace("Gemm", props));
}

// Gemv: (y, alpha, A, x, beta) -> beta * y + alpha * A . x

std::vector<TensorType> Gemv::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputs(inputs, std::array{1, 0, 2, 1, 0});
  const auto& y = inputs[0]->type().shape();
  const auto& a = inputs[2]->type().shape();
  const auto& x = inputs[3]->type().shape();
  if (conflict(a[1], x[0]) || conflict(y[0], a[0]))
    throw TypeError(str() + ": the shapes do not fit beta * y + alpha * A . x: y " +
                    inputs[0]->type().str() + ", A " + inputs[2]->type().str() + ", x " +
                    inputs[3]->type().str() + " (" + dimStr(a[1]) + " vs " + dimStr(x[0]) + ")");
  return {inputs[0]->type()};
}

void Gemv::perform(const Apply&, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) const {
  const Tensor &y = *inputs[0], &a = *inputs[2], &x = *inputs[3];
  if (a.shape()[1] != x.shape()[0] || y.shape()[0] != a.shape()[0])
    throw std::invalid_argument(str() + ": the shapes do not fit beta * y + alpha * A . x: " +
                                shapesStr({{"y", &y}, {"A", &a}, {"x", &x}}));
  const double alpha = inputs[1]->item(), beta = inputs[4]->item();
  Tensor target = targetFor(inplace(), y, outputs[0], beta != 0.0);
  const Tensor as = unaliased(a, target), xs = unaliased(x, target);
  if (y.dtype() == DType::Float32)
    matmulStrided<float>(matrixOf<float>(as), matrixOf<float>(xs), mutableMatrixOf<float>(target),
                         static_cast<float>(alpha), static_cast<float>(beta));
  else
    matmulStrided<double>(matrixOf<double>(as), matrixOf<double>(xs),
                          mutableMatrixOf<double>(target), alpha, beta);
  *outputs[0] = target;
}

std::vector<Grad> Gemv::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr &y = node.input(0), &alpha = node.input(1), &a = node.input(2), &x = node.input(3),
               &beta = node.input(4);
  const VarPtr& g = outputGrads[0];
  return {Grad(mul(beta, g)), Grad(sum(mul(g, dot(a, x)))), Grad(mul(alpha, outer(g, x))),
          Grad(mul(alpha, dot(g, a))), Grad(sum(mul(g, y)))};
}

OpPtr Gemv::fromProps(const nlohmann::json& props) {
  return std::make_shared<Gemv>(readInplace("Gemv", props));
}

// Ger: (A, alpha, x, y) -> A + alpha * outer(x, y)

std::vector<TensorType> Ger::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputs(inputs, std::array{2, 0, 1, 1});
  const auto& a = inputs[0]->type().shape();
  const auto& x = inputs[2]->type().shape();
  const auto& y = inputs[3]->type().shape();
  if (conflict(a[0], x[0]) || conflict(a[1], y[0]))
    throw TypeError(str() + ": the shapes do not fit A + alpha * outer(x, y): A " +
                    inputs[0]->type().str() + ", x " + inputs[2]->type().str() + ", y " +
                    inputs[3]->type().str());
  return {inputs[0]->type()};
}

void Ger::perform(const Apply&, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs) const {
  const Tensor &a = *inputs[0], &x = *inputs[2], &y = *inputs[3];
  if (a.shape()[0] != x.shape()[0] || a.shape()[1] != y.shape()[0])
    throw std::invalid_argument(str() + ": the shapes do not fit A + alpha * outer(x, y): " +
                                shapesStr({{"A", &a}, {"x", &x}, {"y", &y}}));
  const double alpha = inputs[1]->item();
  Tensor target = targetFor(inplace(), a, outputs[0], true);
  const Tensor xs = unaliased(x, target), ys = unaliased(y, target);
  if (a.dtype() == DType::Float32)
    matmulStrided<float>(matrixOf<float>(xs), rowOf<float>(ys), mutableMatrixOf<float>(target),
                         static_cast<float>(alpha), 1.0f);
  else
    matmulStrided<double>(matrixOf<double>(xs), rowOf<double>(ys), mutableMatrixOf<double>(target),
                          alpha, 1.0);
  *outputs[0] = target;
}

std::vector<Grad> Ger::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr &alpha = node.input(1), &x = node.input(2), &y = node.input(3);
  const VarPtr& g = outputGrads[0];
  return {Grad(g), Grad(sum(mul(g, outer(x, y)))), Grad(mul(alpha, dot(g, y))),
          Grad(mul(alpha, dot(x, g)))};
}

OpPtr Ger::fromProps(const nlohmann::json& props) {
  return std::make_shared<Ger>(readInplace("Ger", props));
}

VarPtr gemm(const VarPtr& z, const VarPtr& alpha, const VarPtr& x, const VarPtr& y,
            const VarPtr& beta, bool inplace, std::source_location site) {
  return std::make_shared<Gemm>(inplace)->operator()({z, alpha, x, y, beta}, site);
}
VarPtr gemv(const VarPtr& y, const VarPtr& alpha, const VarPtr& a, const VarPtr& x,
            const VarPtr& beta, bool inplace, std::source_location site) {
  return std::make_shared<Gemv>(inplace)->operator()({y, alpha, a, x, beta}, site);
}
VarPtr ger(const VarPtr& a, const VarPtr& alpha, const VarPtr& x, const VarPtr& y, bool inplace,
           std::source_location site) {
  return std::make_shared<Ger>(inplace)->operator()({a, alpha, x, y}, site);
}

void registerGemmOps(OpRegistry& registry) {
  registry.add("Gemm", &Gemm::fromProps);
  registry.add("Gemv", &Gemv::fromProps);
  registry.add("Ger", &Ger::fromProps);
}

}  // namespace tscope::engine
