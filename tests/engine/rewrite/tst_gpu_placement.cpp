// The `gpu` phase (Note [GPU placement]) on a machine without a GPU: placement against a kernel
// registry that says which ops have device kernels (transfers land exactly where values cross),
// and whole compiled functions on a fake device (host memory tagged cuda, fake device kernels
// that compute with perform), whose results must equal the CPU's.
#include "../tensor/fake_device.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/transfer/transfer.h"
#include "engine/rewrite/rules/gpu_placement.h"
#include "test_main.h"

#include <map>

using namespace tscope::engine;
using tscope::test::fakeDeviceKernel;
using tscope::test::FakeDeviceMemory;
using tscope::test::fakeKernelLaunches;

namespace {

bool float32Only(const Apply& node) {
  for (const VarPtr& in : node.inputs())
    if (in->type().dtype() != DType::Float32) return false;
  return true;
}

KernelRegistry fakeRegistry(std::initializer_list<const char*> ops) {
  KernelRegistry r;
  for (const char* name : ops) r.add(name, Device::Cuda, &fakeDeviceKernel, "fake");
  return r;
}

std::map<std::string, int> opCounts(const FunctionGraph& fg) {
  std::map<std::string, int> n;
  for (const Apply* node : fg.nodes()) ++n[node->op().name()];
  return n;
}

const Apply* ownerOp(const VarPtr& v) {
  return v->owner();
}

VarPtr f32(std::vector<std::int64_t> shape, const char* name) {
  return Variable::create(TensorType(DType::Float32, std::move(shape)), name);
}
}  // namespace

class TestGpuPlacement : public QObject {
  Q_OBJECT
 private slots:
  void testTransfersLandWhereValuesCross();
  void testOneTransferPerValue();
  void testDeviceHostDeviceChain();
  void testUnsupportedNodesStay();
  void testNothingPlaceableChangesNothing();
  void testCompiledOnFakeDeviceMatchesCpu();
  void testSharedVariableUpdateOnFakeDevice();
  void testCompileForADeviceWithoutBackendThrows();
  void testHostValuesGetNoTransfer();
  void testHostValuesOnFakeDevice();
};

void TestGpuPlacement::testTransfersLandWhereValuesCross() {
  // h = relu(dot(x, W) + b) on the device; y = sum(h, 1) on the CPU (no device kernel for
  // CAReduce here); h is also an output.
  const VarPtr x = f32({3, 4}, "x"), W = f32({4, 5}, "W"), b = f32({5}, "b");
  const VarPtr h = relu(dot(x, W) + b);
  const VarPtr y = sum(h, {1});
  FunctionGraph fg({x, W, b}, {h, y});
  const KernelRegistry kernels = fakeRegistry({"Dot", "Elemwise", "DimShuffle"});
  DeviceSupport rules;
  const PlacementSummary s = placeOnDevice(fg, kernels, Device::Cuda, &rules);
  fg.checkIntegrity();
  QVERIFY(s.deviceNodes >= 3);           // dot, add, relu (and b's broadcast, if one was built)
  QCOMPARE(s.toDevice, std::size_t(3));  // x, W, b
  QCOMPARE(s.toHost, std::size_t(1));    // h, read by sum and returned
  // The outputs stay host values; h's is the HostFromGpu that sum reads too.
  const VarPtr hOut = fg.outputs()[0];
  QCOMPARE(ownerOp(hOut)->op().name(), std::string("HostFromGpu"));
  QCOMPARE(hOut->type().device(), Device::Cpu);
  const Apply* sumNode = ownerOp(fg.outputs()[1]);
  QCOMPARE(sumNode->op().name(), std::string("CAReduce"));
  QVERIFY(sumNode->input(0) == hOut);
  // Every node between the transfers is device-typed; the inputs are read through GpuFromHost.
  for (const Apply* node : fg.nodes()) {
    const std::string name = node->op().name();
    if (name == "Dot" || name == "Elemwise") {
      QCOMPARE(node->outputRef(0).type().device(), Device::Cuda);
      for (const VarPtr& in : node->inputs()) QCOMPARE(in->type().device(), Device::Cuda);
    }
    if (name == "GpuFromHost") QVERIFY(node->input(0)->owner() == nullptr);
  }
}

