// FusedConv2d with a residual (Note [Residual sum] in engine/backends/cpu/dnnl_conv.h):
// act(conv(x, w) + b + r) against the unfused graph for float32 (oneDNN's sum post-op when the
// build has it) and float64, with the residual a graph input (copied), an NCHW value and a
// channel-last convolution output (both written in place), and a residual another node still
// reads; NaN in the residual kept through relu; the ResNet block fast_run makes; the residual's
// type checked; props with the residual and inplace flags; a large pointwise convolution after a
// channel-last one, its clip keeping a NaN.
#include "engine/compile/function.h"
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/channel_blocks.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>
#include <optional>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

Conv2dParams same3x3() {
  Conv2dParams p;
  p.padding = {1, 1};
  return p;
}

VarPtr perChannel(const VarPtr& b) {
  return dimshuffle(b, {DimShuffle::kNewAxis, 0, DimShuffle::kNewAxis, DimShuffle::kNewAxis});
}

Function compileIn(const std::vector<VarPtr>& in, const std::vector<VarPtr>& out, Mode mode) {
  CompileOptions options;
  options.mode = mode;
  return compile(in, out, {}, options);
}

// A fused convolution of the compiled graph: FusedConv2d, or the BlockedConv2d that fast_run
// makes of it in a chain (Note [Channel blocks] in engine/ops/nn/channel_blocks.h).
struct ConvView {
  const FusedConv2d* fused = nullptr;
  const BlockedConv2d* blocked = nullptr;
  const ConvActivationSpec& activation() const {
    return fused ? fused->activation() : blocked->activation();
  }
  bool residual() const { return fused ? fused->residual() : blocked->residual(); }
  bool inplace() const { return fused ? fused->inplace() : blocked->inplace(); }
};

std::vector<ConvView> fusedOps(const Function& f) {
  std::vector<ConvView> found;
  for (const Apply* node : f.graph().nodes()) {
    if (const auto* op = dynamic_cast<const FusedConv2d*>(&node->op())) found.push_back({op});
    if (const auto* op = dynamic_cast<const BlockedConv2d*>(&node->op()))
      found.push_back({nullptr, op});
  }
  return found;
}

std::optional<ConvView> withResidual(const Function& f) {
  for (const ConvView& op : fusedOps(f))
    if (op.residual()) return op;
  return std::nullopt;
}

double tolerance(DType dtype) {
  return dtype == DType::Float32 ? 2e-4 : 1e-10;
}

}  // namespace

class TestFusedConv2dResidual : public QObject {
  Q_OBJECT

 private slots:
  // Where the residual comes from: 0 a graph input (protected: copied into the output), 1 an
  // elementwise value (NCHW, overwritten in place), 2 a convolution's output (channel-last,
  // overwritten in place), 3 a convolution's output another node reads after the block (the
  // destroy handler orders that reader first, or the switch is refused).
  void testMatchesUnfused_data() {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<int>("source");
    QTest::addColumn<bool>("relu");
    QTest::addColumn<bool>("inplace");
    QTest::addColumn<int>("channels");
    // 6 channels run channel-last; 8 blocked where the setting says so (Note [Blocked direct
    // convolutions]): the residual is reordered into the blocks before the kernel adds to it.
    for (int channels : {6, 8})
      for (DType d : {DType::Float32, DType::Float64})
        for (int source = 0; source < 4; ++source)
          for (bool r : {false, true}) {
            const std::string name = std::string(dtypeName(d)) + " source" +
                                     std::to_string(source) + (r ? " relu" : " none") + " c" +
                                     std::to_string(channels);
            QTest::newRow(name.c_str())
                << d << source << r << (source == 1 || source == 2) << channels;
          }
  }

