#pragma once
// CAReduce: a commutative, associative scalar op folded over some axes of a tensor (Theano's
// CAReduce). One op class serves sum (add), prod (mul), max (maximum), min (minimum), all (and) and
// any (or); str() names it as the user wrote it: "Sum{axis=[0,2]}", "Max", "All{axis=[1]}".
// The builders (sum, prod, max, ... in reduce.h) normalise negative axes and add keepdims.
//
// Note [Reduction dtypes] (numpy's rules):
//   sum/prod  bool and integers accumulate and return int64; floats return their own dtype and
//             accumulate in it, except float16, which accumulates in float32. The props "dtype"
//             (the output dtype) and "acc_dtype" (int64, float32 or float64) override the rule.
//   max/min   keep the input dtype; NaN propagates (numpy's max, not fmax).
//   all/any   return bool; an element is true when it is nonzero (NaN is true).
// Note [Empty axes mean all]: the props "axis": null and "axis": [] (and an empty axes list in
// the builders) reduce over every axis, as the lead's API asks; a reduction over no axis at all
// is an identity and is written as such. A reduction over an axis of size 0 gives the identity of
// the op (0, 1, true, false) and, for max/min, raises as numpy does.

#include "engine/graph/op.h"
#include "engine/ops/elemwise/scalar_op.h"

#include <optional>
#include <vector>

namespace tscope::engine {

class OpRegistry;

class CAReduce final : public Op {
 public:
  // scalar: Add, Mul, Maximum, Minimum, And or Or. axes: distinct, non-negative (any order; kept
  // sorted); nullopt or empty: every axis. dtype/accDtype: Note [Reduction dtypes], for Add and
  // Mul only. Throws std::invalid_argument for anything else.
  explicit CAReduce(ScalarOp scalar, std::optional<std::vector<int>> axes = std::nullopt,
                    std::optional<DType> dtype = std::nullopt,
                    std::optional<DType> accDtype = std::nullopt);

  ScalarOp scalarOp() const { return m_scalar; }
  // The axes as given (sorted); nullopt: every axis.
  const std::optional<std::vector<int>>& axes() const { return m_axes; }
  // The reduced axes for an input of rank ndim.
  std::vector<int> axesFor(int ndim) const;
  // True when axis is reduced for an input of rank ndim.
  bool reduces(int axis) const;
  DType outputDType(DType input) const;
  DType accDType(DType input) const;

  std::string name() const override { return "CAReduce"; }
  // {"scalar_op": "add", "axis": [0, 2] | null}, plus "dtype" / "acc_dtype" when set.
  nlohmann::json props() const override;
  // "Sum{axis=[0,2]}", "Prod", "Max{axis=[1]}", "Sum{axis=[1],acc_dtype=float64}".
  std::string str() const override;
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
  ScalarOp m_scalar;
  std::optional<std::vector<int>> m_axes;
  std::optional<DType> m_dtype;
  std::optional<DType> m_accDtype;
};

// The kernel behind CAReduce::perform: folds `scalar` over the axes marked in `reduced` (one flag
// per axis of x) into *out (reuseOrAllocate'd with outDtype and the kept axes' shape), accumulating
// in accDtype. Contiguous runs are tight loops the compiler vectorizes; any strides work.
void reduceKernel(ScalarOp scalar, const Tensor& x, const std::vector<bool>& reduced,
                  DType accDtype, DType outDtype, Tensor* out);

}  // namespace tscope::engine
