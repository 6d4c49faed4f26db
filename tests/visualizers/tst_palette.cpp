// The palette: d3viz's colours exactly (REFERENCE.md "d3viz"), the heat scale, the view's own
// colours, and resources/palette.json agreeing with paletteJson().
#include "gui_test_main.h"
// The units under test and their helpers.
#include "visualizers/model/palette.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

using namespace tscope::vis;

Q_DECLARE_METATYPE(tscope::vis::VariableRole)
Q_DECLARE_METATYPE(tscope::vis::EdgeKind)

class TestPalette : public QObject {
  Q_OBJECT

 private slots:
  void testOpFamily_data() {
    QTest::addColumn<QString>("opName");
    QTest::addColumn<QColor>("expected");
    QTest::newRow("Scan") << "Scan" << QColor("yellow");
    QTest::newRow("Shape") << "Shape" << QColor("cyan");
    QTest::newRow("ShapeI") << "ShapeI" << QColor("cyan");
    QTest::newRow("SpecifyShape") << "SpecifyShape" << QColor("cyan");
    QTest::newRow("IfElse") << "IfElse" << QColor("magenta");
    QTest::newRow("Elemwise") << "Elemwise" << QColor("#FFAABB");
    QTest::newRow("Elemwise str") << "Elemwise{add,inplace}" << QColor("#FFAABB");
    QTest::newRow("Composite") << "Composite" << QColor("#FFAABB");
    QTest::newRow("Subtensor") << "Subtensor" << QColor("#FFAAFF");
    QTest::newRow("AdvancedIncSubtensor1") << "AdvancedIncSubtensor1" << QColor("#FFAAFF");
    QTest::newRow("Alloc") << "Alloc" << QColor("#FFAA22");
    QTest::newRow("GpuFromHost") << "GpuFromHost" << QColor("red");
    QTest::newRow("HostFromGpu") << "HostFromGpu" << QColor("red");
    // d3viz matches class names literally and case-sensitively: "Reshape" holds no "Shape".
    QTest::newRow("Reshape") << "Reshape" << QColor("white");
    QTest::newRow("DimShuffle") << "DimShuffle" << QColor("white");
    QTest::newRow("Dot") << "Dot" << QColor("white");
    QTest::newRow("empty") << "" << QColor("white");
    // The first rule in d3viz's order wins: Scan before Shape.
    QTest::newRow("ScanShape") << "ShapeScan" << QColor("yellow");
  }
  void testOpFamily() {
    QFETCH(QString, opName);
    QFETCH(QColor, expected);
    QCOMPARE(palette::opFamilyColor(opName), expected);
    // The family the legend names agrees with the colour: white ops have none, the others one
    // whose own colour is the same.
    const QString family = palette::opFamily(opName);
    QCOMPARE(family.isEmpty(), expected == QColor("white"));
    if (!family.isEmpty()) QCOMPARE(palette::opFamilyColor(family), expected);
  }

  void testVariableColours_data() {
    QTest::addColumn<VariableRole>("role");
    QTest::addColumn<QColor>("expected");
    QTest::newRow("input") << VariableRole::Input << QColor("limegreen");
    QTest::newRow("constant") << VariableRole::Constant << QColor("springgreen");
    QTest::newRow("shared") << VariableRole::Shared << QColor("yellowgreen");
    QTest::newRow("output") << VariableRole::Output << QColor("dodgerblue");
    QTest::newRow("unused output") << VariableRole::UnusedOutput << QColor("lightgrey");
  }
  void testVariableColours() {
    QFETCH(VariableRole, role);
    QFETCH(QColor, expected);
    QCOMPARE(palette::variableColor(role), expected);
  }

  void testEdgeColours_data() {
    QTest::addColumn<EdgeKind>("kind");
    QTest::addColumn<QColor>("expected");
    QTest::newRow("plain") << EdgeKind::Plain << QColor("black");
    QTest::newRow("view") << EdgeKind::View << QColor("dodgerblue");
    QTest::newRow("destroy") << EdgeKind::Destroy << QColor("red");
  }
  void testEdgeColours() {
    QFETCH(EdgeKind, kind);
    QFETCH(QColor, expected);
    QCOMPARE(palette::edgeColor(kind), expected);
  }

