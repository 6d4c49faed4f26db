// The canonicalize rewrites: for each, the structure after (countOps, the rewrite log naming it),
// the values before and after on random float32 and float64 inputs of non-square shapes, and the
// cases where it must not apply (the type would change, another client, integer-only rules).
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "rewrite_test_support.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test;

namespace {
constexpr std::int64_t U = kUnknownDim;

VarPtr var(const std::string& name, DType d = DType::Float32,
           std::vector<std::int64_t> shape = {U, U}) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

// Random values for the inputs (3 x 5 unless their static shape says otherwise).
std::vector<Tensor> valuesFor(const std::vector<VarPtr>& inputs, std::uint64_t seed, double lo = -1,
                              double hi = 1) {
  std::vector<Tensor> out;
  for (const VarPtr& in : inputs) {
    Shape shape;
    const std::vector<std::int64_t> defaults{3, 5, 2};
    for (int i = 0; i < in->type().ndim(); ++i) {
      const std::int64_t d = in->type().shape()[static_cast<std::size_t>(i)];
      shape.push_back(d == U ? defaults[static_cast<std::size_t>(i) % defaults.size()] : d);
    }
    out.push_back(randomTensor(in->type().dtype(), shape, seed++, lo, hi));
  }
  return out;
}

const std::vector<DType> kFloats{DType::Float32, DType::Float64};

}  // namespace

class TestCanonicalize : public QObject {
  Q_OBJECT

