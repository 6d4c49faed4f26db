// The cuDNN kernels' parts that need no GPU (issue 22; label `cuda`): descriptor parameters
// mapped from the ops' props, with cuDNN's output-size formulas agreeing with the CPU ops' output
// shapes; the softmax layout; the algorithm-mode option and its messages; the record of choices;
// and the placement of a small CNN by the backend's own kernel table.
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cudnn_options.h"
#include "engine/backends/cuda/cudnn_params.h"
#include "engine/compile/function.h"
#include "engine/compile/kernel.h"
#include "engine/compile/kernel_notes.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/shape/reshape.h"
#include "engine/rewrite/rules/gpu_placement.h"
#include "test_main.h"

#include <map>

using namespace tscope::engine;
using namespace tscope::engine::cuda;

namespace {
Tensor ramp(Shape shape) {
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) - 3;
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

Shape shapeOf(const std::array<int, 4>& d) {
  return {d[0], d[1], d[2], d[3]};
}

// The CPU op's output shape: its static type and the value perform computes.
Shape cpuShape(const VarPtr& y, const std::vector<VarPtr>& in, const std::vector<Tensor>& args) {
  Function f = compile(in, {y});
  const Shape computed = f(args)[0].shape();
  const Shape& typed = y->type().shape();
  if (typed != computed) return {};  // the CPU disagrees with itself: fail below
  return computed;
}

struct Placement {
  std::map<std::string, int> onDevice, onHost;
  // Nodes whose output types contradict what their op infers from the placed inputs (a .tsg of
  // the placed graph would not load).
  std::vector<std::string> typeMismatches;
};
Placement place(FunctionGraph& fg) {
  KernelRegistry kernels;
  DeviceSupport rules;
  registerCudaKernels(kernels, rules);
  placeOnDevice(fg, kernels, Device::Cuda, &rules);
  fg.checkIntegrity();
  Placement p;
  for (const Apply* node : fg.nodes()) {
    const bool device = node->outputRef(0).type().device() == Device::Cuda;
    ++(device ? p.onDevice : p.onHost)[node->op().name()];
    // Compatible: the same dtype, device and rank, and no known dimension that disagrees (the
    // op may know less: a gradient op's size input is a GpuFromHost of a constant once placed).
    const std::vector<TensorType> inferred = node->op().outputTypes(node->inputs());
    for (int o = 0; o < node->nOutputs(); ++o) {
      const TensorType& a = inferred[static_cast<std::size_t>(o)];
      const TensorType& b = node->outputRef(o).type();
      bool fits = a.dtype() == b.dtype() && a.device() == b.device() && a.ndim() == b.ndim();
      for (int d = 0; fits && d < a.ndim(); ++d)
        fits = !a.isDimKnown(d) ||
               a.shape()[static_cast<std::size_t>(d)] == b.shape()[static_cast<std::size_t>(d)];
      if (!fits) p.typeMismatches.push_back(node->op().str() + ": " + a.str() + " vs " + b.str());
    }
  }
  return p;
}

bool haveCudnnKernels() {
  KernelRegistry kernels;
  DeviceSupport rules;
  registerCudaKernels(kernels, rules);
  return kernels.has("Conv2d", Device::Cuda);
}
}  // namespace

class TestCudnnParams : public QObject {
  Q_OBJECT
 private slots:
  void testConvDescriptor_data();
  void testConvDescriptor();
  void testConvGradDescriptors();
  void testConvDescriptorErrors();
  void testPoolDescriptor_data();
  void testPoolDescriptor();
  void testSoftmaxLayout();
  void testAlgoModeParsing();
  void testByteCounts();
  void testOptionsFromEnvironment();
  void testChoiceRecord();
  void testKernelNotes();
  void testSmallCnnPlacement();
  void testFloat64AndClipStayOnCpu();
  void testBatchNormLayout();
  void testBatchNormPlacement();
};

