// History: checkpoints and reverts give back exactly the earlier structure (ids and node objects
// included), nest, refuse checkpoints from the future, and survive long random edit sequences.
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/history.h"
#include "engine/ops/elemwise/elemwise.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <unordered_set>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

namespace {

// Every node and variable of the graph by id.
struct Snapshot {
  std::map<std::int64_t, const Apply*> nodes;
  std::map<std::int64_t, const Variable*> variables;
  explicit Snapshot(const FunctionGraph& fg) {
    for (const Apply* n : fg.nodes()) nodes[n->id()] = n;
    for (const Variable* v : fg.variables()) variables[v->id()] = v;
  }
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

}  // namespace

class TestHistory : public QObject {
  Q_OBJECT

 private slots:
  void testRevertRestoresStructure();
  void testRevertReimportsPrunedNodesWithOriginalIds();
  void testRevertPrunesImportedNodes();
  void testRevertGraphOutputChange();
  void testRevertMoreSpecificType();
  void testNestedCheckpoints();
  void testRevertToCurrentIsNoOp();
  void testRevertToFutureCheckpointThrows();
  void testRevertIsNotRecorded();
  void testAttachAndDetach();
  void testRandomEditsRevert_data();
  void testRandomEditsRevert();
};

void TestHistory::testRevertRestoresStructure() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr lx = log_(x);
  const VarPtr e = exp_(lx);
  const VarPtr s = add(e, y);
  const VarPtr out = mul(s, neg(y));
  FunctionGraph fg({x, y}, {out, e}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  const History::Checkpoint cp = history->checkpoint();
  QCOMPARE(cp, History::Checkpoint{0});
  const std::string before = structureDump(fg);
  const Snapshot snapshot(fg);

  fg.replace(e, x, "exp_log");                     // prunes exp and log
  fg.replace(s, mul(x, exp_(y)), "new subgraph");  // imports two nodes, prunes add
  fg.replace(y, x, "inputs");                      // changes several uses at once
  QVERIFY(structureDump(fg) != before);
  QVERIFY(history->size() >= 3);
  fg.checkIntegrity();

  history->revert(cp);
  QCOMPARE(qs(structureDump(fg)), qs(before));
  QVERIFY(Snapshot(fg) == snapshot);  // the very same node and variable objects, under the same ids
  QCOMPARE(history->size(), std::size_t{0});
  QCOMPARE(fg.outputs(), (std::vector<VarPtr>{out, e}));
  fg.checkIntegrity();
}

void TestHistory::testRevertReimportsPrunedNodesWithOriginalIds() {
  const VarPtr x = fv("x");
  const VarPtr lx = log_(x);
  const VarPtr e = exp_(lx);
  const VarPtr z = add(e, x);
  FunctionGraph fg({x}, {z}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  const std::int64_t expId = e->owner()->id(), logId = lx->owner()->id();
  const std::int64_t eId = e->id(), lxId = lx->id();
  const Apply* expNode = e->owner();
  const Apply* logNode = lx->owner();
  const auto cp = history->checkpoint();
  fg.replace(e, x, "exp_log");
  QVERIFY(fg.nodeById(expId) == nullptr);
  QVERIFY(fg.variableById(lxId) == nullptr);
  // New nodes made meanwhile take fresh ids, never the pruned ones.
  fg.addOutput(neg(x), "more");
  const std::int64_t newId = fg.outputs().back()->owner()->id();
  QVERIFY(newId > std::max({expId, logId, eId, lxId}));
  history->revert(cp);
  QCOMPARE(fg.nodeById(expId), expNode);
  QCOMPARE(fg.nodeById(logId), logNode);
  QCOMPARE(fg.variableById(eId), e.get());
  QCOMPARE(fg.variableById(lxId), lx.get());
  QCOMPARE(e->id(), eId);
  QCOMPARE(z->owner()->input(0), e);
  fg.checkIntegrity();
}

void TestHistory::testRevertPrunesImportedNodes() {
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph fg({x}, {exp_(y)}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  const std::string before = structureDump(fg);
  const auto cp = history->checkpoint();
  const VarPtr fresh = mul(log_(x), x);
  fg.replace(y, fresh, "import");
  QVERIFY(fg.contains(*fresh->owner()));
  history->revert(cp);
  QVERIFY(!fg.contains(*fresh->owner()));
  QVERIFY(!fg.contains(*fresh->owner()->input(0)->owner()));
  QCOMPARE(structureDump(fg), before);
  fg.checkIntegrity();
}

void TestHistory::testRevertGraphOutputChange() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr out = add(x, y);
  FunctionGraph fg({x, y}, {out, x}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  const std::string before = structureDump(fg);
  const auto cp = history->checkpoint();
  fg.changeInput(nullptr, 0, y, "out");
  fg.changeInput(nullptr, 1, neg(y), "out2");
  QCOMPARE(fg.nodeCount(), std::size_t{1});
  history->revert(cp);
  QCOMPARE(fg.outputs(), (std::vector<VarPtr>{out, x}));
  QCOMPARE(structureDump(fg), before);
  fg.checkIntegrity();
}

void TestHistory::testRevertMoreSpecificType() {
  // A replacement may narrow the type ((?, 3) -> (2, 3)); reverting must widen it back.
  const VarPtr x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
  const VarPtr s = Variable::create(TensorType(DType::Float32, {2, 3}), "s");
  const VarPtr y = neg(x);
  const VarPtr z = exp_(y);
  FunctionGraph fg({x, s}, {z, y}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  const std::string before = structureDump(fg);
  const auto cp = history->checkpoint();
  fg.replace(y, s, "narrow");
  QCOMPARE(z->owner()->input(0), s);
  QCOMPARE(fg.outputs()[1], s);
  history->revert(cp);
  QCOMPARE(z->owner()->input(0), y);
  QCOMPARE(fg.outputs()[1], y);
  QCOMPARE(structureDump(fg), before);
  fg.checkIntegrity();
}

void TestHistory::testNestedCheckpoints() {
  const VarPtr a = fv("a"), b = fv("b"), c = fv("c");
  const VarPtr ab = add(a, b);
  const VarPtr out = mul(exp_(ab), neg(c));
  FunctionGraph fg({a, b, c}, {out}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  const auto cp0 = history->checkpoint();
  const std::string dump0 = structureDump(fg);
  fg.replace(ab, c, "one");
  const auto cp1 = history->checkpoint();
  const std::string dump1 = structureDump(fg);
  fg.replace(c, a, "two");
  fg.replace(out, log_(b), "three");
  const auto cp2 = history->checkpoint();
  const std::string dump2 = structureDump(fg);
  fg.replace(b, a, "four");
  QVERIFY(cp0 < cp1 && cp1 < cp2 && cp2 < history->checkpoint());
  QVERIFY(dump0 != dump1 && dump1 != dump2);

  history->revert(cp2);
  QCOMPARE(qs(structureDump(fg)), qs(dump2));
  QCOMPARE(history->checkpoint(), cp2);
  history->revert(cp1);
  QCOMPARE(qs(structureDump(fg)), qs(dump1));
  // New changes after a revert stack on top of cp1.
  fg.replace(c, b, "five");
  QVERIFY(structureDump(fg) != dump1);
  history->revert(cp1);
  QCOMPARE(qs(structureDump(fg)), qs(dump1));
  history->revert(cp0);
  QCOMPARE(qs(structureDump(fg)), qs(dump0));
  fg.checkIntegrity();
}

void TestHistory::testRevertToCurrentIsNoOp() {
  const VarPtr x = fv("x");
  FunctionGraph fg({x}, {neg(x)}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  auto log = std::make_shared<ChangeLog>();
  fg.attachFeature(history);
  fg.attachFeature(log);
  const std::string before = structureDump(fg);
  history->revert(history->checkpoint());
  QCOMPARE(structureDump(fg), before);
  QVERIFY(log->reasons.empty());
}

void TestHistory::testRevertToFutureCheckpointThrows() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr n = add(x, y);
  FunctionGraph fg({x, y}, {n}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  const auto cp0 = history->checkpoint();
  fg.replace(y, x, "r1");
  fg.replace(n, y, "r2");
  const auto future = history->checkpoint();
  history->revert(cp0);
  const std::string reverted = structureDump(fg);
  const auto msg = thrownMessage<GraphError>([&] { history->revert(future); });
  QVERIFY2(msg, "a checkpoint a revert already passed must be refused");
  QVERIFY2(contains(msg, "checkpoint " + std::to_string(future)), msg->c_str());
  QCOMPARE(structureDump(fg), reverted);
  QVERIFY_THROWS_EXCEPTION(GraphError, history->revert(cp0 + 1000));
  fg.checkIntegrity();
}

void TestHistory::testRevertIsNotRecorded() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr n = add(x, y);
  FunctionGraph fg({x, y}, {exp_(n)}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  auto log = std::make_shared<ChangeLog>();
  fg.attachFeature(history);
  fg.attachFeature(log);
  fg.replace(n, neg(x), "rewrite");
  fg.replace(x, y, "inputs");
  const std::size_t recorded = history->size();
  QCOMPARE(recorded, log->reasons.size());
  log->reasons.clear();
  history->revert(0);
  // Other features see the undo as changes with reason "revert"; History does not record them.
  QCOMPARE(log->reasons.size(), recorded);
  for (const auto& r : log->reasons) QCOMPARE(qs(r), QStringLiteral("revert"));
  QCOMPARE(history->size(), std::size_t{0});
  fg.checkIntegrity();
}

void TestHistory::testAttachAndDetach() {
  auto history = std::make_shared<History>();
  QVERIFY_THROWS_EXCEPTION(GraphError, history->revert(0));  // not attached
  const VarPtr x = fv("x"), y = fv("y");
  FunctionGraph fg({x, y}, {add(x, y)}, FunctionGraph::Ownership::Adopt);
  fg.attachFeature(history);
  fg.replace(y, x, "r");
  QCOMPARE(history->size(), std::size_t{1});
  const VarPtr o = fv("o");
  FunctionGraph other({o}, {neg(o)}, FunctionGraph::Ownership::Adopt);
  QVERIFY_THROWS_EXCEPTION(GraphError, other.attachFeature(history));
  QVERIFY(other.features().empty());
  fg.detachFeature(*history);
  QCOMPARE(history->size(), std::size_t{0});
  QVERIFY_THROWS_EXCEPTION(GraphError, history->revert(0));
  // Detached, it may join another graph.
  other.attachFeature(history);
  other.replace(other.outputs()[0], o, "r");
  QCOMPARE(history->size(), std::size_t{1});
  history->revert(0);
  QCOMPARE(other.nodeCount(), std::size_t{1});
}

void TestHistory::testRandomEditsRevert_data() {
  QTest::addColumn<unsigned>("seed");
  for (unsigned seed : {7u, 8u, 9u, 99u}) QTest::addRow("seed %u", seed) << seed;
}

void TestHistory::testRandomEditsRevert() {
  QFETCH(unsigned, seed);
  std::mt19937 rng(seed);
  auto index = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  auto expression = [&](const std::vector<VarPtr>& pool) {
    const VarPtr& a = pool[index(pool.size())];
    const VarPtr& b = pool[index(pool.size())];
    switch (index(3)) {
      case 0:
        return add(a, b);
      case 1:
        return mul(a, b);
      default:
        return neg(a);
    }
  };
  std::vector<VarPtr> inputs{fv("a"), fv("b"), fv("c")};
  std::vector<VarPtr> pool = inputs;
  for (int i = 0; i < 20; ++i) pool.push_back(expression(pool));
  FunctionGraph fg(inputs, {pool.back(), pool[pool.size() - 2], pool[10]},
                   FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);

  std::vector<std::pair<History::Checkpoint, std::string>> checkpoints;
  for (int step = 0; step < 60; ++step) {
    if (step % 10 == 0) checkpoints.emplace_back(history->checkpoint(), structureDump(fg));
    std::vector<VarPtr> vars;
    for (Apply* n : fg.nodes()) vars.push_back(n->output(0));
    for (const auto& in : fg.inputs()) vars.push_back(in);
    const VarPtr target = vars[index(vars.size())];
    if (fg.clients(*target).empty()) continue;
    std::unordered_set<const Variable*> below{target.get()};
    std::vector<const Variable*> stack{target.get()};
    while (!stack.empty()) {
      const Variable* v = stack.back();
      stack.pop_back();
      for (const Client& c : fg.clients(*v))
        if (c.node && below.insert(&c.node->outputRef(0)).second)
          stack.push_back(&c.node->outputRef(0));
    }
    std::vector<VarPtr> allowed;
    for (const auto& v : vars)
      if (!below.count(v.get())) allowed.push_back(v);
    const VarPtr replacement = index(2) ? allowed[index(allowed.size())] : expression(allowed);
    fg.replace(target, replacement, "random");
    fg.checkIntegrity();
  }
  for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it) {
    history->revert(it->first);
    QCOMPARE(qs(structureDump(fg)), qs(it->second));
    fg.checkIntegrity();
  }
}

TSCOPE_TEST_MAIN(TestHistory)
#include "tst_history.moc"
