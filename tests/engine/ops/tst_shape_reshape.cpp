// Reshape and flatten, Join (concatenate, stack) and Split: values against numpy's results
// written out by hand, views sharing storage, static shapes from constant and MakeVector shapes,
// inferShape with -1 and symbolic entries, gradients and R-ops in float32 and float64, props, and
// the messages for sizes that do not fit.
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

class TestShapeReshape : public QObject {
  Q_OBJECT

 private slots:
  // --- Reshape -----------------------------------------------------------------------------------

  void testReshapeValues_data() { addFloatRows(); }
  void testReshapeValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          const VarPtr& v = in[0];
          return std::vector<VarPtr>{
              reshape(v, std::vector<std::int64_t>{4, -1}), flatten(v), flatten(v, 2),
              reshape(v, ShapeExpr{shapeI(v, 2), constantInt(-1), shapeI(v, 0)})};
        },
        {x});
    // Row-major order is unchanged: element k of every result is k.
    QVERIFY(closeTo(out[0], iota(dtype, {4, 6})));
    QVERIFY(closeTo(out[1], iota(dtype, {24})));
    QVERIFY(closeTo(out[2], iota(dtype, {2, 12})));
    QVERIFY(closeTo(out[3], iota(dtype, {4, 3, 2})));
  }

  void testReshapeViewOrCopy() {
    const Tensor x = iota(DType::Float32, {2, 3, 4});
    VarPtr v = symbol(DType::Float32, {kUnknownDim, kUnknownDim, kUnknownDim}, "x");
    VarPtr y = reshape(v, std::vector<std::int64_t>{6, 4});
    Tensor view = performNode(y, {x, Tensor()})[0];
    QVERIFY(view.sharesStorageWith(x));
    QCOMPARE(view.shape(), (Shape{6, 4}));
    // A transposed (non-contiguous) input is copied, in the transposed row-major order.
    const Tensor xt = x.transpose();  // (4, 3, 2)
    Tensor copy = performNode(y, {xt, Tensor()})[0];
    QVERIFY(!copy.sharesStorageWith(x));
    QVERIFY(closeTo(copy, xt.contiguous().reshape({6, 4})));
    QCOMPARE(copy.at({0, 1}), x.at({1, 0, 0}));
    // Note [Reshape views]: a non-contiguous input whose axes split uniformly stays a view: columns
    // 1..2 of each row of a (2, 3, 4) tensor (row step 4), as (2, 3, 2, 1) then (3, 2, 2)...
    const Tensor cols = x.slice(2, 1, 3);  // (2, 3, 2), strides (12, 4, 1)
    VarPtr c = symbol(DType::Float32, {kUnknownDim, kUnknownDim, kUnknownDim}, "c");
    Tensor split =
        performNode(reshape(c, std::vector<std::int64_t>{2, 3, 2, 1}), {cols, Tensor()})[0];
    QVERIFY(split.sharesStorageWith(x));
    QVERIFY(closeTo(split, cols.contiguous().reshape({2, 3, 2, 1})));
    Tensor merged = performNode(reshape(c, std::vector<std::int64_t>{6, 2}), {cols, Tensor()})[0];
    QVERIFY(merged.sharesStorageWith(x));  // rows 12 apart per batch, 4 apart within: uniform
    QVERIFY(closeTo(merged, cols.contiguous().reshape({6, 2})));
    // ...but merging a row with its columns is not (the columns are 2 of every 4): a copy.
    Tensor flat = performNode(reshape(c, std::vector<std::int64_t>{12}), {cols, Tensor()})[0];
    QVERIFY(!flat.sharesStorageWith(x));
    QVERIFY(closeTo(flat, cols.contiguous().reshape({12})));
  }

  void testReshapeStaticShapes() {
    VarPtr v = symbol(DType::Float32, {2, 3, 4}, "x");
    QCOMPARE(reshape(v, std::vector<std::int64_t>{4, -1})->type().shape(),
             (std::vector<std::int64_t>{4, 6}));
    VarPtr u = symbol(DType::Float32, {kUnknownDim, 3, 4}, "u");
    // A MakeVector of a symbolic size and a constant keeps the constant static.
    VarPtr r = reshape(u, ShapeExpr{shapeI(u, 0), constantInt(12)});
    QCOMPARE(r->type().shape(), (std::vector<std::int64_t>{kUnknownDim, 12}));
    QCOMPARE(flatten(u, 2)->type().shape(), (std::vector<std::int64_t>{kUnknownDim, 12}));
  }

  void testReshapeInferShape() {
    const Tensor x = iota(DType::Float64, {2, 3, 4});
    TSCOPE_CHECK(checkInferShape(unary([](const VarPtr& v) {
                                   return reshape(v, std::vector<std::int64_t>{4, -1});
                                 }),
                                 {x}));
    TSCOPE_CHECK(checkInferShape(unary([](const VarPtr& v) { return flatten(v, 2); }), {x}));
    // The target shape as a graph input: the -1 is only known at run time.
    GraphBuilder symbolic = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{reshape(in[0], specifyShape(in[1], std::vector<std::int64_t>{3}))};
    };
    TSCOPE_CHECK(checkInferShape(symbolic, {x, values(DType::Int64, {3}, {3, -1, 2})}));
    TSCOPE_CHECK(checkInferShape(symbolic, {x, values(DType::Int64, {3}, {6, 2, 2})}));
    auto out = evaluate(symbolic, {x, values(DType::Int64, {3}, {3, -1, 2})});
    QVERIFY(closeTo(out[0], iota(DType::Float64, {3, 4, 2})));
  }

  void testReshapeGrad_data() { addFloatRows(); }
  void testReshapeGrad() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 11);
    TSCOPE_CHECK(verifyGrad(unary([](const VarPtr& v) {
                              return reshape(v, std::vector<std::int64_t>{3, 8});
                            }),
                            {x}));
    TSCOPE_CHECK(verifyGrad(unary([](const VarPtr& v) { return flatten(v, 2); }), {x}));
    TSCOPE_CHECK(checkRopLop(unary([](const VarPtr& v) {
                               return reshape(v, std::vector<std::int64_t>{4, -1});
                             }),
                             {x}));
    TSCOPE_CHECK(checkRopLop(unary([](const VarPtr& v) { return flatten(v); }), {x}));
  }

  void testReshapeBadSizes() {
    // Static: both shapes named.
    VarPtr v = symbol(DType::Float32, {2, 3, 4}, "x");
    std::string msg = messageOf([&] { reshape(v, std::vector<std::int64_t>{5, 5}); });
    QVERIFY2(msg.find("cannot reshape TensorType(float32, (2, 3, 4)) (24 elements) into (5, 5) (25 "
                      "elements)") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { reshape(v, std::vector<std::int64_t>{-1, -1}); });
    QVERIFY2(msg.find("at most one -1") != std::string::npos, msg.c_str());
    // At run time.
    GraphBuilder build = unary([](const VarPtr& in) {
      return reshape(in, std::vector<std::int64_t>{5, -1});
    });
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {2, 3, 4})}); });
    QVERIFY2(msg.find("cannot reshape (2, 3, 4) (24 elements) into (5, -1)") != std::string::npos,
             msg.c_str());
    GraphBuilder build2 = unary([](const VarPtr& in) {
      return reshape(in, std::vector<std::int64_t>{5, 5});
    });
    msg = messageOf([&] { evaluate(build2, {iota(DType::Float32, {2, 3, 4})}); });
    QVERIFY2(msg.find("cannot reshape (2, 3, 4) (24 elements) into (5, 5) (25 elements)") !=
                 std::string::npos,
             msg.c_str());
    msg = messageOf([&] { flatten(v, 4); });
    QVERIFY2(msg.find("ndim must be in [1, 3]") != std::string::npos, msg.c_str());
  }

  // --- Join and stack ----------------------------------------------------------------------------

  void testJoinValues_data() { addFloatRows(); }
  void testJoinValues() {
    QFETCH(DType, dtype);
    const Tensor a = iota(dtype, {2, 3, 4});
    const Tensor b = iota(dtype, {2, 1, 4}, 1.0, 100.0);
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{concatenate({in[0], in[1], in[0]}, 1),
                                     concatenate({in[0], in[0]}, -1), stack({in[0], in[0]}, 1)};
        },
        {a, b});
    QCOMPARE(out[0].shape(), (Shape{2, 7, 4}));
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t k = 0; k < 4; ++k) {
        for (std::int64_t j = 0; j < 3; ++j) {
          QCOMPARE(out[0].at({i, j, k}), a.at({i, j, k}));
          QCOMPARE(out[0].at({i, 4 + j, k}), a.at({i, j, k}));
        }
        QCOMPARE(out[0].at({i, 3, k}), b.at({i, 0, k}));
      }
    QCOMPARE(out[1].shape(), (Shape{2, 3, 8}));
    QCOMPARE(out[1].at({1, 2, 5}), a.at({1, 2, 1}));
    QCOMPARE(out[2].shape(), (Shape{2, 2, 3, 4}));
    QCOMPARE(out[2].at({1, 1, 2, 3}), a.at({1, 2, 3}));
  }

  void testJoinStridedAndMixedDtypes() {
    // A transposed input takes the general path; int32 and float32 promote to float64 (numpy).
    VarPtr a = symbol(DType::Float32, {3, 2}, "a"), b = symbol(DType::Int32, {1, 2}, "b");
    VarPtr y = concatenate({a, b}, 0);
    QCOMPARE(y->type(), TensorType(DType::Float64, {4, 2}));
    const Tensor at = iota(DType::Float32, {2, 3}).transpose();
    Tensor out = performNode(y, {at, values(DType::Int32, {1, 2}, {7, 8})})[0];
    QVERIFY(closeTo(out, values(DType::Float64, {4, 2}, {0, 3, 1, 4, 2, 5, 7, 8})));
  }

  void testJoinInferShapeGradRop_data() { addFloatRows(); }
  void testJoinInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor a = randomTensor(dtype, {2, 3, 4}, 21), b = randomTensor(dtype, {2, 5, 4}, 22);
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{concatenate({in[0], in[1], in[0]}, 1)};
    };
    TSCOPE_CHECK(checkInferShape(build, {a, b}));
    TSCOPE_CHECK(verifyGrad(build, {a, b}));
    TSCOPE_CHECK(checkRopLop(build, {a, b}));
    GraphBuilder stacked = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{stack({in[0], in[1]}, -1)};
    };
    const Tensor c = randomTensor(dtype, {2, 3, 4}, 23);
    TSCOPE_CHECK(checkInferShape(stacked, {a, c}));
    TSCOPE_CHECK(verifyGrad(stacked, {a, c}));
    TSCOPE_CHECK(checkRopLop(stacked, {a, c}));
  }

  void testJoinMismatchedShapes() {
    VarPtr a = symbol(DType::Float32, {2, 3}, "a"), b = symbol(DType::Float32, {4, 5}, "b");
    std::string msg = messageOf([&] { concatenate({a, b}, 0); });
    QVERIFY2(msg.find("input 1 ('b'): expected the size 3 on axis 1") != std::string::npos &&
                 msg.find("input 0 is TensorType(float32, (2, 3))") != std::string::npos &&
                 msg.find("found TensorType(float32, (4, 5))") != std::string::npos,
             msg.c_str());
    // At run time (unknown static sizes): the axis and both shapes.
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{concatenate({in[0], in[1]}, 0)};
    };
    msg = messageOf([&] {
      evaluate(build, {iota(DType::Float32, {2, 3}), iota(DType::Float32, {4, 5})});
    });
    QVERIFY2(msg.find("input 1 has shape (4, 5) and input 0 has shape (2, 3); they must agree on "
                      "every axis but "
                      "the join axis 0") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { concatenate({a, symbol(DType::Float32, {2}, "v")}, 0); });
    QVERIFY2(msg.find("expected a 2-d tensor") != std::string::npos, msg.c_str());
    msg = messageOf([&] { concatenate({a}, 2); });
    QVERIFY2(msg.find("axis 2 is out of range") != std::string::npos, msg.c_str());
  }

  // --- Split -------------------------------------------------------------------------------------

  void testSplitValues_data() { addFloatRows(); }
  void testSplitValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 5, 4});
    VarPtr v = symbol(dtype, {kUnknownDim, kUnknownDim, kUnknownDim}, "x");
    std::vector<VarPtr> parts = split(v, std::vector<std::int64_t>{2, 0, 3}, 1);
    QCOMPARE(parts.size(), std::size_t{3});
    QCOMPARE(parts[0]->type().shape(), (std::vector<std::int64_t>{kUnknownDim, 2, kUnknownDim}));
    std::vector<Tensor> out = performNode(parts[0], {x, Tensor()});
    for (const Tensor& t : out) QVERIFY(t.sharesStorageWith(x));
    QVERIFY(closeTo(out[0], x.slice(1, 0, 2).contiguous()));
    QCOMPARE(out[1].shape(), (Shape{2, 0, 4}));
    QVERIFY(closeTo(out[2], x.slice(1, 2, 5).contiguous()));
    QCOMPARE(out[2].at({1, 0, 3}), x.at({1, 2, 3}));
  }

  void testSplitInferShapeGradRop_data() { addFloatRows(); }
  void testSplitInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 5, 4}, 31);
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return split(in[0], std::vector<std::int64_t>{2, 3}, 1);
    };
    TSCOPE_CHECK(checkInferShape(build, {x}));
    TSCOPE_CHECK(verifyGrad(build, {x}));
    TSCOPE_CHECK(checkRopLop(build, {x}));
    // Only one piece used: the other's gradient is zero (grad() passes zeros, Split joins them).
    TSCOPE_CHECK(verifyGrad(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{split(in[0], std::vector<std::int64_t>{1, 4}, 1)[1]};
        },
        {x}));
    // Symbolic sizes from a MakeVector.
    GraphBuilder symbolic = [](const std::vector<VarPtr>& in) {
      VarPtr n = shapeI(in[0], 1);
      return split(in[0], makeVector({constantInt(1), sub(n, constantInt(1))}), 1);
    };
    TSCOPE_CHECK(checkInferShape(symbolic, {x}));
    TSCOPE_CHECK(verifyGrad(symbolic, {x}));
  }

  void testSplitBadSizes() {
    VarPtr v = symbol(DType::Float32, {2, 5}, "x");
    std::string msg = messageOf([&] { split(v, std::vector<std::int64_t>{2, 2}, 1); });
    QVERIFY2(
        msg.find(
            "sizes that add up to 5 (axis 1 of TensorType(float32, (2, 5))), found a total of 4") !=
            std::string::npos,
        msg.c_str());
    GraphBuilder build = unary([](const VarPtr& in) {
      return split(in, std::vector<std::int64_t>{2, 2}, 1)[0];
    });
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {2, 5})}); });
    QVERIFY2(msg.find("2 sizes >= 0 that add up to 5 (axis 1 of shape (2, 5)), found (2, 2)") !=
                 std::string::npos,
             msg.c_str());
  }

  void testPropsRoundTrip() {
    const OpRegistry& registry = defaultOpRegistry();
    const OpPtr ops[] = {std::make_shared<Reshape>(3), std::make_shared<Join>(2),
                         std::make_shared<Split>(1, 4)};
    for (const OpPtr& op : ops)
      QVERIFY2(registry.make(op->name(), op->props())->equals(*op), op->str().c_str());
    std::string msg = messageOf([&] { registry.make("Reshape", {{"ndim", -2}}); });
    QVERIFY2(msg.find("Reshape: props \"ndim\" must be an integer in [0, 64]") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { registry.make("Split", {{"axis", 0}}); });
    QVERIFY2(msg.find("Split: props need \"n_splits\"") != std::string::npos, msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestShapeReshape)
#include "tst_shape_reshape.moc"