void TestCudnnParams::testConvDescriptor_data() {
  QTest::addColumn<QList<int>>("x");    // N C H W
  QTest::addColumn<QList<int>>("w");    // O C/g KH KW
  QTest::addColumn<QList<int>>("geo");  // sh sw ph pw dh dw groups
  QTest::newRow("plain 3x3") << QList<int>{2, 3, 8, 8} << QList<int>{4, 3, 3, 3}
                             << QList<int>{1, 1, 0, 0, 1, 1, 1};
  QTest::newRow("same padding") << QList<int>{1, 3, 7, 9} << QList<int>{5, 3, 3, 3}
                                << QList<int>{1, 1, 1, 1, 1, 1, 1};
  QTest::newRow("stride 2, odd size")
      << QList<int>{2, 4, 11, 13} << QList<int>{6, 4, 3, 3} << QList<int>{2, 2, 1, 1, 1, 1, 1};
  QTest::newRow("stride 3x2, pad 2x0")
      << QList<int>{1, 2, 10, 9} << QList<int>{3, 2, 4, 2} << QList<int>{3, 2, 2, 0, 1, 1, 1};
  QTest::newRow("dilation 2") << QList<int>{1, 3, 12, 12} << QList<int>{2, 3, 3, 3}
                              << QList<int>{1, 1, 2, 2, 2, 2, 1};
  QTest::newRow("dilation 3x1 stride 2")
      << QList<int>{2, 2, 15, 8} << QList<int>{2, 2, 3, 2} << QList<int>{2, 1, 0, 1, 3, 1, 1};
  QTest::newRow("groups 2") << QList<int>{2, 6, 9, 9} << QList<int>{4, 3, 3, 3}
                            << QList<int>{1, 1, 1, 1, 1, 1, 2};
  QTest::newRow("depthwise") << QList<int>{1, 8, 10, 7} << QList<int>{8, 1, 3, 3}
                             << QList<int>{2, 2, 1, 1, 1, 1, 8};
  QTest::newRow("1x1") << QList<int>{3, 5, 4, 6} << QList<int>{7, 5, 1, 1}
                       << QList<int>{1, 1, 0, 0, 1, 1, 1};
  QTest::newRow("filter = input") << QList<int>{1, 2, 5, 5} << QList<int>{3, 2, 5, 5}
                                  << QList<int>{1, 1, 0, 0, 1, 1, 1};
}

void TestCudnnParams::testConvDescriptor() {
  QFETCH(QList<int>, x);
  QFETCH(QList<int>, w);
  QFETCH(QList<int>, geo);
  Conv2dParams p;
  p.stride = {geo[0], geo[1]};
  p.padding = {geo[2], geo[3]};
  p.dilation = {geo[4], geo[5]};
  p.groups = geo[6];
  const Shape xs{x[0], x[1], x[2], x[3]}, ws{w[0], w[1], w[2], w[3]};
  const ConvDescriptorParams d = convDescriptor(p, xs, ws);
  QCOMPARE(d.padH, geo[2]);
  QCOMPARE(d.padW, geo[3]);
  QCOMPARE(d.strideH, geo[0]);
  QCOMPARE(d.strideW, geo[1]);
  QCOMPARE(d.dilationH, geo[4]);
  QCOMPARE(d.dilationW, geo[5]);
  QCOMPARE(d.groups, geo[6]);
  QCOMPARE(shapeOf(d.x), xs);
  QCOMPARE(shapeOf(d.w), ws);
  const VarPtr xv = Variable::create(TensorType(DType::Float32, xs), "x");
  const VarPtr wv = Variable::create(TensorType(DType::Float32, ws), "w");
  QCOMPARE(shapeOf(d.y), cpuShape(conv2d(xv, wv, p), {xv, wv}, {ramp(xs), ramp(ws)}));

  // The gradient descriptors give back the forward's geometry from the output gradient.
  const Shape ys = shapeOf(d.y);
  const ConvDescriptorParams gi = convGradInputsDescriptor(p, ws, ys, xs[2], xs[3]);
  QCOMPARE(shapeOf(gi.x), xs);
  QCOMPARE(shapeOf(gi.y), ys);
  const ConvDescriptorParams gw = convGradWeightsDescriptor(p, xs, ys, ws[2], ws[3]);
  QCOMPARE(shapeOf(gw.w), ws);
  QCOMPARE(shapeOf(gw.y), ys);
}

