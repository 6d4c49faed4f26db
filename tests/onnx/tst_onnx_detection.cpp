// torchvision's detection models of tests/data/onnx/detection/ (written by
// make_detection_fixtures.py: SSD-lite and Faster R-CNN with MobileNetV3-Large backbones at reduced
// width, random weights, exported by PyTorch 1.13 at opset 11). Each imports without opaque ops
// and with the ops detection needs (NonMaxSuppression, TopK with a run-time k, RoiAlign, IfElse
// with a branch of another rank: Note [IfElse branches of another rank]), and runs in modes none
// and fast_run to PyTorch's detections: the same number, labels exact, boxes and scores within the
// sidecar's tolerance (1e-4 relative). The references must be comparable at all: their sorted
// scores are further apart than twice the tolerance, so no two detections can trade places.
#include "engine/graph/inner_graphs.h"
#include "engine/io/onnx/onnx_import.h"
#include "onnx_fixture.h"
#include "test_main.h"

#include <QDebug>

#include <functional>
#include <set>

using namespace tscope::engine;
using namespace tscope::engine::io;
namespace fx = tscope::test::onnx;

Q_DECLARE_METATYPE(tscope::engine::Mode)

namespace {

const std::filesystem::path kDetectionDir = TSCOPE_TEST_DATA_DIR "/onnx/detection";

struct Expectation {
  std::string name;
  std::vector<std::string> outputs;  // the graph outputs, in order
  std::set<std::string> ops;         // engine ops the imported graph must hold (inner graphs too)
};

const std::vector<Expectation> kFixtures = {
    {"ssdlite", {"boxes", "scores", "labels"}, {"NonMaxSuppression", "TopK", "IfElse"}},
    {"fasterrcnn",
     {"boxes", "labels", "scores"},
     {"NonMaxSuppression", "TopK", "RoiAlign", "IfElse", "AssertType"}},
};

// Every op name of the graph and of the inner graphs of its nodes, recursively; an ONNX node kept
// for its run-time values (Note [Run-time ONNX values]) counts as its ONNX op ("TopK").
void collectOps(const FunctionGraph& graph, std::set<std::string>& ops) {
  for (const Apply* node : graph.nodes()) {
    ops.insert(node->op().name());
    const std::string str = node->op().str();
    if (node->op().name() == "OnnxRuntimeNode")
      ops.insert(str.substr(str.find('{') + 1, str.find_first_of(" }") - str.find('{') - 1));
    for (const FunctionGraph* inner : innerGraphsOf(node->op())) collectOps(*inner, ops);
  }
}

// The largest |a - e| and |a - e| / |e| (over |e| > 0) between two float tensors of one shape.
std::pair<double, double> maxDifferences(const Tensor& actual, const Tensor& expected) {
  const std::vector<double> a = actual.toDoubles(), e = expected.toDoubles();
  double abs = 0, rel = 0;
  for (std::size_t i = 0; i < a.size() && i < e.size(); ++i) {
    const double d = std::abs(a[i] - e[i]);
    abs = std::max(abs, d);
    if (e[i] != 0) rel = std::max(rel, d / std::abs(e[i]));
  }
  return {abs, rel};
}

int outputIndex(const Expectation& x, const std::string& name) {
  for (std::size_t i = 0; i < x.outputs.size(); ++i)
    if (x.outputs[i] == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

class TestOnnxDetection : public QObject {
  Q_OBJECT

 private slots:
  // Both models are there, with boxes (n, 4), labels and scores (n,) and at least two detections.
  void testFixturesPresent() {
    for (const Expectation& x : kFixtures) {
      const fx::Fixture f = fx::loadFixture(kDetectionDir / (x.name + ".onnx"));
      QCOMPARE(f.inputs.size(), std::size_t{1});
      QCOMPARE(f.expected.size(), std::size_t{3});
      QVERIFY2(f.rtol <= 1e-4, x.name.c_str());
      const Tensor& boxes = f.expected[static_cast<std::size_t>(outputIndex(x, "boxes"))];
      const Tensor& labels = f.expected[static_cast<std::size_t>(outputIndex(x, "labels"))];
      const Tensor& scores = f.expected[static_cast<std::size_t>(outputIndex(x, "scores"))];
      QCOMPARE(boxes.ndim(), 2);
      QCOMPARE(boxes.shape()[1], std::int64_t{4});
      QVERIFY2(boxes.shape()[0] >= 2, x.name.c_str());
      QCOMPARE(labels.dtype(), DType::Int64);
      QCOMPARE(labels.shape(), (Shape{boxes.shape()[0]}));
      QCOMPARE(scores.shape(), (Shape{boxes.shape()[0]}));
    }
  }

  // The detections come sorted by score, each further than twice the tolerance from the next, so
  // an implementation within the tolerance cannot order them differently (make_detection_fixtures
  // refuses weights without that margin).
  void testReferenceScoresAreDistinct() {
    for (const Expectation& x : kFixtures) {
      const fx::Fixture f = fx::loadFixture(kDetectionDir / (x.name + ".onnx"));
      const std::vector<double> s =
          f.expected[static_cast<std::size_t>(outputIndex(x, "scores"))].toDoubles();
      for (std::size_t i = 0; i + 1 < s.size(); ++i) {
        const double tolerance = f.atol + f.rtol * std::abs(s[i]);
        QVERIFY2(s[i] - s[i + 1] > 2 * tolerance,
                 (x.name + ": scores " + std::to_string(i) + " and " + std::to_string(i + 1) +
                  " are " + fx::formatValue(s[i]) + " and " + fx::formatValue(s[i + 1]))
                     .c_str());
      }
    }
  }

  void testRun_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<Mode>("mode");
    for (const Expectation& x : kFixtures) {
      QTest::newRow((x.name + " none").c_str()) << QString::fromStdString(x.name) << Mode::None;
      QTest::newRow((x.name + " fast_run").c_str())
          << QString::fromStdString(x.name) << Mode::FastRun;
    }
  }
  void testRun() {
    QFETCH(QString, name);
    QFETCH(Mode, mode);
    const Expectation& x = *std::find_if(kFixtures.begin(), kFixtures.end(), [&](const auto& e) {
      return e.name == name.toStdString();
    });
    const fx::Fixture f = fx::loadFixture(kDetectionDir / (x.name + ".onnx"));
    OnnxImportOptions options;
    options.allowOpaque = false;
    OnnxImportResult imported;
    try {
      imported = loadOnnx(f.onnxPath, options);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const FunctionGraph& graph = *imported.document.original;
    QCOMPARE(graph.outputs().size(), x.outputs.size());
    for (std::size_t i = 0; i < x.outputs.size(); ++i)
      QCOMPARE(graph.outputs()[i]->name(), x.outputs[i]);
    std::set<std::string> ops;
    collectOps(graph, ops);
    for (const std::string& op : x.ops)
      QVERIFY2(ops.count(op), (x.name + " has no " + op + " node").c_str());
    std::vector<Tensor> outputs;
    try {
      outputs = fx::runFixture(graph, f, mode);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const auto diff = fx::compareOutputs(outputs, f.expected, f.rtol, f.atol);
    QVERIFY2(!diff, diff ? (x.name + ": " + *diff).c_str() : "");
    // The figures docs/onnx.md quotes.
    const auto [boxAbs, boxRel] =
        maxDifferences(outputs[outputIndex(x, "boxes")], f.expected[outputIndex(x, "boxes")]);
    const auto [scoreAbs, scoreRel] =
        maxDifferences(outputs[outputIndex(x, "scores")], f.expected[outputIndex(x, "scores")]);
    qInfo("%s: %lld detections; boxes max abs %.2g rel %.2g; scores max abs %.2g rel %.2g",
          x.name.c_str(), static_cast<long long>(outputs[0].shape()[0]), boxAbs, boxRel, scoreAbs,
          scoreRel);
  }
};

TSCOPE_TEST_MAIN(TestOnnxDetection)
#include "tst_onnx_detection.moc"
