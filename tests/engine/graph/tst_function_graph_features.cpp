// FunctionGraph beyond single edits: features and their callbacks, orderings, toposort and cycles,
// checkIntegrity, clone(), and random edit sequences checked against an independent recount of
// the structure. Construction and the edits themselves are in tst_function_graph.cpp.
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/ops/elemwise/elemwise.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

namespace {

// Forces `after` to run after `before`.
class OrderFeature : public Feature {
 public:
  Apply* before = nullptr;
  Apply* after = nullptr;
  Orderings orderings(const FunctionGraph&) const override { return {{after, {before}}}; }
};

class RefusingAttach : public Feature {
 public:
  void onAttach(FunctionGraph&) override { throw GraphError("not this graph"); }
};

std::vector<std::int64_t> toposortIds(const FunctionGraph& fg) {
  std::vector<std::int64_t> ids;
  for (const Apply* n : fg.toposort()) ids.push_back(n->id());
  return ids;
}
}  // namespace

class TestFunctionGraphFeatures : public QObject {
  Q_OBJECT

 private slots:
  void testFeatureCallbacks();
  void testFeatureAttachDetach();
  void testOrderings();
  void testToposort();
  void testCycle();
  void testCheckIntegrityOnGoodGraphs();
  void testClone();
  void testCloneIsIndependent();
  void testRandomReplacements_data();
  void testRandomReplacements();
};

void TestFunctionGraphFeatures::testFeatureCallbacks() {
  const VarPtr x = fv("x"), x2 = fv("x2");
  const VarPtr logx = log_(x);
  const VarPtr y = exp_(logx);
  const VarPtr z = add(y, x);
  auto rec = std::make_shared<RecordingFeature>();
  {
    FunctionGraph fg({x, x2}, {z}, Ownership::Adopt);
    fg.attachFeature(rec);
    QCOMPARE(rec->events, std::vector<std::string>{"attach"});
    QCOMPARE(fg.feature<RecordingFeature>(), rec.get());
    QVERIFY(fg.feature<OrderFeature>() == nullptr);

    // Replace y by mul(neg(x2), x): imports two nodes, prunes two, changes one input.
    const VarPtr nx2 = neg(x2);
    const VarPtr m = mul(nx2, x);
    const std::int64_t yId = y->id(), expId = y->owner()->id(), logId = logx->owner()->id();
    rec->events.clear();
    fg.replace(y, m, "rw");
    const std::vector<std::string> expected{
        "begin rw",
        "import " + std::to_string(nx2->owner()->id()) + " Elemwise{neg} rw",
        "import " + std::to_string(m->owner()->id()) + " Elemwise{mul} rw",
        "prune " + std::to_string(expId) + " rw",
        "prune " + std::to_string(logId) + " rw",
        "change " + std::to_string(z->owner()->id()) + "[0] " + std::to_string(yId) + "->" +
            std::to_string(m->id()) + " rw",
        "end rw",
    };
    QCOMPARE(rec->events, expected);
    QCOMPARE(rec->pruned, (std::vector<Apply*>{y->owner(), logx->owner()}));
    rec->events.clear();
  }
  // The graph died: its features are detached.
  QCOMPARE(rec->events, std::vector<std::string>{"detach"});
}

void TestFunctionGraphFeatures::testFeatureAttachDetach() {
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph fg({x}, {y}, Ownership::Adopt);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);
  fg.attachFeature(rec);  // attaching again is a no-op
  QCOMPARE(rec->count("attach"), std::size_t{1});
  QCOMPARE(fg.features().size(), std::size_t{1});
  fg.detachFeature(*rec);
  QCOMPARE(rec->events.back(), std::string("detach"));
  QVERIFY(fg.features().empty());
  const std::size_t before = rec->events.size();
  fg.replace(y, x, "unseen");
  QCOMPARE(rec->events.size(), before);  // a detached feature sees nothing
  // A feature that refuses to attach is not attached.
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.attachFeature(std::make_shared<RefusingAttach>()));
  QVERIFY(fg.features().empty());
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.attachFeature(nullptr));
}

