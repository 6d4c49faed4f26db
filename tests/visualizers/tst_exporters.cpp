// Exporters: DOT with Graphviz positions (pos with y up, width/height in inches, bb), clusters as
// subgraphs and collapsed groups as boxes, edge colours; SVG that parses as XML and holds the
// labels; PNG whose pixels along the view edge are dodgerblue and along the destroy edge red, at
// the requested scale and capped in size; clear errors for empty scenes and unwritable paths.
#include "gui_test_main.h"
#include "scene_test_support.h"
#include "view_model_test_support.h"
#include "visualizers/model/palette.h"
#include "visualizers/scene/exporters.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QXmlStreamReader>

using namespace tscope::vis;
using namespace tscope::vis::testing;

namespace {

template <class F>
QString thrownMessage(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestExporters : public QObject {
  Q_OBJECT

  LayoutService m_service;
  std::shared_ptr<const ViewModel> m_model;
  QTemporaryDir m_dir;

  std::shared_ptr<const SceneLayout> layoutOf(const GroupState& state) {
    return m_service.layoutNow(m_model, state, LayoutOptions{});
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_model = ViewModel::build(edgeKindsGraph());
  }

  void dotHasPositionsClustersAndColours() {
    const auto layout = layoutOf(m_model->allExpanded());
    const QString dot = sceneToDot(*m_model, *layout);
    QVERIFY(dot.startsWith("digraph"));
    QString structure = dot;  // braces outside quoted labels balance
    structure.remove(QRegularExpression(QStringLiteral("\"(?:[^\"\\\\]|\\\\.)*\"")));
    QCOMPARE(structure.count('{'), structure.count('}'));
    const QRectF b = layout->bounds;
    QVERIFY2(dot.contains(QStringLiteral("bb=\"0.00,0.00,%1,%2\"")
                              .arg(b.width(), 0, 'f', 2)
                              .arg(b.height(), 0, 'f', 2)),
             qPrintable(dot.left(300)));
    for (const PlacedNode& pn : layout->nodes) {
      const QRegularExpression re(
          QStringLiteral("\\bn%1 \\[[^\\n]*pos=\"([-0-9.]+),([-0-9.]+)\", width=([0-9.]+), "
                         "height=([0-9.]+)\\]")
              .arg(pn.node));
      const QRegularExpressionMatch m = re.match(dot);
      QVERIFY2(m.hasMatch(),
               qPrintable(QStringLiteral("node n%1 without a position").arg(pn.node)));
      // Graphviz's frame: points from the bottom-left, y up; sizes in inches.
      QVERIFY(qAbs(m.captured(1).toDouble() - (pn.rect.center().x() - b.left())) < 0.01);
      QVERIFY(qAbs(m.captured(2).toDouble() - (b.bottom() - pn.rect.center().y())) < 0.01);
      QVERIFY(qAbs(m.captured(3).toDouble() * 72 - pn.rect.width()) < 0.01);
      QVERIFY(qAbs(m.captured(4).toDouble() * 72 - pn.rect.height()) < 0.01);
    }
    for (const char* path : {"block", "block/inner"}) {
      const int g = m_model->groupByPath(path);
      QVERIFY2(dot.contains(QRegularExpression(
                   QStringLiteral("subgraph cluster_%1 \\{\\n\\s*graph \\[label=\"%2\", bb=")
                       .arg(g)
                       .arg(m_model->groups()[std::size_t(g)].name))),
               path);
    }
    // block/inner nests inside block.
    QVERIFY(dot.indexOf(QStringLiteral("cluster_%1 ").arg(m_model->groupByPath("block/inner"))) >
            dot.indexOf(QStringLiteral("cluster_%1 ").arg(m_model->groupByPath("block"))));
    QCOMPARE(int(dot.count(QStringLiteral(" -> "))), int(layout->edges.size()));
    // An edge crossing cluster borders is drawn in pieces, each with its kind's colour.
    for (EdgeKind kind : {EdgeKind::View, EdgeKind::Destroy}) {
      const int pieces = int(std::count_if(layout->edges.begin(), layout->edges.end(),
                                           [&](const PlacedEdge& e) { return e.kind == kind; }));
      QVERIFY(pieces >= 1);
      QCOMPARE(int(dot.count(
                   QStringLiteral("color=\"%1\", penwidth").arg(palette::edgeColor(kind).name()))),
               pieces);
    }
    QCOMPARE(int(dot.count(QRegularExpression(" -> [^\\n]*pos=\"e,"))), int(layout->edges.size()));
  }

  void dotDrawsCollapsedGroupsAsBoxes() {
    const auto layout = layoutOf(GroupState{});
    const QString dot = sceneToDot(*m_model, *layout);
    const int block = m_model->groupByPath("block");
    QVERIFY(!dot.contains("subgraph"));
    QVERIFY2(
        dot.contains(QRegularExpression(
            QStringLiteral("\\bg%1 \\[label=\"\\+ block\\\\n\\d+ nodes\", shape=box[^\\n]*pos=")
                .arg(block))),
        qPrintable(dot));
    // Edges into the collapsed group end at its box.
    QVERIFY(dot.contains(QRegularExpression(QStringLiteral(" -> g%1 \\[").arg(block))));
  }

  void exportDotWritesTheFile() {
    const auto layout = layoutOf(m_model->allExpanded());
    const QString path = m_dir.filePath("graph.dot");
    exportDot(*m_model, *layout, path);
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(file.readAll()), sceneToDot(*m_model, *layout));
  }

  void svgParsesAndHoldsTheLabels() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    scene.setOverview(true);  // as a zoomed-out view leaves it: the export still draws every item
    const QString path = m_dir.filePath("graph.svg");
    exportSvg(scene, path);
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&file);
    QString text, title, viewBox;
    bool root = true;
    while (!xml.atEnd()) {
      xml.readNext();
      if (!xml.isStartElement()) continue;
      if (root) {
        QCOMPARE(xml.name().toString(), QStringLiteral("svg"));
        viewBox = xml.attributes().value("viewBox").toString();
        root = false;
      }
      if (xml.name() == QLatin1String("title"))
        title = xml.readElementText();
      else if (xml.name() == QLatin1String("text"))
        text += xml.readElementText(QXmlStreamReader::IncludeChildElements) + "\n";
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QCOMPARE(title, QStringLiteral("Tensorscope graph"));
    const QSizeF size = scene.sceneRect().size();
    QCOMPARE(viewBox, QStringLiteral("0 0 %1 %2").arg(size.width()).arg(size.height()));
    for (const PlacedNode& pn : scene.sceneLayout()->nodes)
      for (const QString& line : m_model->nodes()[std::size_t(pn.node)].label.split('\n'))
        QVERIFY2(text.contains(line), qPrintable(line));
    QVERIFY(text.contains("block"));  // the cluster's title
    QVERIFY(scene.overview());
  }

