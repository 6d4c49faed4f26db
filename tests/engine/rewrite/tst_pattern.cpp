// The declarative pattern rewriter: parsing (good rules, errors with the rule and the column),
// matching (commutative operands, n-ary nodes, repeated variables, numbers, attributes,
// constraints) and building (dtype and shape fitting), run through the equilibrium driver.
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/rewrite/pattern.h"
#include "rewrite_test_support.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test;

namespace {
constexpr std::int64_t U = kUnknownDim;

VarPtr var(const std::string& name, std::vector<std::int64_t> shape = {U, U},
           DType d = DType::Float32) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

// Runs one rewriter (registered alone in a database of its own) to equilibrium.
Rewritten rewriteWith(const NodeRewriterPtr& rewriter, const std::vector<VarPtr>& inputs,
                      const std::vector<VarPtr>& outputs) {
  RewriteDb db;
  db.add(Phase::Canonicalize, rewriter, {"test"});
  return rewrite(inputs, outputs, only({"test"}), db);
}

// Matches a pattern against the first output of a graph built on inputs.
struct Matched {
  std::unique_ptr<FunctionGraph> graph;
  std::unique_ptr<RewriteContext> ctx;
  std::optional<PatternMatch> match;
};
Matched matchOn(std::string_view pattern, const std::vector<VarPtr>& inputs, const VarPtr& output,
                const PatternConstraints& constraints = {}) {
  Matched m;
  m.graph = std::make_unique<FunctionGraph>(inputs, std::vector<VarPtr>{output});
  m.ctx = std::make_unique<RewriteContext>(*m.graph);
  m.match = Pattern::parse(pattern).match(m.graph->outputs()[0], *m.ctx, constraints);
  return m;
}

std::string boundName(const Matched& m, const char* var) {
  return (*m.match)[var]->name();
}

std::vector<Tensor> values(DType d, std::initializer_list<Shape> shapes, std::uint64_t seed,
                           double lo = -1, double hi = 1) {
  std::vector<Tensor> out;
  for (const Shape& s : shapes) out.push_back(randomTensor(d, s, seed++, lo, hi));
  return out;
}
}  // namespace

class TestPattern : public QObject {
  Q_OBJECT

 private slots:
  void testParseGoodRules_data() {
    QTest::addColumn<QString>("rule");
    QTest::addColumn<QString>("tracks");
    QTest::newRow("log1p") << "log(1 + x) -> log1p(x)"
                           << "Elemwise";
    QTest::newRow("precedence") << "x * y + z / w - -v -> add(x, y, z)"
                                << "Elemwise";
    QTest::newRow("nested parens") << "((x)) - (0) -> (x)"
                                   << "Elemwise";
    QTest::newRow("numbers") << "x * 2.5e-1 + .5 -> x * 0.25 + 0.5"
                             << "Elemwise";
    QTest::newRow("attributes") << "log(softmax(x, axis=a)) -> log_softmax(x, axis=a)"
                                << "Elemwise";
    QTest::newRow("function root") << "softmax(x, axis=-1) -> softmax(x, axis=-1)"
                                   << "Softmax";
    QTest::newRow("two rules") << "exp(x) - 1 -> expm1(x)\n\n  softmax(x) -> x"
                               << "Elemwise,Softmax";
  }
  void testParseGoodRules() {
    QFETCH(QString, rule);
    QFETCH(QString, tracks);
    const NodeRewriterPtr r = patternRewriter("r", rule.toStdString());
    QStringList found;
    for (const std::string& t : r->tracks()) found << QString::fromStdString(t);
    QCOMPARE(found.join(','), tracks);
  }