void TestCudnnParams::testConvGradDescriptors() {
  // Stride 2: inputs of height 9 and 10 both give OH 4; Conv2dGradInputs says which one.
  Conv2dParams p;
  p.stride = {2, 2};
  const Shape w{3, 2, 3, 3}, gy{1, 3, 4, 4};
  QCOMPARE(shapeOf(convGradInputsDescriptor(p, w, gy, 9, 10).x), (Shape{1, 2, 9, 10}));
  QCOMPARE(shapeOf(convGradInputsDescriptor(p, w, gy, 10, 9).x), (Shape{1, 2, 10, 9}));
  // The CPU gradient op agrees on the shape it computes.
  const VarPtr wv = Variable::create(TensorType(DType::Float32, w), "w");
  const VarPtr gv = Variable::create(TensorType(DType::Float32, gy), "gy");
  const VarPtr gx = conv2dGradInputs(wv, gv, constantInt(10), constantInt(9), p);
  QCOMPARE(cpuShape(gx, {wv, gv}, {ramp(w), ramp(gy)}), (Shape{1, 2, 10, 9}));
  // An output gradient of the wrong size is refused with both shapes named.
  try {
    convGradInputsDescriptor(p, w, Shape{1, 3, 5, 4}, 9, 10);
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(
        QString(e.what()).contains("(1, 3, 5, 4)") && QString(e.what()).contains("(1, 3, 4, 4)"),
        e.what());
  }
  try {
    convGradWeightsDescriptor(p, Shape{1, 2, 9, 9}, Shape{1, 3, 4, 5}, 3, 3);
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains("output gradient"), e.what());
  }
}

void TestCudnnParams::testConvDescriptorErrors() {
  Conv2dParams p;
  p.groups = 2;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           convDescriptor(p, Shape{1, 3, 8, 8}, Shape{4, 1, 3, 3}));  // 3 % 2
  p.groups = 1;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           convDescriptor(p, Shape{1, 3, 2, 8}, Shape{4, 3, 3, 3}));  // too small
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           convDescriptor(p, Shape{1, 3, 8}, Shape{4, 3, 3, 3}));  // rank 3
  try {
    convDescriptor(p, Shape{std::int64_t(1) << 33, 3, 8, 8}, Shape{4, 3, 3, 3});
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains("does not fit cuDNN's int"), e.what());
  }
}

void TestCudnnParams::testPoolDescriptor_data() {
  QTest::addColumn<bool>("average");
  QTest::addColumn<bool>("includePad");
  QTest::addColumn<QList<int>>("x");
  QTest::addColumn<QList<int>>("geo");  // kh kw sh sw ph pw
  QTest::newRow("max 2x2") << false << true << QList<int>{2, 3, 8, 8}
                           << QList<int>{2, 2, 2, 2, 0, 0};
  QTest::newRow("max 3x3 s2 p1 odd")
      << false << true << QList<int>{1, 4, 11, 9} << QList<int>{3, 3, 2, 2, 1, 1};
  QTest::newRow("max 3x2 s1") << false << true << QList<int>{1, 2, 7, 5}
                              << QList<int>{3, 2, 1, 1, 0, 1};
  QTest::newRow("avg include pad")
      << true << true << QList<int>{2, 3, 9, 9} << QList<int>{3, 3, 2, 2, 1, 1};
  QTest::newRow("avg exclude pad")
      << true << false << QList<int>{2, 3, 9, 10} << QList<int>{3, 3, 2, 3, 1, 1};
  QTest::newRow("avg global") << true << true << QList<int>{2, 5, 7, 7}
                              << QList<int>{7, 7, 7, 7, 0, 0};
}

