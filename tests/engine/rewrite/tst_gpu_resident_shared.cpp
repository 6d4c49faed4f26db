// Note [Device-resident shared variables] (engine/rewrite/rules/gpu_placement.h) without a GPU:
// the fake device of tests/engine/tensor/fake_device.h (host memory tagged cuda, every transfer
// counted with its size, fake kernels that compute with perform and write device memory
// directly). An SGD MLP compiled for the device keeps its parameters there: the first call
// uploads each parameter once, later calls move no parameter byte either way, the host value
// comes back only when read, a setValue is uploaded once, and a stopped or failed run leaves
// every parameter as it was.
#include "../tensor/fake_device.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/debug/debug_session.h"
#include "engine/grad/grad.h"
#include "engine/graph/apply.h"
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/transfer/transfer.h"
#include "engine/rewrite/rules/gpu_placement.h"
#include "test_main.h"

#include <stdexcept>

using namespace tscope::engine;
using tscope::test::fakeDeviceKernel;
using tscope::test::FakeDeviceMemory;

namespace {

using Copy = DeviceMemory::Copy;

// Set to make the next fake kernel launch throw (a kernel error in the middle of a run).
bool& failNextLaunch() {
  static bool fail = false;
  return fail;
}

void failingKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) {
  if (std::exchange(failNextLaunch(), false))
    throw std::runtime_error("fake kernel failure at node " + std::to_string(node.id()));
  fakeDeviceKernel(op, node, inputs, outputs);
}

KernelRegistry fakeRegistry() {
  KernelRegistry r;
  for (const char* name :
       {"Dot", "Elemwise", "Composite", "Gemm", "Gemv", "DimShuffle", "CAReduce", "SumToShape"})
    r.add(name, Device::Cuda, &failingKernel, "fake");
  return r;
}

Tensor values(Shape shape, double scale, double shift) {
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = scale * std::sin(1.7 * static_cast<double>(i) + shift);
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

// A 3-7-4 MLP trained by SGD on a batch of 5: parameters of sizes no other transfer has (W1 84
// bytes, b1 28, W2 112, b2 16; x is 60, t 80, the scalar constants 4 or 8), so a transfer's size
// names it.
struct Mlp {
  std::shared_ptr<SharedVariable> W1, b1, W2, b2;
  VarPtr x = Variable::create(TensorType(DType::Float32, {5, 3}), "x");
  VarPtr t = Variable::create(TensorType(DType::Float32, {5, 4}), "t");
  VarPtr cost;
  std::vector<Update> updates;

  Mlp() {
    W1 = SharedVariable::create(values({3, 7}, 0.5, 0.1), "W1");
    b1 = SharedVariable::create(values({7}, 0.1, 0.2), "b1");
    W2 = SharedVariable::create(values({7, 4}, 0.5, 0.3), "W2");
    b2 = SharedVariable::create(values({4}, 0.1, 0.4), "b2");
    const VarPtr h = tanh(dot(x, W1) + b1);
    const VarPtr y = dot(h, W2) + b2;
    cost = sum(sqr(y - t));
    const std::vector<VarPtr> params{W1, b1, W2, b2};
    const std::vector<VarPtr> g = grad(cost, params);
    for (std::size_t i = 0; i < params.size(); ++i)
      updates.push_back({params[i], params[i] - g[i] * 0.05});
  }
  std::vector<std::shared_ptr<SharedVariable>> params() const { return {W1, b1, W2, b2}; }

  Function compileFor(Device device, const KernelRegistry* kernels,
                      std::vector<std::shared_ptr<ExecutionObserver>> observers = {}) const {
    CompileOptions o;
    o.mode = Mode::FastRun;
    o.device = device;
    o.kernels = kernels;
    o.observers = std::move(observers);
    return compile({x, t}, {cost}, updates, o);
  }
};

std::vector<Tensor> batch(int step) {
  return {values({5, 3}, 1.0, 0.5 * step), values({5, 4}, 0.8, 1.0 + step)};
}

// A parameter's size in bytes, from its type (reading its value could copy it).
std::size_t bytesOf(const std::shared_ptr<SharedVariable>& p) {
  return static_cast<std::size_t>(shapeNumel(p->type().shape())) * dtypeSize(p->type().dtype());
}

// Transfers of exactly the size of one of the parameters.
int parameterCopies(const FakeDeviceMemory& m, Copy kind, const Mlp& net) {
  int n = 0;
  for (const auto& p : net.params()) n += m.copiesOf(kind, bytesOf(p));
  return n;
}
}  // namespace