  void testParseErrors_data() {
    QTest::addColumn<QString>("rule");
    QTest::addColumn<int>("column");
    QTest::addColumn<QString>("message");
    QTest::newRow("unclosed") << "log(1 + x -> log1p(x)" << 11 << "expected ')'";
    QTest::newRow("no arrow") << "log(1 + x) log1p(x)" << 12 << "expected '->'";
    QTest::newRow("variable root") << "x -> log(x)" << 1 << "must be an op";
    QTest::newRow("unbound") << "log(1 + x) -> log1p(y)" << 21 << "'y' is not bound";
    QTest::newRow("unknown fn") << "foo(x) -> x" << 1 << "unknown function 'foo'";
    QTest::newRow("arity") << "exp(x, y) -> x" << 1 << "exp takes 1 operand, found 2";
    QTest::newRow("nary") << "add(x) -> x" << 1 << "two or more operands";
    QTest::newRow("uppercase") << "log(X) -> X" << 5 << "lowercase";
    QTest::newRow("builder on left")
        << "logsumexp(x, axis=a) -> x" << 1 << "only appear on the right";
    QTest::newRow("attr needed") << "log(softmax(x)) -> log_softmax(x)" << 20
                                 << "needs its attribute";
    QTest::newRow("attr name") << "softmax(x, dim=a) -> x" << 12 << "takes the attribute axis";
    QTest::newRow("attr unbound") << "softmax(x) -> softmax(x, axis=b)" << 26 << "'b' is not bound";
    QTest::newRow("trailing") << "log(x) -> log1p(x) +" << 21 << "found the end";
    QTest::newRow("cast") << "cast(x) -> x" << 1 << "cast needs a target dtype";
    QTest::newRow("scalar attrs") << "exp(x, axis=1) -> x" << 8 << "exp takes no attributes";
  }
  void testParseErrors() {
    QFETCH(QString, rule);
    QFETCH(int, column);
    QFETCH(QString, message);
    try {
      PatternRule::parse(rule.toStdString());
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      const QString what = QString::fromUtf8(e.what());
      QVERIFY2(what.contains(rule), e.what());
      QVERIFY2(what.contains(QStringLiteral("column %1:").arg(column)), e.what());
      QVERIFY2(what.contains(message), e.what());
    }
  }

  void testRewriterErrorsNameTheRewriteAndLine() {
    try {
      patternRewriter("my_rewrite", "log(x) -> x\nlog(1 + ) -> x");
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      const QString what = QString::fromUtf8(e.what());
      QVERIFY2(what.contains("pattern rewrite my_rewrite, line 2") && what.contains("column 9"),
               e.what());
    }
    try {
      PatternConstraints c;
      c.variables["z"] = floatValued();
      patternRewriter("my_rewrite", "log(exp(x)) -> x", c);
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains("'z', which no rule's left side binds"),
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, patternRewriter("empty", "\n  \n"));
  }

  void testCommutativeMatch() {
    auto a = var("a"), b = var("b");
    for (const VarPtr& out : {log(1.0 + a), log(a + 1.0)}) {
      Matched m = matchOn("log(1 + x)", {a}, out);
      QVERIFY(m.match);
      QCOMPARE(boundName(m, "x"), std::string("a"));
      QCOMPARE(m.match->root().op().str(), std::string("Elemwise{log}"));
    }
    QCOMPARE(PatternRule::parse("log(1 + x)  -> log1p(x)").lhs().text(), std::string("log(1 + x)"));
    QVERIFY(!matchOn("log(1 + x)", {a}, log(2.0 + a)).match);
    QVERIFY(!matchOn("log(1 - x)", {a}, log(a - 1.0)).match);  // sub is ordered
    QVERIFY(matchOn("log(1 - x)", {a}, log(1.0 - a)).match);
    // A pattern of the node's arity matches its operands as a set.
    Matched set =
        matchOn("add(exp(x), y, log(z))", {a, b}, elemwise(ScalarOp::Add, {log(b), a, exp(b)}));
    QVERIFY(set.match);
    QCOMPARE(boundName(set, "x"), std::string("b"));
    QCOMPARE(boundName(set, "y"), std::string("a"));
  }

  void testRestOperand() {
    auto a = var("a"), b = var("b");
    Matched m = matchOn("log(1 + x)", {a, b},
                        log(elemwise(ScalarOp::Add, {a, constant(1.0, DType::Float32), b})));
    QVERIFY(m.match);
    const VarPtr& x = (*m.match)["x"];
    QVERIFY(x->owner() && x->owner()->op().str() == "Elemwise{add}");
    QCOMPARE(x->owner()->nInputs(), 2);
    QCOMPARE(x->owner()->input(0)->name(), std::string("a"));
    QCOMPARE(x->owner()->input(1)->name(), std::string("b"));
    // Repeated variables never take a rest (x appears twice on the left).
    QVERIFY(!matchOn("x + x", {a, b}, elemwise(ScalarOp::Add, {a, a, b})).match);
  }

  void testRepeatedVariables() {
    auto a = var("a"), b = var("b"), c = var("c");
    Matched m1 = matchOn("x * y / y", {a, b}, (a * b) / b);
    QVERIFY(m1.match);
    QCOMPARE(boundName(m1, "x"), std::string("a"));
    Matched m2 = matchOn("x * y / y", {a, b}, (b * a) / b);  // needs the second operand order
    QVERIFY(m2.match);
    QCOMPARE(boundName(m2, "x"), std::string("a"));
    QVERIFY(!matchOn("x * y / y", {a, b, c}, (a * b) / c).match);
    QVERIFY(matchOn("x - x", {a}, a - a).match);
    QVERIFY(!matchOn("x - x", {a, b}, a - b).match);
  }

