// `tensorscope export FILE -o OUT.onnx`: writes a model that imports back and computes what the
// graph computes (original or optimized graph, any opset 13..17); refuses a missing or unknown
// output (listing the formats), a bad --graph or --opset, and a graph with an op that has no ONNX
// form (naming it, writing nothing).
// `tensorscope export FILE -o OUT.(svg|png|dot)`: draws .tsg and ONNX graphs without a window, with
// --expand all|none|PATH..., --heatmap from a per-node profile, --scale for PNG; refuses unknown
// group paths (listing known ones), options of the other kind of output, and --heatmap without a
// profile.

#include "cli_test_support.h"
#include "engine/io/tsg.h"
#include "engine/ops/nn/nn.h"
#include "engine/session/run_graph.h"
#include "gui/cli/cli.h"
#include "gui_test_main.h"
#include "visualizers/model/palette.h"

#ifdef TSCOPE_HAVE_ONNX
#include "engine/io/onnx/onnx_import.h"
#endif

#include <QImage>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QXmlStreamReader>

#include <filesystem>

using namespace tscope;
using namespace tscope::engine;
using nlohmann::json;

namespace {

using Result = test::CliResult;
using test::cli;

std::string example(const char* name) {
  return std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/" + name;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

std::string resnet18() {
  return std::string(TSCOPE_TEST_DATA_DIR) + "/onnx/models/resnet18.onnx";
}

QString readText(const std::string& path) {
  QFile file(QString::fromStdString(path));
  return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

int clusters(const std::string& dotPath) {
  return int(readText(dotPath).count(QRegularExpression("subgraph cluster_\\d+ \\{")));
}

}  // namespace

class TestCliExport : public QObject {
  Q_OBJECT

 private slots:
  // The original graph and, after `optimize`, the optimized one export; the model computes what
  // the graph does.
  void exportsOriginalAndOptimized() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("this build has no ONNX support");
#else
    QTemporaryDir dir;
    const std::string onnx = dir.filePath("mlp.onnx").toStdString();
    Result r = cli({"export", example("mlp_forward.tsg"), "-o", onnx});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(contains(r.out, "wrote " + onnx) && contains(r.out, "opset 17"), r.out.c_str());
    QVERIFY(r.err.empty());

    const std::string optimized = dir.filePath("opt.tsg").toStdString();
    QCOMPARE(cli({"optimize", example("mlp_forward.tsg"), "-o", optimized}).code, 0);
    const std::string onnxOpt = dir.filePath("opt.onnx").toStdString();
    Result o = cli({"export", optimized, "-o", onnxOpt, "--graph", "optimized", "--opset", "13"});
    QVERIFY2(o.code == 0, o.err.c_str());
    QVERIFY2(contains(o.out, "opset 13"), o.out.c_str());

    const io::TsgDocument doc = io::loadTsg(example("mlp_forward.tsg"));
    session::RunInputs inputs;
    inputs.byName["x"] = Tensor::full(DType::Float32, {3, 64}, 0.25);
    const auto want = session::runGraph(*doc.original, inputs).outputs;
    for (const std::string& path : {onnx, onnxOpt}) {
      const io::OnnxImportResult model = io::loadOnnx(path);
      QCOMPARE(model.opset, path == onnx ? 17 : 13);
      const auto got = session::runGraph(*model.document.original, inputs).outputs;
      QCOMPARE(got.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i)
        QVERIFY2(got[i].allClose(want[i], 1e-5, 1e-6), path.c_str());
    }
#endif
  }

  void refusesBadOptions() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("this build has no ONNX support");
#endif
    QTemporaryDir dir;
    const std::string out = dir.filePath("out.onnx").toStdString();
    Result noOut = cli({"export", example("mlp_forward.tsg")});
    QCOMPARE(noOut.code, int(gui::kExitUsage));
    QVERIFY2(contains(noOut.err, "-o OUT is required") && contains(noOut.err, ".onnx"),
             noOut.err.c_str());

    Result badExt =
        cli({"export", example("mlp_forward.tsg"), "-o", dir.filePath("graph.xyz").toStdString()});
    QCOMPARE(badExt.code, int(gui::kExitUsage));
    QVERIFY2(contains(badExt.err, "unknown extension '.xyz'") &&
                 contains(badExt.err, "supported: .onnx") && contains(badExt.err, ".svg") &&
                 contains(badExt.err, ".png") && contains(badExt.err, ".dot"),
             badExt.err.c_str());

    Result badGraph = cli({"export", example("mlp_forward.tsg"), "-o", out, "--graph", "final"});
    QCOMPARE(badGraph.code, int(gui::kExitUsage));
    QVERIFY2(contains(badGraph.err, "final"), badGraph.err.c_str());

    Result noOptimized =
        cli({"export", example("mlp_forward.tsg"), "-o", out, "--graph", "optimized"});
    QCOMPARE(noOptimized.code, int(gui::kExitFailure));
    QVERIFY2(contains(noOptimized.err, "no optimized graph"), noOptimized.err.c_str());

    for (const char* opset : {"12", "18", "seventeen"}) {
      Result badOpset = cli({"export", example("mlp_forward.tsg"), "-o", out, "--opset", opset});
      QCOMPARE(badOpset.code, int(gui::kExitUsage));
      QVERIFY2(contains(badOpset.err, opset), badOpset.err.c_str());
    }

    Result missing = cli({"export", dir.filePath("none.tsg").toStdString(), "-o", out});
    QCOMPARE(missing.code, int(gui::kExitFailure));
    QVERIFY(!exists(out));  // nothing written by any refusal
  }

