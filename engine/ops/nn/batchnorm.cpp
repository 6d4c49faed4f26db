#include "engine/ops/nn/batchnorm.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/nn/nn_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>

namespace tscope::engine {

using nn_detail::dispatchFloat;
using nn_detail::outputOf;
using nn_detail::sumKeepAxes;

BatchNormFamilyOp::BatchNormFamilyOp(std::vector<int> axes, double epsilon, const std::string& name)
    : m_axes(std::move(axes)), m_epsilon(epsilon) {
  std::sort(m_axes.begin(), m_axes.end());
  if (m_axes.empty())
    throw std::invalid_argument(name + ": needs at least one axis to normalize over");
  if (m_axes.front() < 0 || m_axes.back() > 63)
    throw std::invalid_argument(name + ": axes must be in 0..63, found " +
                                nlohmann::json(m_axes).dump());
  if (std::adjacent_find(m_axes.begin(), m_axes.end()) != m_axes.end())
    throw std::invalid_argument(name + ": axes repeat, found " + nlohmann::json(m_axes).dump());
  if (!(epsilon >= 0.0) || !std::isfinite(epsilon))
    throw std::invalid_argument(name + ": epsilon must be a finite number >= 0, found " +
                                std::to_string(epsilon));
}

void BatchNormFamilyOp::readProps(const nlohmann::json& props, const std::string& op,
                                  std::vector<int>& axes, double& epsilon) {
  if (!props.is_object() || !props.contains("axes") || !props["axes"].is_array())
    throw std::invalid_argument(op + ": props need \"axes\" (an array of axis indices)");
  axes.clear();
  for (const auto& a : props["axes"]) {
    if (!a.is_number_integer() || a.get<std::int64_t>() < 0 || a.get<std::int64_t>() > 63)
      throw std::invalid_argument(op + ": \"axes\" must hold integers in 0..63, found " +
                                  props["axes"].dump());
    axes.push_back(static_cast<int>(a.get<std::int64_t>()));
  }
  epsilon = nn_detail::readDouble(props, op, "epsilon", 0.0, 1e10, 1e-5);
  for (const auto& [key, value] : props.items())
    if (key != "axes" && key != "epsilon")
      throw std::invalid_argument(op + ": unknown prop \"" + key + "\"");
}

namespace {

constexpr std::int64_t U = kUnknownDim;

// x's shape with the reduced axes set to 1.
template <class Dims>
Dims statShapeOf(Dims shape, const std::vector<int>& axes, typename Dims::value_type one) {
  for (int a : axes) shape[static_cast<std::size_t>(a)] = one;
  return shape;
}

// Note [Statistic runs]: x is walked in runs along its last axis; pOffset is the offset of the
// run's first element in a contiguous keepdims statistic and pStep (0 or 1) the step along the run.
template <class F>
void forEachRun(const Shape& shape, const std::vector<int>& axes, F&& f) {
  const int ndim = static_cast<int>(shape.size());
  const Shape stat = statShapeOf(shape, axes, std::int64_t{1});
  Strides pStrides = contiguousStrides(stat);
  for (int a : axes) pStrides[static_cast<std::size_t>(a)] = 0;
  const std::int64_t len = shape.back();
  const std::int64_t numel = shapeNumel(shape);
  if (len == 0 || numel == 0) return;
  const std::int64_t rows = numel / len;
  const std::int64_t pStep = pStrides.back();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(ndim), 0);
  std::int64_t pOffset = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    f(r * len, pOffset, len, pStep);
    for (int d = ndim - 2; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      ++idx[du];
      pOffset += pStrides[du];
      if (idx[du] < shape[du]) break;
      pOffset -= pStrides[du] * shape[du];
      idx[du] = 0;
    }
  }
}

