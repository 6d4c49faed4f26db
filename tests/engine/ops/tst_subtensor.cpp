// Subtensor (basic slicing and integer indexing) and IncSubtensor (inc/set): values against
// numpy's results written out as index arithmetic on 2x3x4 tensors, views, static and symbolic
// shapes, out-of-range messages, inferShape, gradients and R-ops in float32 and float64, inplace
// destroying its input, props through the registry.
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

const auto none = std::nullopt;

Tensor i64(std::int64_t v) {
  return Tensor::scalar(DType::Int64, static_cast<double>(v));
}
}  // namespace

class TestSubtensor : public QObject {
  Q_OBJECT

 private slots:
  void testSubtensorValues_data() { addFloatRows(); }
  void testSubtensorValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          const VarPtr& v = in[0];
          return std::vector<VarPtr>{
              subtensor(v, {Idx::slice(1, none), Idx::at(2)}),         // x[1:, 2]
              subtensor(v, {Idx::all(), Idx::slice(none, none, -1)}),  // x[:, ::-1]
              subtensor(
                  v, {Idx::at(-1), Idx::slice(0, 3, 2), Idx::slice(1, -1)}),  // x[-1, 0:3:2, 1:-1]
              select(v, 0, 0),                                                // x[0]
              slice(v, -1, -3, none, none),                                   // x[..., -3:]
              subtensor(v, {Idx::slice(5, 9)}),                               // x[5:9] (empty)
          };
        },
        {x});
    std::vector<double> e0, e1, e2, e3, e4;
    for (int k = 0; k < 4; ++k) e0.push_back(x.at({1, 2, k}));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) e1.push_back(x.at({i, 2 - j, k}));
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) e2.push_back(x.at({1, 2 * a, 1 + b}));
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) e3.push_back(x.at({0, j, k}));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 1; k < 4; ++k) e4.push_back(x.at({i, j, k}));
    QVERIFY(closeTo(out[0], values(dtype, {1, 4}, e0)));
    QVERIFY(closeTo(out[1], values(dtype, {2, 3, 4}, e1)));
    QVERIFY(closeTo(out[2], values(dtype, {2, 2}, e2)));
    QVERIFY(closeTo(out[3], values(dtype, {3, 4}, e3)));
    QVERIFY(closeTo(out[4], values(dtype, {2, 3, 3}, e4)));
    QCOMPARE(out[5].shape(), (Shape{0, 3, 4}));
  }

  void testSymbolicIndices() {
    const Tensor x = iota(DType::Float64, {2, 3, 4});
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      // x[:, i:j, k] and x[:, ::s]
      return std::vector<VarPtr>{
          subtensor(in[0], {Idx::all(), Idx::slice(in[1], in[2]), Idx::at(in[3])}),
          subtensor(in[0], {Idx::all(), Idx::slice(none, none, in[4])})};
    };
    auto out = evaluate(build, {x, i64(-2), i64(3), i64(-1), i64(-2)});
    std::vector<double> e0, e1;
    for (int i = 0; i < 2; ++i)
      for (int j = 1; j < 3; ++j) e0.push_back(x.at({i, j, 3}));
    for (int i = 0; i < 2; ++i)
      for (int j : {2, 0})
        for (int k = 0; k < 4; ++k) e1.push_back(x.at({i, j, k}));
    QVERIFY(closeTo(out[0], values(DType::Float64, {2, 2}, e0)));
    QVERIFY(closeTo(out[1], values(DType::Float64, {2, 2, 4}, e1)));
    TSCOPE_CHECK(checkInferShape(build, {x, i64(-2), i64(3), i64(-1), i64(-2)}));
    TSCOPE_CHECK(checkInferShape(build, {x, i64(-7), i64(9), i64(0), i64(3)}));
    TSCOPE_CHECK(checkInferShape(build, {x, i64(2), i64(1), i64(2), i64(-1)}));
  }

  void testSubtensorIsAView() {
    const Tensor x = iota(DType::Float32, {2, 3, 4});
    VarPtr v = symbol(DType::Float32, {2, 3, 4}, "x");
    VarPtr y = subtensor(v, {Idx::at(1), Idx::slice(none, none, 2)});
    QCOMPARE(y->type().shape(), (std::vector<std::int64_t>{2, 4}));
    Tensor out = performNode(y, {x})[0];
    QVERIFY(out.sharesStorageWith(x));
    QCOMPARE(out.at({1, 3}), x.at({1, 2, 3}));
    QCOMPARE(y->owner()->op().str(), std::string("Subtensor{1,::2}"));
  }

  void testStaticShapes() {
    VarPtr v = symbol(DType::Float32, {2, kUnknownDim, 4}, "x");
    QCOMPARE(
        subtensor(v, {Idx::slice(1, none), Idx::all(), Idx::slice(none, none, -3)})->type().shape(),
        (std::vector<std::int64_t>{1, kUnknownDim, 2}));
    QCOMPARE(subtensor(v, {Idx::at(0), Idx::slice(0, 2)})->type().shape(),
             (std::vector<std::int64_t>{kUnknownDim, 4}));
  }

  void testIndexOutOfRange() {
    VarPtr v = symbol(DType::Float32, {2, 3, 4}, "x");
    // A constant index against a known size: at build time.
    std::string msg = messageOf([&] { subtensor(v, {Idx::all(), Idx::at(3)}); });
    QVERIFY2(msg.find("index 3 is out of bounds for axis 1 with size 3") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { subtensor(v, {Idx::all(), Idx::all(), Idx::all(), Idx::at(0)}); });
    QVERIFY2(msg.find("4 indices for a 3-d input") != std::string::npos, msg.c_str());
    // At run time.
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{subtensor(in[0], {Idx::all(), Idx::all(), Idx::at(in[1])})};
    };
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {2, 3, 4}), i64(4)}); });
    QVERIFY2(msg.find("index 4 is out of bounds for axis 2 with size 4") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {2, 3, 4}), i64(-5)}); });
    QVERIFY2(msg.find("index -5 is out of bounds for axis 2 with size 4") != std::string::npos,
             msg.c_str());
    GraphBuilder stepped = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{subtensor(in[0], {Idx::slice(none, none, in[1])})};
    };
    msg = messageOf([&] { evaluate(stepped, {iota(DType::Float32, {2, 3, 4}), i64(0)}); });
    QVERIFY2(msg.find("the slice step on axis 0 is 0") != std::string::npos, msg.c_str());
    VarPtr f = symbol(DType::Float32, {}, "f");
    msg = messageOf([&] { select(v, 0, f); });
    QVERIFY2(msg.find("index input 0 ('f'): expected a 0-d integer") != std::string::npos,
             msg.c_str());
  }

  void testSubtensorInferShape() {
    const Tensor x = iota(DType::Float32, {2, 3, 4});
    TSCOPE_CHECK(checkInferShape(unary([](const VarPtr& v) {
                                   return subtensor(v, {Idx::slice(1, none), Idx::at(2)});
                                 }),
                                 {x}));
    TSCOPE_CHECK(checkInferShape(
        unary([](const VarPtr& v) {
          return subtensor(v, {Idx::at(-1), Idx::slice(0, 3, 2), Idx::slice(-2, 1, -1)});
        }),
        {x}));
    TSCOPE_CHECK(checkInferShape(
        unary([](const VarPtr& v) { return subtensor(v, {Idx::slice(-9, 7)}); }), {x}));
  }

  void testSubtensorGradRop_data() { addFloatRows(); }
  void testSubtensorGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 41);
    GraphBuilder constant = unary([](const VarPtr& v) {
      return subtensor(v, {Idx::slice(1, none), Idx::slice(none, none, -2), Idx::at(1)});
    });
    TSCOPE_CHECK(verifyGrad(constant, {x}));
    TSCOPE_CHECK(checkRopLop(constant, {x}));
    GraphBuilder symbolic = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{subtensor(in[0], {Idx::at(in[1]), Idx::slice(in[2], none)})};
    };
    TSCOPE_CHECK(verifyGrad(symbolic, {x, i64(-1), i64(1)}));
    TSCOPE_CHECK(checkRopLop(symbolic, {x, i64(0), i64(-2)}));
  }

  // --- IncSubtensor ------------------------------------------------------------------------------

  void testIncSetValues_data() { addFloatRows(); }
  void testIncSetValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    const Tensor y = iota(dtype, {1, 3, 2}, 1.0, 100.0);
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          const std::vector<Idx> idx{Idx::slice(1, none), Idx::all(),
                                     Idx::slice(none, none, 2)};  // x[1:, :, ::2]
          return std::vector<VarPtr>{
              incSubtensor(in[0], in[1], idx), setSubtensor(in[0], in[1], idx),
              setSubtensor(in[0], constant(-1.0, in[0]->type().dtype()), {Idx::at(0)}),
              incSubtensor(subtensor(in[0], {Idx::all(), Idx::at(1)}), in[2])};
        },
        {x, y, values(dtype, {4}, {1, 2, 3, 4})});
    std::vector<double> inc = x.toDoubles(), set = x.toDoubles(), zero = x.toDoubles(),
                        row = x.toDoubles();
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; k += 2) {
        const std::size_t flat = static_cast<std::size_t>(12 + j * 4 + k);
        inc[flat] += y.at({0, j, k / 2});
        set[flat] = y.at({0, j, k / 2});
      }
    for (int f = 0; f < 12; ++f) zero[static_cast<std::size_t>(f)] = -1;
    for (int i = 0; i < 2; ++i)  // x[:, 1] += [1, 2, 3, 4]: the row broadcasts over axis 0
      for (int k = 0; k < 4; ++k) row[static_cast<std::size_t>(i * 12 + 4 + k)] += k + 1;
    QVERIFY(closeTo(out[0], values(dtype, {2, 3, 4}, inc)));
    QVERIFY(closeTo(out[1], values(dtype, {2, 3, 4}, set)));
    QVERIFY(closeTo(out[2], values(dtype, {2, 3, 4}, zero)));
    QVERIFY(closeTo(out[3], values(dtype, {2, 3, 4}, row)));
  }

  void testIncSubtensorInplace() {
    auto [list, scalars] = IndexList::fromIdx({Idx::at(1)});
    VarPtr v = symbol(DType::Float32, {2, 3}, "x"), w = symbol(DType::Float32, {3}, "y");
    const Tensor y = values(DType::Float32, {3}, {10, 20, 30});
    // Not inplace: x is copied, unchanged.
    Tensor x = iota(DType::Float32, {2, 3});
    VarPtr copied = std::make_shared<IncSubtensor>(list, false)->operator()({v, w});
    Tensor out = performNode(copied, {x, y})[0];
    QVERIFY(!out.sharesStorageWith(x));
    QVERIFY(closeTo(x, iota(DType::Float32, {2, 3})));
    QVERIFY(closeTo(out, values(DType::Float32, {2, 3}, {0, 1, 2, 13, 24, 35})));
    QVERIFY(copied->owner()->op().destroyMap().empty());
    // Inplace: the output is x's buffer.
    auto inplace = std::make_shared<IncSubtensor>(list, true, true);
    QCOMPARE(inplace->destroyMap(), (DestroyMap{{0, {0}}}));
    QCOMPARE(inplace->str(), std::string("SetSubtensor{1,inplace}"));
    Tensor out2 = performNode(inplace->operator()({v, w}), {x, y})[0];
    QVERIFY(out2.sharesStorageWith(x));
    QVERIFY(closeTo(x, values(DType::Float32, {2, 3}, {0, 1, 2, 10, 20, 30})));
  }

  void testIncSubtensorInferShapeGradRop_data() { addFloatRows(); }
  void testIncSubtensorInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 5, 4}, 51);
    const Tensor y = randomTensor(dtype, {2, 4}, 52);  // x[:, 1:, 0]
    const Tensor z = randomTensor(dtype, {2, 3}, 56);  // x[:, ::-2, i]
    GraphBuilder inc = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{
          incSubtensor(in[0], in[1], {Idx::all(), Idx::slice(1, none), Idx::at(0)})};
    };
    GraphBuilder set = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{
          setSubtensor(in[0], in[1], {Idx::all(), Idx::slice(none, none, -2), Idx::at(in[2])})};
    };
    TSCOPE_CHECK(checkInferShape(inc, {x, y}));
    TSCOPE_CHECK(verifyGrad(inc, {x, y}));
    TSCOPE_CHECK(checkRopLop(inc, {x, y}));
    TSCOPE_CHECK(checkInferShape(set, {x, z, i64(2)}));
    TSCOPE_CHECK(verifyGrad(set, {x, z, i64(2)}));
    TSCOPE_CHECK(checkRopLop(set, {x, z, i64(-3)}));
    // y broadcast over the region: its gradient sums over the broadcast axes, also where the
    // broadcast happens only at run time (size 1 in an axis its type leaves unknown).
    GraphBuilder broadcast = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{incSubtensor(in[0], in[1], {Idx::slice(none, none, -1)}),
                                 setSubtensor(in[0], in[2], {Idx::slice(1, none)})};
    };
    const Tensor x3 = randomTensor(dtype, {2, 3, 4}, 57);
    const Tensor row = randomTensor(dtype, {4}, 53), col = randomTensor(dtype, {3, 1}, 54);
    TSCOPE_CHECK(verifyGrad(broadcast, {x3, row, col}));
    TSCOPE_CHECK(checkRopLop(broadcast, {x3, row, col}));
    // A broadcast that happens only at run time: y's type leaves its size-1 axis unknown.
    VarPtr xv = symbol(dtype, {2, 3, 4}, "x"), yv = symbol(dtype, {kUnknownDim, kUnknownDim}, "y");
    VarPtr gy = grad(sum(incSubtensor(xv, yv, {Idx::at(0)})), yv);
    auto g = evaluate({xv, yv}, {gy}, {x3, randomTensor(dtype, {1, 4}, 55)});
    QVERIFY(closeTo(g[0], Tensor::full(dtype, {1, 4}, 3.0)));  // each y element lands on 3 rows
  }

  void testIncSubtensorBadInputs() {
    VarPtr x = symbol(DType::Float32, {2, 3, 4}, "x");
    std::string msg = messageOf([&] {
      incSubtensor(x, symbol(DType::Float32, {3, 5}, "y"), {Idx::at(0)});
    });
    QVERIFY2(msg.find("input 1 ('y'): expected a tensor that broadcasts to the region x[0] of "
                      "shape (3, 4)") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { setSubtensor(x, symbol(DType::Float64, {4}, "d"), {Idx::at(0)}); });
    QVERIFY2(
        msg.find("dtype converts to x's float32 without loss, found TensorType(float64, (4,))") !=
            std::string::npos,
        msg.c_str());
    msg = messageOf([&] { incSubtensor(x, symbol(DType::Float32, {4}, "y")); });
    QVERIFY2(msg.find("incSubtensor: expected the result of subtensor") != std::string::npos,
             msg.c_str());
    // At run time: y does not broadcast to the region.
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{incSubtensor(in[0], in[1], {Idx::at(0)})};
    };
    msg = messageOf([&] {
      evaluate(build, {iota(DType::Float32, {2, 3, 4}), iota(DType::Float32, {2, 4})});
    });
    QVERIFY2(msg.find("cannot broadcast a value of shape (2, 4) to (3, 4)") != std::string::npos,
             msg.c_str());
  }

  void testPropsRoundTrip() {
    const OpRegistry& registry = defaultOpRegistry();
    VarPtr x = symbol(DType::Float32, {2, 3, 4}, "x");
    VarPtr i = symbol(DType::Int64, {}, "i");
    VarPtr sub = subtensor(x, {Idx::slice(1, i, -1), Idx::at(i), Idx::slice(none, none, i)});
    const Op& op = sub->owner()->op();
    QCOMPARE(op.str(), std::string("Subtensor{1:?:-1,?,::?}"));
    QCOMPARE(op.props().dump(),
             std::string(R"({"idx_list":[{"start":1,"step":-1,"stop":"?"},{"i":"?"},)"
                         R"({"start":null,"step":"?","stop":null}]})"));
    QVERIFY(registry.make("Subtensor", op.props())->equals(op));
    const OpPtr inc =
        std::make_shared<IncSubtensor>(static_cast<const Subtensor&>(op).indices(), true, true);
    QVERIFY(registry.make("IncSubtensor", inc->props())->equals(*inc));
    std::string msg = messageOf([&] {
      registry.make("Subtensor", {{"idx_list", {{{"i", 1.5}}}}});
    });
    QVERIFY2(msg.find("idx_list \"i\" must be null, an integer or \"?\", found 1.5") !=
                 std::string::npos,
             msg.c_str());
    msg = messageOf([&] {
      registry.make("Subtensor", {{"idx_list", {{{"start", 0}, {"step", 0}}}}});
    });
    QVERIFY2(msg.find("a slice step cannot be 0") != std::string::npos, msg.c_str());
    msg = messageOf([&] {
      registry.make("IncSubtensor", {{"idx_list", nlohmann::json::array()}, {"inplace", 1}});
    });
    QVERIFY2(msg.find("IncSubtensor: props \"inplace\" must be true or false") != std::string::npos,
             msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestSubtensor)
#include "tst_subtensor.moc"
