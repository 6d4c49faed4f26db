// The debugger's reads of values that live in device memory (Note [Reading device values] in
// engine/tensor/device_memory.h), without a GPU: the fake device of tests/engine/tensor/
// fake_device.h is host memory tagged Device::Cuda whose host access throws, run by "device
// kernels" that compute on host aliases of its bytes. A graph compiled for Device::Cuda with those
// kernels keeps its intermediate values on the device; NanGuard (scan, root-cause chain and the
// creator's input sample), DebugSession (values, a breakpoint condition, an edit and recompute)
// and VM::snapshot must read them through host copies, never touch device bytes on the host.
#include "../tensor/fake_device.h"
#include "engine/compile/function.h"
#include "engine/compile/kernel.h"
#include "engine/debug/debug_session.h"
#include "engine/debug/nan_guard.h"
#include "engine/debug/nan_scan.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/ops/basic.h"
#include "session_test_support.h"
#include "test_main.h"

#include <chrono>

using namespace tscope::engine;
using namespace tscope::engine::debug;
using tscope::test::fakeDeviceKernel;
using tscope::test::FakeDeviceMemory;
using tscope::test::fakeKernelLaunches;
using tscope::test::get;

namespace {

Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

// y = log(x), z = y * 3 + 1, compiled for the fake device (mode none: the nodes stay apart).
struct DeviceGraph {
  KernelRegistry kernels;
  VarPtr x = Variable::create(TensorType(DType::Float32, {4}), "x");
  VarPtr y, z;
  DeviceGraph() {
    kernels.add("Elemwise", Device::Cuda, &fakeDeviceKernel, "fake");
    kernels.add("Composite", Device::Cuda, &fakeDeviceKernel, "fake");
    y = log(x);
    y->setName("y");
    z = y * 3.0 + 1.0;
    z->setName("z");
  }
  Function compileWith(std::vector<std::shared_ptr<ExecutionObserver>> observers = {}) {
    CompileOptions o;
    o.mode = Mode::None;
    o.device = Device::Cuda;
    o.kernels = &kernels;
    o.observers = std::move(observers);
    return compile({x}, {z}, {}, o);
  }
};
}  // namespace

class TestDebugOnDevice : public QObject {
  Q_OBJECT
 private slots:
  void init() { fakeKernelLaunches() = 0; }

