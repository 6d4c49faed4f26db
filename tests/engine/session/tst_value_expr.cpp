// The debugger's value language: slices to print and edits to apply, with clear refusals.

#include "engine/io/npy.h"
#include "engine/session/value_expr.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <cmath>

using namespace tscope::engine;
using namespace tscope::engine::session;

namespace {

Tensor iota(DType dtype, Shape shape) {
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::fromDoubles(dtype, std::move(shape), v);
}

template <class F>
QString refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestValueExpr : public QObject {
  Q_OBJECT
 private slots:
  void splitsNames() {
    QCOMPARE(splitSliceSuffix("h1[0:2, :]").first, std::string("h1"));
    QCOMPARE(splitSliceSuffix("h1[0:2, :]").second, std::string("[0:2, :]"));
    QCOMPARE(splitSliceSuffix(" node:4.1 ").first, std::string("node:4.1"));
    QVERIFY(splitSliceSuffix("x").second.empty());
  }

  void slices() {
    const Tensor t = iota(DType::Float32, {3, 4});
    const Tensor rows = applySlice(t, parseSlice("[0:2, :]"));
    QCOMPARE(rows.shape(), (Shape{2, 4}));
    QCOMPARE(rows.at({1, 3}), 7.0);
    const Tensor col = applySlice(t, parseSlice("[:, -1]"));
    QCOMPARE(col.shape(), (Shape{3}));
    QCOMPARE(col.at({2}), 11.0);
    const Tensor stepped = applySlice(t, parseSlice("[::2, 1::2]"));
    QCOMPARE(stepped.shape(), (Shape{2, 2}));
    QCOMPARE(stepped.at({1, 1}), 11.0);
    const Tensor reversed = applySlice(t, parseSlice("[::-1]"));
    QCOMPARE(reversed.at({0, 0}), 8.0);
    QCOMPARE(applySlice(t, parseSlice("[]")).shape(), t.shape());
  }

  void badSlicesAreRefused() {
    const Tensor t = iota(DType::Float32, {3, 4});
    QVERIFY(refusal([&] { parseSlice("0:2"); }).contains("in brackets"));
    QVERIFY(refusal([&] { parseSlice("[a:2]"); }).contains("found 'a'"));
    QVERIFY(refusal([&] { parseSlice("[::0]"); }).contains("cannot be 0"));
    QVERIFY(refusal([&] { parseSlice("[1:2:3:4]"); }).contains("start:stop:step"));
    QVERIFY(refusal([&] { applySlice(t, parseSlice("[0, 0, 0]")); }).contains("3 axes"));
    QVERIFY(refusal([&] { applySlice(t, parseSlice("[5]")); }).contains("size 3"));
  }

  void edits() {
    const Tensor t = iota(DType::Float32, {2, 3});
    const Tensor z = applyValueEdit(t, parseValueEdit("zeros"));
    QCOMPARE(z.shape(), t.shape());
    QCOMPARE(z.at({1, 2}), 0.0);
    QCOMPARE(applyValueEdit(t, parseValueEdit("scale 2")).at({1, 2}), 10.0);
    QCOMPARE(applyValueEdit(t, parseValueEdit("fill -1.5")).at({0, 0}), -1.5);
    const Tensor n = applyValueEdit(t, parseValueEdit("nan@1,2"));
    QVERIFY(std::isnan(n.at({1, 2})));
    QCOMPARE(n.at({1, 1}), 4.0);
    QCOMPARE(t.at({1, 2}), 5.0);  // the original is unchanged
    QVERIFY(std::isinf(applyValueEdit(t, parseValueEdit("-inf@0,0")).at({0, 0})));
    QVERIFY(applyValueEdit(t, parseValueEdit("-inf@0,0")).at({0, 0}) < 0);
    const Tensor s = Tensor::scalar(DType::Float64, 3);
    QVERIFY(std::isnan(applyValueEdit(s, parseValueEdit("nan@")).item()));
  }

  void editsFromFiles() {
    QTemporaryDir dir;
    const Tensor t = iota(DType::Float32, {2, 3});
    const std::string same = dir.filePath("same.npy").toStdString();
    io::saveNpy(applyValueEdit(t, parseValueEdit("scale 3")), same);
    QCOMPARE(applyValueEdit(t, parseValueEdit(same)).at({1, 0}), 9.0);
    // float64 values that are exact in float32 convert; others are refused.
    const std::string exact = dir.filePath("exact.npy").toStdString();
    io::saveNpy(iota(DType::Float64, {2, 3}), exact);
    QCOMPARE(applyValueEdit(t, parseValueEdit(exact)).dtype(), DType::Float32);
    const std::string inexact = dir.filePath("inexact.npy").toStdString();
    io::saveNpy(Tensor::full(DType::Float64, {2, 3}, 0.1), inexact);
    QVERIFY(refusal([&] { applyValueEdit(t, parseValueEdit(inexact)); }).contains("exactly"));
    const std::string wrong = dir.filePath("wrong.npy").toStdString();
    io::saveNpy(iota(DType::Float32, {3, 2}), wrong);
    QVERIFY(refusal([&] { applyValueEdit(t, parseValueEdit(wrong)); }).contains("(3, 2)"));
  }

  void badEditsAreRefused() {
    const Tensor t = iota(DType::Float32, {2, 3});
    const Tensor i = iota(DType::Int32, {2, 3});
    QVERIFY(refusal([&] { parseValueEdit("ones"); }).contains("found 'ones'"));
    QVERIFY(refusal([&] { parseValueEdit("scale x"); }).contains("scale K"));
    QVERIFY(refusal([&] { parseValueEdit("nan@1,b"); }).contains("found 'b'"));
    QVERIFY(refusal([&] { applyValueEdit(i, parseValueEdit("nan@0,0")); }).contains("int32"));
    QVERIFY(refusal([&] { applyValueEdit(t, parseValueEdit("nan@1")); }).contains("1 axes"));
    QVERIFY(refusal([&] { applyValueEdit(t, parseValueEdit("nan@2,0")); }).contains("outside"));
  }
};

TSCOPE_TEST_MAIN(TestValueExpr)
#include "tst_value_expr.moc"
