#pragma once
// The math-like building API: named builders for every scalar op, operators on variables, scalar
// constants, and symbolic shapes (ShapeI, shapeOf). `auto y = tanh(dot(x, W) + b);`
//
// Note [Python-scalar operands]: in `x + 2.0` the scalar becomes a constant of x's dtype when x is
// a float tensor, or when x is an integer tensor and the scalar is integral; otherwise (an integer
// tensor and a fractional scalar) a float64 constant, so the result follows numpy's promotion.

#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/elemwise.h"

#include <source_location>
#include <type_traits>

namespace tscope::engine {

using Site = std::source_location;

// --- Constants ---------------------------------------------------------------------------------
VarPtr constant(double value, DType dtype, Site site = Site::current());
VarPtr constant(const Tensor& value, Site site = Site::current());
// A scalar constant typed for combining with `like` (Note [Python-scalar operands]).
VarPtr scalarLike(double value, const VarPtr& like, Site site = Site::current());
// A 0-d int64 constant (shape arithmetic).
VarPtr constantInt(std::int64_t value, Site site = Site::current());
// The integer value of a 0-d int64 Constant; nullopt for anything else.
std::optional<std::int64_t> constantIntValue(const VarPtr& v);

// --- Elementwise builders ----------------------------------------------------------------------
VarPtr add(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr sub(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr mul(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr trueDiv(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr intDiv(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr mod(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr pow(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr minimum(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr maximum(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr neg(const VarPtr& x, Site site = Site::current());
VarPtr abs(const VarPtr& x, Site site = Site::current());
VarPtr sign(const VarPtr& x, Site site = Site::current());
VarPtr sqr(const VarPtr& x, Site site = Site::current());
VarPtr exp(const VarPtr& x, Site site = Site::current());
VarPtr expm1(const VarPtr& x, Site site = Site::current());
VarPtr log(const VarPtr& x, Site site = Site::current());
VarPtr log1p(const VarPtr& x, Site site = Site::current());
VarPtr log2(const VarPtr& x, Site site = Site::current());
VarPtr log10(const VarPtr& x, Site site = Site::current());
VarPtr sqrt(const VarPtr& x, Site site = Site::current());
VarPtr tanh(const VarPtr& x, Site site = Site::current());
VarPtr sigmoid(const VarPtr& x, Site site = Site::current());
VarPtr softplus(const VarPtr& x, Site site = Site::current());
VarPtr relu(const VarPtr& x, Site site = Site::current());
VarPtr sin(const VarPtr& x, Site site = Site::current());
VarPtr cos(const VarPtr& x, Site site = Site::current());
VarPtr erf(const VarPtr& x, Site site = Site::current());
VarPtr floor(const VarPtr& x, Site site = Site::current());
VarPtr ceil(const VarPtr& x, Site site = Site::current());
VarPtr round(const VarPtr& x, Site site = Site::current());
VarPtr clip(const VarPtr& x, const VarPtr& lo, const VarPtr& hi, Site site = Site::current());
VarPtr eq(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr neq(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr lt(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr le(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr gt(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr ge(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr logicalAnd(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr logicalOr(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr logicalXor(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr logicalNot(const VarPtr& x, Site site = Site::current());
// numpy.where(cond, a, b).
VarPtr where(const VarPtr& cond, const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr identity(const VarPtr& x, Site site = Site::current());
// zeros/ones with x's type and shape (symbolic: works for unknown dims).
VarPtr zerosLike(const VarPtr& x, Site site = Site::current());
VarPtr onesLike(const VarPtr& x, Site site = Site::current());

// Note [Operator sites]: C++ operators cannot take a defaulted std::source_location, so each
// operand converts to an Operand, whose converting constructor takes one; its default argument is
// evaluated where the conversion happens, the user's expression. Nodes built by operators thus
// record the user's line like the named builders do.
struct Operand {
  template <class T>
  requires std::is_base_of_v<Variable, T> Operand(
      const std::shared_ptr<T>& v, Site s = Site::current())  // NOLINT: implicit by design
      : var(v), site(s) {}
  VarPtr var;
  Site site;
};

// Operators: tensor (op) tensor, tensor (op) scalar, scalar (op) tensor.
VarPtr operator+(const Operand& a, const Operand& b);
VarPtr operator-(const Operand& a, const Operand& b);
VarPtr operator*(const Operand& a, const Operand& b);
VarPtr operator/(const Operand& a, const Operand& b);
VarPtr operator-(const Operand& x);
VarPtr operator+(const Operand& a, double b);
VarPtr operator-(const Operand& a, double b);
VarPtr operator*(const Operand& a, double b);
VarPtr operator/(const Operand& a, double b);
VarPtr operator+(double a, const Operand& b);
VarPtr operator-(double a, const Operand& b);
VarPtr operator*(double a, const Operand& b);
VarPtr operator/(double a, const Operand& b);

// --- Symbolic shapes ---------------------------------------------------------------------------
// ShapeI{i}: the size of axis i of its input, a 0-d int64 (Theano's Shape_i).
class ShapeI final : public Op {
 public:
  explicit ShapeI(int axis) : m_axis(axis) {}
  int axis() const { return m_axis; }
  std::string name() const override { return "ShapeI"; }
  nlohmann::json props() const override { return {{"i", m_axis}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  int m_axis;
};

// The size of axis i of x: a constant when the type knows it, else ShapeI{i}(x).
VarPtr shapeI(const VarPtr& x, int axis, Site site = Site::current());
// Every axis of x (shapeI for each).
ShapeExpr shapeOf(const VarPtr& x, Site site = Site::current());
// The static shape a ShapeExpr pins down (kUnknownDim where an entry is not a constant).
std::vector<std::int64_t> staticShape(const ShapeExpr& shape);

void registerBasicOps(OpRegistry& registry);

}  // namespace tscope::engine