class TestGpuResidentShared : public QObject {
  Q_OBJECT
 private slots:
  void init() { failNextLaunch() = false; }

  void testGraphKeepsParametersOnDevice() {
    FakeDeviceMemory memory;
    Mlp net;
    const KernelRegistry kernels = fakeRegistry();
    Function f = net.compileFor(Device::Cuda, &kernels);
    const FunctionGraph& g = f.graph();
    g.checkIntegrity();
    // The caller's inputs stay first and on the host; the four parameters are device twins.
    QCOMPARE(g.inputs().size(), std::size_t(6));
    QCOMPARE(g.inputs()[0]->type().device(), Device::Cpu);
    QCOMPARE(g.inputs()[1]->type().device(), Device::Cpu);
    int twins = 0;
    for (std::size_t i = 2; i < g.inputs().size(); ++i) {
      QCOMPARE(g.inputs()[i]->kind(), Variable::Kind::Shared);
      QCOMPARE(g.inputs()[i]->type().device(), Device::Cuda);
      twins += g.inputs()[i]->name().empty() ? 0 : 1;
    }
    QCOMPARE(twins, 4);
    // No transfer reads a shared variable; every update is a device value targeting a twin.
    for (const Apply* node : g.nodes())
      if (isTransfer(node->op())) QVERIFY(node->input(0)->kind() != Variable::Kind::Shared);
    QCOMPARE(g.updateMapping().size(), std::size_t(4));
    for (const auto& [out, in] : g.updateMapping()) {
      QCOMPARE(g.outputs()[out]->type().device(), Device::Cuda);
      QCOMPARE(g.inputs()[in]->type().device(), Device::Cuda);
    }
    // The user's output stays a host value; the log names the change in phase gpu.
    QCOMPARE(f.outputs()[0]->type().device(), Device::Cpu);
    bool logged = false;
    for (const RewriteRecord& r : f.rewriteLog())
      logged = logged || (r.phase == "gpu" && r.reason == "gpu_resident_shared");
    QVERIFY(logged);
  }

  void testNoParameterCopiesAfterWarmUp() {
    FakeDeviceMemory memory;
    Mlp cpuNet, gpuNet;
    const KernelRegistry kernels = fakeRegistry();
    Function cpu = cpuNet.compileFor(Device::Cpu, nullptr);
    Function gpu = gpuNet.compileFor(Device::Cuda, &kernels);
    memory.resetCounts();
    for (int step = 0; step < 5; ++step) {
      const std::vector<Tensor> args = batch(step);
      const Tensor a = cpu(args)[0];
      const Tensor b = gpu(args)[0];
      QCOMPARE(b.device(), Device::Cpu);
      QVERIFY2(b.allClose(a, 1e-5, 1e-5), qPrintable(QString("step %1").arg(step)));
      // The first call uploads each parameter once; none comes back, none goes again later.
      QCOMPARE(parameterCopies(memory, Copy::HostToDevice, gpuNet), step == 0 ? 4 : 0);
      QCOMPARE(parameterCopies(memory, Copy::DeviceToHost, gpuNet), 0);
      // Per call: x and t go up once each, the cost (4 bytes) comes back.
      QCOMPARE(memory.copiesOf(Copy::HostToDevice, 60), 1);
      QCOMPARE(memory.copiesOf(Copy::HostToDevice, 80), 1);
      QVERIFY(memory.copiesOf(Copy::DeviceToHost, 4) >= 1);
      memory.resetCounts();
    }
    // The newest values are on the device until read; a read brings each back once.
    for (const auto& p : gpuNet.params()) QVERIFY(p->newestOnDevice());
    const auto cpuParams = cpuNet.params(), gpuParams = gpuNet.params();
    for (std::size_t i = 0; i < gpuParams.size(); ++i) {
      const Tensor& v = gpuParams[i]->value();
      QCOMPARE(v.device(), Device::Cpu);
      QVERIFY2(v.allClose(cpuParams[i]->value(), 1e-5, 1e-5), gpuParams[i]->name().c_str());
      QVERIFY(!gpuParams[i]->newestOnDevice());
    }
    QCOMPARE(parameterCopies(memory, Copy::DeviceToHost, gpuNet), 4);
    for (const auto& p : gpuParams) p->value();
    QCOMPARE(memory.copies[int(Copy::DeviceToHost)], 4);  // read again: nothing copied
    // A call after the reads still moves no parameter (the device copy stayed current).
    memory.resetCounts();
    cpu(batch(7));
    gpu(batch(7));
    QCOMPARE(parameterCopies(memory, Copy::HostToDevice, gpuNet), 0);
    for (std::size_t i = 0; i < gpuParams.size(); ++i)
      QVERIFY(gpuParams[i]->value().allClose(cpuParams[i]->value(), 1e-5, 1e-5));
  }

