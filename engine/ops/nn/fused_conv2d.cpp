#include "engine/ops/nn/fused_conv2d.h"

#include "engine/graph/errors.h"
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/ops/nn/nn_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tscope::engine {

using nn_detail::dispatchFloat;

namespace {

const char* activationName(cpu::ConvActivation a) {
  switch (a) {
    case cpu::ConvActivation::None:
      return "none";
    case cpu::ConvActivation::Relu:
      return "relu";
    case cpu::ConvActivation::Clip:
      return "clip";
  }
  return "none";
}

// y += b[o] over (N, O, P) planes: the bias where oneDNN is not used.
template <class T>
void addBias(T* y, const T* b, std::int64_t n, std::int64_t o, std::int64_t p) {
  for (std::int64_t i = 0; i < n * o; ++i) {
    T* plane = y + i * p;
    const T bias = b[i % o];
    for (std::int64_t k = 0; k < p; ++k) plane[k] += bias;
  }
}

// y = act(y) in place with Elemwise's own row kernels (Note [No oneDNN activations]).
void applyActivation(Tensor& y, const ConvActivationSpec& a) {
  if (a.kind == cpu::ConvActivation::None || y.numel() == 0) return;
  const bool relu = a.kind == cpu::ConvActivation::Relu;
  const ElemwiseRowFn fn = elemwiseRowKernel(relu ? ScalarOp::Relu : ScalarOp::Clip, y.dtype());
  char* out = static_cast<char*>(y.rawData());
  const double lo = a.lo, hi = a.hi;
  const float loF = static_cast<float>(lo), hiF = static_cast<float>(hi);
  const bool f32 = y.dtype() == DType::Float32;
  const char* in[3] = {
      out, f32 ? reinterpret_cast<const char*>(&loF) : reinterpret_cast<const char*>(&lo),
      f32 ? reinterpret_cast<const char*>(&hiF) : reinterpret_cast<const char*>(&hi)};
  const std::int64_t strides[3] = {1, 0, 0};
  fn(out, 1, in, strides, y.numel());
}

}  // namespace

FusedConv2d::FusedConv2d(Conv2dParams params, ConvActivationSpec activation)
    : Conv2dFamilyOp(params, "FusedConv2d"), m_activation(activation) {
  if (activation.kind == cpu::ConvActivation::Clip &&
      !(activation.lo <= activation.hi && std::isfinite(activation.lo) &&
        std::isfinite(activation.hi)))
    throw std::invalid_argument("FusedConv2d: expected finite clip bounds lo <= hi, found [" +
                                std::to_string(activation.lo) + ", " +
                                std::to_string(activation.hi) + "]");
}

nlohmann::json FusedConv2d::props() const {
  nlohmann::json j = m_params.toJson();
  j["activation"] = activationName(m_activation.kind);
  if (m_activation.kind == cpu::ConvActivation::Clip)
    j["clip"] = {m_activation.lo, m_activation.hi};
  return j;
}

OpPtr FusedConv2d::fromProps(const nlohmann::json& props) {
  if (!props.is_object())
    throw std::invalid_argument("FusedConv2d: expected an object of props, found " + props.dump());
  nlohmann::json conv = props;
  ConvActivationSpec a;
  if (auto it = conv.find("activation"); it != conv.end()) {
    const std::string name = it->is_string() ? it->get<std::string>() : it->dump();
    if (name == "relu")
      a.kind = cpu::ConvActivation::Relu;
    else if (name == "clip")
      a.kind = cpu::ConvActivation::Clip;
    else if (name != "none")
      throw std::invalid_argument(
          "FusedConv2d: expected \"activation\" to be \"none\", \"relu\" or \"clip\", found " +
          it->dump());
    conv.erase(it);
  }
  if (auto it = conv.find("clip"); it != conv.end()) {
    if (a.kind != cpu::ConvActivation::Clip || !it->is_array() || it->size() != 2 ||
        !(*it)[0].is_number() || !(*it)[1].is_number())
      throw std::invalid_argument(
          "FusedConv2d: expected \"clip\": [lo, hi] with \"activation\": \"clip\", found " +
          it->dump());
    a.lo = (*it)[0].get<double>();
    a.hi = (*it)[1].get<double>();
    conv.erase(it);
  } else if (a.kind == cpu::ConvActivation::Clip) {
    throw std::invalid_argument("FusedConv2d: \"activation\": \"clip\" needs \"clip\": [lo, hi]");
  }
  return std::make_shared<FusedConv2d>(Conv2dParams::fromJson(conv, "FusedConv2d"), a);
}

std::vector<TensorType> FusedConv2d::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 3);
  TensorType y = convolvedType(inputs.first(2));
  const TensorType& b = inputs[2]->type();
  const std::int64_t o = y.shape()[1];
  if (b.dtype() != y.dtype() || b.ndim() != 1 ||
      (b.isDimKnown(0) && o != kUnknownDim && b.shape()[0] != o))
    throwInputError(inputs, 2,
                    "a bias of one " + std::string(dtypeName(y.dtype())) +
                        " per output channel (a 1-d tensor of " +
                        (o == kUnknownDim ? std::string("O") : std::to_string(o)) + ")");
  return {y};
}

