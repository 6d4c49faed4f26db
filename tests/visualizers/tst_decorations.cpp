// Decoration layers on a GraphScene (Note [Decoration layers]): fills drawn instead of the family
// colour, merged by z, removed cleanly; a hidden node's outline and mark passed to its collapsed
// group's box but not its fill; a layer made for another model never drawn; health pills drawn on
// edges with a tooltip; legend rows appended; layers kept across a content switch; the context
// menu signal of a right click.
#include "gui_test_main.h"
#include "scene_test_support.h"
#include "visualizers/model/palette.h"

#include <QGraphicsSceneContextMenuEvent>
#include <QPainter>
#include <QSignalSpy>

using namespace tscope::vis;
using namespace tscope::vis::testing;

namespace {

QColor pixelAt(GraphScene& scene, QPointF at) {
  QImage image(QSize(9, 9), QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    // At 1:1 (text scale): the items paint themselves.
    scene.render(&painter, QRectF(0, 0, 9, 9), QRectF(at - QPointF(4.5, 4.5), QSizeF(9, 9)));
  }
  return image.pixelColor(4, 4);
}

int applyNode(const ViewModel& model, const QString& op) {
  for (std::size_t i = 0; i < model.nodes().size(); ++i)
    if (model.nodes()[i].apply && model.nodes()[i].label.contains(op, Qt::CaseInsensitive))
      return int(i);
  return -1;
}

}  // namespace

class TestDecorations : public QObject {
  Q_OBJECT

  LayoutService m_service;
  std::shared_ptr<const ViewModel> m_model;
  const QColor m_red{0xd0, 0x10, 0x10}, m_blue{0x10, 0x10, 0xd0};

  std::shared_ptr<const SceneLayout> layoutOf(const QStringList& expanded) {
    return m_service.layoutNow(m_model, GroupState::fromStringList(expanded), LayoutOptions{});
  }
  std::shared_ptr<Decorations> layer() {
    auto d = std::make_shared<Decorations>();
    d->model = m_model;
    return d;
  }

 private slots:
  void initTestCase() { m_model = ViewModel::build(edgeKindsGraph()); }

