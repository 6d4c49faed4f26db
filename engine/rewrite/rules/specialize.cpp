// Specialize rewrites (phase specialize, tags fast_run, specialize): cheaper forms of what the
// earlier phases left, and dot + scale + add into gemm/gemv (specialize_blas.cpp).
//
// Note [Cheap forms]: each rule keeps the output's type exactly (the pattern rewriter fits dtype
// and shape, Note [Fitting the replacement] in pattern.h). The pow rules apply to float operands
// only: an integer pow has its own dtype rules (pow(int8, 0.5) is float64, sqrt(int8) float32),
// and the forms are about speed, not about changing what is computed. Values agree to rounding:
// x * x * x and pow(x, 3) may differ in the last bit, as Theano's forms do.

#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/rewrite/pattern.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/tensor/tensor.h"

#include <cmath>

namespace tscope::engine {

// The dot + scale + add rewriter (gemm_from_dot_add), in specialize_blas.cpp.
NodeRewriterPtr gemmFromDotAddRewriter();
NodeRewriterPtr convBiasActivationRewriter();  // specialize_conv.cpp
GraphRewriterPtr channelBlocksRewriter();      // channel_blocks.cpp

namespace {

struct CheapForm {
  const char* name;
  const char* rules;  // one per line
  bool floatOnly;     // x must be a float (Note [Cheap forms])
};

const CheapForm kCheapForms[] = {
    {"pow_2_to_sqr", "pow(x, 2) -> sqr(x)", true},
    {"pow_3_to_mul_sqr", "pow(x, 3) -> x * sqr(x)", true},
    {"pow_half_to_sqrt", "pow(x, 0.5) -> sqrt(x)", true},
    {"pow_1_to_x", "pow(x, 1) -> x", true},
    {"pow_minus_1_to_reciprocal", "pow(x, -1) -> 1 / x", true},
    {"pow_minus_half_to_reciprocal_sqrt", "pow(x, -0.5) -> 1 / sqrt(x)", true},
    // Integer squares are exact either way.
    {"mul_self_to_sqr",
     "x * x -> sqr(x)\n"
     "mul(x, x, y) -> sqr(x) * y",
     false},
};

// Constants no larger than this are rewritten (their values are computed here, element by element).
constexpr std::int64_t kMaxConstantElements = 4096;

// The values of a constant operand with the shape they broadcast with: a Constant's own values,
// or a constant-valued variable (a Constant seen through broadcasting) as a tensor of its static
// shape (0-d when that shape is not fully known; fitReplacement restores the broadcast then).
std::optional<Tensor> constantOperand(const VarPtr& c) {
  if (c->kind() == Variable::Kind::Constant) {
    const Tensor& t = static_cast<const Constant&>(*c).value();
    if (t.numel() > kMaxConstantElements) return std::nullopt;
    return t;
  }
  const std::optional<double> v = scalarConstantValue(*c);
  if (!v) return std::nullopt;
  const TensorType& type = c->type();
  if (!type.isFullyKnown()) return Tensor::scalar(type.dtype(), *v);
  std::int64_t n = 1;
  for (std::int64_t d : type.shape()) n *= d;
  if (n > kMaxConstantElements) return std::nullopt;
  return Tensor::full(type.dtype(), type.shape(), *v);
}

// x / c -> x * (1 / c) for a float result and a constant c without zeros: a multiply is cheaper
// than a divide, and the reciprocal is computed once, here (in double, then rounded to the dtype).
Replacements divByConstantToMul(RewriteContext& ctx, Apply& node) {
  if (!isElemwise(node, ScalarOp::TrueDiv)) return {};
  const VarPtr out = node.output(0);
  const DType dtype = out->type().dtype();
  const VarPtr& x = node.input(0);
  if (!isFloat(dtype) || x->type().dtype() != dtype) return {};
  const std::optional<Tensor> c = constantOperand(node.input(1));
  if (!c) return {};
  std::vector<double> values = c->toDoubles();
  for (double& v : values) {
    if (v == 0.0 || !std::isfinite(v)) return {};
    v = 1.0 / v;
  }
  const VarPtr reciprocal = constant(Tensor::fromDoubles(dtype, c->shape(), values));
  const VarPtr built = fitReplacement(ctx, mul(x, reciprocal), out);
  if (!built) return {};
  return {{out, built}};
}

// neg(x) * c -> x * (-c) for a constant c of a signed or float dtype: one elementwise op less.
Replacements mulNegConstant(RewriteContext& ctx, Apply& node) {
  if (!isElemwise(node, ScalarOp::Mul)) return {};
  int negAt = -1, constAt = -1;
  std::optional<Tensor> c;
  for (int i = 0; i < node.nInputs(); ++i) {
    const VarPtr& in = node.input(i);
    if (negAt < 0 && producedBy(*in, ScalarOp::Neg)) {
      negAt = i;
    } else if (constAt < 0) {
      const DType d = in->type().dtype();
      if (!isSigned(d)) continue;  // -c must exist in c's dtype
      if ((c = constantOperand(in))) constAt = i;
    }
  }
  if (negAt < 0 || constAt < 0) return {};
  std::vector<double> values = c->toDoubles();
  for (double& v : values) v = -v;
  std::vector<VarPtr> inputs(node.inputs().begin(), node.inputs().end());
  inputs[static_cast<std::size_t>(negAt)] = node.input(negAt)->owner()->input(0);
  inputs[static_cast<std::size_t>(constAt)] =
      constant(Tensor::fromDoubles(c->dtype(), c->shape(), values));
  const VarPtr out = node.output(0);
  const VarPtr built = fitReplacement(ctx, elemwise(ScalarOp::Mul, std::move(inputs)), out);
  if (!built) return {};
  return {{out, built}};
}

}  // namespace

void registerSpecializeRewrites(RewriteDb& db) {
  const std::vector<std::string> tags{"fast_run", "specialize"};
  db.add(Phase::Specialize, gemmFromDotAddRewriter(), tags);
  db.add(Phase::Specialize, convBiasActivationRewriter(), tags);
  // First of the fusion phase: after every convolution has taken its bias, activation and
  // residual (the specialize phase), before the inplace phase lets a residual be overwritten.
  db.add(Phase::Fusion, channelBlocksRewriter(), {"fast_run", "channel_blocks"});
  for (const CheapForm& form : kCheapForms) {
    PatternConstraints constraints;
    if (form.floatOnly) constraints.variables["x"] = floatValued();
    db.add(Phase::Specialize, patternRewriter(form.name, form.rules, std::move(constraints)), tags);
  }
  // x / c -> x * (1 / c)
  db.add(Phase::Specialize,
         nodeRewriter("div_by_constant_to_mul", {"Elemwise"}, divByConstantToMul), tags);
  // neg(x) * c -> x * (-c)
  db.add(Phase::Specialize, nodeRewriter("mul_neg_constant", {"Elemwise"}, mulNegConstant), tags);
}

}  // namespace tscope::engine