// y = x * a + b with a and b per statistic (Note [Statistic runs]).
template <class T>
void applyAffine(const Shape& shape, const std::vector<int>& axes, const T* x,
                 const std::vector<double>& a, const std::vector<double>& b, T* y) {
  forEachRun(shape, axes,
             [&](std::int64_t xo, std::int64_t po, std::int64_t len, std::int64_t step) {
               if (step == 0) {
                 const T av = static_cast<T>(a[static_cast<std::size_t>(po)]),
                         bv = static_cast<T>(b[static_cast<std::size_t>(po)]);
                 for (std::int64_t i = 0; i < len; ++i) y[xo + i] = x[xo + i] * av + bv;
               } else {
                 const double* ap = a.data() + po;
                 const double* bp = b.data() + po;
                 for (std::int64_t i = 0; i < len; ++i)
                   y[xo + i] = static_cast<T>(x[xo + i] * ap[i] + bp[i]);
               }
             });
}

// A statistic input's runtime value: contiguous, of the keepdims shape, as doubles.
std::vector<double> statValues(const Tensor& t, const Shape& expected, const std::string& op,
                               const std::string& what) {
  if (t.shape() != expected)
    throw std::invalid_argument(op + ": " + what + " has shape " + shapeToString(t.shape()) +
                                ", expected " + shapeToString(expected));
  return t.toDoubles();
}

// The number of elements behind each statistic, as a 0-d variable of dtype.
VarPtr countOf(const VarPtr& x, const std::vector<int>& axes, DType dtype) {
  VarPtr m = constantInt(1);
  for (int a : axes) m = nn_detail::shapeMul(m, shapeI(x, a));
  if (auto mv = constantIntValue(m)) return constant(static_cast<double>(*mv), dtype);
  return cast(m, dtype);
}

}  // namespace

std::vector<std::int64_t> BatchNormFamilyOp::checkInputs(std::span<const VarPtr> inputs, int first,
                                                         int last) const {
  const TensorType& x = inputs[0]->type();
  if (!nn_detail::isKernelFloat(x.dtype()) || x.ndim() <= m_axes.back())
    throwInputError(
        inputs, 0,
        "a float32 or float64 tensor with at least " + std::to_string(m_axes.back() + 1) + " axes");
  const std::vector<std::int64_t> stat = statShapeOf(x.shape(), m_axes, std::int64_t{1});
  const TensorType expected(x.dtype(), stat, x.device());
  for (int i = first; i <= last; ++i) {
    const TensorType& t = inputs[static_cast<std::size_t>(i)]->type();
    if (!t.isCompatibleWith(expected))
      throwInputError(inputs, i, "a statistic of type " + expected.str() + " for x " + x.str());
  }
  return stat;
}

// --- BatchNormTrain ------------------------------------------------------------------------------

std::vector<TensorType> BatchNormTrain::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 3);
  const std::vector<std::int64_t> stat = checkInputs(inputs, 1, 2);
  const TensorType& x = inputs[0]->type();
  const TensorType statType(x.dtype(), stat, x.device());
  return {x, statType, statType};
}

