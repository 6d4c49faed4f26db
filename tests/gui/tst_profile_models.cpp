// The profiler's table models (gui/app/profile/profile_models.h, output_table_model.h) on a
// hand-built profile, each under QAbstractItemModelTester: the report's columns and names, the
// values, sorting by value through the proxy, filtering on any column (the scope tree keeps the
// parents of a match), the rows of a node, resetting to another view and to none.
#include "gui/app/profile/output_table_model.h"
#include "gui/app/profile/profile_models.h"
#include "gui_test_main.h"
#include "profile_test_support.h"
#include "visualizers/scene_test_support.h"

#include <QAbstractItemModelTester>

using namespace tscope;
using namespace tscope::gui;
using namespace tscope::gui::testing;

namespace {

QStringList headers(const QAbstractItemModel& m) {
  QStringList h;
  for (int c = 0; c < m.columnCount(); ++c) h << m.headerData(c, Qt::Horizontal).toString();
  return h;
}

}  // namespace

class TestProfileModels : public QObject {
  Q_OBJECT

  std::shared_ptr<const engine::FunctionGraph> m_graph;
  std::shared_ptr<const ProfileView> m_view, m_other;
  std::int64_t m_exp = -1, m_add = -1, m_sinY = -1;

  int profileNode(std::int64_t id) const { return int(m_view->profile->find({}, id)); }

 private slots:
  void initTestCase() {
    m_graph = vis::testing::edgeKindsGraph();
    auto model = vis::ViewModel::build(m_graph);
    m_exp = applyByOp(*m_graph, "exp")->id();
    m_add = applyByOp(*m_graph, "add", "block/inner")->id();
    m_sinY = applyByOp(*m_graph, "sin", "block")->id();
    const std::int64_t sinX = applyByOp(*m_graph, "sin")->id();
    const std::int64_t transpose = applyByOp(*m_graph, "DimShuffle")->id();
    m_view = ProfileView::make(snapshotOf(
        m_graph,
        handProfile(*m_graph,
                    {{m_exp, 4e-3}, {m_add, 2e-3}, {m_sinY, 1e-3}, {transpose, 5e-4}, {sinX, 5e-4}},
                    2, {{m_add, 4096}}),
        model));
    m_other =
        ProfileView::make(snapshotOf(m_graph, handProfile(*m_graph, {{m_exp, 1e-3}}, 3), model));
  }