void TestCudnnParams::testPoolDescriptor() {
  QFETCH(bool, average);
  QFETCH(bool, includePad);
  QFETCH(QList<int>, x);
  QFETCH(QList<int>, geo);
  Pool2dParams p;
  p.kernel = {geo[0], geo[1]};
  p.stride = {geo[2], geo[3]};
  p.padding = {geo[4], geo[5]};
  p.includePad = includePad;
  const Shape xs{x[0], x[1], x[2], x[3]};
  const PoolDescriptorParams d = poolDescriptor(p, average, xs);
  QCOMPARE(d.mode, !average     ? PoolMode::Max
                   : includePad ? PoolMode::AverageCountPadding
                                : PoolMode::AverageExcludePadding);
  QCOMPARE(d.windowH, geo[0]);
  QCOMPARE(d.windowW, geo[1]);
  QCOMPARE(d.strideH, geo[2]);
  QCOMPARE(d.strideW, geo[3]);
  QCOMPARE(d.padH, geo[4]);
  QCOMPARE(d.padW, geo[5]);
  const VarPtr xv = Variable::create(TensorType(DType::Float32, xs), "x");
  const VarPtr y = average ? avgPool2d(xv, p) : maxPool2d(xv, p);
  QCOMPARE(shapeOf(d.y), cpuShape(y, {xv}, {ramp(xs)}));
}

void TestCudnnParams::testSoftmaxLayout() {
  auto layout = [](Shape s, int axis) {
    const SoftmaxLayout l = softmaxLayout(s, axis);
    return QList<int>{l.n, l.c, l.h, l.w};
  };
  QCOMPARE(layout({4, 10}, -1), (QList<int>{4, 10, 1, 1}));
  QCOMPARE(layout({4, 10}, 1), (QList<int>{4, 10, 1, 1}));
  QCOMPARE(layout({4, 10}, 0), (QList<int>{1, 4, 10, 1}));
  QCOMPARE(layout({2, 3, 5, 7}, 1), (QList<int>{2, 3, 35, 1}));
  QCOMPARE(layout({2, 3, 5, 7}, -2), (QList<int>{6, 5, 7, 1}));
  QCOMPARE(layout({9}, 0), (QList<int>{1, 9, 1, 1}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, softmaxLayout({4, 10}, 2));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, softmaxLayout({}, -1));
}

void TestCudnnParams::testAlgoModeParsing() {
  for (ConvAlgoMode m : {ConvAlgoMode::GuessOnce, ConvAlgoMode::GuessOnShapeChange,
                         ConvAlgoMode::TimeOnce, ConvAlgoMode::TimeOnShapeChange})
    QCOMPARE(parseConvAlgoMode(convAlgoModeName(m)), m);
  QCOMPARE(convAlgoModeName(ConvAlgoMode::TimeOnShapeChange),
           std::string_view("time_on_shape_change"));
  try {
    parseConvAlgoMode("fastest", "TSCOPE_CUDNN_CONV_ALGO");
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    QCOMPARE(QString(e.what()),
             QStringLiteral("TSCOPE_CUDNN_CONV_ALGO: expected one of guess_once, "
                            "guess_on_shape_change, time_once, time_on_shape_change, found "
                            "'fastest'"));
  }
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseConvAlgoMode("Guess_Once"));
}

