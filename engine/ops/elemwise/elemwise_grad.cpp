// Elemwise::pullback and Elemwise::pushforward, from one table of partial derivatives.
//
// Note [Elemwise gradient conventions] (docs/elemwise-dtypes.md has the table):
// - An elementwise op's Jacobian with respect to each input is diagonal, so one linear map per
//   input, v -> (dy/dx_i) * v, serves both directions: the pullback applies it to the output
//   gradient, the pushforward to the input's tangent. Both come from partials() below and
//   cannot disagree.
// - An integer or bool input is disconnected (Theano treats discrete inputs so): there is no
//   gradient to follow. So are switch's condition and second's shape operand.
// - A float input of an op whose output is discrete (comparisons, logic, a cast to an integer)
//   or piecewise constant (floor, ceil, round, sign, int_div) gets zeros.
// - minimum/maximum route the gradient to the first input that attains the result (ties go to
//   the first); clip routes it to x where lo <= x <= hi, to lo where x < lo and to hi where
//   x > hi (Theano's convention: the three parts always sum to the output gradient).
// - Each input's gradient is summed back to the input's shape (sumToShape: broadcasting, also at
//   run time) and cast to the input's dtype.

#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/sum_to_shape.h"

#include <cmath>
#include <functional>
#include <numbers>
#include <stdexcept>

namespace tscope::engine {

namespace {

bool isDiscrete(DType d) {
  return !isFloat(d);
}

VarPtr castTo(const VarPtr& v, DType dtype) {
  return v->type().dtype() == dtype ? v : cast(v, dtype);
}

// One input's partial derivative as the linear map it applies to a cotangent or a tangent.
struct Partial {
  enum class Kind { Linear, Zero, Disconnected };
  Kind kind = Kind::Disconnected;
  std::function<VarPtr(const VarPtr&)> times;
};

Partial linear(std::function<VarPtr(const VarPtr&)> f) {
  return Partial{Partial::Kind::Linear, std::move(f)};
}
Partial zero() {
  return Partial{Partial::Kind::Zero, {}};
}
Partial disconnected() {
  return Partial{};
}

std::vector<Partial> partials(const Elemwise& op, const Apply& node) {
  const std::size_t n = static_cast<std::size_t>(node.nInputs());
  const DType dt = node.outputRef(0).type().dtype();
  std::vector<Partial> p(n);
  // Discrete inputs are disconnected; a discrete output gives its float inputs zeros.
  bool anyLinear = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (isDiscrete(node.input(static_cast<int>(i))->type().dtype()))
      p[i] = disconnected();
    else if (isDiscrete(dt))
      p[i] = zero();
    else
      p[i].kind = Partial::Kind::Linear;  // its map is set by the op's case below
    anyLinear = anyLinear || p[i].kind == Partial::Kind::Linear;
  }
  // Switch's condition and second's shape operand never carry a gradient, whatever their dtype.
  if (op.scalarOp() == ScalarOp::Switch || op.scalarOp() == ScalarOp::Second) p[0] = disconnected();
  if (!anyLinear) return p;

  // Inputs as used inside the derivatives, in the output's dtype (an int32 exponent would
  // otherwise promote a float32 derivative to float64).
  const Apply* nd = &node;
  auto x = [nd, dt](std::size_t i) { return castTo(nd->input(static_cast<int>(i)), dt); };
  // The node's output; the derivatives of exp, tanh, sigmoid, sqrt, ... reuse it.
  // Apply::output is non-const only because it hands out an owning handle.
  const VarPtr y = const_cast<Apply&>(node).output(0);
  auto c = [dt](double value) { return constant(value, dt); };
  auto zeroOf = [](const VarPtr& v) { return constant(0.0, v->type().dtype()); };
  auto masked = [zeroOf](std::function<VarPtr()> mask) {
    return linear([mask, zeroOf](const VarPtr& v) { return where(mask(), v, zeroOf(v)); });
  };
  auto set = [&](std::size_t i, Partial partial) {
    if (i < n && p[i].kind == Partial::Kind::Linear) p[i] = std::move(partial);
  };
  const auto identityMap = linear([](const VarPtr& v) { return v; });