  void applyTable() {
    ApplyTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    model.setView(m_view);
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(headers(model),
             QStringList({"% time", "self time", "total", "per call", "p95", "#call", "GFLOP/s",
                          "GB/s", "flop/B", "% roof", "node", "op (scope) [input shapes]"}));
    // Sorted as the report sorts: the slowest first.
    QCOMPARE(model.index(0, ApplyTableModel::Share).data().toString(), QStringLiteral("50.0%"));
    QCOMPARE(model.index(0, ApplyTableModel::Self).data().toString(), QStringLiteral("4 ms"));
    QCOMPARE(model.index(0, ApplyTableModel::Calls).data().toLongLong(), 2);
    QCOMPARE(model.index(0, ApplyTableModel::Node).data().toString(), QString::number(m_exp));
    QCOMPARE(model.index(0, ApplyTableModel::Gflops).data().toString(), QStringLiteral("-"));
    QVERIFY(model.index(1, ApplyTableModel::Op).data().toString().contains("(block/inner)"));
    QCOMPARE(model.rowOfNode(profileNode(m_exp)), 0);
    QCOMPARE(model.index(1, 0).data(kNodesRole).value<QList<int>>(),
             QList<int>{profileNode(m_add)});
    // Sorting by value, not by text ("500 us" < "4 ms" although "5" > "4").
    QSortFilterProxyModel* proxy = makeProfileProxy(&model, &model);
    QAbstractItemModelTester proxyTester(proxy,
                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy->sort(ApplyTableModel::Self, Qt::AscendingOrder);
    QCOMPARE(proxy->index(4, ApplyTableModel::Self).data().toString(), QStringLiteral("4 ms"));
    QCOMPARE(proxy->index(0, ApplyTableModel::Self).data().toString(), QStringLiteral("500 us"));
    proxy->setFilterFixedString("EXP");
    QCOMPARE(proxy->rowCount(), 1);
    proxy->setFilterFixedString("block");  // the scope, in the op column
    QCOMPARE(proxy->rowCount(), 2);
    proxy->setFilterFixedString({});
    model.setView(m_other);
    QCOMPARE(model.rowCount(), 5);
    model.setView(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  void classAndOpsTables() {
    GroupTableModel classes(GroupTableModel::Kind::Classes), ops(GroupTableModel::Kind::Ops);
    QAbstractItemModelTester t1(&classes, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(&ops, QAbstractItemModelTester::FailureReportingMode::QtTest);
    classes.setView(m_view);
    ops.setView(m_view);
    QCOMPARE(headers(classes),
             QStringList({"% time", "self time", "per call", "p95", "#call", "#apply", "name"}));
    // Elemwise (sin, sin, add, exp: 7.5 ms) and DimShuffle (0.5 ms).
    QCOMPARE(classes.rowCount(), 2);
    QCOMPARE(classes.index(0, GroupTableModel::Name).data().toString(), QStringLiteral("Elemwise"));
    QCOMPARE(classes.index(0, GroupTableModel::Applies).data().toLongLong(), 4);
    QCOMPARE(classes.index(0, GroupTableModel::Self).data().toString(), QStringLiteral("7.5 ms"));
    QCOMPARE(classes.index(0, 0).data(kNodesRole).value<QList<int>>().size(), 4);
    // Ops: both sins are one row (equal props).
    QCOMPARE(ops.rowCount(), 4);
    QCOMPARE(ops.rowOfNode(profileNode(m_exp)), 0);
    QCOMPARE(
        ops.index(ops.rowOfNode(profileNode(m_sinY)), GroupTableModel::Applies).data().toLongLong(),
        2);
    QCOMPARE(classes.rowOfNode(-1), -1);
  }

  void scopeTree() {
    ScopeTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setView(m_view);
    QCOMPARE(headers(model), QStringList({"scope", "% incl", "inclusive", "exclusive", "#apply"}));
    QCOMPARE(model.rowCount(), 1);
    const QModelIndex root = model.index(0, 0);
    QCOMPARE(root.data().toString(), QStringLiteral("(all)"));
    QCOMPARE(model.index(0, ScopeTreeModel::Inclusive).data().toString(), QStringLiteral("8 ms"));
    QCOMPARE(model.rowCount(root), 1);
    const QModelIndex block = model.index(0, 0, root);
    QCOMPARE(block.data().toString(), QStringLiteral("block"));
    QCOMPARE(model.index(0, ScopeTreeModel::Inclusive, root).data().toString(),
             QStringLiteral("3 ms"));
    QCOMPARE(model.index(0, ScopeTreeModel::Exclusive, root).data().toString(),
             QStringLiteral("1 ms"));
    const QModelIndex inner = model.index(0, 0, block);
    QCOMPARE(inner.data().toString(), QStringLiteral("inner"));
    QCOMPARE(model.parent(inner), block);
    QCOMPARE(model.indexOfNode(profileNode(m_add)), inner);
    QCOMPARE(model.indexOfNode(profileNode(m_sinY)), block);
    QCOMPARE(block.data(kNodesRole).value<QList<int>>().size(), 2);
    // Filtering keeps the parents of a match.
    QSortFilterProxyModel* proxy = makeProfileProxy(&model, &model);
    QAbstractItemModelTester proxyTester(proxy,
                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy->setFilterFixedString("inner");
    QCOMPARE(proxy->rowCount(), 1);
    const QModelIndex pBlock = proxy->index(0, 0, proxy->index(0, 0));
    QCOMPARE(pBlock.data().toString(), QStringLiteral("block"));
    QCOMPARE(proxy->rowCount(pBlock), 1);
    model.setView(m_other);
    QCOMPARE(model.rowCount(), 1);
    model.setView(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  void outputsWithTheirMarks() {
    OutputTableModel all, some;
    QAbstractItemModelTester t1(&all, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(&some, QAbstractItemModelTester::FailureReportingMode::QtTest);
    all.setView(m_view);
    QCOMPARE(all.rowCount(), 5);
    QCOMPARE(headers(all),
             QStringList({"bytes", "kind", "shape", "dtype", "output", "node", "op"}));
    QCOMPARE(all.index(0, OutputTableModel::Bytes).data().toString(), QStringLiteral("4.0 KiB"));
    QCOMPARE(all.index(0, OutputTableModel::Kind).data().toString(), QStringLiteral("created"));
    QCOMPARE(all.index(0, OutputTableModel::Shape).data().toString(), QStringLiteral("(3, 3)"));
    QCOMPARE(all.rowOfNode(profileNode(m_add)), 0);
    QCOMPARE(all.totalBytes(), 4096.0 + 4 * 36.0);
    some.setView(m_view, std::vector<int>{profileNode(m_exp), profileNode(m_sinY)});
    QCOMPARE(some.rowCount(), 2);
    QCOMPARE(some.rowOfNode(profileNode(m_add)), -1);
    some.setView(nullptr);
    QCOMPARE(some.rowCount(), 0);
  }
};

TSCOPE_GUI_TEST_MAIN(TestProfileModels)
#include "tst_profile_models.moc"