void TestFunctionGraphFeatures::testOrderings() {
  const VarPtr x = fv("x");
  const VarPtr a = neg(x), b = exp_(x);
  FunctionGraph fg({x}, {a, b}, Ownership::Adopt);
  Apply* nodeA = a->owner();
  Apply* nodeB = b->owner();
  // Data flow allows either order; without constraints the outputs' order decides.
  QCOMPARE(fg.toposort(), (std::vector<Apply*>{nodeA, nodeB}));
  auto order = std::make_shared<OrderFeature>();
  order->before = nodeB;
  order->after = nodeA;
  fg.attachFeature(order);
  QCOMPARE(fg.orderings().at(nodeA), std::vector<Apply*>{nodeB});
  QCOMPARE(fg.toposort(), (std::vector<Apply*>{nodeB, nodeA}));
  fg.detachFeature(*order);
  QCOMPARE(fg.toposort(), (std::vector<Apply*>{nodeA, nodeB}));
  // An ordering against the data flow is a cycle.
  const VarPtr c = neg(a);
  fg.addOutput(c, "c");
  order->before = c->owner();
  order->after = nodeA;
  fg.attachFeature(order);
  const auto msg = thrownMessage<GraphError>([&] { fg.toposort(); });
  QVERIFY2(contains(msg, "cycle"), msg ? msg->c_str() : "no error");
  fg.detachFeature(*order);
  fg.checkIntegrity();
}

void TestFunctionGraphFeatures::testToposort() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr a = add(x, y), b = mul(a, x), c = neg(a), d = add(b, c), e = exp_(y);
  FunctionGraph fg({x, y}, {d, e, c}, Ownership::Adopt);
  const std::vector<Apply*> order = fg.toposort();
  QCOMPARE(order.size(), fg.nodeCount());
  std::map<const Apply*, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  QCOMPARE(position.size(), order.size());
  for (const Apply* n : order)
    for (const auto& in : n->inputs())
      if (in->owner()) QVERIFY(position.at(in->owner()) < position.at(n));
  // Deterministic: the same graph, and a clone of it, sort the same way.
  QCOMPARE(fg.toposort(), order);
  QCOMPARE(toposortIds(*fg.clone()), toposortIds(fg));
  FunctionGraph twin({x, y}, {d, e, c});
  QCOMPARE(toposortIds(twin), toposortIds(fg));
  // Edits keep it a valid order.
  fg.replace(c, e, "r");
  for (const Apply* n : fg.toposort())
    for (const auto& in : n->inputs())
      if (in->owner()) QVERIFY(fg.contains(*in->owner()));
  fg.checkIntegrity();
}

void TestFunctionGraphFeatures::testCycle() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr n = add(x, y);
  const VarPtr m = exp_(n);
  FunctionGraph fg({x, y}, {m}, Ownership::Adopt);
  // before: n = add(x, y); m = exp(n)      changeInput(n, 0, m)      after: n = add(m, y): a cycle
  fg.changeInput(n->owner(), 0, m, "cycle");
  auto msg = thrownMessage<GraphError>([&] { fg.toposort(); });
  QVERIFY2(msg, "toposort must refuse a cycle");
  QVERIFY2(contains(msg, "cycle"), msg->c_str());
  QVERIFY2(contains(msg, "Elemwise{add} (id " + std::to_string(n->owner()->id()) + ")"),
           msg->c_str());
  QVERIFY2(contains(msg, "Elemwise{exp} (id " + std::to_string(m->owner()->id()) + ")"),
           msg->c_str());
  msg = thrownMessage<GraphError>([&] { fg.checkIntegrity(); });
  QVERIFY2(contains(msg, "cycle"), msg ? msg->c_str() : "checkIntegrity must see the cycle");
  // A node that uses its own output directly.
  fg.changeInput(n->owner(), 0, n, "self");
  QVERIFY(thrownMessage<GraphError>([&] { fg.toposort(); }));
  // Undo (this also breaks the reference cycle between the two nodes).
  fg.changeInput(n->owner(), 0, x, "undo");
  fg.checkIntegrity();
  QCOMPARE(fg.toposort(), (std::vector<Apply*>{n->owner(), m->owner()}));
}

