// ShapeFeature: symbolic shapes of a chain of ops with unknown dims, checked against the shapes
// the graph computes on non-square values; static folding of constant expressions; structural
// sameShape/sameDim; the fallback for an op without inferShape and the errors for a wrong one;
// a 100k-node chain (no recursion); the cache forgetting pruned nodes and everything derived
// from a changed input.
#include "engine/ops/as_op.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"
#include "engine/rewrite/shape_feature.h"
#include "rewrite_test_support.h"
#include "test_main.h"

using namespace tscope::test;

namespace {

constexpr std::int64_t U = kUnknownDim;

struct Attached {
  std::unique_ptr<FunctionGraph> graph;
  std::shared_ptr<ShapeFeature> shapes;
};

// The graph adopts the variables, so the test's handles are the graph's variables.
Attached attach(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs) {
  Attached a;
  a.graph = std::make_unique<FunctionGraph>(inputs, outputs, FunctionGraph::Ownership::Adopt);
  a.shapes = std::make_shared<ShapeFeature>();
  a.graph->attachFeature(a.shapes);
  return a;
}

// The runtime values of a shape expression (compiled on the graph's inputs).
std::vector<std::int64_t> evaluateShape(const std::vector<VarPtr>& inputs, const ShapeExpr& dims,
                                        const std::vector<Tensor>& values) {
  if (dims.empty()) return {};
  const std::vector<Tensor> out = evaluate(inputs, {makeVector(dims, DType::Int64)}, values);
  std::vector<std::int64_t> shape;
  for (double d : out[0].toDoubles()) shape.push_back(static_cast<std::int64_t>(d));
  return shape;
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

class TestShapeFeature : public QObject {
  Q_OBJECT

 private slots:
  // Every variable's inferred shape evaluates to the shape it has at run time (non-square).
  void testChainShapesMatchRuntimeShapes() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    auto y = Variable::create(TensorType(DType::Float64, {U, U}), "y");
    auto a = tanh(x);                                    // (n, m)
    auto b = dot(a, transpose(y));                       // (n, k)
    auto c = sum(b, {1});                                // (n)
    auto d = reshape(x, std::vector<std::int64_t>{-1});  // (n * m)
    auto e = add(b, exp(b));                             // (n, k)
    auto g = alloc(constant(0.0, DType::Float64), ShapeExpr{shapeI(x, 1), shapeI(y, 0)});  // (m, k)
    auto h = transpose(dimshuffle(c, {0, DimShuffle::kNewAxis}));                          // (1, n)
    const std::vector<VarPtr> outs{a, b, c, d, e, g, h};
    Attached at = attach({x, y}, outs);
    const std::vector<Tensor> values{randomTensor(DType::Float64, {3, 5}, 1),
                                     randomTensor(DType::Float64, {4, 5}, 2)};
    const std::vector<Tensor> computed = runGraph(*at.graph, values);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const ShapeExpr& dims = at.shapes->shapeOf(outs[i]);
      QCOMPARE(static_cast<int>(dims.size()), outs[i]->type().ndim());
      QCOMPARE(evaluateShape({x, y}, dims, values), computed[i].shape());
    }
    // The unknown dims are expressions of the inputs' shapes, not of the computed values.
    const VarPtr n = at.shapes->dimOf(b, 0);
    QVERIFY(n->owner() != nullptr);
    QCOMPARE(n->owner()->op().name(), std::string("ShapeI"));
    QVERIFY(n->owner()->input(0) == x);
    QCOMPARE(at.shapes->staticDim(h, 0), std::optional<std::int64_t>(1));
    QCOMPARE(at.shapes->staticDim(b, 1), std::optional<std::int64_t>());
  }

