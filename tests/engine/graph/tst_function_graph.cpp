// FunctionGraph: construction (Clone and Adopt), the errors of a malformed graph, exact clients,
// ids, every edit (replace, replaceAll, changeInput, importVar, addOutput, addInput) and updates.
// Features, orderings, toposort, clone() and random edits are in tst_function_graph_features.cpp.
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/ops/elemwise/elemwise.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

Q_DECLARE_METATYPE(tscope::engine::FunctionGraph::Ownership)

class TestFunctionGraph : public QObject {
  Q_OBJECT

 private slots:
  void testCloneLeavesCallerGraphUntouched();
  void testCloneMapIsComplete();
  void testAdopt();
  void testAdoptTwiceRefused();
  void testMissingFreeVariable_data();
  void testMissingFreeVariable();
  void testMissingOutputVariable();
  void testComputedInput_data();
  void testComputedInput();
  void testDuplicateInput_data();
  void testDuplicateInput();
  void testConstantsAsOrphans();
  void testExactClients();
  void testManyClients();
  void testIds();
  void testIdsStableThroughClone();
  void testReplaceHeaderExample();
  void testReplaceReleasesPrunedNodes();
  void testReplaceTypeMismatch();
  void testReplaceMoreSpecificType();
  void testReplaceByExpressionOfItself();
  void testReplaceSelfIsNoOp();
  void testReplaceAllIsOneChange();
  void testChangeInputOnNode();
  void testChangeInputOnOutput();
  void testChangeInputErrors();
  void testImportVar();
  void testImportRefusedChangesNothing();
  void testGraphOwnsImportedNodes();
  void testAddOutputAndInput();
  void testUpdates();
};

void TestFunctionGraph::testCloneLeavesCallerGraphUntouched() {
  const VarPtr x = fv("x"), y = fv("y");
  const auto c = one();
  const VarPtr z = add(mul(x, y), c);
  const VarPtr w = exp_(z);
  {
    FunctionGraph fg({x, y}, {w});
    QVERIFY(fg.inputs()[0] != x);
    QVERIFY(fg.outputs()[0] != w);
    QCOMPARE(fg.nodeCount(), std::size_t{3});
    QCOMPARE(qs(fg.inputs()[0]->name()), QStringLiteral("x"));
    // Editing the clone does not reach the caller's graph.
    fg.replace(fg.outputs()[0], fg.inputs()[1], "r");
    fg.checkIntegrity();
  }
  for (const Variable* v : {x.get(), y.get(), c.get(), z.get(), w.get()}) {
    QVERIFY(v->fgraph() == nullptr);
    QCOMPARE(v->id(), std::int64_t{-1});
  }
  QVERIFY(w->owner()->fgraph() == nullptr);
  QCOMPARE(w->owner()->input(0), z);
  QCOMPARE(z->owner()->input(1), VarPtr(c));
  QCOMPARE(z->owner()->input(0)->owner()->inputs(), (std::vector<VarPtr>{x, y}));
  QCOMPARE(w->owner()->id(), std::int64_t{-1});
}

void TestFunctionGraph::testCloneMapIsComplete() {
  const VarPtr x = fv("x"), y = fv("y");
  const auto c = one();
  const VarPtr m = mul(x, y);
  const VarPtr z = add(m, c);
  const VarPtr w = exp_(z);
  CloneMap map;
  FunctionGraph fg({x, y}, {w}, Ownership::Clone, &map);
  // Every original variable (inputs, constant, node outputs) and node has its copy.
  QCOMPARE(map.variables.size(), std::size_t{6});
  QCOMPARE(map.nodes.size(), std::size_t{3});
  QCOMPARE(map[x.get()], fg.inputs()[0]);
  QCOMPARE(map[y.get()], fg.inputs()[1]);
  QCOMPARE(map[w.get()], fg.outputs()[0]);
  QVERIFY(map[fv().get()] == nullptr);
  const VarPtr cc = map[c.get()];
  QVERIFY(cc && cc != VarPtr(c));
  QCOMPARE(cc->kind(), Variable::Kind::Constant);
  QVERIFY(fg.contains(*cc));
  for (const Variable* orig : {x.get(), y.get(), c.get(), m.get(), z.get(), w.get()}) {
    const VarPtr copy = map[orig];
    QVERIFY(copy);
    QVERIFY(fg.contains(*copy));
    QCOMPARE(copy->type(), orig->type());
    QCOMPARE(copy->name(), orig->name());
  }
  for (const Apply* orig : {m->owner(), z->owner(), w->owner()}) {
    const ApplyPtr copy = map[orig];
    QVERIFY(copy);
    QVERIFY(fg.contains(*copy));
    QVERIFY(copy->op().equals(orig->op()));
    for (int i = 0; i < orig->nInputs(); ++i) QCOMPARE(copy->input(i), map[orig->input(i).get()]);
    QCOMPARE(&copy->outputRef(0), map[&orig->outputRef(0)].get());
  }
  // The copies are everything the graph holds (the map has nothing but those six).
  std::set<const Variable*> copies;
  for (const Variable* orig : {x.get(), y.get(), c.get(), m.get(), z.get(), w.get()})
    copies.insert(map[orig].get());
  QCOMPARE(copies, std::set<const Variable*>(fg.variables().begin(), fg.variables().end()));
  fg.checkIntegrity();
}