void BatchNormTrain::perform(const Apply&, std::span<const Tensor* const> inputs,
                             std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous();
  const Shape stat = statShapeOf(x.shape(), m_axes, std::int64_t{1});
  const std::vector<double> scale = statValues(*inputs[1], stat, str(), "the scale");
  const std::vector<double> shift = statValues(*inputs[2], stat, str(), "the shift");
  const std::size_t s = scale.size();
  const double m =
      static_cast<double>(x.numel()) / static_cast<double>(std::max<std::size_t>(s, 1));
  std::vector<double> mean(s, 0.0), var(s, 0.0), a(s), b(s);
  Tensor& y = reuseOrAllocate(outputs[0], x.dtype(), x.shape());
  Tensor& meanOut = reuseOrAllocate(outputs[1], x.dtype(), stat);
  Tensor& varOut = reuseOrAllocate(outputs[2], x.dtype(), stat);
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    // Two passes (mean, then squared deviations) in double: no cancellation for large means.
    forEachRun(x.shape(), m_axes,
               [&](std::int64_t xo, std::int64_t po, std::int64_t len, std::int64_t step) {
                 if (step == 0) {
                   double acc = 0;
                   for (std::int64_t i = 0; i < len; ++i) acc += xp[xo + i];
                   mean[static_cast<std::size_t>(po)] += acc;
                 } else {
                   for (std::int64_t i = 0; i < len; ++i)
                     mean[static_cast<std::size_t>(po + i)] += xp[xo + i];
                 }
               });
    for (double& v : mean) v /= m;
    forEachRun(x.shape(), m_axes,
               [&](std::int64_t xo, std::int64_t po, std::int64_t len, std::int64_t step) {
                 if (step == 0) {
                   const double mu = mean[static_cast<std::size_t>(po)];
                   double acc = 0;
                   for (std::int64_t i = 0; i < len; ++i)
                     acc += (xp[xo + i] - mu) * (xp[xo + i] - mu);
                   var[static_cast<std::size_t>(po)] += acc;
                 } else {
                   for (std::int64_t i = 0; i < len; ++i) {
                     const double d = xp[xo + i] - mean[static_cast<std::size_t>(po + i)];
                     var[static_cast<std::size_t>(po + i)] += d * d;
                   }
                 }
               });
    for (std::size_t j = 0; j < s; ++j) {
      var[j] /= m;
      a[j] = scale[j] / std::sqrt(var[j] + m_epsilon);
      b[j] = shift[j] - mean[j] * a[j];
      meanOut.data<T>()[j] = static_cast<T>(mean[j]);
      varOut.data<T>()[j] = static_cast<T>(var[j]);
    }
    applyAffine<T>(x.shape(), m_axes, xp, a, b, y.data<T>());
  });
}

std::vector<ShapeExpr> BatchNormTrain::inferShape(const Apply&,
                                                  std::span<const ShapeExpr> s) const {
  const ShapeExpr stat = statShapeOf(s[0], m_axes, constantInt(1));
  return {s[0], stat, stat};
}

// Note [BatchNorm gradients].
std::vector<Grad> BatchNormTrain::pullback(const Apply& node,
                                           std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const VarPtr& scale = node.input(1);
  const VarPtr mean = outputOf(node, 1), var = outputOf(node, 2);
  const VarPtr& gy = outputGrads[0];
  const DType dtype = x->type().dtype();
  const VarPtr m = countOf(x, m_axes, dtype);
  const VarPtr invstd = 1.0 / sqrt(var + constant(m_epsilon, dtype));
  const VarPtr xc = x - mean;
  const VarPtr xhat = xc * invstd;
  const VarPtr dshift = sumKeepAxes(gy, m_axes);
  const VarPtr dscale = sumKeepAxes(gy * xhat, m_axes);
  // Note [Zero output gradients] in crossentropy.cpp: the statistics' gradients are always added.
  const VarPtr dx = scale * invstd / m * (m * gy - dshift - xhat * dscale) +
                    (outputGrads[1] + 2.0 * outputGrads[2] * xc) / m;
  return {dx, dscale, dshift};
}

std::vector<std::vector<bool>> BatchNormTrain::connectionPattern(const Apply&) const {
  return {{true, true, true},
          {true, false, false},
          {true, false, false}};  // the statistics depend on x alone
}

OpPtr BatchNormTrain::fromProps(const nlohmann::json& props) {
  std::vector<int> axes;
  double epsilon = 0;
  readProps(props, "BatchNormTrain", axes, epsilon);
  return std::make_shared<BatchNormTrain>(std::move(axes), epsilon);
}

// --- BatchNormInference --------------------------------------------------------------------------

std::vector<TensorType> BatchNormInference::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 5);
  checkInputs(inputs, 1, 4);
  return {inputs[0]->type()};
}

