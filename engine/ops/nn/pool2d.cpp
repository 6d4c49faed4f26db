#include "engine/ops/nn/pool2d.h"

#include "engine/backends/cpu/parallel.h"
#include "engine/backends/cpu/pool.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/ops/elemwise/scalar_op.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/nn_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace tscope::engine {

using nn_detail::dispatchFloat;

// --- Params --------------------------------------------------------------------------------------

nlohmann::json Pool2dParams::toJson(bool withIncludePad) const {
  nlohmann::json j = {{"kernel", {kernel[0], kernel[1]}},
                      {"stride", {stride[0], stride[1]}},
                      {"padding", {padding[0], padding[1]}}};
  if (withIncludePad) j["include_pad"] = includePad;
  return j;
}

Pool2dParams Pool2dParams::fromJson(const nlohmann::json& props, const std::string& op,
                                    bool withIncludePad) {
  constexpr std::int64_t kMax = 1 << 20;
  Pool2dParams p;
  p.kernel = nn_detail::readPair(props, op, "kernel", 1, kMax);
  p.stride = nn_detail::readPair(props, op, "stride", 1, kMax, p.kernel);
  p.padding = nn_detail::readPair(props, op, "padding", 0, kMax, std::array<std::int64_t, 2>{0, 0});
  if (withIncludePad) p.includePad = nn_detail::readBool(props, op, "include_pad", true);
  for (const auto& [key, value] : props.items())
    if (key != "kernel" && key != "stride" && key != "padding" &&
        !(withIncludePad && key == "include_pad"))
      throw std::invalid_argument(op + ": unknown prop \"" + key + "\"");
  p.validate(op);
  return p;
}

void Pool2dParams::validate(const std::string& op) const {
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1)
      throw std::invalid_argument(op + ": kernel must be >= 1, found " +
                                  nn_detail::pairStr(kernel));
    if (stride[i] < 1)
      throw std::invalid_argument(op + ": stride must be >= 1, found " +
                                  nn_detail::pairStr(stride));
    // Note [Pool2d geometry]: padding below the kernel keeps every window partly inside the image.
    if (padding[i] < 0 || padding[i] >= kernel[i])
      throw std::invalid_argument(op + ": padding must be >= 0 and smaller than the kernel " +
                                  nn_detail::pairStr(kernel) + ", found " +
                                  nn_detail::pairStr(padding));
  }
}

Pool2dFamilyOp::Pool2dFamilyOp(Pool2dParams params, bool average, const std::string& name)
    : m_params(params), m_average(average) {
  m_params.validate(name);
  if (!average)
    m_params.includePad = true;  // not a prop of max pooling: keep equality to the props
}

