// The VM (engine/vm/vm.h): its states and their transitions, pauses before and after nodes, pause
// requests from another thread, failures of kernels and observers, frames for inner graphs seen by
// observers (nested, and run from two threads at once), observer list changes during a run, the
// retain policy with copy-on-destroy, values decided by position, timing, the kernel slot and the
// storage plan, and Function::begin / Execution::finish.
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/graph/errors.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <atomic>
#include <chrono>
#include <thread>

using namespace tscope::engine;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape = {U}) {
  return Variable::create(TensorType(DType::Float32, std::move(shape)), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

struct Recorder : ExecutionObserver {
  std::vector<std::string> events;
  std::size_t pauseAfter = static_cast<std::size_t>(-1);
  std::size_t pauseBeforeAt = static_cast<std::size_t>(-1);
  std::vector<VM::Status> statusSeen;
  void onStart(VM&) override { events.push_back("start"); }
  bool pauseBefore(const VM&, const NodeEvent& e) override {
    return e.depth() == 0 && e.position == pauseBeforeAt;
  }
  void beforeNode(VM& vm, const NodeEvent& e) override {
    statusSeen.push_back(vm.status());
    std::string path;
    for (std::int64_t id : e.framePath) path += std::to_string(id) + "/";
    events.push_back("before " + path + std::to_string(e.position) + " " + e.node.op().str());
  }
  void afterNode(VM& vm, const NodeEvent& e) override {
    std::string path;
    for (std::int64_t id : e.framePath) path += std::to_string(id) + "/";
    events.push_back("after " + path + std::to_string(e.position));
    if (e.depth() == 0 && e.position == pauseAfter) vm.requestPause();
  }
  void onError(VM&, const NodeEvent& e, const std::exception_ptr&) override {
    events.push_back("error " + std::to_string(e.position));
  }
  void onFinish(VM&) override { events.push_back("finish"); }
};

// exp(x) * 2 + 1 with mode none: three nodes in this order.
struct Chain {
  VarPtr x = fvar("x");
  VarPtr y = exp(x);
  VarPtr z = y * 2.0;
  VarPtr w = z + 1.0;
  Function f = compile({x}, {w});
};

std::shared_ptr<const AsOp> countingOp(const std::string& name, std::atomic<int>& calls,
                                       bool fail = false) {
  return asOp(name, {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
              [&calls, fail](std::span<const Tensor> in) -> std::vector<Tensor> {
                ++calls;
                if (fail) throw std::runtime_error("kaput");
                return {in[0].clone()};
              });
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

class TestVM : public QObject {
  Q_OBJECT

 private slots:
  void testStatesOfARun() {
    Chain c;
    VM& vm = c.f.vm();
    QCOMPARE(vm.status(), VM::Status::Idle);
    QVERIFY(!vm.step());
    QCOMPARE(vm.run(), VM::Status::Idle);
    auto rec = std::make_shared<Recorder>();
    vm.addObserver(rec);
    vm.start(std::vector<Tensor>{ft({2}, {0, 0})});
    QCOMPARE(vm.status(), VM::Status::Ready);
    QCOMPARE(vm.pc(), std::size_t(0));
    QVERIFY(vm.step());
    QCOMPARE(vm.status(), VM::Status::Paused);
    QCOMPARE(vm.pauseReason(), VM::PauseReason::Step);
    QCOMPARE(vm.pc(), std::size_t(1));
    QCOMPARE(vm.run(), VM::Status::Finished);
    QVERIFY(!vm.step());
    QCOMPARE(vm.run(), VM::Status::Finished);
    for (VM::Status s : rec->statusSeen) QCOMPARE(s, VM::Status::Running);
    QCOMPARE(rec->events.front(), std::string("start"));
    QCOMPARE(rec->events.back(), std::string("finish"));
    QCOMPARE(rec->events.size(), std::size_t(8));
    QCOMPARE(vm.outputValues()[0].toDoubles(), (std::vector<double>{3, 3}));
    // Finished -> Ready again.
    vm.start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(vm.status(), VM::Status::Ready);
  }

  void testPauseAfterNodeAndReplaceValue() {
    Chain c;
    VM& vm = c.f.vm();
    auto rec = std::make_shared<Recorder>();
    rec->pauseAfter = 1;
    vm.addObserver(rec);
    vm.start(std::vector<Tensor>{ft({2}, {0, 0})});
    QCOMPARE(vm.run(), VM::Status::Paused);
    QCOMPARE(vm.pauseReason(), VM::PauseReason::Requested);
    QCOMPARE(vm.pc(), std::size_t(2));
    const Variable& z = vm.schedule()[1]->outputRef(0);
    QVERIFY(vm.value(z) != nullptr);
    QCOMPARE(vm.value(z)->toDoubles(), (std::vector<double>{2, 2}));
    vm.setValue(z, ft({2}, {10, 20}));
    // A value not computed yet cannot be replaced.
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             vm.setValue(vm.schedule()[2]->outputRef(0), ft({2}, {0, 0})));
    QCOMPARE(vm.run(), VM::Status::Finished);
    QCOMPARE(vm.outputValues()[0].toDoubles(), (std::vector<double>{11, 21}));
  }

  void testPauseBeforeNodeByBreakAndVerdict() {
    Chain c;
    VM& vm = c.f.vm();
    auto rec = std::make_shared<Recorder>();
    vm.addObserver(rec);
    const Apply& second = *vm.schedule()[1];
    vm.setBreakBefore(second);
    vm.start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(vm.run(), VM::Status::Paused);
    QCOMPARE(vm.pauseReason(), VM::PauseReason::Breakpoint);
    QCOMPARE(vm.pc(), std::size_t(1));
    // Paused before: the node did not run, its observers were not called for it.
    QVERIFY(vm.value(second.outputRef(0)) == nullptr);
    QVERIFY(!contains(rec->events, "before 1 " + second.op().str()));
    // Resuming steps off the break position; the run goes to the end.
    QCOMPARE(vm.run(), VM::Status::Finished);
    // A break on the first node stops before anything ran.
    vm.clearBreakpoints();
    vm.setBreakBefore(*vm.schedule()[0]);
    vm.start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(vm.run(), VM::Status::Paused);
    QCOMPARE(vm.pc(), std::size_t(0));
    QCOMPARE(vm.run(), VM::Status::Finished);
    // An observer's verdict.
    vm.clearBreakpoints();
    rec->pauseBeforeAt = 2;
    vm.start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(vm.run(), VM::Status::Paused);
    QCOMPARE(vm.pauseReason(), VM::PauseReason::Observer);
    QCOMPARE(vm.pc(), std::size_t(2));
    QCOMPARE(vm.run(), VM::Status::Finished);
    QCOMPARE(vm.outputValues()[0].toDoubles(), (std::vector<double>{3}));
  }

  void testPauseRequestedFromAnotherThreadBeforeRun() {
    Chain c;
    VM& vm = c.f.vm();
    for (bool observed : {false, true}) {
      if (observed) vm.addObserver(std::make_shared<Recorder>());
      vm.start(std::vector<Tensor>{ft({1}, {0})});
      std::thread other([&vm] { vm.requestPause(); });
      other.join();
      QVERIFY(vm.pauseRequested());
      QCOMPARE(vm.run(), VM::Status::Paused);
      QCOMPARE(vm.pauseReason(), VM::PauseReason::Requested);
      QCOMPARE(vm.pc(), std::size_t(0));
      QVERIFY(!vm.pauseRequested());  // consumed by that pause
      QCOMPARE(vm.run(), VM::Status::Finished);
    }
  }

  void testPauseRequestedWhileRunning() {
    // A node that asks for a pause from another thread while it runs: the VM stops right after it.
    std::atomic<int> calls{0};
    VM* target = nullptr;
    auto asker =
        asOp("AskPause", {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
             [&](std::span<const Tensor> in) -> std::vector<Tensor> {
               ++calls;
               std::thread([target] { target->requestPause(); }).join();
               return {in[0].clone()};
             });
    auto x = fvar("x");
    Function f = compile({x}, {exp((*asker)({exp(x)}))});
    target = &f.vm();
    f.vm().start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(f.vm().run(), VM::Status::Paused);
    QCOMPARE(f.vm().pc(), std::size_t(2));
    QCOMPARE(f.vm().run(), VM::Status::Finished);
    QCOMPARE(calls.load(), 1);
  }

  void testFailedNodeIsNotRetried() {
    std::atomic<int> calls{0};
    auto boom = countingOp("Boom", calls, true);
    auto x = fvar("x");
    Function f = compile({x}, {exp((*boom)({exp(x)}))});
    VM& vm = f.vm();
    auto rec = std::make_shared<Recorder>();
    vm.addObserver(rec);
    vm.start(std::vector<Tensor>{ft({2}, {1, 2})});
    try {
      vm.run();
      QFAIL("expected an ExecutionError");
    } catch (const ExecutionError& e) {
      QVERIFY2(std::string(e.what()).find("kaput") != std::string::npos, e.what());
      QCOMPARE(e.nodeId(), vm.schedule()[1]->id());
    }
    QCOMPARE(vm.status(), VM::Status::Failed);
    QCOMPARE(vm.pc(), std::size_t(1));
    QVERIFY(vm.error() != nullptr);
    QVERIFY(vm.errorMessage().find("Boom") != std::string::npos);
    QVERIFY(contains(rec->events, "error 1"));
    // Never retried by accident.
    QCOMPARE(vm.run(), VM::Status::Failed);
    QVERIFY(!vm.step());
    QCOMPARE(calls.load(), 1);
    // The value before the failure is still there; start() begins anew.
    QVERIFY(vm.value(vm.schedule()[0]->outputRef(0)) != nullptr);
    vm.start(std::vector<Tensor>{ft({2}, {1, 2})});
    QCOMPARE(vm.status(), VM::Status::Ready);
  }

  void testThrowingObserverLeavesConsistentState() {
    // fast_run makes exp(y) overwrite y in place; an observer that throws after that node must
    // leave pc past it, so no later step runs the inplace node twice.
    std::atomic<int> calls{0};
    auto produce = countingOp("Produce", calls);
    auto x = fvar("x");
    auto y = (*produce)({x});
    CompileOptions opts;
    opts.mode = Mode::FastRun;
    Function f = compile({x}, {exp(y)}, {}, opts);
    std::size_t inplaceAt = f.vm().schedule().size();
    for (std::size_t p = 0; p < f.vm().schedule().size(); ++p)
      if (!f.vm().schedule()[p]->op().destroyMap().empty()) inplaceAt = p;
    QVERIFY2(inplaceAt < f.vm().schedule().size(), "fast_run made no inplace node");
    struct Thrower : ExecutionObserver {
      std::size_t at = 0;
      void afterNode(VM&, const NodeEvent& e) override {
        if (e.position == at) throw std::runtime_error("observer failed");
      }
    };
    auto thrower = std::make_shared<Thrower>();
    thrower->at = inplaceAt;
    f.vm().addObserver(thrower);
    f.vm().start(std::vector<Tensor>{ft({2}, {0, 1})});
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, f.vm().run());
    QCOMPARE(f.vm().status(), VM::Status::Failed);
    QCOMPARE(f.vm().pc(), inplaceAt + 1);
    QVERIFY(!f.vm().step());
    f.vm().removeObserver(*thrower);
    // A plain call afterwards computes the right value (the output was not exp(exp(..))).
    auto out = f({ft({2}, {0, 1})});
    QCOMPARE(out[0].toDoubles()[0], 1.0);
  }

  void testObserversInOrderAndReverse() {
    struct Named : ExecutionObserver {
      std::vector<std::string>* log;
      std::string name;
      void beforeNode(VM&, const NodeEvent&) override { log->push_back("before " + name); }
      void afterNode(VM&, const NodeEvent&) override { log->push_back("after " + name); }
    };
    std::vector<std::string> log;
    auto a = std::make_shared<Named>();
    a->log = &log;
    a->name = "a";
    auto b = std::make_shared<Named>();
    b->log = &log;
    b->name = "b";
    auto x = fvar("x");
    Function f = compile({x}, {exp(x)});
    f.vm().addObserver(a);
    f.vm().addObserver(b);
    f({ft({1}, {0})});
    QCOMPARE(log, (std::vector<std::string>{"before a", "before b", "after b", "after a"}));
  }

  void testObserversAddedAndRemovedDuringRun() {
    struct Counter : ExecutionObserver {
      int before = 0, after = 0;
      void beforeNode(VM&, const NodeEvent&) override { ++before; }
      void afterNode(VM&, const NodeEvent&) override { ++after; }
    };
    struct Editor : ExecutionObserver {
      std::shared_ptr<Counter> late = std::make_shared<Counter>();
      void afterNode(VM& vm, const NodeEvent& e) override {
        if (e.position == 0) vm.addObserver(late);      // from node 1 on
        if (e.position == 1) vm.removeObserver(*this);  // itself, from node 2 on
      }
      int calls = 0;
      void beforeNode(VM&, const NodeEvent&) override { ++calls; }
    };
    Chain c;
    auto editor = std::make_shared<Editor>();
    c.f.vm().addObserver(editor);
    c.f({ft({1}, {0})});
    QCOMPARE(editor->calls, 2);
    QCOMPARE(editor->late->before, 2);
    QCOMPARE(editor->late->after, 2);
    QCOMPARE(c.f.vm().observers().size(), std::size_t(1));
  }

  void testEventCarriesInputsOutputsAndTimes() {
    // Every output is visible in afterNode, read or not, and inputs are still there.
    struct Check : ExecutionObserver {
      int checked = 0;
      bool ok = true;
      void afterNode(VM&, const NodeEvent& e) override {
        for (const Tensor* t : e.inputs) ok = ok && t && t->defined();
        for (const Tensor* t : e.outputs) ok = ok && t && t->defined();
        ok = ok && e.t1 >= e.t0 && e.t0 > 0;
        ++checked;
      }
    };
    Chain c;
    auto check = std::make_shared<Check>();
    c.f.vm().addObserver(check);
    c.f.vm().setTiming(true);
    c.f({ft({3}, {0, 1, 2})});
    QCOMPARE(check->checked, 3);
    QVERIFY(check->ok);
    const auto timings = c.f.vm().timings(c.f.program());
    QCOMPARE(timings.size(), std::size_t(3));
    for (const auto& t : timings) QCOMPARE(t.calls, std::int64_t(1));
    // Without observers the timing flag keeps the hot loop: one clock reading per node.
    Chain plain;
    plain.f.vm().setTiming(true);
    plain.f({ft({3}, {0, 1, 2})});
    plain.f({ft({3}, {0, 1, 2})});
    const auto fast = plain.f.vm().timings(plain.f.program());
    QCOMPARE(fast.size(), std::size_t(3));
    for (const auto& t : fast) {
      QCOMPARE(t.calls, std::int64_t(2));
      QVERIFY(t.totalNs >= t.lastNs && t.lastNs >= 0);
    }
    plain.f.vm().resetTimings();
    QCOMPARE(plain.f.vm().timings(plain.f.program())[0].calls, std::int64_t(0));
  }

  void testRetainedValuesSurviveInplaceNodes() {
    std::atomic<int> calls{0};
    auto produce = countingOp("Produce", calls);
    auto x = fvar("x");
    auto y = (*produce)({x});
    CompileOptions opts;
    opts.mode = Mode::FastRun;
    Function f = compile({x}, {exp(y) + 1.0}, {}, opts);
    VM& vm = f.vm();
    QVERIFY2(!f.program().plan().overwrites.empty(), "fast_run made no inplace node");
    const Variable* produced = &vm.schedule()[0]->outputRef(0);
    vm.setRetain(Retain::All);
    f.vm().start(std::vector<Tensor>{ft({2}, {0, 1})});
    QCOMPARE(vm.run(), VM::Status::Finished);
    QVERIFY(vm.value(*produced) != nullptr);
    QCOMPARE(vm.value(*produced)->toDoubles(), (std::vector<double>{0, 1}));
    // Without retaining, the same node overwrote it (and freed the slot).
    vm.setRetain(Retain::AfterLastUse);
    auto out = f({ft({2}, {0, 1})});
    QCOMPARE(out[0].toDoubles()[0], 2.0);
    QVERIFY(vm.value(*produced) == nullptr);
  }

  void testKeepBuffersNeverShowsStaleValue() {
    auto x = fvar("x");
    auto y = exp(x) + 1.0;
    CompileOptions opts;
    opts.keepBuffers = true;
    Function f = compile({x}, {y}, {}, opts);
    f({ft({2}, {0, 0})});
    const Variable& first = f.vm().schedule()[0]->outputRef(0);
    // Note [Recycled buffers]: its buffer went to the frame's pool after its last reader; with
    // it off (TSCOPE_RECYCLE_BUFFERS=0, the suite's _no_recycle run) the slot keeps the value.
    const char* recycleEnv = std::getenv("TSCOPE_RECYCLE_BUFFERS");
    const bool recycling = !(recycleEnv && std::string(recycleEnv) == "0");
    QCOMPARE(f.vm().value(first) == nullptr, recycling);
    f.vm().start(std::vector<Tensor>{ft({2}, {1, 1})});
    QVERIFY2(f.vm().value(first) == nullptr, "the previous call's value is shown as computed");
    QVERIFY(f.vm().step());
    QCOMPARE(f.vm().value(first)->toDoubles()[0], std::exp(1.0f));
  }

  void testIntermediatesFreedAfterLastUse() {
    auto x = fvar("x");
    auto y = exp(x);
    auto z = y + 1.0;
    Function f = compile({x}, {z});
    f({ft({3}, {0, 1, 2})});
    for (const Apply* node : f.graph().nodes())
      if (&node->outputRef(0) != f.outputs()[0].get())
        QVERIFY2(f.vm().value(node->outputRef(0)) == nullptr, "an intermediate survived the run");
    // The plan says the same: exp's output is freed after its last reader, node 1.
    const StoragePlan& plan = f.program().plan();
    const std::int64_t s = f.program().slotOf(f.vm().schedule()[0]->outputRef(0));
    QCOMPARE(plan.lastUse[static_cast<std::size_t>(s)], 1);
    const auto freed = plan.freedAfter(1);
    QVERIFY(std::find(freed.begin(), freed.end(), static_cast<std::uint32_t>(s)) != freed.end());
  }

  void testInnerFramesNestedTwoDeep() {
    auto a = fvar("a");
    auto inner = opFromGraph({a}, {exp(a) * 2.0}, "inner");
    auto b = fvar("b");
    auto outer = opFromGraph({b}, {(*inner)({b}) + 1.0}, "outer");
    auto x = fvar("x");
    auto y = (*outer)({x});
    Function f = compile({x}, {y});
    QCOMPARE(f.program().children().size(), std::size_t(1));
    QCOMPARE(f.program().children()[0]->children().size(), std::size_t(1));
    auto rec = std::make_shared<Recorder>();
    f.vm().addObserver(rec);
    auto out = f({ft({2}, {0, 1})});
    QCOMPARE(out[0].toDoubles()[0], 3.0);
    QCOMPARE(out[0].toDoubles()[1], std::exp(1.0f) * 2.0f + 1.0f);
    const std::string o = std::to_string(f.vm().schedule()[0]->id());
    const Apply* innerNode = nullptr;
    for (const Apply* n : f.program().children()[0]->schedule())
      if (n->op().name() == "OpFromGraph") innerNode = n;
    QVERIFY(innerNode);
    const std::string i = std::to_string(innerNode->id());
    // outer node, then the outer body with the inner node bracketing the inner body.
    QCOMPARE(rec->events[1], "before 0 OpFromGraph{outer}");
    QCOMPARE(rec->events[2], "before " + o + "/0 OpFromGraph{inner}");
    QVERIFY(contains(rec->events, "before " + o + "/" + i + "/0 Elemwise{exp}"));
    QVERIFY(contains(rec->events, "after " + o + "/" + i + "/1"));
    QCOMPARE(rec->events[rec->events.size() - 2], std::string("after 0"));
    // step over the outer node runs it whole; step into enters each frame.
    f.vm().start(std::vector<Tensor>{ft({1}, {0})});
    QVERIFY(f.vm().stepInto());
    QCOMPARE(f.vm().depth(), std::size_t(1));
    QVERIFY(f.vm().stepInto());
    QCOMPARE(f.vm().depth(), std::size_t(2));
    QCOMPARE(f.vm().framePath().size(), std::size_t(2));
    QVERIFY(f.vm().step());  // exp
    QCOMPARE(f.vm().frame(2).pc, std::size_t(1));
    // Inner values are inspectable in their frame.
    const Variable& e = f.vm().frame(2).program->schedule()[0]->outputRef(0);
    QCOMPARE(f.vm().value(e)->toDoubles()[0], 1.0);
    QCOMPARE(f.vm().stepOut(), VM::Status::Paused);
    QCOMPARE(f.vm().depth(), std::size_t(1));
    QCOMPARE(f.vm().run(), VM::Status::Finished);
    QCOMPARE(f.vm().outputValues()[0].toDoubles()[0], 3.0);
    f.vm().start(std::vector<Tensor>{ft({1}, {0})});
    QVERIFY(f.vm().step());
    QCOMPARE(f.vm().status(), VM::Status::Finished);
  }

  void testInnerFailureNamesTheFrames() {
    std::atomic<int> calls{0};
    auto boom = countingOp("Boom", calls, true);
    auto a = fvar("a");
    auto body = opFromGraph({a}, {exp((*boom)({a}))}, "blk");
    auto x = fvar("x");
    Function f = compile({x}, {(*body)({x})});
    try {
      f({ft({1}, {0})});
      QFAIL("expected an ExecutionError");
    } catch (const ExecutionError& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.find("Boom") != std::string::npos &&
                   msg.find("in OpFromGraph{blk}") != std::string::npos,
               e.what());
      QCOMPARE(e.framePath().size(), std::size_t(1));
      QCOMPARE(e.framePath()[0], f.vm().schedule()[0]->id());
    }
    QCOMPARE(f.vm().depth(), std::size_t(1));  // the failing frame stays for inspection
    f.vm().start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(f.vm().depth(), std::size_t(0));
  }

  void testInnerGraphsRunOptimized() {
    auto a = fvar("a");
    auto body = opFromGraph({a}, {log(1.0 + a)}, "softplus_like");
    auto x = fvar("x");
    CompileOptions opts;
    opts.mode = Mode::FastRun;
    Function f = compile({x}, {(*body)({x})}, {}, opts);
    QCOMPARE(f.program().children().size(), std::size_t(1));
    std::string ops;
    for (const Apply* n : f.program().children()[0]->schedule()) ops += n->op().str() + " ";
    QVERIFY2(ops.find("log1p") != std::string::npos, ops.c_str());
    auto out = f({ft({2}, {0, 1e-8})});
    QCOMPARE(out[0].toDoubles()[0], 0.0);
    // Mode none links the body as written.
    Function plain = compile({x}, {(*body)({x})});
    std::string plainOps;
    for (const Apply* n : plain.program().children()[0]->schedule())
      plainOps += n->op().str() + " ";
    QVERIFY2(plainOps.find("log1p") == std::string::npos, plainOps.c_str());
  }

  void testInnerFramesRunConcurrentlyFromTwoThreads() {
    // Both threads must be inside the same op's body at once: a body that waits for the other
    // thread would deadlock (here: time out) if running an OpFromGraph were serialised.
    std::atomic<int> arrived{0};
    std::atomic<bool> timedOut{false};
    auto rendezvous =
        asOp("Rendezvous", {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
             [&](std::span<const Tensor> in) -> std::vector<Tensor> {
               ++arrived;
               const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
               while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline)
                 std::this_thread::sleep_for(std::chrono::milliseconds(1));
               if (arrived.load() < 2) timedOut = true;
               return {in[0].clone()};
             });
    auto a = fvar("a");
    auto inner = opFromGraph({a}, {(*rendezvous)({exp(a)})}, "meet");
    auto b = fvar("b");
    auto outer = opFromGraph({b}, {(*inner)({b}) * 2.0}, "wrap");
    auto x = fvar("x");
    Function f1 = compile({x}, {(*outer)({x})});
    Function f2 = compile({x}, {(*outer)({x})});
    std::vector<Tensor> r1, r2;
    std::thread t1([&] { r1 = f1({ft({1}, {0})}); });
    std::thread t2([&] { r2 = f2({ft({1}, {0})}); });
    t1.join();
    t2.join();
    QVERIFY2(!timedOut.load(), "the two threads did not run the body at the same time");
    QCOMPARE(r1[0].toDoubles()[0], 2.0);
    QCOMPARE(r2[0].toDoubles()[0], 2.0);
  }

  void testKernelChosenAtLinkTime() {
    static std::atomic<int> kernelCalls{0};
    KernelRegistry kernels;
    kernels.add(
        "Elemwise", Device::Cpu,
        [](const Op& op, const Apply& node, std::span<const Tensor* const> in,
           std::span<Tensor* const> out) {
          ++kernelCalls;
          op.perform(node, in, out);
        },
        "test");
    auto x = fvar("x");
    CompileOptions opts;
    opts.kernels = &kernels;
    Function f = compile({x}, {exp(x) * 2.0}, {}, opts);
    QCOMPARE(f.program().kernel(0).source, std::string_view("test"));
    QVERIFY(!f.program().kernel(0).isReference());
    auto out = f({ft({1}, {0})});
    QCOMPARE(out[0].toDoubles()[0], 2.0);
    QCOMPARE(kernelCalls.load(), 2);
    Function reference = compile({x}, {exp(x)});
    QVERIFY(reference.program().kernel(0).isReference());
    QCOMPARE(reference.program().kernel(0).source, std::string_view("perform"));
  }

  void testExecutionBeginFinish() {
    auto w = SharedVariable::create(ft({1}, {1}), "w");
    auto x = fvar("x");
    Function f = compile({x}, {x * w}, {{w, w + 1.0}});
    Execution e = f.begin({ft({1}, {3})});
    QCOMPARE(e.status(), VM::Status::Ready);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, e.finish());
    QVERIFY(e.step());
    while (e.run() == VM::Status::Paused) {
    }
    auto out = e.finish();
    QCOMPARE(out.size(), std::size_t(1));
    QCOMPARE(out[0].toDoubles()[0], 3.0);
    QCOMPARE(w->value().toDoubles()[0], 2.0);
    QVERIFY(!e.active());
    QVERIFY_THROWS_EXCEPTION(std::logic_error, e.finish());
    // A superseded or abandoned execution applies no update.
    Execution first = f.begin({ft({1}, {3})});
    QVERIFY(first.step());
    Execution second = f.begin({ft({1}, {3})});
    QVERIFY(!first.active());
    QVERIFY_THROWS_EXCEPTION(std::logic_error, first.run());
    QCOMPARE(w->value().toDoubles()[0], 2.0);
    QCOMPARE(second.run(), VM::Status::Finished);
    second.finish();
    QCOMPARE(w->value().toDoubles()[0], 3.0);
  }

  void testStoppedExecutionLeavesParametersWhole() {
    // fast_run updates W in place (Gemm{inplace}); an execution stopped after that node, or
    // failed after it, must leave W as it was (Note [Parameters stay whole]).
    const Tensor w0 = Tensor::fromDoubles(DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6});
    auto W = SharedVariable::create(w0, "W");
    auto x = fvar("x", {U, 3}), g = fvar("g", {U, 2});
    CompileOptions fast;
    fast.mode = Mode::FastRun;
    Function step = compile({x, g}, {}, {{W, W - 0.5 * dot(transpose(x), g)}}, fast);
    bool inplaceOnW = false;
    for (const auto& o : step.program().plan().overwrites)
      inplaceOnW = inplaceOnW || o.graphInput >= 0;
    QVERIFY2(inplaceOnW, "fast_run did not update W in place");
    const Tensor xv = ft({2, 3}, {1, 0, 2, 0, 1, 1}), gv = ft({2, 2}, {1, -1, 0.5, 2});
    const std::vector<double> before = W->value().toDoubles();
    {
      Execution e = step.begin({xv, gv});
      while (e.run() == VM::Status::Paused) {
      }
      QCOMPARE(e.status(), VM::Status::Finished);
      // Dropped without finish(): no update, and the in-place node wrote into a copy.
    }
    QCOMPARE(W->value().toDoubles(), before);
    Execution e = step.begin({xv, gv});
    while (e.run() == VM::Status::Paused) {
    }
    e.finish();
    QVERIFY(W->value().toDoubles() != before);
  }

  void testFailedExecutionAppliesNoUpdate() {
    std::atomic<int> calls{0};
    auto boom = countingOp("Boom", calls, true);
    auto w = SharedVariable::create(ft({1}, {1}), "w");
    auto x = fvar("x");
    Function f = compile({x}, {(*boom)({x})}, {{w, w + 1.0}});
    QVERIFY_THROWS_EXCEPTION(ExecutionError, f({ft({1}, {0})}));
    QCOMPARE(w->value().toDoubles()[0], 1.0);
  }
};

TSCOPE_TEST_MAIN(TestVM)
#include "tst_vm.moc"
