// The rewrite framework: the equilibrium worklist and its use cap, RewriteContext::replace,
// RewriteDb selection, optimize() phases and profile, and the merge family (merge, constant
// folding, dead code elimination).
#include "engine/compile/function.h"
#include "engine/graph/config.h"
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/alloc.h"
#include "rewrite_test_support.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape = {U, U},
            DType d = DType::Float32) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

// neg(neg(x)) -> x, for the framework's own tests.
Replacements doubleNeg(RewriteContext&, Apply& node) {
  if (!isElemwise(node, ScalarOp::Neg)) return {};
  Apply* inner = producedBy(*node.input(0), ScalarOp::Neg);
  if (!inner) return {};
  return {{node.output(0), inner->input(0)}};
}

struct WarningCapture {
  std::vector<std::string> messages;
  WarningHandler previous;
  WarningCapture() {
    previous = setWarningHandler([this](const std::string& m) { messages.push_back(m); });
  }
  ~WarningCapture() { setWarningHandler(previous); }
};
}  // namespace

class TestRewriteFramework : public QObject {
  Q_OBJECT

 private slots:
  void equilibriumReachesFixedPoint() {
    // neg^6(x) needs the rewrite three times; each application exposes the next pair.
    auto x = fvar("x");
    VarPtr y = x;
    for (int i = 0; i < 6; ++i) y = neg(y);
    FunctionGraph fg({x}, {exp(y)});
    RewriteContext ctx(fg);
    const std::size_t changes =
        runEquilibrium(ctx, "test", {nodeRewriter("double_neg", {"Elemwise"}, doubleNeg)});
    QCOMPARE(changes, std::size_t{3});
    QCOMPARE(fg.nodeCount(), std::size_t{1});
    QCOMPARE(fg.outputs()[0]->owner()->input(0), fg.inputs()[0]);
    const RewriterStats& st = ctx.stats("double_neg", "test");
    QCOMPARE(st.applied, std::size_t{3});
    QVERIFY(st.tried >= 3);
  }

  void worklistRevisitsOnlyTouchedNodes() {
    // A long unrelated chain is visited once; the rewrite's neighbourhood is revisited.
    auto x = fvar("x");
    VarPtr chain = x;
    for (int i = 0; i < 200; ++i) chain = exp(chain);
    auto y = neg(neg(x));
    FunctionGraph fg({x}, {chain, y});
    RewriteContext ctx(fg);
    std::size_t calls = 0;
    auto counting = nodeRewriter("counting_double_neg", {}, [&](RewriteContext& c, Apply& n) {
      ++calls;
      return doubleNeg(c, n);
    });
    runEquilibrium(ctx, "test", {counting});
    QCOMPARE(fg.outputs()[1], fg.inputs()[0]);
    // 202 nodes in the first sweep, a few revisits around the change, no second sweep.
    QVERIFY2(calls < 210, qPrintable(QString::number(calls)));
  }

  void useCapStopsRewritesThatUndoEachOther() {
    WarningCapture warnings;
    auto x = fvar("x");
    FunctionGraph fg({x}, {exp(x)});
    RewriteContext ctx(fg);
    // exp(x) -> exp(x * 1) and x * 1 -> x: each undoes the other's work forever.
    auto grow = nodeRewriter("grow", {"Elemwise"}, [](RewriteContext&, Apply& n) -> Replacements {
      if (!isElemwise(n, ScalarOp::Exp) || producedBy(*n.input(0), ScalarOp::Mul)) return {};
      return {{n.output(0), exp(n.input(0) * 1.0f)}};
    });
    auto shrink =
        nodeRewriter("shrink", {"Elemwise"}, [](RewriteContext&, Apply& n) -> Replacements {
          if (!isElemwise(n, ScalarOp::Exp)) return {};
          Apply* m = producedBy(*n.input(0), ScalarOp::Mul);
          if (!m || !isConstantValue(*m->input(1), 1.0)) return {};
          return {{n.output(0), exp(m->input(0))}};
        });
    runEquilibrium(ctx, "test", {grow, shrink});
    QVERIFY(!ctx.profile().capped.empty());
    bool named = false;
    for (const auto& m : warnings.messages)
      named =
          named || m.find("'grow'") != std::string::npos || m.find("'shrink'") != std::string::npos;
    QVERIFY(named);
    fg.checkIntegrity();
  }

