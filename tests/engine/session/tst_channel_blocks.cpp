// Channel-blocked chains of convolutions (Note [Channel blocks] in
// engine/ops/nn/channel_blocks.h): the layout ops' values and round trip, BlockedConv2d against
// FusedConv2d (oneDNN's blocked kernels in float32, the unblock-convolve-block fallback in
// float64), NaN kept, what fast_run's channel_blocks rewrite turns into chains and what it must
// leave alone, the saved .tsg and the GPU placement, which keep or drop the blocks.
#include "engine/backends/cpu/dnnl_conv.h"
#include "engine/compile/function.h"
#include "engine/compile/kernel.h"
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/channel_blocks.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/session/optimize_graph.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;
using namespace tscope::engine::session;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

Conv2dParams conv(std::int64_t stride, std::int64_t pad, std::int64_t groups = 1) {
  Conv2dParams p;
  p.stride = {stride, stride};
  p.padding = {pad, pad};
  p.groups = groups;
  return p;
}

VarPtr perChannel(const VarPtr& b) {
  return dimshuffle(b, {DimShuffle::kNewAxis, 0, DimShuffle::kNewAxis, DimShuffle::kNewAxis});
}

// relu(conv(v, w) + b) with random constant filters (O, C/groups, k, k).
VarPtr convRelu(const VarPtr& v, std::int64_t o, std::int64_t k, Conv2dParams p, std::uint64_t seed,
                const VarPtr& residual = nullptr) {
  const DType dt = v->type().dtype();
  const std::int64_t c = v->type().shape()[1] / p.groups;
  VarPtr y = add(conv2d(v, constant(randomTensor(dt, {o, c, k, k}, seed)), p),
                 perChannel(constant(randomTensor(dt, {o}, seed + 1))));
  if (residual) y = add(y, residual);
  return relu(y);
}

Function compileIn(const std::vector<VarPtr>& in, const std::vector<VarPtr>& out, Mode mode) {
  CompileOptions options;
  options.mode = mode;
  return compile(in, out, {}, options);
}

std::size_t countOps(const FunctionGraph& g, const std::string& name) {
  std::size_t n = 0;
  for (const Apply* node : g.nodes()) n += node->op().name() == name;
  return n;
}

// The blocks setting on for one test, as on a CPU below AVX-512, and back after.
struct BlocksOn {
  bool before = cpu::dnnlBlockedConvolutions();
  explicit BlocksOn(bool on = true) { cpu::setDnnlBlockedConvolutions(on); }
  ~BlocksOn() { cpu::setDnnlBlockedConvolutions(before); }
};

}  // namespace

class TestChannelBlocks : public QObject {
  Q_OBJECT

