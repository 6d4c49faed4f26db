// Note [Walk marks]: walks over free graphs remember what they saw in the objects' own marks when
// they own them, else in hash maps; either way they give the same results. Nested walks, walks
// after walks (stale marks) and walks on several threads at once over one graph.
#include "engine/graph/function_graph.h"
#include "engine/graph/traversal.h"
#include "engine/graph/walk_memo.h"
#include "engine/ops/elemwise/elemwise.h"
#include "test_main.h"

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace tscope::engine;

namespace {

// A DAG of n elementwise nodes over three inputs, with skip connections and a shared constant.
struct Dag {
  std::vector<VarPtr> inputs;
  std::vector<VarPtr> outputs;
};

Dag makeDag(int n) {
  Dag d;
  for (const char* name : {"x", "y", "z"})
    d.inputs.push_back(Variable::create(TensorType(DType::Float32, {kUnknownDim}), name));
  std::vector<VarPtr> values = d.inputs;
  auto half = Constant::create(Tensor::scalar(DType::Float32, 0.5));
  std::mt19937 rng(7);
  for (int i = 0; i < n; ++i) {
    const VarPtr& recent =
        values[values.size() - 1 - rng() % std::min<std::size_t>(values.size(), 3)];
    const VarPtr& far =
        values[values.size() - 1 - rng() % std::min<std::size_t>(values.size(), 40)];
    if (i % 7 == 0)
      values.push_back(elemwise(ScalarOp::Mul, {recent, half}));
    else if (i % 3 == 0)
      values.push_back(elemwise(ScalarOp::Tanh, {recent}));
    else
      values.push_back(elemwise(ScalarOp::Add, {recent, far}));
  }
  d.outputs = {values.back(), values[values.size() / 2]};
  return d;
}

// The clone's structure: per node in order, its op and where each input comes from (a node
// position and output, or a free variable's name), so two clones compare without addresses.
QStringList structure(const FunctionGraph& fg) {
  QStringList out;
  std::vector<Apply*> order = fg.toposort();
  std::unordered_map<const Apply*, int> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  for (const Apply* node : order) {
    QString line = QString::fromStdString(node->op().str()) + "(";
    for (const auto& in : node->inputs())
      line += in->owner() ? QString("n%1.%2,").arg(position.at(in->owner())).arg(in->index())
                          : QString::fromStdString(in->displayName()) + ",";
    out << line + ")";
  }
  return out;
}

}  // namespace

class TestWalkMarks : public QObject {
  Q_OBJECT

 private slots:
  void oneWalkOwnsTheMarks() {
    WalkMemo outer;
    QVERIFY(outer.usesMarks());
    {
      WalkMemo inner;  // nested: the marks are taken, so it keeps its own maps
      QVERIFY(!inner.usesMarks());
    }
    WalkMemo second;
    QVERIFY(!second.usesMarks());
  }

  void memoRecordsValuesEitherWay() {
    auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
    VarPtr y = elemwise(ScalarOp::Exp, {x});
    WalkMemo marks;
    WalkMemo maps;
    for (WalkMemo* memo : {&marks, &maps}) {
      QVERIFY(memo->find(*y->owner()) == nullptr);
      QVERIFY(memo->claim(*y->owner(), 5));
      QVERIFY(!memo->claim(*y->owner(), 6));  // seen: the first value stays
      QCOMPARE(*memo->find(*y->owner()), 5u);
      QVERIFY(memo->claim(*x, 9));
      QCOMPARE(*memo->find(*x), 9u);
    }
    QVERIFY(marks.usesMarks());
    QVERIFY(!maps.usesMarks());
  }

  // Marks left by earlier walks carry old epochs and count for nothing.
  void laterWalksIgnoreOldMarks() {
    auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
    VarPtr y = elemwise(ScalarOp::Exp, {x});
    {
      WalkMemo first;
      QVERIFY(first.claim(*y->owner(), 1));
    }
    WalkMemo second;
    QVERIFY(second.usesMarks());
    QVERIFY(second.find(*y->owner()) == nullptr);
    QVERIFY(second.claim(*y->owner(), 2));
    QCOMPARE(*second.find(*y->owner()), 2u);
  }

