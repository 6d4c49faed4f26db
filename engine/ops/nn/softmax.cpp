#include "engine/ops/nn/softmax.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/ops/nn/nn_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace tscope::engine {

using nn_detail::dispatchFloat;
using nn_detail::outputOf;
using nn_detail::sumKeepAxis;

namespace {

// A contiguous tensor seen as (outer, len, inner) around the softmax axis.
struct AxisLayout {
  std::int64_t outer = 1, len = 1, inner = 1;
};
AxisLayout layoutOf(const Shape& shape, int axis) {
  AxisLayout l;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    const std::int64_t d = shape[static_cast<std::size_t>(i)];
    if (i < axis)
      l.outer *= d;
    else if (i == axis)
      l.len = d;
    else
      l.inner *= d;
  }
  return l;
}

// Note [Stable softmax]: exp(x - max) never overflows and its largest term is exactly 1, so the sum
// is >= 1 and log(sum) is finite: softmax of logits around 1e4 is exact where exp(x) alone is inf.
// Note [Softmax rows]: over the last axis (inner == 1, attention's case) each row runs through the
// elementwise row kernels (Note [Kernel instruction sets]): y = exp(x - max) vectorised 16 floats
// wide on AVX-512 instead of one std::exp at a time (0.54 ms -> well under 0.1 ms for 4x128x128).
// Note [Row reductions in lanes]: a row's max and sum kept in kLanes independent accumulators, so
// the compiler vectorises them and no add waits on the one before (one accumulator made each of
// attention's 128-wide rows a chain of 128 dependent adds: 4 x 128 x 128 softmax 188 -> ~60 us,
// AVX2). The sum's rounding differs from a left-to-right sum in the last bits; it depends only on
// the row, never on threads. A NaN in the row is skipped by the max (x > m is false) but reaches
// every output through exp(x - max), as before.
constexpr int kLanes = 16;

template <class T>
T rowMax(const T* x, std::int64_t n) {
  T lane[kLanes];
  std::fill(lane, lane + kLanes, -std::numeric_limits<T>::infinity());
  std::int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] = x[k + j] > lane[j] ? x[k + j] : lane[j];
  T mx = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < kLanes; ++j) mx = lane[j] > mx ? lane[j] : mx;
  for (; k < n; ++k) mx = x[k] > mx ? x[k] : mx;
  return mx;
}

template <class T>
T rowSum(const T* x, std::int64_t n) {
  T lane[kLanes] = {};
  std::int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += x[k + j];
  T sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += lane[j];
  for (; k < n; ++k) sum += x[k];
  return sum;
}

template <class T, bool kLog>
bool softmaxRows(const T* x, T* y, const AxisLayout& l) {
  if (l.inner != 1 || l.len == 0) return false;
  const DType dt = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const ElemwiseRowFn sub = elemwiseRowKernel(ScalarOp::Sub, dt);
  const ElemwiseRowFn exp = elemwiseRowKernel(ScalarOp::Exp, dt);
  const ElemwiseRowFn mul = elemwiseRowKernel(ScalarOp::Mul, dt);
  const ElemwiseRowFn addFn = elemwiseRowKernel(ScalarOp::Add, dt);
  if (!sub || !exp || !mul || !addFn) return false;
  std::vector<T> e(kLog ? static_cast<std::size_t>(l.len) : 0);
  const std::int64_t strides[2] = {1, 0}, unit[1] = {1};
  for (std::int64_t o = 0; o < l.outer; ++o) {
    const T* xo = x + o * l.len;
    T* yo = y + o * l.len;
    const T mx = rowMax(xo, l.len);
    // y = x - max; kLog keeps it and sums exp(y) in a scratch row.
    const char* subIn[2] = {reinterpret_cast<const char*>(xo), reinterpret_cast<const char*>(&mx)};
    sub(reinterpret_cast<char*>(yo), 1, subIn, strides, l.len);
    T* ex = kLog ? e.data() : yo;
    const char* expIn[1] = {reinterpret_cast<const char*>(yo)};
    exp(reinterpret_cast<char*>(ex), 1, expIn, unit, l.len);
    const T sum = rowSum(ex, l.len);
    if constexpr (kLog) {
      const T shift = -std::log(sum);
      const char* addIn[2] = {reinterpret_cast<const char*>(yo),
                              reinterpret_cast<const char*>(&shift)};
      addFn(reinterpret_cast<char*>(yo), 1, addIn, strides, l.len);
    } else {
      const T inv = T(1) / sum;
      const char* mulIn[2] = {reinterpret_cast<const char*>(yo),
                              reinterpret_cast<const char*>(&inv)};
      mul(reinterpret_cast<char*>(yo), 1, mulIn, strides, l.len);
    }
  }
  return true;
}

