// The view model's d3viz rules: Apply fills by op family, variable boxes by role, edge kinds from
// view/destroy maps, labels (names, short types, constant values, input positions), unused
// outputs, tooltips, heat colours, lookups, and the build time of a 20,000-node graph.
#include "gui_test_main.h"
// The units under test and their helpers.
#include "engine/graph/config.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/rewrite/rewrite_db.h"
#include "view_model_test_support.h"
#include "visualizers/model/palette.h"

#include <QElapsedTimer>

using namespace tscope::engine;
using namespace tscope::vis;
using namespace tscope::vis::testing;

Q_DECLARE_METATYPE(tscope::engine::VarPtr)

namespace {
const TensorType kMatrix(DType::Float32, {2, 3});
const TensorType kVector(DType::Float32, {3});
VarPtr named(VarPtr v, const std::string& name) {
  v->setName(name);
  return v;
}
}  // namespace

class TestViewModel : public QObject {
  Q_OBJECT

 private slots:
  void testApplyFillsByFamily() {
    auto x = Variable::create(kMatrix, "x");
    auto n = Variable::create(TensorType::ofRank(DType::Float32, 2), "n");
    auto sum = named(x + x, "sum");
    auto t = named(transpose(x), "t");
    auto d = named(dot(x, t), "d");
    auto s = named(slice(x, 0, 0, 1), "s");
    auto a = named(zeros(std::vector<std::int64_t>{2, 2}, DType::Float32), "a");
    auto len = named(shapeI(n, 0), "len");
    auto model = ViewModel::build(graphOf({x, n}, {sum, d, s, a, len}));
    const struct {
      const char* output;
      QColor fill;
    } expected[] = {{"sum", QColor("#FFAABB")}, {"t", QColor("white")},   {"d", QColor("white")},
                    {"s", QColor("#FFAAFF")},   {"a", QColor("#FFAA22")}, {"len", QColor("cyan")}};
    for (const auto& e : expected) {
      const int node = applyNamed(*model, e.output);
      QVERIFY2(node >= 0, e.output);
      QCOMPARE(model->nodes()[node].fill, e.fill);
      QCOMPARE(model->nodes()[node].kind, NodeKind::Apply);
    }
  }

  void testVariableRoles() {
    auto x = Variable::create(kVector, "x");
    auto w = SharedVariable::create(Tensor::full(DType::Float32, {3}, 0.5), "w");
    auto c = Constant::create(Tensor::full(DType::Float32, {3}, 2.0), "c");
    auto parts = split(x * w + c, {2, 1});  // the second part is used by nobody
    auto y = named(parts[0] * 2.0, "y");
    auto model = ViewModel::build(graphOf({x, w}, {y}));
    QCOMPARE(model->nodes()[boxNamed(*model, "x")].role, VariableRole::Input);
    QCOMPARE(model->nodes()[boxNamed(*model, "w")].role, VariableRole::Shared);
    QCOMPARE(model->nodes()[boxNamed(*model, "c")].role, VariableRole::Constant);
    QCOMPARE(model->nodes()[boxNamed(*model, "y")].role, VariableRole::Output);
    QCOMPARE(model->nodes()[boxNamed(*model, "x")].fill, QColor("limegreen"));
    QCOMPARE(model->nodes()[boxNamed(*model, "w")].fill, QColor("yellowgreen"));
    QCOMPARE(model->nodes()[boxNamed(*model, "c")].fill, QColor("springgreen"));
    QCOMPARE(model->nodes()[boxNamed(*model, "y")].fill, QColor("dodgerblue"));
    // The unused second output of Split: one lightgrey box fed by the Split ellipse.
    std::vector<int> unused;
    for (std::size_t i = 0; i < model->nodes().size(); ++i)
      if (model->nodes()[i].kind == NodeKind::Variable &&
          model->nodes()[i].role == VariableRole::UnusedOutput)
        unused.push_back(static_cast<int>(i));
    QCOMPARE(unused.size(), std::size_t(1));
    const ViewNode& box = model->nodes()[unused[0]];
    QCOMPARE(box.fill, QColor("lightgrey"));
    QCOMPARE(box.variable->index(), 1);
    QCOMPARE(model->inEdges(unused[0]).size(), std::size_t(1));
    const ViewEdge& feed = model->edges()[model->inEdges(unused[0])[0]];
    QCOMPARE(model->nodes()[feed.from].apply, box.variable->owner());
    QCOMPARE(feed.inputIndex, -1);
    QCOMPARE(feed.label, QString("1 fvector"));  // output 1 of a two-output node
    // Intermediate values are edges, not boxes: 2.0 is a constant box, x*w has none.
    int boxes = 0;
    for (const ViewNode& node : model->nodes()) boxes += node.kind == NodeKind::Variable;
    QCOMPARE(boxes, 7);  // x, w, c, Split's sizes, 2.0, y, the unused part
    int sizes = -1;
    for (std::size_t i = 0; i < model->nodes().size(); ++i)
      if (model->nodes()[i].label == "[2 1]") sizes = static_cast<int>(i);
    QVERIFY(sizes >= 0);
    QCOMPARE(model->nodes()[sizes].role, VariableRole::Constant);
  }