void TestGpuPlacement::testOneTransferPerValue() {
  // x read by three device nodes and one CPU node: one GpuFromHost, no transfer for the CPU read.
  const VarPtr x = f32({8}, "x");
  const VarPtr a = exp(x), c = x * x, d = sum(x);
  FunctionGraph fg({x}, {a + c, d});
  const KernelRegistry kernels = fakeRegistry({"Elemwise"});
  DeviceSupport rules;
  const PlacementSummary s = placeOnDevice(fg, kernels, Device::Cuda, &rules);
  fg.checkIntegrity();
  QCOMPARE(s.deviceNodes, std::size_t(3));
  QCOMPARE(s.toDevice, std::size_t(1));
  QCOMPARE(s.toHost, std::size_t(1));                            // a + c, a graph output
  QCOMPARE(ownerOp(fg.outputs()[1])->input(0), fg.inputs()[0]);  // sum reads x on the host
}

void TestGpuPlacement::testDeviceHostDeviceChain() {
  // exp (device) -> sum (CPU) -> * 2 (device): the value crosses three times.
  const VarPtr x = f32({2, 3}, "x");
  const VarPtr y = sum(exp(x)) * 2.0;
  FunctionGraph fg({x}, {y});
  const KernelRegistry kernels = fakeRegistry({"Elemwise"});
  DeviceSupport rules;
  const PlacementSummary s = placeOnDevice(fg, kernels, Device::Cuda, &rules);
  fg.checkIntegrity();
  const auto n = opCounts(fg);
  QCOMPARE(n.at("GpuFromHost"), 3);  // x, sum's result, the constant 2
  QCOMPARE(n.at("HostFromGpu"), 2);  // exp's result for sum, the output
  QCOMPARE(s.deviceNodes, std::size_t(2));
  const Apply* mul = ownerOp(fg.outputs()[0])->input(0)->owner();
  QCOMPARE(mul->op().str(), std::string("Elemwise{mul}"));
  QCOMPARE(mul->input(0)->owner()->op().name(), std::string("GpuFromHost"));
  QCOMPARE(mul->input(0)->owner()->input(0)->owner()->op().name(), std::string("CAReduce"));
}

void TestGpuPlacement::testUnsupportedNodesStay() {
  // A rule that takes float32 only: the float64 node stays on the CPU with no transfer around it.
  const VarPtr x = f32({4}, "x");
  const VarPtr z = Variable::create(TensorType(DType::Float64, {4}), "z");
  FunctionGraph fg({x, z}, {exp(x), exp(z)});
  const KernelRegistry kernels = fakeRegistry({"Elemwise"});
  DeviceSupport rules;
  rules.add("Elemwise", Device::Cuda, &float32Only);
  const PlacementSummary s = placeOnDevice(fg, kernels, Device::Cuda, &rules);
  QCOMPARE(s.deviceNodes, std::size_t(1));
  QCOMPARE(s.toDevice, std::size_t(1));
  QCOMPARE(s.toHost, std::size_t(1));
  QCOMPARE(ownerOp(fg.outputs()[1])->op().str(), std::string("Elemwise{exp}"));
  QCOMPARE(fg.outputs()[1]->owner()->input(0), fg.inputs()[1]);
}

void TestGpuPlacement::testNothingPlaceableChangesNothing() {
  const VarPtr x = f32({4}, "x");
  FunctionGraph fg({x}, {exp(x)});
  const std::size_t before = fg.nodeCount();
  const PlacementSummary s = placeOnDevice(fg, KernelRegistry{}, Device::Cuda);
  QCOMPARE(s.deviceNodes, std::size_t(0));
  QCOMPARE(fg.nodeCount(), before);
}