  void testSetValueReplacesDeviceCopy() {
    FakeDeviceMemory memory;
    Mlp cpuNet, gpuNet;
    const KernelRegistry kernels = fakeRegistry();
    Function cpu = cpuNet.compileFor(Device::Cpu, nullptr);
    Function gpu = gpuNet.compileFor(Device::Cuda, &kernels);
    cpu(batch(0));
    gpu(batch(0));
    const Tensor fresh = values({3, 7}, -0.25, 2.0);
    cpuNet.W1->setValue(fresh);
    gpuNet.W1->setValue(fresh);
    QVERIFY(!gpuNet.W1->newestOnDevice());
    QVERIFY(gpuNet.W1->value().allClose(fresh));
    memory.resetCounts();
    const Tensor a = cpu(batch(1))[0], b = gpu(batch(1))[0];
    QVERIFY(b.allClose(a, 1e-5, 1e-5));
    // Only W1 went up again, once.
    QCOMPARE(memory.copiesOf(Copy::HostToDevice, bytesOf(gpuNet.W1)), 1);
    QCOMPARE(parameterCopies(memory, Copy::HostToDevice, gpuNet), 1);
    QVERIFY(gpuNet.W1->value().allClose(cpuNet.W1->value(), 1e-5, 1e-5));
    // A value read before an update is the caller's to keep: the next copy back never writes it.
    const Tensor seen = gpuNet.b1->value();
    const Tensor before = seen.clone();
    gpu(batch(2));
    QVERIFY(seen.bitwiseEqual(before));
    QVERIFY(!gpuNet.b1->value().bitwiseEqual(before));
  }

  void testStoppedOrFailedRunLeavesParametersWhole() {
    FakeDeviceMemory memory;
    Mlp gpuNet;
    const KernelRegistry kernels = fakeRegistry();
    Function gpu = gpuNet.compileFor(Device::Cuda, &kernels);
    gpu(batch(0));  // warm: the parameters live on the device
    std::vector<Tensor> start;
    for (const auto& p : gpuNet.params()) start.push_back(p->value().clone());
    // Does a node overwrite a parameter in place (Gemm{inplace} on W)? Then the checks below
    // cover a run stopped after that write as well.
    const StoragePlan& plan = gpu.program().plan();
    const auto& schedule = gpu.program().schedule();
    std::size_t lastOverwrite = 0;
    bool overwrites = false;
    for (const StoragePlan::Overwrite& o : plan.overwrites)
      if (o.graphInput >= 0) {
        overwrites = true;
        lastOverwrite = std::max<std::size_t>(lastOverwrite, o.position);
      }
    // Stopped: stepped past every node (the in-place ones included) but the last, then dropped.
    {
      Execution e = gpu.begin(batch(1));
      for (std::size_t k = 0; k + 1 < schedule.size(); ++k) QVERIFY(e.step());
      if (overwrites && lastOverwrite + 1 < schedule.size())
        qInfo("stopped after the in-place update at position %zu", lastOverwrite);
    }
    for (std::size_t i = 0; i < start.size(); ++i)
      QVERIFY2(gpuNet.params()[i]->value().bitwiseEqual(start[i]),
               gpuNet.params()[i]->name().c_str());
    // Failed: a kernel error after the in-place updates ran (the last device node throws).
    {
      Execution e = gpu.begin(batch(1));
      std::size_t lastDevice = 0;
      for (std::size_t k = 0; k < schedule.size(); ++k)
        if (gpu.program().kernel(k).source == "fake") lastDevice = k;
      for (std::size_t k = 0; k < lastDevice; ++k) QVERIFY(e.step());
      failNextLaunch() = true;
      QVERIFY_THROWS_EXCEPTION(std::exception, e.run());
    }
    for (std::size_t i = 0; i < start.size(); ++i)
      QVERIFY2(gpuNet.params()[i]->value().bitwiseEqual(start[i]),
               gpuNet.params()[i]->name().c_str());
    // Private copies were made on the device: no parameter crossed to the host for them.
    memory.resetCounts();
    Mlp cpuNet;
    Function cpu = cpuNet.compileFor(Device::Cpu, nullptr);
    cpu(batch(0));
    const Tensor a = cpu(batch(1))[0], b = gpu(batch(1))[0];
    QVERIFY(b.allClose(a, 1e-5, 1e-5));
    QCOMPARE(parameterCopies(memory, Copy::HostToDevice, gpuNet), 0);
    for (std::size_t i = 0; i < start.size(); ++i)
      QVERIFY(gpuNet.params()[i]->value().allClose(cpuNet.params()[i]->value(), 1e-5, 1e-5));
  }