template <class T, bool kLog>
void softmaxKernel(const T* x, T* y, const AxisLayout& l) {
  if (softmaxRows<T, kLog>(x, y, l)) return;
  std::vector<T> mx(static_cast<std::size_t>(l.inner)), sum(static_cast<std::size_t>(l.inner));
  for (std::int64_t o = 0; o < l.outer; ++o) {
    const T* xo = x + o * l.len * l.inner;
    T* yo = y + o * l.len * l.inner;
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<T>::infinity());
    std::fill(sum.begin(), sum.end(), T(0));
    for (std::int64_t k = 0; k < l.len; ++k)
      for (std::int64_t i = 0; i < l.inner; ++i) mx[i] = std::max(mx[i], xo[k * l.inner + i]);
    for (std::int64_t k = 0; k < l.len; ++k) {
      for (std::int64_t i = 0; i < l.inner; ++i) {
        const T e = std::exp(xo[k * l.inner + i] - mx[i]);
        if constexpr (!kLog) yo[k * l.inner + i] = e;
        sum[i] += e;
      }
    }
    if constexpr (kLog) {
      for (std::int64_t i = 0; i < l.inner; ++i) sum[i] = mx[i] + std::log(sum[i]);
      for (std::int64_t k = 0; k < l.len; ++k)
        for (std::int64_t i = 0; i < l.inner; ++i)
          yo[k * l.inner + i] = xo[k * l.inner + i] - sum[i];
    } else {
      for (std::int64_t i = 0; i < l.inner; ++i) sum[i] = T(1) / sum[i];
      for (std::int64_t k = 0; k < l.len; ++k)
        for (std::int64_t i = 0; i < l.inner; ++i) yo[k * l.inner + i] *= sum[i];
    }
  }
}

// kLog false: dx = y * (g - sum(g * y)); kLog true: dx = g - exp(y) * sum(g).
template <class T, bool kLog>
void softmaxGradKernel(const T* g, const T* y, T* dx, const AxisLayout& l) {
  std::vector<T> sum(static_cast<std::size_t>(l.inner));
  for (std::int64_t o = 0; o < l.outer; ++o) {
    const std::int64_t base = o * l.len * l.inner;
    const T* go = g + base;
    const T* yo = y + base;
    T* dxo = dx + base;
    std::fill(sum.begin(), sum.end(), T(0));
    for (std::int64_t k = 0; k < l.len; ++k) {
      for (std::int64_t i = 0; i < l.inner; ++i) {
        if constexpr (kLog)
          sum[i] += go[k * l.inner + i];
        else
          sum[i] += go[k * l.inner + i] * yo[k * l.inner + i];
      }
    }
    for (std::int64_t k = 0; k < l.len; ++k) {
      for (std::int64_t i = 0; i < l.inner; ++i) {
        const std::int64_t at = k * l.inner + i;
        if constexpr (kLog)
          dxo[at] = go[at] - std::exp(yo[at]) * sum[i];
        else
          dxo[at] = yo[at] * (go[at] - sum[i]);
      }
    }
  }
}

template <bool kLog>
void performSoftmax(int axis, const Tensor& xIn, Tensor* out) {
  const Tensor x = xIn.contiguous();
  Tensor& y = reuseOrAllocate(out, x.dtype(), x.shape());
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    softmaxKernel<T, kLog>(x.data<T>(), y.data<T>(), layoutOf(x.shape(), axis));
  });
}

