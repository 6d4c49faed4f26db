// VM::requestStop (engine/vm/vm.h, engine/vm/cancel.h): a stop before the run, between nodes (from
// an observer, as another thread would), and inside a kernel (ExecutionCancelled) ends the run as
// Stopped, not Failed; the execution applies no update, the VM starts again as usual, and the
// cancellation flag is visible to kernels only while the VM drives them.
#include "engine/compile/function.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/vm/cancel.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <algorithm>
#include <atomic>

using namespace tscope::engine;

namespace {
constexpr std::int64_t U = kUnknownDim;
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

// Asks for a stop after the node at `at`, as another thread's stop() would arrive then; passive,
// so a committed run is still granted (Note [Committed runs] in vm.h).
struct PassiveStop : ExecutionObserver {
  std::size_t at = 0;
  bool mayInterrupt() const override { return false; }
  void afterNode(VM& vm, const NodeEvent& e) override {
    if (e.framePath.empty() && e.position == at) vm.requestStop();
  }
};

// An SGD-like step that fast_run updates in place (Gemm{inplace} on W), with a node before the
// update (exp) and a probe after it that records whether its kernel saw the stop flag.
struct InPlaceStep {
  Tensor w0 = Tensor::fromDoubles(DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6});
  std::shared_ptr<SharedVariable> W = SharedVariable::create(w0, "W");
  std::shared_ptr<SharedVariable> b = SharedVariable::create(ft({2}, {0, 0}), "b");
  std::atomic<int> probeCalls{0};
  std::atomic<bool> probeSawStop{false};
  OpPtr probe =
      asOp("probe", {TensorType(DType::Float32, {3, 2})}, {TensorType(DType::Float32, {3, 2})},
           [this](std::span<const Tensor> in) -> std::vector<Tensor> {
             ++probeCalls;
             probeSawStop = cancellationRequested();
             throwIfCancelled();
             return {in[0].clone()};
           });
  VarPtr x = Variable::create(TensorType(DType::Float32, {U, 3}), "x");
  VarPtr g = Variable::create(TensorType(DType::Float32, {U, 2}), "g");
  Function f = compile({x, g}, {sum(g)},
                       {{W, (*probe)({W - 0.5 * dot(transpose(exp(x)), g)})}, {b, b + sum(g, {0})}},
                       {.mode = Mode::FastRun});
  Tensor xv = Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 0, 2, 0, 1, 1});
  Tensor gv = Tensor::fromDoubles(DType::Float32, {2, 2}, {1, -1, 0.5, 2});

  // The schedule position of the first node that overwrites W (the commit point).
  std::size_t commitAt() const {
    std::size_t at = static_cast<std::size_t>(-1);
    for (const auto& o : const_cast<Function&>(f).program().plan().overwrites)
      if (o.graphInput >= 0) at = std::min<std::size_t>(at, o.position);
    return at;
  }
};

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

  // Note [Committed runs]: a plain call writes W in place with no copy; a stop that arrives
  // after that write lets the run go to its end (the kernels after it no longer see the flag), so
  // every update lands whole, and the request waits for the next start().
  void testCommittedRunFinishesAfterItsFirstUpdate() {
    InPlaceStep ref;  // the unstopped step, for the expected values
    ref.f({ref.xv, ref.gv});
    InPlaceStep s;
    const std::size_t at = s.commitAt();
    QVERIFY2(at != static_cast<std::size_t>(-1), "fast_run did not update W in place");
    QVERIFY(at > 0);  // exp(x) runs before the update
    auto stop = std::make_shared<PassiveStop>();
    stop->at = at;
    s.f.vm().addObserver(stop);
    const std::vector<Tensor> out = s.f({s.xv, s.gv});
    QCOMPARE(out.size(), std::size_t(1));
    QCOMPARE(s.f.vm().status(), VM::Status::Finished);
    QVERIFY(s.f.vm().committed());
    QVERIFY(s.f.vm().stopRequested());  // waits for the next start()
    QCOMPARE(s.probeCalls.load(), 1);
    QVERIFY(!s.probeSawStop.load());
    QVERIFY(s.W->value().bitwiseEqual(ref.W->value()));
    QVERIFY(s.b->value().bitwiseEqual(ref.b->value()));
    // The next call starts afresh (the stale request is dropped) and runs whole.
    s.f.vm().removeObserver(*stop);
    s.f({s.xv, s.gv});
    QVERIFY(!s.f.vm().stopRequested());
    QCOMPARE(s.probeCalls.load(), 2);
  }

  // Before the first update nothing is written: the stop is honoured and W keeps its value.
  void testCommittedRunStopsBeforeItsFirstUpdate() {
    InPlaceStep s;
    const std::size_t at = s.commitAt();
    QVERIFY(at != static_cast<std::size_t>(-1) && at > 0);
    auto stop = std::make_shared<PassiveStop>();
    stop->at = at - 1;
    s.f.vm().addObserver(stop);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, s.f({s.xv, s.gv}));
    QCOMPARE(s.f.vm().status(), VM::Status::Stopped);
    QVERIFY(!s.f.vm().committed());
    QCOMPARE(s.probeCalls.load(), 0);
    QVERIFY(s.W->value().bitwiseEqual(s.w0));
    QCOMPARE(s.b->value().toDoubles(), std::vector<double>({0, 0}));
  }

  // Granted only when nothing can pause the run; a begin() the caller drives is never committed.
  void testCommitIsGrantedOnlyWhenNothingCanPause() {
    InPlaceStep s;
    QVERIFY(s.f.vm().commitNextRun());
    auto pausing = std::make_shared<StopAfter>();  // mayInterrupt(): true
    pausing->at = 1000;
    s.f.vm().addObserver(pausing);
    QVERIFY(!s.f.vm().commitNextRun());
    s.f.vm().removeObserver(*pausing);
    s.f.vm().setRetain(Retain::All);
    QVERIFY(!s.f.vm().commitNextRun());
    s.f.vm().setRetain(Retain::AfterLastUse);
    {
      Execution e = s.f.begin({s.xv, s.gv});  // driven by the caller: W gets a private copy
      QCOMPARE(e.run(), VM::Status::Finished);
      QVERIFY(!e.vm().committed());
    }  // dropped without finish()
    QVERIFY(s.W->value().bitwiseEqual(s.w0));
    // With a pausing observer a call copies W (and is not committed): a stop after the update
    // node stops the run and W stays whole.
    auto stop = std::make_shared<StopAfter>();
    stop->at = s.commitAt();
    s.f.vm().addObserver(stop);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, s.f({s.xv, s.gv}));
    QCOMPARE(s.f.vm().status(), VM::Status::Stopped);
    QVERIFY(s.W->value().bitwiseEqual(s.w0));
  }
};

TSCOPE_TEST_MAIN(TestVMStop)
#include "tst_vm_stop.moc"