 private slots:
  void testLayoutOps() {
    const Shape s{2, 16, 3, 5};
    const Tensor x = randomTensor(DType::Float32, s, 1);
    const VarPtr xv = Variable::create(TensorType(DType::Float32, s), "x");
    const VarPtr blocks = toChannelBlocks(xv);
    QCOMPARE(blocks->type().shape(), (Shape{2, 2, 3, 5, 8}));
    Function f = compileIn({xv}, {blocks, fromChannelBlocks(blocks)}, Mode::None);
    const std::vector<Tensor> out = f({x});
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t c = 0; c < 16; ++c)
        for (std::int64_t h = 0; h < 3; ++h)
          for (std::int64_t w = 0; w < 5; ++w)
            QCOMPARE(out[0].at({n, c / 8, h, w, c % 8}), x.at({n, c, h, w}));
    QVERIFY(out[1].bitwiseEqual(x) || closeTo(out[1], x, 0, 0));
    // A channel-last input (a transposed NHWC buffer) blocks to the same values.
    const Tensor nhwc = x.transpose(std::vector<int>{0, 2, 3, 1}).contiguous();
    const Tensor channelLast = nhwc.transpose(std::vector<int>{0, 3, 1, 2});
    QVERIFY(closeTo(f({channelLast})[0], out[0], 0, 0));
    // The gradient of one is the other.
    const VarPtr cost = sum(fromChannelBlocks(toChannelBlocks(xv)) * xv);
    Function g = compileIn({xv}, {grad(cost, xv)}, Mode::None);
    std::vector<double> twice = x.toDoubles();
    for (double& v : twice) v *= 2;
    QVERIFY(closeTo(g({x})[0], Tensor::fromDoubles(DType::Float32, s, twice), 1e-6, 1e-6));
  }

  void testTypesChecked() {
    const VarPtr six = Variable::create(TensorType(DType::Float32, {1, 6, 4, 4}), "six");
    try {
      toChannelBlocks(six);
      QFAIL("6 channels were blocked");
    } catch (const TypeError& e) {
      QVERIFY2(std::string(e.what()).find("multiple of 8") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(TypeError, fromChannelBlocks(six));
    const VarPtr xb = toChannelBlocks(Variable::create(TensorType(DType::Float32, {1, 8, 4, 4})));
    const VarPtr w6 = constant(randomTensor(DType::Float32, {6, 8, 3, 3}, 2));
    QVERIFY_THROWS_EXCEPTION(
        TypeError, blockedConv2d(xb, w6, constant(randomTensor(DType::Float32, {6}, 3)), nullptr,
                                 conv(1, 1), {}));
  }

  void testMatchesFused_data() {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<int>("c");
    QTest::addColumn<int>("o");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("groups");
    QTest::addColumn<bool>("residual");
    QTest::addColumn<int>("act");
    for (DType d : {DType::Float32, DType::Float64})
      for (int act = 0; act < 3; ++act) {
        const std::string s = std::string(dtypeName(d)) + " act" + std::to_string(act);
        QTest::newRow((s + " 3x3").c_str()) << d << 8 << 16 << 3 << 1 << 1 << false << act;
        QTest::newRow((s + " 3x3 stride2 residual").c_str())
            << d << 16 << 8 << 3 << 2 << 1 << true << act;
        QTest::newRow((s + " 1x1 residual").c_str()) << d << 16 << 16 << 1 << 1 << 1 << true << act;
        QTest::newRow((s + " depthwise").c_str()) << d << 16 << 16 << 3 << 1 << 16 << false << act;
      }
  }

  void testMatchesFused() {
    QFETCH(DType, dtype);
    QFETCH(int, c);
    QFETCH(int, o);
    QFETCH(int, k);
    QFETCH(int, stride);
    QFETCH(int, groups);
    QFETCH(bool, residual);
    QFETCH(int, act);
    ConvActivationSpec a;
    a.kind = static_cast<cpu::ConvActivation>(act);
    if (a.kind == cpu::ConvActivation::Clip) a.lo = -0.25, a.hi = 0.5;
    const Conv2dParams p = conv(stride, k / 2, groups);
    const Shape xs{2, c, 9, 7};
    const VarPtr x = Variable::create(TensorType(dtype, xs), "x");
    const VarPtr w = constant(randomTensor(dtype, {o, c / groups, k, k}, 4));
    const VarPtr b = constant(randomTensor(dtype, {o}, 5));
    const std::int64_t oh = (9 + 2 * (k / 2) - k) / stride + 1,
                       ow = (7 + 2 * (k / 2) - k) / stride + 1;
    const VarPtr r = Variable::create(TensorType(dtype, {2, o, oh, ow}), "r");
    const VarPtr fused =
        residual ? fusedConv2dResidual(x, w, b, r, p, a) : fusedConv2d(x, w, b, p, a);
    const VarPtr blocked = fromChannelBlocks(
        blockedConv2d(toChannelBlocks(x), w, b, residual ? toChannelBlocks(r) : nullptr, p, a));
    Function f = compileIn({x, r}, {fused, blocked}, Mode::None);
    const Tensor xv = randomTensor(dtype, xs, 6), rv = randomTensor(dtype, {2, o, oh, ow}, 7);
    for (int call = 0; call < 2; ++call) {  // the second call reuses buffers and packed filters
      const std::vector<Tensor> out = f({xv, rv});
      const double tol = dtype == DType::Float32 ? 2e-4 : 1e-12;
      QVERIFY(closeTo(out[1], out[0], tol, tol));
    }
    QVERIFY(rv.bitwiseEqual(randomTensor(dtype, {2, o, oh, ow}, 7)));  // the caller's r kept
  }

  void testNanKept() {
    std::vector<double> v = randomTensor(DType::Float32, {1, 8, 6, 6}, 8).toDoubles();
    v[3 * 36 + 2 * 6 + 3] = std::nan("");  // channel 3, pixel (2, 3)
    const VarPtr x = Variable::create(TensorType(DType::Float32, {1, 8, 6, 6}), "x");
    ConvActivationSpec a{cpu::ConvActivation::Relu};
    const VarPtr y = fromChannelBlocks(
        blockedConv2d(toChannelBlocks(x), constant(randomTensor(DType::Float32, {8, 8, 3, 3}, 9)),
                      constant(randomTensor(DType::Float32, {8}, 10)), nullptr, conv(1, 1), a));
    Function f = compileIn({x}, {y}, Mode::None);
    const Tensor out = f({Tensor::fromDoubles(DType::Float32, {1, 8, 6, 6}, v)})[0];
    for (std::int64_t o = 0; o < 8; ++o) {
      QVERIFY2(std::isnan(out.at({0, o, 1, 2})) && std::isnan(out.at({0, o, 3, 4})),
               "relu lost the NaN");
      QVERIFY(!std::isnan(out.at({0, o, 5, 0})));
    }
  }

  // A ResNet stage: stem, a basic block with its identity, a strided block with a 1x1 shortcut;
  // fast_run runs it as one chain: one reorder in, one out.
  void testRewriteMakesChains() {
    if (!cpu::dnnlAvailable()) QSKIP("this build has no oneDNN: fast_run keeps plain tensors");
    BlocksOn on;
    const Shape xs{1, 8, 12, 12};
    const VarPtr x = Variable::create(TensorType(DType::Float32, xs), "x");
    const VarPtr a = convRelu(x, 16, 3, conv(1, 1), 11);
    const VarPtr b = convRelu(convRelu(a, 16, 3, conv(1, 1), 13), 16, 3, conv(1, 1), 15, a);
    const VarPtr shortcut =
        add(conv2d(b, constant(randomTensor(DType::Float32, {32, 16, 1, 1}, 17)), conv(2, 0)),
            perChannel(constant(randomTensor(DType::Float32, {32}, 18))));
    const VarPtr y = convRelu(convRelu(b, 32, 3, conv(2, 1), 19), 32, 3, conv(1, 1), 21, shortcut);
    Function fast = compileIn({x}, {y}, Mode::FastRun);
    Function plain = compileIn({x}, {y}, Mode::None);
    const FunctionGraph& g = fast.graph();
    QCOMPARE(countOps(g, "BlockedConv2d"), std::size_t(6));
    QCOMPARE(countOps(g, "FusedConv2d"), std::size_t(0));
    QCOMPARE(countOps(g, "ToChannelBlocks"), std::size_t(1));
    QCOMPARE(countOps(g, "FromChannelBlocks"), std::size_t(1));
    std::size_t inplace = 0;
    for (const Apply* node : g.nodes())
      if (const auto* op = dynamic_cast<const BlockedConv2d*>(&node->op()))
        inplace += op->inplace();
    QCOMPARE(inplace, std::size_t(2));  // both residual sums land in their residual's blocks
    const Tensor xv = randomTensor(DType::Float32, xs, 23);
    const Tensor expected = plain({xv})[0];
    for (int call = 0; call < 2; ++call) QVERIFY(closeTo(fast({xv})[0], expected, 2e-4, 2e-4));
  }

  // MobileNetV2's inverted residual: 1x1 expand, depthwise, 1x1 project + identity. The chain
  // starts at the depthwise convolution (only convolutions read it); the expansion, whose input
  // is plain, stays a FusedConv2d.
  void testDepthwiseStartsChain() {
    if (!cpu::dnnlAvailable()) QSKIP("this build has no oneDNN: fast_run keeps plain tensors");
    BlocksOn on;
    const Shape xs{1, 8, 10, 10};
    const VarPtr x = Variable::create(TensorType(DType::Float32, xs), "x");
    const VarPtr e = convRelu(x, 32, 1, conv(1, 0), 31);
    const VarPtr d = convRelu(e, 32, 3, conv(1, 1, 32), 33);
    const VarPtr y = add(add(conv2d(d, constant(randomTensor(DType::Float32, {8, 32, 1, 1}, 35))),
                             perChannel(constant(randomTensor(DType::Float32, {8}, 36)))),
                         x);
    Function fast = compileIn({x}, {y}, Mode::FastRun);
    Function plain = compileIn({x}, {y}, Mode::None);
    QCOMPARE(countOps(fast.graph(), "BlockedConv2d"), std::size_t(2));
    QCOMPARE(countOps(fast.graph(), "FusedConv2d"), std::size_t(1));
    const Tensor xv = randomTensor(DType::Float32, xs, 37);
    QVERIFY(closeTo(fast({xv})[0], plain({xv})[0], 2e-4, 2e-4));
  }

  void testRewriteLeavesAlone() {
    if (!cpu::dnnlAvailable()) QSKIP("this build has no oneDNN: fast_run keeps plain tensors");
    auto blockedIn = [](const VarPtr& x, const VarPtr& y) {
      Function f = compileIn({x}, {y}, Mode::FastRun);
      return countOps(f.graph(), "BlockedConv2d");
    };
    BlocksOn on;
    const VarPtr x8 = Variable::create(TensorType(DType::Float32, {1, 8, 6, 6}), "x");
    // A lone 1x1 convolution, and a depthwise one read by a reduction: no chain pays.
    QCOMPARE(blockedIn(x8, convRelu(x8, 16, 1, conv(1, 0), 41)), std::size_t(0));
    QCOMPARE(blockedIn(x8, sum(convRelu(x8, 8, 3, conv(1, 1, 8), 43))), std::size_t(0));
    // Channels not in eights, and float64 (no oneDNN kernel).
    const VarPtr x6 = Variable::create(TensorType(DType::Float32, {1, 6, 6, 6}), "x");
    QCOMPARE(blockedIn(x6, convRelu(x6, 8, 3, conv(1, 1), 45)), std::size_t(0));
    const VarPtr x64 = Variable::create(TensorType(DType::Float64, {1, 8, 6, 6}), "x");
    QCOMPARE(blockedIn(x64, convRelu(x64, 8, 3, conv(1, 1), 47)), std::size_t(0));
    // The same 3x3 chain starts one when the setting is on, not when it is off.
    QCOMPARE(blockedIn(x8, convRelu(x8, 8, 3, conv(1, 1), 49)), std::size_t(1));
    BlocksOn off(false);
    QCOMPARE(blockedIn(x8, convRelu(x8, 8, 3, conv(1, 1), 49)), std::size_t(0));
  }

  // An optimized graph with chains saved to .tsg loads and runs to the same values, and the same
  // graph optimized for a GPU keeps plain tensors (the GPU's kernels take no blocks).
  void testSavedAndPlaced() {
    if (!cpu::dnnlAvailable()) QSKIP("this build has no oneDNN: fast_run keeps plain tensors");
    BlocksOn on;
    const Shape xs{1, 8, 8, 8};
    const VarPtr x = Variable::create(TensorType(DType::Float32, xs), "x");
    const VarPtr y = convRelu(convRelu(x, 16, 3, conv(1, 1), 51), 16, 3, conv(1, 1), 53);
    FunctionGraph original({x}, {y}, FunctionGraph::Ownership::Clone);
    io::TsgDocument doc;
    doc.original = original.clone();
    optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
    QCOMPARE(countOps(*doc.optimized, "BlockedConv2d"), std::size_t(2));
    const io::TsgDocument back = io::readTsg(io::writeTsg(doc));
    QVERIFY(back.optimized);
    QCOMPARE(countOps(*back.optimized, "BlockedConv2d"), std::size_t(2));
    const Tensor xv = randomTensor(DType::Float32, xs, 55);
    Function reloaded =
        compileIn({back.optimized->inputs()[0]}, {back.optimized->outputs()[0]}, Mode::None);
    Function plain = compileIn({x}, {y}, Mode::None);
    QVERIFY(closeTo(reloaded({xv})[0], plain({xv})[0], 2e-4, 2e-4));
    KernelRegistry kernels;
    const OptimizedGraph placed = optimizeGraph(original, RewriteQuery::forMode("fast_run"),
                                                DevicePlacement{Device::Cuda, &kernels, nullptr});
    QCOMPARE(countOps(*placed.graph, "BlockedConv2d"), std::size_t(0));
    QCOMPARE(countOps(*placed.graph, "FusedConv2d"), std::size_t(2));
  }

  // Batch and image size unknown until the call (an ONNX model with dynamic axes): the chain's
  // types and shapes follow each call's.
  void testUnknownSizes() {
    if (!cpu::dnnlAvailable()) QSKIP("this build has no oneDNN: fast_run keeps plain tensors");
    BlocksOn on;
    const VarPtr x = Variable::create(
        TensorType(DType::Float32, {kUnknownDim, 8, kUnknownDim, kUnknownDim}), "x");
    const VarPtr h = convRelu(x, 16, 3, conv(2, 1), 71);
    const VarPtr y = convRelu(h, 16, 3, conv(1, 1), 73, h);
    Function fast = compileIn({x}, {y, sum(y)}, Mode::FastRun);
    Function plain = compileIn({x}, {y, sum(y)}, Mode::None);
    QCOMPARE(countOps(fast.graph(), "BlockedConv2d"), std::size_t(2));
    for (const Shape& s : {Shape{1, 8, 9, 11}, Shape{3, 8, 16, 5}}) {
      const Tensor xv = randomTensor(DType::Float32, s, 75);
      const std::vector<Tensor> got = fast({xv}), want = plain({xv});
      QCOMPARE(got[0].shape(), want[0].shape());
      QVERIFY(closeTo(got[0], want[0], 2e-4, 2e-4));
      QVERIFY(closeTo(got[1], want[1], 1e-3, 1e-3));
    }
  }

  void testCostMatchesFused() {
    const VarPtr x = Variable::create(TensorType(DType::Float32, {1, 16, 14, 14}), "x");
    const VarPtr w = constant(randomTensor(DType::Float32, {32, 16, 3, 3}, 61));
    const VarPtr b = constant(randomTensor(DType::Float32, {32}, 62));
    const VarPtr f = fusedConv2d(x, w, b, conv(2, 1), {});
    const VarPtr xb = toChannelBlocks(x);
    const VarPtr bc = blockedConv2d(xb, w, b, nullptr, conv(2, 1), {});
    const Shape fShapes[] = {{1, 16, 14, 14}, {32, 16, 3, 3}, {32}};
    const Shape bShapes[] = {{1, 2, 14, 14, 8}, {32, 16, 3, 3}, {32}};
    const OpCost fc = f->owner()->op().cost(*f->owner(), fShapes);
    const OpCost bcost = bc->owner()->op().cost(*bc->owner(), bShapes);
    QVERIFY(fc.known && bcost.known);
    QCOMPARE(bcost.flops, fc.flops);
    QCOMPARE(bcost.bytesRead, fc.bytesRead);
    QCOMPARE(bcost.bytesWritten, fc.bytesWritten);
  }
};

TSCOPE_TEST_MAIN(TestChannelBlocks)
#include "tst_channel_blocks.moc"