void TestFunctionGraph::testAdopt() {
  const VarPtr x = fv("x");
  const VarPtr y = exp_(neg(x));
  {
    FunctionGraph fg({x}, {y}, Ownership::Adopt);
    QCOMPARE(fg.inputs()[0], x);
    QCOMPARE(fg.outputs()[0], y);
    QCOMPARE(x->fgraph(), &fg);
    QCOMPARE(y->fgraph(), &fg);
    QCOMPARE(y->owner()->fgraph(), &fg);
    QVERIFY(fg.contains(*y->owner()->input(0)->owner()));
    QVERIFY(x->id() >= 0 && y->id() >= 0);
    fg.checkIntegrity();
  }
  // The graph is gone: the nodes are free again (and may join a new graph).
  QVERIFY(x->fgraph() == nullptr);
  QVERIFY(y->owner()->fgraph() == nullptr);
  FunctionGraph again({x}, {y}, Ownership::Adopt);
  again.checkIntegrity();
}

void TestFunctionGraph::testAdoptTwiceRefused() {
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph first({x}, {y}, Ownership::Adopt);
  auto msg = thrownMessage<GraphError>([&] { FunctionGraph second({x}, {y}, Ownership::Adopt); });
  QVERIFY2(contains(msg, "another FunctionGraph"), msg ? msg->c_str() : "no error");
  // A node of the first graph reached from a fresh input is refused too.
  const VarPtr x2 = fv("x2");
  const VarPtr z = add(y, x2);
  msg = thrownMessage<GraphError>([&] { FunctionGraph second({x2}, {z}, Ownership::Adopt); });
  QVERIFY2(contains(msg, "another FunctionGraph"), msg ? msg->c_str() : "no error");
  QVERIFY(x2->fgraph() == nullptr);
  QVERIFY(z->owner()->fgraph() == nullptr);
  // Cloning from a graph's variables is fine and leaves the first graph alone.
  const std::string before = structureDump(first);
  FunctionGraph copy({x}, {y});
  QCOMPARE(structureDump(copy), before);
  QCOMPARE(structureDump(first), before);
  QCOMPARE(x->fgraph(), &first);
  first.checkIntegrity();
}

void TestFunctionGraph::testMissingFreeVariable_data() {
  QTest::addColumn<Ownership>("ownership");
  QTest::newRow("clone") << Ownership::Clone;
  QTest::newRow("adopt") << Ownership::Adopt;
}

void TestFunctionGraph::testMissingFreeVariable() {
  QFETCH(Ownership, ownership);
  const VarPtr x = fv("x"), w = fv("w");
  const VarPtr y = mul(x, w);
  const VarPtr out = exp_(y);
  const auto msg = thrownMessage<GraphError>([&] { FunctionGraph fg({x}, {out}, ownership); });
  QVERIFY2(msg, "a free variable missing from the inputs must be an error");
  QVERIFY2(contains(msg, "'w'"), msg->c_str());
  QVERIFY2(contains(msg, "Elemwise{mul}"), msg->c_str());            // the node that uses it
  QVERIFY2(contains(msg, "tst_function_graph.cpp:"), msg->c_str());  // where they were made
  QVERIFY2(contains(msg, "not among the graph's inputs"), msg->c_str());
  // No half-built graph is left behind.
  for (const Variable* v : {x.get(), w.get(), y.get(), out.get()}) QVERIFY(v->fgraph() == nullptr);
  QVERIFY(y->owner()->fgraph() == nullptr);
  QVERIFY(out->owner()->fgraph() == nullptr);
  FunctionGraph ok({x, w}, {out}, ownership);
  ok.checkIntegrity();
}

void TestFunctionGraph::testMissingOutputVariable() {
  const VarPtr x = fv("x"), lonely = fv("lonely");
  auto msg = thrownMessage<GraphError>([&] { FunctionGraph fg({x}, {neg(x), lonely}); });
  QVERIFY2(contains(msg, "'lonely'"), msg ? msg->c_str() : "no error");
  msg = thrownMessage<GraphError>([&] { FunctionGraph fg({x}, {lonely}, Ownership::Adopt); });
  QVERIFY2(contains(msg, "'lonely'"), msg ? msg->c_str() : "no error");
  QVERIFY(x->fgraph() == nullptr);
  QVERIFY_THROWS_EXCEPTION(GraphError, FunctionGraph({x}, {nullptr}));
  QVERIFY_THROWS_EXCEPTION(GraphError, FunctionGraph({nullptr}, {x}));
}

void TestFunctionGraph::testComputedInput_data() {
  testMissingFreeVariable_data();
}