  void pngShowsViewEdgeBlueAndDestroyEdgeRed() {
    GraphScene scene;
    scene.setLegendVisible(false);
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    const QString path = m_dir.filePath("graph.png");
    const double scale = 2;
    exportPng(scene, path, scale);
    const QImage image(path);
    QVERIFY(!image.isNull());
    const QRectF source = scene.sceneRect();
    QCOMPARE(image.size(), QSize(int(std::ceil(source.width() * scale)),
                                 int(std::ceil(source.height() * scale))));
    QCOMPARE(image.pixelColor(1, 1), QColor(Qt::white));
    const QTransform toImage =
        QTransform::fromScale(scale, scale).translate(-source.left(), -source.top());
    const QColor blue(0x1e, 0x90, 0xff), red(0xff, 0, 0);
    int view = 0, destroy = 0;
    for (const PlacedEdge& edge : scene.sceneLayout()->edges) {
      if (edge.kind == EdgeKind::View) {
        QVERIFY(pathSamplesNear(image, edge.path, toImage, blue) >= 7);
        QCOMPARE(pathSamplesNear(image, edge.path, toImage, red), 0);
        ++view;
      } else if (edge.kind == EdgeKind::Destroy) {
        QVERIFY(pathSamplesNear(image, edge.path, toImage, red) >= 7);
        QCOMPARE(pathSamplesNear(image, edge.path, toImage, blue), 0);
        ++destroy;
      } else {
        QCOMPARE(pathSamplesNear(image, edge.path, toImage, blue), 0);
        QCOMPARE(pathSamplesNear(image, edge.path, toImage, red), 0);
      }
    }
    QVERIFY(view >= 1 && destroy >= 1);
  }

  void pngSizeIsCapped() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(GroupState{}));
    const QString path = m_dir.filePath("huge.png");
    exportPng(scene, path, 200);
    const QImage image(path);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() <= 16384 && image.height() <= 16384);
    QVERIFY(double(image.width()) * image.height() <= 30.0 * 1024 * 1024 * 1.01);
    QVERIFY(image.width() > scene.sceneRect().width() * 10);
  }

  void refusals() {
    GraphScene empty;
    QVERIFY(thrownMessage([&] { exportSvg(empty, m_dir.filePath("e.svg")); }).contains("empty"));
    QVERIFY(thrownMessage([&] { exportPng(empty, m_dir.filePath("e.png")); }).contains("empty"));
    GraphScene scene;
    const auto layout = layoutOf(GroupState{});
    scene.setContent(m_model, layout);
    const QString bad = m_dir.filePath("no/such/dir/g");
    for (const QString ext : {".svg", ".png", ".dot"}) {
      const QString path = bad + ext;
      const QString message = thrownMessage([&] {
        if (ext == ".svg")
          exportSvg(scene, path);
        else if (ext == ".png")
          exportPng(scene, path);
        else
          exportDot(*m_model, *layout, path);
      });
      QVERIFY2(message.contains("cannot write " + path), qPrintable(message));
      QVERIFY(!QFile::exists(path));
    }
    QVERIFY(thrownMessage([&] { exportPng(scene, m_dir.filePath("s.png"), 0); }).contains("scale"));
  }
};

TSCOPE_GUI_TEST_MAIN(TestExporters)
#include "tst_exporters.moc"
