#pragma once
// Elemwise: a scalar op mapped over tensors with numpy broadcasting (shapes aligned on the right;
// a dimension of 1 stretches). An inplace Elemwise writes an output into the buffer of an input of
// the same type (destroyMap), the target of the inplace rewrites.

#include "engine/graph/op.h"
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/ops/elemwise/scalar_op.h"

#include <array>
#include <map>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Elemwise final : public Op {
 public:
  // inplace: output index -> the input it overwrites. target: the dtype of a Cast.
  explicit Elemwise(ScalarOp scalar, std::map<int, int> inplace = {},
                    DType target = DType::Float32);

  ScalarOp scalarOp() const { return m_scalar; }
  const std::map<int, int>& inplacePattern() const { return m_inplace; }
  DType target() const { return m_target; }

  std::string name() const override { return "Elemwise"; }
  // {"scalar_op": "add"}; "inplace": {"0": 1} when inplace; "dtype": "float64" for cast.
  nlohmann::json props() const override;
  // "Elemwise{add}", "Elemwise{add,inplace}", "Elemwise{cast{float64}}".
  std::string str() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  // numpy broadcasting at run time; computes in place into input k when inplace says so and the
  // input has the output's shape (else into a fresh buffer). Note [Elemwise kernel layout].
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  // Per axis: a static size != 1 when an input has one, 1 when every input is statically 1, else
  // the maximum of the candidate sizes (numpy's rule: the size that is not 1 wins).
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  // Note [Elemwise gradient conventions] in elemwise_grad.cpp.
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  DestroyMap destroyMap() const override;
  OpPtr outOfPlace() const override;

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  // Computes the op on the inputs into dest (dest has the broadcast shape; it may be one of the
  // inputs exactly, for in-place operation).
  void compute(Tensor& dest, std::span<const Tensor* const> inputs) const;

  ScalarOp m_scalar;
  std::map<int, int> m_inplace;
  DType m_target;
  // Note [Elemwise fast path]: the row kernel per input dtype, and how many inputs the flat path
  // takes (1 or 2; 0 for ops that never take it), fixed at construction.
  std::array<ElemwiseRowFn, kDTypeCount> m_kernels{};
  std::size_t m_flatArity = 0;
};

// The broadcast of static shapes (kUnknownDim where unknown); nullopt when two known sizes other
// than 1 disagree on an axis.
std::optional<std::vector<std::int64_t>> broadcastStaticShapes(
    std::span<const std::vector<std::int64_t>> shapes);

// Elemwise::inferShape's rule for one output of type outType over operands whose symbolic shapes
// are `shapes` and whose static shapes are *staticShapes[k] (Composite applies it per output).
ShapeExpr broadcastShapeExpr(const TensorType& outType, std::span<const ShapeExpr> shapes,
                             std::span<const std::vector<std::int64_t>* const> staticShapes);

// Builders: elemwise(ScalarOp::Add, {x, y}) == Elemwise(Add)({x, y}).
VarPtr elemwise(ScalarOp op, std::vector<VarPtr> inputs,
                std::source_location site = std::source_location::current());
VarPtr cast(const VarPtr& x, DType dtype,
            std::source_location site = std::source_location::current());

void registerElemwiseOps(OpRegistry& registry);

}  // namespace tscope::engine