  void testMatchesUnfused() {
    QFETCH(DType, dtype);
    QFETCH(int, source);
    QFETCH(bool, relu);
    QFETCH(bool, inplace);
    QFETCH(int, channels);
    const std::int64_t c = channels;
    const Shape xs{2, c, 7, 5};
    const VarPtr x = Variable::create(TensorType(dtype, xs), "x");
    const VarPtr z = Variable::create(TensorType(dtype, xs), "z");
    const VarPtr w = constant(randomTensor(dtype, {c, c, 3, 3}, 21));
    const VarPtr b = constant(randomTensor(dtype, {c}, 22));
    VarPtr r;
    if (source == 0) r = z;
    if (source == 1) r = exp(z) * 0.5;
    if (source >= 2)
      r = add(conv2d(z, constant(randomTensor(dtype, {c, c, 3, 3}, 23)), same3x3()),
              perChannel(constant(randomTensor(dtype, {c}, 24))));
    VarPtr y = add(add(conv2d(x, w, same3x3()), perChannel(b)), r);
    if (relu) y = tscope::engine::relu(y);
    std::vector<VarPtr> outs{y};
    if (source == 3) outs.push_back(sum(r * 2.0));  // r read again after the block
    Function fast = compileIn({x, z}, outs, Mode::FastRun);
    Function plain = compileIn({x, z}, outs, Mode::None);
    const std::optional<ConvView> f = withResidual(fast);
    QVERIFY2(f, "fast_run did not fuse the residual into the convolution");
    QCOMPARE(f->activation().kind, relu ? cpu::ConvActivation::Relu : cpu::ConvActivation::None);
    // A blocked chain's residual is ToChannelBlocks(z), a value of the graph's own that the sum
    // may overwrite even where z is the caller's (Note [Channel blocks]).
    if (source != 3) QCOMPARE(f->inplace(), inplace || (f->blocked && source == 0));
    const Tensor xv = randomTensor(dtype, xs, 25), zv = randomTensor(dtype, xs, 26);
    const std::vector<Tensor> expected = plain({xv, zv});
    for (int call = 0; call < 2; ++call) {  // the second call reuses buffers and packed filters
      const std::vector<Tensor> got = fast({xv, zv});
      for (std::size_t k = 0; k < got.size(); ++k)
        QVERIFY(closeTo(got[k], expected[k], tolerance(dtype), tolerance(dtype)));
    }
    // The caller's residual is never written.
    if (source == 0) QVERIFY(zv.bitwiseEqual(randomTensor(dtype, xs, 26)));
  }

  // A ResNet basic block: relu(bn2(conv2(relu(bn1(conv1(x))))) + x) with x itself computed.
  void testResnetBlock() {
    const Shape xs{1, 8, 10, 10};
    const VarPtr in = Variable::create(TensorType(DType::Float32, xs), "in");
    auto convBias = [&](const VarPtr& v, std::uint64_t seed) {
      return add(conv2d(v, constant(randomTensor(DType::Float32, {8, 8, 3, 3}, seed)), same3x3()),
                 perChannel(constant(randomTensor(DType::Float32, {8}, seed + 1))));
    };
    const VarPtr x = relu(convBias(in, 31));
    const VarPtr h = relu(convBias(x, 33));
    const VarPtr y = relu(add(convBias(h, 35), x));
    Function fast = compileIn({in}, {y}, Mode::FastRun);
    Function plain = compileIn({in}, {y}, Mode::None);
    const std::vector<ConvView> fused = fusedOps(fast);
    QCOMPARE(fused.size(), std::size_t(3));
    const std::optional<ConvView> block = withResidual(fast);
    QVERIFY(block && block->inplace());
    QCOMPARE(block->activation().kind, cpu::ConvActivation::Relu);
    for (const Apply* node : fast.graph().nodes())
      QVERIFY2(node->op().name() != "Elemwise" && node->op().name() != "Composite",
               node->op().str().c_str());  // nothing left outside the convolutions
    const Tensor v = randomTensor(DType::Float32, xs, 37);
    QVERIFY(closeTo(fast({v})[0], plain({v})[0], 2e-4, 2e-4));
  }

  // y = relu(conv(h) + b + h): the residual is the convolution's own input, which the kernel
  // reads around each output while it writes; the sum must not land in h's buffer.
  void testResidualIsTheInput() {
    for (std::int64_t c : {6, 8}) {  // channel-last, and a blocked chain where the setting says
      const Shape xs{2, c, 7, 5};
      const VarPtr z = Variable::create(TensorType(DType::Float32, xs), "z");
      const VarPtr h = exp(z) * 0.5;  // computed: a buffer the graph owns
      const VarPtr y = tscope::engine::relu(
          add(add(conv2d(h, constant(randomTensor(DType::Float32, {c, c, 3, 3}, 81)), same3x3()),
                  perChannel(constant(randomTensor(DType::Float32, {c}, 82)))),
              h));
      Function fast = compileIn({z}, {y}, Mode::FastRun);
      Function plain = compileIn({z}, {y}, Mode::None);
      const std::optional<ConvView> f = withResidual(fast);
      QVERIFY(f);
      QVERIFY(!f->inplace());
      const Tensor zv = randomTensor(DType::Float32, xs, 83);
      for (int call = 0; call < 2; ++call)
        QVERIFY(closeTo(fast({zv})[0], plain({zv})[0], 2e-4, 2e-4));
    }
  }

