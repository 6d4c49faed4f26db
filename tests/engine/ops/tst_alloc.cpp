// Alloc (zeros, ones, full) and ARange: values against numpy's results written out by hand, static
// shapes from constants, symbolic sizes, inferShape, gradients (value summed over the broadcast
// axes; start and step of a float arange) and R-ops in float32 and float64, bad sizes, props.
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
void addFloatRows() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
}

Tensor i64(std::int64_t v) {
  return Tensor::scalar(DType::Int64, static_cast<double>(v));
}
}  // namespace

class TestAlloc : public QObject {
  Q_OBJECT

 private slots:
  void testAllocValues_data() { addFloatRows(); }
  void testAllocValues() {
    QFETCH(DType, dtype);
    const Tensor row = values(dtype, {4}, {1, 2, 3, 4});
    const Tensor col = values(dtype, {3, 1}, {5, 6, 7});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          const DType d = in[0]->type().dtype();
          return std::vector<VarPtr>{
              alloc(in[0], constantShape({2, 3, 4})),
              alloc(in[1], ShapeExpr{constantInt(2), shapeI(in[1], 0), constantInt(4)}),
              zeros({2, 3}, d), ones(ShapeExpr{shapeI(in[0], 0), constantInt(3)}, d),
              full(constantShape({3, 2}), 2.5, d)};
        },
        {row, col});
    std::vector<double> a, b;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) {
          a.push_back(k + 1);
          b.push_back(5 + j);
        }
    QVERIFY(closeTo(out[0], values(dtype, {2, 3, 4}, a)));
    QVERIFY(closeTo(out[1], values(dtype, {2, 3, 4}, b)));
    QVERIFY(closeTo(out[2], Tensor::zeros(dtype, {2, 3})));
    QVERIFY(closeTo(out[3], Tensor::full(dtype, {4, 3}, 1.0)));
    QVERIFY(closeTo(out[4], Tensor::full(dtype, {3, 2}, 2.5)));
  }

  void testAllocStaticShapes() {
    VarPtr n = symbol(DType::Int64, {}, "n");
    VarPtr v = symbol(DType::Float32, {4}, "v");
    // A constant size is static; a symbolic one takes the value's non-broadcast size.
    QCOMPARE(alloc(v, ShapeExpr{constantInt(2), n})->type().shape(),
             (std::vector<std::int64_t>{2, 4}));
    QCOMPARE(zeros(ShapeExpr{n, constantInt(3)}, DType::Int32)->type(),
             TensorType(DType::Int32, {kUnknownDim, 3}));
  }

  void testAllocInferShapeGradRop_data() { addFloatRows(); }
  void testAllocInferShapeGradRop() {
    QFETCH(DType, dtype);
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{alloc(in[0], ShapeExpr{in[1], constantInt(3), shapeI(in[0], 1)})};
    };
    const Tensor value = randomTensor(dtype, {3, 4}, 81);
    TSCOPE_CHECK(checkInferShape(build, {value, i64(2)}));
    TSCOPE_CHECK(verifyGrad(build, {value, i64(2)}));
    TSCOPE_CHECK(checkRopLop(build, {value, i64(2)}));
    // A broadcast value: the gradient sums over the stretched axes.
    GraphBuilder broadcast = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{alloc(in[0], constantShape({2, 3, 4})),
                                 alloc(in[1], constantShape({3, 2}))};
    };
    const Tensor col = randomTensor(dtype, {3, 1}, 82), scalar = Tensor::scalar(dtype, 0.75);
    TSCOPE_CHECK(verifyGrad(broadcast, {col, scalar}));
    TSCOPE_CHECK(checkRopLop(broadcast, {col, scalar}));
    // The same when the value's size-1 axis is unknown to its type (broadcast at run time).
    VarPtr v = symbol(dtype, {kUnknownDim, kUnknownDim}, "v");
    VarPtr g = grad(sum(alloc(v, constantShape({2, 3, 4}))), v);
    auto gv = evaluate({v}, {g}, {col});
    QVERIFY(closeTo(gv[0], Tensor::full(dtype, {3, 1}, 8.0)));
  }

  void testAllocBadInputs() {
    VarPtr v = symbol(DType::Float32, {3}, "v");
    std::string msg = messageOf([&] { alloc(v, constantShape({2, 4})); });
    QVERIFY2(
        msg.find("input 0 ('v'): expected a value that broadcasts to (2, 4)") != std::string::npos,
        msg.c_str());
    msg = messageOf([&] { alloc(v, constantShape({-1, 3})); });
    QVERIFY2(msg.find("expected a size >= 0, found -1") != std::string::npos, msg.c_str());
    msg = messageOf([&] { alloc(symbol(DType::Float32, {2, 3}, "m"), constantShape({3})); });
    QVERIFY2(msg.find("expected a value of at most 1 axes") != std::string::npos, msg.c_str());
    msg = messageOf([&] { alloc(v, ShapeExpr{constant(2.0, DType::Float32)}); });
    QVERIFY2(msg.find("input 1: expected a 0-d integer (the size of axis 0)") != std::string::npos,
             msg.c_str());
    // At run time.
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{alloc(in[0], ShapeExpr{in[1], constantInt(4)})};
    };
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {4}), i64(-2)}); });
    QVERIFY2(msg.find("the size of axis 0 is -2; sizes must be >= 0") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {3}), i64(2)}); });
    QVERIFY2(msg.find("cannot broadcast a value of shape (3) to (2, 4)") != std::string::npos ||
                 msg.find("cannot broadcast a value of shape (3,) to (2, 4)") != std::string::npos,
             msg.c_str());
  }

  // --- ARange ------------------------------------------------------------------------------------

  void testARangeValues() {
    auto out = evaluate(
        [](const std::vector<VarPtr>&) {
          return std::vector<VarPtr>{
              arange(constantInt(2), constantInt(11), constantInt(3)),
              arange(constantInt(5), constantInt(-4), constantInt(-2)),
              arange(constant(0.5, DType::Float64), constant(2.0, DType::Float64),
                     constant(0.4, DType::Float64)),
              arange(constantInt(0), constantInt(3), constantInt(1), DType::Float32),
              arange(constantInt(4), constantInt(1), constantInt(1))};
        },
        {});
    QVERIFY(closeTo(out[0], values(DType::Int64, {3}, {2, 5, 8})));
    QVERIFY(closeTo(out[1], values(DType::Int64, {5}, {5, 3, 1, -1, -3})));
    QVERIFY(closeTo(out[2], values(DType::Float64, {4}, {0.5, 0.9, 1.3, 1.7})));
    QVERIFY(closeTo(out[3], values(DType::Float32, {3}, {0, 1, 2})));
    QCOMPARE(out[4].shape(), (Shape{0}));
  }

  void testARangeTypes() {
    QCOMPARE(arange(constantInt(2), constantInt(11), constantInt(3))->type(),
             TensorType(DType::Int64, {3}));
    VarPtr n = symbol(DType::Int32, {}, "n");
    QCOMPARE(arange(n)->type(),
             TensorType(DType::Int64, {kUnknownDim}));  // int32 with int64 constants
    VarPtr f = symbol(DType::Float32, {}, "f");
    QCOMPARE(
        arange(constant(0.0, DType::Float32), f, constant(0.5, DType::Float32))->type().dtype(),
        DType::Float32);
  }

  void testARangeSymbolic() {
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{arange(in[0], in[1], in[2])};
    };
    for (auto [a, b, c] : {std::tuple{2, 11, 3}, {5, -4, -2}, {3, 3, 1}, {7, 2, 1}, {-3, 8, 4}}) {
      auto out = evaluate(build, {i64(a), i64(b), i64(c)});
      std::vector<double> expected;
      for (std::int64_t v = a; c > 0 ? v < b : v > b; v += c)
        expected.push_back(static_cast<double>(v));
      QVERIFY(closeTo(
          out[0], values(DType::Int64, {static_cast<std::int64_t>(expected.size())}, expected)));
      TSCOPE_CHECK(checkInferShape(build, {i64(a), i64(b), i64(c)}));
    }
    const Tensor s = Tensor::scalar(DType::Float64, 0.25), e = Tensor::scalar(DType::Float64, 2.0),
                 st = Tensor::scalar(DType::Float64, 0.5);
    TSCOPE_CHECK(checkInferShape(build, {s, e, st}));
    TSCOPE_CHECK(checkInferShape(build, {e, s, Tensor::scalar(DType::Float64, -0.3)}));
  }

  void testARangeGrad_data() { addFloatRows(); }
  void testARangeGrad() {
    QFETCH(DType, dtype);
    // out[i] = start + i * step; stop only sets the length (disconnected).
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{arange(in[0], in[1], in[2])};
    };
    TSCOPE_CHECK(verifyGrad(build, {Tensor::scalar(dtype, 0.25), Tensor::scalar(dtype, 2.0),
                                    Tensor::scalar(dtype, 0.5)}));
    VarPtr start = symbol(DType::Int64, {}, "start");
    VarPtr r = arange(start, constantInt(5), constantInt(1));
    QVERIFY(r->owner()->op().connectionPattern(*r->owner())[1] == std::vector<bool>{false});
  }

  void testARangeBadInputs() {
    std::string msg = messageOf([&] { arange(constantInt(0), constantInt(3), constantInt(0)); });
    QVERIFY2(msg.find("input 2: expected a non-zero step") != std::string::npos, msg.c_str());
    msg = messageOf([&] { arange(symbol(DType::Float32, {2}, "v")); });
    QVERIFY2(msg.find("expected a 0-d number (stop)") != std::string::npos, msg.c_str());
    GraphBuilder ints = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{arange(in[0], in[1], in[2])};
    };
    msg = messageOf([&] { evaluate(ints, {i64(0), i64(3), i64(0)}); });
    QVERIFY2(msg.find("the step is 0") != std::string::npos, msg.c_str());
  }

  void testPropsRoundTrip() {
    const OpRegistry& registry = defaultOpRegistry();
    const OpPtr ops[] = {std::make_shared<Alloc>(), std::make_shared<ARange>(DType::Float32)};
    for (const OpPtr& op : ops)
      QVERIFY2(registry.make(op->name(), op->props())->equals(*op), op->str().c_str());
    std::string msg = messageOf([&] { registry.make("ARange", {{"dtype", "bool"}}); });
    QVERIFY2(msg.find("ARange: props \"dtype\" cannot be bool") != std::string::npos, msg.c_str());
    msg = messageOf([&] { registry.make("ARange", nlohmann::json::object()); });
    QVERIFY2(msg.find("ARange: props need \"dtype\"") != std::string::npos, msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestAlloc)
#include "tst_alloc.moc"
