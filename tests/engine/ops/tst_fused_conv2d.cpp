// FusedConv2d and the conv_bias_activation rewrite (engine/rewrite/rules/specialize_conv.cpp):
// values against Conv2d + bias + activation unfused (float32 through oneDNN when the build has
// it, float64 through im2col), NaN kept by the activations (Note [No oneDNN activations]), what
// fast_run fuses and what it must leave alone, the packed-filter cache of constant filters (Note
// [Packed filters]), props and the missing gradient.
#include "engine/backends/cpu/dnnl_conv.h"
#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::Conv2dParams)
Q_DECLARE_METATYPE(tscope::engine::Shape)

namespace {

double tolerance(DType dtype) {
  return dtype == DType::Float32 ? 2e-4 : 1e-10;
}

Conv2dParams params(std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                    std::int64_t groups) {
  Conv2dParams p;
  p.stride = {stride, stride};
  p.padding = {pad, pad};
  p.dilation = {dilation, dilation};
  p.groups = groups;
  return p;
}

VarPtr perChannel(const VarPtr& b) {
  return dimshuffle(b, {DimShuffle::kNewAxis, 0, DimShuffle::kNewAxis, DimShuffle::kNewAxis});
}

VarPtr activate(const VarPtr& z, const ConvActivationSpec& a) {
  const DType dt = z->type().dtype();
  if (a.kind == cpu::ConvActivation::Relu) return relu(z);
  if (a.kind == cpu::ConvActivation::Clip) return clip(z, constant(a.lo, dt), constant(a.hi, dt));
  return z;
}

Function compileIn(const std::vector<VarPtr>& in, const std::vector<VarPtr>& out, Mode mode) {
  CompileOptions options;
  options.mode = mode;
  return compile(in, out, {}, options);
}

std::size_t countOps(const Function& f, const std::string& name) {
  std::size_t n = 0;
  for (const Apply* node : f.graph().nodes()) n += node->op().name() == name;
  return n;
}

const FusedConv2d* onlyFused(const Function& f) {
  const FusedConv2d* found = nullptr;
  for (const Apply* node : f.graph().nodes())
    if (const auto* op = dynamic_cast<const FusedConv2d*>(&node->op())) {
      if (found) return nullptr;
      found = op;
    }
  return found;
}

}  // namespace

class TestFusedConv2d : public QObject {
  Q_OBJECT

 private slots:
  void testMatchesUnfused_data();
  void testMatchesUnfused();
  void testNanKept();
  void testRewriteFuses_data();
  void testRewriteFuses();
  void testRewriteLeavesSharedConv();
  void testPackedFilters();
  void testSharedFiltersFollowUpdates();
  void testChannelLastChain();
  void testProps();
  void testNoGradient();
};

void TestFusedConv2d::testMatchesUnfused_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Shape>("xShape");
  QTest::addColumn<Shape>("wShape");
  QTest::addColumn<Conv2dParams>("p");
  QTest::addColumn<int>("act");
  for (DType d : {DType::Float32, DType::Float64}) {
    for (int act = 0; act < 3; ++act) {
      const std::string s = std::string(dtypeName(d)) + " act" + std::to_string(act);
      QTest::newRow((s + " 3x3 pad1").c_str())
          << d << Shape{2, 5, 9, 7} << Shape{6, 5, 3, 3} << params(1, 1, 1, 1) << act;
      QTest::newRow((s + " depthwise stride2").c_str())
          << d << Shape{1, 8, 11, 10} << Shape{8, 1, 3, 3} << params(2, 1, 1, 8) << act;
      QTest::newRow((s + " grouped dilated").c_str())
          << d << Shape{1, 6, 9, 9} << Shape{4, 3, 3, 3} << params(1, 2, 2, 2) << act;
      QTest::newRow((s + " 1x1").c_str())
          << d << Shape{1, 16, 5, 5} << Shape{24, 16, 1, 1} << params(1, 0, 1, 1) << act;
      // Channels in eights: blocked where the setting says so (Note [Blocked direct convolutions]).
      QTest::newRow((s + " 3x3 eights").c_str())
          << d << Shape{2, 8, 9, 7} << Shape{16, 8, 3, 3} << params(1, 1, 1, 1) << act;
      QTest::newRow((s + " 3x3 eights stride2").c_str())
          << d << Shape{1, 16, 11, 10} << Shape{8, 16, 3, 3} << params(2, 1, 1, 1) << act;
    }
  }
}

