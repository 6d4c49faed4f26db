#include "engine/debug/value_bounds.h"

#include "engine/graph/op.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "engine/ops/reduce/careduce.h"

#include <cmath>
#include <limits>

namespace tscope::engine::debug {

double dtypeMaxAbs(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 65504.0;
    case DType::Float32:
      return std::numeric_limits<float>::max();
    case DType::Float64:
      return std::numeric_limits<double>::max();
    case DType::Bool:
      return 1.0;
    case DType::Int8:
      return 128.0;
    case DType::UInt8:
      return 255.0;
    case DType::UInt16:
      return 65535.0;
    case DType::UInt32:
      return 4294967295.0;
    case DType::UInt64:
      return 1.8e19;
    case DType::Int16:
      return 32768.0;
    case DType::Int32:
      return 2147483648.0;
    default:
      return 9.3e18;
  }
}

namespace {

using Bound = std::optional<double>;

// A finite result in `dtype`, widened for rounding; nullopt when it may not be finite there.
Bound fits(double b, DType dtype, double widen = 1e-3) {
  if (!(b >= 0) || !std::isfinite(b)) return std::nullopt;
  if (dtype == DType::Bool) return 1.0;
  const double w = b * (1.0 + widen) + (isFloat(dtype) ? 0.0 : 1.0);
  // Integer results wrap rather than overflow to inf: a bound past the range is no bound.
  if (w >= dtypeMaxAbs(dtype) * (isFloat(dtype) ? 0.5 : 1.0)) return std::nullopt;
  return w;
}

// max |x| of a small 0-d or constant value read directly; nullopt for a large one.
Bound readBound(const Tensor* t) {
  // A device value is not read here (a transfer per node): no bound, so it is scanned.
  if (!t || !t->defined() || t->numel() > 64 || t->device() != Device::Cpu) return std::nullopt;
  double m = 0;
  for (double v : t->contiguous().toDoubles()) {
    if (!std::isfinite(v)) return std::nullopt;
    m = std::max(m, std::fabs(v));
  }
  return m;
}

// The bound of one scalar op's result from its operands' bounds (Note [Provably clean outputs]).
Bound scalarBound(ScalarOp op, std::span<const Bound> a, DType result) {
  for (const Bound& b : a)
    if (!b) return std::nullopt;
  // An unsigned result of a negative value wraps to near its maximum (3 - 5 in uint8 is 254).
  const bool wrapsBelowZero = isInteger(result) && !isSigned(result);
  if (wrapsBelowZero && (op == ScalarOp::Sub || op == ScalarOp::Neg || op == ScalarOp::Cast))
    return std::nullopt;
  auto at = [&](std::size_t k) { return *a[k]; };
  double r = 0;
  switch (op) {
    case ScalarOp::Add:
    case ScalarOp::Sub:
      r = at(0) + at(1);
      break;
    case ScalarOp::Mul:
      r = at(0) * at(1);
      break;
    case ScalarOp::Minimum:
    case ScalarOp::Maximum:
      r = std::max(at(0), at(1));
      break;
    case ScalarOp::Neg:
    case ScalarOp::Abs:
    case ScalarOp::Relu:
    case ScalarOp::Identity:
      r = at(0);
      break;
    case ScalarOp::Sqr:
      r = at(0) * at(0);
      break;
    case ScalarOp::Sign:
    case ScalarOp::Tanh:
    case ScalarOp::Sigmoid:
    case ScalarOp::Sin:
    case ScalarOp::Cos:
    case ScalarOp::Erf:
      r = 1.0;
      break;
    case ScalarOp::Exp:
      if (at(0) > 700) return std::nullopt;
      r = std::exp(at(0));
      break;
    case ScalarOp::Expm1:
      if (at(0) > 700) return std::nullopt;
      r = std::exp(at(0)) + 1.0;
      break;
    case ScalarOp::Floor:
    case ScalarOp::Ceil:
    case ScalarOp::Round:
      r = at(0) + 1.0;
      break;
    case ScalarOp::Clip:
      r = std::max({at(0), at(1), at(2)});
      break;
    case ScalarOp::Switch:
      r = std::max(at(1), at(2));
      break;
    case ScalarOp::Second:
      r = at(1);
      break;
    case ScalarOp::Cast:
      r = at(0);
      break;
    case ScalarOp::Eq:
    case ScalarOp::Neq:
    case ScalarOp::Lt:
    case ScalarOp::Le:
    case ScalarOp::Gt:
    case ScalarOp::Ge:
    case ScalarOp::And:
    case ScalarOp::Or:
    case ScalarOp::Xor:
    case ScalarOp::Not:
      r = 1.0;
      break;
    default:  // division, log, sqrt, pow, ...: may create non-finite values from finite ones
      return std::nullopt;
  }
  return fits(r, result);
}

// |beta Z + alpha X Y| with inner dimension k; Z absent (Dot) when zBound is not given.
Bound productBound(double alpha, Bound xb, Bound yb, std::int64_t k, double beta, Bound zb,
                   bool hasZ, DType dtype) {
  if (!xb || !yb || k < 0 || k > 1'000'000) return std::nullopt;
  const double eps = dtype == DType::Float64 ? 1.2e-16 : dtype == DType::Float32 ? 6e-8 : 1e-3;
  double r = std::fabs(alpha) * static_cast<double>(k) * *xb * *yb * (1.0 + 2.0 * k * eps);
  if (hasZ && beta != 0) {
    if (!zb) return std::nullopt;
    r += std::fabs(beta) * *zb;
  }
  return fits(r, dtype);
}

Bound inputBound(std::span<const Tensor* const> inputs, std::span<const Bound> bounds,
                 std::size_t i) {
  if (i < bounds.size() && bounds[i]) return bounds[i];
  const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
  if (!t || !t->defined()) return std::nullopt;
  if (!isFloat(t->dtype())) return dtypeMaxAbs(t->dtype());
  return readBound(t);
}

}  // namespace

