#include "engine/ops/nn/channel_blocks.h"

#include "engine/backends/cpu/parallel.h"
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/cost_common.h"
#include "engine/ops/nn/nn_common.h"
#include "engine/tensor/tensor.h"

#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>

namespace tscope::engine {

namespace {

constexpr std::int64_t B = kChannelBlock;

bool known(std::int64_t d) {
  return d != kUnknownDim;
}

std::int64_t blocksOf(std::int64_t c) {
  return known(c) ? c / B : kUnknownDim;
}

// Copies between an (N, C, H, W) tensor of any strides and the contiguous (N, C/8, H, W, 8) one,
// element by element or, where the 8 channels of a block are adjacent in the plain tensor
// (channel-last), 8 at a time. plain gives the shape and strides, base its first element.
void copyBlocks(const Tensor& plain, char* base, char* blocked, bool toBlocks) {
  const Shape& s = plain.shape();
  const std::int64_t c = s[1], h = s[2], w = s[3];
  const std::size_t item = plain.itemSize();
  const Strides& st = plain.strides();  // in elements
  const bool adjacent = st[1] == 1;
  // Rows (n, block, y) of W x 8 elements, split over the intra-op threads (Note [Parallel loops]
  // in engine/backends/cpu/parallel.h).
  const std::int64_t blocks = c / B, rows = s[0] * blocks * h;
  cpu::parallelFor(
      rows, std::max<std::int64_t>(1, cpu::kElementwiseGrain / std::max<std::int64_t>(1, w * B)),
      [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t row = first; row < last; ++row) {
          const std::int64_t in = row / (blocks * h), cb = row / h % blocks, ih = row % h;
          std::size_t k = static_cast<std::size_t>(row * w * B);  // in the blocked tensor
          for (std::int64_t iw = 0; iw < w; ++iw, k += B) {
            const std::int64_t at = in * st[0] + cb * B * st[1] + ih * st[2] + iw * st[3];
            char* p = base + static_cast<std::size_t>(at) * item;
            char* q = blocked + k * item;
            if (adjacent) {
              if (toBlocks)
                std::memcpy(q, p, B * item);
              else
                std::memcpy(p, q, B * item);
              continue;
            }
            for (std::int64_t i = 0; i < B; ++i) {
              char* pi = p + static_cast<std::size_t>(i * st[1]) * item;
              if (toBlocks)
                std::memcpy(q + i * item, pi, item);
              else
                std::memcpy(pi, q + i * item, item);
            }
          }
        }
      },
      1);
}

// out: the output slot (reused when it fits), or null for a new tensor.
Tensor blocksFromPlain(const Tensor& plain, Tensor* out) {
  const Shape& s = plain.shape();
  Tensor local;
  Tensor& y =
      reuseOrAllocate(out ? out : &local, plain.dtype(), Shape{s[0], s[1] / B, s[2], s[3], B});
  copyBlocks(plain, const_cast<char*>(static_cast<const char*>(plain.rawData())),
             static_cast<char*>(y.rawData()), true);
  return y;
}

// The plain (N, C, H, W) tensor of a contiguous blocked one, channel-last in memory.
Tensor plainFromBlocks(const Tensor& blocked, Tensor* out) {
  const Shape& s = blocked.shape();
  const Shape shape{s[0], s[1] * B, s[2], s[3]};
  Tensor local;
  Tensor& y = conv2d_detail::channelLastOutput(out ? out : &local, blocked.dtype(), shape);
  copyBlocks(y, static_cast<char*>(y.rawData()),
             const_cast<char*>(static_cast<const char*>(blocked.rawData())), false);
  return y;
}

void checkBlocked(const Op& op, const Tensor& t, const char* what) {
  if (t.shape().size() != 5 || t.shape()[4] != B)
    throw std::invalid_argument(op.str() + ": " + what + " is " + shapeToString(t.shape()) +
                                ", expected a blocked (N, C/8, H, W, 8) tensor");
}

// A layout change: every element read once and written once.
OpCost layoutCost(const Apply& node, std::span<const Shape> in) {
  auto out = cost::outputShapes(node, in);
  if (!out) return {};
  return cost::movement(node, in, *out);
}

void checkBlockProps(const char* op, const nlohmann::json& props) {
  if (!props.is_object() || props.value("block", nlohmann::json(B)) != nlohmann::json(B))
    throw std::invalid_argument(std::string(op) + ": expected {\"block\": 8}, found " +
                                props.dump());
}

}  // namespace