namespace {

constexpr std::int64_t U = kUnknownDim;

bool isPoolTensor(const TensorType& t) {
  return nn_detail::isKernelFloat(t.dtype()) && t.ndim() == 4;
}

cpu::Pool2dGeometry geometry(const Op& op, const Pool2dParams& p, const Shape& x) {
  cpu::Pool2dGeometry g;
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.kh = p.kernel[0], g.kw = p.kernel[1], g.sh = p.stride[0], g.sw = p.stride[1];
  g.ph = p.padding[0], g.pw = p.padding[1];
  if (g.h + 2 * g.ph < g.kh || g.w + 2 * g.pw < g.kw)
    throw std::invalid_argument(op.str() + ": the padded input " + shapeToString(x) +
                                " is smaller than the kernel " + nn_detail::pairStr(p.kernel));
  g.oh = cpu::poolOutputSize(g.h, g.kh, g.sh, g.ph);
  g.ow = cpu::poolOutputSize(g.w, g.kw, g.sw, g.pw);
  return g;
}

// Note [Separable channel-last max pooling]: a channel-last (NHWC in memory) x is pooled as
// maxPool2dForward does on planes (Note [Separable max pooling] in engine/backends/cpu/pool.cpp),
// with rows of W*C values instead of W: each output row first takes the max of its window's kh
// input rows (contiguous runs of W*C), then each output position the max of its window's kw
// channel vectors in that row (runs of C). Both passes are the elementwise row kernel of maximum
// for the widest instruction set the CPU runs (NaN wins, as in Elemwise{maximum}); a NaN result
// is then made the canonical quiet NaN, as the plane kernel's. ResNet-18's 3x3/2 pool of 64 x
// 112 x 112 read its 9 window vectors one at a time before: 1.5 ms, against ONNX Runtime's 0.46.
template <class T>
void maxPoolChannelLast(const cpu::Pool2dGeometry& g, const T* x, T* y, ElemwiseRowFn maxRow) {
  const std::int64_t c = g.c, rowLen = g.w * c;
  const std::int64_t unit[2] = {1, 1};
  auto max2 = [&](T* out, const T* a, const T* b, std::int64_t n) {
    const char* in[2] = {reinterpret_cast<const char*>(a), reinterpret_cast<const char*>(b)};
    maxRow(reinterpret_cast<char*>(out), 1, in, unit, n);
  };
  // Output rows split over the intra-op threads (Note [Parallel loops] in
  // engine/backends/cpu/parallel.h): each computed as on one thread, into a row buffer of its
  // thread's own.
  const std::int64_t rowWork = std::max<std::int64_t>(1, g.kh * rowLen);
  cpu::parallelFor(
      g.n * g.oh, std::max<std::int64_t>(1, cpu::kElementwiseGrain / rowWork),
      [&](std::int64_t first, std::int64_t last) {
        thread_local std::vector<T> rowBuffer;
        rowBuffer.resize(static_cast<std::size_t>(rowLen));
        for (std::int64_t r = first; r < last; ++r) {  // output row oy of image n
          const std::int64_t n = r / g.oh, oy = r % g.oh;
          const T* xn = x + n * g.h * rowLen;
          T* const outRow = y + r * g.ow * c;
          const std::int64_t y0 = std::max<std::int64_t>(oy * g.sh - g.ph, 0),
                             y1 = std::min(oy * g.sh - g.ph + g.kh, g.h);
          const T* rows = xn + y0 * rowLen;  // the max of rows y0..y1-1, each W*C values
          if (y1 - y0 > 1) {
            max2(rowBuffer.data(), rows, rows + rowLen, rowLen);
            for (std::int64_t yy = y0 + 2; yy < y1; ++yy)
              max2(rowBuffer.data(), rowBuffer.data(), xn + yy * rowLen, rowLen);
            rows = rowBuffer.data();
          }
          T* out = outRow;
          for (std::int64_t ox = 0; ox < g.ow; ++ox, out += c) {
            const std::int64_t x0 = std::max<std::int64_t>(ox * g.sw - g.pw, 0),
                               x1 = std::min(ox * g.sw - g.pw + g.kw, g.w);
            if (x1 - x0 == 1) {
              std::copy(rows + x0 * c, rows + x1 * c, out);
              continue;
            }
            max2(out, rows + x0 * c, rows + (x0 + 1) * c, c);
            for (std::int64_t xx = x0 + 2; xx < x1; ++xx) max2(out, out, rows + xx * c, c);
          }
          // Blocks of a constant trip count, which GCC vectorises at -O2 (Note [Blocked loops
          // vectorize at -O2] in elemwise_rows_impl.h).
          const T nan = std::numeric_limits<T>::quiet_NaN();
          std::int64_t k = 0;
          const std::int64_t m = g.ow * c;
          for (; k + 16 <= m; k += 16)
            for (std::int64_t j = 0; j < 16; ++j)
              outRow[k + j] = outRow[k + j] != outRow[k + j] ? nan : outRow[k + j];
          for (; k < m; ++k) outRow[k] = outRow[k] != outRow[k] ? nan : outRow[k];
        }
      },
      1);
}

void checkShape(const Op& op, const char* what, const Shape& found, const Shape& expected) {
  if (found != expected)
    throw std::invalid_argument(op.str() + ": " + what + " has shape " + shapeToString(found) +
                                ", expected " + shapeToString(expected));
}

Shape pooled(const cpu::Pool2dGeometry& g) {
  return {g.n, g.c, g.oh, g.ow};
}

VarPtr pooledSizeExpr(const VarPtr& in, std::int64_t k, std::int64_t s, std::int64_t p) {
  return nn_detail::shapeAdd(nn_detail::shapeFloorDiv(nn_detail::shapeAdd(in, 2 * p - k), s), 1);
}

bool isScalarInt64(const VarPtr& v) {
  return v->type().dtype() == DType::Int64 && v->type().ndim() == 0;
}

}  // namespace

