#pragma once
// DimShuffle: reorders the axes of a tensor, inserts broadcastable axes ("x") and drops axes of
// size 1. Its output is a view of its input (no copy).
//   DimShuffle{1,0}: transpose; DimShuffle{x,0}: vector -> row; DimShuffle{0}: (n, 1) -> (n,)

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class DimShuffle final : public Op {
 public:
  static constexpr int kNewAxis = -1;  // "x" in the order
  // order: for each output axis, the input axis it takes, or kNewAxis. Every input axis missing
  // from order is dropped and must have static size 1.
  DimShuffle(int inputNdim, std::vector<int> order);

  int inputNdim() const { return m_inputNdim; }
  const std::vector<int>& order() const { return m_order; }

  std::string name() const override { return "DimShuffle"; }
  nlohmann::json props() const override;  // {"input_ndim": 2, "order": [1, 0, "x"]}
  std::string str() const override;       // "DimShuffle{1,0,x}"
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  ViewMap viewMap() const override { return {{0, {0}}}; }

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  int m_inputNdim;
  std::vector<int> m_order;
};

VarPtr dimshuffle(const VarPtr& x, std::vector<int> order,
                  std::source_location site = std::source_location::current());
// Reverses the axes.
VarPtr transpose(const VarPtr& x, std::source_location site = std::source_location::current());

void registerShapeOps(OpRegistry& registry);

}  // namespace tscope::engine
