// The optimizers of the ai.onnx.preview.training domain: Adagrad, Adam and Momentum, each one step
// of its update rule over n tensors at once, as elementwise compositions.
//
// Note [Training optimizers]: every optimizer takes the learning rate R and the step count T (0-d,
// int64) first, then n tensors X, their gradients G and one or two state tensors per X, each group
// of n in a row; its outputs are the new X, then the new states, in the same order. The per-step
// scalars (the decayed or bias-corrected rate, Momentum's first-step beta) depend on T only and are
// computed in float64, then cast to X's dtype, as ONNX's reference computes them from Python
// floats; the elementwise updates run in X's dtype. Branches on T (t > 0) are `where`s of 0-d
// values. Missing attributes take the schema's defaults (epsilon 1e-6; Adam's alpha 0.9 and beta
// 0.999; Momentum's are required).
#include "engine/io/onnx/onnx_ops_common.h"

#include <string>

namespace tscope::engine::io::onnx_import {

namespace {

// The n of a node with R, T and then `perX` inputs and `outsPerX` outputs per optimized tensor;
// fails naming the layout when the counts do not fit.
int tensorCount(NodeContext& ctx, int perX, int outsPerX, const std::string& layout) {
  const int rest = ctx.nInputs() - 2;
  if (rest <= 0 || rest % perX != 0)
    ctx.fail("expected the inputs " + layout + ", found " + std::to_string(ctx.nInputs()) +
             " inputs");
  const int n = rest / perX;
  if (ctx.nOutputs() != outsPerX * n)
    ctx.fail("expected " + std::to_string(outsPerX * n) + " outputs for " + std::to_string(n) +
             " optimized tensors, found " + std::to_string(ctx.nOutputs()));
  for (int i = 0; i < ctx.nInputs(); ++i) ctx.input(i);  // each one present
  if (ctx.rank(0) != 0 || ctx.rank(1) != 0)
    ctx.fail("expected a 0-d learning rate R and a 0-d step count T, found " +
             ctx.input(0)->type().str() + " and " + ctx.input(1)->type().str());
  return n;
}

// A float64 0-d value of a scalar input (R or T).
VarPtr scalar64(NodeContext& ctx, int i) {
  return cast(ctx.input(i), DType::Float64);
}

VarPtr c64(double value) {
  return constant(value, DType::Float64);
}

// norm_coefficient * x + g, in x's dtype.
VarPtr regularized(const VarPtr& x, const VarPtr& g, double norm) {
  return add(mul(constant(norm, x->type().dtype()), x), g);
}

// Adagrad: r' = R / (1 + T * decay_factor); g' = norm * X + G; H' = H + g'^2;
// X' = X - r' * g' / (sqrt(H') + epsilon). Outputs X'..., H'....
std::vector<VarPtr> convertAdagrad(NodeContext& ctx) {
  const int n = tensorCount(ctx, 3, 2, "R, T, X1..Xn, G1..Gn, H1..Hn");
  const double decay = ctx.attrFloat("decay_factor", 0.0);
  const double epsilon = ctx.attrFloat("epsilon", 1e-6);
  const double norm = ctx.attrFloat("norm_coefficient", 0.0);
  const VarPtr rate = trueDiv(scalar64(ctx, 0), add(c64(1.0), mul(scalar64(ctx, 1), c64(decay))));
  std::vector<VarPtr> out(static_cast<std::size_t>(2 * n));
  for (int i = 0; i < n; ++i) {
    const VarPtr& x = ctx.input(2 + i);
    const DType dtype = x->type().dtype();
    const VarPtr g = regularized(x, ctx.input(2 + n + i), norm);
    const VarPtr h = add(ctx.input(2 + 2 * n + i), mul(g, g));
    const VarPtr denom = add(sqrt(h), constant(epsilon, dtype));
    out[static_cast<std::size_t>(i)] = sub(x, trueDiv(mul(cast(rate, dtype), g), denom));
    out[static_cast<std::size_t>(n + i)] = h;
  }
  return out;
}

// Adam: g' = norm * X + G; V' = alpha * V + (1 - alpha) * g'; H' = beta * H + (1 - beta) * g'^2;
// r' = R * sqrt(1 - beta^T) / (1 - alpha^T) when T > 0, else R;
// X' = (1 - norm_post) * (X - r' * V' / (sqrt(H') + epsilon)). Outputs X'..., V'..., H'....
std::vector<VarPtr> convertAdam(NodeContext& ctx) {
  const int n = tensorCount(ctx, 4, 3, "R, T, X1..Xn, G1..Gn, V1..Vn, H1..Hn");
  const double alpha = ctx.attrFloat("alpha", 0.9);
  const double beta = ctx.attrFloat("beta", 0.999);
  const double epsilon = ctx.attrFloat("epsilon", 1e-6);
  const double norm = ctx.attrFloat("norm_coefficient", 0.0);
  const double normPost = ctx.attrFloat("norm_coefficient_post", 0.0);
  const VarPtr r = scalar64(ctx, 0), t = scalar64(ctx, 1);
  const VarPtr corrected =
      trueDiv(mul(r, sqrt(sub(c64(1.0), pow(c64(beta), t)))), sub(c64(1.0), pow(c64(alpha), t)));
  const VarPtr rate = where(gt(t, c64(0.0)), corrected, r);
  std::vector<VarPtr> out(static_cast<std::size_t>(3 * n));
  for (int i = 0; i < n; ++i) {
    const VarPtr& x = ctx.input(2 + i);
    const DType dtype = x->type().dtype();
    auto c = [&](double value) { return constant(value, dtype); };
    const VarPtr g = regularized(x, ctx.input(2 + n + i), norm);
    const VarPtr v = add(mul(c(alpha), ctx.input(2 + 2 * n + i)), mul(c(1.0 - alpha), g));
    const VarPtr h = add(mul(c(beta), ctx.input(2 + 3 * n + i)), mul(c(1.0 - beta), mul(g, g)));
    const VarPtr step = mul(cast(rate, dtype), trueDiv(v, add(sqrt(h), c(epsilon))));
    out[static_cast<std::size_t>(i)] = mul(c(1.0 - normPost), sub(x, step));
    out[static_cast<std::size_t>(n + i)] = v;
    out[static_cast<std::size_t>(2 * n + i)] = h;
  }
  return out;
}

// Momentum: g' = norm * X + G; b = beta when T > 0, else 1; V' = alpha * V + b * g';
// X' = X - R * V' (mode "standard") or X - R * (g' + alpha * V') ("nesterov"). Outputs X'...,
// V'....
std::vector<VarPtr> convertMomentum(NodeContext& ctx) {
  const int n = tensorCount(ctx, 3, 2, "R, T, X1..Xn, G1..Gn, V1..Vn");
  const double alpha = ctx.attrFloat("alpha");
  const double beta = ctx.attrFloat("beta");
  const double norm = ctx.attrFloat("norm_coefficient");
  const std::string mode = ctx.attrString("mode");
  if (mode != "standard" && mode != "nesterov")
    ctx.fail("attribute 'mode': expected 'standard' or 'nesterov', found '" + mode + "'");
  const VarPtr firstBeta = where(gt(scalar64(ctx, 1), c64(0.0)), c64(beta), c64(1.0));
  std::vector<VarPtr> out(static_cast<std::size_t>(2 * n));
  for (int i = 0; i < n; ++i) {
    const VarPtr& x = ctx.input(2 + i);
    const DType dtype = x->type().dtype();
    const VarPtr rate = cast(ctx.input(0), dtype);
    const VarPtr g = regularized(x, ctx.input(2 + n + i), norm);
    const VarPtr v =
        add(mul(constant(alpha, dtype), ctx.input(2 + 2 * n + i)), mul(cast(firstBeta, dtype), g));
    const VarPtr direction = mode == "standard" ? v : add(g, mul(constant(alpha, dtype), v));
    out[static_cast<std::size_t>(i)] = sub(x, mul(rate, direction));
    out[static_cast<std::size_t>(n + i)] = v;
  }
  return out;
}

}  // namespace

void registerTrainingConverters(ConverterTable& table) {
  table.add("Adagrad", &convertAdagrad);
  table.add("Adam", &convertAdam);
  table.add("Momentum", &convertMomentum);
}

const ConverterTable& trainingConverters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    registerTrainingConverters(t);
    return t;
  }();
  return table;
}

}  // namespace tscope::engine::io::onnx_import
