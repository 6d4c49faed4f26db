// The converters lowered onto the engine's indexing ops (Einsum, ScatterND, ScatterElements,
// GatherND, GridSample, NonZero): import-time refusals that name the node, and a run-time index
// error that names the ONNX node it came from. Their values are checked by the op fixtures
// (tests/data/onnx/ops, tst_onnx_ops.cpp).
#include "onnx_cases.h"
#include "test_main.h"

using namespace tscope::test::onnx_cases;

class TestOnnxIndexing : public QObject {
  Q_OBJECT

 private slots:
  void testScatterNDIndexOutOfRange();
  void testErrors_data();
  void testErrors();
};

void TestOnnxIndexing::testScatterNDIndexOutOfRange() {
  const ModelBuilder model =
      oneNode(13, "ScatterND",
              {f32({4, 3}, std::vector<double>(12, 0.0)), i64({2, 1}, {1, 7}), iota({2, 3})},
              DType::Float32);
  for (Mode mode : {Mode::None, Mode::FastRun}) {
    try {
      (void)importAndRun(model, mode);
      QFAIL("ScatterND ran with index 7 into an axis of size 4");
    } catch (const std::exception& e) {
      const QString what = QString::fromStdString(e.what());
      QVERIFY2(what.contains("(/ScatterND)"), qPrintable(what));
      QVERIFY2(what.contains("index 7 is out of bounds for axis 0 with size 4"), qPrintable(what));
    }
  }
}

void TestOnnxIndexing::testErrors_data() {
  QTest::addColumn<QByteArray>("model");
  QTest::addColumn<QString>("node");
  QTest::addColumn<QString>("message");
  auto row = [](const char* name, const ModelBuilder& m, const char* node, const char* message) {
    const std::string bytes = m.bytes();
    QTest::newRow(name) << QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size()))
                        << QString(node) << QString(message);
  };
  const Tensor x = iota({2, 3});
  auto einsum = [&](const char* equation, const std::vector<Tensor>& inputs) {
    return oneNode(12, "Einsum", inputs, DType::Float32, attr("equation", equation));
  };
  row("Einsum term count", einsum("ij->ij", {x, x}), "/Einsum",
      "expected one subscript term per input (2) in equation 'ij->ij', found 1");
  row("Einsum digit", einsum("i1,jk->ik", {x, x}), "/Einsum",
      "expected letters (and one \"...\") in term 0 of equation 'i1,jk->ik', found '1'");
  row("Einsum two ellipses", einsum("...i...", {x}), "/Einsum", "at most one \"...\"");
  row("Einsum rank", einsum("ijk,jk->ik", {x, x}), "/Einsum",
      "expected term 0 'ijk' of equation 'ijk,jk->ik' to name the 2 axes of input 0");
  row("Einsum two arrows", einsum("ij->i->j", {x}), "/Einsum", "at most one \"->\"");
  row("Einsum output only", einsum("ij,jk->iz", {x, iota({3, 2})}), "/Einsum",
      "found 'z' in the output only");
  row("Einsum repeated output", einsum("ij->ii", {x}), "/Einsum", "found 'i' twice");
  row("Einsum sizes", einsum("ij,ij->i", {x, iota({3, 2})}), "/Einsum",
      "expected subscript 'i' to have one size (or 1) in every input, found 2 and 3");
  const Tensor rows = i64({1, 1}, {0});
  row("ScatterND mul rows",
      withConstants(16, "ScatterND", x,
                    {i64({1025, 1}, std::vector<std::int64_t>(1025, 0)), iota({1025, 3})},
                    attr("reduction", "mul")),
      "/ScatterND",
      "ScatterND with reduction 'mul' over 1025 index rows (at most 1024) is not supported yet");
  row("ScatterND reduction",
      withConstants(16, "ScatterND", x, {rows, iota({1, 3})}, attr("reduction", "sum")),
      "/ScatterND", "expected reduction none, add, mul, max or min, found 'sum'");
  row("ScatterND index depth",
      withConstants(13, "ScatterND", x, {i64({1, 3}, {0, 0, 0}), iota({1})}), "/ScatterND",
      "expected indices whose last dimension is in [1, 2]");
  row("ScatterND updates shape", withConstants(13, "ScatterND", x, {rows, iota({1, 2})}),
      "/ScatterND", "expected updates of shape indices.shape[:-1] + data.shape[1:]");
  row("ScatterElements mul",
      withConstants(16, "ScatterElements", x, {i64({1, 3}, {0, 1, 0}), iota({1, 3})},
                    attr("reduction", "mul")),
      "/ScatterElements", "ScatterElements with reduction 'mul' is not supported yet");
  row("ScatterElements indices rank",
      withConstants(13, "ScatterElements", x, {i64({3}, {0, 1, 0}), iota({3})}), "/ScatterElements",
      "input 1 (indices): expected integer indices of data's rank 2, found");
  row("ScatterElements updates shape",
      withConstants(13, "ScatterElements", x, {i64({1, 3}, {0, 1, 0}), iota({1, 2})}),
      "/ScatterElements", "input 2 (updates): expected indices' shape");
  row("GatherND index depth", withConstants(13, "GatherND", x, {i64({1, 3}, {0, 0, 0})}),
      "/GatherND", "input 1 (indices): expected a last dimension in [1, 2] for data");
  row("GatherND batch_dims",
      withConstants(13, "GatherND", x, {i64({2, 1}, {0, 1})}, attr("batch_dims", 2)), "/GatherND",
      "attribute 'batch_dims': expected 0 to 1 for data");
  const Tensor image = iota({1, 2, 3, 4}), grid = iota({1, 2, 2, 2});
  row("GridSample mode",
      oneNode(16, "GridSample", {image, grid}, DType::Float32, attr("mode", "area")), "/GridSample",
      "attribute 'mode': expected bilinear, nearest or bicubic, found 'area'");
  row("GridSample padding",
      oneNode(16, "GridSample", {image, grid}, DType::Float32, attr("padding_mode", "wrap")),
      "/GridSample",
      "attribute 'padding_mode': expected zeros, border or reflection, found 'wrap'");
  row("GridSample grid", oneNode(16, "GridSample", {image, iota({1, 2, 2, 3})}, DType::Float32),
      "/GridSample", "input 1 (grid): expected a floating-point tensor (N, H_out, W_out, 2)");
  row("NonZero scalar", oneNode(13, "NonZero", {f32({}, {1})}, DType::Int64), "/NonZero",
      "NonZero of a 0-d tensor (input 0 TensorType(float32, ()); expected rank 1 or more) is not "
      "supported yet");
  row("Einsum diagonal sizes", einsum("ii->i", {x}), "/Einsum",
      "expected the axes of repeated subscript 'i' to have one size, found 2 and 3");
}

void TestOnnxIndexing::testErrors() {
  QFETCH(QByteArray, model);
  QFETCH(QString, node);
  QFETCH(QString, message);
  try {
    (void)readOnnx(std::string_view(model.constData(), static_cast<std::size_t>(model.size())),
                   "bad.onnx");
    QFAIL("the model imported without an error");
  } catch (const OnnxError& e) {
    const QString what = QString::fromStdString(e.what());
    QVERIFY2(what.startsWith("bad.onnx: graph.node["), qPrintable(what));
    QVERIFY2(what.contains("'" + node + "'"), qPrintable(what));
    QVERIFY2(what.contains(message), qPrintable(what));
  }
}

TSCOPE_TEST_MAIN(TestOnnxIndexing)
#include "tst_onnx_indexing.moc"