void TestFunctionGraph::testComputedInput() {
  QFETCH(Ownership, ownership);
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  y->setName("y");
  const auto msg = thrownMessage<GraphError>([&] { FunctionGraph fg({y}, {exp_(y)}, ownership); });
  QVERIFY2(msg, "a computed input must be an error");
  QVERIFY2(contains(msg, "'y'"), msg->c_str());
  QVERIFY2(contains(msg, "computed by Elemwise{neg}"), msg->c_str());
}

void TestFunctionGraph::testDuplicateInput_data() {
  testMissingFreeVariable_data();
}

void TestFunctionGraph::testDuplicateInput() {
  QFETCH(Ownership, ownership);
  const VarPtr x = fv("x");
  const auto msg = thrownMessage<GraphError>([&] {
    FunctionGraph fg({x, x}, {neg(x)}, ownership);
  });
  QVERIFY2(msg, "an input listed twice must be an error");
  QVERIFY2(contains(msg, "'x'"), msg->c_str());
  QVERIFY2(contains(msg, "listed twice"), msg->c_str());
  QVERIFY(x->fgraph() == nullptr);
}

void TestFunctionGraph::testConstantsAsOrphans() {
  const VarPtr x = fv("x");
  const auto c = one();
  const VarPtr y = add(mul(x, c), c);
  FunctionGraph fg({x}, {y}, Ownership::Adopt);
  QCOMPARE(fg.inputs().size(), std::size_t{1});
  QVERIFY(fg.contains(*c));
  QVERIFY(std::find(fg.variables().begin(), fg.variables().end(), c.get()) != fg.variables().end());
  QCOMPARE(fg.clients(*c).size(), std::size_t{2});
  fg.checkIntegrity();
  // A constant that loses its last client leaves the graph.
  fg.replace(y, x, "drop");
  QVERIFY(!fg.contains(*c));
  QCOMPARE(fg.nodeCount(), std::size_t{0});
  fg.checkIntegrity();
  // A constant may be an output by itself, and a graph may have no inputs at all.
  const auto k = one();
  FunctionGraph constant({}, {k});
  QCOMPARE(constant.variables().size(), std::size_t{1});
  QCOMPARE(constant.outputs()[0]->kind(), Variable::Kind::Constant);
  QVERIFY(constant.outputs()[0] != VarPtr(k));
  constant.checkIntegrity();
  // A constant listed as an input is an input, not an orphan.
  const auto k2 = one();
  FunctionGraph withInput({k2}, {neg(k2)}, Ownership::Adopt);
  QCOMPARE(withInput.inputs()[0], VarPtr(k2));
  withInput.checkIntegrity();
}

void TestFunctionGraph::testExactClients() {
  const VarPtr x = fv("x");
  const VarPtr n = add(x, x);  // Note [Clients are exact]: two clients, not one
  const VarPtr m = mul(n, x);
  FunctionGraph fg({x}, {m, n, m}, Ownership::Adopt);
  Apply* addNode = n->owner();
  Apply* mulNode = m->owner();
  QCOMPARE(fg.clients(*x), (std::vector<Client>{{addNode, 0}, {addNode, 1}, {mulNode, 1}}));
  QCOMPARE(fg.clients(*n), (std::vector<Client>{{mulNode, 0}, {nullptr, 1}}));
  QCOMPARE(fg.clients(*m), (std::vector<Client>{{nullptr, 0}, {nullptr, 2}}));
  QVERIFY(fg.clients(*m)[0].isOutput());
  QVERIFY(!fg.clients(*n)[0].isOutput());
  fg.checkIntegrity();
  const auto msg = thrownMessage<GraphError>([&] { fg.clients(*fv("outsider")); });
  QVERIFY2(contains(msg, "'outsider'"), msg ? msg->c_str() : "no error");
  // Replacing x changes each use exactly once.
  const VarPtr z = fv("z");
  fg.addInput(z);
  fg.replace(x, z, "swap");
  QVERIFY(fg.clients(*x).empty());
  QCOMPARE(fg.clients(*z), (std::vector<Client>{{addNode, 0}, {addNode, 1}, {mulNode, 1}}));
  QCOMPARE(addNode->inputs(), (std::vector<VarPtr>{z, z}));
  verifyStructure(fg);
  fg.checkIntegrity();
}

