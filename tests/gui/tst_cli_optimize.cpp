// `tensorscope optimize`: writes the original and the optimized graph with the rewrite log and the
// rewriter profile, prints the summary, honours --mode/--include/--exclude, refuses bad options;
// the optimized graph computes what the original computes.

#include "cli_test_support.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/io/tsg.h"
#include "engine/session/run_graph.h"
#include "gui/cli/cli.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <map>

using namespace tscope;
using namespace tscope::engine;

namespace {

using Result = test::CliResult;
using test::cli;

std::string example(const char* name) {
  return std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/" + name;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

class TestCliOptimize : public QObject {
  Q_OBJECT

 private slots:
  void optimizesTheExampleGraphs() {
    for (const char* name : {"mlp.tsg", "logistic_regression.tsg", "mlp_forward.tsg"}) {
      QTemporaryDir dir;
      const std::string out = dir.filePath("opt.tsg").toStdString();
      Result r = cli({"optimize", example(name), "-o", out});
      QVERIFY2(r.code == 0, r.err.c_str());
      QVERIFY2(contains(r.out, "nodes: ") && contains(r.out, "phases:") &&
                   contains(r.out, "canonicalize"),
               r.out.c_str());
      QVERIFY2(contains(r.out, "top rewrites:"), r.out.c_str());
      io::TsgDocument doc = io::loadTsg(out);
      QVERIFY(doc.optimized);
      QVERIFY(!doc.rewrites.empty());
      QVERIFY(doc.optimized->nodeCount() <= doc.original->nodeCount());
      // The training graphs have duplicated subexpressions and dot + add forms to rewrite.
      if (std::string(name) != "mlp_forward.tsg")
        QVERIFY(doc.optimized->nodeCount() < doc.original->nodeCount());
      bool hasProfile = false;
      for (const auto& p : doc.profiles)
        hasProfile = hasProfile || p.value("kind", "") == "rewriter";
      QVERIFY(hasProfile);
      // Every logged change names a phase and a rewriter, in order.
      for (std::size_t i = 0; i < doc.rewrites.size(); ++i) {
        QCOMPARE(doc.rewrites[i].order, i);
        QVERIFY(!doc.rewrites[i].phase.empty());
        QVERIFY(!doc.rewrites[i].reason.empty());
      }
      // The optimized graph computes what the original does.
      session::RunInputs inputs;
      inputs.randomSeed = 7;
      const auto before = session::runGraph(*doc.original, inputs);
      const auto after = session::runGraph(*doc.optimized, inputs);
      QCOMPARE(before.outputs.size(), after.outputs.size());
      for (std::size_t i = 0; i < before.outputs.size(); ++i)
        QVERIFY2(after.outputs[i].allClose(before.outputs[i], 1e-4, 1e-5), name);
      // print shows the optimized graph.
      Result p = cli({"print", out, "--graph", "optimized"});
      QVERIFY2(p.code == 0, p.err.c_str());
      // print --rewrites lists the log, one change per line, in order.
      Result log = cli({"print", out, "--rewrites"});
      QVERIFY2(log.code == 0, log.err.c_str());
      const QStringList lines = QString::fromStdString(log.out).split('\n', Qt::SkipEmptyParts);
      QCOMPARE(std::size_t(lines.size()), doc.rewrites.size() + 1);
      QVERIFY2(lines[0].contains(QString::number(doc.rewrites.size()) + " changes"),
               qPrintable(lines[0]));
      for (std::size_t i = 0; i < doc.rewrites.size(); ++i) {
        const RewriteRecord& rec = doc.rewrites[i];
        const QString line = lines[qsizetype(i) + 1];
        QVERIFY2(line.startsWith(QStringLiteral("#%1 [%2] %3:")
                                     .arg(i)
                                     .arg(QString::fromStdString(rec.phase),
                                          QString::fromStdString(rec.reason))),
                 qPrintable(line));
        for (const auto& [from, to] : rec.replaced)
          QVERIFY2(line.contains(QStringLiteral("%1 -> %2").arg(from).arg(to)), qPrintable(line));
        for (std::int64_t id : rec.removedNodes) {
          // A removed node of the original graph is named with its op.
          const Apply* node = doc.original->nodeById(id);
          QVERIFY2(line.contains(node ? QStringLiteral("%1 %2").arg(id).arg(
                                            QString::fromStdString(node->op().str()))
                                      : QString::number(id)),
                   qPrintable(line));
        }
      }
    }
  }

  // The optimized MLP names what issue 4 asks of it: gemm updates in place, fused elementwise ops.
  void optimizedMlpUpdatesInPlace() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("opt.tsg").toStdString();
    QCOMPARE(cli({"optimize", example("mlp.tsg"), "-o", out}).code, 0);
    Result p = cli({"print", out, "--graph", "optimized"});
    QVERIFY2(contains(p.out, "Update of W1 [id 2]:\nGemm{inplace}"), p.out.c_str());
    QVERIFY2(contains(p.out, "Update of W2 [id 4]:\nGemm{inplace}"), p.out.c_str());
    QVERIFY2(contains(p.out, "Composite{tanh(add(i0, i1)),inplace}"), p.out.c_str());
    Result none = cli({"print", example("mlp.tsg"), "--rewrites"});
    QVERIFY2(none.code == 0 && contains(none.out, "has no rewrite log"), none.out.c_str());
    Result both = cli({"print", out, "--rewrites", "--graph", "optimized"});
    QCOMPARE(both.code, int(gui::kExitUsage));
  }

  // Note [Placement without a device]: --device cuda places the optimized graph as compile's
  // "gpu" phase would, on a machine without a GPU too; the file keeps the device types.
  void placementWithoutADevice() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("cuda.tsg").toStdString();
    Result bad = cli({"optimize", example("mlp.tsg"), "-o", out, "--device", "tpu"});
    QCOMPARE(bad.code, int(gui::kExitUsage));
    QVERIFY2(contains(bad.err, "--device expects cpu or cuda, found 'tpu'"), bad.err.c_str());
    Result r = cli({"optimize", example("mlp.tsg"), "-o", out, "--device", "cuda"});
    if (!engine::cuda::cudaStatus().built) {
      QCOMPARE(r.code, int(gui::kExitUsage));
      QVERIFY2(contains(r.err, "this build has no CUDA backend"), r.err.c_str());
      QVERIFY(!QFile::exists(QString::fromStdString(out)));
      return;
    }
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(contains(r.out, "gpu "), r.out.c_str());  // the phase in the profile text
    const io::TsgDocument doc = io::loadTsg(out);
    int toDevice = 0, onDevice = 0;
    for (const Apply* node : doc.optimized->nodes()) {
      toDevice += node->op().name() == "GpuFromHost" ? 1 : 0;
      for (int o = 0; o < node->nOutputs(); ++o)
        onDevice += node->outputRef(o).type().device() == Device::Cuda ? 1 : 0;
    }
    QVERIFY(toDevice > 0);
    QVERIFY(onDevice > toDevice);  // the Dots and the fused elementwise nodes, not only copies
    // The loss and its gradient, and the bias gradients' SumToShape, run there too.
    for (const Apply* node : doc.optimized->nodes()) {
      const std::string name = node->op().name();
      if (name == "SoftmaxCrossEntropyWithLogits" || name == "SoftmaxCrossEntropyGrad" ||
          name == "SumToShape")
        QVERIFY2(node->outputRef(0).type().device() == Device::Cuda, name.c_str());
    }
    bool logged = false;
    for (const RewriteRecord& rec : doc.rewrites) logged = logged || rec.phase == "gpu";
    QVERIFY(logged);
    // The original graph is untouched: the CPU still runs it.
    for (const Apply* node : doc.original->nodes())
      for (int o = 0; o < node->nOutputs(); ++o)
        QCOMPARE(node->outputRef(o).type().device(), Device::Cpu);
    Result p = cli({"print", out, "--graph", "optimized"});
    QVERIFY2(contains(p.out, "on cuda"), p.out.c_str());
  }

