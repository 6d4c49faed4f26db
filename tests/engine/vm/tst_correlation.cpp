// The VM's correlation interface (engine/vm/correlation.h): a recording sink sees one balanced
// push/pop per node in schedule order, on the fast path and the observed one alike; inner nodes
// of OpFromGraph (two deep) and of IfElse's taken branch come with their frame path; the node on
// top of the sink's stack while a kernel runs is that kernel's node; the brackets stay balanced
// when a kernel throws, when the VM pauses (a request, a step into a frame) or stops (between
// nodes or inside a kernel); the sink can be replaced and removed.
#include "engine/compile/function.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/vm/cancel.h"
#include "engine/vm/correlation.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <functional>

using namespace tscope::engine;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name) {
  return Variable::create(TensorType(DType::Float32, {U}), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

std::string key(std::span<const std::int64_t> path, std::int64_t id) {
  std::string s;
  for (std::int64_t p : path) s += std::to_string(p) + "/";
  return s + std::to_string(id);
}
std::string key(std::initializer_list<std::int64_t> path, std::int64_t id) {
  return key(std::span<const std::int64_t>(path.begin(), path.size()), id);
}

// Logs "push <path>/<id>" and "pop", keeps the stack, and flags a pop with nothing pushed.
struct RecordingSink : CorrelationSink {
  std::vector<std::string> log;
  std::vector<std::string> stack;
  bool unbalanced = false;
  std::size_t maxDepth = 0;
  void push(std::span<const std::int64_t> framePath, std::int64_t nodeId) override {
    stack.push_back(key(framePath, nodeId));
    log.push_back("push " + stack.back());
    maxDepth = std::max(maxDepth, stack.size());
  }
  void pop() override {
    if (stack.empty()) {
      unbalanced = true;
      return;
    }
    stack.pop_back();
    log.push_back("pop");
  }
  std::vector<std::string> pushes() const {
    std::vector<std::string> out;
    for (const auto& l : log)
      if (l.rfind("push ", 0) == 0) out.push_back(l.substr(5));
    return out;
  }
  // Every push is followed by its pop before the next push (brackets never nest).
  bool flat() const {
    for (std::size_t k = 0; k < log.size(); ++k)
      if ((k % 2 == 0) != (log[k].rfind("push ", 0) == 0)) return false;
    return log.size() % 2 == 0;
  }
};

RecordingSink* g_sink = nullptr;
std::vector<std::string> g_seenInKernel;  // the sink's top while a probe kernel ran
VM* g_vm = nullptr;

// x -> x + 1, recording the node on top of the sink while it runs; `action` runs inside.
std::shared_ptr<const AsOp> probe(const std::string& name, std::function<void()> action = nullptr) {
  return asOp(name, {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
              [action](std::span<const Tensor> in) -> std::vector<Tensor> {
                g_seenInKernel.push_back(g_sink && !g_sink->stack.empty() ? g_sink->stack.back()
                                                                          : "(none)");
                if (action) action();
                Tensor out = in[0].clone();
                for (std::int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] += 1.0f;
                return {out};
              });
}

struct PauseAfter : ExecutionObserver {
  std::size_t position;
  explicit PauseAfter(std::size_t p) : position(p) {}
  void afterNode(VM& vm, const NodeEvent& e) override {
    if (e.depth() == 0 && e.position == position) vm.requestPause();
  }
};
struct StopAfter : ExecutionObserver {
  std::size_t position;
  explicit StopAfter(std::size_t p) : position(p) {}
  void afterNode(VM& vm, const NodeEvent& e) override {
    if (e.depth() == 0 && e.position == position) vm.requestStop();
  }
};
struct Nothing : ExecutionObserver {};

std::vector<std::string> outerSchedule(const Function& f) {
  std::vector<std::string> out;
  for (const Apply* n : f.program().schedule()) out.push_back(key({}, n->id()));
  return out;
}
}  // namespace

class TestCorrelation : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    g_seenInKernel.clear();
    g_sink = nullptr;
    g_vm = nullptr;
  }

  void testOneBracketPerNodeInScheduleOrder() {
    auto p = probe("P");
    auto x = fvar("x");
    auto y = (*p)({exp(x) * 2.0}) + 1.0;
    Function f = compile({x}, {y});
    auto sink = std::make_shared<RecordingSink>();
    g_sink = sink.get();
    f.vm().setCorrelationSink(sink);
    QCOMPARE(f.vm().correlationSink().get(), static_cast<CorrelationSink*>(sink.get()));
    // The fast path (no observers).
    f({ft({2}, {0, 1})});
    QVERIFY(sink->flat());
    QVERIFY(!sink->unbalanced);
    QCOMPARE(sink->pushes(), outerSchedule(f));
    QCOMPARE(sink->maxDepth, std::size_t(1));
    // The probe saw its own node on top.
    const Apply* probeNode = nullptr;
    for (const Apply* n : f.program().schedule())
      if (n->op().name() == "P") probeNode = n;
    QVERIFY(probeNode);
    QCOMPARE(g_seenInKernel, std::vector<std::string>{key({}, probeNode->id())});
    // The observed path gives the same brackets.
    sink->log.clear();
    f.vm().addObserver(std::make_shared<Nothing>());
    f({ft({2}, {0, 1})});
    QVERIFY(sink->flat());
    QCOMPARE(sink->pushes(), outerSchedule(f));
    // Removed: nothing more is heard, the probe sees no sink.
    f.vm().setCorrelationSink(nullptr);
    g_sink = nullptr;
    sink->log.clear();
    g_seenInKernel.clear();
    f({ft({2}, {0, 1})});
    QVERIFY(sink->log.empty());
    QCOMPARE(g_seenInKernel, std::vector<std::string>{"(none)"});
  }

  void testInnerFramesTwoDeep() {
    auto p = probe("P");
    auto a = fvar("a");
    auto inner = opFromGraph({a}, {(*p)({exp(a)})}, "inner");
    auto b = fvar("b");
    auto outer = opFromGraph({b}, {(*inner)({b}) + 1.0}, "outer");
    auto x = fvar("x");
    Function f = compile({x}, {(*outer)({x}) * 3.0});
    auto sink = std::make_shared<RecordingSink>();
    g_sink = sink.get();
    f.vm().setCorrelationSink(sink);
    f({ft({1}, {0})});
    QVERIFY(!sink->unbalanced);
    QVERIFY(sink->stack.empty());
    QVERIFY(sink->flat());  // no bracket spans a frame
    const Apply* outerNode = f.program().schedule()[0];
    QCOMPARE(outerNode->op().name(), std::string("OpFromGraph"));
    const Program& outerBody = *f.program().children()[0];
    const Program& innerBody = *outerBody.children()[0];
    const Apply* innerNode = nullptr;
    for (const Apply* n : outerBody.schedule())
      if (n->op().name() == "OpFromGraph") innerNode = n;
    QVERIFY(innerNode);
    const std::int64_t o = outerNode->id(), i = innerNode->id();
    // Expected: inner-inner nodes with path o/i, then the inner node's return (path o), the
    // rest of the outer body (path o), the outer node's return (top level), the rest.
    std::vector<std::string> expected;
    for (const Apply* n : outerBody.schedule()) {
      if (n == innerNode) {
        for (const Apply* m : innerBody.schedule()) expected.push_back(key({o, i}, m->id()));
        expected.push_back(key({o}, i));
      } else {
        expected.push_back(key({o}, n->id()));
      }
    }
    expected.push_back(key({}, o));
    for (std::size_t k = 1; k < f.program().schedule().size(); ++k)
      expected.push_back(key({}, f.program().schedule()[k]->id()));
    QCOMPARE(sink->pushes(), expected);
    const Apply* probeNode = nullptr;
    for (const Apply* m : innerBody.schedule())
      if (m->op().name() == "P") probeNode = m;
    QVERIFY(probeNode);
    QCOMPARE(g_seenInKernel, std::vector<std::string>{key({o, i}, probeNode->id())});
  }

  void testIfElseTakenBranch() {
    auto pt = probe("Then");
    auto pe = probe("Else");
    auto x = fvar("x");
    VarPtr y = ifelse(gt(sum(x), constant(0.0, DType::Float32)), (*pt)({x}), (*pe)({x}));
    Function f = compile({x}, {y});
    auto sink = std::make_shared<RecordingSink>();
    g_sink = sink.get();
    f.vm().setCorrelationSink(sink);
    f({ft({1}, {2})});
    QVERIFY(sink->flat());
    const Apply* ifNode = nullptr;
    for (const Apply* n : f.program().schedule())
      if (n->op().name() == "IfElse") ifNode = n;
    QVERIFY(ifNode);
    const std::int64_t c = ifNode->id();
    // The IfElse node: one bracket to choose, the branch's nodes, one to return.
    const auto pushes = sink->pushes();
    const auto at = std::find(pushes.begin(), pushes.end(), key({}, c));
    QVERIFY(at != pushes.end());
    QVERIFY(at + 1 != pushes.end());
    QVERIFY((at + 1)->rfind(std::to_string(c) + "/", 0) == 0);
    QCOMPARE(std::count(pushes.begin(), pushes.end(), key({}, c)), std::ptrdiff_t(2));
    QCOMPARE(g_seenInKernel.size(), std::size_t(1));
    QVERIFY(g_seenInKernel[0].rfind(std::to_string(c) + "/", 0) == 0);
    // The other branch.
    g_seenInKernel.clear();
    sink->log.clear();
    f({ft({1}, {-2})});
    QVERIFY(sink->flat());
    QCOMPARE(g_seenInKernel.size(), std::size_t(1));
    QVERIFY(g_seenInKernel[0].rfind(std::to_string(c) + "/", 0) == 0);
  }

  void testBalancedWhenAKernelThrows() {
    auto boom = probe("Boom", [] { throw std::runtime_error("kaput"); });
    auto a = fvar("a");
    auto body = opFromGraph({a}, {exp((*boom)({a}))}, "blk");
    auto x = fvar("x");
    for (bool inner : {false, true}) {
      Function f = inner ? compile({x}, {(*body)({x})}) : compile({x}, {exp((*boom)({x}))});
      for (bool observed : {false, true}) {
        auto sink = std::make_shared<RecordingSink>();
        g_sink = sink.get();
        f.vm().setCorrelationSink(sink);
        if (observed) f.vm().addObserver(std::make_shared<Nothing>());
        bool threw = false;
        try {
          f({ft({1}, {0})});
        } catch (const ExecutionError&) {
          threw = true;
        }
        QVERIFY(threw);
        QVERIFY2(sink->stack.empty(), inner ? "inner" : "outer");
        QVERIFY(!sink->unbalanced);
        QVERIFY(sink->flat());
        QVERIFY(!sink->log.empty());
      }
    }
  }

  void testBalancedAtPausesAndStops() {
    auto x = fvar("x");
    auto a = fvar("a");
    auto body = opFromGraph({a}, {exp(a) * 2.0}, "blk");
    Function f = compile({x}, {(*body)({exp(x) + 1.0}) - 1.0});
    auto sink = std::make_shared<RecordingSink>();
    g_sink = sink.get();
    f.vm().setCorrelationSink(sink);
    VM& vm = f.vm();
    // A pause request after the first node.
    auto pause = std::make_shared<PauseAfter>(0);
    vm.addObserver(pause);
    vm.start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(vm.run(), VM::Status::Paused);
    QVERIFY(sink->stack.empty());
    QCOMPARE(sink->pushes().size(), std::size_t(1));
    // Step into the frame and pause inside it.
    std::size_t frameAt = 0;
    while (vm.program().schedule()[frameAt]->op().name() != "OpFromGraph") ++frameAt;
    while (vm.depth() == 0 && vm.stepInto()) QVERIFY(sink->stack.empty());
    QCOMPARE(vm.depth(), std::size_t(1));
    QVERIFY(vm.stepInto());  // one inner node
    QVERIFY(sink->stack.empty());
    QCOMPARE(vm.run(), VM::Status::Finished);
    QVERIFY(sink->stack.empty());
    QVERIFY(sink->flat());
    vm.removeObserver(*pause);
    // A stop between nodes.
    auto stop = std::make_shared<StopAfter>(0);
    vm.addObserver(stop);
    sink->log.clear();
    vm.start(std::vector<Tensor>{ft({1}, {0})});
    QCOMPARE(vm.run(), VM::Status::Stopped);
    QVERIFY(sink->stack.empty());
    QVERIFY(sink->flat());
    vm.removeObserver(*stop);
  }

  void testBalancedWhenStoppedInsideAKernel() {
    auto p = probe("Long", [] {
      g_vm->requestStop();
      throwIfCancelled();
    });
    auto x = fvar("x");
    Function f = compile({x}, {(*p)({exp(x)}) + 1.0});
    for (bool observed : {false, true}) {
      auto sink = std::make_shared<RecordingSink>();
      g_sink = sink.get();
      g_vm = &f.vm();
      f.vm().setCorrelationSink(sink);
      if (observed) f.vm().addObserver(std::make_shared<Nothing>());
      f.vm().start(std::vector<Tensor>{ft({1}, {0})});
      QCOMPARE(f.vm().run(), VM::Status::Stopped);
      QVERIFY(sink->stack.empty());
      QVERIFY(!sink->unbalanced);
      QVERIFY(sink->flat());
      QCOMPARE(sink->pushes().size(), std::size_t(2));  // exp, then the one that stopped
    }
  }
};

TSCOPE_TEST_MAIN(TestCorrelation)
#include "tst_correlation.moc"