void TestFusedConv2d::testMatchesUnfused() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(Shape, wShape);
  QFETCH(Conv2dParams, p);
  QFETCH(int, act);
  ConvActivationSpec a;
  a.kind = static_cast<cpu::ConvActivation>(act);
  if (a.kind == cpu::ConvActivation::Clip) a.lo = -0.25, a.hi = 0.5;
  const Tensor x = randomTensor(dtype, xShape, 1), w = randomTensor(dtype, wShape, 2),
               b = randomTensor(dtype, {wShape[0]}, 3);
  const VarPtr xv = Variable::create(TensorType(dtype, xShape), "x");
  const VarPtr wc = constant(w), bc = constant(b);
  Function unfused =
      compileIn({xv}, {activate(add(conv2d(xv, wc, p), perChannel(bc)), a)}, Mode::None);
  Function fused = compileIn({xv}, {fusedConv2d(xv, wc, bc, p, a)}, Mode::None);
  const Tensor expected = unfused({x})[0];
  if (dtype == DType::Float32) {
    // Conv2d in float32 takes the same oneDNN kernel; float64 (im2col) is the independent check.
    const VarPtr x64 = Variable::create(TensorType(DType::Float64, xShape), "x");
    Function ref = compileIn({x64},
                             {activate(add(conv2d(x64, constant(w.astype(DType::Float64)), p),
                                           perChannel(constant(b.astype(DType::Float64)))),
                                       a)},
                             Mode::None);
    QVERIFY(
        closeTo(expected.astype(DType::Float64), ref({x.astype(DType::Float64)})[0], 1e-4, 1e-4));
  }
  // Twice: the second call uses the packed copy of the constant filters.
  for (int call = 0; call < 2; ++call) {
    const Tensor got = fused({x})[0];
    QVERIFY(closeTo(got, expected, tolerance(dtype), tolerance(dtype)));
  }
}

void TestFusedConv2d::testNanKept() {
  // One NaN input pixel makes NaN in every output it reaches; relu and clip must keep it (oneDNN's
  // own post-ops would write 0 there).
  // 4 -> 3 channels runs channel-last, 8 -> 8 blocked where the setting says so.
  for (const auto& [ci, co] : {std::pair<std::int64_t, std::int64_t>{4, 3}, {8, 8}})
    for (int act = 1; act < 3; ++act) {
      ConvActivationSpec a;
      a.kind = static_cast<cpu::ConvActivation>(act);
      if (a.kind == cpu::ConvActivation::Clip) a.hi = 6;
      Tensor x = randomTensor(DType::Float32, {1, ci, 6, 6}, 4);
      std::vector<double> values = x.toDoubles();
      values[2 * 6 + 3] = std::nan("");
      x = Tensor::fromDoubles(DType::Float32, {1, ci, 6, 6}, values);
      const Tensor w = randomTensor(DType::Float32, {co, ci, 3, 3}, 5),
                   b = randomTensor(DType::Float32, {co}, 6);
      const VarPtr xv = Variable::create(TensorType(DType::Float32, {1, ci, 6, 6}), "x");
      Function f = compileIn(
          {xv}, {fusedConv2d(xv, constant(w), constant(b), params(1, 1, 1, 1), a)}, Mode::None);
      const Tensor y = f({x})[0];
      for (std::int64_t o = 0; o < 3; ++o)
        for (std::int64_t dy = -1; dy <= 1; ++dy)
          for (std::int64_t dx = -1; dx <= 1; ++dx)
            QVERIFY2(std::isnan(y.at({0, o, 2 + dy, 3 + dx})), "the NaN was lost");
      QVERIFY(!std::isnan(y.at({0, 0, 5, 0})));
    }
}