  // A graph whose op has no ONNX form: exit 1, the op and the node named, no file.
  void refusesAnOpWithoutOnnxForm() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("this build has no ONNX support");
#endif
    QTemporaryDir dir;
    auto x = Variable::create(TensorType(DType::Float32, {1, 1, 4, 4}), "x");
    auto gy = Variable::create(TensorType(DType::Float32, {1, 1, 2, 2}), "gy");
    io::TsgDocument doc;
    doc.original = std::make_unique<FunctionGraph>(
        std::vector<VarPtr>{x, gy},
        std::vector<VarPtr>{maxPool2dGrad(x, gy, Pool2dParams::window(2, 2))});
    const std::string file = dir.filePath("grad.tsg").toStdString();
    io::saveTsg(doc, file);
    const std::string out = dir.filePath("grad.onnx").toStdString();
    Result r = cli({"export", file, "-o", out});
    QCOMPARE(r.code, int(gui::kExitFailure));
    QVERIFY2(contains(r.err, "MaxPool2dGrad") && contains(r.err, "no ONNX form") &&
                 contains(r.err, "node "),
             r.err.c_str());
    QVERIFY(!exists(out));
  }

  void listedInTheUsage() {
    Result r = cli({"--help"});
    QVERIFY2(contains(r.out, "export FILE -o OUT.(onnx|svg|png|dot)"), r.out.c_str());
    Result h = cli({"export", "--help"});
    QCOMPARE(h.code, 0);
    for (const char* option : {"--opset", "--expand", "--heatmap", "--scale"})
      QVERIFY2(contains(h.out, option), h.out.c_str());
  }

  void drawsEachFormat_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("ext");
    for (const char* ext : {".svg", ".png", ".dot"}) {
      QTest::newRow(qPrintable(QStringLiteral("mlp.tsg %1").arg(ext)))
          << QString::fromStdString(example("mlp.tsg")) << ext;
      QTest::newRow(qPrintable(QStringLiteral("resnet18.onnx %1").arg(ext)))
          << QString::fromStdString(resnet18()) << ext;
    }
  }
  void drawsEachFormat() {
    QFETCH(QString, file);
    QFETCH(QString, ext);
#ifndef TSCOPE_HAVE_ONNX
    if (file.endsWith(".onnx")) QSKIP("this build has no ONNX support");
#endif
    QTemporaryDir dir;
    const std::string out = dir.filePath("graph" + ext).toStdString();
    Result r = cli({"export", file.toStdString(), "-o", out});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(contains(r.out, "wrote " + out) && contains(r.out, "nodes") &&
                 contains(r.out, "edges shown"),
             r.out.c_str());
    QVERIFY(exists(out));
    if (ext == ".png") {
      const QImage image(QString::fromStdString(out));
      QVERIFY(!image.isNull());
      QVERIFY(image.width() > 100 && image.height() > 100);
      QCOMPARE(image.pixelColor(0, 0), QColor(Qt::white));
    } else if (ext == ".svg") {
      QXmlStreamReader xml(readText(out));
      int texts = 0;
      while (!xml.atEnd())
        if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("text"))
          ++texts;
      QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
      QVERIFY(texts > 10);
    } else {
      const QString dot = readText(out);
      QVERIFY(dot.startsWith("digraph"));
      QVERIFY(dot.count("pos=\"") > 20);
      QString structure = dot;  // braces outside quoted labels balance
      structure.remove(QRegularExpression(QStringLiteral("\"(?:[^\"\\\\]|\\\\.)*\"")));
      QCOMPARE(structure.count('{'), structure.count('}'));
    }
  }

  // --expand none shows no cluster, all shows every group as one, PATH opens it and its ancestors.
  void expandVariants() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("this build has no ONNX support");
