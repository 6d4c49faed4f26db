#include "engine/ops/nn/crossentropy.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/nn_common.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tscope::engine {

using nn_detail::dispatchFloat;
using nn_detail::outputOf;
using nn_detail::sumAxes;
using nn_detail::sumKeepAxis;

namespace {

// Note [Cross-entropy targets]: class indices are a 1-d integer tensor (N,), distributions a 2-d
// tensor (N, K) of the predictions' dtype. Checked symbolically here and by value in perform.
bool isClassTargets(const TensorType& t) {
  return isInteger(t.dtype()) && t.ndim() == 1;
}

std::string targetsExpected(const TensorType& predictions) {
  return "class indices (a 1-d integer tensor) or a distribution per row (a 2-d " +
         std::string(dtypeName(predictions.dtype())) + " tensor)";
}

bool dimsAgree(std::int64_t a, std::int64_t b) {
  return a == kUnknownDim || b == kUnknownDim || a == b;
}

// What is wrong with the predictions (input p: a 2-d float32/float64 tensor) or the targets
// (input t), for Op::throwInputError; nullopt when both fit.
struct InputProblem {
  int index;
  std::string expected;
};
std::optional<InputProblem> predictionsAndTargetsProblem(std::span<const VarPtr> inputs, int p,
                                                         int t) {
  const TensorType& pt = inputs[static_cast<std::size_t>(p)]->type();
  if (!nn_detail::isKernelFloat(pt.dtype()) || pt.ndim() != 2)
    return InputProblem{p, "a 2-d float32 or float64 tensor (N, K)"};
  const TensorType& tt = inputs[static_cast<std::size_t>(t)]->type();
  const bool ok = isClassTargets(tt) ? dimsAgree(tt.shape()[0], pt.shape()[0])
                                     : (tt.dtype() == pt.dtype() && tt.ndim() == 2 &&
                                        dimsAgree(tt.shape()[0], pt.shape()[0]) &&
                                        dimsAgree(tt.shape()[1], pt.shape()[1]));
  if (!ok) return InputProblem{t, targetsExpected(pt) + " matching " + pt.str()};
  return std::nullopt;
}

// Class indices as int64, each checked against [0, depth).
std::vector<std::int64_t> classIndices(const Tensor& t, std::int64_t rows, std::int64_t depth,
                                       const std::string& op) {
  if (t.ndim() != 1 || t.shape()[0] != rows)
    throw std::invalid_argument(op + ": expected " + std::to_string(rows) +
                                " class indices, found shape " + shapeToString(t.shape()));
  std::vector<std::int64_t> out(static_cast<std::size_t>(rows));
  const Tensor t64 = t.astype(DType::Int64);
  const std::int64_t* src = t64.data<std::int64_t>();
  for (std::int64_t i = 0; i < rows; ++i) {
    if (src[i] < 0 || src[i] >= depth)
      throw std::invalid_argument(op + ": class index " + std::to_string(src[i]) + " of row " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(depth) +
                                  ")");
    out[static_cast<std::size_t>(i)] = src[i];
  }
  return out;
}

void checkSameShape(const Tensor& a, const Tensor& b, const std::string& op,
                    const std::string& what) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(op + ": " + what + " has shape " + shapeToString(b.shape()) +
                                ", expected " + shapeToString(a.shape()));
}

VarPtr column(const VarPtr& v) {
  return dimshuffle(v, {0, DimShuffle::kNewAxis});
}

}  // namespace

// --- OneHot --------------------------------------------------------------------------------------

std::vector<TensorType> OneHot::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  if (!isClassTargets(inputs[0]->type()))
    throwInputError(inputs, 0, "class indices (a 1-d integer tensor)");
  if (inputs[1]->type().dtype() != DType::Int64 || inputs[1]->type().ndim() != 0)
    throwInputError(inputs, 1, "the depth (a 0-d int64 tensor)");
  const std::int64_t depth = constantIntValue(inputs[1]).value_or(kUnknownDim);
  return {TensorType(m_dtype, {inputs[0]->type().shape()[0], depth}, inputs[0]->type().device())};
}

void OneHot::perform(const Apply&, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  const auto depth = static_cast<std::int64_t>(inputs[1]->item());
  if (depth < 0)
    throw std::invalid_argument("OneHot: the depth is negative (" + std::to_string(depth) + ")");
  const std::int64_t rows = inputs[0]->shape()[0];
  const std::vector<std::int64_t> t = classIndices(*inputs[0], rows, depth, str());
  Tensor& out = reuseOrAllocate(outputs[0], m_dtype, std::vector<std::int64_t>{rows, depth});
  dispatchDType(m_dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    T zero{}, one{};
    if constexpr (std::is_same_v<T, Half>)
      one = floatToHalf(1.0f);
    else
      one = static_cast<T>(1);
    std::fill(o, o + rows * depth, zero);
    for (std::int64_t i = 0; i < rows; ++i) o[i * depth + t[static_cast<std::size_t>(i)]] = one;
  });
}