// --- ToChannelBlocks -----------------------------------------------------------------------------

std::vector<TensorType> ToChannelBlocks::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& x = inputs[0]->type();
  if (x.ndim() != 4 || (x.isDimKnown(1) && x.shape()[1] % B != 0))
    throwInputError(inputs, 0, "an (N, C, H, W) tensor with C a multiple of 8");
  const auto& s = x.shape();
  return {TensorType(x.dtype(), {s[0], blocksOf(s[1]), s[2], s[3], B}, x.device())};
}

void ToChannelBlocks::perform(const Apply&, std::span<const Tensor* const> inputs,
                              std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  if (x.shape().size() != 4 || x.shape()[1] % B != 0)
    throw std::invalid_argument(str() + ": the input is " + shapeToString(x.shape()) +
                                ", expected (N, C, H, W) with C a multiple of 8");
  blocksFromPlain(x, outputs[0]);
}

std::vector<ShapeExpr> ToChannelBlocks::inferShape(const Apply&,
                                                   std::span<const ShapeExpr> s) const {
  return {
      ShapeExpr{s[0][0], nn_detail::shapeFloorDiv(s[0][1], B), s[0][2], s[0][3], constantInt(B)}};
}

std::vector<Grad> ToChannelBlocks::pullback(const Apply&, std::span<const VarPtr> g) const {
  return {Grad(fromChannelBlocks(g[0]))};
}

OpCost ToChannelBlocks::cost(const Apply& node, std::span<const Shape> in) const {
  return layoutCost(node, in);
}

OpPtr ToChannelBlocks::fromProps(const nlohmann::json& props) {
  checkBlockProps("ToChannelBlocks", props);
  return std::make_shared<ToChannelBlocks>();
}

// --- FromChannelBlocks ---------------------------------------------------------------------------

std::vector<TensorType> FromChannelBlocks::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& x = inputs[0]->type();
  if (x.ndim() != 5 || !x.isDimKnown(4) || x.shape()[4] != B)
    throwInputError(inputs, 0, "a blocked (N, C/8, H, W, 8) tensor");
  const auto& s = x.shape();
  return {
      TensorType(x.dtype(), {s[0], known(s[1]) ? s[1] * B : kUnknownDim, s[2], s[3]}, x.device())};
}

void FromChannelBlocks::perform(const Apply&, std::span<const Tensor* const> inputs,
                                std::span<Tensor* const> outputs) const {
  checkBlocked(*this, *inputs[0], "the input");
  plainFromBlocks(inputs[0]->contiguous(), outputs[0]);
}

std::vector<ShapeExpr> FromChannelBlocks::inferShape(const Apply&,
                                                     std::span<const ShapeExpr> s) const {
  return {ShapeExpr{s[0][0], nn_detail::shapeMul(s[0][1], B), s[0][2], s[0][3]}};
}

std::vector<Grad> FromChannelBlocks::pullback(const Apply&, std::span<const VarPtr> g) const {
  return {Grad(toChannelBlocks(g[0]))};
}

OpCost FromChannelBlocks::cost(const Apply& node, std::span<const Shape> in) const {
  return layoutCost(node, in);
}

OpPtr FromChannelBlocks::fromProps(const nlohmann::json& props) {
  checkBlockProps("FromChannelBlocks", props);
  return std::make_shared<FromChannelBlocks>();
}

// --- BlockedConv2d -------------------------------------------------------------------------------

bool conv2d_detail::blockable(const TensorType& x, const TensorType& w, const Conv2dParams& p) {
  if (!nn_detail::isKernelFloat(x.dtype()) || x.ndim() != 4 || w.ndim() != 4) return false;
  if (!x.isDimKnown(1) || !w.isDimKnown(0) || !w.isDimKnown(1)) return false;
  const std::int64_t c = x.shape()[1], o = w.shape()[0];
  if (c % B != 0 || o % B != 0) return false;
  return p.groups == 1 || (p.groups == c && o == c && w.shape()[1] == 1);
}

