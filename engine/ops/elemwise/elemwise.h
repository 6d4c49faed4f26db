#pragma once
// Elemwise: a scalar op mapped over tensors with numpy broadcasting (shapes aligned on the right;
// a dimension of 1 stretches). An inplace Elemwise writes an output into the buffer of an input of
// the same type (destroyMap), the target of the inplace rewrites.

#include "engine/graph/op.h"
#include "engine/ops/elemwise/scalar_op.h"

#include <map>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Elemwise final : public Op {
 public:
  // inplace: output index -> the input it overwrites. target: the dtype of a Cast.
  explicit Elemwise(ScalarOp scalar, std::map<int, int> inplace = {}, DType target = DType::Float32);

  ScalarOp scalarOp() const { return m_scalar; }
  const std::map<int, int>& inplacePattern() const { return m_inplace; }
  DType target() const { return m_target; }

  std::string name() const override { return "Elemwise"; }
  // {"scalar_op": "add"}; "inplace": {"0": 1} when inplace; "dtype": "float64" for cast.
  nlohmann::json props() const override;
  // "Elemwise{add}", "Elemwise{add,inplace}", "Elemwise{cast{float64}}".
  std::string str() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  DestroyMap destroyMap() const override;

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  ScalarOp m_scalar;
  std::map<int, int> m_inplace;
  DType m_target;
};

// The broadcast of static shapes (kUnknownDim where unknown); nullopt when two known sizes other
// than 1 disagree on an axis.
std::optional<std::vector<std::int64_t>> broadcastStaticShapes(std::span<const std::vector<std::int64_t>> shapes);

// Builders: elemwise(ScalarOp::Add, {x, y}) == Elemwise(Add)({x, y}).
VarPtr elemwise(ScalarOp op, std::vector<VarPtr> inputs,
                std::source_location site = std::source_location::current());
VarPtr cast(const VarPtr& x, DType dtype, std::source_location site = std::source_location::current());

void registerElemwiseOps(OpRegistry& registry);

}  // namespace tscope::engine
