// RewriteRecorder: one record per outermost change, in order, with its phase, reason, replaced
// variables, added and removed nodes and time; no record for a change that changed nothing;
// History's reverts recorded as changes of their own.
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/history.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/graph/validator.h"
#include "engine/ops/elemwise/elemwise.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <memory>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

namespace {

using Ids = std::vector<std::int64_t>;
using IdPairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

class ForbidExp : public Feature {
 public:
  void validate(const FunctionGraph& fg) const override {
    for (const Apply* n : fg.nodes())
      if (n->op().str() == "Elemwise{exp}") throw InconsistencyError("no exp");
  }
};
}  // namespace

class TestRewriteRecorder : public QObject {
  Q_OBJECT

 private slots:
  void testRecordsReplace();
  void testRecordsInOrderWithPhases();
  void testReplaceAllIsOneRecord();
  void testEachPairOnce();
  void testImportAndAddOutput();
  void testNoOpLeavesNoRecord();
  void testHistoryRevertIsRecorded();
  void testValidatorRefusalIsRecorded();
  void testClear();
};

void TestRewriteRecorder::testRecordsReplace() {
  const VarPtr x = fv("x");
  const VarPtr lx = log_(x);
  const VarPtr y = exp_(lx);
  const VarPtr z = add(y, x);
  FunctionGraph fg({x}, {z}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(recorder);
  QVERIFY(recorder->records().empty());
  fg.replace(y, x, "exp_log");
  QCOMPARE(recorder->records().size(), std::size_t{1});
  const RewriteRecord& r = recorder->records()[0];
  QCOMPARE(r.order, std::size_t{0});
  QCOMPARE(qs(r.phase), QString());
  QCOMPARE(qs(r.reason), QStringLiteral("exp_log"));
  QCOMPARE(r.replaced, (IdPairs{{y->id(), x->id()}}));
  QVERIFY(r.addedNodes.empty());
  QCOMPARE(r.removedNodes, (Ids{y->owner()->id(), lx->owner()->id()}));
  QVERIFY(r.seconds >= 0);
  QVERIFY(r.seconds < 60);
}

void TestRewriteRecorder::testRecordsInOrderWithPhases() {
  const VarPtr x = fv("x"), w = fv("w");
  const VarPtr a = neg(x);
  const VarPtr b = exp_(a);
  const VarPtr out = mul(b, w);
  FunctionGraph fg({x, w}, {out}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(recorder);

  recorder->setPhase("canonicalize");
  QCOMPARE(qs(recorder->phase()), QStringLiteral("canonicalize"));
  const VarPtr fresh = add(log_(x), w);
  const std::int64_t aId = a->id(), aNode = a->owner()->id();
  fg.replace(a, fresh, "first");
  const std::int64_t logNode = fresh->owner()->input(0)->owner()->id(),
                     addNode = fresh->owner()->id();
  recorder->setPhase("specialize");
  const std::int64_t bId = b->id(), bNode = b->owner()->id();
  fg.replace(b, w, "second");
  recorder->setPhase({});
  fg.changeInput(nullptr, 0, x, "third");

  const auto& records = recorder->records();
  QCOMPARE(records.size(), std::size_t{3});
  for (std::size_t i = 0; i < records.size(); ++i) {
    QCOMPARE(records[i].order, i);
    QVERIFY(records[i].seconds >= 0);
  }
  QCOMPARE(qs(records[0].phase), QStringLiteral("canonicalize"));
  QCOMPARE(qs(records[0].reason), QStringLiteral("first"));
  QCOMPARE(records[0].replaced, (IdPairs{{aId, fresh->id()}}));
  // The imported nodes got their ids before they were recorded: log first, then add.
  QCOMPARE(records[0].addedNodes, (Ids{logNode, addNode}));
  QVERIFY(logNode > aNode && addNode > logNode);
  QCOMPARE(records[0].removedNodes, Ids{aNode});

  QCOMPARE(qs(records[1].phase), QStringLiteral("specialize"));
  QCOMPARE(qs(records[1].reason), QStringLiteral("second"));
  QCOMPARE(records[1].replaced, (IdPairs{{bId, w->id()}}));
  QVERIFY(records[1].addedNodes.empty());
  // exp goes, and with it the fresh log/add subgraph that only exp needed.
  QCOMPARE(records[1].removedNodes, (Ids{bNode, addNode, logNode}));

  QCOMPARE(qs(records[2].phase), QString());
  QCOMPARE(qs(records[2].reason), QStringLiteral("third"));
  QCOMPARE(records[2].replaced, (IdPairs{{out->id(), x->id()}}));
  QCOMPARE(records[2].removedNodes, Ids{out->owner()->id()});
}

void TestRewriteRecorder::testReplaceAllIsOneRecord() {
  const VarPtr a = fv("a"), b = fv("b"), c = fv("c");
  const VarPtr na = neg(a), nb = neg(b);
  const VarPtr out = add(na, nb);
  FunctionGraph fg({a, b, c}, {out}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(recorder);
  const std::vector<std::pair<VarPtr, VarPtr>> pairs{{nb, c}, {na, b}};
  fg.replaceAll(pairs, "both");
  QCOMPARE(recorder->records().size(), std::size_t{1});
  const RewriteRecord& r = recorder->records()[0];
  QCOMPARE(qs(r.reason), QStringLiteral("both"));
  QCOMPARE(r.replaced, (IdPairs{{nb->id(), c->id()}, {na->id(), b->id()}}));  // in the order made
  QCOMPARE(r.removedNodes, (Ids{nb->owner()->id(), na->owner()->id()}));
}

void TestRewriteRecorder::testEachPairOnce() {
  const VarPtr x = fv("x"), w = fv("w");
  const VarPtr out = mul(add(x, x), x);
  FunctionGraph fg({x, w}, {out, x}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(recorder);
  fg.replace(x, w, "inputs");  // four uses, one pair
  QCOMPARE(recorder->records().size(), std::size_t{1});
  QCOMPARE(recorder->records()[0].replaced, (IdPairs{{x->id(), w->id()}}));
  QVERIFY(recorder->records()[0].removedNodes.empty());
}

void TestRewriteRecorder::testImportAndAddOutput() {
  const VarPtr x = fv("x");
  FunctionGraph fg({x}, {neg(x)}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(recorder);
  const VarPtr e = exp_(x);
  fg.importVar(e, "import");
  const VarPtr m = mul(e, log_(x));
  fg.addOutput(m, "output");
  const auto& records = recorder->records();
  QCOMPARE(records.size(), std::size_t{2});
  QCOMPARE(qs(records[0].reason), QStringLiteral("import"));
  QCOMPARE(records[0].addedNodes, Ids{e->owner()->id()});
  QVERIFY(records[0].replaced.empty() && records[0].removedNodes.empty());
  QCOMPARE(qs(records[1].reason), QStringLiteral("output"));
  QCOMPARE(records[1].addedNodes, (Ids{m->owner()->input(1)->owner()->id(), m->owner()->id()}));
}

void TestRewriteRecorder::testNoOpLeavesNoRecord() {
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph fg({x}, {exp_(y)}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(recorder);
  fg.replace(y, y, "self");
  fg.replace(neg(x), x, "not in the graph");
  fg.importVar(y, "already there");
  fg.changeInput(y->owner(), 0, x, "same input");
  const std::vector<std::pair<VarPtr, VarPtr>> none;
  fg.replaceAll(none, "nothing");
  QVERIFY(recorder->records().empty());
  // The next real change is record 0.
  fg.replace(y, x, "real");
  QCOMPARE(recorder->records().size(), std::size_t{1});
  QCOMPARE(recorder->records()[0].order, std::size_t{0});
  QCOMPARE(qs(recorder->records()[0].reason), QStringLiteral("real"));
}

void TestRewriteRecorder::testHistoryRevertIsRecorded() {
  const VarPtr x = fv("x"), w = fv("w");
  const VarPtr y = exp_(log_(x));
  const VarPtr z = add(y, x);
  FunctionGraph fg({x, w}, {z}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(history);
  fg.attachFeature(recorder);
  const auto cp = history->checkpoint();
  const std::int64_t expNode = y->owner()->id(), logNode = y->owner()->input(0)->owner()->id();
  fg.replace(y, w, "rewrite");
  recorder->setPhase("undo");
  history->revert(cp);
  const auto& records = recorder->records();
  QCOMPARE(records.size(), std::size_t{2});
  QCOMPARE(qs(records[0].reason), QStringLiteral("rewrite"));
  QCOMPARE(records[0].removedNodes, (Ids{expNode, logNode}));
  QCOMPARE(qs(records[1].reason), QStringLiteral("revert"));
  QCOMPARE(qs(records[1].phase), QStringLiteral("undo"));
  QCOMPARE(records[1].order, std::size_t{1});
  QCOMPARE(records[1].replaced, (IdPairs{{w->id(), y->id()}}));
  // The pruned nodes come back under their old ids, in topological order.
  QCOMPARE(records[1].addedNodes, (Ids{logNode, expNode}));
  QVERIFY(records[1].removedNodes.empty());
}

void TestRewriteRecorder::testValidatorRefusalIsRecorded() {
  const VarPtr x = fv("x");
  const VarPtr y = neg(x);
  FunctionGraph fg({x}, {add(y, x)}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  auto validator = std::make_shared<Validator>();
  fg.attachFeature(std::make_shared<ForbidExp>());
  fg.attachFeature(validator);
  fg.attachFeature(recorder);
  const VarPtr e = exp_(x);
  const std::vector<std::pair<VarPtr, VarPtr>> pairs{{y, e}};
  QVERIFY(!validator->replaceValidate(fg, pairs, "to_exp"));
  const auto& records = recorder->records();
  QCOMPARE(records.size(), std::size_t{2});
  QCOMPARE(qs(records[0].reason), QStringLiteral("to_exp"));
  QCOMPARE(records[0].addedNodes, Ids{e->owner()->id()});
  QCOMPARE(records[0].removedNodes, Ids{y->owner()->id()});
  QCOMPARE(qs(records[1].reason), QStringLiteral("revert"));
  QCOMPARE(records[1].addedNodes, Ids{y->owner()->id()});
  QCOMPARE(records[1].removedNodes, Ids{e->owner()->id()});
}

void TestRewriteRecorder::testClear() {
  const VarPtr x = fv("x"), w = fv("w");
  FunctionGraph fg({x, w}, {neg(x)}, FunctionGraph::Ownership::Adopt);
  auto recorder = std::make_shared<RewriteRecorder>();
  fg.attachFeature(recorder);
  fg.replace(x, w, "r");
  QCOMPARE(recorder->records().size(), std::size_t{1});
  recorder->clear();
  QVERIFY(recorder->records().empty());
  fg.replace(w, x, "again");
  QCOMPARE(recorder->records().size(), std::size_t{1});
  QCOMPARE(qs(recorder->records()[0].reason), QStringLiteral("again"));
}

TSCOPE_TEST_MAIN(TestRewriteRecorder)
#include "tst_rewrite_recorder.moc"