BlockedConv2d::BlockedConv2d(Conv2dParams params, ConvActivationSpec activation, bool residual,
                             bool inplace)
    : Conv2dFamilyOp(params, "BlockedConv2d"),
      m_activation(activation),
      m_residual(residual),
      m_inplace(inplace) {
  // FusedConv2d checks the same props.
  FusedConv2d check(params, activation, residual, inplace);
}

nlohmann::json BlockedConv2d::props() const {
  nlohmann::json j = FusedConv2d(m_params, m_activation, m_residual, m_inplace).props();
  j["block"] = B;
  return j;
}

DestroyMap BlockedConv2d::destroyMap() const {
  if (m_inplace) return {{0, {3}}};
  return {};
}

OpPtr BlockedConv2d::withInplace() const {
  if (!m_residual) throw std::logic_error("BlockedConv2d::withInplace: no residual to write into");
  return std::make_shared<BlockedConv2d>(m_params, m_activation, true, true);
}

OpPtr BlockedConv2d::fromProps(const nlohmann::json& props) {
  if (!props.is_object())
    throw std::invalid_argument("BlockedConv2d: expected an object of props, found " +
                                props.dump());
  nlohmann::json fused = props;
  if (auto it = fused.find("block"); it != fused.end()) {
    if (*it != nlohmann::json(B))
      throw std::invalid_argument("BlockedConv2d: expected \"block\": 8, found " + it->dump());
    fused.erase(it);
  }
  const OpPtr op = FusedConv2d::fromProps(fused);
  const auto& f = static_cast<const FusedConv2d&>(*op);
  return std::make_shared<BlockedConv2d>(f.params(), f.activation(), f.residual(), f.inplace());
}

std::vector<TensorType> BlockedConv2d::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, m_residual ? 4 : 3);
  const TensorType& x = inputs[0]->type();
  if (x.ndim() != 5 || !x.isDimKnown(4) || x.shape()[4] != B ||
      !nn_detail::isKernelFloat(x.dtype()))
    throwInputError(inputs, 0, "a blocked (N, C/8, H, W, 8) float32 or float64 tensor");
  const auto& xs = x.shape();
  const TensorType plain(x.dtype(), {xs[0], known(xs[1]) ? xs[1] * B : kUnknownDim, xs[2], xs[3]});
  const TensorType& w = inputs[1]->type();
  if (w.dtype() != x.dtype() || !conv2d_detail::blockable(plain, w, m_params))
    throwInputError(inputs, 1,
                    "filters (O, C/groups, KH, KW) of the input's dtype with O a multiple of 8 and "
                    "groups 1 or C (depthwise), for input 0 of type " +
                        x.str());
  const auto& ws = w.shape();
  auto outSize = [&](std::int64_t in, std::int64_t k, int axis) {
    if (!known(in) || !known(k)) return kUnknownDim;
    return cpu::convOutputSize(in, k, m_params.stride[axis], m_params.padding[axis],
                               m_params.dilation[axis]);
  };
  const std::int64_t oh = outSize(xs[2], ws[2], 0), ow = outSize(xs[3], ws[3], 1);
  if (oh == 0 || ow == 0)
    throwInputError(inputs, 1, "filters no larger than the padded input (after dilation)");
  const TensorType y(x.dtype(), {xs[0], ws[0] / B, oh, ow, B}, x.device());
  const TensorType& b = inputs[2]->type();
  if (b.dtype() != y.dtype() || b.ndim() != 1 || (b.isDimKnown(0) && b.shape()[0] != ws[0]))
    throwInputError(
        inputs, 2, "a bias of one value per output channel (" + std::to_string(ws[0]) + " values)");
  if (m_residual) {
    const TensorType& r = inputs[3]->type();
    bool fits = r.dtype() == y.dtype() && r.ndim() == 5;
    for (int d = 0; fits && d < 5; ++d)
      fits = !r.isDimKnown(d) || !y.isDimKnown(d) || r.shape()[d] == y.shape()[d];
    if (!fits) throwInputError(inputs, 3, "a blocked residual of the output's type " + y.str());
  }
  return {y};
}