std::vector<ShapeExpr> OneHot::inferShape(const Apply& node,
                                          std::span<const ShapeExpr> inputShapes) const {
  return {ShapeExpr{inputShapes[0][0], node.input(1)}};
}

std::vector<Grad> OneHot::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::disconnected(), Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> OneHot::pushforward(const Apply&,
                                                       std::span<const VarPtr>) const {
  return std::vector<VarPtr>{nullptr};
}

OpPtr OneHot::fromProps(const nlohmann::json& props) {
  return std::make_shared<OneHot>(nn_detail::readDType(props, "OneHot", "dtype"));
}

// --- CategoricalCrossEntropy ---------------------------------------------------------------------

std::vector<TensorType> CategoricalCrossEntropy::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  if (auto problem = predictionsAndTargetsProblem(inputs, 0, 1))
    throwInputError(inputs, problem->index, problem->expected);
  const TensorType& p = inputs[0]->type();
  return {TensorType(p.dtype(), {p.shape()[0]}, p.device())};
}

void CategoricalCrossEntropy::perform(const Apply& node, std::span<const Tensor* const> inputs,
                                      std::span<Tensor* const> outputs) const {
  const Tensor p = inputs[0]->contiguous();
  const std::int64_t rows = p.shape()[0], k = p.shape()[1];
  Tensor& loss = reuseOrAllocate(outputs[0], p.dtype(), std::vector<std::int64_t>{rows});
  const bool classes = isClassTargets(node.input(1)->type());
  dispatchFloat(p.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pp = p.data<T>();
    T* out = loss.data<T>();
    if (classes) {
      const std::vector<std::int64_t> t = classIndices(*inputs[1], rows, k, str());
      for (std::int64_t i = 0; i < rows; ++i)
        out[i] = -std::log(pp[i * k + t[static_cast<std::size_t>(i)]]);
    } else {
      checkSameShape(p, *inputs[1], str(), "the target distribution");
      const Tensor q = inputs[1]->contiguous();
      const T* qq = q.data<T>();
      for (std::int64_t i = 0; i < rows; ++i) {
        T sum = 0;
        for (std::int64_t j = 0; j < k; ++j) sum += qq[i * k + j] * std::log(pp[i * k + j]);
        out[i] = -sum;
      }
    }
  });
}

std::vector<ShapeExpr> CategoricalCrossEntropy::inferShape(
    const Apply&, std::span<const ShapeExpr> inputShapes) const {
  return {ShapeExpr{inputShapes[0][0]}};
}

// Class targets: d/dp = -g * onehot / p, written -g * onehot / (p + (1 - onehot)) so that the
// positions off the target divide 0 by something >= 1 (never 0/0 where a probability is 0).
// Distributions: d/dp = -g * q / p and d/dq = -g * log(p).
std::vector<Grad> CategoricalCrossEntropy::pullback(const Apply& node,
                                                    std::span<const VarPtr> outputGrads) const {
  const VarPtr& p = node.input(0);
  const VarPtr& t = node.input(1);
  const VarPtr g = column(outputGrads[0]);
  if (isClassTargets(t->type())) {
    VarPtr oh = oneHot(t, shapeI(p, 1), p->type().dtype());
    return {-(g * oh) / (p + (1.0 - oh)), Grad::disconnected()};
  }
  return {-(g * t) / p, -(g * log(p))};
}

OpPtr CategoricalCrossEntropy::fromProps(const nlohmann::json& props) {
  if (!props.is_object() || !props.empty())
    throw std::invalid_argument("CategoricalCrossEntropy: takes no props, found " + props.dump());
  return std::make_shared<CategoricalCrossEntropy>();
}

// --- SoftmaxCrossEntropyWithLogits ---------------------------------------------------------------

std::vector<TensorType> SoftmaxCrossEntropyWithLogits::outputTypes(
    std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  if (auto problem = predictionsAndTargetsProblem(inputs, 0, 1))
    throwInputError(inputs, problem->index, problem->expected);
  const TensorType& z = inputs[0]->type();
  return {TensorType(z.dtype(), {z.shape()[0]}, z.device()), z};
}