void TestCudnnParams::testByteCounts() {
  QCOMPARE(parseByteCount("0", "x"), std::size_t(0));
  QCOMPARE(parseByteCount("4096", "x"), std::size_t(4096));
  QCOMPARE(parseByteCount("64K", "x"), std::size_t(64) << 10);
  QCOMPARE(parseByteCount("512m", "x"), std::size_t(512) << 20);
  QCOMPARE(parseByteCount("2G", "x"), std::size_t(2) << 30);
  for (const char* bad :
       {"", "M", "12X", "-1", "1.5G", "12 M", "99999999999999999999", "99999999999999999G"})
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseByteCount(bad, "x"));
  try {
    parseByteCount("lots", "TSCOPE_CUDNN_WORKSPACE_LIMIT");
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    QCOMPARE(QString(e.what()),
             QStringLiteral("TSCOPE_CUDNN_WORKSPACE_LIMIT: expected a byte count (digits, "
                            "optionally followed by K, M or G), found 'lots'"));
  }
}

void TestCudnnParams::testOptionsFromEnvironment() {
  qunsetenv("TSCOPE_CUDNN_CONV_ALGO");
  qunsetenv("TSCOPE_CUDNN_WORKSPACE_LIMIT");
  const CudnnOptions defaults = CudnnOptions::fromEnvironment();
  QCOMPARE(defaults.algoMode, ConvAlgoMode::GuessOnce);
  QCOMPARE(defaults.workspaceLimit, std::size_t(256) << 20);
  qputenv("TSCOPE_CUDNN_CONV_ALGO", "time_on_shape_change");
  qputenv("TSCOPE_CUDNN_WORKSPACE_LIMIT", "32M");
  const CudnnOptions o = CudnnOptions::fromEnvironment();
  QCOMPARE(o.algoMode, ConvAlgoMode::TimeOnShapeChange);
  QCOMPARE(o.workspaceLimit, std::size_t(32) << 20);
  qputenv("TSCOPE_CUDNN_CONV_ALGO", "sometimes");
  try {
    CudnnOptions::fromEnvironment();
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).startsWith("TSCOPE_CUDNN_CONV_ALGO: expected one of guess_once"),
             e.what());
  }
  qunsetenv("TSCOPE_CUDNN_CONV_ALGO");
  qunsetenv("TSCOPE_CUDNN_WORKSPACE_LIMIT");
  // setCudnnOptions wins over the environment and starts a new generation of kept choices.
  const std::uint64_t before = convAlgoGeneration();
  setCudnnOptions({ConvAlgoMode::TimeOnce, std::size_t(1) << 20});
  QCOMPARE(cudnnOptions().algoMode, ConvAlgoMode::TimeOnce);
  QCOMPARE(cudnnOptions().workspaceLimit, std::size_t(1) << 20);
  QVERIFY(convAlgoGeneration() > before);
  setCudnnOptions(CudnnOptions{});
}

void TestCudnnParams::testChoiceRecord() {
  forgetConvAlgoChoices();
  QVERIFY(cudnnConvAlgoChoices().empty());
  QCOMPARE(convAlgoNote(7), std::string());
  ConvAlgoChoice c;
  c.nodeId = 7;
  c.op = "Conv2d";
  c.direction = "fwd";
  c.algorithm = "IMPLICIT_PRECOMP_GEMM";
  c.workspaceBytes = 3 << 20;
  c.mode = ConvAlgoMode::GuessOnce;
  recordConvAlgoChoice(c);
  c.direction = "bwd_filter";
  c.algorithm = "ALGO_1";
  c.workspaceBytes = 512;
  c.mode = ConvAlgoMode::TimeOnce;
  recordConvAlgoChoice(c);
  QCOMPARE(cudnnConvAlgoChoices().size(), std::size_t(2));
  QCOMPARE(convAlgoNote(7), std::string("cudnn bwd_filter ALGO_1 (time_once, ws 512 B)"));
  c.nodeId = 8;
  c.direction = "fwd";
  c.algorithm = "WINOGRAD";
  c.workspaceBytes = 3 << 20;
  c.mode = ConvAlgoMode::GuessOnce;
  recordConvAlgoChoice(c);
  QCOMPARE(convAlgoNote(8), std::string("cudnn fwd WINOGRAD (guess_once, ws 3 MiB)"));
  const std::uint64_t before = convAlgoGeneration();
  forgetConvAlgoChoices();
  QVERIFY(cudnnConvAlgoChoices().empty());
  QVERIFY(convAlgoGeneration() > before);
}

