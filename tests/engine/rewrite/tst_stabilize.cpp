// The stabilize rewrites: for each, the structure after (countOps, the rewrite log naming it), the
// values before and after on random float32 and float64 inputs of non-square shapes, the cases
// where it must not apply, and that the rewritten graph is finite (or accurate) where the
// original overflows, underflows or cancels.
#include "engine/grad/grad.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "rewrite_test_support.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::engine;
using namespace tscope::test;

namespace {
constexpr std::int64_t U = kUnknownDim;

VarPtr var(const std::string& name, DType d = DType::Float32,
           std::vector<std::int64_t> shape = {U, U}) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

int countNamed(const FunctionGraph& fg, const std::string& opName) {
  return countNodes(fg, [&](const Apply& a) { return a.op().name() == opName; });
}

bool allFinite(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    for (double v : t.toDoubles())
      if (!std::isfinite(v)) return false;
  return true;
}

Tensor filled(DType d, Shape shape, double v) {
  return Tensor::full(d, std::move(shape), v);
}

// Class indices in [0, classes) for `rows` rows.
Tensor classes(std::int64_t rows, std::int64_t classes, std::uint64_t seed) {
  return randomTensor(DType::Int64, {rows}, seed, 0, static_cast<double>(classes));
}

// Only canonicalize and stabilize (the gradient forms need canonicalize's shapes first).
RewriteQuery canonicalizeAndStabilize() {
  RewriteQuery q;
  q.include = {"canonicalize", "stabilize"};
  return q;
}

const std::vector<DType> kFloats{DType::Float32, DType::Float64};

}  // namespace

class TestStabilize : public QObject {
  Q_OBJECT