void Pool2dFamilyOp::checkPoolInput(std::span<const VarPtr> inputs, int i) const {
  const TensorType& x = inputs[static_cast<std::size_t>(i)]->type();
  if (!isPoolTensor(x))
    throwInputError(inputs, i, "an NCHW tensor (a 4-d float32 or float64 tensor)");
  for (int a = 0; a < 2; ++a) {
    const std::int64_t d = x.shape()[static_cast<std::size_t>(2 + a)];
    if (d != U && d + 2 * m_params.padding[a] < m_params.kernel[a])
      throwInputError(inputs, i,
                      "an NCHW tensor whose padded size holds the kernel " +
                          nn_detail::pairStr(m_params.kernel));
  }
}

std::vector<std::int64_t> Pool2dFamilyOp::pooledShape(const TensorType& x) const {
  const auto& s = x.shape();
  std::vector<std::int64_t> out{s[0], s[1], U, U};
  for (int a = 0; a < 2; ++a)
    if (s[static_cast<std::size_t>(2 + a)] != U)
      out[static_cast<std::size_t>(2 + a)] =
          cpu::poolOutputSize(s[static_cast<std::size_t>(2 + a)], m_params.kernel[a],
                              m_params.stride[a], m_params.padding[a]);
  return out;
}

ShapeExpr Pool2dFamilyOp::pooledShapeExpr(const ShapeExpr& x) const {
  return {x[0], x[1],
          pooledSizeExpr(x[2], m_params.kernel[0], m_params.stride[0], m_params.padding[0]),
          pooledSizeExpr(x[3], m_params.kernel[1], m_params.stride[1], m_params.padding[1])};
}

// --- MaxPool2d -----------------------------------------------------------------------------------

std::vector<TensorType> MaxPool2d::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  checkPoolInput(inputs, 0);
  const TensorType& x = inputs[0]->type();
  return {TensorType(x.dtype(), pooledShape(x), x.device())};
}

void MaxPool2d::perform(const Apply&, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) const {
  if (conv2d_detail::isChannelLast(*inputs[0])) {
    // A convolution's channel-last output stays channel-last (Note [Channel-last activations]).
    const Tensor& x = *inputs[0];
    const cpu::Pool2dGeometry g = geometry(*this, m_params, x.shape());
    Tensor& y = conv2d_detail::channelLastOutput(outputs[0], x.dtype(), pooled(g));
    dispatchFloat(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      maxPoolChannelLast<T>(g, x.data<T>(), y.data<T>(),
                            elemwiseRowKernel(ScalarOp::Maximum, x.dtype()));
    });
    return;
  }
  const Tensor x = inputs[0]->contiguous();
  const cpu::Pool2dGeometry g = geometry(*this, m_params, x.shape());
  Tensor& y = reuseOrAllocate(outputs[0], x.dtype(), pooled(g));
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::maxPool2dForward<T>(g, x.data<T>(), y.data<T>());
  });
}

std::vector<ShapeExpr> MaxPool2d::inferShape(const Apply&, std::span<const ShapeExpr> s) const {
  return {pooledShapeExpr(s[0])};
}

std::vector<Grad> MaxPool2d::pullback(const Apply& node,
                                      std::span<const VarPtr> outputGrads) const {
  return {maxPool2dGrad(node.input(0), outputGrads[0], m_params)};
}

std::optional<std::vector<VarPtr>> MaxPool2d::pushforward(const Apply& node,
                                                          std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{maxPool2dGradGrad(node.input(0), tangents[0], m_params)};
}

OpPtr MaxPool2d::fromProps(const nlohmann::json& props) {
  return std::make_shared<MaxPool2d>(Pool2dParams::fromJson(props, "MaxPool2d", false));
}

// --- MaxPool2dGrad -------------------------------------------------------------------------------

std::vector<TensorType> MaxPool2dGrad::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  checkPoolInput(inputs, 0);
  const TensorType& x = inputs[0]->type();
  const TensorType expected(x.dtype(), pooledShape(x), x.device());
  if (!inputs[1]->type().isCompatibleWith(expected))
    throwInputError(inputs, 1,
                    "an output gradient of type " + expected.str() + " for the input " + x.str());
  return {x};
}