  using S = ScalarOp;
  switch (op.scalarOp()) {
    case S::Add:
    case S::Identity:
    case S::Cast:
      for (std::size_t i = 0; i < n; ++i) set(i, identityMap);
      break;
    case S::Sub:
      set(0, identityMap);
      set(1, linear([](const VarPtr& v) { return neg(v); }));
      break;
    case S::Mul:
      for (std::size_t i = 0; i < n; ++i)
        set(i, linear([=](const VarPtr& v) {
              // d(x0 * ... * xn-1)/dxi: the product of the others (not y / xi, which fails at 0).
              std::vector<VarPtr> factors{v};
              for (std::size_t j = 0; j < n; ++j)
                if (j != i) factors.push_back(x(j));
              return elemwise(ScalarOp::Mul, std::move(factors));
            }));
      break;
    case S::TrueDiv:
      set(0, linear([=](const VarPtr& v) { return trueDiv(v, x(1)); }));               // 1 / b
      set(1, linear([=](const VarPtr& v) { return neg(trueDiv(mul(v, y), x(1))); }));  // -a / b^2
      break;
    case S::Mod:
      set(0, identityMap);
      set(1,
          linear([=](const VarPtr& v) { return mul(v, neg(intDiv(x(0), x(1)))); }));  // -(a // b)
      break;
    case S::Pow:
      set(0,
          linear([=](const VarPtr& v) { return mul(v, mul(x(1), pow(x(0), sub(x(1), c(1))))); }));
      set(1, linear([=](const VarPtr& v) { return mul(v, mul(y, log(x(0)))); }));
      break;
    case S::Minimum:
    case S::Maximum:
      // Input i gets the gradient where it equals the result and no earlier input does.
      for (std::size_t i = 0; i < n; ++i)
        set(i, masked([=]() {
              VarPtr mask = eq(x(i), y);
              for (std::size_t j = 0; j < i; ++j) mask = logicalAnd(mask, neq(x(j), y));
              return mask;
            }));
      break;
    case S::Neg:
      set(0, linear([](const VarPtr& v) { return neg(v); }));
      break;
    case S::Abs:
      set(0, linear([=](const VarPtr& v) { return mul(v, sign(x(0))); }));
      break;
    case S::Sqr:
      set(0, linear([=](const VarPtr& v) { return mul(v, mul(x(0), c(2))); }));
      break;
    case S::Exp:
      set(0, linear([=](const VarPtr& v) { return mul(v, y); }));
      break;
    case S::Expm1:
      set(0, linear([=](const VarPtr& v) { return mul(v, add(y, c(1))); }));
      break;
    case S::Log:
      set(0, linear([=](const VarPtr& v) { return trueDiv(v, x(0)); }));
      break;
    case S::Log1p:
      set(0, linear([=](const VarPtr& v) { return trueDiv(v, add(x(0), c(1))); }));
      break;
    case S::Log2:
      set(0, linear([=](const VarPtr& v) { return trueDiv(v, mul(x(0), c(std::numbers::ln2))); }));
      break;
    case S::Log10:
      set(0, linear([=](const VarPtr& v) { return trueDiv(v, mul(x(0), c(std::numbers::ln10))); }));
      break;
    case S::Sqrt:
      set(0, linear([=](const VarPtr& v) { return trueDiv(v, mul(y, c(2))); }));
      break;
    case S::Tanh:
      set(0, linear([=](const VarPtr& v) { return mul(v, sub(c(1), sqr(y))); }));
      break;
    case S::Sigmoid:
      set(0, linear([=](const VarPtr& v) { return mul(v, mul(y, sub(c(1), y))); }));
      break;
    case S::Softplus:
      set(0, linear([=](const VarPtr& v) { return mul(v, sigmoid(x(0))); }));
      break;
    case S::Sin:
      set(0, linear([=](const VarPtr& v) { return mul(v, cos(x(0))); }));
      break;
    case S::Cos:
      set(0, linear([=](const VarPtr& v) { return mul(v, neg(sin(x(0)))); }));
      break;
    case S::Erf:
      set(0, linear([=](const VarPtr& v) {
            return mul(v, mul(c(2.0 * std::numbers::inv_sqrtpi), exp(neg(sqr(x(0))))));
          }));
      break;
    case S::Relu:
      set(0, masked([=]() { return gt(x(0), c(0)); }));
      break;
    case S::Clip:
      set(0, masked([=]() { return logicalAnd(ge(x(0), x(1)), le(x(0), x(2))); }));
      set(1, masked([=]() { return lt(x(0), x(1)); }));
      set(2, masked([=]() { return gt(x(0), x(2)); }));
      break;
    case S::Switch:
      p[0] = disconnected();
      set(1, masked([=]() { return nd->input(0); }));
      set(2, masked([=]() { return logicalNot(nd->input(0)); }));
      break;
    case S::Second:
      p[0] = disconnected();
      set(1, identityMap);
      break;
    case S::IntDiv:
    case S::Sign:
    case S::Floor:
    case S::Ceil:
    case S::Round:
    case S::Eq:
    case S::Neq:
    case S::Lt:
    case S::Le:
    case S::Gt:
    case S::Ge:
    case S::And:
    case S::Or:
    case S::Xor:
    case S::Not:
      for (std::size_t i = 0; i < n; ++i)
        if (p[i].kind == Partial::Kind::Linear) p[i] = zero();
      break;
  }
  for (const Partial& partial : p)
    if (partial.kind == Partial::Kind::Linear && !partial.times)
      throw std::logic_error(op.str() + ": no partial derivative for an input (elemwise_grad.cpp)");
  return p;
}

}  // namespace