  void testEdgeKinds() {
    auto x = Variable::create(kMatrix, "x");
    auto y = Variable::create(kMatrix, "y");
    auto t = named(transpose(x), "t");
    auto inplace = std::make_shared<Elemwise>(ScalarOp::Add, std::map<int, int>{{0, 0}});
    auto z = named((*inplace)({x * 1.0, y}), "z");
    // View wins over destroy when an op declares both for the same input.
    auto both = std::make_shared<MapsOp>(ViewMap{{0, {0}}}, DestroyMap{{0, {0}}});
    auto b = named((*both)({y * 3.0}), "b");
    auto model = ViewModel::build(graphOf({x, y}, {t, z, b}));

    const int xBox = boxNamed(*model, "x"), yBox = boxNamed(*model, "y");
    const auto toT = edgesBetween(*model, xBox, applyNamed(*model, "t"));
    QCOMPARE(toT.size(), std::size_t(1));
    QCOMPARE(model->edges()[toT[0]].kind, EdgeKind::View);
    QCOMPARE(palette::edgeColor(model->edges()[toT[0]].kind), QColor("dodgerblue"));

    const int zNode = applyNamed(*model, "z");
    const int scaled = model->edges()[model->inEdges(zNode)[0]].from;  // x * 1.0
    QCOMPARE(model->edges()[model->inEdges(zNode)[0]].kind, EdgeKind::Destroy);
    QCOMPARE(model->edges()[model->inEdges(zNode)[0]].inputIndex, 0);
    QCOMPARE(model->nodes()[scaled].apply->op().str(), std::string("Elemwise{mul}"));
    const auto yToZ = edgesBetween(*model, yBox, zNode);
    QCOMPARE(yToZ.size(), std::size_t(1));
    QCOMPARE(model->edges()[yToZ[0]].kind, EdgeKind::Plain);
    QCOMPARE(palette::edgeColor(EdgeKind::Destroy), QColor("red"));

    const int bNode = applyNamed(*model, "b");
    QCOMPARE(model->edges()[model->inEdges(bNode)[0]].kind, EdgeKind::View);
    // Apply -> output box edges are plain.
    QCOMPARE(model->edges()[model->inEdges(boxNamed(*model, "t"))[0]].kind, EdgeKind::Plain);
  }

  void testInplaceAfterFastRun() {
    auto x = Variable::create(TensorType(DType::Float64, {4, 4}), "x");
    auto y = Variable::create(TensorType(DType::Float64, {4, 4}), "y");
    auto out = named(exp(dot(x, y)) * 2.0 + x, "out");
    auto fg = std::make_shared<FunctionGraph>(std::vector<VarPtr>{x, y}, std::vector<VarPtr>{out});
    optimize(*fg, RewriteQuery::forMode("fast_run"));
    auto model = ViewModel::build(fg);
    int destroyed = 0;
    for (const ViewEdge& edge : model->edges()) {
      if (edge.kind != EdgeKind::Destroy) continue;
      ++destroyed;
      const ViewNode& consumer = model->nodes()[edge.to];
      QVERIFY(!consumer.apply->op().destroyMap().empty());
    }
    QVERIFY2(destroyed > 0, "fast_run makes at least one inplace node here");
  }