  void testDebugSessionReadsAndUpdatesOnDevice() {
    FakeDeviceMemory memory;
    Mlp cpuNet, gpuNet;
    const KernelRegistry kernels = fakeRegistry();
    Function cpu = cpuNet.compileFor(Device::Cpu, nullptr);
    Function gpu = gpuNet.compileFor(Device::Cuda, &kernels);
    cpu(batch(0));
    gpu(batch(0));
    debug::DebugSession s(gpu);
    debug::SessionState st = s.start(batch(1)).get();
    QCOMPARE(st.phase, debug::SessionPhase::Ready);
    // The session sees W1 as the function reads it, through a host copy.
    const std::optional<debug::ValueView> w1 = s.value("W1").get();
    QVERIFY(w1.has_value());
    QCOMPARE(w1->value.device(), Device::Cpu);
    QVERIFY(w1->value.allClose(cpuNet.W1->value(), 1e-5, 1e-5));
    st = s.run().get();
    QVERIFY2(st.phase == debug::SessionPhase::Finished, st.error.c_str());
    const std::vector<Tensor> out = s.finish().get();
    QVERIFY(out[0].allClose(cpu(batch(1))[0], 1e-5, 1e-5));
    for (std::size_t i = 0; i < 4; ++i)
      QVERIFY(gpuNet.params()[i]->value().allClose(cpuNet.params()[i]->value(), 1e-5, 1e-5));
  }

  void testReadOnlyParametersUploadOnce() {
    // Inference: W is only read; it goes up on the first call and never again.
    FakeDeviceMemory memory;
    auto W = SharedVariable::create(values({3, 7}, 0.5, 0.1), "W");
    const VarPtr x = Variable::create(TensorType(DType::Float32, {5, 3}), "x");
    const KernelRegistry kernels = fakeRegistry();
    CompileOptions o;
    o.mode = Mode::FastRun;
    o.device = Device::Cuda;
    o.kernels = &kernels;
    Function f = compile({x}, {tanh(dot(x, W))}, {}, o);
    CompileOptions c;
    c.mode = Mode::FastRun;
    Function ref = compile({x}, {tanh(dot(x, W))}, {}, c);
    QCOMPARE(f.graph().inputs()[1]->type().device(), Device::Cuda);
    for (int step = 0; step < 3; ++step) {
      memory.resetCounts();
      const Tensor xs = values({5, 3}, 1.0, step);
      QVERIFY(f({xs})[0].allClose(ref({xs})[0], 1e-6, 1e-6));
      QCOMPARE(memory.copiesOf(Copy::HostToDevice, bytesOf(W)), step == 0 ? 1 : 0);
    }
    QVERIFY(!W->newestOnDevice());  // never updated: the host value is current
  }

