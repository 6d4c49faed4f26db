#include "engine/ops/nn/conv2d.h"

#include "engine/backends/cpu/conv.h"
#include "engine/backends/cpu/dnnl_conv.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/shared_epoch.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/nn_common.h"
#include "engine/tensor/tensor.h"

namespace tscope::engine {

using nn_detail::dispatchFloat;

// --- Params --------------------------------------------------------------------------------------

nlohmann::json Conv2dParams::toJson() const {
  return {{"stride", {stride[0], stride[1]}},
          {"padding", {padding[0], padding[1]}},
          {"dilation", {dilation[0], dilation[1]}},
          {"groups", groups}};
}

Conv2dParams Conv2dParams::fromJson(const nlohmann::json& props, const std::string& op) {
  constexpr std::int64_t kMax = 1 << 20;
  Conv2dParams p;
  p.stride = nn_detail::readPair(props, op, "stride", 1, kMax, p.stride);
  p.padding = nn_detail::readPair(props, op, "padding", 0, kMax, p.padding);
  p.dilation = nn_detail::readPair(props, op, "dilation", 1, kMax, p.dilation);
  p.groups = nn_detail::readInt(props, op, "groups", 1, kMax, p.groups);
  for (const auto& [key, value] : props.items())
    if (key != "stride" && key != "padding" && key != "dilation" && key != "groups")
      throw std::invalid_argument(op + ": unknown prop \"" + key + "\"");
  return p;
}

void Conv2dParams::validate(const std::string& op) const {
  for (int i = 0; i < 2; ++i) {
    if (stride[i] < 1)
      throw std::invalid_argument(op + ": stride must be >= 1, found " +
                                  nn_detail::pairStr(stride));
    if (dilation[i] < 1)
      throw std::invalid_argument(op + ": dilation must be >= 1, found " +
                                  nn_detail::pairStr(dilation));
    if (padding[i] < 0)
      throw std::invalid_argument(op + ": padding must be >= 0, found " +
                                  nn_detail::pairStr(padding));
  }
  if (groups < 1)
    throw std::invalid_argument(op + ": groups must be >= 1, found " + std::to_string(groups));
}

Conv2dFamilyOp::Conv2dFamilyOp(Conv2dParams params, const std::string& name) : m_params(params) {
  m_params.validate(name);
}

namespace {

constexpr std::int64_t U = kUnknownDim;

bool known(std::int64_t d) {
  return d != U;
}

// The output size along one axis from static sizes; U when either is unknown.
std::int64_t staticOutputSize(std::int64_t in, std::int64_t k, const Conv2dParams& p, int axis) {
  if (!known(in) || !known(k)) return U;
  return cpu::convOutputSize(in, k, p.stride[axis], p.padding[axis], p.dilation[axis]);
}

// floor((in + 2p - d (k - 1) - 1) / s) + 1, folded to a constant when in and k are.
VarPtr outputSizeExpr(const VarPtr& in, const VarPtr& k, const Conv2dParams& p, int axis) {
  const std::int64_t d = p.dilation[axis];
  VarPtr span = nn_detail::shapeAdd(nn_detail::shapeSub(in, nn_detail::shapeMul(k, d)),
                                    2 * p.padding[axis] + d - 1);
  return nn_detail::shapeAdd(nn_detail::shapeFloorDiv(span, p.stride[axis]), 1);
}

bool isScalarInt64(const VarPtr& v) {
  return v->type().dtype() == DType::Int64 && v->type().ndim() == 0;
}

bool isConvTensor(const TensorType& t) {
  return nn_detail::isKernelFloat(t.dtype()) && t.ndim() == 4;
}

std::string tensorExpected(const std::string& what, const TensorType& like) {
  return what + " (a 4-d " + std::string(dtypeName(like.dtype())) + " tensor)";
}

void checkGradShape(const Op& op, const cpu::Conv2dGeometry& g, const Shape& gy) {
  const Shape expected{g.n, g.o, g.oh, g.ow};
  if (gy != expected)
    throw std::invalid_argument(op.str() + ": the output gradient has shape " + shapeToString(gy) +
                                ", expected " + shapeToString(expected));
}

}  // namespace

// --- Conv2d --------------------------------------------------------------------------------------

// The geometry from runtime shapes; throws std::invalid_argument naming both shapes when they do
// not fit.
cpu::Conv2dGeometry conv2d_detail::geometry(const Op& op, const Conv2dParams& p, const Shape& x,
                                            const Shape& w) {
  cpu::Conv2dGeometry g;
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.o = w[0], g.kh = w[2], g.kw = w[3];
  g.sh = p.stride[0], g.sw = p.stride[1], g.ph = p.padding[0], g.pw = p.padding[1];
  g.dh = p.dilation[0], g.dw = p.dilation[1], g.groups = p.groups;
  if (g.c % p.groups != 0 || w[1] * p.groups != g.c || g.o % p.groups != 0)
    throw std::invalid_argument(
        op.str() + ": the input " + shapeToString(x) + " and the filters " + shapeToString(w) +
        " do not fit groups=" + std::to_string(p.groups) +
        " (expected filters (O, C/groups, KH, KW) with O divisible by groups)");
  const std::int64_t spanH = g.h + 2 * g.ph - g.dh * (g.kh - 1),
                     spanW = g.w + 2 * g.pw - g.dw * (g.kw - 1);
  if (g.kh < 1 || g.kw < 1 || spanH < 1 || spanW < 1)
    throw std::invalid_argument(op.str() + ": the padded input " + shapeToString(x) +
                                " is smaller than the dilated filters " + shapeToString(w));
  g.oh = cpu::convOutputSize(g.h, g.kh, g.sh, g.ph, g.dh);
  g.ow = cpu::convOutputSize(g.w, g.kw, g.sw, g.pw, g.dw);
  return g;
}

TensorType Conv2dFamilyOp::convolvedType(std::span<const VarPtr> inputs) const {
  const TensorType& x = inputs[0]->type();
  if (!isConvTensor(x))
    throwInputError(inputs, 0, "an NCHW input (a 4-d float32 or float64 tensor)");
  const TensorType& w = inputs[1]->type();
  if (!isConvTensor(w) || w.dtype() != x.dtype())
    throwInputError(inputs, 1, tensorExpected("OIHW filters", x));
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  const std::int64_t g = m_params.groups;
  if ((known(xs[1]) && xs[1] % g != 0) || (known(xs[1]) && known(ws[1]) && ws[1] * g != xs[1]) ||
      (known(ws[0]) && ws[0] % g != 0)) {
    std::string cg = known(xs[1]) && xs[1] % g == 0 ? std::to_string(xs[1] / g) : "C/groups";
    throwInputError(inputs, 1,
                    "filters (O, " + cg + ", KH, KW) with O divisible by groups=" +
                        std::to_string(g) + " for input 0 of type " + x.str());
  }
  const std::int64_t oh = staticOutputSize(xs[2], ws[2], m_params, 0);
  const std::int64_t ow = staticOutputSize(xs[3], ws[3], m_params, 1);
  if (oh == 0 || ow == 0)
    throwInputError(inputs, 1,
                    "filters no larger than the padded input " + x.str() + " (after dilation)");
  return TensorType(x.dtype(), {xs[0], ws[0], oh, ow}, x.device());
}

std::vector<TensorType> Conv2d::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  return {convolvedType(inputs)};
}