void MaxPool2dGrad::perform(const Apply&, std::span<const Tensor* const> inputs,
                            std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous(), gy = inputs[1]->contiguous();
  const cpu::Pool2dGeometry g = geometry(*this, m_params, x.shape());
  checkShape(*this, "the output gradient", gy.shape(), pooled(g));
  Tensor& gx = reuseOrAllocate(outputs[0], x.dtype(), x.shape());
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::maxPool2dGrad<T>(g, x.data<T>(), gy.data<T>(), gx.data<T>());
  });
}

std::vector<ShapeExpr> MaxPool2dGrad::inferShape(const Apply&, std::span<const ShapeExpr> s) const {
  return {s[0]};
}

// Linear in gy with adjoint MaxPool2dGradGrad; zero wrt x (Note [Pool2d geometry]: piecewise
// constant).
std::vector<Grad> MaxPool2dGrad::pullback(const Apply& node,
                                          std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  return {zerosLike(x), maxPool2dGradGrad(x, outputGrads[0], m_params)};
}

std::optional<std::vector<VarPtr>> MaxPool2dGrad::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[1]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{maxPool2dGrad(node.input(0), tangents[1], m_params)};
}

OpPtr MaxPool2dGrad::fromProps(const nlohmann::json& props) {
  return std::make_shared<MaxPool2dGrad>(Pool2dParams::fromJson(props, "MaxPool2dGrad", false));
}

// --- MaxPool2dGradGrad ---------------------------------------------------------------------------

std::vector<TensorType> MaxPool2dGradGrad::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  checkPoolInput(inputs, 0);
  const TensorType& x = inputs[0]->type();
  if (!inputs[1]->type().isCompatibleWith(x))
    throwInputError(inputs, 1, "a tensor of the input's type " + x.str());
  return {TensorType(x.dtype(), pooledShape(x), x.device())};
}

void MaxPool2dGradGrad::perform(const Apply&, std::span<const Tensor* const> inputs,
                                std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous(), gx = inputs[1]->contiguous();
  const cpu::Pool2dGeometry g = geometry(*this, m_params, x.shape());
  checkShape(*this, "input 1", gx.shape(), x.shape());
  Tensor& gy = reuseOrAllocate(outputs[0], x.dtype(), pooled(g));
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::maxPool2dGradGrad<T>(g, x.data<T>(), gx.data<T>(), gy.data<T>());
  });
}

std::vector<ShapeExpr> MaxPool2dGradGrad::inferShape(const Apply&,
                                                     std::span<const ShapeExpr> s) const {
  return {pooledShapeExpr(s[0])};
}

std::vector<Grad> MaxPool2dGradGrad::pullback(const Apply& node,
                                              std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  return {zerosLike(x), maxPool2dGrad(x, outputGrads[0], m_params)};
}

std::optional<std::vector<VarPtr>> MaxPool2dGradGrad::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[1]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{maxPool2dGradGrad(node.input(0), tangents[1], m_params)};
}

OpPtr MaxPool2dGradGrad::fromProps(const nlohmann::json& props) {
  return std::make_shared<MaxPool2dGradGrad>(
      Pool2dParams::fromJson(props, "MaxPool2dGradGrad", false));
}

// --- AvgPool2d -----------------------------------------------------------------------------------

std::vector<TensorType> AvgPool2d::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  checkPoolInput(inputs, 0);
  const TensorType& x = inputs[0]->type();
  return {TensorType(x.dtype(), pooledShape(x), x.device())};
}

void AvgPool2d::perform(const Apply&, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous();
  const cpu::Pool2dGeometry g = geometry(*this, m_params, x.shape());
  Tensor& y = reuseOrAllocate(outputs[0], x.dtype(), pooled(g));
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::avgPool2dForward<T>(g, m_params.includePad, x.data<T>(), y.data<T>());
  });
}

std::vector<ShapeExpr> AvgPool2d::inferShape(const Apply&, std::span<const ShapeExpr> s) const {
  return {pooledShapeExpr(s[0])};
}

std::vector<Grad> AvgPool2d::pullback(const Apply& node,
                                      std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  return {avgPool2dGrad(outputGrads[0], shapeI(x, 2), shapeI(x, 3), m_params)};
}

