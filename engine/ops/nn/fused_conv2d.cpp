#include "engine/ops/nn/fused_conv2d.h"

#include "engine/backends/cpu/parallel.h"
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

// count elements from `data` = act(them) in place with Elemwise's own row kernels (Note [No
// oneDNN activations]).
void applyActivation(void* data, DType dtype, std::int64_t count, const ConvActivationSpec& a) {
  if (a.kind == cpu::ConvActivation::None || count == 0) return;
  const bool relu = a.kind == cpu::ConvActivation::Relu;
  const ElemwiseRowFn fn = elemwiseRowKernel(relu ? ScalarOp::Relu : ScalarOp::Clip, dtype);
  char* out = static_cast<char*>(data);
  const double lo = a.lo, hi = a.hi;
  const float loF = static_cast<float>(lo), hiF = static_cast<float>(hi);
  const bool f32 = dtype == DType::Float32;
  const char* in[3] = {
      out, f32 ? reinterpret_cast<const char*>(&loF) : reinterpret_cast<const char*>(&lo),
      f32 ? reinterpret_cast<const char*>(&hiF) : reinterpret_cast<const char*>(&hi)};
  const std::int64_t strides[3] = {1, 0, 0};
  const auto item = static_cast<std::int64_t>(dtypeSize(dtype));
  // Note [Parallel loops] (engine/backends/cpu/parallel.h).
  cpu::parallelFor(count, cpu::kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
    const char* rows[3] = {out + b * item, in[1], in[2]};
    fn(out + b * item, 1, rows, strides, e - b);
  });
}

}  // namespace

void applyConvActivation(Tensor& y, const ConvActivationSpec& a) {
  applyActivation(y.rawData(), y.dtype(), y.numel(), a);
}

FusedConv2d::FusedConv2d(Conv2dParams params, ConvActivationSpec activation, bool residual,
                         bool inplace)
    : Conv2dFamilyOp(params, "FusedConv2d"),
      m_activation(activation),
      m_residual(residual),
      m_inplace(inplace) {
  if (inplace && !residual)
    throw std::invalid_argument(
        "FusedConv2d: \"inplace\" writes into the residual's buffer; "
        "expected \"residual\": true with it");
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
  if (m_residual) j["residual"] = true;
  if (m_inplace) j["inplace"] = true;
  return j;
}

DestroyMap FusedConv2d::destroyMap() const {
  if (m_inplace) return {{0, {3}}};
  return {};
}

OpPtr FusedConv2d::withInplace() const {
  if (!m_residual) throw std::logic_error("FusedConv2d::withInplace: no residual to write into");
  return std::make_shared<FusedConv2d>(m_params, m_activation, true, true);
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
  bool flags[2] = {false, false};
  const char* flagNames[2] = {"residual", "inplace"};
  for (int k = 0; k < 2; ++k)
    if (auto it = conv.find(flagNames[k]); it != conv.end()) {
      if (!it->is_boolean())
        throw std::invalid_argument(std::string("FusedConv2d: expected \"") + flagNames[k] +
                                    "\" to be true or false, found " + it->dump());
      flags[k] = it->get<bool>();
      conv.erase(it);
    }
  return std::make_shared<FusedConv2d>(Conv2dParams::fromJson(conv, "FusedConv2d"), a, flags[0],
                                       flags[1]);
}

std::vector<TensorType> FusedConv2d::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, m_residual ? 4 : 3);
  TensorType y = convolvedType(inputs.first(2));
  const TensorType& b = inputs[2]->type();
  const std::int64_t o = y.shape()[1];
  if (b.dtype() != y.dtype() || b.ndim() != 1 ||
      (b.isDimKnown(0) && o != kUnknownDim && b.shape()[0] != o))
    throwInputError(inputs, 2,
                    "a bias of one " + std::string(dtypeName(y.dtype())) +
                        " per output channel (a 1-d tensor of " +
                        (o == kUnknownDim ? std::string("O") : std::to_string(o)) + ")");
  if (m_residual) {
    // Exactly the output's type: a residual is added element by element, never broadcast.
    const TensorType& r = inputs[3]->type();
    bool fits = r.dtype() == y.dtype() && r.ndim() == 4;
    for (int d = 0; fits && d < 4; ++d)
      fits = !r.isDimKnown(d) || !y.isDimKnown(d) || r.shape()[d] == y.shape()[d];
    if (!fits)
      throwInputError(inputs, 3,
                      "a residual of the output's type " + y.str() + " (added, not broadcast)");
    // What each side knows of the shape.
    Shape shape = y.shape();
    for (int d = 0; d < 4; ++d)
      if (!y.isDimKnown(d)) shape[d] = r.shape()[d];
    y = TensorType(y.dtype(), shape, y.device());  // placed on a GPU, it stays there
  }
  return {y};
}