void TestCudnnParams::testKernelNotes() {
  // The hook the cuDNN convolutions write their choice through (engine/compile/kernel_notes.h).
  const VarPtr x = Variable::create(TensorType(DType::Float32, {1, 1, 6, 6}), "x");
  const VarPtr w = Variable::create(TensorType(DType::Float32, {1, 1, 3, 3}), "w");
  const VarPtr y = conv2d(x, w), z = conv2d(y, w);
  clearKernelNotes();
  QCOMPARE(kernelNote(*y->owner()), std::string());
  setKernelNote(*y->owner(), "cudnn fwd GEMM (guess_once, ws 0 B)");
  QCOMPARE(kernelNote(*y->owner()), std::string("cudnn fwd GEMM (guess_once, ws 0 B)"));
  QCOMPARE(kernelNote(*z->owner()), std::string());
  setKernelNote(*y->owner(), "cudnn fwd DIRECT (guess_once, ws 0 B)");  // the latest wins
  QCOMPARE(kernelNote(*y->owner()), std::string("cudnn fwd DIRECT (guess_once, ws 0 B)"));
  clearKernelNotes();
  QCOMPARE(kernelNote(*y->owner()), std::string());
}

void TestCudnnParams::testSmallCnnPlacement() {
  if (!haveCudnnKernels()) QSKIP("this build has no cuDNN: its ops stay on the CPU");
  // conv -> relu -> max pool -> flatten -> dot -> softmax, and the gradient ops of a training step.
  const VarPtr x = Variable::create(TensorType(DType::Float32, {8, 3, 16, 16}), "x");
  const VarPtr w = Variable::create(TensorType(DType::Float32, {4, 3, 3, 3}), "w");
  const VarPtr W = Variable::create(TensorType(DType::Float32, {4 * 8 * 8, 10}), "W");
  Conv2dParams cp;
  cp.padding = {1, 1};
  const VarPtr h = maxPool2d(relu(conv2d(x, w, cp)), Pool2dParams::window(2, 2));
  const VarPtr probs = softmax(dot(flatten(h, 2), W), -1);
  const VarPtr gy = Variable::create(TensorType(DType::Float32, {8, 4, 16, 16}), "gy");
  const VarPtr gx = conv2dGradInputs(w, gy, constantInt(16), constantInt(16), cp);
  const VarPtr gw = conv2dGradWeights(x, gy, constantInt(3), constantInt(3), cp);
  const VarPtr ga = avgPool2dGrad(gy, constantInt(32), constantInt(32), Pool2dParams::window(2, 2));
  const VarPtr gs = logSoftmaxGrad(probs, logSoftmax(probs, 1), 1);
  FunctionGraph fg({x, w, W, gy}, {probs, gx, gw, ga, gs});
  Placement p = place(fg);
  QCOMPARE(p.typeMismatches, std::vector<std::string>{});
  for (const char* op : {"Conv2d", "MaxPool2d", "Softmax", "Dot", "Conv2dGradInputs",
                         "Conv2dGradWeights", "AvgPool2dGrad", "LogSoftmax", "LogSoftmaxGrad"}) {
    QVERIFY2(p.onDevice.count(op) == 1, op);
    QVERIFY2(p.onHost.count(op) == 0, op);
  }
  // The flatten between the pool and the Dot is a device view (its shape vector a host value):
  // no round trip; every output comes back once.
  QCOMPARE(p.onDevice["Reshape"], 1);
  QCOMPARE(p.onHost.count("Reshape"), std::size_t(0));
  QCOMPARE(p.onHost["HostFromGpu"], 5);
  QVERIFY(p.onHost["GpuFromHost"] == 0 && p.onDevice["GpuFromHost"] >= 4);
  // The kernels say who provides them, for the profile's kernel column.
  KernelRegistry kernels;
  DeviceSupport rules;
  registerCudaKernels(kernels, rules);
  QCOMPARE(kernels.choose(Conv2d(cp), Device::Cuda).source, std::string_view("cudnn"));
  QCOMPARE(kernels.choose(Softmax(-1), Device::Cuda).source, std::string_view("cudnn"));
}