  // A size the type leaves unknown but whose expression has only constant leaves is folded.
  void testStaticFolding() {
    auto c = constant(Tensor::zeros(DType::Float32, {7}));
    auto n =
        mul(std::make_shared<ShapeI>(0)->operator()({c}), constantInt(2));  // 14, not a Constant
    auto v = alloc(constant(0.0, DType::Float32), ShapeExpr{n});
    auto x = Variable::create(TensorType(DType::Float32, {U}), "x");
    auto out = add(exp(v), x);
    QCOMPARE(v->type().shape()[0], U);  // the type does not know it: the fold is the feature's
    QCOMPARE(out->type().shape()[0], U);
    Attached at = attach({x}, {out});
    QCOMPARE(at.shapes->staticDim(v, 0), std::optional<std::int64_t>(14));
    QVERIFY(constantIntValue(at.shapes->dimOf(v, 0)).has_value());
    QCOMPARE(at.shapes->staticDim(out, 0), std::optional<std::int64_t>(14));
    QCOMPARE(ShapeFeature::foldInt(add(constantInt(2), constantInt(3))),
             std::optional<std::int64_t>(5));
    QCOMPARE(ShapeFeature::foldInt(shapeI(x, 0)), std::optional<std::int64_t>());
    // A static dim of the type wins without looking at the expression.
    auto s = Variable::create(TensorType(DType::Float32, {3, U}), "s");
    Attached at2 = attach({s}, {exp(s)});
    QCOMPARE(at2.shapes->staticDim(s, 0), std::optional<std::int64_t>(3));
    QCOMPARE(at2.shapes->staticDim(s, 1), std::optional<std::int64_t>());
  }

  void testSameShapeAndSameDim() {
    auto x = Variable::create(TensorType(DType::Float32, {U, U}), "x");
    auto y = Variable::create(TensorType(DType::Float32, {U, U}), "y");
    auto p = Variable::create(TensorType(DType::Float32, {3, 4}), "p");
    auto q = Variable::create(TensorType(DType::Float32, {3, 4}), "q");
    auto a = exp(x), b = tanh(x), c = exp(y);
    Attached at = attach({x, y, p, q}, {a, b, c, add(p, q)});
    ShapeFeature& sf = *at.shapes;
    QVERIFY(sf.sameShape(a, b));
    QVERIFY(!sf.sameShape(a, c));  // unrelated symbols are not known equal
    QVERIFY(sf.sameShape(p, q));
    QVERIFY(!sf.sameShape(p, transpose(p)));
    QVERIFY(!sf.sameShape(x, transpose(x)));
    QVERIFY(!sf.sameShape(x, p));
    // Structural: two separately built Shape_i of x are the same dim; of different axes are not.
    QVERIFY(ShapeFeature::sameDim(shapeI(x, 0), shapeI(x, 0)));
    QVERIFY(!ShapeFeature::sameDim(shapeI(x, 0), shapeI(x, 1)));
    QVERIFY(ShapeFeature::sameDim(add(constantInt(1), constantInt(2)), constantInt(3)));
    QVERIFY(!ShapeFeature::sameDim(constantInt(3), constantInt(4)));
  }