  void testEdgeLabels() {
    auto x = Variable::create(kMatrix, "x");
    auto v = Variable::create(kVector, "v");
    auto t = named(transpose(x), "t");
    auto s = named(x + v, "s");
    auto model = ViewModel::build(graphOf({x, v}, {t, s}));
    const int xBox = boxNamed(*model, "x");
    QCOMPARE(model->edges()[edgesBetween(*model, xBox, applyNamed(*model, "t"))[0]].label,
             QString("fmatrix"));
    QCOMPARE(model->edges()[edgesBetween(*model, xBox, applyNamed(*model, "s"))[0]].label,
             QString("0 fmatrix"));
    QCOMPARE(model->edges()[edgesBetween(*model, boxNamed(*model, "v"), applyNamed(*model, "s"))[0]]
                 .label,
             QString("1 fvector"));
    // One edge per consumer input: x used twice by one node gives two edges.
    auto twice = named(x * x, "twice");
    auto model2 = ViewModel::build(graphOf({x}, {twice}));
    const auto pair = edgesBetween(*model2, boxNamed(*model2, "x"), applyNamed(*model2, "twice"));
    QCOMPARE(pair.size(), std::size_t(2));
    QCOMPARE(model2->edges()[pair[0]].inputIndex, 0);
    QCOMPARE(model2->edges()[pair[1]].inputIndex, 1);
  }

  void testApplyLabels() {
    auto x = Variable::create(kMatrix, "x");
    auto h = named(tanh(x), "h");
    auto anon = exp(h);
    auto longOp = std::make_shared<OpaqueOp>(
        "AVeryLongCustomOperationName", nlohmann::json{{"parameter", "with a long value"}}, "test");
    auto opaque = Apply::create(longOp, {anon}, {kMatrix});
    auto model = ViewModel::build(graphOf({x}, {opaque->output(0)}));
    QCOMPARE(model->nodes()[applyNamed(*model, "h")].label, QString("Elemwise{tanh}\nh"));
    const int expNode =
        model->nodeOfApply(model->graph().outputs()[0]->owner()->input(0)->owner()->id());
    QCOMPARE(model->nodes()[expNode].label, QString("Elemwise{exp}"));
    const QString elided =
        model->nodes()[model->nodeOfApply(model->graph().outputs()[0]->owner()->id())].label;
    QCOMPARE(elided.size(), 40);
    QVERIFY(elided.endsWith(QChar(0x2026)));
    QVERIFY(elided.startsWith("AVeryLongCustomOperationName{"));
  }

  void testVariableLabels_data() {
    QTest::addColumn<QString>("expected");
    QTest::addColumn<VarPtr>("variable");
    QTest::newRow("named") << "weights"
                           << VarPtr(
                                  Constant::create(Tensor::scalar(DType::Float32, 1), "weights"));
    QTest::newRow("scalar, 3 digits")
        << "3.14" << VarPtr(Constant::create(Tensor::scalar(DType::Float64, 3.14159)));
    QTest::newRow("small integer")
        << "2" << VarPtr(Constant::create(Tensor::scalar(DType::Int64, 2)));
    QTest::newRow("small vector") << "[1 2.5 3]"
                                  << VarPtr(Constant::create(
                                         Tensor::fromDoubles(DType::Float32, {3}, {1, 2.5, 3})));
    QTest::newRow("tensor") << QString("[…] 2×3")
                            << VarPtr(Constant::create(Tensor::full(DType::Float32, {2, 3}, 1)));
    QTest::newRow("unnamed input: short type") << "fmatrix" << Variable::create(kMatrix);
    QTest::newRow("unnamed dvector")
        << "dvector" << Variable::create(TensorType(DType::Float64, {-1}));
    QTest::newRow("unnamed iscalar") << "iscalar" << Variable::create(TensorType(DType::Int32, {}));
  }
  void testVariableLabels() {
    QFETCH(QString, expected);
    QFETCH(VarPtr, variable);
    // The variable is returned as it is: a graph output that is a free variable is one box.
    const bool isInput = variable->kind() == Variable::Kind::Regular;
    auto model = ViewModel::build(
        graphOf(isInput ? std::vector<VarPtr>{variable} : std::vector<VarPtr>{}, {variable}));
    QCOMPARE(model->nodes().size(), std::size_t(1));
    QCOMPARE(model->nodes()[0].label, expected);
  }