#endif
    QTemporaryDir dir;
    const std::string out = dir.filePath("g.dot").toStdString();
    QCOMPARE(cli({"export", resnet18(), "-o", out, "--expand", "none"}).code, 0);
    QCOMPARE(clusters(out), 0);
    QVERIFY(readText(out).contains("label=\"+ layer1"));
    Result all = cli({"export", resnet18(), "-o", out, "--expand", "all"});
    QCOMPARE(all.code, 0);
    const int everything = clusters(out);
    QVERIFY(everything > 20);
    QVERIFY2(contains(all.out, std::to_string(everything) + " groups expanded"), all.out.c_str());
    Result one =
        cli({"export", resnet18(), "-o", out, "--expand", "layer1/layer1.0", "--expand", "layer2"});
    QVERIFY2(one.code == 0, one.err.c_str());
    QCOMPARE(clusters(out), 3);                                // layer1, layer1/layer1.0, layer2
    QCOMPARE(cli({"export", resnet18(), "-o", out}).code, 0);  // the default state
    QVERIFY(clusters(out) > 0);
  }

  // --parameters: badges (DOT: table labels with the d3viz colours, no parameter edges), boxes,
  // and the default by count (the ResNet-18 fixture has 45 parameters: boxes); a bad mode and
  // --parameters for .onnx are refused.
  void parameterModes() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("this build has no ONNX support");
