// examples/graphs/scoped_model.tsg, the viewer's showcase: it holds what the example promises
// (nested scopes, OpFromGraph groups, view and destroy edges after fast_run, the rewrite log) and
// both its graphs reproduce the values the program computed (scoped_model.expected/).
#include "engine/io/npy.h"
#include "engine/io/tsg.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/session/run_graph.h"
#include "test_main.h"

#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>

using namespace tscope::engine;

namespace {

const std::string kBase = std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/scoped_model";

std::vector<const Apply*> opFromGraphNodes(const FunctionGraph& g, const std::string& label) {
  std::vector<const Apply*> out;
  for (const Apply* a : g.nodes())
    if (auto* op = dynamic_cast<const OpFromGraph*>(&a->op()); op && op->label() == label)
      out.push_back(a);
  return out;
}

// Every output of the graph, run on the saved test values, against the program's .npy files.
void checkReproduces(const FunctionGraph& graph, const std::string& expectedDir) {
  const session::RunResult r = session::runGraph(graph, session::RunInputs{});
  QCOMPARE(r.outputs.size(), graph.outputs().size());
  for (std::size_t i = 0; i < r.outputs.size(); ++i) {
    const auto file = std::filesystem::path(expectedDir) / ("output_" + std::to_string(i) + ".npy");
    QVERIFY2(std::filesystem::exists(file), file.c_str());
    const Tensor want = io::loadNpy(file);
    QCOMPARE(r.outputs[i].shape(), want.shape());
    QVERIFY2(r.outputs[i].allClose(want, 1e-4, 1e-5), file.c_str());
  }
  QVERIFY(!std::filesystem::exists(std::filesystem::path(expectedDir) /
                                   ("output_" + std::to_string(r.outputs.size()) + ".npy")));
}

}  // namespace

class TestScopedModel : public QObject {
  Q_OBJECT

 private slots:
  void testStructure() {
    const io::TsgDocument doc = io::loadTsg(kBase + ".tsg");
    QVERIFY(doc.optimized);
    const FunctionGraph& original = *doc.original;
    QVERIFY2(original.nodeCount() >= 100 && original.nodeCount() <= 300,
             std::to_string(original.nodeCount()).c_str());
    // gelu_block applied in both blocks, not inline, and still two groups after fast_run.
    QCOMPARE(opFromGraphNodes(original, "gelu_block").size(), std::size_t{2});
    QCOMPARE(opFromGraphNodes(*doc.optimized, "gelu_block").size(), std::size_t{2});
    // layer_norm is inline: in the original, gone from the optimized graph, its nodes scoped by it.
    QVERIFY(opFromGraphNodes(original, "layer_norm").size() >= 4);
    QVERIFY(opFromGraphNodes(*doc.optimized, "layer_norm").empty());
    bool inlinedScope = false, threeLevels = false, views = false, destroys = false;
    for (const Apply* a : doc.optimized->nodes()) {
      inlinedScope = inlinedScope || a->scope() == "encoder/block1/ln1/layer_norm";
      views = views || !a->op().viewMap().empty();
      destroys = destroys || !a->op().destroyMap().empty();
    }
    for (const Apply* a : original.nodes())
      threeLevels = threeLevels || a->scope() == "encoder/block1/attention";
    QVERIFY(inlinedScope);
    QVERIFY(threeLevels);
    QVERIFY(views);     // blue edges
    QVERIFY(destroys);  // red edges
    bool inlined = false, inplace = false;
    for (const auto& r : doc.rewrites) {
      inlined = inlined || r.reason == "inline_op_from_graph";
      inplace = inplace || r.phase == "inplace";
    }
    QVERIFY(inlined);
    QVERIFY(inplace);
    // Test values on the inputs, for the inspector and `tensorscope run`.
    for (const VarPtr& in : original.inputs())
      if (in->kind() == Variable::Kind::Regular)
        QVERIFY2(in->testValue().has_value(), in->name().c_str());
  }

  void testOriginalReproduces() {
    const io::TsgDocument doc = io::loadTsg(kBase + ".tsg");
    checkReproduces(*doc.original, kBase + ".expected");
  }

  void testOptimizedReproduces() {
    const io::TsgDocument doc = io::loadTsg(kBase + ".tsg");
    checkReproduces(*doc.optimized, kBase + ".expected");
  }

  // The program writes a file that reproduces its own values, and is loadable (when it is built).
  void testProgramRoundTrip() {
    const QString exe = QString(TSCOPE_BINARY_DIR) + "/examples/example_scoped_model";
    if (!QFile::exists(exe)) QSKIP("example_scoped_model is not built");
    QTemporaryDir dir;
    QProcess p;
    p.start(exe, {dir.filePath("m.tsg"), dir.filePath("expected")});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const io::TsgDocument doc = io::loadTsg(dir.filePath("m.tsg").toStdString());
    checkReproduces(*doc.optimized, dir.filePath("expected").toStdString());
  }
};

TSCOPE_TEST_MAIN(TestScopedModel)
#include "tst_scoped_model.moc"