  void testOutputThatIsAnInput() {
    // An input returned as an output stays one box with the input's role (d3viz draws output
    // boxes only for computed values); its tooltip says it is returned.
    auto x = Variable::create(kVector, "x");
    auto y = named(exp(x), "y");
    auto model = ViewModel::build(graphOf({x}, {x, y, y}));
    const int xBox = boxNamed(*model, "x");
    QCOMPARE(model->nodes()[xBox].role, VariableRole::Input);
    QVERIFY(model->nodes()[xBox].tooltip.contains("graph output"));
    int yBoxes = 0;
    for (const ViewNode& node : model->nodes())
      yBoxes += node.kind == NodeKind::Variable && node.variable->name() == "y";
    QCOMPARE(yBoxes, 1);  // listed twice, drawn once
    QCOMPARE(model->nodes().size(), std::size_t(3));
  }

  void testUpdatesAreOutputs() {
    auto x = Variable::create(kVector, "x");
    auto w = SharedVariable::create(Tensor::full(DType::Float32, {3}, 1), "w");
    auto loss = named(x * w, "loss");
    auto wNew = named(w - 0.1 * loss, "w_new");
    auto fg =
        std::make_shared<FunctionGraph>(std::vector<VarPtr>{x, w}, std::vector<VarPtr>{loss, wNew});
    fg->setUpdate(1, 1);
    auto model = ViewModel::build(fg);
    QCOMPARE(model->nodes()[boxNamed(*model, "w_new")].role, VariableRole::Output);
    QCOMPARE(model->nodes()[boxNamed(*model, "loss")].role, VariableRole::Output);
  }

  void testTooltips() {
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
    x->setTestValue(Tensor::full(DType::Float32, {2, 3}, 1));
    VarPtr h;
    {
      NameScope scope("dense1");
      h = named(tanh(x), "h");
    }
    auto model = ViewModel::build(graphOf({x}, {h}));
    const QString box = model->nodes()[boxNamed(*model, "x")].tooltip;
    QVERIFY2(box.contains("TensorType(float32, (?, 3))"), qPrintable(box));
    QVERIFY2(box.contains("test value float32 (2, 3)"), qPrintable(box));
    QVERIFY2(box.contains("created at tst_view_model.cpp:"), qPrintable(box));
    QVERIFY2(box.contains("graph input"), qPrintable(box));
    const QString apply = model->nodes()[applyNamed(*model, "h")].tooltip;
    QVERIFY2(apply.contains("Elemwise{tanh}"), qPrintable(apply));
    QVERIFY2(apply.contains("scope dense1"), qPrintable(apply));
    QVERIFY2(apply.contains("props {\"scalar_op\":\"tanh\"}"), qPrintable(apply));
    QVERIFY2(apply.contains("created at tst_view_model.cpp:"), qPrintable(apply));
  }