// The maps in partials() hold the node by pointer: they are used before pullback()/pushforward()
// return.
std::vector<Grad> Elemwise::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const std::vector<Partial> p = partials(*this, node);
  std::vector<Grad> grads(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const VarPtr& in = node.input(static_cast<int>(i));
    switch (p[i].kind) {
      case Partial::Kind::Disconnected:
        grads[i] = Grad::disconnected();
        break;
      case Partial::Kind::Zero:
        grads[i] = zerosLike(in);
        break;
      case Partial::Kind::Linear:
        grads[i] = castTo(sumToShape(p[i].times(outputGrads[0]), in), in->type().dtype());
        break;
    }
  }
  return grads;
}

std::optional<std::vector<VarPtr>> Elemwise::pushforward(const Apply& node,
                                                         std::span<const VarPtr> tangents) const {
  const TensorType& outType = node.outputRef(0).type();
  if (isDiscrete(outType.dtype())) return std::vector<VarPtr>{nullptr};
  const std::vector<Partial> p = partials(*this, node);
  VarPtr sum;
  std::vector<bool> contributes(p.size(), false);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!tangents[i] || p[i].kind != Partial::Kind::Linear) continue;
    VarPtr term = p[i].times(tangents[i]);
    sum = sum ? add(sum, term) : term;
    contributes[i] = true;
  }
  if (!sum) return std::vector<VarPtr>{nullptr};
  sum = castTo(sum, outType.dtype());
  // Each term covers its input's shape; the sum has the output's shape unless an input that may
  // be larger than 1 on some axis contributed nothing (a held-fixed input, switch's condition,
  // second's shape operand). Then broadcast the sum to the output: second(y, sum).
  bool spans = sum->type().ndim() == outType.ndim();
  for (int axis = 0; spans && axis < outType.ndim(); ++axis) {
    const auto a = static_cast<std::size_t>(axis);
    if (outType.shape()[a] != kUnknownDim && sum->type().shape()[a] == outType.shape()[a]) continue;
    for (std::size_t i = 0; i < p.size() && spans; ++i) {
      const std::vector<std::int64_t>& s = node.input(static_cast<int>(i))->type().shape();
      if (a + s.size() < static_cast<std::size_t>(outType.ndim())) continue;
      const std::int64_t d = s[a + s.size() - static_cast<std::size_t>(outType.ndim())];
      if (d != 1 && !contributes[i]) spans = false;
    }
  }
  if (!spans) sum = elemwise(ScalarOp::Second, {const_cast<Apply&>(node).output(0), sum});
  return std::vector<VarPtr>{sum};
}

}  // namespace tscope::engine