void BlockedConv2d::perform(const Apply& node, std::span<const Tensor* const> inputs,
                            std::span<Tensor* const> outputs) const {
  checkBlocked(*this, *inputs[0], "the input");
  const Tensor x = inputs[0]->contiguous();
  const Tensor w = inputs[1]->contiguous(), b = inputs[2]->contiguous();
  const Shape& xs = x.shape();
  const cpu::Conv2dGeometry g =
      conv2d_detail::geometry(*this, m_params, Shape{xs[0], xs[1] * B, xs[2], xs[3]}, w.shape());
  if (g.o % B != 0 || b.shape() != Shape{g.o})
    throw std::invalid_argument(str() + ": filters " + shapeToString(w.shape()) + " and bias " +
                                shapeToString(b.shape()) +
                                " do not fit blocked output channels (a multiple of 8)");
  const Shape outShape{g.n, g.o / B, g.oh, g.ow, B};
  if (m_residual) {
    checkBlocked(*this, *inputs[3], "the residual");
    if (inputs[3]->shape() != outShape || inputs[3]->dtype() != x.dtype())
      throw std::invalid_argument(str() + ": the residual is " + shapeToString(inputs[3]->shape()) +
                                  ", expected " + shapeToString(outShape) +
                                  " (the convolution's output)");
  }
  if (x.dtype() == DType::Float32 && cpu::dnnlAvailable()) {
    cpu::ConvEpilogue e;
    e.bias = b.data<float>();
    e.blocked = true;
    e.sum = m_residual;
    Tensor* y = outputs[0];
    // Never into the buffer the kernel reads (as FusedConv2d).
    if (m_residual && m_inplace && inputs[3]->isContiguous() && !x.sharesStorageWith(*inputs[3]) &&
        inputs[3]->device() == Device::Cpu) {
      *y = *inputs[3];  // destroyMap {0: [3]}: the sum lands in the residual's buffer
    } else {
      Tensor& out = reuseOrAllocate(y, x.dtype(), outShape);
      if (m_residual) out.copyFrom(*inputs[3]);
    }
    const conv2d_detail::FilterOwner f = conv2d_detail::filterOwner(node, 1, *inputs[1]);
    if (cpu::dnnlConv2dForward(g, x.data<float>(), w.data<float>(), e, y->data<float>(), f.owner,
                               f.version)) {
      applyConvActivation(*y, m_activation);
      return;
    }
  }
  // Without oneDNN, or float64: FusedConv2d on the plain tensors, blocked afterwards.
  const Tensor xPlain = plainFromBlocks(x, nullptr);
  Tensor rPlain, yPlain;
  std::vector<const Tensor*> in{&xPlain, inputs[1], inputs[2]};
  if (m_residual) {
    rPlain = plainFromBlocks(inputs[3]->contiguous(), nullptr);
    in.push_back(&rPlain);
  }
  Tensor* out[] = {&yPlain};
  FusedConv2d(m_params, m_activation, m_residual, false).perform(node, in, out);
  if (m_inplace && inputs[3]->isContiguous()) {
    Tensor into = *inputs[3];  // destroyMap {0: [3]}
    copyBlocks(yPlain, static_cast<char*>(yPlain.rawData()), static_cast<char*>(into.rawData()),
               true);
    *outputs[0] = std::move(into);
  } else {
    blocksFromPlain(yPlain, outputs[0]);
  }
}

std::vector<ShapeExpr> BlockedConv2d::inferShape(const Apply&, std::span<const ShapeExpr> s) const {
  const ShapeExpr x{s[0][0], nn_detail::shapeMul(s[0][1], B), s[0][2], s[0][3]};
  const ShapeExpr plain[] = {x, s[1]};
  const ShapeExpr y = conv2d_detail::outputShape(m_params, plain);
  return {ShapeExpr{y[0], nn_detail::shapeFloorDiv(y[1], B), y[2], y[3], constantInt(B)}};
}