void Conv2d::perform(const Apply& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  const Tensor w = inputs[1]->contiguous();
  const cpu::Conv2dGeometry g =
      conv2d_detail::geometry(*this, m_params, inputs[0]->shape(), w.shape());
  if (inputs[0]->dtype() == DType::Float32 && cpu::dnnlAvailable()) {
    // Note [Channel-last activations] (engine/backends/cpu/dnnl_conv.h).
    cpu::ConvEpilogue e;
    e.inputChannelLast = conv2d_detail::isChannelLast(*inputs[0]);
    e.outputChannelLast = true;
    const Tensor x = e.inputChannelLast ? *inputs[0] : inputs[0]->contiguous();
    Tensor& y = conv2d_detail::channelLastOutput(outputs[0], x.dtype(), {g.n, g.o, g.oh, g.ow});
    const conv2d_detail::FilterOwner f = conv2d_detail::filterOwner(node, 1, *inputs[1]);
    if (cpu::dnnlConv2dForward(g, x.data<float>(), w.data<float>(), e, y.data<float>(), f.owner,
                               f.version))
      return;
  }
  const Tensor x = inputs[0]->contiguous();
  Tensor& y = reuseOrAllocate(outputs[0], x.dtype(), Shape{g.n, g.o, g.oh, g.ow});
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::conv2dForward<T>(g, x.data<T>(), w.data<T>(), y.data<T>());
  });
}

