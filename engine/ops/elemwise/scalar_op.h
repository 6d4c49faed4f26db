#pragma once
// The scalar operations Elemwise maps over tensors, with their arity and output-dtype rule.

#include "engine/tensor/dtype.h"

#include <optional>
#include <span>
#include <string_view>

namespace tscope::engine {

enum class ScalarOp : std::uint8_t {
  // arithmetic (numpy promotion)
  Add,
  Sub,
  Mul,
  TrueDiv,
  IntDiv,
  Mod,
  Pow,
  Minimum,
  Maximum,
  Neg,
  Abs,
  Sign,
  Sqr,
  // transcendental (integer inputs upgrade to a float)
  Exp,
  Expm1,
  Log,
  Log1p,
  Log2,
  Log10,
  Sqrt,
  Tanh,
  Sigmoid,
  Softplus,
  Sin,
  Cos,
  Erf,
  // rounding and piecewise (keep the dtype)
  Floor,
  Ceil,
  Round,
  Relu,
  Clip,
  // comparisons and logic (bool result)
  Eq,
  Neq,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  Xor,
  Not,
  // selection and conversion
  Switch,
  Cast,
  Identity,
  // second(a, b): b broadcast to the shape of a and b (Theano's fill/second; zeros_like)
  Second,
};
inline constexpr int kScalarOpCount = static_cast<int>(ScalarOp::Second) + 1;

// How the output dtype follows from the input dtypes (Note [Elemwise dtype rules] in
// scalar_op.cpp).
enum class DTypeRule : std::uint8_t {
  Promote,         // numpy promotion of all inputs
  PromoteToFloat,  // promotion, then integers/bool upgrade to a float (true_div, exp, ...)
  Bool,            // comparisons and logic
  PromoteTail,     // promotion of every input but the first (switch: the condition is excluded)
  Target,          // the op's target dtype (cast)
};

struct ScalarOpInfo {
  ScalarOp op;
  std::string_view name;  // "add", "true_div", ...
  int arity;              // -1: two or more (add, mul, minimum, maximum)
  DTypeRule rule;
};

const ScalarOpInfo& scalarOpInfo(ScalarOp op);
std::optional<ScalarOp> scalarOpFromName(std::string_view name);

// Theano's upgrade_to_float: bool, int8, int16, uint8 -> float32; int32, int64 -> float64.
DType upgradeToFloat(DType dtype);
// The output dtype of op on inputs of these dtypes (target for Cast).
DType scalarOpOutputDType(ScalarOp op, std::span<const DType> inputs, DType target);

}  // namespace tscope::engine