bool mayBound(const Op& op) {
  return dynamic_cast<const Gemm*>(&op) || dynamic_cast<const Gemv*>(&op) ||
         dynamic_cast<const Ger*>(&op) || dynamic_cast<const Dot*>(&op) ||
         dynamic_cast<const CAReduce*>(&op) || dynamic_cast<const SumToShape*>(&op) ||
         dynamic_cast<const Elemwise*>(&op) || dynamic_cast<const Composite*>(&op);
}

std::vector<std::optional<double>> provenBounds(const Apply& node,
                                                std::span<const Tensor* const> inputs,
                                                std::span<const std::optional<double>> inputBounds,
                                                std::span<const std::int64_t> sizeBounds) {
  std::vector<Bound> out(static_cast<std::size_t>(node.nOutputs()));
  const Op& op = node.op();
  auto in = [&](std::size_t i) { return inputBound(inputs, inputBounds, i); };
  auto tensorOf = [&](std::size_t i) -> const Tensor* {
    const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
    return t && t->defined() ? t : nullptr;
  };
  // A scalar operand's value; not computed yet, its bound (|v| <= b: the worst case is taken).
  auto scalarOf = [&](std::size_t i) -> std::optional<double> {
    if (const Tensor* t = tensorOf(i)) {
      if (t->numel() != 1 || t->device() != Device::Cpu) return std::nullopt;
      const double v = t->contiguous().toDoubles()[0];
      return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
    }
    return i < inputBounds.size() ? inputBounds[i] : std::nullopt;
  };
  // Input i's size along an axis from the end; not computed yet, a bound on its element count.
  auto dimOf = [&](std::size_t i, int axisFromEnd) -> std::int64_t {
    if (const Tensor* t = tensorOf(i))
      return t->ndim() < axisFromEnd
                 ? -1
                 : t->shape()[static_cast<std::size_t>(t->ndim() - axisFromEnd)];
    return i < sizeBounds.size() ? sizeBounds[i] : -1;
  };
  auto numelOf = [&](std::size_t i) -> std::int64_t {
    if (const Tensor* t = tensorOf(i)) return t->numel();
    return i < sizeBounds.size() ? sizeBounds[i] : -1;
  };
  if (node.nOutputs() == 0) return out;
  const DType outType = node.outputRef(0).type().dtype();
  if (dynamic_cast<const Gemm*>(&op) || dynamic_cast<const Gemv*>(&op)) {
    // (Z, alpha, X, Y, beta): K is X's last dimension.
    const auto alpha = scalarOf(1), beta = scalarOf(4);
    if (alpha && beta)
      out[0] = productBound(*alpha, in(2), in(3), dimOf(2, 1), *beta, in(0), true, outType);
    return out;
  }
  if (dynamic_cast<const Ger*>(&op)) {  // (A, alpha, x, y): A + alpha outer(x, y)
    if (const auto alpha = scalarOf(1))
      out[0] = productBound(*alpha, in(2), in(3), 1, 1.0, in(0), true, outType);
    return out;
  }
  if (dynamic_cast<const Dot*>(&op)) {
    const std::int64_t k = dimOf(0, 1);
    out[0] = productBound(1.0, in(0), in(1), k, 0.0, std::nullopt, false, outType);
    return out;
  }
  // Sums of at most N terms: N max|x| (the input's element count bounds the terms per output).
  if (const auto* r = dynamic_cast<const CAReduce*>(&op)) {
    const std::int64_t n = numelOf(0);
    const Bound b = in(0);
    if (!b || n < 0) return out;
    if (r->scalarOp() == ScalarOp::Add)
      out[0] = fits(*b * static_cast<double>(std::max<std::int64_t>(n, 1)), outType);
    else if (r->scalarOp() == ScalarOp::Maximum || r->scalarOp() == ScalarOp::Minimum)
      out[0] = b;
    return out;
  }
  if (dynamic_cast<const SumToShape*>(&op)) {
    const std::int64_t n = numelOf(0);
    if (const Bound b = in(0); b && n >= 0)
      out[0] = fits(*b * static_cast<double>(std::max<std::int64_t>(n, 1)), outType);
    return out;
  }
  if (const auto* e = dynamic_cast<const Elemwise*>(&op)) {
    std::vector<Bound> args;
    for (std::size_t i = 0; i < static_cast<std::size_t>(node.nInputs()); ++i)
      args.push_back(in(i));
    const Bound b = scalarBound(e->scalarOp(), args, outType);
    for (Bound& o : out) o = b;
    return out;
  }
  if (const auto* c = dynamic_cast<const Composite*>(&op)) {
    std::vector<Bound> reg;
    reg.reserve(static_cast<std::size_t>(c->nRegisters()));
    for (int i = 0; i < c->nInputs(); ++i) reg.push_back(in(static_cast<std::size_t>(i)));
    std::vector<Bound> args;
    for (const CompositeInstruction& ins : c->program()) {
      args.clear();
      for (int a : ins.args) args.push_back(reg[static_cast<std::size_t>(a)]);
      reg.push_back(scalarBound(ins.op, args, c->registerDType(static_cast<int>(reg.size()))));
    }
    for (std::size_t o = 0; o < out.size() && o < c->outputRegisters().size(); ++o)
      out[o] = reg[static_cast<std::size_t>(c->outputRegisters()[o])];
    return out;
  }
  return out;
}

}  // namespace tscope::engine::debug
