// Counterparts: unchanged nodes keep their id, replaced variables follow the log's chains both
// ways, a removed Apply maps through its outputs, a cyclic log terminates, and on a real optimized
// graph every mapping lands on a node of the other graph. counterpartNode maps ViewModel nodes.
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/io/tsg.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/session/optimize_graph.h"
#include "gui/app/counterparts.h"
#include "gui_test_main.h"
#include "visualizers/model/view_model.h"

#include <memory>

using namespace tscope;
using namespace tscope::engine;
using tscope::gui::Counterparts;

namespace {

const TensorType kVec(DType::Float32, {3});

VarPtr var(const std::string& name) {
  return Variable::create(kVec, name);
}

// left:  z = exp(log(x)) + x       right: the same after replace(exp(log(x)) -> x)
struct ExpLog {
  std::shared_ptr<FunctionGraph> left, right;
  std::vector<RewriteRecord> records;
  std::int64_t x, lx, y, z, logApply, expApply, addApply;
};

ExpLog makeExpLog() {
  ExpLog g;
  const VarPtr x = var("x");
  const VarPtr lx = elemwise(ScalarOp::Log, {x});
  const VarPtr y = elemwise(ScalarOp::Exp, {lx});
  const VarPtr z = elemwise(ScalarOp::Add, {y, x});
  g.left = std::make_shared<FunctionGraph>(std::vector<VarPtr>{x}, std::vector<VarPtr>{z},
                                           FunctionGraph::Ownership::Adopt);
  g.x = x->id(), g.lx = lx->id(), g.y = y->id(), g.z = z->id();
  g.logApply = lx->owner()->id(), g.expApply = y->owner()->id(), g.addApply = z->owner()->id();
  CloneMap map;
  g.right = std::shared_ptr<FunctionGraph>(g.left->clone(&map));
  auto recorder = std::make_shared<RewriteRecorder>();
  g.right->attachFeature(recorder);
  g.right->replace(map[y.get()], map[x.get()], "exp_log");
  g.records = recorder->records();
  return g;
}

}  // namespace

class TestCounterparts : public QObject {
  Q_OBJECT

 private slots:
  void testUnchangedKeepIds();
  void testReplacedVariableMapsForwardAndBack();
  void testRemovedApplyMapsThroughOutputs();
  void testChainedReplacements();
  void testCyclicLogTerminates();
  void testOptimizedDocument();
  void testViewModelNodes();
};

void TestCounterparts::testUnchangedKeepIds() {
  const ExpLog g = makeExpLog();
  const Counterparts c(*g.left, *g.right, g.records);
  QCOMPARE(c.rightOf(g.x), g.x);
  QCOMPARE(c.leftOf(g.x), g.x);
  QCOMPARE(c.rightOf(g.addApply), g.addApply);
  QCOMPARE(c.leftOf(g.addApply), g.addApply);
  QCOMPARE(c.rightOf(g.z), g.z);
  QCOMPARE(c.rightOf(123456), std::int64_t{-1});
  QCOMPARE(c.leftOf(123456), std::int64_t{-1});
}

void TestCounterparts::testReplacedVariableMapsForwardAndBack() {
  const ExpLog g = makeExpLog();
  QCOMPARE(g.records.size(), std::size_t{1});
  QVERIFY(!g.right->variableById(g.y));
  const Counterparts c(*g.left, *g.right, g.records);
  QCOMPARE(c.rightOf(g.y), g.x);
  // log(x) was removed without a replacement: nothing stands for it.
  QCOMPARE(c.rightOf(g.lx), std::int64_t{-1});
  // Without the log, nothing is known about y.
  const Counterparts none(*g.left, *g.right, {});
  QCOMPARE(none.rightOf(g.y), std::int64_t{-1});
}

void TestCounterparts::testRemovedApplyMapsThroughOutputs() {
  const ExpLog g = makeExpLog();
  const Counterparts c(*g.left, *g.right, g.records);
  QVERIFY(!g.right->nodeById(g.expApply));
  // exp's output became the input x, which has no owner: the variable stands for the Apply.
  QCOMPARE(c.rightOf(g.expApply), g.x);
  QCOMPARE(c.rightOf(g.logApply), std::int64_t{-1});
}