  // The same graph built with the in-place ops by hand (as a merge after the inplace pass could
  // leave it): the kernels still do not write into the buffer they read.
  void testInplaceNeverOverwritesItsInput() {
    const Shape xs{1, 8, 6, 6};
    const VarPtr z = Variable::create(TensorType(DType::Float32, xs), "z");
    const VarPtr h = exp(z) * 0.5;
    const VarPtr w = constant(randomTensor(DType::Float32, {8, 8, 3, 3}, 91));
    const VarPtr b = constant(randomTensor(DType::Float32, {8}, 92));
    const ConvActivationSpec none;
    const VarPtr inplace = std::make_shared<FusedConv2d>(same3x3(), none, true, true)
                               ->makeNode({h, w, b, h})
                               ->output(0);
    const VarPtr hb = toChannelBlocks(h);
    const VarPtr blockedInplace =
        fromChannelBlocks(std::make_shared<BlockedConv2d>(same3x3(), none, true, true)
                              ->makeNode({hb, w, b, hb})
                              ->output(0));
    Function f = compileIn({z}, {inplace}, Mode::None);
    Function g = compileIn({z}, {blockedInplace}, Mode::None);
    Function want = compileIn({z}, {fusedConv2dResidual(h, w, b, h, same3x3(), none)}, Mode::None);
    const Tensor zv = randomTensor(DType::Float32, xs, 93);
    const Tensor expected = want({zv})[0];
    QVERIFY(closeTo(f({zv})[0], expected, 2e-4, 2e-4));
    QVERIFY(closeTo(g({zv})[0], expected, 2e-4, 2e-4));
  }

  void testNanInResidualKept() {
    const Shape xs{1, 3, 4, 4};
    const VarPtr x = Variable::create(TensorType(DType::Float32, xs), "x");
    const VarPtr r = Variable::create(TensorType(DType::Float32, xs), "r");
    const VarPtr y =
        relu(add(add(conv2d(x, constant(randomTensor(DType::Float32, {3, 3, 3, 3}, 41)), same3x3()),
                     perChannel(constant(randomTensor(DType::Float32, {3}, 42)))),
                 r));
    Function fast = compileIn({x, r}, {y}, Mode::FastRun);
    QVERIFY(withResidual(fast));
    std::vector<double> rv(48, -5.0);  // relu would make every element 0 but the NaN
    rv[17] = std::nan("");
    const Tensor out = fast(
        {randomTensor(DType::Float32, xs, 43), Tensor::fromDoubles(DType::Float32, xs, rv)})[0];
    const std::vector<double> o = out.toDoubles();
    for (std::size_t i = 0; i < o.size(); ++i)
      QVERIFY2(i == 17 ? std::isnan(o[i]) : !std::isnan(o[i]), "the NaN was lost or spread");
  }

