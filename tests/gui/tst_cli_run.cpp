// `tensorscope run`: inputs from .npy files, from test values and from a random seed; outputs as
// .npy; clean refusals; and the example programs' saved graphs reproduce the values the programs
// computed.

#include "cli_test_support.h"
#include "engine/compile/function.h"
#include "engine/io/npy.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "gui/cli/cli.h"
#include "test_main.h"

#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>

using namespace tscope;
using namespace tscope::engine;

namespace {

using Result = test::CliResult;
using test::cli;

// y = tanh(x . W) + b with x: float32[?, 3] (test value 2x3), W shared 3x4, b: float32[4] (no
// value).
struct SmallGraph {
  VarPtr x, b, y;
  std::shared_ptr<SharedVariable> W;
};

SmallGraph buildSmall() {
  SmallGraph g;
  g.x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
  g.x->setTestValue(Tensor::fromDoubles(DType::Float32, {2, 3}, {0.1, 0.2, 0.3, -0.4, 0.5, -0.6}));
  g.b = Variable::create(TensorType(DType::Float32, {4}), "b");
  g.W = SharedVariable::create(
      Tensor::fromDoubles(DType::Float32, {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), "W");
  g.y = tanh(dot(g.x, g.W) * 0.1) + g.b;
  g.y->setName("y");
  return g;
}

std::string save(const QTemporaryDir& dir, const SmallGraph& g) {
  io::TsgDocument doc;
  doc.original =
      std::make_unique<FunctionGraph>(std::vector<VarPtr>{g.x, g.b, g.W}, std::vector<VarPtr>{g.y});
  const std::string path = dir.filePath("small.tsg").toStdString();
  io::saveTsg(doc, path);
  return path;
}

bool npyClose(const std::filesystem::path& a, const std::filesystem::path& b, double rtol) {
  const Tensor x = io::loadNpy(a), y = io::loadNpy(b);
  if (x.dtype() != y.dtype() || x.shape() != y.shape()) return false;
  return x.allClose(y, rtol, rtol);
}

}  // namespace

class TestCliRun : public QObject {
  Q_OBJECT

 private slots:
  void testRunWithInputFileAndTestValue() {
    QTemporaryDir dir;
    SmallGraph g = buildSmall();
    const std::string file = save(dir, g);
    const Tensor bias = Tensor::fromDoubles(DType::Float32, {4}, {1, -1, 0.5, 0});
    io::saveNpy(bias, dir.filePath("b.npy").toStdString());
    const std::string outDir = dir.filePath("out").toStdString();
    Result r = cli({"run", file, "--input", "b=" + dir.filePath("b.npy").toStdString(),
                    "--output-dir", outDir});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(r.out.find("input x: test value") != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("input b: given") != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("output 0 (y): float32 (2, 4)") != std::string::npos, r.out.c_str());
    const Tensor got = io::loadNpy(outDir + "/output_0.npy");
    Function f = compile({g.x, g.b}, {g.y});
    const Tensor want = f({*g.x->testValue(), bias})[0];
    QVERIFY(got.allClose(want, 1e-6, 1e-6));
  }

  void testRandomInputs() {
    QTemporaryDir dir;
    const std::string file = save(dir, buildSmall());
    const std::string a = dir.filePath("a").toStdString(), b = dir.filePath("b").toStdString();
    QCOMPARE(cli({"run", file, "--random-inputs", "7", "--output-dir", a}).code, 0);
    QCOMPARE(cli({"run", file, "--random-inputs", "7", "--output-dir", b}).code, 0);
    QVERIFY(io::loadNpy(a + "/output_0.npy").bitwiseEqual(io::loadNpy(b + "/output_0.npy")));
  }

  void testRefusals() {
    QTemporaryDir dir;
    const std::string file = save(dir, buildSmall());
    Result r = cli({"run", file, "--output-dir", dir.filePath("o").toStdString()});
    QCOMPARE(r.code, 2);
    // The engine says what is missing; the CLI names the flags that give it.
    QVERIFY2(r.err.find("no value for input 'b'") != std::string::npos, r.err.c_str());
    QVERIFY2(r.err.find("--input b=FILE.npy") != std::string::npos, r.err.c_str());
    QVERIFY2(r.err.find("--random-inputs SEED") != std::string::npos, r.err.c_str());
    io::saveNpy(Tensor::zeros(DType::Float32, {4}), dir.filePath("z.npy").toStdString());
    r = cli({"run", file, "--input", "nope=" + dir.filePath("z.npy").toStdString()});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find("no input named 'nope'; its inputs are: x, b") != std::string::npos,
             r.err.c_str());
    r = cli({"run", file, "--input", "b"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find("NAME=FILE.npy") != std::string::npos, r.err.c_str());
    io::saveNpy(Tensor::zeros(DType::Float32, {5}), dir.filePath("five.npy").toStdString());
    r = cli({"run", file, "--input", "b=" + dir.filePath("five.npy").toStdString()});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find("'b'") != std::string::npos, r.err.c_str());
    r = cli({"run", file, "--input", "b=" + dir.filePath("missing.npy").toStdString()});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.find("missing.npy") != std::string::npos, r.err.c_str());
  }

  // The committed example graphs reproduce the values their programs computed.
  void testExamplesReproduce_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("outputs");
    QTest::newRow("mlp") << "mlp" << 5;
    QTest::newRow("logistic_regression") << "logistic_regression" << 4;
    QTest::newRow("scoped_model") << "scoped_model" << 11;
  }
  void testExamplesReproduce() {
    QFETCH(QString, name);
    QFETCH(int, outputs);
    QTemporaryDir dir;
    const std::string base =
        std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/" + name.toStdString();
    Result r = cli({"run", base + ".tsg", "--output-dir", dir.path().toStdString()});
    QVERIFY2(r.code == 0, r.err.c_str());
    for (int i = 0; i < outputs; ++i) {
      const std::string file = "output_" + std::to_string(i) + ".npy";
      QVERIFY2(npyClose(dir.filePath(QString::fromStdString(file)).toStdString(),
                        base + ".expected/" + file, 1e-4),
               file.c_str());
    }
  }

  // Running the example program again trains (the loss falls) and its fresh files agree too.
  void testExampleProgramRoundTrip() {
    QTemporaryDir dir;
    const QString exe = QString(TSCOPE_BINARY_DIR) + "/examples/example_logistic_regression";
    QProcess p;
    p.start(exe, {dir.filePath("lr.tsg"), dir.filePath("expected"), "10"});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const std::string printed = p.readAllStandardOutput().toStdString();
    QVERIFY2(printed.find("cost") != std::string::npos, printed.c_str());
    Result r = cli({"run", dir.filePath("lr.tsg").toStdString(), "--output-dir",
                    dir.filePath("out").toStdString()});
    QVERIFY2(r.code == 0, r.err.c_str());
    for (int i = 0; i < 4; ++i) {
      const QString file = QString("output_%1.npy").arg(i);
      QVERIFY(npyClose(dir.filePath("out/" + file).toStdString(),
                       dir.filePath("expected/" + file).toStdString(), 1e-6));
    }
  }
};

TSCOPE_TEST_MAIN(TestCliRun)
#include "tst_cli_run.moc"