void BatchNormInference::perform(const Apply&, std::span<const Tensor* const> inputs,
                                 std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous();
  const Shape stat = statShapeOf(x.shape(), m_axes, std::int64_t{1});
  const std::vector<double> scale = statValues(*inputs[1], stat, str(), "the scale");
  const std::vector<double> shift = statValues(*inputs[2], stat, str(), "the shift");
  const std::vector<double> mean = statValues(*inputs[3], stat, str(), "the mean");
  const std::vector<double> var = statValues(*inputs[4], stat, str(), "the variance");
  std::vector<double> a(scale.size()), b(scale.size());
  for (std::size_t j = 0; j < scale.size(); ++j) {
    a[j] = scale[j] / std::sqrt(var[j] + m_epsilon);
    b[j] = shift[j] - mean[j] * a[j];
  }
  Tensor& y = reuseOrAllocate(outputs[0], x.dtype(), x.shape());
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    applyAffine<T>(x.shape(), m_axes, x.data<T>(), a, b, y.data<T>());
  });
}

std::vector<ShapeExpr> BatchNormInference::inferShape(const Apply&,
                                                      std::span<const ShapeExpr> s) const {
  return {s[0]};
}

// y = (x - mean) invstd scale + shift, invstd = (var + eps)^(-1/2):
//   dx = gy scale invstd, dscale = sum(gy (x - mean) invstd), dshift = sum(gy),
//   dmean = -sum(dx), dvar = -1/2 sum(gy scale (x - mean)) invstd^3.
std::vector<Grad> BatchNormInference::pullback(const Apply& node,
                                               std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const VarPtr& scale = node.input(1);
  const VarPtr& mean = node.input(3);
  const VarPtr& var = node.input(4);
  const VarPtr& gy = outputGrads[0];
  const VarPtr invstd = 1.0 / sqrt(var + constant(m_epsilon, x->type().dtype()));
  const VarPtr xc = x - mean;
  const VarPtr dx = gy * scale * invstd;
  return {dx, sumKeepAxes(gy * xc * invstd, m_axes), sumKeepAxes(gy, m_axes),
          -sumKeepAxes(dx, m_axes),
          -0.5 * sumKeepAxes(gy * scale * xc, m_axes) * invstd * invstd * invstd};
}

OpPtr BatchNormInference::fromProps(const nlohmann::json& props) {
  std::vector<int> axes;
  double epsilon = 0;
  readProps(props, "BatchNormInference", axes, epsilon);
  return std::make_shared<BatchNormInference>(std::move(axes), epsilon);
}

// --- Builders ------------------------------------------------------------------------------------

BatchNormTrainResult batchNormTrain(const VarPtr& x, const VarPtr& scale, const VarPtr& shift,
                                    std::vector<int> axes, double epsilon,
                                    std::source_location site) {
  const int ndim = x->type().ndim();
  for (int& a : axes)
    if (a < 0) a += ndim;
  std::vector<VarPtr> out = std::make_shared<BatchNormTrain>(std::move(axes), epsilon)
                                ->makeNode({x, scale, shift}, site)
                                ->outputs();
  return {out[0], out[1], out[2]};
}

VarPtr batchNormInference(const VarPtr& x, const VarPtr& scale, const VarPtr& shift,
                          const VarPtr& mean, const VarPtr& var, std::vector<int> axes,
                          double epsilon, std::source_location site) {
  const int ndim = x->type().ndim();
  for (int& a : axes)
    if (a < 0) a += ndim;
  return std::make_shared<BatchNormInference>(std::move(axes), epsilon)
      ->
      operator()({x, scale, shift, mean, var}, site);
}

BatchNormRunningStats batchNormRunningStats(const VarPtr& x, const BatchNormTrainResult& batch,
                                            const VarPtr& runningMean, const VarPtr& runningVar,
                                            const std::vector<int>& axes, double momentum,
                                            std::source_location site) {
  const DType dtype = x->type().dtype();
  std::vector<int> normalized = axes;
  for (int& a : normalized)
    if (a < 0) a += x->type().ndim();
  const VarPtr m = countOf(x, normalized, dtype);
  const VarPtr keep = constant(1.0 - momentum, dtype, site), take = constant(momentum, dtype, site);
  const VarPtr unbiased = batch.var * m / (m - 1.0);
  return {add(mul(keep, runningMean, site), mul(take, batch.mean, site), site),
          add(mul(keep, runningVar, site), mul(take, unbiased, site), site)};
}

}  // namespace tscope::engine