// Note [Client positions]: a variable with many clients (here x, used by 200 nodes and twice by
// one of them) removes a client in O(1); the clients stay exact through replacements and prunes.
void TestFunctionGraph::testManyClients() {
  const VarPtr x = fv("x");
  const VarPtr y = fv("y");
  std::vector<VarPtr> uses;
  for (int i = 0; i < 200; ++i) uses.push_back(i == 7 ? add(x, x) : mul(x, y));
  FunctionGraph fg({x, y}, uses, Ownership::Adopt);
  QCOMPARE(fg.clients(*x).size(), std::size_t{201});
  fg.checkIntegrity();
  // Every third use now reads y instead: x loses those clients, y gains them.
  for (std::size_t i = 0; i < uses.size(); i += 3) fg.changeInput(uses[i]->owner(), 0, y, "to_y");
  fg.checkIntegrity();
  // Outputs replaced by y prune their nodes (and with them x's clients).
  for (std::size_t i = 1; i < uses.size(); i += 2)
    fg.changeInput(nullptr, static_cast<int>(i), y, "prune");
  fg.checkIntegrity();
  std::multiset<std::pair<const Apply*, int>> expected;
  for (const Apply* node : fg.nodes())
    for (int k = 0; k < node->nInputs(); ++k)
      if (node->input(k) == x) expected.emplace(node, k);
  std::multiset<std::pair<const Apply*, int>> actual;
  for (const Client& c : fg.clients(*x)) actual.emplace(c.node, c.index);
  QCOMPARE(actual, expected);
  QVERIFY(actual.size() < 100);
  // Down to a few clients, then back up: the list stays exact either way.
  for (std::size_t i = 0; i < uses.size(); ++i)
    fg.changeInput(nullptr, static_cast<int>(i), y, "all_y");
  QVERIFY(fg.clients(*x).empty());
  QCOMPARE(fg.nodeCount(), std::size_t{0});
  for (std::size_t i = 0; i < 40; ++i)
    fg.changeInput(nullptr, static_cast<int>(i), add(x, y), "back");
  QCOMPARE(fg.clients(*x).size(), std::size_t{40});
  fg.checkIntegrity();
  const auto msg = thrownMessage<GraphError>([&] {
    fg.changeInput(nullptr, 0, x, "x");
    fg.replace(y, x, "y");
  });
  QVERIFY(!msg);  // replacing y (a graph input with many clients) by x is legal
  fg.checkIntegrity();
}

void TestFunctionGraph::testIds() {
  const VarPtr x = fv("x"), y = fv("y");
  const VarPtr out = exp_(add(mul(x, y), one()));
  FunctionGraph fg({x, y}, {out, neg(x)}, Ownership::Adopt);
  std::set<std::int64_t> ids;
  std::int64_t maxId = -1;
  for (const Variable* v : fg.variables()) {
    QVERIFY(v->id() >= 0);
    QVERIFY2(ids.insert(v->id()).second, "variable ids must be unique");
    QCOMPARE(fg.variableById(v->id()), v);
    QVERIFY(fg.nodeById(v->id()) == nullptr);
    maxId = std::max(maxId, v->id());
  }
  for (const Apply* n : fg.nodes()) {
    QVERIFY(n->id() >= 0);
    QVERIFY2(ids.insert(n->id()).second, "ids must be unique across nodes and variables");
    QCOMPARE(fg.nodeById(n->id()), n);
    QVERIFY(fg.variableById(n->id()) == nullptr);
    maxId = std::max(maxId, n->id());
  }
  QCOMPARE(ids.size(), fg.variables().size() + fg.nodeCount());
  QCOMPARE(fg.nextId(), maxId + 1);
  QVERIFY(fg.nodeById(maxId + 1) == nullptr);
  QVERIFY(fg.variableById(-1) == nullptr);
  // Fresh ids follow the data flow: inputs first, a node after its inputs, outputs after their
  // node.
  QCOMPARE(x->id(), std::int64_t{0});
  QCOMPARE(y->id(), std::int64_t{1});
  for (const Apply* n : fg.nodes()) {
    for (const auto& in : n->inputs()) QVERIFY(in->id() < n->id());
    QVERIFY(n->outputRef(0).id() > n->id());
  }
  // Ids belong to the graph now.
  QVERIFY_THROWS_EXCEPTION(GraphError, x->presetId(99));
  QVERIFY_THROWS_EXCEPTION(GraphError, out->owner()->presetId(99));
  fg.reserveIds(1000);
  QCOMPARE(fg.nextId(), std::int64_t{1000});
  fg.reserveIds(5);
  QCOMPARE(fg.nextId(), std::int64_t{1000});
  fg.addOutput(mul(x, x), "more");
  QCOMPARE(fg.outputs().back()->owner()->id(), std::int64_t{1000});
}

void TestFunctionGraph::testIdsStableThroughClone() {
  const VarPtr x = fv("x");
  const VarPtr out = exp_(neg(x));
  // Preset ids are kept; the rest are handed out above them.
  x->presetId(40);
  out->owner()->presetId(7);
  FunctionGraph fg({x}, {out}, Ownership::Adopt);
  QCOMPARE(x->id(), std::int64_t{40});
  QCOMPARE(out->owner()->id(), std::int64_t{7});
  QVERIFY(out->id() > 40);
  const auto copy = fg.clone();
  QCOMPARE(structureDump(*copy), structureDump(fg));
  QCOMPARE(copy->inputs()[0]->id(), std::int64_t{40});
  QCOMPARE(copy->nextId(), fg.nextId());
  for (const Variable* v : fg.variables()) {
    Variable* twin = copy->variableById(v->id());
    QVERIFY(twin && twin != v);
    QCOMPARE(twin->type(), v->type());
  }
  // A preset id that collides with another is replaced by a fresh one, never shared.
  const VarPtr a = fv("a"), b = fv("b");
  a->presetId(3);
  b->presetId(3);
  FunctionGraph clash({a, b}, {add(a, b)}, Ownership::Adopt);
  QVERIFY(a->id() != b->id());
  clash.checkIntegrity();
}