  void fillReplacesTheFamilyColourAndLayersMergeByZ() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf({"block", "block/inner"}));
    const int exp = applyNode(*m_model, "exp");
    QVERIFY(exp >= 0);
    const QPointF centre = scene.nodeRect(exp).center();
    const QColor family = pixelAt(scene, centre);
    QVERIFY(colourDistance(family, m_red) > 100);

    auto low = layer();
    low->nodes[exp].fill = m_red;
    scene.setDecorations("low", low, 0);
    QVERIFY(colourDistance(pixelAt(scene, centre), m_red) < 30);
    auto high = layer();
    high->nodes[exp].fill = m_blue;
    high->nodes[exp].tooltip = "Time: 1 ms";
    scene.setDecorations("high", high, 5);
    QVERIFY(colourDistance(pixelAt(scene, centre), m_blue) < 30);
    QVERIFY(shapeOfNode(scene, exp)->toolTip().endsWith("Time: 1 ms"));
    // Lower z set later still merges below.
    scene.setDecorations("low", low, 0);
    QVERIFY(colourDistance(pixelAt(scene, centre), m_blue) < 30);
    scene.setDecorations("high", nullptr);
    QVERIFY(colourDistance(pixelAt(scene, centre), m_red) < 30);
    QVERIFY(!shapeOfNode(scene, exp)->toolTip().contains("Time: 1 ms"));
    scene.setDecorations("low", nullptr);
    QVERIFY(colourDistance(pixelAt(scene, centre), family) < 30);
    QVERIFY(scene.decorationLayers().isEmpty());
    QVERIFY(scene.mergedDecorations().empty());
  }

  void hiddenNodesPassMarksToTheirGroupBox() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf({}));  // "block" collapsed: the add inside is hidden
    const int add = applyNode(*m_model, "add");
    const int block = m_model->groupByPath("block");
    QVERIFY(add >= 0 && block > 0);
    QVERIFY(scene.nodeRect(add).isEmpty());
    auto d = layer();
    d->nodes[add].fill = m_red;
    d->nodes[add].outline = m_blue;
    d->nodes[add].mark = NodeMark::Current;
    d->nodes[add].breakpoint = BreakpointMark::Enabled;
    scene.setDecorations("debug", d);
    ShapeItem* box = groupBox(scene, block);
    QVERIFY(box);
    const NodeDecoration* onBox = box->decoration();
    QVERIFY(onBox);
    QCOMPARE(onBox->mark, NodeMark::Current);
    QCOMPARE(onBox->breakpoint, BreakpointMark::Enabled);
    QCOMPARE(*onBox->outline, m_blue);
    QVERIFY(!onBox->fill);  // the group's own time is the layer's business (groups)
    // A group decoration fills the box.
    d = layer();
    d->groups[block].fill = m_red;
    scene.setDecorations("debug", d);
    QVERIFY(box->decoration() && box->decoration()->fill == m_red);
    QVERIFY(colourDistance(pixelAt(scene, box->rect().center() + QPointF(0, 6)), m_red) < 30);
    // Expanded, the node carries its own decoration and the cluster's box is gone.
    d = layer();
    d->nodes[add].mark = NodeMark::Executed;
    scene.setDecorations("debug", d);
    scene.setContent(m_model, layoutOf({"block", "block/inner"}));
    QVERIFY(scene.nodeDecoration(add));
    QCOMPARE(scene.nodeDecoration(add)->mark, NodeMark::Executed);
  }

  void aLayerForAnotherModelIsNotDrawn() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf({"block", "block/inner"}));
    const int exp = applyNode(*m_model, "exp");
    auto d = std::make_shared<Decorations>();
    d->model = ViewModel::build(edgeKindsGraph());  // same shape, another model
    d->nodes[exp].fill = m_red;
    scene.setDecorations("stale", d);
    QVERIFY(!scene.nodeDecoration(exp));
    QVERIFY(colourDistance(pixelAt(scene, scene.nodeRect(exp).center()), m_red) > 100);
  }

  void healthPillsOnEdges() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf({"block", "block/inner"}));
    const int exp = applyNode(*m_model, "exp");
    const std::vector<int>& in = m_model->inEdges(exp);
    QVERIFY(!in.empty());
    auto d = layer();
    HealthPill pill;
    pill.nan = 0.5;
    pill.positive = 0.5;
    pill.text = "f32[3,3]";
    pill.tooltip = "min 1, max 2";
    d->edges[in.front()].pill = pill;
    d->edges[in.front()].color = QColor(0xff, 0x8c, 0x00);
    scene.setDecorations("pills", d);
    const EdgeDecoration* drawn = scene.edgeDecoration(in.front());
    QVERIFY(drawn && drawn->pill);
    EdgeItem* edge = nullptr;
    for (EdgeItem* e : itemsOfType<EdgeItem>(scene))
      if (e->decoration()) edge = e;
    QVERIFY(edge);
    QVERIFY(edge->toolTip().startsWith("min 1, max 2"));
    const QRectF r = edge->pillRect();
    QVERIFY(!r.isEmpty());
    QVERIFY(edge->boundingRect().contains(r));
    // NaN (red) on the left half, positive (green) on the right.
    QVERIFY(colourDistance(pixelAt(scene, QPointF(r.left() + r.width() * 0.2, r.center().y())),
                           HealthPill::colorOf(0)) < 40);
    QVERIFY(colourDistance(pixelAt(scene, QPointF(r.left() + r.width() * 0.8, r.center().y())),
                           HealthPill::colorOf(5)) < 40);
    // The pill takes hover (its tooltip) and the rest of the edge still does not.
    QVERIFY(edge->shape().contains(r.center()));
  }

  void legendRowsAreAppended() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf({}));
    auto legends = itemsOfType<LegendItem>(scene);
    QCOMPARE(legends.size(), std::size_t(1));
    const std::size_t before = legends.front()->rows().size();
    auto d = layer();
    d->legend.push_back({LegendRow::Swatch::Scale, {}, "time", {m_blue, m_red}});
    d->legend.push_back({LegendRow::Swatch::Dot, m_red, "breakpoint"});
    scene.setDecorations("profile", d);
    legends = itemsOfType<LegendItem>(scene);
    QCOMPARE(legends.size(), std::size_t(1));
    QCOMPARE(legends.front()->rows().size(), before + 2);
    QCOMPARE(legends.front()->rows().back().text, QStringLiteral("breakpoint"));
    scene.setDecorations("profile", nullptr);
    QCOMPARE(itemsOfType<LegendItem>(scene).front()->rows().size(), before);
  }

  void overviewDrawsDecoratedFills() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf({"block", "block/inner"}));
    const int exp = applyNode(*m_model, "exp");
    auto d = layer();
    d->nodes[exp].fill = m_red;
    scene.setDecorations("profile", d);
    QCOMPARE(scene.mergedDecorations().overviewFills.size(), std::size_t(1));
    scene.setOverview(true);
    // Zoomed far out (no text), the overview paints the replaced fill.
    const QRectF rect = scene.nodeRect(exp);
    QImage image(QSize(40, 40), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    {
      QPainter painter(&image);
      const QRectF src(rect.center() - QPointF(100, 100), QSizeF(200, 200));
      scene.render(&painter, QRectF(0, 0, 40, 40), src);
    }
    QVERIFY(colourDistance(image.pixelColor(20, 20), m_red) < 60);
  }

  void rightClickAsksForAContextMenu() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf({"block", "block/inner"}));
    const int exp = applyNode(*m_model, "exp");
    QSignalSpy menus(&scene, &GraphScene::contextMenuRequested);
    QGraphicsSceneContextMenuEvent event(QEvent::GraphicsSceneContextMenu);
    event.setScenePos(scene.nodeRect(exp).center());
    event.setScreenPos(QPoint(10, 20));
    scene.sendEvent(shapeOfNode(scene, exp), &event);
    QCOMPARE(menus.count(), 1);
    QCOMPARE(menus.last().at(0).toInt(), exp);
    QCOMPARE(menus.last().at(2).toPoint(), QPoint(10, 20));
    QCOMPARE(scene.selectedNode(), exp);
  }
};

TSCOPE_GUI_TEST_MAIN(TestDecorations)
#include "tst_decorations.moc"