void TestCudnnParams::testFloat64AndClipStayOnCpu() {
  if (!haveCudnnKernels()) QSKIP("this build has no cuDNN: its ops stay on the CPU");
  const VarPtr x = Variable::create(TensorType(DType::Float64, {2, 3, 8, 8}), "x");
  const VarPtr w = Variable::create(TensorType(DType::Float64, {4, 3, 3, 3}), "w");
  const VarPtr xf = Variable::create(TensorType(DType::Float32, {2, 3, 8, 8}), "xf");
  const VarPtr wf = Variable::create(TensorType(DType::Float32, {4, 3, 3, 3}), "wf");
  const VarPtr b = Variable::create(TensorType(DType::Float32, {4}), "b");
  const VarPtr y64 = softmax(conv2d(x, w), 1);
  const VarPtr relu6 = fusedConv2d(xf, wf, b, {}, {cpu::ConvActivation::Clip, 0.0, 6.0});
  const VarPtr clip = fusedConv2d(xf, wf, b, {}, {cpu::ConvActivation::Clip, -1.0, 1.0});
  const VarPtr r = Variable::create(TensorType(DType::Float32, {2, 4, 6, 6}), "r");
  const VarPtr residual = fusedConv2dResidual(xf, wf, b, r, {}, {cpu::ConvActivation::Relu, 0, 0});
  FunctionGraph fg({x, w, xf, wf, b, r}, {y64, relu6, clip, residual});
  Placement p = place(fg);
  QCOMPARE(p.typeMismatches, std::vector<std::string>{});
  QCOMPARE(p.onHost["Conv2d"], 1);  // float64
  QCOMPARE(p.onHost["Softmax"], 1);
  QCOMPARE(p.onDevice["FusedConv2d"], 2);  // relu6 (cuDNN's clipped relu), the residual one
  QCOMPARE(p.onHost["FusedConv2d"], 1);    // clip(-1, 1): no cuDNN activation
}

void TestCudnnParams::testBatchNormLayout() {
  // Note [Batch norm on cuDNN]: (N, C, H, 1) with C the kept axes, N and H the reduced ones
  // before and after them; m = N H.
  struct Case {
    Shape shape;
    std::vector<int> axes;
    int n, c, h;
  };
  const Case cases[] = {
      {{8, 3, 5, 7}, {0, 2, 3}, 8, 3, 35},   // NCHW, per channel
      {{16, 20}, {0}, 16, 20, 1},            // (N, F), per feature
      {{4, 6, 6, 3}, {0, 1, 2}, 144, 3, 1},  // NHWC
      {{2, 3, 4, 5}, {0}, 2, 60, 1},         // per activation
      {{2, 3, 4}, {0, 1, 2}, 24, 1, 1},      // every axis: one statistic
      {{2, 3, 4, 5}, {3}, 1, 24, 5},         // a suffix only
      {{5, 2, 3}, {1, 2}, 1, 5, 6},
  };
  for (const Case& c : cases) {
    QVERIFY(batchNormAxesFit(static_cast<int>(c.shape.size()), c.axes));
    const BatchNormLayout l = batchNormLayout(c.shape, c.axes);
    QCOMPARE(l.n, c.n);
    QCOMPARE(l.c, c.c);
    QCOMPARE(l.h, c.h);
    QCOMPARE(l.w, 1);
    QCOMPARE(l.m, std::int64_t(c.n) * c.h);
  }
  // Kept axes in two blocks, reduced axes in the middle only, axes out of range: no layout.
  QVERIFY(!batchNormAxesFit(4, {0, 2}));
  QVERIFY(!batchNormAxesFit(3, {1}));
  QVERIFY(!batchNormAxesFit(4, {1, 3}));
  QVERIFY(!batchNormAxesFit(2, {2}));
  QVERIFY(!batchNormAxesFit(2, {}));
  try {
    batchNormLayout({2, 3, 4}, {1});
    QFAIL("expected std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    QCOMPARE(QString::fromStdString(e.what()),
             QStringLiteral("cuDNN batch norm: axes [1] of a 3-d tensor are not a prefix and a "
                            "suffix of its axes"));
  }
  // The epsilon rule: cuDNN refuses epsilon < CUDNN_BN_MIN_EPSILON.
  QVERIFY(batchNormEpsilonFits(1e-5, 1e-5));
  QVERIFY(!batchNormEpsilonFits(1e-6, 1e-5));
  QVERIFY(batchNormEpsilonFits(0.0, 0.0));
}