ShapeExpr conv2d_detail::outputShape(const Conv2dParams& p, std::span<const ShapeExpr> s) {
  return ShapeExpr{s[0][0], s[1][0], outputSizeExpr(s[0][2], s[1][2], p, 0),
                   outputSizeExpr(s[0][3], s[1][3], p, 1)};
}

conv2d_detail::FilterOwner conv2d_detail::filterOwner(const Apply& node, int input,
                                                      const Tensor& value) {
  if (!value.isContiguous()) return {};  // the kernel reads a copy, made anew each call
  switch (node.input(input)->kind()) {
    case Variable::Kind::Constant:
      return {value.storage(), 0};
    case Variable::Kind::Shared:
      return {value.storage(), sharedValueEpoch()};
    default:
      return {};
  }
}

namespace {
Strides channelLastStrides(const Shape& s) {
  return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}
}  // namespace

bool conv2d_detail::isChannelLast(const Tensor& t) {
  if (t.ndim() != 4 || t.offset() != 0 || t.isContiguous()) return false;
  return t.strides() == channelLastStrides(t.shape());
}

Tensor& conv2d_detail::channelLastOutput(Tensor* out, DType dtype, const Shape& shape) {
  if (out->defined() && out->dtype() == dtype && out->shape() == shape &&
      out->storage().use_count() == 1 && out->device() == Device::Cpu && out->offset() == 0 &&
      out->strides() == channelLastStrides(shape))
    return *out;
  const std::int64_t bytes = shapeNumel(shape) * static_cast<std::int64_t>(dtypeSize(dtype));
  *out =
      Tensor(std::make_shared<Storage>(static_cast<std::size_t>(bytes), Storage::Uninitialized{}),
             dtype, shape, channelLastStrides(shape), 0);
  return *out;
}

std::vector<ShapeExpr> Conv2d::inferShape(const Apply&, std::span<const ShapeExpr> s) const {
  return {conv2d_detail::outputShape(m_params, s)};
}

std::vector<Grad> Conv2d::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const VarPtr& w = node.input(1);
  const VarPtr& gy = outputGrads[0];
  return {conv2dGradInputs(w, gy, shapeI(x, 2), shapeI(x, 3), m_params),
          conv2dGradWeights(x, gy, shapeI(w, 2), shapeI(w, 3), m_params)};
}

// Bilinear: d conv(x, w) = conv(dx, w) + conv(x, dw).
std::optional<std::vector<VarPtr>> Conv2d::pushforward(const Apply& node,
                                                       std::span<const VarPtr> tangents) const {
  VarPtr out;
  if (tangents[0]) out = conv2d(tangents[0], node.input(1), m_params);
  if (tangents[1]) {
    VarPtr term = conv2d(node.input(0), tangents[1], m_params);
    out = out ? out + term : term;
  }
  return std::vector<VarPtr>{out};
}

OpPtr Conv2d::fromProps(const nlohmann::json& props) {
  return std::make_shared<Conv2d>(Conv2dParams::fromJson(props, "Conv2d"));
}

// --- Conv2dGradInputs ----------------------------------------------------------------------------

std::vector<TensorType> Conv2dGradInputs::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 4);
  const TensorType& w = inputs[0]->type();
  if (!isConvTensor(w))
    throwInputError(inputs, 0, "OIHW filters (a 4-d float32 or float64 tensor)");
  const TensorType& gy = inputs[1]->type();
  if (!isConvTensor(gy) || gy.dtype() != w.dtype() ||
      (known(gy.shape()[1]) && known(w.shape()[0]) && gy.shape()[1] != w.shape()[0]))
    throwInputError(
        inputs, 1,
        tensorExpected("an output gradient (N, O, OH, OW) with O matching the filters " + w.str(),
                       w));
  if (known(w.shape()[0]) && w.shape()[0] % m_params.groups != 0)
    throwInputError(inputs, 0,
                    "filters with O divisible by groups=" + std::to_string(m_params.groups));
  for (int i : {2, 3})
    if (!isScalarInt64(inputs[static_cast<std::size_t>(i)]))
      throwInputError(
          inputs, i,
          std::string("the input ") + (i == 2 ? "height" : "width") + " (a 0-d int64 tensor)");
  const std::int64_t c = known(w.shape()[1]) ? w.shape()[1] * m_params.groups : U;
  return {TensorType(w.dtype(),
                     {gy.shape()[0], c, constantIntValue(inputs[2]).value_or(U),
                      constantIntValue(inputs[3]).value_or(U)},
                     w.device())};
}

