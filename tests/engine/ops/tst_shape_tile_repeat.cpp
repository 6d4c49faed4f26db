// Tile and Repeat (numpy semantics): values against loops on 2x3x4 tensors, padding of reps and
// of x's rank, per-element repeat counts, inferShape, gradients (summed over the copies) and R-ops
// in float32 and float64, bad inputs, props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/shape/shape.h"
#include "shape_test_support.h"
#include "test_main.h"

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {
void addFloatRows() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
}
}  // namespace

class TestShapeTileRepeat : public QObject {
  Q_OBJECT

 private slots:
  void testTileValues_data() { addFloatRows(); }
  void testTileValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{tile(in[0], {2, 1, 3}), tile(in[0], {2}),
                                     tile(in[0], {2, 1, 1, 1})};
        },
        {x});
    QCOMPARE(out[0].shape(), (Shape{4, 3, 12}));
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 12; ++k)
          QCOMPARE(out[0].at({i, j, k}), x.at({i % 2, j, k % 4}));
    // A short reps pads with leading 1s: tiles the last axis.
    QCOMPARE(out[1].shape(), (Shape{2, 3, 8}));
    QCOMPARE(out[1].at({1, 2, 6}), x.at({1, 2, 2}));
    // A long reps gives x a leading axis.
    QCOMPARE(out[2].shape(), (Shape{2, 2, 3, 4}));
    QCOMPARE(out[2].at({1, 1, 2, 3}), x.at({1, 2, 3}));
    // A strided input.
    VarPtr v = symbol(dtype, {4, 3, 2}, "x");
    const Tensor xt = x.transpose();
    Tensor t = performNode(tile(v, {1, 2, 1}), {xt})[0];
    QCOMPARE(t.shape(), (Shape{4, 6, 2}));
    QCOMPARE(t.at({3, 4, 1}), xt.at({3, 1, 1}));
  }

  void testTileInferShapeGradRop_data() { addFloatRows(); }
  void testTileInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 91);
    for (const std::vector<std::int64_t>& reps :
         {std::vector<std::int64_t>{2, 1, 3}, std::vector<std::int64_t>{3},
          std::vector<std::int64_t>{2, 1, 1, 2}, std::vector<std::int64_t>{1, 0, 1}}) {
      GraphBuilder build = [reps](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{tile(in[0], reps)};
      };
      TSCOPE_CHECK(checkInferShape(build, {x}));
      TSCOPE_CHECK(verifyGrad(build, {x}));
      TSCOPE_CHECK(checkRopLop(build, {x}));
    }
  }

  void testRepeatValues_data() { addFloatRows(); }
  void testRepeatValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{repeat(in[0], 2, 1),
                                     repeat(in[0], std::vector<std::int64_t>{1, 0, 3}, 1),
                                     repeat(in[0], 2), repeat(in[0], 3, -1)};
        },
        {x});
    QCOMPARE(out[0].shape(), (Shape{2, 6, 4}));
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 6; ++j)
        for (std::int64_t k = 0; k < 4; ++k) QCOMPARE(out[0].at({i, j, k}), x.at({i, j / 2, k}));
    // counts 1, 0, 3: rows 0, 2, 2, 2.
    QCOMPARE(out[1].shape(), (Shape{2, 4, 4}));
    const std::int64_t from[] = {0, 2, 2, 2};
    for (std::int64_t j = 0; j < 4; ++j) QCOMPARE(out[1].at({1, j, 3}), x.at({1, from[j], 3}));
    // No axis: the flattened elements, each twice.
    std::vector<double> flat;
    for (double v : x.toDoubles()) flat.insert(flat.end(), 2, v);
    QVERIFY(closeTo(out[2], values(dtype, {48}, flat)));
    QCOMPARE(out[3].shape(), (Shape{2, 3, 12}));
    QCOMPARE(out[3].at({1, 2, 11}), x.at({1, 2, 3}));
  }

  void testRepeatInferShapeGradRop_data() { addFloatRows(); }
  void testRepeatInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 92);
    const GraphBuilder builds[] = {
        [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{repeat(in[0], 3, 1)}; },
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{repeat(in[0], std::vector<std::int64_t>{2, 0, 1}, 1)};
        },
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{repeat(in[0], std::vector<std::int64_t>{1, 3}, 0)};
        },
        [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{repeat(in[0], 2)}; },
    };
    for (const GraphBuilder& build : builds) {
      TSCOPE_CHECK(checkInferShape(build, {x}));
      TSCOPE_CHECK(verifyGrad(build, {x}));
      TSCOPE_CHECK(checkRopLop(build, {x}));
    }
  }

  void testBadInputs() {
    VarPtr v = symbol(DType::Float32, {2, 3}, "x");
    std::string msg = messageOf([&] { repeat(v, std::vector<std::int64_t>{1, 2}, 1); });
    QVERIFY2(msg.find("input 0 ('x'): expected a tensor with 2 elements on axis 1 (one per repeat "
                      "count), found "
                      "TensorType(float32, (2, 3))") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { repeat(v, 2, 2); });
    QVERIFY2(msg.find("axis 2 is out of range") != std::string::npos, msg.c_str());
    msg = messageOf([&] { tile(v, {-1}); });
    QVERIFY2(msg.find("each rep must be in 0..2^31, found -1") != std::string::npos, msg.c_str());
    // Per-element counts against an unknown size: checked at run time.
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{repeat(in[0], std::vector<std::int64_t>{1, 2}, 1)};
    };
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {2, 3})}); });
    QVERIFY2(msg.find("expected 2 elements on axis 1, found shape (2, 3)") != std::string::npos,
             msg.c_str());
  }

  void testPropsRoundTrip() {
    const OpRegistry& registry = defaultOpRegistry();
    const OpPtr ops[] = {std::make_shared<Tile>(std::vector<std::int64_t>{2, 1, 3}),
                         std::make_shared<Repeat>(std::vector<std::int64_t>{1, 0, 2}, 1)};
    for (const OpPtr& op : ops)
      QVERIFY2(registry.make(op->name(), op->props())->equals(*op), op->str().c_str());
    QCOMPARE(ops[0]->str(), std::string("Tile{reps=[2,1,3]}"));
    std::string msg = messageOf([&] { registry.make("Repeat", {{"repeats", {2}}, {"axis", 99}}); });
    QVERIFY2(msg.find("Repeat: props \"axis\" must be an integer in [0, 63], found 99") !=
                 std::string::npos,
             msg.c_str());
    msg = messageOf([&] { registry.make("Tile", {{"reps", "2"}}); });
    QVERIFY2(msg.find("Tile: props \"reps\" must be an array") != std::string::npos, msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestShapeTileRepeat)
#include "tst_shape_tile_repeat.moc"