  void testNumbers() {
    auto a = var("a"), n = var("n", {U, U}, DType::Int32);
    QVERIFY(matchOn("x * 2", {a}, a * 2.0).match);
    QVERIFY(!matchOn("x * 2", {a}, a * 3.0).match);
    QVERIFY(matchOn("x + 0.1", {a}, a + 0.1).match);  // a float32 0.1f is the number 0.1 in float32
    QVERIFY(matchOn("x + -1", {a}, a + (-1.0)).match);
    QVERIFY(
        !matchOn("x + 0.5", {n}, n + constant(0.0, DType::Int32)).match);  // 0.5 is not an integer
    // Seen through broadcasting: a constant broadcast by DimShuffle or Alloc is its one value.
    QVERIFY(
        matchOn("x * 1", {a}, a * dimshuffle(constant(1.0, DType::Float32), {DimShuffle::kNewAxis}))
            .match);
    QVERIFY(matchOn("x * 1", {a}, a * ones(std::vector<std::int64_t>{3, 1}, DType::Float32)).match);
    QVERIFY(!matchOn("x * 1", {a}, a * constant(Tensor::fromDoubles(DType::Float32, {2}, {1, 2})))
                 .match);
  }

  void testAttributes() {
    auto a = var("a");
    Matched m = matchOn("softmax(x, axis=k)", {a}, softmax(a, -1));
    QVERIFY(m.match);
    QCOMPARE(m.match->attr("k"), std::vector<int>{1});  // normalised
    QVERIFY(matchOn("softmax(x, axis=-1)", {a}, softmax(a, 1)).match);
    QVERIFY(!matchOn("softmax(x, axis=-1)", {a}, softmax(a, 0)).match);
    QVERIFY(matchOn("softmax(x)", {a}, softmax(a, 0)).match);
    QVERIFY(!matchOn("softmax(x)", {a}, logSoftmax(a, 0)).match);
    Matched s = matchOn("sum(x, axis=k)", {a}, sum(a));
    QVERIFY(s.match);
    QCOMPARE(s.match->attr("k"), (std::vector<int>{0, 1}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, (void)s.match->attr("nope"));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, (void)(*s.match)["nope"]);
  }

  void testConstraints() {
    auto f = var("f"), n = var("n", {U, U}, DType::Int64);
    PatternConstraints floats;
    floats.variables["x"] = floatValued();
    QVERIFY(matchOn("x * 1", {f}, f * 1.0, floats).match);
    QVERIFY(!matchOn("x * 1", {n}, n * 1.0, floats).match);
    PatternConstraints ints;
    ints.variables["x"] = integralValued();
    QVERIFY(matchOn("x * 1", {n}, n * 1.0, ints).match);
    PatternConstraints rank;
    rank.variables["x"] = ofRank(1);
    auto v = var("v", {U});
    QVERIFY(matchOn("x * 1", {v}, v * 1.0, rank).match);
    QVERIFY(!matchOn("x * 1", {f}, f * 1.0, rank).match);
    PatternConstraints dtype;
    dtype.variables["x"] = ofDType(DType::Int64);
    QVERIFY(matchOn("x * 1", {n}, n * 1.0, dtype).match);
    QVERIFY(!matchOn("x * 1", {f}, f * 1.0, dtype).match);
    // exclusive: an inner node with another client stops the match.
    auto inner = exp(f);
    PatternConstraints exclusive;
    exclusive.exclusive = true;
    FunctionGraph g({f}, {log(inner), inner});
    RewriteContext ctx(g);
    const Pattern p = Pattern::parse("log(exp(x))");
    QVERIFY(p.match(g.outputs()[0], ctx));
    QVERIFY(!p.match(g.outputs()[0], ctx, exclusive));
  }

  void testRewriterAppliesAndKeepsValues() {
    for (DType d : {DType::Float32, DType::Float64}) {
      auto a = var("a", {U, U}, d), b = var("b", {U, U}, d);
      const std::vector<VarPtr> outs{log(1.0 + a) * b, log(b + 1.0)};
      Rewritten r =
          rewriteWith(patternRewriter("test_log1p", "log(1 + x) -> log1p(x)"), {a, b}, outs);
      QCOMPARE(countOps(*r.graph, "Elemwise{log1p}"), 2);
      QCOMPARE(countOps(*r.graph, "Elemwise{log}"), 0);
      QVERIFY(logged(r, "test_log1p"));
      QVERIFY(sameValues({a, b}, outs, *r.graph, values(d, {{3, 5}, {3, 5}}, 7, 0, 1)));
    }
  }

