// VM::requestStop (engine/vm/vm.h, engine/vm/cancel.h): a stop before the run, between nodes (from
// an observer, as another thread would), and inside a kernel (ExecutionCancelled) ends the run as
// Stopped, not Failed; the execution applies no update, the VM starts again as usual, and the
// cancellation flag is visible to kernels only while the VM drives them.
#include "engine/compile/function.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/vm/cancel.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <atomic>

using namespace tscope::engine;

namespace {
constexpr std::int64_t U = kUnknownDim;
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

struct StopAfter : ExecutionObserver {
  std::size_t at = 0;
  int ran = 0;
  void afterNode(VM& vm, const NodeEvent& e) override {
    ++ran;
    if (e.position == at) vm.requestStop();
  }
};
}  // namespace

class TestVMStop : public QObject {
  Q_OBJECT
 private slots:
  void testStopBeforeRun() {
    VarPtr x = Variable::create(TensorType(DType::Float32, {U}), "x");
    Function f = compile({x}, {exp(x) + 1.0});
    Execution e = f.begin({ft({1}, {0})});
    e.vm().requestStop();
    QCOMPARE(e.run(), VM::Status::Stopped);
    QCOMPARE(e.vm().pc(), std::size_t(0));
    QVERIFY(!e.vm().stopRequested());  // consumed
    QVERIFY(!e.vm().step());           // nothing runs until the next start
    QCOMPARE(statusName(VM::Status::Stopped), std::string_view("stopped"));
    QCOMPARE(f({ft({1}, {0})})[0].at({0}), 2.0);  // the function is reusable
  }

  void testStopBetweenNodesAppliesNoUpdate() {
    auto w = SharedVariable::create(ft({1}, {5}), "w");
    VarPtr x = Variable::create(TensorType(DType::Float32, {1}), "x");
    VarPtr y = exp(x * w);
    VarPtr z = y + 1.0;
    Function f = compile({x}, {z}, {{w, z}});
    auto stop = std::make_shared<StopAfter>();
    f.vm().addObserver(stop);
    Execution e = f.begin({ft({1}, {0})});
    QCOMPARE(e.run(), VM::Status::Stopped);
    QCOMPARE(stop->ran, 1);  // stopped at the boundary after node 0
    bool refused = false;
    try {
      e.finish();
    } catch (const std::logic_error&) {
      refused = true;
    }
    QVERIFY(refused);
    QCOMPARE(w->value().at({0}), 5.0);
    f.vm().removeObserver(*stop);
    f({ft({1}, {0})});
    QCOMPARE(w->value().at({0}), 2.0);
  }

  // A kernel that sees the flag throws ExecutionCancelled: the VM stops (not Failed).
  void testStopInsideKernel() {
    std::atomic<int> calls{0};
    std::atomic<VM*> vmSeen{nullptr};
    std::atomic<bool> clearBefore{false}, setAfter{false};
    auto op = asOp("slow", {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
                   [&](std::span<const Tensor> in) -> std::vector<Tensor> {
                     ++calls;
                     clearBefore = !cancellationRequested();
                     vmSeen.load()->requestStop();  // as stop() from another thread would
                     setAfter = cancellationRequested();
                     throwIfCancelled();
                     return {in[0].clone()};
                   });
    VarPtr x = Variable::create(TensorType(DType::Float32, {U}), "x");
    VarPtr y = (*op)({exp(x)}) + 1.0;
    Function f = compile({x}, {y});
    vmSeen = &f.vm();
    Execution e = f.begin({ft({1}, {0})});
    QCOMPARE(e.run(), VM::Status::Stopped);
    QCOMPARE(calls.load(), 1);
    QVERIFY(clearBefore.load());
    QVERIFY(setAfter.load());
    QVERIFY(e.vm().error() == nullptr);
    QVERIFY(!cancellationRequested());  // outside a VM drive the flag is not visible
  }
};

TSCOPE_TEST_MAIN(TestVMStop)
#include "tst_vm_stop.moc"