void FusedConv2d::perform(const Apply& node, std::span<const Tensor* const> inputs,
                          std::span<Tensor* const> outputs) const {
  const Tensor w = inputs[1]->contiguous(), b = inputs[2]->contiguous();
  const cpu::Conv2dGeometry g =
      conv2d_detail::geometry(str(), m_params, inputs[0]->shape(), w.shape());
  if (b.shape() != Shape{g.o})
    throw std::invalid_argument(str() + ": the bias has shape " + shapeToString(b.shape()) +
                                ", expected (" + std::to_string(g.o) + ",)");
  if (inputs[0]->dtype() == DType::Float32 && cpu::dnnlAvailable()) {
    // Note [Channel-last activations] (engine/backends/cpu/dnnl_conv.h).
    cpu::ConvEpilogue e;
    e.bias = b.data<float>();
    e.inputChannelLast = conv2d_detail::isChannelLast(*inputs[0]);
    e.outputChannelLast = true;
    const Tensor x = e.inputChannelLast ? *inputs[0] : inputs[0]->contiguous();
    Tensor& y = conv2d_detail::channelLastOutput(outputs[0], x.dtype(), {g.n, g.o, g.oh, g.ow});
    const conv2d_detail::FilterOwner f = conv2d_detail::filterOwner(node, 1, *inputs[1]);
    if (cpu::dnnlConv2dForward(g, x.data<float>(), w.data<float>(), e, y.data<float>(), f.owner,
                               f.version)) {
      applyActivation(y, m_activation);
      return;
    }
  }
  const Tensor x = inputs[0]->contiguous();
  Tensor& y = reuseOrAllocate(outputs[0], x.dtype(), Shape{g.n, g.o, g.oh, g.ow});
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::conv2dForward<T>(g, x.data<T>(), w.data<T>(), y.data<T>());
    addBias<T>(y.data<T>(), b.data<T>(), g.n, g.o, g.oh * g.ow);
  });
  applyActivation(y, m_activation);
}

std::vector<ShapeExpr> FusedConv2d::inferShape(const Apply&,
                                               std::span<const ShapeExpr> inputShapes) const {
  return {conv2d_detail::outputShape(m_params, inputShapes)};
}

std::vector<Grad> FusedConv2d::pullback(const Apply&, std::span<const VarPtr>) const {
  const std::string why =
      "FusedConv2d is made by fast_run after differentiation; take the gradient of the original "
      "graph (Conv2d, the bias add and the activation)";
  return {Grad::undefined(why), Grad::undefined(why), Grad::undefined(why)};
}

VarPtr fusedConv2d(const VarPtr& x, const VarPtr& w, const VarPtr& bias, Conv2dParams params,
                   ConvActivationSpec activation, std::source_location site) {
  return std::make_shared<FusedConv2d>(params, activation)->makeNode({x, w, bias}, site)->output(0);
}

}  // namespace tscope::engine