  // The cuDNN kernels (issue 22) take the fixture ResNet-18's convolutions, FusedConv2d with a
  // residual included, and its max pool; the placed file reloads (each node's type is checked
  // against its op's inference on load).
  void placedResnetReloads() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("this build has no ONNX support");
#else
    if (!engine::cuda::cudaStatus().built) QSKIP("this build has no CUDA backend");
    QTemporaryDir dir;
    const std::string out = dir.filePath("resnet_cuda.tsg").toStdString();
    Result r = cli({"optimize", std::string(TSCOPE_TEST_DATA_DIR) + "/onnx/models/resnet18.onnx",
                    "-o", out, "--device", "cuda"});
    QVERIFY2(r.code == 0, r.err.c_str());
    const io::TsgDocument doc = io::loadTsg(out);
    std::map<std::string, int> onDevice, onHost;
    for (const Apply* node : doc.optimized->nodes())
      ++(node->outputRef(0).type().device() == Device::Cuda ? onDevice : onHost)[node->op().name()];
    if (onDevice["FusedConv2d"] + onHost["FusedConv2d"] == 0) QSKIP("this build has no cuDNN");
    QCOMPARE(onHost["FusedConv2d"], 0);
    QCOMPARE(onDevice["FusedConv2d"], 20);
    QCOMPARE(onDevice["MaxPool2d"], 1);
    // The flatten before the classifier is a device view (issue 22's shape ops): the only value
    // that comes back to the host is the output.
    QCOMPARE(onDevice["Reshape"], 1);
    QCOMPARE(onHost["HostFromGpu"], 1);
    Result p = cli({"print", out, "--graph", "optimized"});
    QVERIFY2(p.code == 0, p.err.c_str());
#endif
  }

  void modesAndTags() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("opt.tsg").toStdString();
    Result none = cli({"optimize", example("mlp.tsg"), "-o", out, "--mode", "none"});
    QVERIFY2(none.code == 0, none.err.c_str());
    io::TsgDocument doc = io::loadTsg(out);
    QVERIFY(doc.rewrites.empty());
    QCOMPARE(doc.optimized->nodeCount(), doc.original->nodeCount());

    Result fc = cli({"optimize", example("mlp.tsg"), "-o", out, "--mode", "fast_compile"});
    QVERIFY2(fc.code == 0, fc.err.c_str());
    for (const auto& rec : io::loadTsg(out).rewrites)
      QVERIFY2(rec.phase == "merge" || rec.phase == "canonicalize" || rec.phase == "final_merge",
               rec.phase.c_str());

    Result ex = cli({"optimize", example("mlp.tsg"), "-o", out, "--exclude", "canonicalize"});
    QVERIFY2(ex.code == 0, ex.err.c_str());
    for (const auto& rec : io::loadTsg(out).rewrites) QVERIFY(rec.phase != "canonicalize");

    // --include adds to the mode's selection: none + merge runs merge only.
    Result in =
        cli({"optimize", example("mlp.tsg"), "-o", out, "--mode", "none", "--include", "merge"});
    QVERIFY2(in.code == 0, in.err.c_str());
    for (const auto& rec : io::loadTsg(out).rewrites) QCOMPARE(rec.phase, std::string("merge"));
  }

  void refusesBadOptions() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("opt.tsg").toStdString();
    Result noOut = cli({"optimize", example("mlp.tsg")});
    QCOMPARE(noOut.code, int(gui::kExitUsage));
    QVERIFY2(contains(noOut.err, "-o OUT.tsg is required"), noOut.err.c_str());
    Result badMode = cli({"optimize", example("mlp.tsg"), "-o", out, "--mode", "fastest"});
    QCOMPARE(badMode.code, int(gui::kExitUsage));
    QVERIFY2(contains(badMode.err, "fastest") && contains(badMode.err, "fast_run"),
             badMode.err.c_str());
    Result badTag = cli({"optimize", example("mlp.tsg"), "-o", out, "--exclude", "no_such_tag"});
    QCOMPARE(badTag.code, int(gui::kExitUsage));
    QVERIFY2(contains(badTag.err, "no_such_tag"), badTag.err.c_str());
    Result badExt =
        cli({"optimize", example("mlp.tsg"), "-o", dir.filePath("x.json").toStdString()});
    QCOMPARE(badExt.code, int(gui::kExitUsage));
    Result missing = cli({"optimize", dir.filePath("none.tsg").toStdString(), "-o", out});
    QCOMPARE(missing.code, int(gui::kExitFailure));
    QVERIFY(!QFile::exists(QString::fromStdString(out)));  // nothing half-written
  }
};

QTEST_GUILESS_MAIN(TestCliOptimize)
#include "tst_cli_optimize.moc"