void TestFunctionGraphFeatures::testCheckIntegrityOnGoodGraphs() {
  const VarPtr x = fv("x"), y = fv("y");
  const auto w = SharedVariable::create(Tensor(DType::Float32, {3}), "w");
  const auto c = one();
  FunctionGraph empty({}, {});
  empty.checkIntegrity();
  QVERIFY(empty.toposort().empty());
  FunctionGraph identity({x}, {x}, Ownership::Adopt);
  identity.checkIntegrity();
  FunctionGraph unusedInput({x, y}, {neg(x)});
  unusedInput.checkIntegrity();
  FunctionGraph big({x, y, w}, {add(mul(add(x, w), c), exp_(y)), mul(x, c), y, c});
  big.checkIntegrity();
  verifyStructure(big);
}

void TestFunctionGraphFeatures::testClone() {
  const VarPtr x = fv("x"), y = fv("y");
  const auto w = SharedVariable::create(Tensor(DType::Float32, {3}), "w");
  const VarPtr m = mul(x, y);
  const VarPtr top = exp_(add(m, one()));
  FunctionGraph fg({x, y, w}, {top, add(w, m)}, Ownership::Adopt);
  fg.setUpdate(1, 2);
  // Edit first so that ids have gaps: replacing the newest nodes leaves nextId above every id.
  fg.addOutput(neg(neg(x)), "tail");
  const std::int64_t nextBefore = fg.nextId();
  fg.changeInput(nullptr, 2, y, "drop tail");
  QCOMPARE(fg.nextId(), nextBefore);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);

  CloneMap map;
  const auto copy = fg.clone(&map);
  QCOMPARE(structureDump(*copy), structureDump(fg));
  QCOMPARE(copy->nextId(), fg.nextId());
  QCOMPARE(copy->nodeCount(), fg.nodeCount());
  QCOMPARE(copy->variables().size(), fg.variables().size());
  QCOMPARE(copy->updateMapping(), fg.updateMapping());
  QVERIFY(copy->features().empty());
  QCOMPARE(map[x.get()], copy->inputs()[0]);
  QCOMPARE(map[top.get()], copy->outputs()[0]);
  for (const Variable* v : fg.variables()) {
    const VarPtr twin = map[v];
    QVERIFY(twin && twin.get() != v);
    QCOMPARE(twin->id(), v->id());
    QCOMPARE(twin->name(), v->name());
    QCOMPARE(twin->kind(), v->kind());
    QCOMPARE(copy->variableById(v->id()), twin.get());
  }
  for (const Apply* n : fg.nodes()) {
    const ApplyPtr twin = map[n];
    QVERIFY(twin && twin.get() != n);
    QCOMPARE(copy->nodeById(n->id()), twin.get());
  }
  // The shared variable's clone shares its value.
  auto wCopy = std::dynamic_pointer_cast<SharedVariable>(copy->inputs()[2]);
  QVERIFY(wCopy && wCopy != w);
  w->setValue(Tensor::full(DType::Float32, {3}, 5));
  QCOMPARE(wCopy->value().toDoubles(), (std::vector<double>{5, 5, 5}));
  copy->checkIntegrity();
  verifyStructure(*copy);
}

void TestFunctionGraphFeatures::testCloneIsIndependent() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr m = mul(x, y);
  FunctionGraph fg({x, y}, {exp_(m), neg(m)}, Ownership::Adopt);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);
  const std::string before = structureDump(fg);
  const std::int64_t next = fg.nextId();
  const auto copy = fg.clone();
  rec->events.clear();
  copy->replace(copy->outputs()[0]->owner()->input(0), copy->inputs()[0], "edit copy");
  copy->addOutput(add(copy->inputs()[0], copy->inputs()[1]), "more");
  QVERIFY(structureDump(*copy) != before);
  QCOMPARE(structureDump(fg), before);
  QCOMPARE(fg.nextId(), next);
  QVERIFY(rec->events.empty());  // the original's features saw nothing
  QCOMPARE(fg.clients(*m).size(), std::size_t{2});
  fg.checkIntegrity();
  copy->checkIntegrity();
  // And the other way round.
  const std::string copyDump = structureDump(*copy);
  fg.replace(m, x, "edit original");
  QCOMPARE(structureDump(*copy), copyDump);
}

void TestFunctionGraphFeatures::testRandomReplacements_data() {
  QTest::addColumn<unsigned>("seed");
  for (unsigned seed : {1u, 2u, 3u, 42u, 2024u}) QTest::addRow("seed %u", seed) << seed;
}