void FusedConv2d::perform(const Apply& node, std::span<const Tensor* const> inputs,
                          std::span<Tensor* const> outputs) const {
  const Tensor w = inputs[1]->contiguous(), b = inputs[2]->contiguous();
  const cpu::Conv2dGeometry g =
      conv2d_detail::geometry(*this, m_params, inputs[0]->shape(), w.shape());
  if (b.shape() != Shape{g.o})
    throw std::invalid_argument(str() + ": the bias has shape " + shapeToString(b.shape()) +
                                ", expected (" + std::to_string(g.o) + ",)");
  if (m_residual) return performResidual(node, inputs, outputs, g, w, b);
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
      applyConvActivation(y, m_activation);
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
  applyConvActivation(y, m_activation);
}

// Note [Residual sum] (dnnl_conv.h): y = act(conv(x, w) + b + r). With oneDNN the output starts
// as the residual — r's own buffer when inplace and r is NCHW or channel-last, else a channel-last
// copy of r — and the sum post-op adds the convolution as the kernel writes it; without oneDNN
// (or for float64) the convolution goes to a buffer of its own and r is added after it.
void FusedConv2d::performResidual(const Apply& node, std::span<const Tensor* const> inputs,
                                  std::span<Tensor* const> outputs, const cpu::Conv2dGeometry& g,
                                  const Tensor& w, const Tensor& b) const {
  const Tensor& r = *inputs[3];
  const Shape shape{g.n, g.o, g.oh, g.ow};
  if (r.shape() != shape || r.dtype() != inputs[0]->dtype())
    throw std::invalid_argument(str() + ": the residual is " + std::string(dtypeName(r.dtype())) +
                                " " + shapeToString(r.shape()) + ", expected " +
                                std::string(dtypeName(inputs[0]->dtype())) + " " +
                                shapeToString(shape) + " (the convolution's output)");
  if (inputs[0]->dtype() == DType::Float32 && cpu::dnnlAvailable()) {
    cpu::ConvEpilogue e;
    e.bias = b.data<float>();
    e.sum = true;
    e.inputChannelLast = conv2d_detail::isChannelLast(*inputs[0]);
    const Tensor x = e.inputChannelLast ? *inputs[0] : inputs[0]->contiguous();
    const conv2d_detail::FilterOwner f = conv2d_detail::filterOwner(node, 1, *inputs[1]);
    const bool rChannelLast = conv2d_detail::isChannelLast(r);
    Tensor* y = outputs[0];
    // Never into the buffer the kernel reads (y = conv(h) + h: the inplace pass refuses it, and
    // this holds whatever a later merge made of the inputs).
    if (m_inplace && r.device() == Device::Cpu && (rChannelLast || r.isContiguous()) &&
        !x.sharesStorageWith(r)) {
      *y = r;  // destroyMap {0: [3]}: the sum lands in the residual's buffer
      e.outputChannelLast = rChannelLast;
    } else {
      Tensor& out = conv2d_detail::channelLastOutput(y, DType::Float32, shape);
      out.copyFrom(r);
      e.outputChannelLast = true;
    }
    if (cpu::dnnlConv2dForward(g, x.data<float>(), w.data<float>(), e, y->data<float>(), f.owner,
                               f.version)) {
      applyConvActivation(*y, m_activation);
      return;
    }
  }
  const Tensor x = inputs[0]->contiguous();
  Tensor y = Tensor::empty(x.dtype(), shape);
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::conv2dForward<T>(g, x.data<T>(), w.data<T>(), y.data<T>());
    addBias<T>(y.data<T>(), b.data<T>(), g.n, g.o, g.oh * g.ow);
    const Tensor rc = r.contiguous();
    T* out = y.data<T>();
    const T* add = rc.data<T>();
    for (std::int64_t i = 0, n = y.numel(); i < n; ++i) out[i] += add[i];
  });
  applyConvActivation(y, m_activation);
  if (m_inplace) {
    Tensor into = r;  // destroyMap {0: [3]}
    into.copyFrom(y);
    *outputs[0] = std::move(into);
  } else {
    *outputs[0] = std::move(y);
  }
}

std::vector<ShapeExpr> FusedConv2d::inferShape(const Apply&,
                                               std::span<const ShapeExpr> inputShapes) const {
  return {conv2d_detail::outputShape(m_params, inputShapes)};
}

std::vector<Grad> FusedConv2d::pullback(const Apply&, std::span<const VarPtr>) const {
  const std::string why =
      "FusedConv2d is made by fast_run after differentiation; take the gradient of the original "
      "graph (Conv2d, the bias add and the activation)";
  return std::vector<Grad>(m_residual ? 4 : 3, Grad::undefined(why));
}

VarPtr fusedConv2d(const VarPtr& x, const VarPtr& w, const VarPtr& bias, Conv2dParams params,
                   ConvActivationSpec activation, std::source_location site) {
  return std::make_shared<FusedConv2d>(params, activation)->makeNode({x, w, bias}, site)->output(0);
}

VarPtr fusedConv2dResidual(const VarPtr& x, const VarPtr& w, const VarPtr& bias,
                           const VarPtr& residual, Conv2dParams params,
                           ConvActivationSpec activation, std::source_location site) {
  return std::make_shared<FusedConv2d>(params, activation, true)
      ->makeNode({x, w, bias, residual}, site)
      ->output(0);
}

}  // namespace tscope::engine
