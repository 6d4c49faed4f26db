#pragma once
// Dot: numpy's matmul. vector . vector -> scalar; matrix . vector -> vector; vector . matrix ->
// vector; matrix . matrix -> matrix; higher ranks are stacks of matrices whose leading (batch)
// dimensions broadcast.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Dot final : public Op {
 public:
  std::string name() const override { return "Dot"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

VarPtr dot(const VarPtr& a, const VarPtr& b, std::source_location site = std::source_location::current());

void registerBlasOps(OpRegistry& registry);

}  // namespace tscope::engine