void TestFusedConv2d::testRewriteFuses_data() {
  QTest::addColumn<int>("form");
  QTest::addColumn<QString>("activation");
  QTest::addColumn<int>("adds");  // Elemwise adds left in the optimized graph
  QTest::newRow("relu(conv + b)") << 0 << "relu" << 0;
  QTest::newRow("clip(conv + C(1,O,1,1), 0, 6)") << 1 << "clip" << 0;
  QTest::newRow("conv + b") << 2 << "none" << 0;
  // Note [Residual sum]: the residual joins the convolution too.
  QTest::newRow("relu(conv + b + residual)") << 3 << "relu" << 0;
}

void TestFusedConv2d::testRewriteFuses() {
  QFETCH(int, form);
  QFETCH(QString, activation);
  QFETCH(int, adds);
  const Shape xs{1, 4, 8, 8};
  const Tensor x = randomTensor(DType::Float32, xs, 7),
               w = randomTensor(DType::Float32, {4, 4, 3, 3}, 8),
               b = randomTensor(DType::Float32, {4}, 9), r = randomTensor(DType::Float32, xs, 10);
  const VarPtr xv = Variable::create(TensorType(DType::Float32, xs), "x");
  const VarPtr rv = Variable::create(TensorType(DType::Float32, xs), "r");
  const VarPtr conv = conv2d(xv, constant(w), params(1, 1, 1, 1));
  VarPtr y;
  if (form == 0) y = relu(add(conv, perChannel(constant(b))));
  if (form == 1)
    y = clip(add(conv, constant(b.reshape({1, 4, 1, 1}))), constant(0.0, DType::Float32),
             constant(6.0, DType::Float32));
  if (form == 2) y = add(conv, perChannel(constant(b)));
  if (form == 3) y = relu(add(add(conv, perChannel(constant(b))), rv));
  Function fast = compileIn({xv, rv}, {y}, Mode::FastRun);
  Function plain = compileIn({xv, rv}, {y}, Mode::None);
  const FusedConv2d* fused = onlyFused(fast);
  QVERIFY2(fused, "expected one FusedConv2d in the fast_run graph");
  QCOMPARE(QString::fromStdString(fused->props().value("activation", std::string())), activation);
  QCOMPARE(countOps(fast, "Conv2d"), std::size_t(0));
  std::size_t leftAdds = 0;
  for (const Apply* node : fast.graph().nodes()) {
    const std::string s = node->op().str();
    const bool elementwise = node->op().name() == "Elemwise" || node->op().name() == "Composite";
    leftAdds += elementwise && s.find("add") != std::string::npos;
  }
  QCOMPARE(leftAdds, std::size_t(adds));
  QCOMPARE(fused->residual(), form == 3);
  QVERIFY(!fused->inplace());  // the residual is a graph input: its buffer is the caller's
  QVERIFY(closeTo(fast({x, r})[0], plain({x, r})[0], 1e-5, 1e-5));
}

void TestFusedConv2d::testRewriteLeavesSharedConv() {
  // The convolution is also an output: fusing would compute it twice or lose it.
  const Shape xs{1, 2, 5, 5};
  const VarPtr xv = Variable::create(TensorType(DType::Float32, xs), "x");
  const VarPtr conv =
      conv2d(xv, constant(randomTensor(DType::Float32, {3, 2, 3, 3}, 11)), params(1, 1, 1, 1));
  const VarPtr y = relu(add(conv, perChannel(constant(randomTensor(DType::Float32, {3}, 12)))));
  Function fast = compileIn({xv}, {y, conv}, Mode::FastRun);
  QCOMPARE(countOps(fast, "FusedConv2d"), std::size_t(0));
  QCOMPARE(countOps(fast, "Conv2d"), std::size_t(1));
}