#endif
    QTemporaryDir dir;
    const std::string out = dir.filePath("g.dot").toStdString();
    Result badges =
        cli({"export", resnet18(), "-o", out, "--expand", "all", "--parameters", "badges"});
    QVERIFY2(badges.code == 0, badges.err.c_str());
    const QString withBadges = readText(out);
    QVERIFY(withBadges.contains("<TABLE"));
    QVERIFY(withBadges.contains(vis::palette::variableColor(vis::VariableRole::Shared).name()));
    Result boxes =
        cli({"export", resnet18(), "-o", out, "--expand", "all", "--parameters", "boxes"});
    QVERIFY2(boxes.code == 0, boxes.err.c_str());
    const QString withBoxes = readText(out);
    QVERIFY(!withBoxes.contains("<TABLE"));
    QVERIFY(withBoxes.count(" -> ") > withBadges.count(" -> "));  // the parameters' edges
    Result byDefault = cli({"export", resnet18(), "-o", out, "--expand", "all"});
    QVERIFY2(byDefault.code == 0, byDefault.err.c_str());
    QCOMPARE(readText(out), withBoxes);
    Result bad = cli({"export", resnet18(), "-o", out, "--parameters", "badge"});
    QCOMPARE(bad.code, int(gui::kExitUsage));
    QVERIFY2(contains(bad.err, "--parameters expects boxes, badges or hidden"), bad.err.c_str());
    Result onnx = cli({"export", resnet18(), "-o", dir.filePath("g.onnx").toStdString(),
                       "--parameters", "boxes"});
    QCOMPARE(onnx.code, int(gui::kExitUsage));
    QVERIFY2(contains(onnx.err, "--parameters applies to drawings"), onnx.err.c_str());
  }

  void refusesBadDrawingOptions() {
    QTemporaryDir dir;
    const std::string svg = dir.filePath("g.svg").toStdString();
    const std::string mlp = example("mlp.tsg");
    Result unknown = cli({"export", mlp, "-o", svg, "--expand", "nowhere"});
    QCOMPARE(unknown.code, int(gui::kExitUsage));
    QVERIFY2(contains(unknown.err, "no group 'nowhere'") &&
                 contains(unknown.err, "known groups include") && contains(unknown.err, "hidden"),
             unknown.err.c_str());
    Result scaleSvg = cli({"export", mlp, "-o", svg, "--scale", "2"});
    QCOMPARE(scaleSvg.code, int(gui::kExitUsage));
    QVERIFY2(contains(scaleSvg.err, "--scale applies to .png"), scaleSvg.err.c_str());
    for (const char* scale : {"0", "-1", "big", "100"}) {
      Result bad =
          cli({"export", mlp, "-o", dir.filePath("g.png").toStdString(), "--scale", scale});
      QCOMPARE(bad.code, int(gui::kExitUsage));
      QVERIFY2(contains(bad.err, "--scale expects"), bad.err.c_str());
    }
    Result opset = cli({"export", mlp, "-o", svg, "--opset", "13"});
    QCOMPARE(opset.code, int(gui::kExitUsage));
    QVERIFY2(contains(opset.err, "--opset applies to .onnx"), opset.err.c_str());
    Result expandOnnx =
        cli({"export", mlp, "-o", dir.filePath("g.onnx").toStdString(), "--expand", "all"});
    QCOMPARE(expandOnnx.code, int(gui::kExitUsage));
    QVERIFY2(contains(expandOnnx.err, "--expand applies to drawings"), expandOnnx.err.c_str());
    Result noProfile = cli({"export", mlp, "-o", svg, "--heatmap"});
    QCOMPARE(noProfile.code, int(gui::kExitFailure));
    QVERIFY2(contains(noProfile.err, "no per-node profile"), noProfile.err.c_str());
    Result noOptimized = cli({"export", mlp, "-o", svg, "--graph", "optimized"});
    QCOMPARE(noOptimized.code, int(gui::kExitFailure));
    QVERIFY2(contains(noOptimized.err, "no optimized graph"), noOptimized.err.c_str());
    QVERIFY(!exists(svg));
  }

  // --heatmap: the slowest node gets the darkest red of the heat scale.
  void heatmapColoursNodesByTime() {
    QTemporaryDir dir;
    io::TsgDocument doc = io::loadTsg(example("mlp_forward.tsg"));
    json nodes = json::array();
    std::int64_t slowest = -1;
    double seconds = 0.001;
    for (const Apply* node : doc.original->toposort()) {
      nodes.push_back({{"id", node->id()}, {"seconds", seconds}});
      slowest = node->id();
      seconds *= 2;
    }
    doc.profiles.push_back({{"graph", "original"}, {"nodes", nodes}});
    const std::string file = dir.filePath("timed.tsg").toStdString();
    io::saveTsg(doc, file);
    const std::string out = dir.filePath("heat.dot").toStdString();
    Result r = cli({"export", file, "-o", out, "--heatmap", "--expand", "all"});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY(slowest >= 0);
    const QString dot = readText(out);
    QCOMPARE(
        int(dot.count(
            QStringLiteral("fillcolor=\"%1\"").arg(tscope::vis::palette::heatColor(1).name()))),
        1);
    Result png = cli({"export", file, "-o", dir.filePath("heat.png").toStdString(), "--heatmap",
                      "--scale", "0.5"});
    QVERIFY2(png.code == 0, png.err.c_str());
  }

  // A per-node profile that does not fit its schema is refused with its JSON path
  // (profiling/profile_record.h), after the file's name.
  void heatmapRefusesMalformedProfile() {
    QTemporaryDir dir;
    io::TsgDocument doc = io::loadTsg(example("mlp_forward.tsg"));
    const std::int64_t id = doc.original->toposort().front()->id();
    doc.profiles.push_back(
        {{"graph", "original"}, {"nodes", json::array({{{"id", id}, {"seconds", "fast"}}})}});
    const std::string file = dir.filePath("bad_profile.tsg").toStdString();
    io::saveTsg(doc, file);
    Result r = cli({"export", file, "-o", dir.filePath("heat.svg").toStdString(), "--heatmap"});
    QCOMPARE(r.code, int(gui::kExitFailure));
    QVERIFY2(contains(r.err, file + ": /profiles/0/nodes/0/seconds: expected a number"),
             r.err.c_str());
    QVERIFY(!exists(dir.filePath("heat.svg").toStdString()));
  }
};

TSCOPE_GUI_TEST_MAIN(TestCliExport)
#include "tst_cli_export.moc"
