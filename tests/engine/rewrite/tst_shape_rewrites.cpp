// Shape rewrites: each one's before/after structure, the rewrite log naming it, and unchanged
// values on non-square inputs (float32 and float64); plus the cases where each must not apply.
#include "engine/ops/as_op.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/shape/shape.h"
#include "rewrite_test_support.h"
#include "test_main.h"

#include <algorithm>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

constexpr std::int64_t U = kUnknownDim;

void addDTypeRows() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
}

}  // namespace

class TestShapeRewrites : public QObject {
  Q_OBJECT

 private slots:
  void testRegisteredForFastCompile() {
    for (const char* name : {"shape_of_known_shape", "shape_i_of_known_shape",
                             "useless_specify_shape", "useless_reshape", "useless_alloc"}) {
      const auto& entries = RewriteDb::standard().entries();
      auto it = std::find_if(entries.begin(), entries.end(),
                             [&](const auto& e) { return e.name() == name; });
      QVERIFY2(it != entries.end(), name);
      QCOMPARE(it->phase, Phase::Canonicalize);
      for (const char* tag : {"fast_run", "fast_compile", "canonicalize", "shape"})
        QVERIFY2(it->tags.count(tag) == 1, tag);
    }
  }

  // Shape(tanh(exp(x))) -> MakeVector(Shape_i(x, 0), Shape_i(x, 1)): tanh and exp are gone.
  void testShapeOfKnownShape_data() { addDTypeRows(); }
  void testShapeOfKnownShape() {
    QFETCH(DType, dtype);
    auto x = Variable::create(TensorType(dtype, {U, U}), "x");
    auto s = shapeVector(tanh(exp(x)));
    Rewritten r = rewrite({x}, {s}, only({"shape_of_known_shape"}));
    QVERIFY(logged(r, "shape_of_known_shape"));
    QCOMPARE(countOps(*r.graph, "Shape"), 0);
    QCOMPARE(countOps(*r.graph, "Elemwise{tanh}"), 0);
    QCOMPARE(countOps(*r.graph, "Elemwise{exp}"), 0);
    QCOMPARE(countOps(*r.graph, "MakeVector{dtype=int64}"), 1);
    QVERIFY(sameValues({x}, {s}, *r.graph, {randomTensor(dtype, {3, 5}, 1)}));
  }

  // With static dims the shape is a constant and the graph has no node left.
  void testShapeOfStaticShapeIsConstant() {
    auto x = Variable::create(TensorType(DType::Float32, {3, 5}), "x");
    auto s = shapeVector(dot(tanh(x), transpose(x)));
    Rewritten r = rewrite({x}, {s}, only({"shape_of_known_shape"}));
    QVERIFY(logged(r, "shape_of_known_shape"));
    QCOMPARE(static_cast<int>(r.graph->nodeCount()), 0);
    QVERIFY(r.graph->outputs()[0]->kind() == Variable::Kind::Constant);
    QVERIFY(sameValues({x}, {s}, *r.graph, {randomTensor(DType::Float32, {3, 5}, 2)}));
  }

  // ShapeI{1}(dot(x, w)) -> ShapeI{1}(w): the product is no longer computed.
  void testShapeIOfKnownShape_data() { addDTypeRows(); }
  void testShapeIOfKnownShape() {
    QFETCH(DType, dtype);
    auto x = Variable::create(TensorType(dtype, {U, U}), "x");
    auto w = Variable::create(TensorType(dtype, {U, U}), "w");
    auto n = std::make_shared<ShapeI>(1)->operator()({dot(x, w)});
    auto out = mul(n, constantInt(2));
    Rewritten r = rewrite({x, w}, {out}, only({"shape_i_of_known_shape"}));
    QVERIFY(logged(r, "shape_i_of_known_shape"));
    QCOMPARE(countOps(*r.graph, "Dot"), 0);
    QCOMPARE(countOps(*r.graph, "ShapeI{i=1}"), 1);
    QVERIFY(sameValues({x, w}, {out}, *r.graph,
                       {randomTensor(dtype, {3, 5}, 3), randomTensor(dtype, {5, 4}, 4)}));
  }