  void failingRewriteWarnsAndLeavesTheNode() {
    WarningCapture warnings;
    auto x = fvar("x");
    FunctionGraph fg({x}, {exp(x)});
    RewriteContext ctx(fg);
    auto broken = nodeRewriter("broken", {}, [](RewriteContext&, Apply&) -> Replacements {
      throw std::runtime_error("boom");
    });
    runEquilibrium(ctx, "test", {broken});
    QCOMPARE(fg.nodeCount(), std::size_t{1});
    QVERIFY(!warnings.messages.empty());
    QVERIFY(warnings.messages[0].find("broken") != std::string::npos);
    QVERIFY(warnings.messages[0].find("boom") != std::string::npos);
    // With checks on (debug mode, tests) the failure propagates.
    ctx.setCheckEachChange(true);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, runEquilibrium(ctx, "test", {broken}));
  }

  void replaceRefusesTypeChanges() {
    auto x = fvar("x");
    auto y = exp(x);
    FunctionGraph fg({x}, {y});
    RewriteContext ctx(fg);
    const VarPtr out = fg.outputs()[0];
    // float64 for float32: refused, graph unchanged, the refusal names both variables.
    QVERIFY(!ctx.replace({{out, cast(fg.inputs()[0], DType::Float64)}}, "bad"));
    QVERIFY(ctx.lastRefusal().find("type would change") != std::string::npos);
    QCOMPARE(fg.outputs()[0], out);
    // Losing a static dimension is refused too.
    auto s = fvar("s", {2, 3});
    FunctionGraph fg2({s}, {exp(s)});
    RewriteContext ctx2(fg2);
    auto loose = fvar("loose", {U, 3});
    fg2.addInput(loose);
    QVERIFY(!ctx2.replace({{fg2.outputs()[0], loose}}, "loses_dim"));
    // A same-type replacement is accepted.
    QVERIFY(ctx.replace({{out, tanh(fg.inputs()[0])}}, "ok"));
    QCOMPARE(fg.outputs()[0]->owner()->op().str(), std::string("Elemwise{tanh}"));
    QVERIFY(!ctx.replace({}, "empty"));
  }

  void sequencesAndEquilibriaCompose() {
    auto x = fvar("x");
    auto out = neg(neg(exp(x) * 1.0f)) + neg(neg(exp(x) * 1.0f));
    FunctionGraph fg({x}, {out});
    RewriteContext ctx(fg);
    std::vector<std::string> ran;
    auto first = graphRewriter("first", [&](RewriteContext&) {
      ran.push_back("first");
      return std::size_t{0};
    });
    auto merge = graphRewriter("merge_step", [&](RewriteContext& c) {
      ran.push_back("merge_step");
      return optimize(c.graph(), only({"merge"})).phases.at(0).changes;
    });
    auto seq = sequence(
        "seq",
        {first, equilibrium("eq", {nodeRewriter("double_neg", {"Elemwise"}, doubleNeg)}), merge});
    QCOMPARE(seq->name(), std::string("seq"));
    const std::size_t changes = seq->apply(ctx);
    QCOMPARE(ran, (std::vector<std::string>{"first", "merge_step"}));
    QVERIFY(changes >= 3);  // two double negations, then the two exp(x) * 1 branches merged
    QCOMPARE(countOps(fg, "Elemwise{exp}"), 1);
    QCOMPARE(ctx.stats("double_neg", "eq").applied, std::size_t{2});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sequence("bad", {nullptr}));
  }

  void dbSelectionFollowsTagsAndNames() {
    RewriteDb db;
    db.add(Phase::Canonicalize, nodeRewriter("a", {}, doubleNeg), {"fast_run", "fast_compile"});
    db.add(Phase::Stabilize, nodeRewriter("b", {}, doubleNeg), {"fast_run"});
    db.add(Phase::Fusion, graphRewriter("c", [](RewriteContext&) { return std::size_t{0}; }),
           {"fast_run"});
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             db.add(Phase::Canonicalize, nodeRewriter("a", {}, doubleNeg), {}));
    auto names = [&](const RewriteQuery& q) {
      std::string s;
      for (const auto* e : db.select(q)) s += e->name();
      return s;
    };
    QCOMPARE(names(RewriteQuery::forMode("fast_run")), std::string("abc"));
    QCOMPARE(names(RewriteQuery::forMode("fast_compile")), std::string("a"));
    QCOMPARE(names(RewriteQuery::forMode("none")), std::string(""));
    RewriteQuery q = RewriteQuery::forMode("fast_run");
    q.exclude.insert("fusion");  // a phase name is a tag
    QCOMPARE(names(q), std::string("ab"));
    q.exclude.insert("a");  // so is a rewrite's name
    QCOMPARE(names(q), std::string("b"));
    QCOMPARE(names(only({"c"})), std::string("c"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, RewriteQuery::forMode("fastest"));
    QVERIFY(db.knownTags().count("stabilize") == 1);
  }

  void mergeCommonSubexpressions() {
    auto x = fvar("x"), w = fvar("w");
    auto a = tanh(x * w + 2.0f);
    auto b = tanh(x * w + 2.0f);  // the same expression built twice, constants included
    auto out = a - b * 3.0f;
    auto r = rewrite({x, w}, {out}, only({"merge"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{tanh}"), 1);
    QCOMPARE(countOps(*r.graph, "Elemwise{mul}"), 2);  // x*w once, b*3 once
    QVERIFY(sameValues(
        {x, w}, {out}, *r.graph,
        {randomTensor(DType::Float32, {3, 5}, 1), randomTensor(DType::Float32, {3, 5}, 2)}));
    bool logged = false;
    for (const auto& rec : r.recorder->records())
      logged = logged || (rec.reason == "merge" && rec.phase == "merge");
    QVERIFY(logged);
    // Different ops or different inputs are not merged.
    auto c = exp(x) + log(x) + exp(w);
    auto r2 = rewrite({x, w}, {c}, only({"merge"}));
    QCOMPARE(countOps(*r2.graph, "Elemwise{exp}"), 2);
  }

  void mergeEqualConstants() {
    auto x = fvar("x");
    auto c1 = constant(Tensor::fromDoubles(DType::Float32, {2}, {1, 2}));
    auto c2 = constant(Tensor::fromDoubles(DType::Float32, {2}, {1, 2}));
    auto c3 = constant(Tensor::fromDoubles(DType::Float32, {2}, {1, 3}));
    auto out = (x + c1) * (x + c2) + c3;
    auto r = rewrite({x}, {out}, only({"merge"}));
    QCOMPARE(countOps(*r.graph, "Elemwise{add}"), 2);  // x + c1 merged with x + c2
    QVERIFY(sameValues({x}, {out}, *r.graph, {randomTensor(DType::Float32, {3, 2}, 3)}));
  }

  void mergeIsLinear() {
    // 20k duplicated nodes merge in one sweep (Theano's merge was quadratic).
    auto x = fvar("x");
    std::vector<VarPtr> outs;
    VarPtr a = x, b = x;
    for (int i = 0; i < 10000; ++i) {
      a = a * 1.5f;
      b = b * 1.5f;
    }
    FunctionGraph fg({x}, {a, b});
    RewriteContext ctx(fg);
    QElapsedTimer t;
    t.start();
    const auto p = optimize(fg, only({"merge"}));
    QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
    QCOMPARE(fg.nodeCount(), std::size_t{10000});
    QCOMPARE(fg.outputs()[0], fg.outputs()[1]);
    QCOMPARE(p.nodesBefore, std::size_t{20000});
  }

  void constantFolding() {
    auto x = fvar("x");
    auto two = constant(2.0, DType::Float32), three = constant(3.0, DType::Float32);
    auto out = x * exp(two + three);
    auto r = rewrite({x}, {out}, only({"constant_folding"}));
    QCOMPARE(r.graph->nodeCount(), std::size_t{1});
    const Variable& folded = *r.graph->outputs()[0]->owner()->input(1);
    QCOMPARE(folded.kind(), Variable::Kind::Constant);
    QVERIFY(std::abs(static_cast<const Constant&>(folded).value().item() - std::exp(5.0)) < 1e-3);
    QVERIFY(sameValues({x}, {out}, *r.graph, {randomTensor(DType::Float32, {2, 3}, 4)}));
    // An Alloc of constants stays an Alloc (it would put a big constant into the graph).
    auto big = alloc(constant(0.0, DType::Float32), {constantInt(512), constantInt(512)});
    auto r2 = rewrite({x}, {x + big}, only({"constant_folding"}));
    QCOMPARE(countNodes(*r2.graph, [](const Apply& a) { return a.op().name() == "Alloc"; }), 1);
  }

  void constantFoldingLeavesRuntimeErrorsToRunTime() {
    // A reshape of a constant to an impossible shape is left for run time to report.
    auto x = fvar("x", {U});
    auto c = constant(Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3}));
    auto out = x + c;  // fine; folding has nothing to do
    auto r = rewrite({x}, {out}, only({"constant_folding"}));
    QCOMPARE(r.graph->nodeCount(), std::size_t{1});
  }

  void deadCodeElimination() {
    auto x = fvar("x");
    FunctionGraph fg({x}, {exp(x)});
    fg.importVar(log(fg.inputs()[0]) * 2.0f, "test");
    QCOMPARE(fg.nodeCount(), std::size_t{3});
    const auto p = optimize(fg, only({"dead_code_elimination"}));
    QCOMPARE(fg.nodeCount(), std::size_t{1});
    QCOMPARE(p.phases.size(), std::size_t{1});
    QCOMPARE(p.phases[0].nodesBefore, std::size_t{3});
    QCOMPARE(p.phases[0].nodesAfter, std::size_t{1});
    fg.checkIntegrity();
  }

  void optimizeRecordsPhasesInOrder() {
    auto x = fvar("x");
    auto out =
        neg(neg(x)) * (constant(1.0, DType::Float32) + constant(1.0, DType::Float32)) + neg(neg(x));
    RewriteDb db;
    registerMergeRewrites(db);
    db.add(Phase::Stabilize, nodeRewriter("double_neg", {"Elemwise"}, doubleNeg), {"fast_run"});
    FunctionGraph fg({x}, {out});
    auto recorder = std::make_shared<RewriteRecorder>();
    fg.attachFeature(recorder);
    const auto p = optimize(fg, RewriteQuery::forMode("fast_run"), db);
    std::vector<std::string> phases;
    for (const auto& ps : p.phases) phases.push_back(ps.name);
    QCOMPARE(phases,
             (std::vector<std::string>{"merge", "canonicalize", "stabilize", "final_merge"}));
    std::string order;
    for (const auto& rec : recorder->records()) order += rec.phase + ":" + rec.reason + " ";
    QVERIFY2(order.find("merge:merge") < order.find("canonicalize:constant_folding"),
             order.c_str());
    QVERIFY2(order.find("canonicalize:constant_folding") < order.find("stabilize:double_neg"),
             order.c_str());
    QCOMPARE(recorder->phase(), std::string());
    QVERIFY(p.seconds > 0);
    QVERIFY(p.nodesAfter < p.nodesBefore);
    for (const auto& rec : recorder->records())
      QVERIFY(!rec.addedNodes.empty() || !rec.removedNodes.empty() || !rec.replaced.empty());
  }

  // Note [Rewritten nodes keep their scope]: log(1 + x) built in scope "blk/act" becomes a log1p
  // node in that scope, not at the top level.
  void rewrittenNodesKeepTheirScope() {
    auto x = fvar("x");
    VarPtr out;
    {
      NameScope blk("blk");
      NameScope act("act");
      out = log(1.0f + x) * 2.0f;
    }
    FunctionGraph fg({x}, {out});
    RewriteQuery query = RewriteQuery::forMode("fast_run");
    query.exclude.insert("fusion");  // a fused node takes its root's scope anyway
    optimize(fg, query);
    QCOMPARE(countOps(fg, "Elemwise{log1p}"), 1);
    for (const Apply* node : fg.nodes()) QVERIFY2(node->scope() == "blk/act", node->str().c_str());
  }

  void compileModesGiveTheSameValues() {
    auto x = fvar("x"), w = fvar("w");
    auto h = tanh(x * w + 1.0f);
    auto out = sum(log(1.0f + exp(h)) * 2.0f);
    std::vector<Tensor> values{randomTensor(DType::Float32, {4, 3}, 5),
                               randomTensor(DType::Float32, {4, 3}, 6)};
    const Tensor expected = compile({x, w}, {out})(values)[0];
    for (Mode m : {Mode::FastCompile, Mode::FastRun, Mode::Debug}) {
      CompileOptions o;
      o.mode = m;
      Function f = compile({x, w}, {out}, {}, o);
      QVERIFY(closeTo(f(values)[0], expected, 1e-5, 1e-5));
      QVERIFY(!f.rewriteProfile().phases.empty());
    }
    CompileOptions none;
    Function f0 = compile({x, w}, {out}, {}, none);
    QVERIFY(f0.rewriteLog().empty());
  }

  void debugModeChecksEveryNode() {
    auto x = fvar("x"), w = fvar("w");
    auto out = tanh(x * w + 1.0f) * 2.0f;
    CompileOptions o;
    o.mode = Mode::Debug;
    Function f = compile({x, w}, {out}, {}, o);
    DebugModeObserver* observer = nullptr;
    for (const auto& obs : f.vm().observers())
      if (auto* d = dynamic_cast<DebugModeObserver*>(obs.get())) observer = d;
    QVERIFY(observer);
    f({randomTensor(DType::Float32, {4, 3}, 5), randomTensor(DType::Float32, {4, 3}, 6)});
    QCOMPARE(observer->nodesChecked(), f.graph().nodeCount());
    QVERIFY(observer->findings().empty());
    // A NaN produced from finite inputs is reported with the node that produced it.
    auto bad = log(x - 2.0f);
    Function g = compile({x}, {bad}, {}, o);
    QVERIFY_THROWS_EXCEPTION(DebugModeError, g({randomTensor(DType::Float32, {2, 2}, 7)}));
  }
};

QTEST_APPLESS_MAIN(TestRewriteFramework)
#include "tst_rewrite_framework.moc"