void TestFunctionGraph::testReplaceHeaderExample() {
  // before: y = exp(log(x)); z = y + 1      replace(y, x, "exp_log")      after: z = x + 1
  const VarPtr x = fv("x");
  const VarPtr logx = log_(x);
  const VarPtr y = exp_(logx);
  const auto c = one();
  const VarPtr z = add(y, c);
  FunctionGraph fg({x}, {z}, Ownership::Adopt);
  QCOMPARE(fg.nodeCount(), std::size_t{3});
  fg.replace(y, x, "exp_log");
  QCOMPARE(z->owner()->inputs(), (std::vector<VarPtr>{x, VarPtr(c)}));
  QCOMPARE(fg.nodeCount(), std::size_t{1});
  QVERIFY(!fg.contains(*y->owner()));
  QVERIFY(!fg.contains(*logx->owner()));
  QVERIFY(!fg.contains(*y));
  QVERIFY(!fg.contains(*logx));
  QVERIFY(fg.nodeById(y->owner()->id()) == nullptr);
  QVERIFY(fg.variableById(y->id()) == nullptr);
  QCOMPARE(fg.clients(*x), (std::vector<Client>{{z->owner(), 0}}));
  fg.checkIntegrity();
  verifyStructure(fg);
}

void TestFunctionGraph::testReplaceReleasesPrunedNodes() {
  const VarPtr x = fv("x");
  VarPtr z;
  std::weak_ptr<Apply> weakExp, weakLog;
  {
    const VarPtr y = exp_(log_(x));
    weakExp = y->owner()->weak_from_this();
    weakLog = y->owner()->input(0)->owner()->weak_from_this();
    z = add(y, one());
  }
  FunctionGraph fg({x}, {z}, Ownership::Adopt);
  VarPtr y = z->owner()->input(0);
  fg.replace(y, x, "exp_log");
  QVERIFY(!weakExp.expired());  // our handle y still holds it
  y.reset();
  QVERIFY(weakExp.expired());
  QVERIFY(weakLog.expired());
  fg.checkIntegrity();
}

void TestFunctionGraph::testReplaceTypeMismatch() {
  const VarPtr x = fv("x");
  const VarPtr d = Variable::create(TensorType(DType::Float64, {3}), "d");
  const VarPtr longer = Variable::create(TensorType(DType::Float32, {4}), "longer");
  const VarPtr y = exp_(x);
  y->setName("y");
  const VarPtr z = neg(y);
  FunctionGraph fg({x, d, longer}, {z}, Ownership::Adopt);
  const std::string before = structureDump(fg);
  auto msg = thrownMessage<TypeError>([&] { fg.replace(y, d, "bad"); });
  QVERIFY2(msg, "a float64 variable must not replace a float32 one");
  QVERIFY2(contains(msg, "'y'"), msg->c_str());
  QVERIFY2(contains(msg, "'d'"), msg->c_str());
  QVERIFY2(contains(msg, "TensorType(float32, (3,))"), msg->c_str());
  QVERIFY2(contains(msg, "TensorType(float64, (3,))"), msg->c_str());
  QVERIFY2(contains(msg, "bad"), msg->c_str());
  QVERIFY(thrownMessage<TypeError>([&] { fg.replace(y, longer, "bad"); }));
  // replaceAll checks every pair first: a good pair before a bad one is not applied either.
  const VarPtr x2 = fv("x2");
  fg.addInput(x2);
  const std::string withX2 = structureDump(fg);
  const std::vector<std::pair<VarPtr, VarPtr>> pairs{{x, x2}, {y, d}};
  QVERIFY(thrownMessage<TypeError>([&] { fg.replaceAll(pairs, "half"); }));
  QCOMPARE(structureDump(fg), withX2);
  QCOMPARE(y->owner()->input(0), x);
  QVERIFY(before != withX2);
  fg.checkIntegrity();
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.replace(y, nullptr, "null"));
}

void TestFunctionGraph::testReplaceMoreSpecificType() {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
  const VarPtr s = Variable::create(TensorType(DType::Float32, {2, 3}), "s");
  const VarPtr y = neg(x);
  const VarPtr z = exp_(y);
  FunctionGraph fg({x, s}, {z}, Ownership::Adopt);
  fg.replace(y, s, "specific");  // (2, 3) is a subtype of (?, 3)
  QCOMPARE(z->owner()->input(0), s);
  fg.checkIntegrity();
  // The other way round is refused: (?, 3) is not known to be (2, 3).
  const VarPtr general = neg(x);
  const VarPtr w = exp_(s);
  fg.addOutput(w, "w");
  const auto msg = thrownMessage<TypeError>([&] { fg.replace(s, general, "general"); });
  QVERIFY2(contains(msg, "more specific"), msg ? msg->c_str() : "no error");
  fg.checkIntegrity();
}