void TestFusedConv2d::testPackedFilters() {
  if (!cpu::dnnlAvailable()) QSKIP("this build has no oneDNN: nothing is packed");
  const Shape xs{1, 8, 6, 6};
  const Tensor x = randomTensor(DType::Float32, xs, 13);
  // Several graphs in turn, each with its own constant filters: each must convolve with its own,
  // even when a freed filter's address is reused by the next (Note [Packed filters]).
  for (std::uint64_t seed = 20; seed < 26; ++seed) {
    const Tensor w = randomTensor(DType::Float32, {8, 8, 3, 3}, seed);
    const VarPtr xv = Variable::create(TensorType(DType::Float32, xs), "x");
    Function f = compileIn({xv}, {conv2d(xv, constant(w), params(1, 1, 1, 1))}, Mode::None);
    const VarPtr xi = Variable::create(TensorType(DType::Float32, xs), "x");
    const VarPtr wi = Variable::create(TensorType(DType::Float32, {8, 8, 3, 3}), "w");
    Function reference = compileIn({xi, wi}, {conv2d(xi, wi, params(1, 1, 1, 1))}, Mode::None);
    const Tensor expected = reference({x, w})[0];
    QVERIFY(closeTo(f({x})[0], expected));
    QVERIFY(cpu::dnnlPackedFilterCount() >= 1);
    QVERIFY(closeTo(f({x})[0], expected));
  }
  QVERIFY(cpu::dnnlDescription().find("oneDNN") == 0);
  // The 8 -> 8 3x3 convolutions ran on blocked activations exactly when the setting says so
  // (Note [Blocked direct convolutions]; ctest runs this suite with TSCOPE_DNNL_BLOCKED=0 and 1).
  QCOMPARE(cpu::dnnlDescription().find("nChw8c") != std::string::npos,
           cpu::dnnlBlockedConvolutions());
}

void TestFusedConv2d::testSharedFiltersFollowUpdates() {
  // A model's weights as a shared variable: one function infers with them, another updates them
  // in place (fast_run's inplace mul). The inference after the update must see the new weights,
  // not a packed copy of the old ones.
  const Shape xs{1, 4, 6, 6};
  const Tensor x = randomTensor(DType::Float32, xs, 30);
  const Tensor w0 = randomTensor(DType::Float32, {5, 4, 3, 3}, 31);
  const auto sv = SharedVariable::create(w0, "w");
  const VarPtr xv = Variable::create(TensorType(DType::Float32, xs), "x");
  Function infer = compileIn({xv}, {conv2d(xv, sv, params(1, 1, 1, 1))}, Mode::FastRun);
  CompileOptions options;
  options.mode = Mode::FastRun;
  Function step = compile({}, {}, {{sv, mul(sv, constant(2.0, DType::Float32))}}, options);
  const Tensor before = infer({x})[0];
  QVERIFY(closeTo(infer({x})[0], before));
  for (int i = 1; i <= 2; ++i) {
    step({});
    std::vector<double> scaled = before.toDoubles();
    for (double& v : scaled) v *= double(1 << i);
    const Tensor expected = Tensor::fromDoubles(DType::Float32, before.shape(), scaled);
    QVERIFY(closeTo(infer({x})[0], expected, 1e-5, 1e-5));
  }
}