  void testRewriterMatchPredicate() {
    auto v = var("v", {U}), m = var("m");
    PatternConstraints c;
    c.match = [](const PatternMatch& pm, RewriteContext&) { return pm["x"]->type().ndim() == 1; };
    Rewritten r = rewriteWith(patternRewriter("test_exp_log", "exp(log(x)) -> x", c), {v, m},
                              {exp(log(v)), exp(log(m))});
    QCOMPARE(countOps(*r.graph, "Elemwise{exp}"), 1);  // only the vector's
  }

  void testRewriterFitsDtype() {
    // int32 * 1.0 (a float64 constant) is float64: the replacement casts x.
    auto n = var("n", {U, U}, DType::Int32);
    const VarPtr out = n * constant(1.0, DType::Float64);
    Rewritten r = rewriteWith(patternRewriter("test_mul_one", "x * 1 -> x"), {n}, {out});
    QCOMPARE(countOps(*r.graph, "Elemwise{mul}"), 0);
    QCOMPARE(countOps(*r.graph, "Elemwise{cast{float64}}"), 1);
    QCOMPARE(r.graph->outputs()[0]->type().dtype(), DType::Float64);
    QVERIFY(sameValues({n}, {out}, *r.graph, {randomTensor(DType::Int32, {2, 3}, 3, -50, 50)}));
  }

  void testRewriterWidensOperandsNotResult() {
    // log(1 + x) with a float64 1 and a float32 x computes in float64: the rewrite must too.
    auto a = var("a", {U, U}, DType::Float32);
    const VarPtr out = log(constant(1.0, DType::Float64) + a);
    Rewritten r = rewriteWith(patternRewriter("test_log1p", "log(1 + x) -> log1p(x)"), {a}, {out});
    const Apply* root = r.graph->outputs()[0]->owner();
    QVERIFY(root);
    QCOMPARE(root->op().str(), std::string("Elemwise{log1p}"));
    QCOMPARE(root->input(0)->owner()->op().str(), std::string("Elemwise{cast{float64}}"));
  }

  void testRewriterFitsShape() {
    // x * y / y -> x: y may broadcast x, so x is broadcast to the output's shape: second(y, x).
    auto x = var("x", {U, 1}), y = var("y", {U, U});
    const VarPtr out = (x * y) / y;
    Rewritten r = rewriteWith(patternRewriter("test_cancel", "x * y / y -> x"), {x, y}, {out});
    QCOMPARE(countOps(*r.graph, "Elemwise{true_div}"), 0);
    QCOMPARE(countOps(*r.graph, "Elemwise{second}"), 1);
    QVERIFY(logged(r, "test_cancel"));
    QVERIFY(sameValues({x, y}, {out}, *r.graph,
                       {randomTensor(DType::Float32, {4, 1}, 1),
                        randomTensor(DType::Float32, {4, 3}, 2, 0.5, 1.5)}));
  }

  void testRewriterSkipsWhatCannotBuild() {
    // log_softmax refuses an integer input: the match is skipped, the node kept, nothing refused.
    auto n = var("n", {U, U}, DType::Int64);
    const VarPtr out = exp(n) * 2.0;
    Rewritten r = rewriteWith(patternRewriter("test_bad", "exp(x) * 2 -> log_softmax(x, axis=-1)"),
                              {n}, {out});
    QCOMPARE(countOps(*r.graph, "Elemwise{mul}"), 1);
    QVERIFY(!logged(r, "test_bad"));
    for (const RewriterStats& s : r.profile.rewriters) QCOMPARE(s.refused, std::size_t(0));
  }

  void testRightSideNumbersAndNegation() {
    for (DType d : {DType::Float32, DType::Float64}) {
      auto a = var("a", {U, U}, d);
      const VarPtr out = log(sigmoid(-a));
      Rewritten r =
          rewriteWith(patternRewriter("test_ls", "log(sigmoid(x)) -> -softplus(-x)"), {a}, {out});
      // -(-a) folds while building: softplus takes a itself.
      QCOMPARE(countOps(*r.graph, "Elemwise{neg}"), 1);
      QVERIFY(sameValues({a}, {out}, *r.graph, values(d, {{2, 7}}, 11, -3, 3)));
      auto b = var("b", {U, U}, d);
      const VarPtr out2 = exp(b) * 2.0;
      Rewritten r2 =
          rewriteWith(patternRewriter("test_num", "exp(x) * 2 -> exp(x) + exp(x)"), {b}, {out2});
      QCOMPARE(countOps(*r2.graph, "Elemwise{mul}"), 0);
      QVERIFY(sameValues({b}, {out2}, *r2.graph, values(d, {{3, 2}}, 5)));
    }
  }
};

TSCOPE_TEST_MAIN(TestPattern)
#include "tst_pattern.moc"