void TestFunctionGraphFeatures::testRandomReplacements() {
  QFETCH(unsigned, seed);
  std::mt19937 rng(seed);
  auto pick = [&](auto& pool) -> auto& {
    return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)];
  };
  auto randomExpression = [&](std::vector<VarPtr>& operands) {
    switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
      case 0:
        return add(pick(operands), pick(operands));
      case 1:
        return mul(pick(operands), pick(operands));
      default:
        return neg(pick(operands));
    }
  };
  std::vector<VarPtr> inputs{fv("a"), fv("b"), fv("c"), fv("d")};
  std::vector<VarPtr> pool = inputs;
  pool.push_back(one());
  for (int i = 0; i < 30; ++i) pool.push_back(randomExpression(pool));
  std::vector<VarPtr> outputs(pool.end() - 3, pool.end());
  outputs.push_back(pick(pool));
  FunctionGraph fg(inputs, outputs, Ownership::Adopt);
  fg.checkIntegrity();
  verifyStructure(fg);

  auto asPtr = [&](Variable* v) -> VarPtr {
    // A shared handle to a graph variable: from its owner, or from the graph's inputs / a client.
    if (v->owner()) return v->owner()->output(v->index());
    for (const auto& in : fg.inputs())
      if (in.get() == v) return in;
    for (const Client& c : fg.clients(*v))
      return c.node ? c.node->input(c.index) : fg.outputs()[c.index];
    return nullptr;
  };
  int replacements = 0;
  while (replacements < 200) {
    std::vector<Variable*> candidates;
    for (Variable* v : fg.variables())
      if (!fg.clients(*v).empty()) candidates.push_back(v);
    Variable* target = pick(candidates);
    // The descendants of target (target included) cannot replace it: that would make a cycle.
    std::unordered_set<const Variable*> descendants{target};
    std::vector<const Variable*> stack{target};
    while (!stack.empty()) {
      const Variable* v = stack.back();
      stack.pop_back();
      for (const Client& c : fg.clients(*v))
        if (c.node && descendants.insert(&c.node->outputRef(0)).second)
          stack.push_back(&c.node->outputRef(0));
    }
    std::vector<VarPtr> allowed;
    for (Variable* v : fg.variables())
      if (!descendants.count(v)) allowed.push_back(asPtr(v));
    QVERIFY(!allowed.empty());  // the inputs other than target are always allowed
    const VarPtr replacement =
        std::bernoulli_distribution(0.5)(rng) ? pick(allowed) : randomExpression(allowed);
    const VarPtr targetPtr = asPtr(target);
    QVERIFY(targetPtr);
    fg.replace(targetPtr, replacement, "random");
    ++replacements;
    QVERIFY(!fg.clients(*replacement).empty());
    // The replacement does not use the target: the target lost every client, so it left the
    // graph unless it is an input.
    if (fg.contains(*targetPtr)) {
      QVERIFY(fg.clients(*targetPtr).empty());
      QVERIFY(std::find(fg.inputs().begin(), fg.inputs().end(), targetPtr) != fg.inputs().end());
    }
    try {
      fg.checkIntegrity();
    } catch (const GraphError& e) {
      QFAIL(qPrintable(QStringLiteral("after replacement %1: %2").arg(replacements).arg(e.what())));
    }
    verifyStructure(fg);
    if (QTest::currentTestFailed()) return;
    // Keep the graph from collapsing into its inputs.
    if (fg.nodeCount() < 4) {
      std::vector<VarPtr> operands;
      for (Variable* v : fg.variables()) operands.push_back(asPtr(v));
      VarPtr grownVar = randomExpression(operands);
      for (int i = 0; i < 3; ++i) {
        operands.push_back(grownVar);
        grownVar = randomExpression(operands);
      }
      fg.addOutput(grownVar, "grow");
      fg.checkIntegrity();
    }
  }
  QCOMPARE(replacements, 200);
  // A clone of the result is the same graph.
  QCOMPARE(structureDump(*fg.clone()), structureDump(fg));
}

TSCOPE_TEST_MAIN(TestFunctionGraphFeatures)
#include "tst_function_graph_features.moc"