void TestGpuPlacement::testCompiledOnFakeDeviceMatchesCpu() {
  FakeDeviceMemory memory;
  fakeKernelLaunches() = 0;
  const VarPtr x = f32({3, 4}, "x"), W = f32({4, 5}, "W"), b = f32({5}, "b");
  const VarPtr h = relu(dot(x, W) + b);
  const std::vector<VarPtr> outs{h, sum(h, {1})};
  const std::vector<Tensor> args{
      Tensor::fromDoubles(DType::Float32, {3, 4}, {1, -2, 3, 0.5, 0, 1, -1, 2, 4, 3, 2, 1}),
      Tensor::fromDoubles(DType::Float32, {4, 5},
                          {1, 0, -1, 2, 0.5, 0, 1, 2, -3, 1, 1, 1, 0, 0, 2, -1, 0.25, 0, 1, 3}),
      Tensor::fromDoubles(DType::Float32, {5}, {0.1, -0.2, 0.3, -5, 0})};
  CompileOptions fastRun;
  fastRun.mode = Mode::FastRun;
  Function cpu = compile({x, W, b}, outs, {}, fastRun);
  const std::vector<Tensor> expected = cpu(args);
  KernelRegistry kernels = fakeRegistry({"Dot", "Elemwise", "Composite", "Gemm", "Gemv"});
  CompileOptions options;
  options.mode = Mode::FastRun;
  options.device = Device::Cuda;
  options.kernels = &kernels;
  Function gpu = compile({x, W, b}, outs, {}, options);
  // The rewrite log names the phase; the program runs the placed nodes' device kernels.
  bool logged = false;
  for (const RewriteRecord& r : gpu.rewriteLog()) logged = logged || r.phase == "gpu";
  QVERIFY(logged);
  int deviceKernels = 0;
  for (const LinkedNode& n : gpu.program().nodes()) {
    // The transfers have no fake kernel: their perform copies through the DeviceMemory.
    if (isTransfer(*n.op)) {
      QVERIFY(n.kernel.isReference());
      continue;
    }
    const bool onDevice = n.node->outputRef(0).type().device() == Device::Cuda ||
                          n.node->input(0)->type().device() == Device::Cuda;
    QCOMPARE(n.kernel.device, onDevice ? Device::Cuda : Device::Cpu);
    deviceKernels += n.kernel.source == "fake" ? 1 : 0;
  }
  QVERIFY(deviceKernels >= 2);
  const std::vector<Tensor> got = gpu(args);
  QCOMPARE(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    QCOMPARE(got[i].device(), Device::Cpu);
    QVERIFY2(got[i].allClose(expected[i], 1e-6, 1e-6), qPrintable(QString::number(i)));
  }
  QCOMPARE(fakeKernelLaunches(), deviceKernels);
  QCOMPARE(memory.copies[int(DeviceMemory::Copy::HostToDevice)] >= 3, true);
}

void TestGpuPlacement::testSharedVariableUpdateOnFakeDevice() {
  // An SGD step: W <- W - 0.1 * dot(x.T, x W) with W updated through the device and back.
  FakeDeviceMemory memory;
  const Tensor w0 = Tensor::fromDoubles(DType::Float32, {2, 2}, {1, 0.5, -0.5, 2});
  auto Wc = SharedVariable::create(w0, "Wc");
  auto Wg = SharedVariable::create(w0, "Wg");
  const VarPtr x = f32({3, 2}, "x");
  const Tensor xv = Tensor::fromDoubles(DType::Float32, {3, 2}, {1, 2, 0, -1, 3, 1});
  auto step = [&](const std::shared_ptr<SharedVariable>& W, Device device,
                  const KernelRegistry* kernels) {
    const VarPtr g = dot(transpose(x), dot(x, W));
    CompileOptions o;
    o.mode = Mode::FastRun;
    o.device = device;
    o.kernels = kernels;
    return compile({x}, {sum(g)}, {{W, W - g * 0.1}}, o);
  };
  KernelRegistry kernels = fakeRegistry({"Dot", "Elemwise", "Composite", "Gemm", "DimShuffle"});
  Function cpu = step(Wc, Device::Cpu, nullptr);
  Function gpu = step(Wg, Device::Cuda, &kernels);
  for (int i = 0; i < 3; ++i) {
    const Tensor a = cpu({xv})[0], c = gpu({xv})[0];
    QVERIFY(c.allClose(a, 1e-5, 1e-5));
  }
  QCOMPARE(Wg->value().device(), Device::Cpu);
  QVERIFY(Wg->value().allClose(Wc->value(), 1e-5, 1e-5));
}

void TestGpuPlacement::testCompileForADeviceWithoutBackendThrows() {
  // No DeviceMemory for cuda (no backend, no device): compile says so rather than running every
  // node on the CPU unasked.
  const VarPtr x = f32({4}, "x");
  CompileOptions o;
  o.device = Device::Cuda;
  try {
    compile({x}, {exp(x)}, {}, o);
    QFAIL("expected std::runtime_error");
  } catch (const std::runtime_error& e) {
    QVERIFY2(QString::fromStdString(e.what()).startsWith(
                 "compile for cuda: no memory is registered for cuda"),
             e.what());
  }
}

namespace {
// Reshape reads its shape vector on the host; ShapeI writes its size there and is claimed only
// where its input is a device value (Note [Host values of device nodes]).
HostValues shapeVectorOnHost(const Apply&) {
  return {{1}, {}};
}
HostValues sizeOnHost(const Apply&) {
  return {{}, {0}};
}
bool inputOnDevice(const Apply& node) {
  return isDeviceValue(*node.input(0));
}
DeviceSupport hostValueRules() {
  DeviceSupport rules;
  rules.addHostValues("Reshape", Device::Cuda, &shapeVectorOnHost);
  rules.addHostValues("ShapeI", Device::Cuda, &sizeOnHost);
  rules.add("ShapeI", Device::Cuda, &inputOnDevice);
  return rules;
}
}  // namespace