 private slots:
  void testFlattenAddMul() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d), z = var("z", d);
      const std::vector<VarPtr> outs{(x + y) + z, x * (y * (z * x))};
      Rewritten r = rewrite({x, y, z}, outs, only({"add_mul_canonical"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{add}"), 1);
      QCOMPARE(countOps(*r.graph, "Elemwise{mul}"), 1);
      QCOMPARE(r.graph->outputs()[0]->owner()->nInputs(), 3);
      QCOMPARE(r.graph->outputs()[1]->owner()->nInputs(), 4);
      QVERIFY(logged(r, "add_mul_canonical"));
      QVERIFY(sameValues({x, y, z}, outs, *r.graph, valuesFor({x, y, z}, 1)));
    }
  }

  void testFlattenKeepsSharedAndNarrowerInner() {
    auto x = var("x"), y = var("y"), z = var("z");
    const VarPtr inner = x + y;
    Rewritten shared = rewrite({x, y, z}, {inner + z, inner * 2.0}, only({"add_mul_canonical"}));
    QCOMPARE(countOps(*shared.graph, "Elemwise{add}"), 2);
    QCOMPARE(shared.graph->outputs()[0]->owner()->nInputs(), 2);
    // add(add(int8, int8), int32): the inner add wraps at int8; flattening would change the value.
    auto a = var("a", DType::Int8), b = var("b", DType::Int8), c = var("c", DType::Int32);
    Rewritten narrow = rewrite({a, b, c}, {(a + b) + c}, only({"add_mul_canonical"}));
    QCOMPARE(countOps(*narrow.graph, "Elemwise{add}"), 2);
    QCOMPARE(narrow.graph->outputs()[0]->owner()->nInputs(), 2);
  }

  void testSortAndCombineConstants() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{(x * 2.0) * 3.0 * y, (y + x) - (x + y)};
      Rewritten r = rewrite({x, y}, outs, only({"add_mul_canonical"}));
      QVERIFY(logged(r, "add_mul_canonical"));
      const Apply* prod = r.graph->outputs()[0]->owner();
      QCOMPARE(prod->nInputs(), 3);
      QCOMPARE(prod->input(0)->name(), std::string("x"));
      QCOMPARE(prod->input(1)->name(), std::string("y"));
      QCOMPARE(scalarConstantValue(*prod->input(2)), std::optional<double>(6.0));
      // y + x and x + y now have the same operand order, so merge can share them.
      const Apply* diff = r.graph->outputs()[1]->owner();
      QCOMPARE(diff->input(0)->owner()->input(0), diff->input(1)->owner()->input(0));
      QCOMPARE(diff->input(0)->owner()->input(1), diff->input(1)->owner()->input(1));
      QVERIFY(sameValues({x, y}, outs, *r.graph, valuesFor({x, y}, 3)));
    }
  }

  void testSortLeavesCanonicalNodes() {
    auto x = var("x"), y = var("y");
    Rewritten r = rewrite({x, y}, {(x + y) * 2.0}, only({"add_mul_canonical"}));
    QVERIFY(!logged(r, "add_mul_canonical"));
    // An integer product whose combined constant would not be exact keeps both constants.
    auto n = var("n", DType::Int8);
    const VarPtr big =
        elemwise(ScalarOp::Mul, {n, constant(100, DType::Int8), constant(100, DType::Int8)});
    Rewritten r2 = rewrite({n}, {big}, only({"add_mul_canonical"}));
    QCOMPARE(r2.graph->outputs()[0]->owner()->nInputs(), 3);
  }

  void testMulOneAddZero() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{x * 1.0, 1.0 * y + 0.0,
                                     elemwise(ScalarOp::Mul, {x, constant(1.0, d), y})};
      Rewritten r = rewrite({x, y}, outs, only({"mul_one", "add_zero"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{add}"), 0);
      QCOMPARE(countOps(*r.graph, "Elemwise{mul}"), 1);
      QCOMPARE(r.graph->outputs()[2]->owner()->nInputs(), 2);
      QVERIFY(logged(r, "mul_one") && logged(r, "add_zero"));
      QVERIFY(sameValues({x, y}, outs, *r.graph, valuesFor({x, y}, 5)));
    }
  }

  void testMulOneFitsType() {
    // int16 * 1.0 (float64) is float64: x is cast.
    auto n = var("n", DType::Int16);
    const VarPtr out = n * constant(1.0, DType::Float64);
    Rewritten r = rewrite({n}, {out}, only({"mul_one"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{mul}"), 0);
    QCOMPARE(countOps(*r.graph, "Elemwise{cast{float64}}"), 1);
    QVERIFY(sameValues({n}, {out}, *r.graph, valuesFor({n}, 2, -100, 100)));
    // x (?, 1) * ones(1, 5): the ones broadcast x, so x is broadcast to the product's shape.
    auto x = var("x", DType::Float32, {U, 1});
    const VarPtr wide = x * ones(std::vector<std::int64_t>{1, 5}, DType::Float32);
    Rewritten r2 = rewrite({x}, {wide}, only({"mul_one"}));
    QCOMPARE(countOps(*r2.graph, "Elemwise{mul}"), 0);
    QVERIFY(r2.graph->outputs()[0]->type() == wide->type());
    QVERIFY(sameValues({x}, {wide}, *r2.graph, valuesFor({x}, 4)));
  }

  void testSubZeroDivOne() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{x - 0.0, y / 1.0};
      Rewritten r = rewrite({x, y}, outs, only({"sub_zero", "div_one"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{sub}"), 0);
      QCOMPARE(countOps(*r.graph, "Elemwise{true_div}"), 0);
      QVERIFY(logged(r, "sub_zero") && logged(r, "div_one"));
      QVERIFY(sameValues({x, y}, outs, *r.graph, valuesFor({x, y}, 6)));
    }
    // 0 - x is not x - 0.
    auto x = var("x");
    Rewritten r = rewrite({x}, {0.0 - x}, only({"sub_zero"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{sub}"), 1);
    // int / 1 is a float division: x is cast, not returned as an integer.
    auto n = var("n", DType::Int32);
    const VarPtr q = n / 1.0;
    Rewritten ri = rewrite({n}, {q}, only({"div_one"}));
    QCOMPARE(ri.graph->outputs()[0]->type().dtype(), q->type().dtype());
    QVERIFY(sameValues({n}, {q}, *ri.graph, valuesFor({n}, 9, -20, 20)));
  }

  void testSubSelf() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{x - x, y - x};
      Rewritten r = rewrite({x, y}, outs, only({"sub_self"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{sub}"), 1);  // y - x stays
      QVERIFY(logged(r, "sub_self"));
      QVERIFY(sameValues({x, y}, outs, *r.graph, valuesFor({x, y}, 8)));
      QCOMPARE(runGraph(*r.graph, valuesFor({x, y}, 8))[0].shape(), (Shape{3, 5}));
    }
  }

  void testMulZeroIntegersOnly() {
    auto n = var("n", DType::Int32), b = var("b", DType::Bool);
    const std::vector<VarPtr> outs{n * 0.0, elemwise(ScalarOp::Mul, {b, constant(0, DType::Bool)})};
    Rewritten r = rewrite({n, b}, outs, only({"mul_zero"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{mul}"), 0);
    QVERIFY(logged(r, "mul_zero"));
    QVERIFY(sameValues({n, b}, outs, *r.graph, valuesFor({n, b}, 10, -5, 5)));
    // Floats keep x * 0: Inf * 0 is NaN (Note [Canonical algebra and IEEE values]).
    for (DType d : kFloats) {
      auto x = var("x", d);
      Rewritten rf = rewrite({x}, {x * 0.0}, only({"mul_zero"}));
      QCOMPARE(countOps(*rf.graph, "Elemwise{mul}"), 1);
    }
  }

  void testMulDivCancel() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d), z = var("z", d);
      const std::vector<VarPtr> outs{(x * y) / y, (y * x) / y, (x * y) / z};
      Rewritten r = rewrite({x, y, z}, outs, only({"mul_div_cancel"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{true_div}"), 1);  // only x * y / z
      QVERIFY(logged(r, "mul_div_cancel"));
      QVERIFY(sameValues({x, y, z}, outs, *r.graph, valuesFor({x, y, z}, 12, 0.5, 2.0)));
    }
  }

  void testNegForms() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{-(-x), x + (-y), (-y) + x, 0.0 - x};
      Rewritten r = rewrite({x, y}, outs, only({"neg_neg", "add_neg_to_sub", "zero_sub_to_neg"}));
      QCOMPARE(r.graph->outputs()[0], r.graph->inputs()[0]);
      QCOMPARE(r.graph->outputs()[1]->owner()->op().str(), std::string("Elemwise{sub}"));
      QCOMPARE(r.graph->outputs()[2]->owner()->op().str(), std::string("Elemwise{sub}"));
      QCOMPARE(r.graph->outputs()[3]->owner()->op().str(), std::string("Elemwise{neg}"));
      QCOMPARE(countOps(*r.graph, "Elemwise{add}"), 0);
      QVERIFY(logged(r, "neg_neg") && logged(r, "add_neg_to_sub") && logged(r, "zero_sub_to_neg"));
      QVERIFY(sameValues({x, y}, outs, *r.graph, valuesFor({x, y}, 14)));
    }
    // x - neg(y) is not an add: untouched.
    auto x = var("x"), y = var("y");
    Rewritten r = rewrite({x, y}, {x - (-y)}, only({"add_neg_to_sub", "zero_sub_to_neg"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{neg}"), 1);
  }

  void testExpLogInverse() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{exp(log(x)), log(exp(y)) * 2.0};
      Rewritten r = rewrite({x, y}, outs, only({"exp_log", "log_exp"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{exp}"), 0);
      QCOMPARE(countOps(*r.graph, "Elemwise{log}"), 0);
      QVERIFY(logged(r, "exp_log") && logged(r, "log_exp"));
      QVERIFY(sameValues({x, y}, outs, *r.graph, valuesFor({x, y}, 16, 0.1, 3.0)));
    }
    // Not inverse pairs: untouched.
    auto v = var("v");
    Rewritten kept =
        rewrite({v}, {exp(log(v) + 1.0), log(2.0 * exp(v))}, only({"exp_log", "log_exp"}));
    QCOMPARE(countOps(*kept.graph, "Elemwise{exp}"), 2);
    QVERIFY(!logged(kept, "exp_log") && !logged(kept, "log_exp"));
    // exp(log(int)) is a float: x is cast so the type is kept.
    auto n = var("n", DType::Int32);
    const VarPtr e = exp(log(n));
    Rewritten r = rewrite({n}, {e}, only({"exp_log"}));
    QVERIFY(r.graph->outputs()[0]->type() == e->type());
    QVERIFY(sameValues({n}, {e}, *r.graph, valuesFor({n}, 18, 1, 50), 1e-5, 1e-5));
  }

  void testDimShuffleChains() {
    for (DType d : kFloats) {
      auto x = var("x", d, {U, U, 1});
      // transpose of transpose is the identity; a drop then an insert composes into one node.
      const std::vector<VarPtr> outs{
          transpose(transpose(x)), dimshuffle(dimshuffle(x, {1, 0}), {DimShuffle::kNewAxis, 1, 0}),
          dimshuffle(x, {0, 1, 2}) * 2.0};
      Rewritten r = rewrite({x}, outs, only({"dimshuffle_compose", "dimshuffle_identity"}));
      QCOMPARE(r.graph->outputs()[0], r.graph->inputs()[0]);
      QCOMPARE(countOps(*r.graph, "DimShuffle{x,0,1}"), 1);
      QCOMPARE(countOps(*r.graph, "DimShuffle{0,1,2}"), 0);
      QCOMPARE(countNodes(*r.graph, [](const Apply& a) { return a.op().name() == "DimShuffle"; }),
               1);
      QVERIFY(logged(r, "dimshuffle_compose") && logged(r, "dimshuffle_identity"));
      QVERIFY(sameValues({x}, outs, *r.graph, valuesFor({x}, 20)));
    }
    // A real permutation stays.
    auto y = var("y");
    Rewritten r = rewrite({y}, {transpose(y)}, only({"dimshuffle_compose", "dimshuffle_identity"}));
    QCOMPARE(countOps(*r.graph, "DimShuffle{1,0}"), 1);
  }

  void testReshapeChains() {
    for (DType d : kFloats) {
      auto x = var("x", d), s = var("s", d, {3, 5});
      const std::vector<VarPtr> outs{
          reshape(reshape(x, std::vector<std::int64_t>{-1}), std::vector<std::int64_t>{5, 3}),
          reshape(x, ShapeExpr{shapeI(x, 0), shapeI(x, 1)}) * 2.0,
          reshape(s, ShapeExpr{constantInt(3), constantInt(-1)})};
      Rewritten r = rewrite({x, s}, outs, only({"reshape_compose", "useless_reshape"}));
      QCOMPARE(countNodes(*r.graph, [](const Apply& a) { return a.op().name() == "Reshape"; }), 1);
      QCOMPARE(r.graph->outputs()[2], r.graph->inputs()[1]);
      QVERIFY(logged(r, "reshape_compose") && logged(r, "useless_reshape"));
      QVERIFY(sameValues({x, s}, outs, *r.graph, valuesFor({x, s}, 22)));
    }
    // -1 beside an axis of unknown size: that axis may be 0, and then the -1 is ambiguous.
    auto u = var("u");
    Rewritten ru = rewrite({u}, {reshape(u, ShapeExpr{shapeI(u, 0), constantInt(-1)})},
                           only({"useless_reshape"}));
    QCOMPARE(countNodes(*ru.graph, [](const Apply& a) { return a.op().name() == "Reshape"; }), 1);
    // (3, 5) -> (5, 3) is not the identity, and a swapped ShapeI is not either.
    auto x = var("x", DType::Float32, {3, 5});
    Rewritten r =
        rewrite({x}, {reshape(x, std::vector<std::int64_t>{5, 3})}, only({"useless_reshape"}));
    QCOMPARE(countNodes(*r.graph, [](const Apply& a) { return a.op().name() == "Reshape"; }), 1);
    auto y = var("y");
    Rewritten r2 = rewrite({y}, {reshape(y, ShapeExpr{shapeI(y, 1), shapeI(y, 0)})},
                           only({"useless_reshape"}));
    QCOMPARE(countNodes(*r2.graph, [](const Apply& a) { return a.op().name() == "Reshape"; }), 1);
  }

  void testPhaseTogetherKeepsValues() {
    // Every canonicalize rewrite together (mode fast_compile's selection) on one mixed graph.
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d), z = var("z", d);
      const std::vector<VarPtr> outs{((x + y) + 0.0) * 1.0 + z * (y * x) / (y * x),
                                     -(-(x - x)) + transpose(transpose(exp(log(y + 2.0))))};
      Rewritten r = rewrite({x, y, z}, outs, RewriteQuery::forMode("fast_compile"));
      QVERIFY(r.profile.capped.empty());
      QVERIFY(r.graph->nodeCount() < FunctionGraph({x, y, z}, outs).nodeCount());
      QVERIFY(sameValues({x, y, z}, outs, *r.graph, valuesFor({x, y, z}, 24, 0.5, 2.0)));
    }
  }
};

TSCOPE_TEST_MAIN(TestCanonicalize)
#include "tst_canonicalize.moc"
