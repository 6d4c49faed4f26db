// DimShuffle (transpose, expandDims, squeeze), Shape, MakeVector and SpecifyShape: values against
// loops on 2x3x4 tensors, views sharing storage, inferShape, gradients and R-ops in float32 and
// float64, props through the registry, and the messages for bad inputs.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/shape/shape.h"
#include "shape_test_support.h"
#include "test_main.h"

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {
constexpr int X = DimShuffle::kNewAxis;

void addFloatRows() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
}
}  // namespace

class TestShapeDimShuffle : public QObject {
  Q_OBJECT

 private slots:
  void testDimShuffleValues_data() { addFloatRows(); }
  void testDimShuffleValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    // out[k, 0, i, j] = x[i, j, k]
    auto out = evaluate(unary([](const VarPtr& v) { return dimshuffle(v, {2, X, 0, 1}); }), {x});
    std::vector<double> expected;
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) expected.push_back(x.at({i, j, k}));
    QVERIFY(closeTo(out[0], values(dtype, {4, 1, 2, 3}, expected)));
  }

  void testDimShuffleIsAView() {
    const Tensor x = iota(DType::Float32, {2, 1, 4});
    VarPtr v = symbol(DType::Float32, {2, 1, 4}, "x");
    VarPtr y = dimshuffle(v, {2, X, 0});  // drops the size-1 axis 1, adds one
    Tensor out = performNode(y, {x})[0];
    QVERIFY(out.sharesStorageWith(x));
    QCOMPARE(out.shape(), (Shape{4, 1, 2}));
    QCOMPARE(out.at({3, 0, 1}), x.at({1, 0, 3}));
    QCOMPARE(y->owner()->op().viewMap(), (ViewMap{{0, {0}}}));
  }

  void testTransposeExpandSqueeze() {
    const Tensor x = iota(DType::Float64, {2, 3, 4});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          const VarPtr& v = in[0];
          return std::vector<VarPtr>{transpose(v), transpose(v, {1, -1, 0}), expandDims(v, -1),
                                     expandDims(v, 0), squeeze(expandDims(v, 1), 1)};
        },
        {x});
    QCOMPARE(out[0].shape(), (Shape{4, 3, 2}));
    QCOMPARE(out[0].at({3, 1, 0}), x.at({0, 1, 3}));
    QCOMPARE(out[1].shape(), (Shape{3, 4, 2}));
    QCOMPARE(out[1].at({2, 3, 1}), x.at({1, 2, 3}));
    QCOMPARE(out[2].shape(), (Shape{2, 3, 4, 1}));
    QCOMPARE(out[3].shape(), (Shape{1, 2, 3, 4}));
    QVERIFY(closeTo(out[4], x));
  }

  void testSqueezeUnknownAxisChecksAtRunTime() {
    // The type does not know axis 1 has size 1: squeeze asserts it (SpecifyShape) and fails on 3.
    GraphBuilder build = unary([](const VarPtr& v) { return squeeze(v, 1); });
    auto ok = evaluate(build, {iota(DType::Float32, {2, 1, 4})});
    QCOMPARE(ok[0].shape(), (Shape{2, 4}));
    const std::string msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {2, 3, 4})}); });
    QVERIFY2(msg.find("expected shape (?, 1, ?), found (2, 3, 4)") != std::string::npos,
             msg.c_str());
    // All static size-1 axes.
    VarPtr v = symbol(DType::Float32, {1, 3, 1}, "v");
    QCOMPARE(squeeze(v)->type().shape(), (std::vector<std::int64_t>{3}));
  }

  void testDimShuffleInferShape() {
    const Tensor x = iota(DType::Float32, {2, 3, 4});
    TSCOPE_CHECK(checkInferShape(unary([](const VarPtr& v) {
                                   return dimshuffle(v, {2, X, 0, 1});
                                 }),
                                 {x}));
    TSCOPE_CHECK(checkInferShape(unary([](const VarPtr& v) { return transpose(v); }), {x}));
    TSCOPE_CHECK(checkInferShape(unary([](const VarPtr& v) {
                                   return dimshuffle(v, {2, 0});
                                 }),
                                 {iota(DType::Float32, {2, 1, 4})}));
  }

  void testDimShuffleGrad_data() { addFloatRows(); }
  void testDimShuffleGrad() {
    QFETCH(DType, dtype);
    TSCOPE_CHECK(verifyGrad(unary([](const VarPtr& v) {
                              return dimshuffle(v, {2, X, 0, 1});
                            }),
                            {randomTensor(dtype, {2, 3, 4}, 1)}));
    // A dropped axis comes back in the gradient.
    TSCOPE_CHECK(verifyGrad(unary([](const VarPtr& v) {
                              return dimshuffle(v, {2, 0});
                            }),
                            {randomTensor(dtype, {2, 1, 4}, 2)}));
    TSCOPE_CHECK(verifyGrad(unary([](const VarPtr& v) { return squeeze(expandDims(v, 0), 0); }),
                            {randomTensor(dtype, {2, 3}, 3)}));
  }

  void testDimShuffleRop_data() { addFloatRows(); }
  void testDimShuffleRop() {
    QFETCH(DType, dtype);
    TSCOPE_CHECK(checkRopLop(unary([](const VarPtr& v) {
                               return dimshuffle(v, {1, X, 2, 0});
                             }),
                             {randomTensor(dtype, {2, 3, 4}, 4)}));
    TSCOPE_CHECK(checkRopLop(unary([](const VarPtr& v) {
                               return dimshuffle(v, {2, 0});
                             }),
                             {randomTensor(dtype, {2, 1, 4}, 5)}));
  }

  void testDimShuffleBadInputs() {
    VarPtr v = symbol(DType::Float32, {2, 3, 4}, "x");
    std::string msg = messageOf([&] {
      std::make_shared<DimShuffle>(2, std::vector<int>{1, 0})->operator()({v});
    });
    QVERIFY2(msg.find("expected a 2-d tensor, found TensorType(float32, (2, 3, 4))") !=
                 std::string::npos,
             msg.c_str());
    msg = messageOf([&] { dimshuffle(v, {0, 2}); });
    QVERIFY2(msg.find("axis 1 of static size 1") != std::string::npos &&
                 msg.find("(2, 3, 4)") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { transpose(v, {0, 0, 1}); });
    QVERIFY2(msg.find("out of range or repeated") != std::string::npos, msg.c_str());
    msg = messageOf([&] { squeeze(v, 2); });
    QVERIFY2(msg.find("has size 4, expected 1") != std::string::npos, msg.c_str());
    msg = messageOf([&] { expandDims(v, 5); });
    QVERIFY2(msg.find("axis 5 is out of range [-4, 3]") != std::string::npos, msg.c_str());
  }

  // --- Shape and MakeVector ----------------------------------------------------------------------

  void testShapeVector() {
    const Tensor x = iota(DType::Float32, {2, 3, 4});
    auto out = evaluate(unary([](const VarPtr& v) { return shapeVector(v); }), {x});
    QVERIFY(closeTo(out[0], values(DType::Int64, {3}, {2, 3, 4})));
    TSCOPE_CHECK(checkInferShape(unary([](const VarPtr& v) { return shapeVector(v); }), {x}));
    // Shape carries no gradient: the cost below depends on x only through its shape.
    VarPtr v = symbol(DType::Float64, {kUnknownDim, 3}, "x");
    GradOptions ignore;
    ignore.disconnected = DisconnectedPolicy::Ignore;
    VarPtr g = grad(sum(cast(shapeVector(v), DType::Float64)), v, ignore);
    auto gv = evaluate({v}, {g}, {iota(DType::Float64, {2, 3})});
    QVERIFY(closeTo(gv[0], Tensor::zeros(DType::Float64, {2, 3})));
  }

  void testMakeVector_data() { addFloatRows(); }
  void testMakeVector() {
    QFETCH(DType, dtype);
    const Tensor a = Tensor::scalar(dtype, 1.5), b = Tensor::scalar(dtype, -2.0);
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{makeVector({in[0], in[1], in[0]})};
    };
    auto out = evaluate(build, {a, b});
    QVERIFY(closeTo(out[0], values(dtype, {3}, {1.5, -2.0, 1.5})));
    TSCOPE_CHECK(checkInferShape(build, {a, b}));
    TSCOPE_CHECK(verifyGrad(build, {a, b}));
    TSCOPE_CHECK(checkRopLop(build, {a, b}));
    // Integer scalars widen to the vector's dtype; the static length is the input count.
    VarPtr i = symbol(DType::Int32, {}, "i");
    VarPtr vec = makeVector({i, constantInt(7)});
    QCOMPARE(vec->type(), TensorType(DType::Int64, {2}));
    auto iv = evaluate({i}, {vec}, {Tensor::scalar(DType::Int32, -3)});
    QVERIFY(closeTo(iv[0], values(DType::Int64, {2}, {-3, 7})));
  }

  void testMakeVectorBadInputs() {
    VarPtr m = symbol(DType::Float64, {2}, "m");
    std::string msg = messageOf([&] { makeVector({m}); });
    QVERIFY2(msg.find("input 0 ('m'): expected a 0-d scalar") != std::string::npos, msg.c_str());
    VarPtr d = symbol(DType::Float64, {}, "d");
    msg = messageOf([&] { makeVector({d}, DType::Int64); });
    QVERIFY2(msg.find("converts to int64 without loss, found TensorType(float64, ())") !=
                 std::string::npos,
             msg.c_str());
  }

  // --- SpecifyShape ------------------------------------------------------------------------------

  void testSpecifyShape_data() { addFloatRows(); }
  void testSpecifyShape() {
    QFETCH(DType, dtype);
    VarPtr v = symbol(dtype, {kUnknownDim, kUnknownDim, kUnknownDim}, "x");
    VarPtr y = specifyShape(v, std::vector<std::int64_t>{2, -1, 4});
    QCOMPARE(y->type().shape(), (std::vector<std::int64_t>{2, kUnknownDim, 4}));
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 9);
    Tensor out = performNode(y, {x, Tensor(), Tensor(), Tensor()})[0];
    QVERIFY(out.sharesStorageWith(x));
    const std::string msg = messageOf([&] {
      evaluate({v}, {y}, {randomTensor(dtype, {2, 3, 5}, 9)});
    });
    QVERIFY2(msg.find("expected shape (2, ?, 4), found (2, 3, 5)") != std::string::npos,
             msg.c_str());

    GraphBuilder build = unary([](const VarPtr& in) {
      return specifyShape(in, std::vector<std::int64_t>{2, -1, 4});
    });
    TSCOPE_CHECK(checkInferShape(build, {x}));
    TSCOPE_CHECK(verifyGrad(build, {x}));
    TSCOPE_CHECK(checkRopLop(build, {x}));
    // A symbolic size: checked against the runtime value.
    VarPtr n = symbol(DType::Int64, {}, "n");
    VarPtr z = specifyShape(v, ShapeExpr{n, constantInt(-1), constantInt(-1)});
    auto zv = evaluate({v, n}, {z}, {x, Tensor::scalar(DType::Int64, 2)});
    QVERIFY(closeTo(zv[0], x));
    const std::string msg2 = messageOf([&] {
      evaluate({v, n}, {z}, {x, Tensor::scalar(DType::Int64, 5)});
    });
    QVERIFY2(msg2.find("expected shape (5, ?, ?), found (2, 3, 4)") != std::string::npos,
             msg2.c_str());
    TSCOPE_CHECK(checkInferShape(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{
              specifyShape(in[0], ShapeExpr{in[1], constantInt(-1), constantInt(-1)})};
        },
        {x, Tensor::scalar(DType::Int64, 2)}));
  }

  void testSpecifyShapeStaticMismatch() {
    VarPtr v = symbol(DType::Float32, {2, 3}, "x");
    const std::string msg = messageOf([&] { specifyShape(v, std::vector<std::int64_t>{2, 4}); });
    QVERIFY2(msg.find("input 0 ('x'): expected a tensor of shape (2, 4), found TensorType(float32, "
                      "(2, 3))") != std::string::npos,
             msg.c_str());
    const std::string msg2 = messageOf([&] { specifyShape(v, std::vector<std::int64_t>{2}); });
    QVERIFY2(msg2.find("expected 2 sizes") != std::string::npos, msg2.c_str());
  }

  // --- Props -------------------------------------------------------------------------------------

  void testPropsRoundTrip() {
    const OpRegistry& registry = defaultOpRegistry();
    const OpPtr ops[] = {std::make_shared<DimShuffle>(3, std::vector<int>{2, X, 0, 1}),
                         std::make_shared<ShapeOp>(), std::make_shared<MakeVector>(DType::Float32),
                         std::make_shared<SpecifyShape>()};
    for (const OpPtr& op : ops) {
      OpPtr back = registry.make(op->name(), op->props());
      QVERIFY2(back->equals(*op), op->str().c_str());
    }
    std::string msg = messageOf([&] { registry.make("MakeVector", {{"dtype", "float128"}}); });
    QVERIFY2(msg.find("MakeVector: props \"dtype\" must be a dtype name") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { registry.make("Shape", {{"axis", 1}}); });
    QVERIFY2(msg.find("Shape: unknown prop \"axis\"") != std::string::npos, msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestShapeDimShuffle)
#include "tst_shape_dimshuffle.moc"