template <bool kLog>
void performSoftmaxGrad(int axis, const Tensor& gIn, const Tensor& yIn, Tensor* out) {
  if (gIn.shape() != yIn.shape())
    throw std::invalid_argument("the gradient has shape " + shapeToString(gIn.shape()) +
                                " but the output has shape " + shapeToString(yIn.shape()));
  const Tensor g = gIn.contiguous(), y = yIn.contiguous();
  Tensor& dx = reuseOrAllocate(out, y.dtype(), y.shape());
  dispatchFloat(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    softmaxGradKernel<T, kLog>(g.data<T>(), y.data<T>(), dx.data<T>(), layoutOf(y.shape(), axis));
  });
}

int readAxis(const nlohmann::json& props, const std::string& op) {
  return static_cast<int>(nn_detail::readInt(props, op, "axis", -64, 63, -1));
}

}  // namespace

void SoftmaxFamilyOp::checkInput(std::span<const VarPtr> inputs, int i) const {
  const TensorType& t = inputs[static_cast<std::size_t>(i)]->type();
  const int ndim = t.ndim();
  if (!nn_detail::isKernelFloat(t.dtype()) || ndim == 0 || axisFor(ndim) < 0 ||
      axisFor(ndim) >= ndim)
    throwInputError(inputs, i,
                    "a float32 or float64 tensor with an axis " + std::to_string(m_axis));
}

// --- Softmax -------------------------------------------------------------------------------------

std::vector<TensorType> Softmax::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  checkInput(inputs, 0);
  return {inputs[0]->type()};
}

void Softmax::perform(const Apply& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs) const {
  performSoftmax<false>(axisFor(node.input(0)->type().ndim()), *inputs[0], outputs[0]);
}

std::vector<ShapeExpr> Softmax::inferShape(const Apply&,
                                           std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> Softmax::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  return {softmaxGrad(outputGrads[0], outputOf(node, 0), m_axis)};
}

// The Jacobian diag(y) - y y^T is symmetric: J v = SoftmaxGrad(v, y).
std::optional<std::vector<VarPtr>> Softmax::pushforward(const Apply& node,
                                                        std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{softmaxGrad(tangents[0], outputOf(node, 0), m_axis)};
}

OpPtr Softmax::fromProps(const nlohmann::json& props) {
  return std::make_shared<Softmax>(readAxis(props, "Softmax"));
}

// --- LogSoftmax ----------------------------------------------------------------------------------

std::vector<TensorType> LogSoftmax::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  checkInput(inputs, 0);
  return {inputs[0]->type()};
}

void LogSoftmax::perform(const Apply& node, std::span<const Tensor* const> inputs,
                         std::span<Tensor* const> outputs) const {
  performSoftmax<true>(axisFor(node.input(0)->type().ndim()), *inputs[0], outputs[0]);
}

std::vector<ShapeExpr> LogSoftmax::inferShape(const Apply&,
                                              std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> LogSoftmax::pullback(const Apply& node,
                                       std::span<const VarPtr> outputGrads) const {
  return {logSoftmaxGrad(outputGrads[0], outputOf(node, 0), m_axis)};
}

// J = I - 1 p^T with p = exp(y): J v = v - sum(p * v).
std::optional<std::vector<VarPtr>> LogSoftmax::pushforward(const Apply& node,
                                                           std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  const VarPtr& v = tangents[0];
  return std::vector<VarPtr>{v - sumKeepAxis(exp(outputOf(node, 0)) * v, m_axis)};
}

OpPtr LogSoftmax::fromProps(const nlohmann::json& props) {
  return std::make_shared<LogSoftmax>(readAxis(props, "LogSoftmax"));
}

// --- SoftmaxGrad ---------------------------------------------------------------------------------

std::vector<TensorType> SoftmaxGrad::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  checkInput(inputs, 1);
  if (!inputs[0]->type().isCompatibleWith(inputs[1]->type()))
    throwInputError(inputs, 0, "a gradient of the output's type " + inputs[1]->type().str());
  return {inputs[1]->type()};
}

void SoftmaxGrad::perform(const Apply& node, std::span<const Tensor* const> inputs,
                          std::span<Tensor* const> outputs) const {
  performSoftmaxGrad<false>(axisFor(node.input(1)->type().ndim()), *inputs[0], *inputs[1],
                            outputs[0]);
}