void TestCounterparts::testChainedReplacements() {
  // left: out = exp(neg(x)) * w; right: exp(neg(x)) -> c1 = neg(w), then c1 -> c2 = w * w.
  const VarPtr x = var("x"), w = var("w");
  const VarPtr b = elemwise(ScalarOp::Exp, {elemwise(ScalarOp::Neg, {x})});
  const VarPtr out = elemwise(ScalarOp::Mul, {b, w});
  FunctionGraph left({x, w}, {out}, FunctionGraph::Ownership::Adopt);
  CloneMap map;
  std::unique_ptr<FunctionGraph> right = left.clone(&map);
  auto recorder = std::make_shared<RewriteRecorder>();
  right->attachFeature(recorder);
  const VarPtr rw = map[w.get()];
  const VarPtr c1 = elemwise(ScalarOp::Neg, {rw});
  right->replace(map[b.get()], c1, "first");
  const VarPtr c2 = elemwise(ScalarOp::Mul, {rw, rw});
  right->replace(c1, c2, "second");
  QCOMPARE(recorder->records().size(), std::size_t{2});

  const Counterparts c(left, *right, recorder->records());
  QCOMPARE(c.rightOf(b->id()), c2->id());
  QCOMPARE(c.rightOf(b->owner()->id()), c2->owner()->id());  // the Apply that now computes it
  QCOMPARE(c.leftOf(c2->id()), b->id());                     // through c1, which left lacks
  QCOMPARE(c.leftOf(c2->owner()->id()), b->owner()->id());
  QCOMPARE(c.rightOf(out->owner()->id()), out->owner()->id());
}

void TestCounterparts::testCyclicLogTerminates() {
  const ExpLog g = makeExpLog();
  RewriteRecord bad;
  bad.replaced = {{g.y, 900001}, {900001, g.y}};
  const std::vector<RewriteRecord> records{bad};
  const Counterparts c(*g.left, *g.right, records);
  QCOMPARE(c.rightOf(g.y), std::int64_t{-1});  // neither id is in the right graph
  QCOMPARE(c.leftOf(900001), std::int64_t{-1});
}

void TestCounterparts::testOptimizedDocument() {
  io::TsgDocument doc = io::loadTsg(TSCOPE_SOURCE_DIR "/examples/graphs/logistic_regression.tsg");
  session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
  QVERIFY(doc.optimized);
  QVERIFY(!doc.rewrites.empty());
  const FunctionGraph& left = *doc.original;
  const FunctionGraph& right = *doc.optimized;
  const Counterparts c(left, right, doc.rewrites);
  int replacedMapped = 0;
  for (const RewriteRecord& record : doc.rewrites) {
    for (const auto& [oldId, newId] : record.replaced) {
      if (!left.variableById(oldId)) continue;  // an intermediate of the rewriting
      const std::int64_t mapped = c.rightOf(oldId);
      if (mapped < 0) continue;
      QVERIFY2(right.variableById(mapped),
               qPrintable(QStringLiteral("%1 -> %2").arg(oldId).arg(mapped)));
      ++replacedMapped;
    }
  }
  QVERIFY(replacedMapped > 0);
  for (const Apply* node : right.nodes()) {
    const std::int64_t back = c.leftOf(node->id());
    if (left.nodeById(node->id())) QCOMPARE(back, node->id());
    if (back >= 0) QVERIFY(left.nodeById(back) || left.variableById(back));
  }
  for (const Apply* node : left.nodes()) {
    const std::int64_t mapped = c.rightOf(node->id());
    if (right.nodeById(node->id())) QCOMPARE(mapped, node->id());
    if (mapped >= 0) QVERIFY(right.nodeById(mapped) || right.variableById(mapped));
  }
  // Every output of the original graph has a counterpart.
  for (const VarPtr& output : left.outputs()) QVERIFY(c.rightOf(output->id()) >= 0);
}

void TestCounterparts::testViewModelNodes() {
  const ExpLog g = makeExpLog();
  const auto leftModel = vis::ViewModel::build(g.left);
  const auto rightModel = vis::ViewModel::build(g.right);
  const Counterparts c(*g.left, *g.right, g.records);

  const int expNode = leftModel->nodeOfApply(g.expApply);
  QVERIFY(expNode >= 0);
  const int mapped = gui::counterpartNode(*leftModel, expNode, *rightModel, c, true);
  QVERIFY(mapped >= 0);
  QCOMPARE(rightModel->nodes()[static_cast<std::size_t>(mapped)].kind, vis::NodeKind::Variable);
  QCOMPARE(rightModel->nodes()[static_cast<std::size_t>(mapped)].graphId, g.x);

  const int addLeft = leftModel->nodeOfApply(g.addApply);
  const int addRight = rightModel->nodeOfApply(g.addApply);
  QCOMPARE(gui::counterpartNode(*leftModel, addLeft, *rightModel, c, true), addRight);
  QCOMPARE(gui::counterpartNode(*rightModel, addRight, *leftModel, c, false), addLeft);
  QCOMPARE(
      gui::counterpartNode(*leftModel, leftModel->nodeOfApply(g.logApply), *rightModel, c, true),
      -1);
  QCOMPARE(gui::counterpartNode(*leftModel, -1, *rightModel, c, true), -1);
  QCOMPARE(gui::counterpartNode(*leftModel, 1 << 20, *rightModel, c, true), -1);
}

TSCOPE_GUI_TEST_MAIN(TestCounterparts)
#include "tst_counterparts.moc"
