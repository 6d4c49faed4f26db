// The node inspector: the fields it shows for an Apply with view and destroy maps and for a
// constant, its value view (statistics from the worker, slice table, index spin boxes), the
// slice model on its own, and saving a value as .npy.

#include "gui_test_main.h"
// The units under test and what they need:
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/io/npy.h"
#include "engine/ops/elemwise/elemwise.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/inspector/slice_table_model.h"
#include "gui/app/inspector/value_view.h"

#include <QAbstractItemModelTester>
#include <QSpinBox>
#include <QTemporaryDir>

#include <numeric>

using namespace tscope;
using engine::DType;
using engine::Tensor;

namespace {

// An op whose output views its second input and overwrites its first.
class AliasOp final : public engine::Op {
 public:
  std::string name() const override { return "TestAlias"; }
  nlohmann::json props() const override { return {{"mode", "both"}, {"axes", {0, 1}}}; }
  std::vector<engine::TensorType> outputTypes(
      std::span<const engine::VarPtr> inputs) const override {
    return {inputs[1]->type()};
  }
  engine::ViewMap viewMap() const override { return {{0, {1}}}; }
  engine::DestroyMap destroyMap() const override { return {{0, {0}}}; }
};

struct Fixture {
  std::shared_ptr<const vis::ViewModel> model;
  int aliasNode = -1, constantNode = -1;
};

Fixture makeFixture() {
  auto x = engine::Variable::create(engine::TensorType(DType::Float32, {2, 3}), "x");
  x->setTestValue(Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  auto y =
      engine::Variable::create(engine::TensorType(DType::Float32, {engine::kUnknownDim, 3}), "y");
  auto c =
      engine::Constant::create(Tensor::fromDoubles(DType::Float32, {2, 3}, {-1, 0, 1, 2, 3, 100}));
  engine::VarPtr z;
  {
    engine::NameScope scope("block");
    z = std::make_shared<AliasOp>()->makeNode({x, y})->output(0);
  }
  auto out = engine::elemwise(engine::ScalarOp::Add, {z, c});
  auto fg = std::make_shared<engine::FunctionGraph>(std::vector<engine::VarPtr>{x, y},
                                                    std::vector<engine::VarPtr>{out});
  Fixture f;
  f.model = vis::ViewModel::build(fg);
  for (const engine::Apply* a : fg->nodes())
    if (a->op().name() == "TestAlias") f.aliasNode = f.model->nodeOfApply(a->id());
  for (const engine::Variable* v : fg->variables())
    if (v->kind() == engine::Variable::Kind::Constant)
      f.constantNode = f.model->nodeOfVariable(v->id());
  return f;
}

Tensor iota(DType dtype, engine::Shape shape) {
  std::vector<double> v(static_cast<std::size_t>(engine::shapeNumel(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::fromDoubles(dtype, std::move(shape), v);
}

}  // namespace

class TestInspector : public QObject {
  Q_OBJECT

 private slots:
  void testApplyFields() {
    const Fixture f = makeFixture();
    QVERIFY(f.aliasNode >= 0);
    gui::InspectorPanel panel;
    panel.showNode(f.model, f.aliasNode);
    QVERIFY2(panel.title().contains("TestAlias"), qPrintable(panel.title()));
    QCOMPARE(panel.fieldText("op"), QString::fromStdString(AliasOp().str()));
    QCOMPARE(panel.fieldLines("relations"),
             (QStringList{"output 0 views input 1", "output 0 destroys input 0"}));
    QCOMPARE(panel.fieldText("scope"), QString("block"));
    QVERIFY2(panel.fieldText("created at").contains("tst_inspector.cpp"),
             qPrintable(panel.fieldText("created at")));
    const QStringList props = panel.fieldLines("props");
    QVERIFY2(props.contains("mode: \"both\"") && props.contains("axes: [0,1]"),
             qPrintable(props.join(" | ")));
    const QStringList inputs = panel.fieldLines("inputs");
    QCOMPARE(inputs.size(), 2);
    QVERIFY2(
        inputs[0].startsWith("0: x  fmatrix (2, 3)") && inputs[0].contains("test value (2, 3)"),
        qPrintable(inputs[0]));
    QVERIFY2(inputs[1].startsWith("1: y  fmatrix (?, 3)") && !inputs[1].contains("test value"),
             qPrintable(inputs[1]));
    QCOMPARE(panel.fieldLines("outputs").size(), 1);
    QVERIFY(panel.fieldLines("outputs")[0].contains("1 client"));
    // No output carries a value: the value view stays hidden.
    QVERIFY(panel.valueView()->values().empty());
    QVERIFY(panel.valueView()->isHidden());
    panel.showNode(f.model, -1);
    QCOMPARE(panel.node(), -1);
    QVERIFY(panel.fieldText("op").isEmpty());
  }

  void testConstantFieldsAndValue() {
    const Fixture f = makeFixture();
    QVERIFY(f.constantNode >= 0);
    gui::InspectorPanel panel;
    QSignalSpy ready(panel.valueView(), &gui::ValueView::statsReady);
    panel.showNode(f.model, f.constantNode);
    QCOMPARE(panel.fieldText("role"), QString("constant"));
    QCOMPARE(panel.fieldText("owner"), QString("none"));
    QCOMPARE(panel.fieldText("clients"), QString("1"));
    QVERIFY(panel.fieldText("type").startsWith("fmatrix"));
    gui::ValueView* view = panel.valueView();
    QCOMPARE(int(view->values().size()), 1);
    QCOMPARE(view->values()[0].label, QString("constant value"));
    QCOMPARE(view->statText("dtype"), QString("float32"));
    QCOMPARE(view->statText("shape"), QString("(2, 3)"));
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 5000);
    QCOMPARE(view->statText("min"), QString("-1"));
    QCOMPARE(view->statText("max"), QString("100"));
    QCOMPARE(view->statText("mean"), QString::number(105.0 / 6, 'g', 6));
    QCOMPARE(view->statText("nan"), QString("0"));
    QCOMPARE(view->sliceModel()->rowCount(), 2);
    QCOMPARE(view->sliceModel()->index(1, 2).data().toString(), QString("100"));
    QCOMPARE(int(view->stats()->histogram.size()), gui::kHistogramBins);
  }

  void testStaleStatsAreDropped() {
    gui::ValueView view;
    QSignalSpy ready(&view, &gui::ValueView::statsReady);
    view.setValues({{"big", iota(DType::Float64, {1000, 1000})},
                    {"small", Tensor::fromDoubles(DType::Int32, {2}, {7, 9})}});
    view.showValue(1);  // before the first worker finished
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 5000);
    QTest::qWait(100);
    QCOMPARE(ready.count(), 1);
    QCOMPARE(view.stats()->max, 9.0);
    QCOMPARE(view.statText("max"), QString("9"));
  }

  void testSliceModelRank3() {
    gui::SliceTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setTensor(iota(DType::Int64, {4, 2, 3}));  // value[i, j, k] = 6i + 3j + k
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), 3);
    QCOMPARE(model.fixedAxes(), std::vector<int>{0});
    QCOMPARE(model.index(1, 2).data().toString(), QString("5"));
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.setFixedIndex(0, 3);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(model.index(1, 2).data(Qt::UserRole).toDouble(), 23.0);
    // Rows along axis 2, columns along axis 0; axis 1 fixed at 1.
    model.setSliceAxes(2, 0);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 4);
    model.setFixedIndex(1, 1);
    QCOMPARE(model.index(2, 1).data().toString(), QString("11"));            // value[1, 1, 2]
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, model.setFixedIndex(0, 0));  // axis 0 is shown
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, model.setFixedIndex(1, 2));  // outside the axis
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, model.setSliceAxes(1, 1));
  }

  void testSliceModelLowRanks() {
    gui::SliceTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setTensor(Tensor::scalar(DType::Float64, 2.5));
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.columnCount(), 1);
    QCOMPARE(model.index(0, 0).data().toString(), QString("2.5"));
    model.setTensor(Tensor::fromDoubles(DType::Bool, {3}, {1, 0, 1}));
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.columnCount(), 3);
    QCOMPARE(model.index(0, 1).data().toString(), QString("false"));
    model.setTensor(Tensor(DType::Float32, {0}));
    QCOMPARE(model.rowCount(), 0);
    model.setTensor(Tensor::fromDoubles(DType::Float32, {1, 2}, {std::nan(""), -INFINITY}));
    QCOMPARE(model.index(0, 0).data().toString(), QString("nan"));
    QCOMPARE(model.index(0, 1).data().toString(), QString("-inf"));
    model.setTensor({});
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), 0);
  }

  void testIndexSpinBoxesDriveTheSlice() {
    gui::ValueView view;
    view.setValues({{"v", iota(DType::Float32, {4, 2, 3})}});
    auto* spin = view.findChild<QSpinBox*>("sliceIndex0");
    QVERIFY(spin);
    QCOMPARE(spin->maximum(), 3);
    spin->setValue(2);
    QCOMPARE(view.sliceModel()->fixedIndex(0), 2);
    QCOMPARE(view.sliceModel()->index(0, 0).data().toString(), QString("12"));
    view.setValues({{"w", iota(DType::Float32, {5})}});
    QVERIFY(!view.findChild<QSpinBox*>("sliceIndex0"));
  }

  void testSaveNpyRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath("value.npy");
    const Tensor t =
        Tensor::fromDoubles(DType::Float16, {2, 2}, {1, -2.5, std::nan(""), 65504}).transpose();
    gui::saveValueAsNpy(t, path);
    const Tensor back = engine::io::loadNpy(path.toStdString());
    QVERIFY(back.bitwiseEqual(t.contiguous()));
    QVERIFY_THROWS_EXCEPTION(engine::io::NpyError,
                             gui::saveValueAsNpy(t, dir.filePath("missing/dir/v.npy")));
  }
};

TSCOPE_GUI_TEST_MAIN(TestInspector)
#include "tst_inspector.moc"