  // Not applied: the Shape of a graph input (nothing to gain), and the shape of an op without
  // inferShape (the answer would read the op's output itself).
  void testShapeRewritesLeaveInputsAndOpaqueShapes() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    auto twice =
        asOp("Twice", {TensorType(DType::Float64, {U, U})}, {TensorType(DType::Float64, {U, U})},
             [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0]}; });
    auto opaque = (*twice)({x});
    auto s = shapeVector(x);
    auto n = std::make_shared<ShapeI>(0)->operator()({opaque});
    auto m = shapeVector(opaque);
    Rewritten r = rewrite({x}, {s, n, m}, only({"shape_of_known_shape", "shape_i_of_known_shape"}));
    QVERIFY(!logged(r, "shape_of_known_shape"));
    QVERIFY(!logged(r, "shape_i_of_known_shape"));
    QCOMPARE(countOps(*r.graph, "Shape"), 2);
    QCOMPARE(countOps(*r.graph, "ShapeI{i=0}"), 1);
    QCOMPARE(countOps(*r.graph, "Twice"), 1);
    QVERIFY(sameValues({x}, {s, n, m}, *r.graph, {randomTensor(DType::Float64, {3, 5}, 5)}));
  }

  // SpecifyShape(x, 3, -1) on a (3, ?) x and SpecifyShape(x, Shape_i(x, 0), -1) are x.
  void testUselessSpecifyShape_data() { addDTypeRows(); }
  void testUselessSpecifyShape() {
    QFETCH(DType, dtype);
    auto x = Variable::create(TensorType(dtype, {3, U}), "x");
    auto y = Variable::create(TensorType(dtype, {U, U}), "y");
    auto a = exp(specifyShape(x, std::vector<std::int64_t>{3, -1}));
    auto b = tanh(specifyShape(y, ShapeExpr{shapeI(y, 0), constantInt(-1)}));
    Rewritten r = rewrite({x, y}, {a, b}, only({"useless_specify_shape"}));
    QVERIFY(logged(r, "useless_specify_shape"));
    QCOMPARE(countOps(*r.graph, "SpecifyShape"), 0);
    QVERIFY(sameValues({x, y}, {a, b}, *r.graph,
                       {randomTensor(dtype, {3, 5}, 6), randomTensor(dtype, {4, 2}, 7)}));
  }

  // Kept: a SpecifyShape that tells the type something, or checks a size against another
  // variable's (the run-time check stays).
  void testSpecifyShapeThatChecksStays() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    auto y = Variable::create(TensorType(DType::Float64, {U, U}), "y");
    auto a = exp(specifyShape(x, std::vector<std::int64_t>{3, -1}));
    auto b = tanh(specifyShape(x, ShapeExpr{shapeI(y, 0), constantInt(-1)}));
    Rewritten r = rewrite({x, y}, {a, b}, only({"useless_specify_shape"}));
    QVERIFY(!logged(r, "useless_specify_shape"));
    QCOMPARE(countOps(*r.graph, "SpecifyShape"), 2);
    QVERIFY(sameValues(
        {x, y}, {a, b}, *r.graph,
        {randomTensor(DType::Float64, {3, 5}, 8), randomTensor(DType::Float64, {3, 2}, 9)}));
  }

  // Reshape to the shape x has: static, by its own Shape_i, or with one -1 for the rest.
  void testUselessReshape_data() { addDTypeRows(); }
  void testUselessReshape() {
    QFETCH(DType, dtype);
    auto s = Variable::create(TensorType(dtype, {3, 5}), "s");
    auto x = Variable::create(TensorType(dtype, {U, 5}), "x");
    auto a = exp(reshape(s, std::vector<std::int64_t>{3, 5}));
    auto b = exp(reshape(x, ShapeExpr{shapeI(x, 0), constantInt(5)}));
    auto c = tanh(reshape(x, std::vector<std::int64_t>{-1, 5}));
    Rewritten r = rewrite({s, x}, {a, b, c}, only({"useless_reshape"}));
    QVERIFY(logged(r, "useless_reshape"));
    QCOMPARE(countOps(*r.graph, "Reshape{ndim=2}"), 0);
    QVERIFY(sameValues({s, x}, {a, b, c}, *r.graph,
                       {randomTensor(dtype, {3, 5}, 10), randomTensor(dtype, {4, 5}, 11)}));
  }

  // Kept: a real reshape, and a -1 beside a size that may be 0 at run time.
  void testReshapeThatChangesStays() {
    auto s = Variable::create(TensorType(DType::Float32, {3, 5}), "s");
    auto x = Variable::create(TensorType(DType::Float32, {U, U}), "x");
    auto a = exp(reshape(s, std::vector<std::int64_t>{5, 3}));
    auto b = exp(reshape(x, ShapeExpr{constantInt(-1), shapeI(x, 1)}));
    Rewritten r = rewrite({s, x}, {a, b}, only({"useless_reshape"}));
    QVERIFY(!logged(r, "useless_reshape"));
    QCOMPARE(countOps(*r.graph, "Reshape{ndim=2}"), 2);
    QVERIFY(sameValues(
        {s, x}, {a, b}, *r.graph,
        {randomTensor(DType::Float32, {3, 5}, 12), randomTensor(DType::Float32, {4, 2}, 13)}));
  }

  // Alloc(x, Shape_i(x, 0), Shape_i(x, 1)) is x.
  void testUselessAlloc_data() { addDTypeRows(); }
  void testUselessAlloc() {
    QFETCH(DType, dtype);
    auto x = Variable::create(TensorType(dtype, {U, U}), "x");
    auto a = exp(alloc(x, shapeOf(x)));
    Rewritten r = rewrite({x}, {a}, only({"useless_alloc"}));
    QVERIFY(logged(r, "useless_alloc"));
    QCOMPARE(countOps(*r.graph, "Alloc"), 0);
    QVERIFY(sameValues({x}, {a}, *r.graph, {randomTensor(dtype, {3, 5}, 14)}));
  }

  // Kept: an Alloc that broadcasts (a row to a matrix) or whose sizes are another variable's.
  void testAllocThatBroadcastsStays() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    auto v = Variable::create(TensorType(DType::Float64, {U}), "v");
    auto a = exp(alloc(v, ShapeExpr{shapeI(x, 0), shapeI(v, 0)}));
    auto b = exp(alloc(x, ShapeExpr{shapeI(v, 0), shapeI(x, 1)}));
    Rewritten r = rewrite({x, v}, {a, b}, only({"useless_alloc"}));
    QVERIFY(!logged(r, "useless_alloc"));
    QCOMPARE(countOps(*r.graph, "Alloc"), 2);
    QVERIFY(sameValues(
        {x, v}, {a, b}, *r.graph,
        {randomTensor(DType::Float64, {3, 5}, 15), randomTensor(DType::Float64, {3}, 16)}));
  }

  // In fast_compile, a computation used only for its shape disappears.
  void testFastCompileDropsShapeOnlyWork() {
    auto x = Variable::create(TensorType(DType::Float32, {U, 5}), "x");
    auto w = Variable::create(TensorType(DType::Float32, {5, U}), "w");
    auto h = tanh(dot(x, w));
    auto out = reshape(x, ShapeExpr{shapeI(h, 1), constantInt(-1)});
    Rewritten r = rewrite({x, w}, {out}, RewriteQuery::forMode("fast_compile"));
    QCOMPARE(countOps(*r.graph, "Dot"), 0);
    QCOMPARE(countOps(*r.graph, "Elemwise{tanh}"), 0);
    QVERIFY(sameValues(
        {x, w}, {out}, *r.graph,
        {randomTensor(DType::Float32, {4, 5}, 17), randomTensor(DType::Float32, {5, 2}, 18)}));
  }
};

TSCOPE_TEST_MAIN(TestShapeRewrites)
#include "tst_shape_rewrites.moc"