// Note [Stable softmax] in softmax.cpp: lse = m + log(sum exp(z - m)) with m the row maximum.
void SoftmaxCrossEntropyWithLogits::perform(const Apply& node,
                                            std::span<const Tensor* const> inputs,
                                            std::span<Tensor* const> outputs) const {
  const Tensor z = inputs[0]->contiguous();
  const std::int64_t rows = z.shape()[0], k = z.shape()[1];
  Tensor& loss = reuseOrAllocate(outputs[0], z.dtype(), std::vector<std::int64_t>{rows});
  Tensor& sm = reuseOrAllocate(outputs[1], z.dtype(), z.shape());
  const bool classes = isClassTargets(node.input(1)->type());
  std::vector<std::int64_t> t;
  Tensor q;
  if (classes) {
    t = classIndices(*inputs[1], rows, k, str());
  } else {
    checkSameShape(z, *inputs[1], str(), "the target distribution");
    q = inputs[1]->contiguous();
  }
  dispatchFloat(z.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* zz = z.data<T>();
    T* s = sm.data<T>();
    T* out = loss.data<T>();
    for (std::int64_t i = 0; i < rows; ++i) {
      const T* row = zz + i * k;
      T* srow = s + i * k;
      T m = -std::numeric_limits<T>::infinity();
      for (std::int64_t j = 0; j < k; ++j) m = std::max(m, row[j]);
      T sum = 0;
      for (std::int64_t j = 0; j < k; ++j) {
        srow[j] = std::exp(row[j] - m);
        sum += srow[j];
      }
      const T inv = T(1) / sum;
      for (std::int64_t j = 0; j < k; ++j) srow[j] *= inv;
      const T lse = m + std::log(sum);
      if (classes) {
        out[i] = lse - row[t[static_cast<std::size_t>(i)]];
      } else {
        const T* qrow = q.data<T>() + i * k;
        T acc = 0;
        for (std::int64_t j = 0; j < k; ++j) acc += qrow[j] * (lse - row[j]);
        out[i] = acc;
      }
    }
  });
}

std::vector<ShapeExpr> SoftmaxCrossEntropyWithLogits::inferShape(
    const Apply&, std::span<const ShapeExpr> inputShapes) const {
  return {ShapeExpr{inputShapes[0][0]}, inputShapes[0]};
}

// d/dlogits = SoftmaxCrossEntropyGrad(gLoss, softmax, t) + SoftmaxGrad(gSoftmax, softmax);
// d/dq = -gLoss * log_softmax(logits) for distribution targets.
std::vector<Grad> SoftmaxCrossEntropyWithLogits::pullback(
    const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& z = node.input(0);
  const VarPtr& t = node.input(1);
  const VarPtr sm = outputOf(node, 1);
  // Note [Zero output gradients]: outputGrads[1] is usually zerosLike(softmax), but it may be the
  // very variable a caller differentiates with respect to (Rop's double-pullback trick does), so it
  // is never skipped here (the zero term costs one pass over the logits; a rewrite can fold it).
  const VarPtr dz =
      softmaxCrossEntropyGrad(outputGrads[0], sm, t) + softmaxGrad(outputGrads[1], sm, 1);
  if (isClassTargets(t->type())) return {dz, Grad::disconnected()};
  return {dz, -(column(outputGrads[0]) * logSoftmax(z, 1))};
}

std::vector<std::vector<bool>> SoftmaxCrossEntropyWithLogits::connectionPattern(
    const Apply&) const {
  return {{true, true}, {true, false}};  // the softmax does not depend on the targets
}

OpPtr SoftmaxCrossEntropyWithLogits::fromProps(const nlohmann::json& props) {
  if (!props.is_object() || !props.empty())
    throw std::invalid_argument("SoftmaxCrossEntropyWithLogits: takes no props, found " +
                                props.dump());
  return std::make_shared<SoftmaxCrossEntropyWithLogits>();
}

// --- SoftmaxCrossEntropyGrad ---------------------------------------------------------------------

std::vector<TensorType> SoftmaxCrossEntropyGrad::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 3);
  if (auto problem = predictionsAndTargetsProblem(inputs, 1, 2))
    throwInputError(inputs, problem->index, problem->expected);
  const TensorType& sm = inputs[1]->type();
  const TensorType& g = inputs[0]->type();
  if (g.dtype() != sm.dtype() || g.ndim() != 1 || !dimsAgree(g.shape()[0], sm.shape()[0]))
    throwInputError(inputs, 0,
                    "a per-row gradient (a 1-d " + std::string(dtypeName(sm.dtype())) + " tensor)");
  return {sm};
}

