#pragma once
// Float32 2-d convolution through oneDNN (Debian's libdnnl), when the build found it
// (TSCOPE_HAVE_DNNL): direct, depthwise and 1x1 kernels JIT-compiled for the instruction set of
// the CPU it runs on (AVX2 + FMA, AVX-512), with the bias added as the kernel writes its output.
// Conv2d::perform calls dnnlConv2dForward first and falls back to conv2dForward (im2col + GEMM,
// engine/backends/cpu/conv.h) when it returns false.
//
//   cpu::ConvEpilogue e;                      // y = conv(x, w) + b
//   e.bias = b;
//   if (!cpu::dnnlConv2dForward(g, x, w, e, y, owner, version)) cpu::conv2dForward(g, x, w, y);
//
// Note [No oneDNN activations]: oneDNN's relu and clip post-ops turn a NaN into 0 (measured with
// 2.6.3; so do clip_v2, bounded_relu and the binary max/min post-ops against a zero or a bound,
// re-measured on brgconv_1x1:avx512_core), which would hide from NanGuard the NaN a model makes. So
// activations are not oneDNN's: FusedConv2d applies them afterwards with the elementwise row
// kernels, exactly as Elemwise{relu} and Elemwise{clip} do (NaN kept), in one pass over the output
// while it is still in cache.
//
// Note [Packed filters]: oneDNN's fast kernels read the filters in a blocked layout of their own;
// packing costs about as much as reading every weight once (1.4 ms for ResNet-18's 512x512x3x3,
// as long as the convolution itself). So the packed copy is kept, keyed by the filters' address
// and geometry and checked against their owner's lifetime (a weak reference to the Storage, so a
// freed tensor whose address is reused is packed again) and a version: 0 for a constant of the
// graph, which never changes; sharedValueEpoch() for a shared variable
// (engine/graph/shared_epoch.h), which every update moves, so a training step repacks and an
// inference loop never does. Without an owner (a computed value) the filters are packed on every
// call.

#include "engine/backends/cpu/conv.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tscope::engine::cpu {

// What the kernel applies to each output element after the convolution (y = y + bias[o]), and the
// layouts of x and y: NCHW (contiguous), or channel-last (Note [Channel-last activations]).
struct ConvEpilogue {
  const float* bias = nullptr;  // O values, or null
  bool inputChannelLast = false;
  bool outputChannelLast = false;
  // Note [Residual sum]: y += conv(x, w) (+ bias) instead of y = ...: y holds a residual on entry
  // (a ResNet block's identity), which oneDNN's sum post-op adds as the kernel writes each output
  // element, saving the separate add's pass over three tensors. An addition, so a NaN stays a NaN
  // (unlike oneDNN's activations, Note [No oneDNN activations]).
  bool sum = false;
  // x and y (and y's residual) are channel-blocked, oneDNN's nChw8c: contiguous (N, C/8, H, W, 8)
  // (Note [Channel blocks] in engine/ops/nn/channel_blocks.h); C and O multiples of 8. The
  // channel-last flags are then ignored.
  bool blocked = false;
};

// True when this build has oneDNN.
bool dnnlAvailable();
// "oneDNN 2.6.3 (brgconv:avx512_core, ...)" or "not built with oneDNN"; a kernel run on
// blocked activations (Note [Blocked direct convolutions]) is listed as "jit:avx2 nChw8c".
std::string dnnlDescription();

// Note [Channel-last activations]: oneDNN's fast kernels read and write channel-last (NHWC)
// activations. An NCHW input is reordered into a kept scratch buffer first (and an NCHW output
// back), two passes over the activations that cost as much as a small convolution; so Conv2d
// and FusedConv2d write their output channel-last (a tensor of logical shape (N, O, OH, OW) with
// strides (OH*OW*O, 1, OW*O, O)), elementwise ops in place keep that layout, and the next
// convolution reads it with no reorder. Ops that need NCHW make their contiguous copy as usual.
//
// y (N, O, OH, OW) = epilogue(conv(x, w)), float32, OIHW filters contiguous; x and y NCHW or
// channel-last as the epilogue says. Returns false (and
// touches nothing) when oneDNN is not in the build; throws std::runtime_error naming the geometry
// when oneDNN refuses it. weightsOwner: Note [Packed filters].
bool dnnlConv2dForward(const Conv2dGeometry& g, const float* x, const float* w,
                       const ConvEpilogue& epilogue, float* y,
                       const std::shared_ptr<const void>& weightsOwner,
                       std::uint64_t weightsVersion = 0);

// Note [Blocked direct convolutions]: on a CPU without AVX-512, oneDNN 2.6's direct kernel
// (jit:avx2) is faster on channel-blocked activations (nChw8c: blocks of 8 channels, each block
// NHWC-like with the 8 channels innermost) than on NHWC, and steadier: measured alone on the AVX2
// development VM (150 alternating calls each, one thread), ResNet-18's 3x3 convolutions took
// 0.71-0.93x the NHWC time by median (0.91-0.98x by fastest call) even counting a reorder of the
// input into the blocks and of the output out of them on every call. The blocks pay only where
// the arithmetic does: depthwise and 1x1 convolutions (MobileNet's) are bound by memory and the
// two reorders cost more than the kernel saves (0.5 -> 0.64 ms for a 144-channel 56x56
// depthwise), so they stay NHWC. So a convolution with groups 1, a filter larger than 1x1 and
// input and output channels that are multiples of 8 runs blocked when this is on, reordering
// from and to the engine's NCHW or channel-last tensors around the kernel. On by default where
// oneDNN's instruction set is below AVX-512 (whose brgconv kernels want NHWC);
// TSCOPE_DNNL_BLOCKED=0 or 1 overrides, and setDnnlBlockedConvolutions (for paired comparisons in
// one process: BENCH_AB_BLOCKED in bench_onnx_resnet) sets it for the calls that follow.
bool dnnlBlockedConvolutions();
void setDnnlBlockedConvolutions(bool on);

// Packed filters currently cached (Note [Packed filters]), for tests.
std::size_t dnnlPackedFilterCount();

}  // namespace tscope::engine::cpu