  void testHeat() {
    auto x = Variable::create(kVector, "x");
    auto a = named(exp(x), "a");
    auto b = named(tanh(a), "b");
    auto fg = std::make_shared<FunctionGraph>(std::vector<VarPtr>{x}, std::vector<VarPtr>{b});
    const std::int64_t aId = fg->outputs()[0]->owner()->input(0)->owner()->id();
    const std::int64_t bId = fg->outputs()[0]->owner()->id();
    std::map<std::int64_t, HeatEntry> heat{{aId, {0.001, 0.2}}, {bId, {0.004, 0.8}}};
    auto plain = ViewModel::build(fg, heat, false);
    QCOMPARE(plain->nodes()[plain->nodeOfApply(bId)].fill, QColor("#FFAABB"));
    QVERIFY(plain->nodes()[plain->nodeOfApply(bId)].tooltip.contains("Time: 4.000 ms / 80.0 %"));
    auto hot = ViewModel::build(fg, heat, true);
    QCOMPARE(hot->nodes()[hot->nodeOfApply(bId)].fill, QColor("#a50f15"));  // the slowest: darkest
    QCOMPARE(hot->nodes()[hot->nodeOfApply(aId)].fill, palette::heatColor(0.25));
    QCOMPARE(hot->heat().size(), std::size_t(2));
  }

  void testLookups() {
    auto x = Variable::create(kVector, "x");
    auto a = named(exp(x), "a");
    auto b = named(a + x, "b");
    auto model = ViewModel::build(graphOf({x}, {b}));
    const FunctionGraph& fg = model->graph();
    const Variable& xIn = *fg.inputs()[0];
    const Variable& aVar = *fg.outputs()[0]->owner()->input(0);
    QCOMPARE(model->nodeOfVariable(xIn.id()), boxNamed(*model, "x"));
    QCOMPARE(model->nodeOfVariable(aVar.id()), -1);  // an intermediate value has no box
    QCOMPARE(model->nodeShowing(aVar.id()), applyNamed(*model, "a"));
    QCOMPARE(model->nodeShowing(fg.outputs()[0]->id()), boxNamed(*model, "b"));
    QCOMPARE(model->nodeShowing(123456), -1);
    QCOMPARE(model->nodeOfApply(aVar.owner()->id()), applyNamed(*model, "a"));
    QCOMPARE(model->nodeOfApply(-5), -1);
    // inEdges/outEdges partition edges().
    std::size_t in = 0, out = 0;
    for (std::size_t n = 0; n < model->nodes().size(); ++n) {
      for (int e : model->inEdges(static_cast<int>(n)))
        QCOMPARE(model->edges()[e].to, static_cast<int>(n));
      for (int e : model->outEdges(static_cast<int>(n)))
        QCOMPARE(model->edges()[e].from, static_cast<int>(n));
      in += model->inEdges(static_cast<int>(n)).size();
      out += model->outEdges(static_cast<int>(n)).size();
    }
    QCOMPARE(in, model->edges().size());
    QCOMPARE(out, model->edges().size());
    QCOMPARE(model->edges().size(), std::size_t(4));  // x->a, a->b, x->b, b->box
  }

  void testLargeBuild() {
    // 20,000 Apply nodes in 100 scopes of 200, chained: the build is one walk.
    constexpr int kScopes = 100, kPerScope = 200;
    auto x = Variable::create(kVector, "x");
    VarPtr h = x;
    for (int s = 0; s < kScopes; ++s) {
      NameScope block("block" + std::to_string(s));
      NameScope inner(s % 2 ? "odd" : "even");
      for (int i = 0; i < kPerScope; ++i) h = i % 2 ? exp(h) : h * x;
    }
    auto fg = graphOf({x}, {h});
    QElapsedTimer timer;
    timer.start();
    auto model = ViewModel::build(fg);
    const qint64 ms = timer.elapsed();
    qInfo("ViewModel::build of %d applies: %lld ms", kScopes * kPerScope,
          static_cast<long long>(ms));
    QCOMPARE(model->nodes().size(), std::size_t(kScopes * kPerScope + 2));
    QCOMPARE(model->groups().size(), std::size_t(1 + 2 * kScopes));
    QVERIFY2(ms < 2000, qPrintable(QStringLiteral("%1 ms").arg(ms)));
    timer.restart();
    for (int s = 0; s < kScopes; ++s)
      model->levelGraph(model->groupByPath(QStringLiteral("block%1").arg(s)), {});
    qInfo("levelGraph of %d groups: %lld ms", kScopes, static_cast<long long>(timer.elapsed()));
  }
};

TSCOPE_GUI_TEST_MAIN(TestViewModel)
#include "tst_view_model.moc"