void Conv2dGradInputs::perform(const Apply&, std::span<const Tensor* const> inputs,
                               std::span<Tensor* const> outputs) const {
  const Tensor w = inputs[0]->contiguous(), gy = inputs[1]->contiguous();
  const auto h = static_cast<std::int64_t>(inputs[2]->item()),
             wd = static_cast<std::int64_t>(inputs[3]->item());
  const Shape xShape{gy.shape()[0], w.shape()[1] * m_params.groups, h, wd};
  const cpu::Conv2dGeometry g = conv2d_detail::geometry(*this, m_params, xShape, w.shape());
  checkGradShape(*this, g, gy.shape());
  Tensor& gx = reuseOrAllocate(outputs[0], w.dtype(), xShape);
  dispatchFloat(w.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::conv2dGradInputs<T>(g, w.data<T>(), gy.data<T>(), gx.data<T>());
  });
}

std::vector<ShapeExpr> Conv2dGradInputs::inferShape(const Apply& node,
                                                    std::span<const ShapeExpr> s) const {
  return {ShapeExpr{s[1][0], nn_detail::shapeMul(s[0][1], m_params.groups), node.input(2),
                    node.input(3)}};
}

// out = GI(w, gy), the adjoint of conv(., w) applied to gy. With cotangent h (shaped like x):
//   <h, GI(w, gy)> = <conv(h, w), gy> = <GW(h, gy), w>.
std::vector<Grad> Conv2dGradInputs::pullback(const Apply& node,
                                             std::span<const VarPtr> outputGrads) const {
  const VarPtr& w = node.input(0);
  const VarPtr& gy = node.input(1);
  const VarPtr& h = outputGrads[0];
  return {conv2dGradWeights(h, gy, shapeI(w, 2), shapeI(w, 3), m_params), conv2d(h, w, m_params),
          Grad::disconnected(), Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> Conv2dGradInputs::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  const VarPtr& hgt = node.input(2);
  const VarPtr& wid = node.input(3);
  VarPtr out;
  if (tangents[0]) out = conv2dGradInputs(tangents[0], node.input(1), hgt, wid, m_params);
  if (tangents[1]) {
    VarPtr term = conv2dGradInputs(node.input(0), tangents[1], hgt, wid, m_params);
    out = out ? out + term : term;
  }
  return std::vector<VarPtr>{out};
}

std::vector<std::vector<bool>> Conv2dGradInputs::connectionPattern(const Apply&) const {
  return {{true}, {true}, {false}, {false}};  // the sizes only shape the output
}

OpPtr Conv2dGradInputs::fromProps(const nlohmann::json& props) {
  return std::make_shared<Conv2dGradInputs>(Conv2dParams::fromJson(props, "Conv2dGradInputs"));
}

// --- Conv2dGradWeights ---------------------------------------------------------------------------

std::vector<TensorType> Conv2dGradWeights::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 4);
  const TensorType& x = inputs[0]->type();
  if (!isConvTensor(x))
    throwInputError(inputs, 0, "an NCHW input (a 4-d float32 or float64 tensor)");
  const std::int64_t g = m_params.groups;
  if (known(x.shape()[1]) && x.shape()[1] % g != 0)
    throwInputError(inputs, 0, "an input with C divisible by groups=" + std::to_string(g));
  const TensorType& gy = inputs[1]->type();
  if (!isConvTensor(gy) || gy.dtype() != x.dtype() ||
      (known(gy.shape()[0]) && known(x.shape()[0]) && gy.shape()[0] != x.shape()[0]) ||
      (known(gy.shape()[1]) && gy.shape()[1] % g != 0))
    throwInputError(inputs, 1,
                    tensorExpected("an output gradient (N, O, OH, OW) with N matching the input " +
                                       x.str() + " and O divisible by groups=" + std::to_string(g),
                                   x));
  for (int i : {2, 3})
    if (!isScalarInt64(inputs[static_cast<std::size_t>(i)]))
      throwInputError(
          inputs, i,
          std::string("the filter ") + (i == 2 ? "height" : "width") + " (a 0-d int64 tensor)");
  const std::int64_t cg = known(x.shape()[1]) ? x.shape()[1] / g : U;
  return {TensorType(x.dtype(),
                     {gy.shape()[1], cg, constantIntValue(inputs[2]).value_or(U),
                      constantIntValue(inputs[3]).value_or(U)},
                     x.device())};
}

