#include "engine/ops/elemwise/scalar_op.h"

#include <array>
#include <iterator>

namespace tscope::engine {

namespace {
using R = DTypeRule;
using S = ScalarOp;
constexpr ScalarOpInfo kInfos[] = {
    {S::Add, "add", -1, R::Promote},
    {S::Sub, "sub", 2, R::Promote},
    {S::Mul, "mul", -1, R::Promote},
    {S::TrueDiv, "true_div", 2, R::PromoteToFloat},
    {S::IntDiv, "int_div", 2, R::Promote},
    {S::Mod, "mod", 2, R::Promote},
    {S::Pow, "pow", 2, R::Promote},
    {S::Minimum, "minimum", -1, R::Promote},
    {S::Maximum, "maximum", -1, R::Promote},
    {S::Neg, "neg", 1, R::Promote},
    {S::Abs, "abs", 1, R::Promote},
    {S::Sign, "sign", 1, R::Promote},
    {S::Sqr, "sqr", 1, R::Promote},
    {S::Exp, "exp", 1, R::PromoteToFloat},
    {S::Expm1, "expm1", 1, R::PromoteToFloat},
    {S::Log, "log", 1, R::PromoteToFloat},
    {S::Log1p, "log1p", 1, R::PromoteToFloat},
    {S::Log2, "log2", 1, R::PromoteToFloat},
    {S::Log10, "log10", 1, R::PromoteToFloat},
    {S::Sqrt, "sqrt", 1, R::PromoteToFloat},
    {S::Tanh, "tanh", 1, R::PromoteToFloat},
    {S::Sigmoid, "sigmoid", 1, R::PromoteToFloat},
    {S::Softplus, "softplus", 1, R::PromoteToFloat},
    {S::Sin, "sin", 1, R::PromoteToFloat},
    {S::Cos, "cos", 1, R::PromoteToFloat},
    {S::Erf, "erf", 1, R::PromoteToFloat},
    {S::Floor, "floor", 1, R::Promote},
    {S::Ceil, "ceil", 1, R::Promote},
    {S::Round, "round", 1, R::Promote},
    {S::Relu, "relu", 1, R::Promote},
    {S::Clip, "clip", 3, R::Promote},
    {S::Eq, "eq", 2, R::Bool},
    {S::Neq, "neq", 2, R::Bool},
    {S::Lt, "lt", 2, R::Bool},
    {S::Le, "le", 2, R::Bool},
    {S::Gt, "gt", 2, R::Bool},
    {S::Ge, "ge", 2, R::Bool},
    {S::And, "and", 2, R::Bool},
    {S::Or, "or", 2, R::Bool},
    {S::Xor, "xor", 2, R::Bool},
    {S::Not, "not", 1, R::Bool},
    {S::Switch, "switch", 3, R::PromoteTail},
    {S::Cast, "cast", 1, R::Target},
    {S::Identity, "identity", 1, R::Promote},
    {S::Second, "second", 2, R::PromoteTail},
};
static_assert(std::size(kInfos) == kScalarOpCount, "one ScalarOpInfo per ScalarOp");

constexpr bool tableInEnumOrder() {
  for (int i = 0; i < kScalarOpCount; ++i)
    if (static_cast<int>(kInfos[i].op) != i) return false;
  return true;
}
static_assert(tableInEnumOrder(), "kInfos must list the ops in the enum's order");
}  // namespace

const ScalarOpInfo& scalarOpInfo(ScalarOp op) {
  return kInfos[static_cast<int>(op)];
}

std::optional<ScalarOp> scalarOpFromName(std::string_view name) {
  for (const auto& info : kInfos)
    if (info.name == name) return info.op;
  return std::nullopt;
}

DType upgradeToFloat(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::Int8:
    case DType::Int16:
    case DType::UInt8:
    case DType::UInt16:
      return DType::Float32;
    case DType::Int32:
    case DType::Int64:
    case DType::UInt32:
    case DType::UInt64:
      return DType::Float64;
    default:
      return dtype;
  }
}

// Note [Elemwise dtype rules]: binary and n-ary arithmetic follows numpy's promotion of array
// operands (promoteTypes); true_div and the transcendental functions then turn an integer or bool
// result into a float with Theano's upgrade_to_float; comparisons and logic give bool; switch
// promotes its two branches; cast gives its target. docs/elemwise-dtypes.md has the table, with
// representative pairs (int8 + uint8 -> int16, int32 / int32 -> float64, float16 exp -> float16).
DType scalarOpOutputDType(ScalarOp op, std::span<const DType> inputs, DType target) {
  const ScalarOpInfo& info = scalarOpInfo(op);
  auto promoteFrom = [&](std::size_t first) {
    DType out = inputs[first];
    for (std::size_t i = first + 1; i < inputs.size(); ++i) out = promoteTypes(out, inputs[i]);
    return out;
  };
  switch (info.rule) {
    case R::Promote:
      return promoteFrom(0);
    case R::PromoteToFloat:
      return upgradeToFloat(promoteFrom(0));
    case R::Bool:
      return DType::Bool;
    case R::PromoteTail:
      return promoteFrom(1);
    case R::Target:
      return target;
  }
  return promoteFrom(0);
}

}  // namespace tscope::engine
