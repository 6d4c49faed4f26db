// Module hooks: execution hooks see the node events of their module's nodes only (its children's
// included, a Scan body's per iteration), pre before and post after each node; removeHook stops
// them; build hooks run when the module is called and may replace its outputs.
#include "engine/compile/function.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/nn/containers.h"
#include "engine/nn/layers.h"
#include "engine/nn/recurrent.h"
#include "engine/ops/basic.h"
#include "engine/ops/reduce/reduce.h"
#include "test_main.h"

using namespace tscope::engine;

namespace {

struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  Net() : Module("Net") {
    fc1 = registerModule("fc1", std::make_shared<nn::Linear>(3, 4));
    fc2 = registerModule("fc2", std::make_shared<nn::Linear>(4, 2));
  }
  std::vector<VarPtr> forward(const std::vector<VarPtr>& in) override {
    return {(*fc2)(tanh((*fc1)(in[0])))};
  }
};

struct Seen {
  std::vector<std::string> scopes;
  std::vector<bool> outputsComputed;
  std::vector<std::int64_t> iterations;
};

nn::NodeHook recorder(Seen& seen) {
  return [&seen](const nn::Module&, const NodeEvent& e) {
    seen.scopes.push_back(e.node.scope());
    bool computed = true;
    for (const Tensor* t : e.outputs) computed = computed && t && t->defined();
    seen.outputsComputed.push_back(computed);
    seen.iterations.push_back(e.iteration());
  };
}

std::size_t nodesWithin(const FunctionGraph& g, const std::string& scope) {
  std::size_t n = 0;
  for (const Apply* a : g.nodes()) n += nn::scopeWithin(a->scope(), scope);
  return n;
}

Tensor ones(Shape shape) {
  return Tensor::full(DType::Float32, std::move(shape), 0.5);
}

}  // namespace

class TestNnHooks : public QObject {
  Q_OBJECT

 private slots:
  void testScopeWithin() {
    QVERIFY(nn::scopeWithin("net/fc1", "net/fc1"));
    QVERIFY(nn::scopeWithin("net/fc1/x", "net/fc1"));
    QVERIFY(!nn::scopeWithin("net/fc10", "net/fc1"));
    QVERIFY(!nn::scopeWithin("net", "net/fc1"));
    QVERIFY(nn::scopeWithin("anything", ""));
  }

  void testExecutionHooksFireForTheirModuleOnly_data() {
    QTest::addColumn<int>("mode");
    QTest::newRow("none") << static_cast<int>(Mode::None);
    QTest::newRow("fast_run") << static_cast<int>(Mode::FastRun);
  }
  void testExecutionHooksFireForTheirModuleOnly() {
    QFETCH(int, mode);
    auto net = std::make_shared<Net>();
    net->setName("net");
    Seen pre1, post2, preNet;
    net->fc1->registerForwardPreHook(recorder(pre1));
    const nn::HookId id2 = net->fc2->registerForwardHook(recorder(post2));
    net->registerForwardPreHook(recorder(preNet));
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
    VarPtr y = sum((*net)(x));
    CompileOptions options;
    options.mode = static_cast<Mode>(mode);
    options.observers.push_back(nn::hookObserver(net));
    Function f = compile({x}, {y}, {}, options);
    f({ones({5, 3})});
    QVERIFY(!pre1.scopes.empty());
    QVERIFY(!post2.scopes.empty());
    for (const std::string& s : pre1.scopes) QVERIFY2(nn::scopeWithin(s, "net/fc1"), s.c_str());
    for (const std::string& s : post2.scopes) QVERIFY2(nn::scopeWithin(s, "net/fc2"), s.c_str());
    // Each node of the module once per run; the post-hook sees the outputs computed.
    QCOMPARE(pre1.scopes.size(), nodesWithin(f.graph(), "net/fc1"));
    QCOMPARE(post2.scopes.size(), nodesWithin(f.graph(), "net/fc2"));
    for (bool computed : post2.outputsComputed) QVERIFY(computed);
    // The root's hook sees its children's nodes too, and nothing outside it (the sum).
    QCOMPARE(preNet.scopes.size(), nodesWithin(f.graph(), "net"));
    QVERIFY(preNet.scopes.size() < f.graph().nodes().size());
    // Removed: no more events.
    QVERIFY(net->fc2->removeHook(id2));
    QVERIFY(!net->fc2->removeHook(id2));
    const std::size_t before = post2.scopes.size();
    f({ones({5, 3})});
    QCOMPARE(post2.scopes.size(), before);
    QCOMPARE(pre1.scopes.size(), 2 * nodesWithin(f.graph(), "net/fc1"));
  }

  // A recurrent layer's hook sees its Scan body's nodes once per step, with the iteration.
  void testHooksSeeScanIterations() {
    auto lstm = std::make_shared<nn::LSTM>(3, 4);
    lstm->setName("lstm");
    Seen seen;
    lstm->registerForwardHook(recorder(seen));
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kUnknownDim, 3}), "x");
    VarPtr y = lstm->call({x})[0];
    CompileOptions options;
    options.observers.push_back(nn::hookObserver(lstm));
    Function f = compile({x}, {y}, {}, options);
    f({ones({6, 2, 3})});
    std::int64_t maxIteration = -1;
    for (std::int64_t it : seen.iterations) maxIteration = std::max(maxIteration, it);
    QCOMPARE(maxIteration, std::int64_t{5});
    for (const std::string& s : seen.scopes) QVERIFY2(nn::scopeWithin(s, "lstm"), s.c_str());
  }

  void testBuildHooks() {
    auto net = std::make_shared<Net>();
    int preCalls = 0;
    std::size_t seenInputs = 0;
    net->fc2->registerBuildPreHook([&](nn::Module& m, const std::vector<VarPtr>& in) {
      ++preCalls;
      seenInputs = in.size();
      QCOMPARE(m.path(), std::string("fc2"));
    });
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
    VarPtr plain = (*net)(x);
    const nn::HookId id =
        net->fc2->registerBuildHook([](nn::Module&, const std::vector<VarPtr>&,
                                       std::vector<VarPtr>& out) { out[0] = out[0] * 2.0; });
    VarPtr doubled = (*net)(x);
    QCOMPARE(preCalls, 2);
    QCOMPARE(seenInputs, std::size_t{1});
    Function f = compile({x}, {plain, doubled});
    const std::vector<Tensor> r = f({ones({2, 3})});
    const std::vector<double> a = r[0].toDoubles(), b = r[1].toDoubles();
    for (std::size_t i = 0; i < a.size(); ++i) QVERIFY(std::abs(b[i] - 2 * a[i]) < 1e-6);
    QVERIFY(net->fc2->removeHook(id));
  }
};

TSCOPE_TEST_MAIN(TestNnHooks)
#include "tst_nn_hooks.moc"