void Conv2dGradWeights::perform(const Apply&, std::span<const Tensor* const> inputs,
                                std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous(), gy = inputs[1]->contiguous();
  const auto kh = static_cast<std::int64_t>(inputs[2]->item()),
             kw = static_cast<std::int64_t>(inputs[3]->item());
  const Shape wShape{gy.shape()[1], x.shape()[1] / m_params.groups, kh, kw};
  const cpu::Conv2dGeometry g = conv2d_detail::geometry(*this, m_params, x.shape(), wShape);
  checkGradShape(*this, g, gy.shape());
  Tensor& gw = reuseOrAllocate(outputs[0], x.dtype(), wShape);
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::conv2dGradWeights<T>(g, x.data<T>(), gy.data<T>(), gw.data<T>());
  });
}

std::vector<ShapeExpr> Conv2dGradWeights::inferShape(const Apply& node,
                                                     std::span<const ShapeExpr> s) const {
  return {ShapeExpr{s[1][1], nn_detail::shapeFloorDiv(s[0][1], m_params.groups), node.input(2),
                    node.input(3)}};
}

// out = GW(x, gy). With cotangent h (shaped like w):
//   <h, GW(x, gy)> = <conv(x, h), gy> = <GI(h, gy), x>.
std::vector<Grad> Conv2dGradWeights::pullback(const Apply& node,
                                              std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const VarPtr& gy = node.input(1);
  const VarPtr& h = outputGrads[0];
  return {conv2dGradInputs(h, gy, shapeI(x, 2), shapeI(x, 3), m_params), conv2d(x, h, m_params),
          Grad::disconnected(), Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> Conv2dGradWeights::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  const VarPtr& kh = node.input(2);
  const VarPtr& kw = node.input(3);
  VarPtr out;
  if (tangents[0]) out = conv2dGradWeights(tangents[0], node.input(1), kh, kw, m_params);
  if (tangents[1]) {
    VarPtr term = conv2dGradWeights(node.input(0), tangents[1], kh, kw, m_params);
    out = out ? out + term : term;
  }
  return std::vector<VarPtr>{out};
}

std::vector<std::vector<bool>> Conv2dGradWeights::connectionPattern(const Apply&) const {
  return {{true}, {true}, {false}, {false}};
}

OpPtr Conv2dGradWeights::fromProps(const nlohmann::json& props) {
  return std::make_shared<Conv2dGradWeights>(Conv2dParams::fromJson(props, "Conv2dGradWeights"));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr conv2d(const VarPtr& x, const VarPtr& w, Conv2dParams params, std::source_location site) {
  return std::make_shared<Conv2d>(params)->operator()({x, w}, site);
}

VarPtr conv2dGradInputs(const VarPtr& w, const VarPtr& gy, const VarPtr& height,
                        const VarPtr& width, Conv2dParams params, std::source_location site) {
  return std::make_shared<Conv2dGradInputs>(params)->operator()({w, gy, height, width}, site);
}

VarPtr conv2dGradWeights(const VarPtr& x, const VarPtr& gy, const VarPtr& kernelHeight,
                         const VarPtr& kernelWidth, Conv2dParams params,
                         std::source_location site) {
  return std::make_shared<Conv2dGradWeights>(params)->operator()({x, gy, kernelHeight, kernelWidth},
                                                                 site);
}

}  // namespace tscope::engine