void TestFunctionGraph::testReplaceByExpressionOfItself() {
  // before: out = exp(y)      replace(y, neg(y))      after: out = exp(neg(y))
  const VarPtr x = fv("x");
  const VarPtr y = log_(x);
  const VarPtr out = exp_(y);
  FunctionGraph fg({x}, {out, y}, Ownership::Adopt);
  const VarPtr wrapped = neg(y);
  fg.replace(y, wrapped, "wrap");
  QCOMPARE(out->owner()->input(0), wrapped);
  QCOMPARE(fg.outputs()[1], wrapped);
  QCOMPARE(fg.clients(*y), (std::vector<Client>{{wrapped->owner(), 0}}));
  QCOMPARE(fg.nodeCount(), std::size_t{3});
  fg.checkIntegrity();
  verifyStructure(fg);
}

void TestFunctionGraph::testReplaceSelfIsNoOp() {
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph fg({x}, {exp_(y)}, Ownership::Adopt);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);
  const std::string before = structureDump(fg);
  fg.replace(y, y, "self");
  QCOMPARE(structureDump(fg), before);
  QCOMPARE(rec->count("change"), std::size_t{0});
  QCOMPARE(rec->count("prune"), std::size_t{0});
  // A variable that is not in the graph has no clients to replace.
  fg.replace(neg(x), x, "outside");
  QCOMPARE(structureDump(fg), before);
  fg.checkIntegrity();
}

void TestFunctionGraph::testReplaceAllIsOneChange() {
  const VarPtr a = fv("a"), b = fv("b"), c = fv("c"), d = fv("d");
  const VarPtr na = neg(a), nc = neg(c);
  const VarPtr out = add(na, nc);
  FunctionGraph fg({a, b, c, d}, {out}, Ownership::Adopt);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);
  rec->events.clear();
  const std::vector<std::pair<VarPtr, VarPtr>> pairs{{na, b}, {nc, d}};
  fg.replaceAll(pairs, "both");
  QCOMPARE(out->owner()->inputs(), (std::vector<VarPtr>{b, d}));
  QCOMPARE(rec->count("begin"), std::size_t{1});
  QCOMPARE(rec->count("end"), std::size_t{1});
  QCOMPARE(qs(rec->events.front()), QStringLiteral("begin both"));
  QCOMPARE(qs(rec->events.back()), QStringLiteral("end both"));
  QCOMPARE(rec->count("change"), std::size_t{2});
  QCOMPARE(rec->count("prune"), std::size_t{2});
  QCOMPARE(fg.nodeCount(), std::size_t{1});
  fg.checkIntegrity();
  verifyStructure(fg);
}

void TestFunctionGraph::testChangeInputOnNode() {
  // before: n = add(a, b)      changeInput(n, 1, c, "r")      after: n = add(a, c)
  const VarPtr a = fv("a"), b = fv("b"), c = fv("c");
  const VarPtr nb = neg(b);
  const VarPtr n = add(a, nb);
  FunctionGraph fg({a, b, c}, {n}, Ownership::Adopt);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);
  fg.changeInput(n->owner(), 1, c, "r");
  QCOMPARE(n->owner()->inputs(), (std::vector<VarPtr>{a, c}));
  QVERIFY(!fg.contains(*nb));
  QVERIFY(fg.clients(*b).empty());
  QCOMPARE(fg.clients(*c), (std::vector<Client>{{n->owner(), 1}}));
  const std::string change = "change " + std::to_string(n->owner()->id()) + "[1] " +
                             std::to_string(nb->id()) + "->" + std::to_string(c->id()) + " r";
  QVERIFY2(std::find(rec->events.begin(), rec->events.end(), change) != rec->events.end(),
           change.c_str());
  fg.checkIntegrity();
  verifyStructure(fg);
}

void TestFunctionGraph::testChangeInputOnOutput() {
  const VarPtr a = fv("a"), b = fv("b");
  const VarPtr n = add(a, b);
  FunctionGraph fg({a, b}, {n, a}, Ownership::Adopt);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);
  const std::int64_t nId = n->id();
  fg.changeInput(nullptr, 0, b, "out");
  QCOMPARE(fg.outputs(), (std::vector<VarPtr>{b, a}));
  QCOMPARE(fg.nodeCount(), std::size_t{0});
  QCOMPARE(fg.clients(*b), (std::vector<Client>{{nullptr, 0}}));
  QCOMPARE(fg.clients(*a), (std::vector<Client>{{nullptr, 1}}));
  QCOMPARE(rec->events,
           (std::vector<std::string>{
               "attach", "begin out", "prune " + std::to_string(n->owner()->id()) + " out",
               "change out[0] " + std::to_string(nId) + "->" + std::to_string(b->id()) + " out",
               "end out"}));
  fg.checkIntegrity();
  verifyStructure(fg);
}