void TestCudnnParams::testBatchNormPlacement() {
  if (!haveCudnnKernels()) QSKIP("this build has no cuDNN: its ops stay on the CPU");
  // cuDNN 9's CUDNN_BN_MIN_EPSILON is 0, so every epsilon the op allows (>= 0) goes.
  QVERIFY(cudnnBatchNormMinEpsilon() >= 0.0 && cudnnBatchNormMinEpsilon() <= 1e-5);
  const VarPtr x = Variable::create(TensorType(DType::Float32, {8, 3, 5, 5}), "x");
  const VarPtr g = Variable::create(TensorType(DType::Float32, {1, 3, 1, 1}), "g");
  const VarPtr b = Variable::create(TensorType(DType::Float32, {1, 3, 1, 1}), "b");
  const VarPtr rm = Variable::create(TensorType(DType::Float32, {1, 3, 1, 1}), "rm");
  const VarPtr rv = Variable::create(TensorType(DType::Float32, {1, 3, 1, 1}), "rv");
  const BatchNormTrainResult train = batchNormTrain(x, g, b, {0, 2, 3}, 1e-5);
  const VarPtr inference =
      batchNormInference(x, g, b, rm, rv, {0, 2, 3}, cudnnBatchNormMinEpsilon());
  // float64, and axes whose kept axes are not one block ([1] of a 3-d x): the CPU.
  const VarPtr x64 = Variable::create(TensorType(DType::Float64, {8, 3}), "x64");
  const VarPtr g64 = Variable::create(TensorType(DType::Float64, {1, 3}), "g64");
  const BatchNormTrainResult train64 = batchNormTrain(x64, g64, g64, {0});
  const VarPtr z = Variable::create(TensorType(DType::Float32, {2, 3, 4}), "z");
  const VarPtr gz = Variable::create(TensorType(DType::Float32, {2, 1, 4}), "gz");
  const BatchNormTrainResult middle = batchNormTrain(z, gz, gz, {1});
  FunctionGraph fg({x, g, b, rm, rv, x64, g64, z, gz},
                   {train.y, train.mean, train.var, inference, train64.y, middle.y});
  Placement p = place(fg);
  QCOMPARE(p.typeMismatches, std::vector<std::string>{});
  QCOMPARE(p.onDevice["BatchNormTrain"], 1);
  QCOMPARE(p.onDevice["BatchNormInference"], 1);
  QCOMPARE(p.onHost["BatchNormTrain"], 2);  // float64, and axes [1] of (2, 3, 4)
  KernelRegistry kernels;
  DeviceSupport rules;
  registerCudaKernels(kernels, rules);
  QCOMPARE(kernels.choose(BatchNormTrain({0}), Device::Cuda).source, std::string_view("cudnn"));
}

TSCOPE_TEST_MAIN(TestCudnnParams)
#include "tst_cudnn_params.moc"