std::vector<ShapeExpr> SoftmaxGrad::inferShape(const Apply&,
                                               std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[1]};
}

// out = y * (g - s), s = sum(g * y). With cotangent h:
//   d/dg = SoftmaxGrad(h, y)                      (linear in g with the symmetric matrix of
//   softmax) d/dy = h * (g - s) - g * sum(h * y)
std::vector<Grad> SoftmaxGrad::pullback(const Apply& node,
                                        std::span<const VarPtr> outputGrads) const {
  const VarPtr& g = node.input(0);
  const VarPtr& y = node.input(1);
  const VarPtr& h = outputGrads[0];
  VarPtr dg = softmaxGrad(h, y, m_axis);
  VarPtr dy = h * (g - sumKeepAxis(g * y, m_axis)) - g * sumKeepAxis(h * y, m_axis);
  return {dg, dy};
}

OpPtr SoftmaxGrad::fromProps(const nlohmann::json& props) {
  return std::make_shared<SoftmaxGrad>(readAxis(props, "SoftmaxGrad"));
}

// --- LogSoftmaxGrad ------------------------------------------------------------------------------

std::vector<TensorType> LogSoftmaxGrad::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  checkInput(inputs, 1);
  if (!inputs[0]->type().isCompatibleWith(inputs[1]->type()))
    throwInputError(inputs, 0, "a gradient of the output's type " + inputs[1]->type().str());
  return {inputs[1]->type()};
}

void LogSoftmaxGrad::perform(const Apply& node, std::span<const Tensor* const> inputs,
                             std::span<Tensor* const> outputs) const {
  performSoftmaxGrad<true>(axisFor(node.input(1)->type().ndim()), *inputs[0], *inputs[1],
                           outputs[0]);
}

std::vector<ShapeExpr> LogSoftmaxGrad::inferShape(const Apply&,
                                                  std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[1]};
}

// out = g - p * sum(g), p = exp(y). With cotangent h:
//   d/dg = h - sum(h * p)
//   d/dy = -h * p * sum(g)
std::vector<Grad> LogSoftmaxGrad::pullback(const Apply& node,
                                           std::span<const VarPtr> outputGrads) const {
  const VarPtr& g = node.input(0);
  const VarPtr& y = node.input(1);
  const VarPtr& h = outputGrads[0];
  VarPtr p = exp(y);
  return {h - sumKeepAxis(h * p, m_axis), -(h * p * sumKeepAxis(g, m_axis))};
}

// Tangent: vg - p * sum(vg) - p * vy * sum(g).
std::optional<std::vector<VarPtr>> LogSoftmaxGrad::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  const VarPtr& g = node.input(0);
  const VarPtr p = exp(node.input(1));
  VarPtr out;
  if (tangents[0]) out = tangents[0] - p * sumKeepAxis(tangents[0], m_axis);
  if (tangents[1]) {
    VarPtr term = p * tangents[1] * sumKeepAxis(g, m_axis);
    out = out ? out - term : -term;
  }
  return std::vector<VarPtr>{out};
}

OpPtr LogSoftmaxGrad::fromProps(const nlohmann::json& props) {
  return std::make_shared<LogSoftmaxGrad>(readAxis(props, "LogSoftmaxGrad"));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr softmax(const VarPtr& x, int axis, std::source_location site) {
  return std::make_shared<Softmax>(axis)->operator()({x}, site);
}
VarPtr logSoftmax(const VarPtr& x, int axis, std::source_location site) {
  return std::make_shared<LogSoftmax>(axis)->operator()({x}, site);
}
VarPtr softmaxGrad(const VarPtr& g, const VarPtr& y, int axis, std::source_location site) {
  return std::make_shared<SoftmaxGrad>(axis)->operator()({g, y}, site);
}
VarPtr logSoftmaxGrad(const VarPtr& g, const VarPtr& y, int axis, std::source_location site) {
  return std::make_shared<LogSoftmaxGrad>(axis)->operator()({g, y}, site);
}

}  // namespace tscope::engine