void SoftmaxCrossEntropyGrad::perform(const Apply& node, std::span<const Tensor* const> inputs,
                                      std::span<Tensor* const> outputs) const {
  const Tensor g = inputs[0]->contiguous(), sm = inputs[1]->contiguous();
  const std::int64_t rows = sm.shape()[0], k = sm.shape()[1];
  if (g.shape() != std::vector<std::int64_t>{rows})
    throw std::invalid_argument(str() + ": the gradient has shape " + shapeToString(g.shape()) +
                                ", expected (" + std::to_string(rows) + ")");
  const bool classes = isClassTargets(node.input(2)->type());
  std::vector<std::int64_t> t;
  Tensor q;
  if (classes) {
    t = classIndices(*inputs[2], rows, k, str());
  } else {
    checkSameShape(sm, *inputs[2], str(), "the target distribution");
    q = inputs[2]->contiguous();
  }
  Tensor& dz = reuseOrAllocate(outputs[0], sm.dtype(), sm.shape());
  dispatchFloat(sm.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* gg = g.data<T>();
    const T* s = sm.data<T>();
    T* out = dz.data<T>();
    for (std::int64_t i = 0; i < rows; ++i) {
      if (classes) {
        for (std::int64_t j = 0; j < k; ++j) out[i * k + j] = gg[i] * s[i * k + j];
        out[i * k + t[static_cast<std::size_t>(i)]] -= gg[i];
      } else {
        const T* qrow = q.data<T>() + i * k;
        T sq = 0;
        for (std::int64_t j = 0; j < k; ++j) sq += qrow[j];
        for (std::int64_t j = 0; j < k; ++j) out[i * k + j] = gg[i] * (s[i * k + j] * sq - qrow[j]);
      }
    }
  });
}

std::vector<ShapeExpr> SoftmaxCrossEntropyGrad::inferShape(
    const Apply&, std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[1]};
}

// out = g (sm * sq - q), sq = sum_k q (1 and q = onehot(t) for class targets). With cotangent H:
//   d/dg  = sum_k H * (sm * sq - q)
//   d/dsm = H * g * sq
//   d/dq  = g * (sum_k H * sm - H)
std::vector<Grad> SoftmaxCrossEntropyGrad::pullback(const Apply& node,
                                                    std::span<const VarPtr> outputGrads) const {
  const VarPtr& g = node.input(0);
  const VarPtr& sm = node.input(1);
  const VarPtr& t = node.input(2);
  const VarPtr& h = outputGrads[0];
  const VarPtr gc = column(g);
  if (isClassTargets(t->type())) {
    VarPtr oh = oneHot(t, shapeI(sm, 1), sm->type().dtype());
    return {sumAxes(h * (sm - oh), {1}), h * gc, Grad::disconnected()};
  }
  VarPtr sq = sumKeepAxis(t, 1);
  return {sumAxes(h * (sm * sq - t), {1}), h * gc * sq, gc * (sumKeepAxis(h * sm, 1) - h)};
}

OpPtr SoftmaxCrossEntropyGrad::fromProps(const nlohmann::json& props) {
  if (!props.is_object() || !props.empty())
    throw std::invalid_argument("SoftmaxCrossEntropyGrad: takes no props, found " + props.dump());
  return std::make_shared<SoftmaxCrossEntropyGrad>();
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr oneHot(const VarPtr& targets, const VarPtr& depth, DType dtype, std::source_location site) {
  return std::make_shared<OneHot>(dtype)->operator()({targets, depth}, site);
}

VarPtr categoricalCrossEntropy(const VarPtr& codingDist, const VarPtr& trueDist,
                               std::source_location site) {
  return std::make_shared<CategoricalCrossEntropy>()->operator()({codingDist, trueDist}, site);
}

std::vector<VarPtr> softmaxCrossEntropyWithLogitsAndSoftmax(const VarPtr& logits,
                                                            const VarPtr& targets,
                                                            std::source_location site) {
  return std::make_shared<SoftmaxCrossEntropyWithLogits>()
      ->makeNode({logits, targets}, site)
      ->outputs();
}

VarPtr softmaxCrossEntropyWithLogits(const VarPtr& logits, const VarPtr& targets,
                                     std::source_location site) {
  return std::make_shared<SoftmaxCrossEntropyWithLogits>()
      ->makeNode({logits, targets}, site)
      ->output(0);
}

VarPtr softmaxCrossEntropyGrad(const VarPtr& g, const VarPtr& softmax, const VarPtr& targets,
                               std::source_location site) {
  return std::make_shared<SoftmaxCrossEntropyGrad>()->operator()({g, softmax, targets}, site);
}

}  // namespace tscope::engine
