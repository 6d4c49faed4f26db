#pragma once
// Unique{axis, sorted}(x) -> (y, indices, inverse, counts): numpy.unique with return_index,
// return_inverse and return_counts, as ONNX's Unique. Without an axis (axis = kNoAxis) x is
// flattened and y holds its distinct elements; with one, y holds x's distinct slices along it.
// sorted: ascending (slices in lexicographic order); otherwise in order of first occurrence.
// indices: where each entry of y first occurs in x; inverse: for each element (slice) of x, its
// entry in y; counts: how often each occurs. All but y are int64 vectors. Their lengths depend on
// x's values (no inferShape: the shape graph reads them at run time).
//   auto [values, first, inverse, counts] = unique(x);       // flattened, sorted
// y's gradient is not defined (a gather whose indices depend on the values; say so).
#include "engine/graph/op.h"

#include <array>
#include <limits>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Unique final : public Op {
 public:
  static constexpr int kNoAxis = std::numeric_limits<int>::min();
  Unique(int axis, bool sorted) : m_axis(axis), m_sorted(sorted) {}
  std::string name() const override { return "Unique"; }
  nlohmann::json props() const override;  // {"axis": 0 | null, "sorted": true}
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  int m_axis;  // normalised (non-negative) or kNoAxis
  bool m_sorted;
};

std::array<VarPtr, 4> unique(const VarPtr& x, std::optional<int> axis = std::nullopt,
                             bool sorted = true,
                             std::source_location site = std::source_location::current());

void registerUniqueOps(OpRegistry& registry);

}  // namespace tscope::engine