void TestFusedConv2d::testChannelLastChain() {
  // Note [Channel-last activations]: float32 convolutions write NHWC tensors, which in-place
  // elementwise ops, max pooling and the next convolution take as they are. The chain must give
  // the values of the same graph in float64 (im2col, NCHW throughout), NaN included.
  const Shape xs{2, 3, 12, 12};
  std::vector<double> xv = randomTensor(DType::Float64, xs, 40).toDoubles();
  xv[5 * 12 + 7] = std::nan("");
  const Tensor w1 = randomTensor(DType::Float64, {8, 3, 3, 3}, 41),
               w2 = randomTensor(DType::Float64, {8, 8, 3, 3}, 42),
               b = randomTensor(DType::Float64, {8}, 43);
  Pool2dParams pool;
  pool.kernel = {3, 3};
  pool.padding = {1, 1};
  auto run = [&](DType dt) {
    const VarPtr x = Variable::create(TensorType(dt, xs), "x");
    const VarPtr c1 = relu(add(conv2d(x, constant(w1.astype(dt)), params(1, 1, 1, 1)),
                               perChannel(constant(b.astype(dt)))));
    const VarPtr p = maxPool2d(c1, pool);
    const VarPtr c2 = conv2d(p, constant(w2.astype(dt)), params(1, 1, 1, 1));
    const VarPtr y = relu(add(c2, p));  // a residual block
    Function f = compileIn({x}, {y, p}, Mode::FastRun);
    return f({Tensor::fromDoubles(dt, xs, xv)});
  };
  const std::vector<Tensor> got = run(DType::Float32), want = run(DType::Float64);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::vector<double> g = got[i].toDoubles(), e = want[i].toDoubles();
    QCOMPARE(got[i].shape(), want[i].shape());
    std::size_t nans = 0;
    for (std::size_t k = 0; k < g.size(); ++k) {
      QCOMPARE(std::isnan(g[k]), std::isnan(e[k]));
      nans += std::isnan(e[k]);
      if (!std::isnan(e[k])) QVERIFY(std::abs(g[k] - e[k]) <= 1e-4 * (1 + std::abs(e[k])));
    }
    QVERIFY(nans > 0);
  }
}

void TestFusedConv2d::testProps() {
  ConvActivationSpec clip6{cpu::ConvActivation::Clip, 0, 6};
  const FusedConv2d op(params(2, 1, 1, 1), clip6);
  const nlohmann::json props = op.props();
  QCOMPARE(QString::fromStdString(props.dump()),
           QString(R"({"activation":"clip","clip":[0.0,6.0],"dilation":[1,1],"groups":1,)"
                   R"("padding":[1,1],"stride":[2,2]})"));
  const OpPtr back = FusedConv2d::fromProps(props);
  QCOMPARE(QString::fromStdString(back->props().dump()), QString::fromStdString(props.dump()));
  auto refused = [](const std::string& text, const char* needle) {
    try {
      FusedConv2d::fromProps(nlohmann::json::parse(text));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what()).find(needle) != std::string::npos;
    }
    return false;
  };
  QVERIFY(refused(R"({"activation": "tanh"})", "\"activation\""));
  QVERIFY(refused(R"({"activation": "clip"})", "\"clip\": [lo, hi]"));
  QVERIFY(refused(R"({"activation": "relu", "clip": [0, 6]})", "\"clip\""));
  QVERIFY(refused(R"({"activation": "clip", "clip": [6, 0]})", "lo <= hi"));
  QVERIFY(refused(R"({"activation": "none", "groups": 0})", "groups"));
  // A bias of the wrong length is a type error naming input 2.
  const VarPtr xv = Variable::create(TensorType(DType::Float32, {1, 2, 4, 4}), "x");
  const VarPtr w = constant(randomTensor(DType::Float32, {3, 2, 3, 3}, 1));
  const VarPtr b = constant(randomTensor(DType::Float32, {4}, 2));
  try {
    fusedConv2d(xv, w, b, params(1, 1, 1, 1), {});
    QFAIL("a bias of 4 values for 3 channels was accepted");
  } catch (const TypeError& e) {
    QVERIFY2(std::string(e.what()).find("input 2") != std::string::npos, e.what());
  }
}

void TestFusedConv2d::testNoGradient() {
  const VarPtr xv = Variable::create(TensorType(DType::Float32, {1, 2, 4, 4}), "x");
  const VarPtr y = fusedConv2d(xv, constant(randomTensor(DType::Float32, {3, 2, 3, 3}, 1)),
                               constant(randomTensor(DType::Float32, {3}, 2)), params(1, 1, 1, 1),
                               {cpu::ConvActivation::Relu, 0, 0});
  try {
    grad(sum(y), xv);
    QFAIL("a FusedConv2d was differentiated");
  } catch (const std::exception& e) {
    QVERIFY2(std::string(e.what()).find("FusedConv2d") != std::string::npos, e.what());
  }
}

TSCOPE_TEST_MAIN(TestFusedConv2d)
#include "tst_fused_conv2d.moc"