  // A 1x1 convolution with a 4.8 MB channel-last output (MobileNetV2's first expansion): values
  // and the NaN's spread as unfused.
  void testPointwiseInBlocks() {
    const Shape xs{1, 16, 112, 112};
    const VarPtr x = Variable::create(TensorType(DType::Float32, xs), "x");
    Conv2dParams pointwise;
    const VarPtr h =
        relu(add(conv2d(x, constant(randomTensor(DType::Float32, {16, 16, 3, 3}, 61)), same3x3()),
                 perChannel(constant(randomTensor(DType::Float32, {16}, 62)))));
    const VarPtr y =
        clip(add(conv2d(h, constant(randomTensor(DType::Float32, {96, 16, 1, 1}, 63)), pointwise),
                 perChannel(constant(randomTensor(DType::Float32, {96}, 64)))),
             constant(0.0, DType::Float32), constant(0.5, DType::Float32));
    Function fast = compileIn({x}, {y}, Mode::FastRun);
    Function plain = compileIn({x}, {y}, Mode::None);
    QCOMPARE(fusedOps(fast).size(), std::size_t(2));
    std::vector<double> v = randomTensor(DType::Float32, xs, 65).toDoubles();
    v[5 * 112 * 112 + 60 * 112 + 70] = std::nan("");  // channel 5, pixel (60, 70)
    const Tensor xv = Tensor::fromDoubles(DType::Float32, xs, v);
    const Tensor got = fast({xv})[0], expected = plain({xv})[0];
    QVERIFY(closeTo(got, expected, 2e-4, 2e-4));
    for (std::int64_t o : {0, 47, 95}) {
      QVERIFY2(std::isnan(got.at({0, o, 60, 70})), "the NaN was lost");
      QVERIFY(std::isnan(got.at({0, o, 61, 71})));  // through the 3x3 convolution's window
      QVERIFY(!std::isnan(got.at({0, o, 63, 70})));
    }
  }

  void testResidualTypeChecked() {
    const VarPtr x = Variable::create(TensorType(DType::Float32, {1, 2, 5, 5}), "x");
    const VarPtr w = constant(randomTensor(DType::Float32, {3, 2, 3, 3}, 51));
    const VarPtr b = constant(randomTensor(DType::Float32, {3}, 52));
    const VarPtr wrong = Variable::create(TensorType(DType::Float32, {1, 3, 1, 5}), "r");
    try {
      fusedConv2dResidual(x, w, b, wrong, same3x3(), {});
      QFAIL("a residual of another shape was accepted");
    } catch (const TypeError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("residual") != std::string::npos, m.c_str());
      QVERIFY2(m.find("input 3") != std::string::npos || m.find("'r'") != std::string::npos,
               m.c_str());
    }
    const VarPtr f64 = Variable::create(TensorType(DType::Float64, {1, 3, 5, 5}), "r64");
    QVERIFY_THROWS_EXCEPTION(TypeError, fusedConv2dResidual(x, w, b, f64, same3x3(), {}));
  }

  void testDeviceKept() {
    // A node placed on the GPU (every value cuda-typed) infers a cuda output, residual or not: a
    // .tsg of a placed ResNet block reloads (its types are checked against outputTypes).
    auto cudaVar = [](Shape s, const char* name) {
      return Variable::create(TensorType(DType::Float32, std::move(s), Device::Cuda), name);
    };
    const VarPtr x = cudaVar({1, 2, 5, 5}, "x"), w = cudaVar({3, 2, 3, 3}, "w");
    const VarPtr b = cudaVar({3}, "b"), r = cudaVar({1, 3, 5, 5}, "r");
    QCOMPARE(fusedConv2dResidual(x, w, b, r, same3x3(), {})->type().device(), Device::Cuda);
    QCOMPARE(fusedConv2d(x, w, b, same3x3(), {})->type().device(), Device::Cuda);
  }

  void testProps() {
    const FusedConv2d op(same3x3(), {cpu::ConvActivation::Relu, 0, 0}, true, true);
    const nlohmann::json j = op.props();
    QCOMPARE(j.value("residual", false), true);
    QCOMPARE(j.value("inplace", false), true);
    const OpPtr back = FusedConv2d::fromProps(j);
    QVERIFY(back->equals(op));
    QCOMPARE(back->destroyMap(), (DestroyMap{{0, {3}}}));
    QVERIFY(FusedConv2d(same3x3(), {}, true).destroyMap().empty());
    QVERIFY(FusedConv2d(same3x3(), {}, true)
                .withInplace()
                ->equals(FusedConv2d(same3x3(), {}, true, true)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FusedConv2d(same3x3(), {}, false, true));
    nlohmann::json bad = j;
    bad["residual"] = "yes";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FusedConv2d::fromProps(bad));
    // Without the flags the props are as before (files written earlier read the same).
    QVERIFY(!FusedConv2d(same3x3(), {}).props().contains("residual"));
  }
};

TSCOPE_TEST_MAIN(TestFusedConv2dResidual)
#include "tst_fused_conv2d_residual.moc"
