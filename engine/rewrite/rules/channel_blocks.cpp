// channel_blocks (fusion phase, fast_run, CPU only): chains of float32 convolutions run on
// channel-blocked activations (Note [Channel blocks] in engine/ops/nn/channel_blocks.h):
//
//   FusedConv2d(x, w, b[, r])  ->  FromChannelBlocks(BlockedConv2d(xb, w, b[, rb]))
//
// where xb (rb) is the blocked value x (r) came from when x is the FromChannelBlocks of a
// convolution rewritten before it, and ToChannelBlocks(x) otherwise. So within a chain every
// convolution reads its predecessor's blocks, and the FromChannelBlocks nodes that only blocked
// convolutions read fall away; reorders stay at the chain's ends. A chain starts at a
// convolution the blocks pay for even with a reorder on each side (groups 1 and a filter larger
// than 1x1, Note [Blocked direct convolutions] in dnnl_conv.h), or at a depthwise convolution
// whose readers are all convolutions that will continue the chain (MobileNet's depthwise then
// 1x1); 1x1 and depthwise convolutions join a chain but do not start one. Only where oneDNN
// runs them (dnnlAvailable) and the blocks are on (dnnlBlockedConvolutions: by default below
// AVX-512): the rewritten graph is this machine's, like ONNX Runtime's NCHWc transformer.
// compile leaves the rewrite out for a graph placed on a GPU.

#include "engine/ops/nn/channel_blocks.h"

#include "engine/backends/cpu/dnnl_conv.h"
#include "engine/graph/function_graph.h"
#include "engine/rewrite/rewriter.h"

#include <map>

namespace tscope::engine {

GraphRewriterPtr channelBlocksRewriter();

namespace {

const FusedConv2d* blockableConv(const Apply& node) {
  const auto* conv = dynamic_cast<const FusedConv2d*>(&node.op());
  if (!conv || node.input(0)->type().dtype() != DType::Float32) return nullptr;
  return conv2d_detail::blockable(node.input(0)->type(), node.input(1)->type(), conv->params())
             ? conv
             : nullptr;
}

bool startsChain(const FunctionGraph& fg, Apply& node, const FusedConv2d& conv) {
  const TensorType& w = node.input(1)->type();
  if (conv.params().groups == 1)
    return (w.isDimKnown(2) && w.shape()[2] > 1) || (w.isDimKnown(3) && w.shape()[3] > 1);
  const VarPtr& out = node.output(0);
  if (isGraphOutput(fg, *out) || nodeClientCount(fg, *out) == 0) return false;
  for (const Client& c : fg.clients(*out))
    if (c.isOutput() || c.index != 0 || !blockableConv(*c.node)) return false;
  return true;
}

std::size_t channelBlocks(RewriteContext& ctx) {
  if (!cpu::dnnlAvailable() || !cpu::dnnlBlockedConvolutions()) return 0;
  FunctionGraph& fg = ctx.graph();
  std::vector<VarPtr> convOutputs;
  for (Apply* node : fg.toposort())
    if (blockableConv(*node)) convOutputs.push_back(node->output(0));
  // A rewritten convolution's FromChannelBlocks output -> the blocks it unblocks (both held, so
  // no address is reused while the map names it).
  std::map<const Variable*, std::pair<VarPtr, VarPtr>> blocksOf;
  auto blocked = [&](const VarPtr& v) -> VarPtr {
    const auto it = blocksOf.find(v.get());
    return it == blocksOf.end() ? nullptr : it->second.second;
  };
  // One ToChannelBlocks per plain value: a convolution whose input is also its residual then
  // reads one variable twice, which the inplace pass sees (two equal nodes merged only after it,
  // in final_merge, would let the sum overwrite the input the kernel still reads).
  std::map<const Variable*, std::pair<VarPtr, VarPtr>> toBlocks;
  auto blocksFor = [&](const VarPtr& v) -> VarPtr {
    if (VarPtr b = blocked(v)) return b;
    auto it = toBlocks.find(v.get());
    if (it == toBlocks.end())
      it = toBlocks.emplace(v.get(), std::make_pair(v, toChannelBlocks(v))).first;
    return it->second.second;
  };
  std::size_t changes = 0;
  for (const VarPtr& out : convOutputs) {
    if (!fg.contains(*out) || !out->owner()) continue;
    Apply& node = *out->owner();
    const FusedConv2d* conv = blockableConv(node);
    if (!conv) continue;
    VarPtr xb = blocked(node.input(0));
    if (!xb && !startsChain(fg, node, *conv)) continue;
    xb = blocksFor(node.input(0));
    const VarPtr rb = conv->residual() ? blocksFor(node.input(3)) : nullptr;
    const VarPtr yb =
        blockedConv2d(xb, node.input(1), node.input(2), rb, conv->params(), conv->activation());
    const VarPtr y = fromChannelBlocks(yb);
    if (!ctx.replace({{out, y}}, "channel_blocks")) continue;
    blocksOf.emplace(y.get(), std::make_pair(y, yb));
    ++changes;
  }
  return changes;
}

}  // namespace

GraphRewriterPtr channelBlocksRewriter() {
  return graphRewriter("channel_blocks", channelBlocks);
}

}  // namespace tscope::engine