  // The same clone with the marks and, while a walk holds them, with the hash maps.
  void cloneIsTheSameWithoutTheMarks() {
    Dag d = makeDag(500);
    FunctionGraph withMarks(d.inputs, d.outputs, FunctionGraph::Ownership::Clone);
    const QStringList expected = structure(withMarks);
    const std::vector<Apply*> ancestors = ancestorNodes(d.outputs);
    const std::vector<VarPtr> free = graphInputs(d.outputs);
    QCOMPARE(static_cast<std::size_t>(expected.size()), ancestors.size());
    QVERIFY(expected.size() > 300);  // most of the 500 nodes feed an output
    QVERIFY(!free.empty());
    WalkMemo holder;  // takes the marks: the next walks fall back
    QVERIFY(holder.usesMarks());
    FunctionGraph withMaps(d.inputs, d.outputs, FunctionGraph::Ownership::Clone);
    QCOMPARE(structure(withMaps), expected);
    QVERIFY(graphInputs(d.outputs) == free);
    QVERIFY(ancestorNodes(d.outputs) == ancestors);
  }

  // The shared constant is copied once, and so is every input, with marks or maps.
  void freeVariablesCopiedOnce() {
    Dag d = makeDag(200);
    FunctionGraph fg(d.inputs, d.outputs, FunctionGraph::Ownership::Clone);
    std::set<const Variable*> constants;
    for (const Apply* node : fg.nodes())
      for (const auto& in : node->inputs())
        if (in->kind() == Variable::Kind::Constant) constants.insert(in.get());
    QCOMPARE(constants.size(), std::size_t{1});
    for (const auto& in : fg.inputs()) QCOMPARE(in->fgraph(), &fg);
  }

  // Note [Fresh ids in the walk]: a clone of a graph without ids gets the ids that adopting the
  // same graph gives (init's import order), node for node and variable for variable.
  void cloneGivesTheIdsOfImportOrder() {
    Dag d = makeDag(300);
    FunctionGraph cloned(d.inputs, d.outputs, FunctionGraph::Ownership::Clone);
    FunctionGraph adopted(d.inputs, d.outputs,
                          FunctionGraph::Ownership::Adopt);  // ids given at the end of init
    const std::vector<Apply*> a = cloned.toposort(), b = adopted.toposort();
    QCOMPARE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      QCOMPARE(a[i]->id(), b[i]->id());
      for (int k = 0; k < a[i]->nInputs(); ++k)
        QCOMPARE(a[i]->input(k)->id(), b[i]->input(k)->id());
      QCOMPARE(a[i]->outputRef(0).id(), b[i]->outputRef(0).id());
    }
    for (std::size_t i = 0; i < d.inputs.size(); ++i)
      QCOMPARE(cloned.inputs()[i]->id(), adopted.inputs()[i]->id());
    QCOMPARE(cloned.nextId(), adopted.nextId());
    cloned.checkIntegrity();
  }

  // One object with an id among fresh ones: the fresh ids given before it are taken back, and the
  // preset id is kept.
  void presetIdKeptAmongFreshObjects() {
    auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
    VarPtr y = elemwise(ScalarOp::Exp, {x});
    VarPtr z = elemwise(ScalarOp::Tanh, {y});
    z->owner()->presetId(0);  // the id the walk would have given x
    FunctionGraph fg({x}, {z}, FunctionGraph::Ownership::Clone);
    QCOMPARE(fg.outputs()[0]->owner()->id(), 0);
    std::set<std::int64_t> ids{fg.inputs()[0]->id(), fg.outputs()[0]->id(),
                               fg.outputs()[0]->owner()->id()};
    for (const Apply* node : fg.nodes()) {
      ids.insert(node->id());
      ids.insert(node->outputRef(0).id());
    }
    QCOMPARE(ids.size(), std::size_t{5});  // x, exp, its output, tanh, its output: all different
    fg.checkIntegrity();
  }

  // Four threads clone one graph at once: whichever owns the marks, every clone is right.
  void concurrentClonesOfOneGraph() {
    Dag d = makeDag(2000);
    const QStringList expected =
        structure(FunctionGraph(d.inputs, d.outputs, FunctionGraph::Ownership::Clone));
    const auto nodes = static_cast<std::size_t>(expected.size());
    const std::size_t free = graphInputs(d.outputs).size();
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int k = 0; k < 20; ++k) {
          FunctionGraph fg(d.inputs, d.outputs, FunctionGraph::Ownership::Clone);
          if (fg.nodeCount() != nodes || graphInputs(d.outputs).size() != free) ++wrong;
          if (k % 5 == 0 && structure(fg) != expected) ++wrong;
        }
      });
    for (auto& t : threads) t.join();
    QCOMPARE(wrong.load(), 0);
  }
};

TSCOPE_TEST_MAIN(TestWalkMarks)
#include "tst_walk_marks.moc"
