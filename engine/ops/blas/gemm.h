#pragma once
// The BLAS-shaped ops that later rewrites turn dot expressions into (Theano's Gemm, Gemv, Ger):
//   Gemm  (Z, alpha, X, Y, beta) -> beta * Z + alpha * dot(X, Y)      Z, X, Y matrices
//   Gemv  (y, alpha, A, x, beta) -> beta * y + alpha * dot(A, x)      y, x vectors, A a matrix
//   Ger   (A, alpha, x, y)       -> A + alpha * outer(x, y)
// alpha and beta are 0-d; every input has one dtype, float32 or float64. With inplace the op
// writes its result into its first input's buffer (destroyMap {0: [0]}); without, it copies it.
// beta == 0 ignores Z's (y's) old contents, NaN included, as BLAS does.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

// One op class per BLAS routine; the routine is fixed by the class, inplace is the only prop.
class BlasOp : public Op {
 public:
  explicit BlasOp(bool inplace) : m_inplace(inplace) {}
  bool inplace() const { return m_inplace; }
  nlohmann::json props() const override { return {{"inplace", m_inplace}}; }
  // "Gemm{inplace}" / "Gemm{no_inplace}" (Theano's spelling).
  std::string str() const override { return name() + (m_inplace ? "{inplace}" : "{no_inplace}"); }
  DestroyMap destroyMap() const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;

 protected:
  // Checks the common rules (count, one float dtype, 0-d scalars at scalarInputs, ranks) and
  // returns the dtype.
  DType checkInputs(std::span<const VarPtr> inputs, std::span<const int> ranks) const;
  static bool readInplace(const std::string& op, const nlohmann::json& props);

 private:
  bool m_inplace;
};

class Gemm final : public BlasOp {
 public:
  using BlasOp::BlasOp;
  std::string name() const override { return "Gemm"; }
  OpPtr outOfPlace() const override { return inplace() ? std::make_shared<Gemm>(false) : nullptr; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

class Gemv final : public BlasOp {
 public:
  using BlasOp::BlasOp;
  std::string name() const override { return "Gemv"; }
  OpPtr outOfPlace() const override { return inplace() ? std::make_shared<Gemv>(false) : nullptr; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

class Ger final : public BlasOp {
 public:
  using BlasOp::BlasOp;
  std::string name() const override { return "Ger"; }
  OpPtr outOfPlace() const override { return inplace() ? std::make_shared<Ger>(false) : nullptr; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

VarPtr gemm(const VarPtr& z, const VarPtr& alpha, const VarPtr& x, const VarPtr& y,
            const VarPtr& beta, bool inplace = false,
            std::source_location site = std::source_location::current());
VarPtr gemv(const VarPtr& y, const VarPtr& alpha, const VarPtr& a, const VarPtr& x,
            const VarPtr& beta, bool inplace = false,
            std::source_location site = std::source_location::current());
VarPtr ger(const VarPtr& a, const VarPtr& alpha, const VarPtr& x, const VarPtr& y,
           bool inplace = false, std::source_location site = std::source_location::current());

// --- The strided matrix product the BLAS ops and Dot share --------------------------------------
// A 2-d matrix inside a tensor: its first element and its strides in elements.
template <class T>
struct MatrixView {
  T* data;
  std::int64_t rows, cols, rowStride, colStride;
};
// c = alpha * x . y + beta * c (x: m x k, y: k x n, c: m x n) for float and double. Row- or
// column-major operands (a transposed view) go to the GEMM kernel as they are; other strides are
// copied to a contiguous buffer first; beta == 0 ignores c's old contents.
template <class T>
void matmulStrided(MatrixView<const T> x, MatrixView<const T> y, MatrixView<T> c, T alpha, T beta);
extern template void matmulStrided<float>(MatrixView<const float>, MatrixView<const float>,
                                          MatrixView<float>, float, float);
extern template void matmulStrided<double>(MatrixView<const double>, MatrixView<const double>,
                                           MatrixView<double>, double, double);

void registerGemmOps(OpRegistry& registry);

}  // namespace tscope::engine