void TestGpuPlacement::testHostValuesGetNoTransfer() {
  // y = exp(reshape(exp(x), s)) with s a runtime shape vector; n = shapeI(exp(x), 0) reads the
  // device value's size; m = shapeI(x, 0) reads a host input's and stays on the CPU.
  const VarPtr x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 6}), "x");
  const VarPtr s = Variable::create(TensorType(DType::Int64, {2}), "s");
  const VarPtr h = exp(x);
  const VarPtr y = exp(reshape(h, s));
  const VarPtr n = shapeI(h, 0), m = shapeI(x, 0);
  FunctionGraph fg({x, s}, {y, n, m});
  const KernelRegistry kernels = fakeRegistry({"Elemwise", "Reshape", "ShapeI"});
  const DeviceSupport rules = hostValueRules();
  const PlacementSummary summary = placeOnDevice(fg, kernels, Device::Cuda, &rules);
  fg.checkIntegrity();
  QCOMPARE(summary.toDevice, std::size_t(1));  // x; s is read on the host
  QCOMPARE(summary.toHost, std::size_t(1));    // y; n is a host output already
  const Apply* reshapeNode = nullptr;
  std::vector<const Apply*> sizes;
  for (const Apply* node : fg.nodes()) {
    if (node->op().name() == "Reshape") reshapeNode = node;
    if (node->op().name() == "ShapeI") sizes.push_back(node);
  }
  QVERIFY(reshapeNode);
  QCOMPARE(reshapeNode->input(0)->type().device(), Device::Cuda);
  QVERIFY(reshapeNode->input(1) == fg.inputs()[1]);  // the graph input itself, no GpuFromHost
  QCOMPARE(reshapeNode->outputRef(0).type().device(), Device::Cuda);
  QCOMPARE(sizes.size(), std::size_t(2));
  int onDevice = 0;
  for (const Apply* node : sizes) {
    QCOMPARE(node->outputRef(0).type().device(), Device::Cpu);
    onDevice += node->input(0)->type().device() == Device::Cuda;
  }
  QCOMPARE(onDevice, 1);  // shapeI(exp(x)); shapeI(x) reads the host x
  QCOMPARE(fg.outputs()[1]->owner()->op().name(), std::string("ShapeI"));
}

void TestGpuPlacement::testHostValuesOnFakeDevice() {
  // The same graph compiled for the fake device: the kernels get host tensors where the node's
  // types say host (fakeDeviceKernel checks), and the results equal the CPU's.
  FakeDeviceMemory memory;
  const VarPtr x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 6}), "x");
  const VarPtr s = Variable::create(TensorType(DType::Int64, {2}), "s");
  const VarPtr h = exp(x);
  const std::vector<VarPtr> outs{exp(reshape(h, s)), shapeI(h, 0)};
  const std::vector<Tensor> args{
      Tensor::fromDoubles(DType::Float32, {2, 6}, {0, 1, 2, 3, 4, 5, -1, -2, -3, -4, -5, -6}),
      Tensor::fromDoubles(DType::Int64, {2}, {3, -1})};
  Function cpu = compile({x, s}, outs);
  const KernelRegistry kernels = fakeRegistry({"Elemwise", "Reshape", "ShapeI"});
  const DeviceSupport rules = hostValueRules();
  CompileOptions o;
  o.device = Device::Cuda;
  o.kernels = &kernels;
  o.deviceRules = &rules;
  Function gpu = compile({x, s}, outs, {}, o);
  const std::vector<Tensor> a = cpu(args), b = gpu(args);
  QCOMPARE(b.size(), a.size());
  QCOMPARE(b[0].shape(), (Shape{3, 4}));
  QVERIFY(b[0].allClose(a[0], 1e-6, 1e-6));
  QVERIFY(b[1].bitwiseEqual(a[1]));
  // One transfer each way (x out, the reshaped value back): s and the size get none. (The fake
  // kernels' own outputs are copies too, so the memory's counts say less.)
  std::map<std::string, int> ops;
  for (const LinkedNode& n : gpu.program().nodes()) ++ops[n.op->name()];
  QCOMPARE(ops["GpuFromHost"], 1);
  QCOMPARE(ops["HostFromGpu"], 1);
  QCOMPARE(memory.copies[int(DeviceMemory::Copy::DeviceToHost)], 1);
}

TSCOPE_TEST_MAIN(TestGpuPlacement)
#include "tst_gpu_placement.moc"