std::vector<Grad> BlockedConv2d::pullback(const Apply&, std::span<const VarPtr>) const {
  const std::string why =
      "BlockedConv2d is made by fast_run after differentiation; take the gradient of the original "
      "graph (Conv2d, the bias add and the activation)";
  return std::vector<Grad>(m_residual ? 4 : 3, Grad::undefined(why));
}

// The convolution, plus the bias, the activation and the residual per output element.
OpCost BlockedConv2d::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape& x = in[0];
  const Shape& w = in[1];
  const std::int64_t oh = cpu::convOutputSize(x[2], w[2], m_params.stride[0], m_params.padding[0],
                                              m_params.dilation[0]);
  const std::int64_t ow = cpu::convOutputSize(x[3], w[3], m_params.stride[1], m_params.padding[1],
                                              m_params.dilation[1]);
  const Shape outs[] = {Shape{x[0], w[0] / B, oh, ow, B}};
  OpCost c = cost::movement(node, in, outs);
  const double outputs = static_cast<double>(x[0] * w[0] * oh * ow);
  c.flops = 2 * outputs * static_cast<double>(w[1] * w[2] * w[3]) + (m_residual ? 3 : 2) * outputs;
  return c;
}

VarPtr toChannelBlocks(const VarPtr& x, std::source_location site) {
  return std::make_shared<ToChannelBlocks>()->makeNode({x}, site)->output(0);
}

VarPtr fromChannelBlocks(const VarPtr& x, std::source_location site) {
  return std::make_shared<FromChannelBlocks>()->makeNode({x}, site)->output(0);
}

VarPtr blockedConv2d(const VarPtr& xb, const VarPtr& w, const VarPtr& bias, const VarPtr& residual,
                     Conv2dParams params, ConvActivationSpec activation,
                     std::source_location site) {
  std::vector<VarPtr> in{xb, w, bias};
  if (residual) in.push_back(residual);
  return std::make_shared<BlockedConv2d>(params, activation, residual != nullptr)
      ->makeNode(in, site)
      ->output(0);
}

std::unique_ptr<FunctionGraph> withoutChannelBlocks(const FunctionGraph& graph) {
  bool blocked = false;
  for (const Apply* node : graph.nodes())
    blocked = blocked || dynamic_cast<const FromChannelBlocks*>(&node->op());
  if (!blocked) return nullptr;
  std::unique_ptr<FunctionGraph> g = graph.clone();
  std::map<const Variable*, VarPtr> plainOf;  // the graph's variables stay alive meanwhile
  std::function<VarPtr(const VarPtr&)> plain = [&](const VarPtr& v) -> VarPtr {
    if (auto it = plainOf.find(v.get()); it != plainOf.end()) return it->second;
    Apply* owner = v->owner();
    VarPtr p;
    if (owner && dynamic_cast<const ToChannelBlocks*>(&owner->op())) {
      p = owner->input(0);
    } else if (const auto* conv =
                   owner ? dynamic_cast<const BlockedConv2d*>(&owner->op()) : nullptr) {
      p = conv->residual()
              ? fusedConv2dResidual(plain(owner->input(0)), owner->input(1), owner->input(2),
                                    plain(owner->input(3)), conv->params(), conv->activation())
              : fusedConv2d(plain(owner->input(0)), owner->input(1), owner->input(2),
                            conv->params(), conv->activation());
      // The convolution stays where the user's scopes put it (Note [Rewritten nodes keep their
      // scope] in engine/rewrite/rewriter.cpp).
      p->owner()->setScope(owner->scope());
      p->owner()->outputRef(0).setScope(owner->output(0)->scope());
    } else {
      p = fromChannelBlocks(v);  // blocks from elsewhere: unblocked as they are
    }
    plainOf.emplace(v.get(), p);
    return p;
  };
  std::vector<std::pair<VarPtr, VarPtr>> pairs;
  for (Apply* node : g->toposort())
    if (dynamic_cast<const FromChannelBlocks*>(&node->op()))
      pairs.emplace_back(node->output(0), plain(node->input(0)));
  g->replaceAll(pairs, "without_channel_blocks");
  return g;
}

}  // namespace tscope::engine
