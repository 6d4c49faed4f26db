#include "bench/synthetic_graphs.h"
#include "gui/app/graph_pane.h"
#include "gui_test_main.h"

#include <QSignalSpy>

#include <memory>

using namespace tscope;
using gui::GraphPane;

// A model with two scope levels: "block0".."block3", each holding "unit0".."unit2" of 10 applies.
static std::shared_ptr<const vis::ViewModel> smallGroupedModel(unsigned seed = 42) {
  return vis::ViewModel::build(synthetic::makeGraph(
      {.applies = 120, .levels = 2, .leafSize = 10, .fanOut = 3, .seed = seed}));
}

class TestGraphPane : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<vis::LayoutService> m_service;
  std::shared_ptr<const vis::ViewModel> m_model;

  // A shown pane on m_model with `state`, its first layout done.
  std::unique_ptr<GraphPane> shownPane(std::optional<vis::GroupState> state = std::nullopt) {
    auto pane = std::make_unique<GraphPane>(m_service.get());
    pane->resize(1000, 700);
    pane->show();
    if (!QTest::qWaitForWindowExposed(pane.get())) return nullptr;
    QSignalSpy finished(pane.get(), &GraphPane::layoutFinished);
    pane->setModel(m_model, state);
    if (!finished.wait(15000)) return nullptr;
    QTest::qWait(20);  // deferred geometry (scroll bars showing) settles before a test measures
    return pane;
  }

  // A node inside "block2/unit1" (hidden while block2 is collapsed).
  int nodeInBlock2Unit1() const {
    int group = m_model->groupByPath(QStringLiteral("block2/unit1"));
    if (group < 0) return -1;
    const vis::Group& g = m_model->groups()[static_cast<std::size_t>(group)];
    return g.nodes.empty() ? -1 : g.nodes.front();
  }

 private slots:
  void initTestCase() {
    m_service = std::make_unique<vis::LayoutService>();
    m_model = smallGroupedModel();
    QVERIFY(m_model->groupByPath(QStringLiteral("block2/unit1")) > 0);
    QVERIFY(nodeInBlock2Unit1() >= 0);
  }
  void cleanupTestCase() { m_service.reset(); }

  void setModelLaysOut() {
    GraphPane pane(m_service.get());
    pane.resize(800, 600);
    QSignalSpy started(&pane, &GraphPane::layoutStarted);
    QSignalSpy finished(&pane, &GraphPane::layoutFinished);
    QSignalSpy stateChanged(&pane, &GraphPane::groupStateChanged);
    pane.setModel(m_model);
    QCOMPARE(started.count(), 1);
    QVERIFY(pane.isLayoutPending());
    QVERIFY(finished.wait(15000));
    QVERIFY(!pane.isLayoutPending());
    QCOMPARE(finished.count(), 1);
    QVERIFY(finished.at(0).at(0).toInt() > 0);
    QVERIFY(finished.at(0).at(1).toInt() > 0);
    QCOMPARE(stateChanged.count(), 1);
    QCOMPARE(pane.groupState(), m_model->defaultState());
    QCOMPARE(pane.view()->graphScene()->model(), m_model);
    QVERIFY(pane.view()->graphScene()->sceneLayout() != nullptr);
  }

  void setNullModelClears() {
    auto pane = shownPane();
    QVERIFY(pane);
    pane->setModel(nullptr);
    QVERIFY(!pane->model());
    QVERIFY(!pane->isLayoutPending());
    QCOMPARE(pane->selectedNode(), -1);
    QCOMPARE(pane->search(QStringLiteral("tanh")), 0);
  }

  void toggleGroupKeepsAnchor() {
    auto pane = shownPane(vis::GroupState());  // everything collapsed
    QVERIFY(pane);
    const QString path = QStringLiteral("block1");
    const int group = m_model->groupByPath(path);
    vis::GraphView* view = pane->view();
    QRectF before = view->graphScene()->groupRect(group);
    QVERIFY(!before.isEmpty());
    QPoint screenBefore = view->mapFromScene(before.topLeft());

    QSignalSpy stateChanged(pane.get(), &GraphPane::groupStateChanged);
    QSignalSpy finished(pane.get(), &GraphPane::layoutFinished);
    pane->toggleGroup(path);
    QCOMPARE(stateChanged.count(), 1);
    QVERIFY(pane->groupState().isExpanded(path));
    QVERIFY(finished.wait(15000));

    QRectF after = view->graphScene()->groupRect(group);
    QVERIFY(after.width() > before.width() || after.height() > before.height());  // now a cluster
    QPoint screenAfter = view->mapFromScene(after.topLeft());
    QVERIFY2((screenAfter - screenBefore).manhattanLength() <= 4,
             qPrintable(QStringLiteral("anchor moved from (%1,%2) to (%3,%4)")
                            .arg(screenBefore.x())
                            .arg(screenBefore.y())
                            .arg(screenAfter.x())
                            .arg(screenAfter.y())));

    // Toggling back collapses it; unknown paths are ignored.
    pane->toggleGroup(path);
    QVERIFY(!pane->groupState().isExpanded(path));
    QVERIFY(finished.wait(15000));
    pane->toggleGroup(QStringLiteral("no/such/group"));
    QVERIFY(!pane->isLayoutPending());
  }

  void doubleClickRequestTogglesGroup() {
    auto pane = shownPane(vis::GroupState());
    QVERIFY(pane);
    QSignalSpy finished(pane.get(), &GraphPane::layoutFinished);
    emit pane->view()->graphScene()->groupToggleRequested(QStringLiteral("block3"));
    QVERIFY(pane->groupState().isExpanded(QStringLiteral("block3")));
    QVERIFY(finished.wait(15000));
  }

  void selectNodeRevealsHiddenNode() {
    auto pane = shownPane(vis::GroupState());
    QVERIFY(pane);
    const int node = nodeInBlock2Unit1();
    QCOMPARE(m_model->visibleItem(node, pane->groupState()).kind,
             vis::LevelItem::Kind::CollapsedGroup);
    QCOMPARE(pane->view()->graphScene()->nodeRect(node), QRectF());

    QSignalSpy selected(pane.get(), &GraphPane::nodeSelected);
    QSignalSpy breadcrumb(pane.get(), &GraphPane::breadcrumbChanged);
    pane->selectNode(node);
    QVERIFY(pane->groupState().isExpanded(QStringLiteral("block2")));
    QVERIFY(pane->groupState().isExpanded(QStringLiteral("block2/unit1")));
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), node, 15000);
    QCOMPARE(pane->view()->graphScene()->selectedNode(), node);
    QVERIFY(!pane->view()->graphScene()->nodeRect(node).isEmpty());
    QCOMPARE(selected.last().at(0).toInt(), node);
    QCOMPARE(breadcrumb.last().at(0).toStringList(), (QStringList{"block2", "unit1"}));
    // Scrolled into view (centred as far as the scroll range allows).
    vis::GraphView* view = pane->view();
    QPoint centre = view->mapFromScene(view->graphScene()->nodeRect(node).center());
    QVERIFY(view->viewport()->rect().contains(centre));

    pane->selectNode(-1);
    QCOMPARE(pane->selectedNode(), -1);
    QCOMPARE(breadcrumb.last().at(0).toStringList(), QStringList());
  }

  void search_data() {
    QTest::addColumn<QString>("query");
    QTest::addColumn<QString>("field");  // what an independent scan of the model compares
    QTest::newRow("op, lower case") << "tanh"
                                    << "op";
    QTest::newRow("op, upper case") << "TANH"
                                    << "op";
    QTest::newRow("scope") << "block1/unit2"
                           << "scope";
    QTest::newRow("variable name") << "W1"
                                   << "name";
    QTest::newRow("blank") << "  "
                           << "none";
    QTest::newRow("nothing") << "no-such-thing"
                             << "none";
  }
  void search() {
    QFETCH(QString, query);
    QFETCH(QString, field);
    auto pane = shownPane();
    QVERIFY(pane);
    QTRY_VERIFY_WITH_TIMEOUT(pane->isSearchReady(), 5000);
    int expected = 0;
    const QString needle = query.trimmed().toLower();
    for (const vis::ViewNode& n : m_model->nodes()) {
      if (needle.isEmpty()) break;
      if (field == "op" && n.apply)
        expected += QString::fromStdString(n.apply->op().str()).toLower().contains(needle);
      if (field == "scope")
        expected += QString::fromStdString(n.apply ? n.apply->scope() : n.variable->scope())
                        .toLower()
                        .contains(needle);
      if (field == "name" && n.variable)
        expected += QString::fromStdString(n.variable->name()).toLower().contains(needle);
    }
    QCOMPARE(pane->search(query), expected);
    QCOMPARE(pane->searchHitCount(), expected);
    QCOMPARE(pane->currentSearchHit(), -1);
    if (field != "none") QVERIFY(expected > 0);
  }

  void searchNextPreviousWrap() {
    auto pane = shownPane(vis::GroupState());
    QVERIFY(pane);
    const int hits = pane->search(QStringLiteral("block3/unit0"));
    QVERIFY(hits >= 3);
    std::vector<int> order;
    for (int i = 0; i < hits; ++i) {
      pane->findNext();
      QCOMPARE(pane->currentSearchHit(), i);
      QTRY_VERIFY_WITH_TIMEOUT(pane->selectedNode() >= 0 && !pane->isLayoutPending(), 15000);
      const int node = pane->selectedNode();
      QCOMPARE(m_model
                   ->groups()[static_cast<std::size_t>(
                       m_model->nodes()[static_cast<std::size_t>(node)].group)]
                   .path,
               QStringLiteral("block3/unit0"));
      QVERIFY(std::find(order.begin(), order.end(), node) == order.end());
      order.push_back(node);
    }
    pane->findNext();  // wraps to the first
    QCOMPARE(pane->currentSearchHit(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), order.front(), 5000);
    pane->findPrevious();  // wraps to the last
    QCOMPARE(pane->currentSearchHit(), hits - 1);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), order.back(), 5000);
    pane->findPrevious();
    QCOMPARE(pane->currentSearchHit(), hits - 2);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), order[order.size() - 2], 5000);
  }

  void searchById() {
    auto pane = shownPane(vis::GroupState());
    QVERIFY(pane);
    const int node = nodeInBlock2Unit1();
    const std::int64_t id = m_model->nodes()[static_cast<std::size_t>(node)].graphId;
    QCOMPARE(pane->search(QStringLiteral("id:%1").arg(id)), 1);
    pane->findNext();
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), node,
                              15000);  // revealed from a collapsed group
    QCOMPARE(pane->search(QStringLiteral("id: %1 ").arg(id)), 1);
    QCOMPARE(pane->search(QStringLiteral("id:abc")), 0);
    QCOMPARE(pane->search(QStringLiteral("id:999999")), 0);
  }

  void backAndForward() {
    auto pane = shownPane();
    QVERIFY(pane);
    QVERIFY(!pane->canGoBack());
    QVERIFY(!pane->canGoForward());
    const vis::GroupState initial = pane->groupState();
    const int a = nodeInBlock2Unit1();
    const int b = m_model->groups()[static_cast<std::size_t>(m_model->groupByPath("block0/unit0"))]
                      .nodes.front();
    pane->selectNode(a);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), a, 15000);
    const vis::GroupState afterA = pane->groupState();
    pane->selectNode(b);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), b, 15000);
    QTRY_VERIFY_WITH_TIMEOUT(!pane->isLayoutPending(), 15000);
    const vis::GroupState afterB = pane->groupState();
    QVERIFY(pane->canGoBack());
    QVERIFY(!pane->canGoForward());

    QSignalSpy historyChanged(pane.get(), &GraphPane::historyChanged);
    pane->goBack();
    QVERIFY(historyChanged.count() >= 1);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), a, 15000);
    QCOMPARE(pane->groupState(), afterA);
    QVERIFY(pane->canGoForward());
    pane->goForward();
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), b, 15000);
    QCOMPARE(pane->groupState(), afterB);

    // A toggle is a step too: back restores the state before it.
    pane->toggleGroup(QStringLiteral("block0"));
    QVERIFY(!(pane->groupState() == afterB));
    QTRY_VERIFY_WITH_TIMEOUT(!pane->isLayoutPending(), 15000);
    pane->goBack();
    QCOMPARE(pane->groupState(), afterB);
    QTRY_VERIFY_WITH_TIMEOUT(!pane->isLayoutPending(), 15000);
    // Back to the start: nothing selected, the initial state, no way further back.
    while (pane->canGoBack()) pane->goBack();
    QTRY_VERIFY_WITH_TIMEOUT(!pane->isLayoutPending(), 15000);
    QCOMPARE(pane->groupState(), initial);
    QCOMPARE(pane->selectedNode(), -1);
    // A new step after going back drops the forward entries.
    QVERIFY(pane->canGoForward());
    pane->toggleGroup(QStringLiteral("block1"));
    QVERIFY(!pane->canGoForward());
  }

  void staleLayoutIgnored() {
    GraphPane pane(m_service.get());
    pane.resize(800, 600);
    auto first = vis::ViewModel::build(synthetic::makeGraph({.applies = 400, .seed = 1}));
    auto second = smallGroupedModel(7);
    QSignalSpy finished(&pane, &GraphPane::layoutFinished);
    pane.setModel(first);
    pane.setModel(second);
    QVERIFY(finished.wait(15000));
    QTest::qWait(300);  // a result of the first job, if one were emitted, would have landed by now
    QCOMPARE(finished.count(), 1);
    QCOMPARE(pane.model(), second);
    QCOMPARE(pane.view()->graphScene()->model(), second);
    QVERIFY(!pane.isLayoutPending());
  }
};

TSCOPE_GUI_TEST_MAIN(TestGraphPane)
#include "tst_graph_pane.moc"