void TestFunctionGraph::testChangeInputErrors() {
  const VarPtr a = fv("a"), b = fv("b");
  const VarPtr n = add(a, b);
  FunctionGraph fg({a, b}, {n}, Ownership::Adopt);
  const std::string before = structureDump(fg);
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.changeInput(n->owner(), 2, a, "r"));
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.changeInput(n->owner(), -1, a, "r"));
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.changeInput(nullptr, 1, a, "r"));
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.changeInput(n->owner(), 0, nullptr, "r"));
  const VarPtr outside = add(a, b);
  auto msg = thrownMessage<GraphError>([&] { fg.changeInput(outside->owner(), 0, b, "r"); });
  QVERIFY2(contains(msg, "not in this graph"), msg ? msg->c_str() : "no error");
  const VarPtr d = Variable::create(TensorType(DType::Float64, {3}), "d");
  const auto typeMsg = thrownMessage<TypeError>([&] { fg.changeInput(n->owner(), 0, d, "r"); });
  QVERIFY2(contains(typeMsg, "'d'") && contains(typeMsg, "input 0 of Elemwise{add}"),
           typeMsg ? typeMsg->c_str() : "no error");
  QVERIFY(thrownMessage<TypeError>([&] { fg.changeInput(nullptr, 0, exp_(d), "r"); }));
  QCOMPARE(structureDump(fg), before);
  fg.checkIntegrity();
}

void TestFunctionGraph::testImportVar() {
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph fg({x}, {y}, Ownership::Adopt);
  auto rec = std::make_shared<RecordingFeature>();
  fg.attachFeature(rec);
  rec->events.clear();
  const std::int64_t previousNext = fg.nextId();
  const std::int64_t previousMax = previousNext - 1;
  // A new subgraph on top of graph variables: p = exp(y); q = mul(p, add(p, x)).
  const VarPtr p = exp_(y);
  const VarPtr s = add(p, x);
  const VarPtr q = mul(p, s);
  fg.importVar(q, "grow");
  QVERIFY(fg.contains(*q));
  QCOMPARE(fg.nodeCount(), std::size_t{4});
  for (const Apply* n : {p->owner(), s->owner(), q->owner()}) {
    QVERIFY(fg.contains(*n));
    QVERIFY(n->id() > previousMax);
    QVERIFY(n->outputRef(0).id() > previousMax);
  }
  // onImport in topological order: every node after the nodes it needs.
  QCOMPARE(rec->imported, (std::vector<Apply*>{p->owner(), s->owner(), q->owner()}));
  QCOMPARE(rec->count("begin grow"), std::size_t{1});
  QCOMPARE(rec->count("import"), std::size_t{3});
  QCOMPARE(qs(rec->events[0]), QStringLiteral("begin grow"));
  QCOMPARE(qs(rec->events[1]),
           QStringLiteral("import %1 Elemwise{exp} grow").arg(p->owner()->id()));
  QCOMPARE(qs(rec->events.back()), QStringLiteral("end grow"));
  QCOMPARE(fg.clients(*p), (std::vector<Client>{{s->owner(), 0}, {q->owner(), 0}}));
  QVERIFY(fg.clients(*q).empty());
  fg.checkIntegrity();
  // Importing what is already there does nothing.
  rec->events.clear();
  fg.importVar(q, "again");
  QCOMPARE(rec->count("import"), std::size_t{0});
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.importVar(nullptr, "null"));
}

void TestFunctionGraph::testImportRefusedChangesNothing() {
  const VarPtr x = fv("x"), stranger = fv("stranger");
  FunctionGraph fg({x}, {neg(x)}, Ownership::Adopt);
  const std::string before = structureDump(fg);
  const std::int64_t next = fg.nextId();
  const VarPtr p = exp_(x);
  const VarPtr q = add(p, stranger);
  const auto msg = thrownMessage<GraphError>([&] { fg.importVar(q, "bad"); });
  QVERIFY2(contains(msg, "'stranger'"), msg ? msg->c_str() : "no error");
  QVERIFY(!fg.contains(*p));
  QVERIFY(!fg.contains(*p->owner()));
  QCOMPARE(fg.clients(*x).size(), std::size_t{1});
  QCOMPARE(structureDump(fg), before);
  QCOMPARE(fg.nextId(), next);
  fg.checkIntegrity();
  // A variable of another graph is refused as well.
  const VarPtr o = fv("o");
  FunctionGraph other({o}, {neg(o)}, Ownership::Adopt);
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.importVar(other.outputs()[0], "foreign"));
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.replace(fg.outputs()[0], other.outputs()[0], "foreign"));
  QCOMPARE(structureDump(fg), before);
}