std::optional<std::vector<VarPtr>> AvgPool2d::pushforward(const Apply&,
                                                          std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{avgPool2d(tangents[0], m_params)};
}

OpPtr AvgPool2d::fromProps(const nlohmann::json& props) {
  return std::make_shared<AvgPool2d>(Pool2dParams::fromJson(props, "AvgPool2d", true));
}

// --- AvgPool2dGrad -------------------------------------------------------------------------------

std::vector<TensorType> AvgPool2dGrad::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 3);
  const TensorType& gy = inputs[0]->type();
  if (!isPoolTensor(gy))
    throwInputError(inputs, 0, "an output gradient (a 4-d float32 or float64 tensor)");
  for (int i : {1, 2})
    if (!isScalarInt64(inputs[static_cast<std::size_t>(i)]))
      throwInputError(
          inputs, i,
          std::string("the input ") + (i == 1 ? "height" : "width") + " (a 0-d int64 tensor)");
  const std::int64_t h = constantIntValue(inputs[1]).value_or(U),
                     w = constantIntValue(inputs[2]).value_or(U);
  const TensorType x(gy.dtype(), {gy.shape()[0], gy.shape()[1], h, w}, gy.device());
  const TensorType expected(gy.dtype(), pooledShape(x), gy.device());
  if (!gy.isCompatibleWith(expected))
    throwInputError(
        inputs, 0,
        "an output gradient of type " + expected.str() + " for an input of type " + x.str());
  return {x};
}

void AvgPool2dGrad::perform(const Apply&, std::span<const Tensor* const> inputs,
                            std::span<Tensor* const> outputs) const {
  const Tensor gy = inputs[0]->contiguous();
  const Shape xShape{gy.shape()[0], gy.shape()[1], static_cast<std::int64_t>(inputs[1]->item()),
                     static_cast<std::int64_t>(inputs[2]->item())};
  const cpu::Pool2dGeometry g = geometry(*this, m_params, xShape);
  checkShape(*this, "the output gradient", gy.shape(), pooled(g));
  Tensor& gx = reuseOrAllocate(outputs[0], gy.dtype(), xShape);
  dispatchFloat(gy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::avgPool2dGrad<T>(g, m_params.includePad, gy.data<T>(), gx.data<T>());
  });
}

std::vector<ShapeExpr> AvgPool2dGrad::inferShape(const Apply& node,
                                                 std::span<const ShapeExpr> s) const {
  return {ShapeExpr{s[0][0], s[0][1], node.input(1), node.input(2)}};
}

// Linear in gy; its adjoint is average pooling itself.
std::vector<Grad> AvgPool2dGrad::pullback(const Apply&, std::span<const VarPtr> outputGrads) const {
  return {avgPool2d(outputGrads[0], m_params), Grad::disconnected(), Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> AvgPool2dGrad::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{avgPool2dGrad(tangents[0], node.input(1), node.input(2), m_params)};
}

OpPtr AvgPool2dGrad::fromProps(const nlohmann::json& props) {
  return std::make_shared<AvgPool2dGrad>(Pool2dParams::fromJson(props, "AvgPool2dGrad", true));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr maxPool2d(const VarPtr& x, Pool2dParams params, std::source_location site) {
  return std::make_shared<MaxPool2d>(params)->operator()({x}, site);
}
VarPtr maxPool2dGrad(const VarPtr& x, const VarPtr& gy, Pool2dParams params,
                     std::source_location site) {
  return std::make_shared<MaxPool2dGrad>(params)->operator()({x, gy}, site);
}
VarPtr maxPool2dGradGrad(const VarPtr& x, const VarPtr& gx, Pool2dParams params,
                         std::source_location site) {
  return std::make_shared<MaxPool2dGradGrad>(params)->operator()({x, gx}, site);
}
VarPtr avgPool2d(const VarPtr& x, Pool2dParams params, std::source_location site) {
  return std::make_shared<AvgPool2d>(params)->operator()({x}, site);
}
VarPtr avgPool2dGrad(const VarPtr& gy, const VarPtr& height, const VarPtr& width,
                     Pool2dParams params, std::source_location site) {
  return std::make_shared<AvgPool2dGrad>(params)->operator()({gy, height, width}, site);
}

}  // namespace tscope::engine