 private slots:
  void testLog1p() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{log(1.0 + x), log(y + 1.0),
                                     log(elemwise(ScalarOp::Add, {x, constant(1.0, d), y}))};
      Rewritten r = rewrite({x, y}, outs, only({"local_log1p"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{log1p}"), 3);
      QCOMPARE(countOps(*r.graph, "Elemwise{log}"), 0);
      QVERIFY(logged(r, "local_log1p"));
      const std::vector<Tensor> v{randomTensor(d, {3, 5}, 1, 0, 1),
                                  randomTensor(d, {3, 5}, 2, 0, 1)};
      QVERIFY(sameValues({x, y}, outs, *r.graph, v));
    }
    // log(2 + x) is not log1p.
    auto x = var("x");
    Rewritten r = rewrite({x}, {log(2.0 + x)}, only({"local_log1p"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{log1p}"), 0);
  }

  void testLog1pAccuracy() {
    // log(1 + 1e-10) in float64 loses 7 digits to the rounding of 1 + 1e-10; log1p keeps them.
    auto x = var("x", DType::Float64, {2});
    const VarPtr out = log(1.0 + x);
    Rewritten r = rewrite({x}, {out}, only({"local_log1p"}));
    const std::vector<Tensor> v{filled(DType::Float64, {2}, 1e-10)};
    const double before = evaluate({x}, {out}, v)[0].toDoubles()[0];
    const double after = runGraph(*r.graph, v)[0].toDoubles()[0];
    const double exact = std::log1p(1e-10);
    QVERIFY2(std::abs(before - exact) / exact > 1e-9, "the original is expected to be inaccurate");
    QVERIFY2(std::abs(after - exact) / exact < 1e-15, qPrintable(QString::number(after, 'g', 17)));
  }

  void testLog1m() {
    for (DType d : kFloats) {
      auto x = var("x", d);
      const std::vector<VarPtr> outs{log(1.0 - x)};
      Rewritten r = rewrite({x}, outs, only({"local_log1m"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{log1p}"), 1);
      QCOMPARE(countOps(*r.graph, "Elemwise{neg}"), 1);
      QVERIFY(logged(r, "local_log1m"));
      QVERIFY(sameValues({x}, outs, *r.graph, {randomTensor(d, {4, 3}, 3, 0, 0.9)}));
    }
    auto x = var("x");
    Rewritten r = rewrite({x}, {log(x - 1.0)}, only({"local_log1m"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{log1p}"), 0);
  }

  void testExpm1() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{exp(x) - 1.0, exp(y) + (-1.0), exp(x) - 2.0};
      Rewritten r = rewrite({x, y}, outs, only({"local_expm1"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{expm1}"), 2);
      QCOMPARE(countOps(*r.graph, "Elemwise{sub}"), 1);  // exp(x) - 2 stays
      QVERIFY(logged(r, "local_expm1"));
      QVERIFY(sameValues({x, y}, outs, *r.graph,
                         {randomTensor(d, {2, 7}, 4), randomTensor(d, {2, 7}, 5)}));
    }
    auto x = var("x", DType::Float64, {1});
    const VarPtr out = exp(x) - 1.0;
    Rewritten r = rewrite({x}, {out}, only({"local_expm1"}));
    const std::vector<Tensor> v{filled(DType::Float64, {1}, 1e-12)};
    const double exact = std::expm1(1e-12);
    QVERIFY(std::abs(evaluate({x}, {out}, v)[0].toDoubles()[0] - exact) / exact > 1e-6);
    QVERIFY(std::abs(runGraph(*r.graph, v)[0].toDoubles()[0] - exact) / exact < 1e-15);
  }

  void testLogSoftmax() {
    for (DType d : kFloats) {
      auto x = var("x", d);
      const std::vector<VarPtr> outs{log(softmax(x)), log(softmax(x, 0))};
      Rewritten r = rewrite({x}, outs, only({"local_log_softmax"}));
      QCOMPARE(countNamed(*r.graph, "Softmax"), 0);
      QCOMPARE(countOps(*r.graph, "LogSoftmax{axis=1}"), 1);  // the same axis, normalised
      QCOMPARE(countOps(*r.graph, "LogSoftmax{axis=0}"), 1);
      QVERIFY(logged(r, "local_log_softmax"));
      const std::vector<Tensor> small{randomTensor(d, {3, 5}, 6, -3, 3)};
      QVERIFY(sameValues({x}, outs, *r.graph, small));
      // Logits far apart: softmax underflows to 0 and its log is -inf; log_softmax stays finite.
      const std::vector<Tensor> large{randomTensor(d, {3, 5}, 7, -500, 500)};
      QVERIFY(!allFinite(evaluate({x}, outs, large)));
      QVERIFY(allFinite(runGraph(*r.graph, large)));
    }
    auto x = var("x");
    Rewritten r = rewrite({x}, {log(softmax(x) + 1.0)}, only({"local_log_softmax"}));
    QCOMPARE(countNamed(*r.graph, "LogSoftmax"), 0);
  }

  void testLogSigmoid() {
    for (DType d : kFloats) {
      auto x = var("x", d), y = var("y", d);
      const std::vector<VarPtr> outs{log(sigmoid(x)), log(1.0 - sigmoid(y)), log1p(-sigmoid(x))};
      Rewritten r =
          rewrite({x, y}, outs, only({"local_log_sigmoid", "local_log1m_sigmoid", "local_log1m"}));
      QCOMPARE(countOps(*r.graph, "Elemwise{log}"), 0);
      QCOMPARE(countOps(*r.graph, "Elemwise{log1p}"), 0);  // log1m_sigmoid wins over log1m
      QCOMPARE(countOps(*r.graph, "Elemwise{sigmoid}"), 0);
      QCOMPARE(countOps(*r.graph, "Elemwise{softplus}"), 3);
      QVERIFY(logged(r, "local_log_sigmoid") && logged(r, "local_log1m_sigmoid"));
      QVERIFY(!logged(r, "local_log1m"));
      QVERIFY(sameValues({x, y}, outs, *r.graph,
                         {randomTensor(d, {3, 4}, 8, -5, 5), randomTensor(d, {3, 4}, 9, -5, 5)}));
      // sigmoid(-e) underflows to 0 and sigmoid(e) rounds to 1: the logs are -inf before, -e after.
      const double e = d == DType::Float32 ? 120 : 800;
      const std::vector<Tensor> extreme{filled(d, {3, 4}, -e), filled(d, {3, 4}, e)};
      QVERIFY(!allFinite(evaluate({x, y}, outs, extreme)));
      const std::vector<Tensor> after = runGraph(*r.graph, extreme);
      QVERIFY(allFinite(after));
      QVERIFY(std::abs(after[0].toDoubles()[0] + e) < 1e-3);
      QVERIFY(std::abs(after[1].toDoubles()[0] + e) < 1e-3);
    }
  }

  void testLogSumExp() {
    for (DType d : kFloats) {
      auto x = var("x", d);
      const std::vector<VarPtr> outs{log(sum(exp(x), {1})), log(sum(exp(x), {0}, true)),
                                     log(sum(exp(x)))};
      Rewritten r = rewrite({x}, outs, only({"local_logsumexp"}));
      // logsumexp subtracts the max: one Max per rewritten log.
      QCOMPARE(countOps(*r.graph, "Max{axis=[1]}"), 1);
      QCOMPARE(countOps(*r.graph, "Max{axis=[0]}"), 1);
      QCOMPARE(countNamed(*r.graph, "CAReduce"), 6);  // a max and a sum for each
      QCOMPARE(countNamed(*r.graph, "Alloc"), 0);     // the shapes are known equal: no broadcast
      QVERIFY(logged(r, "local_logsumexp"));
      QVERIFY(r.profile.capped.empty());  // logsumexp's own log(sum(exp(x - max))) is left alone
      for (int i = 0; i < 3; ++i)
        QVERIFY(r.graph->outputs()[static_cast<std::size_t>(i)]->type() ==
                outs[static_cast<std::size_t>(i)]->type());
      QVERIFY(sameValues({x}, outs, *r.graph, {randomTensor(d, {3, 5}, 10, -2, 2)}));
      const std::vector<Tensor> large{randomTensor(d, {3, 5}, 11, 500, 800)};
      QVERIFY(!allFinite(evaluate({x}, outs, large)));
      QVERIFY(allFinite(runGraph(*r.graph, large)));
    }
    // A sum in another dtype than exp's (float32 summed in float64) is left alone.
    auto x = var("x");
    Rewritten r =
        rewrite({x}, {log(sum(exp(x), {1}, false, DType::Float64))}, only({"local_logsumexp"}));
    QVERIFY(!logged(r, "local_logsumexp"));
  }

  void testSoftmaxCrossEntropy() {
    for (DType d : kFloats) {
      auto z = var("z", d), t = var("t", DType::Int64, {U});
      const VarPtr p = softmax(z);
      const std::vector<VarPtr> outs{categoricalCrossEntropy(p, t), p * 2.0};
      Rewritten r = rewrite({z, t}, outs, only({"local_softmax_crossentropy"}));
      QCOMPARE(countNamed(*r.graph, "SoftmaxCrossEntropyWithLogits"), 1);
      QCOMPARE(countNamed(*r.graph, "CategoricalCrossEntropy"), 0);
      QCOMPARE(countNamed(*r.graph, "Softmax"), 0);  // the other client takes the fused softmax
      QVERIFY(logged(r, "local_softmax_crossentropy"));
      const std::vector<Tensor> v{randomTensor(d, {4, 5}, 12, -2, 2), classes(4, 5, 13)};
      QVERIFY(sameValues({z, t}, outs, *r.graph, v));
      // A confident wrong prediction: p[target] underflows to 0 and -log(p) is inf before.
      const std::vector<Tensor> large{
          Tensor::fromDoubles(
              d, {4, 5}, {0, 0, 0, 0, 1000, 1, 2, 3, 4, 5, -1000, 0, 0, 0, 0, 0, 900, 0, 0, 0}),
          Tensor::fromDoubles(DType::Int64, {4}, {0, 4, 0, 3})};
      QVERIFY(!allFinite({evaluate({z, t}, outs, large)[0]}));
      QVERIFY(allFinite(runGraph(*r.graph, large)));
      // Distribution targets fuse too.
      auto q = var("q", d);
      const std::vector<VarPtr> soft{categoricalCrossEntropy(softmax(z), softmax(q))};
      Rewritten rs = rewrite({z, q}, soft, only({"local_softmax_crossentropy"}));
      QCOMPARE(countNamed(*rs.graph, "SoftmaxCrossEntropyWithLogits"), 1);
      QVERIFY(sameValues({z, q}, soft, *rs.graph,
                         {randomTensor(d, {4, 5}, 16), randomTensor(d, {4, 5}, 17)}));
    }
    // A softmax over the rows (axis 0) is another function: not fused.
    auto z = var("z"), t = var("t", DType::Int64, {U});
    Rewritten r = rewrite({z, t}, {categoricalCrossEntropy(softmax(z, 0), t)},
                          only({"local_softmax_crossentropy"}));
    QCOMPARE(countNamed(*r.graph, "CategoricalCrossEntropy"), 1);
    QVERIFY(!logged(r, "local_softmax_crossentropy"));
  }

  void testLogSoftmaxNll() {
    for (DType d : kFloats) {
      auto z = var("z", d, {4, 5}), t = var("t", DType::Int64, {4}), q = var("q", d, {4, 5});
      const std::vector<VarPtr> outs{-sum(oneHot(t, shapeI(z, 1), d) * logSoftmax(z), {1}),
                                     sum(-q * logSoftmax(z), {1})};
      Rewritten r = rewrite({z, t, q}, outs, only({"local_log_softmax_nll"}));
      QCOMPARE(countNamed(*r.graph, "SoftmaxCrossEntropyWithLogits"), 2);
      QCOMPARE(countNamed(*r.graph, "OneHot"), 0);  // class indices, not the one-hot matrix
      QCOMPARE(countNamed(*r.graph, "LogSoftmax"), 0);
      QVERIFY(logged(r, "local_log_softmax_nll"));
      const std::vector<Tensor> v{randomTensor(d, {4, 5}, 18, -2, 2), classes(4, 5, 19),
                                  randomTensor(d, {4, 5}, 20, 0, 1)};
      QVERIFY(sameValues({z, t, q}, outs, *r.graph, v));
    }
    // Rows not known to agree (Note [Cross-entropy rows]): t of one row would broadcast before.
    auto z = var("z"), t = var("t", DType::Int64, {U});
    const VarPtr nll = -sum(oneHot(t, shapeI(z, 1)) * logSoftmax(z), {1});
    Rewritten r = rewrite({z, t}, {nll}, only({"local_log_softmax_nll"}));
    QCOMPARE(countNamed(*r.graph, "SoftmaxCrossEntropyWithLogits"), 0);
    // Over the columns of another axis: not the cross-entropy.
    auto z2 = var("z2", DType::Float32, {4, 5}), q2 = var("q2", DType::Float32, {4, 5});
    Rewritten r2 =
        rewrite({z2, q2}, {-sum(q2 * logSoftmax(z2, 0), {1})}, only({"local_log_softmax_nll"}));
    QCOMPARE(countNamed(*r2.graph, "SoftmaxCrossEntropyWithLogits"), 0);
  }

  void testSoftmaxCrossEntropyGrad() {
    for (DType d : kFloats) {
      auto z = var("z", d), t = var("t", DType::Int64, {U});
      const VarPtr loss = mean(categoricalCrossEntropy(softmax(z), t));
      const std::vector<VarPtr> outs{loss, grad(loss, z)};
      Rewritten r = rewrite({z, t}, outs, canonicalizeAndStabilize());
      QCOMPARE(countNamed(*r.graph, "SoftmaxCrossEntropyGrad"), 1);
      QCOMPARE(countNamed(*r.graph, "SoftmaxGrad"), 0);
      QCOMPARE(countNamed(*r.graph, "Softmax"), 0);
      QCOMPARE(countNamed(*r.graph, "SoftmaxCrossEntropyWithLogits"), 1);
      QVERIFY(logged(r, "local_softmax_crossentropy_grad"));
      const std::vector<Tensor> v{randomTensor(d, {6, 4}, 21, -2, 2), classes(6, 4, 22)};
      QVERIFY(sameValues({z, t}, outs, *r.graph, v, 1e-4, 1e-6));
      // Confident wrong predictions: softmax underflows at the target, the unfused gradient
      // divides by it and is NaN; the fused one is finite.
      const std::vector<Tensor> large{randomTensor(d, {6, 4}, 23, -900, 900), classes(6, 4, 24)};
      QVERIFY(!allFinite(evaluate({z, t}, outs, large)));
      QVERIFY(allFinite(runGraph(*r.graph, large)));
    }
    // A SoftmaxGrad of anything else stays.
    auto z = var("z"), g = var("g");
    const VarPtr sm = softmax(z);
    Rewritten r = rewrite({z, g}, {softmaxGrad(g / sm, sm)}, canonicalizeAndStabilize());
    QCOMPARE(countNamed(*r.graph, "SoftmaxGrad"), 1);
  }

  void testStandardModeRunsThem() {
    // The stabilize rewrites are in fast_run, not in fast_compile.
    auto x = var("x");
    const std::vector<VarPtr> outs{log(1.0 + x)};
    QVERIFY(RewriteDb::standard().knownTags().contains("local_log1p"));
    Rewritten compileOnly = rewrite({x}, outs, RewriteQuery::forMode("fast_compile"));
    QCOMPARE(countOps(*compileOnly.graph, "Elemwise{log1p}"), 0);
    RewriteQuery stabilize;
    stabilize.include = {"stabilize"};
    Rewritten r = rewrite({x}, outs, stabilize);
    QCOMPARE(countOps(*r.graph, "Elemwise{log1p}"), 1);
  }
};

TSCOPE_TEST_MAIN(TestStabilize)
#include "tst_stabilize.moc"