  // An op without inferShape gets its own Shape_i; one whose inferShape has the wrong rank or
  // a non-integer dim is reported with the op's name.
  void testOpsWithoutOrWithWrongInferShape() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    auto twice =
        asOp("Twice", {TensorType(DType::Float64, {U, U})}, {TensorType(DType::Float64, {U, U})},
             [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0]}; });
    auto y = (*twice)({exp(x)});
    auto z = tanh(y);
    Attached at = attach({x}, {z});
    const VarPtr d = at.shapes->dimOf(z, 1);
    QVERIFY(d->owner() != nullptr);
    QCOMPARE(d->owner()->op().str(), std::string("ShapeI{i=1}"));
    QVERIFY(d->owner()->input(0) == y);

    auto wrongRank = asOp(
        "WrongRank", {TensorType(DType::Float64, {U, U})}, {TensorType(DType::Float64, {U, U})},
        [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0]}; },
        [](std::span<const ShapeExpr> shapes) {
          return std::vector<ShapeExpr>{ShapeExpr{shapes[0][0]}};
        });
    auto x2 = Variable::create(TensorType(DType::Float64, {U, U}),
                               "x2");  // an adopted input joins one graph
    auto w = (*wrongRank)({x2});
    Attached bad = attach({x2}, {w});
    const std::string m = message([&] { bad.shapes->shapeOf(w); });
    QVERIFY2(m.find("WrongRank") != std::string::npos &&
                 m.find("1 dimensions") != std::string::npos &&
                 m.find("expected 2") != std::string::npos,
             m.c_str());

    auto floatDim = asOp(
        "FloatDim", {TensorType(DType::Float64, {U})}, {TensorType(DType::Float64, {U})},
        [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0]}; },
        [](std::span<const ShapeExpr>) {
          return std::vector<ShapeExpr>{ShapeExpr{constant(2.5, DType::Float64)}};
        });
    auto v = Variable::create(TensorType(DType::Float64, {U}), "v");
    auto f = (*floatDim)({v});
    Attached bad2 = attach({v}, {f});
    const std::string m2 = message([&] { bad2.shapes->shapeOf(f); });
    QVERIFY2(
        m2.find("FloatDim") != std::string::npos && m2.find("0-d integer") != std::string::npos,
        m2.c_str());
  }

  // Note [Iterative shape inference]: a recursive walk would overflow the stack here.
  void testDeepChainDoesNotOverflow() {
    constexpr int kDepth = 100000;
    auto x = Variable::create(TensorType(DType::Float32, {U, 5}), "x");
    VarPtr v = x;
    for (int i = 0; i < kDepth; ++i) v = i % 2 ? exp(v) : neg(v);
    Attached at = attach({x}, {v});
    const ShapeExpr& dims = at.shapes->shapeOf(v);
    QCOMPARE(dims.size(), std::size_t(2));
    QCOMPARE(dims[0]->owner()->op().name(), std::string("ShapeI"));
    QVERIFY(dims[0]->owner()->input(0) == x);
    QCOMPARE(constantIntValue(dims[1]), std::optional<std::int64_t>(5));
    QVERIFY(at.shapes->cacheSize() >= std::size_t(kDepth));
    QCOMPARE(at.shapes->inferCount(), std::size_t(kDepth));
    at.shapes->shapeOf(v);  // answered from the cache
    QCOMPARE(at.shapes->inferCount(), std::size_t(kDepth));
  }

  void testCacheForgetsPrunedNodes() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    auto e = exp(x);
    auto t = tanh(e);
    Attached at = attach({x}, {t});
    ShapeFeature& sf = *at.shapes;
    sf.shapeOf(t);
    QVERIFY(sf.cached(*e));
    QVERIFY(sf.cached(*t));
    const std::size_t before = sf.cacheSize();
    // exp leaves the graph; tanh stays but its input changed: both entries go.
    at.graph->replace(e, sigmoid(x), "test");
    QVERIFY(!sf.cached(*e));
    QVERIFY(!sf.cached(*t));
    QVERIFY(sf.cacheSize() < before);
    const std::vector<Tensor> values{randomTensor(DType::Float64, {3, 5}, 3)};
    QCOMPARE(evaluateShape({x}, sf.shapeOf(t), values), (Shape{3, 5}));
  }

  // Note [Shape cache invalidation]: an entry derived from a changed node is forgotten too.
  void testCacheForgetsDerivedEntries() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    auto target = makeVector({shapeI(x, 1), shapeI(x, 0)});
    auto r = reshape(x, target);  // the transpose's shape, as a reshape
    auto out = exp(r);
    Attached at = attach({x}, {out});
    ShapeFeature& sf = *at.shapes;
    sf.shapeOf(out);
    QVERIFY(sf.cached(*r));
    QVERIFY(sf.cached(*out));
    // The reshape's shape vector is replaced: r's entry named the old one, and out's came from r's.
    auto swapped = makeVector({shapeI(x, 1), shapeI(x, 0)});
    at.graph->replace(target, swapped, "test");
    QVERIFY(!sf.cached(*r));
    QVERIFY(!sf.cached(*out));
    const std::vector<Tensor> values{randomTensor(DType::Float64, {3, 5}, 4)};
    QCOMPARE(evaluateShape({x}, sf.shapeOf(out), values), (Shape{5, 3}));
    // Entries of variables outside the graph go at the end of the next change, even one that
    // does not touch what they were derived from.
    auto outside = tanh(x);
    sf.shapeOf(outside);
    QVERIFY(sf.cached(*outside));
    QVERIFY(sf.cached(*x));
    at.graph->replace(at.graph->outputs()[0], exp(reshape(x, swapped)), "test");
    QVERIFY(!sf.cached(*outside));
    QVERIFY(sf.cached(*x));
  }

  void testDetachClearsAndNeedsAGraph() {
    auto x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
    Attached at = attach({x}, {exp(x)});
    at.shapes->shapeOf(at.graph->outputs()[0]);
    QVERIFY(at.shapes->cacheSize() > 0);
    at.graph->detachFeature(*at.shapes);
    QCOMPARE(at.shapes->cacheSize(), std::size_t(0));
    const std::string m = message([&] { at.shapes->shapeOf(x); });
    QVERIFY2(m.find("not attached") != std::string::npos, m.c_str());
  }
};

TSCOPE_TEST_MAIN(TestShapeFeature)
#include "tst_shape_feature.moc"