  void hostCopiesOfDeviceTensors() {
    FakeDeviceMemory memory;
    const Tensor d = toDevice(ft({2, 2}, {1, 2, 3, 4}), Device::Cuda);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, d.clone());
    const Tensor h = hostCopy(d);
    QCOMPARE(h.device(), Device::Cpu);
    QVERIFY(h.allClose(ft({2, 2}, {1, 2, 3, 4})));
    const Tensor c = cloneOnDevice(d);
    QCOMPARE(c.device(), Device::Cuda);
    QVERIFY(!c.sharesStorageWith(d));
    QCOMPARE(memory.copies[int(DeviceMemory::Copy::DeviceToDevice)], 1);
    QVERIFY(hostCopy(c).allClose(h));
    // A transposed device view comes back laid out as its shape says.
    QVERIFY(hostCopy(cloneOnDevice(d.transpose())).allClose(ft({2, 2}, {1, 3, 2, 4})));
    QVERIFY(!hostCopy(Tensor()).defined());
    // The guard's scans read a device value through one transfer to the host.
    const int toHostBefore = memory.copies[int(DeviceMemory::Copy::DeviceToHost)];
    const Tensor bad = toDevice(ft({3}, {1, std::nan(""), -5}), Device::Cuda);
    const QuickScan q = quickScan(bad, true);
    QVERIFY(q.nonFinite);
    QCOMPARE(q.maxAbs, 5.0);
    QCOMPARE(countBad(bad, false, 0).counts.nan, std::int64_t{1});
    QCOMPARE(memory.copies[int(DeviceMemory::Copy::DeviceToHost)], toHostBefore + 2);
  }

  void nanGuardReadsDeviceValues() {
    FakeDeviceMemory memory;
    DeviceGraph g;
    NanGuardOptions options;
    options.action = NanAction::Warn;
    auto guard = std::make_shared<NanGuard>(options);
    Function f = g.compileWith({guard});
    guard->watch(f);
    const std::vector<Tensor> out = f({ft({4}, {1, -1, 4, -2})});
    QVERIFY(fakeKernelLaunches() >= 2);  // log and the arithmetic ran as device kernels
    QCOMPARE(out[0].device(), Device::Cpu);
    QVERIFY(std::isnan(out[0].at({1})));
    QVERIFY(guard->eventCount() >= 1);
    const NanReport r = guard->events().front();
    QCOMPARE(r.check, NanCheck::NaN);
    QCOMPARE(r.counts.nan, std::int64_t{2});
    QCOMPARE(r.firstIndex, (std::vector<std::int64_t>{1}));
    QCOMPARE(r.chain.front().role, ChainLink::Role::Creator);
    const std::string text = r.toText();
    QVERIFY2(text.find("log") != std::string::npos, text.c_str());
    // The creator's input sample was read from the device value of x through a host copy.
    QVERIFY(!r.chain.front().inputs.empty());
    QVERIFY(r.chain.front().inputs[0].value.has_value());
    QCOMPARE(*r.chain.front().inputs[0].value, -1.0);
    // A clean call on the device reports nothing new.
    const std::size_t before = guard->eventCount();
    f({ft({4}, {1, 2, 3, 4})});
    QCOMPARE(guard->eventCount(), before);
  }

  void nanGuardNamesAsOnTheCpu() {
    // The same graph on the CPU and on the device, unfused and fused: the same events (a NaN is
    // reported once, at the node that made it: Note [Transfers are not scanned]), naming the
    // same variable, op, creator and first element.
    FakeDeviceMemory memory;
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      DeviceGraph g;
      NanGuardOptions options;
      options.action = NanAction::Warn;
      auto onCpu = std::make_shared<NanGuard>(options);
      auto onDevice = std::make_shared<NanGuard>(options);
      CompileOptions c;
      c.mode = mode;
      c.observers = {onCpu};
      Function cpu = compile({g.x}, {g.z}, {}, c);
      CompileOptions d = c;
      d.device = Device::Cuda;
      d.kernels = &g.kernels;
      d.observers = {onDevice};
      Function gpu = compile({g.x}, {g.z}, {}, d);
      onCpu->watch(cpu);
      onDevice->watch(gpu);
      const Tensor bad = ft({4}, {1, -1, 4, -2});
      cpu({bad});
      gpu({bad});
      const std::vector<NanReport> a = onCpu->events(), b = onDevice->events();
      QCOMPARE(b.size(), a.size());
      QVERIFY(!a.empty());
      for (std::size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(b[i].variable, a[i].variable);
        QCOMPARE(b[i].node.op, a[i].node.op);
        QCOMPARE(b[i].where, a[i].where);
        QCOMPARE(b[i].firstIndex, a[i].firstIndex);
        QCOMPARE(b[i].counts.nan, a[i].counts.nan);
        QVERIFY(b[i].creator() && a[i].creator());
        QCOMPARE(b[i].creator()->node.op, a[i].creator()->node.op);
        QCOMPARE(b[i].creator()->node.site, a[i].creator()->node.site);
      }
    }
  }

  void sessionValuesBreakpointsAndEditsOnDevice() {
    FakeDeviceMemory memory;
    DeviceGraph g;
    Function f = g.compileWith();
    DebugSession s(f);
    get(s.addBreakpoint(parseBreakSpec("var:y@nan")));
    SessionState st = get(s.run({ft({4}, {1, -1, 4, -2})}));
    QCOMPARE(st.phase, SessionPhase::Paused);
    QCOMPARE(st.reason, PauseKind::Breakpoint);
    const std::optional<ValueView> y = get(s.value("y"));
    QVERIFY(y.has_value());
    QCOMPARE(y->value.device(), Device::Cpu);
    QCOMPARE(y->stats.nan, std::int64_t{2});
    QCOMPARE(y->value.at({2}), std::log(4.0f) * 1.0);
    for (const ValueView& v : get(s.values(0))) QCOMPARE(v.value.device(), Device::Cpu);
    // An edit of a device value goes back to the device; recompute reruns what reads it.
    get(s.setValue("y", ft({4}, {1, 2, 3, 4})));
    get(s.recompute());
    st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
    const std::vector<Tensor> out = get(s.finish());
    QVERIFY(out[0].allClose(ft({4}, {4, 7, 10, 13})));
    // A clean input does not hit the condition.
    st = get(s.run({ft({4}, {1, 2, 3, 4})}));
    QCOMPARE(st.phase, SessionPhase::Finished);
    get(s.finish());
  }

  void snapshotIsAHostCopy() {
    FakeDeviceMemory memory;
    DeviceGraph g;
    Function f = g.compileWith();
    f.vm().setRetain(Retain::All);  // every value stays for the look below
    Execution e = f.begin({ft({4}, {1, 2, 3, 4})});
    e.run();
    const Variable* ySeen = nullptr;
    for (const Apply* node : f.graph().nodes())
      for (int o = 0; o < node->nOutputs(); ++o) {
        const Variable& out = node->outputRef(o);
        if (out.name() == "y" && out.type().device() == Device::Cuda && e.vm().value(out))
          ySeen = &out;
      }
    QVERIFY(ySeen != nullptr);  // log(x), kept on the device, with the user's name
    QCOMPARE(e.vm().value(*ySeen)->device(), Device::Cuda);
    const std::optional<Tensor> snap = e.vm().snapshot(*ySeen);
    QVERIFY(snap.has_value());
    QCOMPARE(snap->device(), Device::Cpu);
    QVERIFY(snap->allClose(ft({4}, {0, std::log(2.0), std::log(3.0), std::log(4.0)}), 1e-6));
  }
};

TSCOPE_TEST_MAIN(TestDebugOnDevice)
#include "tst_debug_on_device.moc"