  void testHeat_data() {
    QTest::addColumn<double>("share");
    QTest::addColumn<QColor>("expected");
    QTest::newRow("0") << 0.0 << QColor("#fff5f0");
    QTest::newRow("0.1") << 0.1 << QColor("#fff5f0");
    QTest::newRow("0.125") << 0.125 << QColor("#fee0d2");
    QTest::newRow("0.3") << 0.3 << QColor("#fcbba1");
    QTest::newRow("0.45") << 0.45 << QColor("#fc9272");
    QTest::newRow("0.5") << 0.5 << QColor("#fb6a4a");
    QTest::newRow("0.7") << 0.7 << QColor("#ef3b2c");
    QTest::newRow("0.8") << 0.8 << QColor("#cb181d");
    QTest::newRow("0.9") << 0.9 << QColor("#a50f15");
    QTest::newRow("1 (the slowest)") << 1.0 << QColor("#a50f15");
    QTest::newRow("above 1 clamps") << 3.0 << QColor("#a50f15");
    QTest::newRow("below 0 clamps") << -1.0 << QColor("#fff5f0");
    QTest::newRow("NaN is palest") << std::nan("") << QColor("#fff5f0");
  }
  void testHeat() {
    QFETCH(double, share);
    QFETCH(QColor, expected);
    QCOMPARE(palette::heatColor(share), expected);
  }

  void testHeatIsMonotonic() {
    int previous = 256;
    for (int i = 0; i <= 100; ++i) {
      const int lightness = palette::heatColor(i / 100.0).lightness();
      QVERIFY2(lightness <= previous, qPrintable(QStringLiteral("share %1").arg(i / 100.0)));
      previous = lightness;
    }
  }

  void testViewColours() {
    // Clusters darken with depth and keep the last shade past the table.
    QVERIFY(palette::clusterFill(1).lightness() > palette::clusterFill(2).lightness());
    QVERIFY(palette::clusterFill(2).lightness() > palette::clusterFill(3).lightness());
    QCOMPARE(palette::clusterFill(0), palette::clusterFill(1));
    QCOMPARE(palette::clusterFill(50), palette::clusterFill(6));
    QVERIFY(palette::clusterBorder().isValid());
    QVERIFY(palette::collapsedGroupFill(GroupKind::Scope) !=
            palette::collapsedGroupFill(GroupKind::OpFromGraph));
    // The view's own colours must not be mistaken for d3viz's meanings.
    const QList<QColor> own{palette::selectionColor(), palette::hoverColor(),
                            palette::searchHitColor()};
    for (const QColor& c : own) {
      QVERIFY(c.isValid());
      QVERIFY(c != palette::edgeColor(EdgeKind::View));
      QVERIFY(c != palette::edgeColor(EdgeKind::Destroy));
    }
    QVERIFY(palette::selectionColor() != palette::hoverColor());
    QVERIFY(palette::portColor().isValid());
  }

  void testJsonHoldsTheTable() {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(palette::paletteJson().toUtf8(), &error);
    QVERIFY2(!doc.isNull(), qPrintable(error.errorString()));
    const QJsonObject root = doc.object();
    const QJsonArray rules = root["op_family"].toObject()["rules"].toArray();
    QVERIFY(!rules.isEmpty());
    for (const QJsonValue& rule : rules) {
      const QString word = rule.toObject()["contains"].toString();
      QCOMPARE(QColor(rule.toObject()["fill"].toString()), palette::opFamilyColor(word));
    }
    QCOMPARE(QColor(root["op_family"].toObject()["other"].toString()),
             palette::opFamilyColor("Dot"));
    const QJsonObject variable = root["variable"].toObject();
    QCOMPARE(QColor(variable["input"].toString()), palette::variableColor(VariableRole::Input));
    QCOMPARE(QColor(variable["unused_output"].toString()),
             palette::variableColor(VariableRole::UnusedOutput));
    QCOMPARE(QColor(root["edge"].toObject()["view"].toString()),
             palette::edgeColor(EdgeKind::View));
    const QJsonArray heat = root["heat"].toArray();
    QCOMPARE(heat.size(), 8);
    QCOMPARE(QColor(heat.first().toString()), palette::heatColor(0));
    QCOMPARE(QColor(heat.last().toString()), palette::heatColor(1));
    QCOMPARE(QColor(root["view"].toObject()["selection"].toString()), palette::selectionColor());
  }

  void testResourceFileMatches() {
    QFile file(QStringLiteral(TSCOPE_SOURCE_DIR "/resources/palette.json"));
    QVERIFY2(file.open(QIODevice::ReadOnly),
             qPrintable(file.fileName() + ": " + file.errorString()));
    QJsonParseError error;
    const QJsonDocument shipped = QJsonDocument::fromJson(file.readAll(), &error);
    QVERIFY2(!shipped.isNull(), qPrintable(file.fileName() + ": " + error.errorString()));
    const QJsonDocument generated = QJsonDocument::fromJson(palette::paletteJson().toUtf8());
    if (shipped != generated)
      qWarning().noquote() << "resources/palette.json should be:\n" << palette::paletteJson();
    QVERIFY(shipped == generated);
  }
};

TSCOPE_GUI_TEST_MAIN(TestPalette)
#include "tst_palette.moc"