  void testSharedReadOnTheHostStaysThere() {
    // W is read by a device node (Dot) and by a CPU node (sum: this registry has no CAReduce):
    // it keeps its GpuFromHost and is not made resident.
    FakeDeviceMemory memory;
    auto W = SharedVariable::create(values({3, 7}, 0.5, 0.1), "W");
    const VarPtr x = Variable::create(TensorType(DType::Float32, {5, 3}), "x");
    KernelRegistry kernels;
    kernels.add("Dot", Device::Cuda, &fakeDeviceKernel, "fake");
    CompileOptions o;
    o.mode = Mode::None;
    o.device = Device::Cuda;
    o.kernels = &kernels;
    Function f = compile({x}, {dot(x, W), sum(W)}, {}, o);
    bool hostW = false, transfer = false;
    for (const VarPtr& in : f.graph().inputs())
      hostW = hostW || (in->kind() == Variable::Kind::Shared && in->type().device() == Device::Cpu);
    for (const Apply* node : f.graph().nodes())
      transfer = transfer || (node->op().name() == "GpuFromHost" &&
                              node->input(0)->kind() == Variable::Kind::Shared);
    QVERIFY(hostW);
    QVERIFY(transfer);
    const std::vector<Tensor> out = f({values({5, 3}, 1.0, 0.0)});
    QCOMPARE(out.size(), std::size_t(2));
  }

  void testFunctionGraphEdits() {
    // removeInput refuses an input still read or updated; replaceOutput takes another device only.
    const VarPtr a = Variable::create(TensorType(DType::Float32, {2}), "a");
    auto s = SharedVariable::create(values({2}, 1.0, 0.0), "s");
    FunctionGraph fg({a, s}, {exp(a), s * 2.0});
    fg.setUpdate(1, 1);
    QVERIFY_THROWS_EXCEPTION(GraphError, fg.removeInput(0));  // read by exp
    QVERIFY_THROWS_EXCEPTION(GraphError, fg.removeInput(5));
    const VarPtr wrong = Variable::create(TensorType(DType::Float64, {2}), "w");
    QVERIFY_THROWS_EXCEPTION(TypeError, fg.replaceOutput(0, wrong, "t"));
    const VarPtr unused = Variable::create(TensorType(DType::Float32, {2}), "u");
    FunctionGraph fg2({a, unused, s}, {exp(a), s * 2.0});
    fg2.setUpdate(1, 2);
    fg2.removeInput(1);
    QCOMPARE(fg2.inputs().size(), std::size_t(2));
    QCOMPARE(fg2.updateMapping().at(1), std::size_t(1));  // moved up with the input
    fg2.checkIntegrity();
  }

  void testTwinSharesTheValue() {
    FakeDeviceMemory memory;
    auto W = SharedVariable::create(values({2, 2}, 1.0, 0.0), "W");
    const auto twin = W->onDevice(Device::Cuda);
    QCOMPARE(twin->type().device(), Device::Cuda);
    QCOMPARE(twin->name(), std::string("W"));
    const Tensor& d = twin->placedValue();
    QCOMPARE(d.device(), Device::Cuda);
    QCOMPARE(memory.copies[int(Copy::HostToDevice)], 1);
    twin->placedValue();
    QCOMPARE(memory.copies[int(Copy::HostToDevice)], 1);  // uploaded once
    // A device value set through the twin is what the host variable reads (copied back once).
    twin->setValueBorrowed(toDevice(values({2, 2}, 2.0, 1.0), Device::Cuda));
    QVERIFY(W->newestOnDevice());
    QVERIFY(W->value().allClose(values({2, 2}, 2.0, 1.0)));
    QCOMPARE(memory.copies[int(Copy::DeviceToHost)], 1);
    QCOMPARE(twin->value().device(), Device::Cpu);  // value() is the host value on any twin
    // A host-typed variable may be given a device value; a wrong shape is refused either way.
    W->setValue(toDevice(values({2, 2}, 3.0, 0.0), Device::Cuda));
    QVERIFY(W->value().allClose(values({2, 2}, 3.0, 0.0)));
    QVERIFY_THROWS_EXCEPTION(TypeError, W->setValue(toDevice(values({3}, 1.0, 0.0), Device::Cuda)));
  }
};

TSCOPE_TEST_MAIN(TestGpuResidentShared)
#include "tst_gpu_resident_shared.moc"