void TestFunctionGraph::testGraphOwnsImportedNodes() {
  // Note [The graph owns its nodes]: a node imported by importVar that no output needs stays
  // alive while it is in the graph, even when the caller drops every handle to it.
  const VarPtr x = fv("x");
  auto fg = std::make_unique<FunctionGraph>(std::vector<VarPtr>{x}, std::vector<VarPtr>{neg(x)},
                                            Ownership::Adopt);
  std::weak_ptr<Apply> weakExp, weakMul;
  std::int64_t mulId = -1;
  {
    const VarPtr e = exp_(x);
    const VarPtr m = mul(e, x);
    fg->importVar(m, "dangling");
    weakExp = e->owner()->weak_from_this();
    weakMul = m->owner()->weak_from_this();
    mulId = m->owner()->id();
  }
  QVERIFY(!weakExp.expired());
  QVERIFY(!weakMul.expired());
  QCOMPARE(fg->nodeCount(), std::size_t{3});
  Apply* mulNode = fg->nodeById(mulId);
  QVERIFY(mulNode != nullptr);
  QCOMPARE(qs(mulNode->op().str()), QStringLiteral("Elemwise{mul}"));
  QCOMPARE(fg->toposort().size(), std::size_t{3});
  fg->checkIntegrity();
  // Once it has a client and loses it, the node is pruned and released.
  fg->addOutput(mulNode->output(0), "use");
  fg->changeInput(nullptr, 1, x, "unuse");
  QVERIFY(weakMul.expired());
  QVERIFY(weakExp.expired());
  fg->checkIntegrity();
  // The graph's death releases what only it held.
  const VarPtr orphanRoot = log_(x);
  std::weak_ptr<Apply> weakLog = orphanRoot->owner()->weak_from_this();
  fg->importVar(orphanRoot, "dangling again");
  const_cast<VarPtr&>(orphanRoot) = nullptr;
  QVERIFY(!weakLog.expired());
  fg.reset();
  QVERIFY(weakLog.expired());
}

void TestFunctionGraph::testAddOutputAndInput() {
  // before: outputs (y)      addOutput(z)      after: outputs (y, z)
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph fg({x}, {y}, Ownership::Adopt);
  const VarPtr z = exp_(y);
  fg.addOutput(z, "z");
  QCOMPARE(fg.outputs(), (std::vector<VarPtr>{y, z}));
  QCOMPARE(fg.clients(*z), (std::vector<Client>{{nullptr, 1}}));
  fg.addOutput(y, "y again");
  QCOMPARE(fg.clients(*y), (std::vector<Client>{{nullptr, 0}, {z->owner(), 0}, {nullptr, 2}}));
  fg.checkIntegrity();
  verifyStructure(fg);

  const VarPtr extra = fv("extra");
  fg.addInput(extra);
  QCOMPARE(fg.inputs().back(), extra);
  QCOMPARE(extra->fgraph(), &fg);
  fg.addInput(extra);  // already an input: nothing happens
  QCOMPARE(fg.inputs().size(), std::size_t{2});
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.addInput(neg(extra)));
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.addInput(nullptr));
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.addOutput(nullptr, "null"));
  // Once an input, the variable may be used by new nodes.
  fg.addOutput(add(extra, y), "use");
  fg.checkIntegrity();
  verifyStructure(fg);
}

void TestFunctionGraph::testUpdates() {
  const VarPtr x = fv("x");
  const auto w = SharedVariable::create(Tensor(DType::Float32, {3}), "w");
  const VarPtr next = add(w, x);
  const VarPtr wide = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "wide");
  const VarPtr asDouble = cast(x, DType::Float64);
  FunctionGraph fg({x, w, wide}, {next, asDouble, neg(wide), x}, Ownership::Adopt);
  QVERIFY(fg.updateMapping().empty());
  fg.setUpdate(0, 1);
  QCOMPARE(fg.updateMapping(), (std::map<std::size_t, std::size_t>{{0, 1}}));
  auto msg = thrownMessage<GraphError>([&] { fg.setUpdate(3, 0); });
  QVERIFY2(contains(msg, "'x'") && contains(msg, "not a shared variable"),
           msg ? msg->c_str() : "no error");
  msg = thrownMessage<TypeError>([&] { fg.setUpdate(1, 1); });
  QVERIFY2(contains(msg, "'w'") && contains(msg, "float64"), msg ? msg->c_str() : "no error");
  // (?,) does not fit a shared value of type (3,).
  QVERIFY(thrownMessage<TypeError>([&] { fg.setUpdate(2, 1); }));
  QVERIFY(thrownMessage<GraphError>([&] { fg.setUpdate(4, 1); }));
  QVERIFY(thrownMessage<GraphError>([&] { fg.setUpdate(0, 3); }));
  QCOMPARE(fg.updateMapping(), (std::map<std::size_t, std::size_t>{{0, 1}}));
  // An output that is exactly the input (3,) is a fine update too.
  fg.setUpdate(3, 1);
  QCOMPARE(fg.updateMapping().size(), std::size_t{2});
}

TSCOPE_TEST_MAIN(TestFunctionGraph)
#include "tst_function_graph.moc"
