// Scan's rewrites (engine/rewrite/rules/scan_rewrites.cpp, Note [Scan rewrites]): loop-invariant
// code moved out of the body, unused outputs removed, scans over the same sequences merged; each
// with the graph text before and after and the values of both.
#include "engine/io/graph_text.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/reduce/reduce.h"
#include "rewrite_test_support.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test;

namespace {
VarPtr dvar(const std::string& name, std::vector<std::int64_t> shape) {
  return Variable::create(TensorType(DType::Float64, std::move(shape)), name);
}
const Scan* scanOf(const FunctionGraph& g) {
  for (const Apply* n : g.nodes())
    if (const auto* s = dynamic_cast<const Scan*>(&n->op())) return s;
  return nullptr;
}
int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}
const std::vector<Tensor> kArgs{
    Tensor::fromDoubles(DType::Float64, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
    Tensor::fromDoubles(DType::Float64, {2}, {0.5, -0.5}),
    Tensor::fromDoubles(DType::Float64, {2}, {0.1, 0.2})};
}  // namespace

class TestScanRewrites : public QObject {
  Q_OBJECT

 private slots:
  void testPushoutInvariant() {
    // h[t] = tanh(x[t] + h[t-1] * exp(W * 2)): exp(W * 2) is the same in every step.
    auto x = dvar("x", {kUnknownDim, 2});
    auto h0 = dvar("h0", {2});
    auto W = dvar("W", {2});
    VarPtr h = scan(
        [](const std::vector<VarPtr>& a) {
          return std::vector<VarPtr>{tanh(a[0] + a[1] * exp(a[2] * 2.0))};
        },
        {x}, {h0}, {W}, {}, -1, {.label = "rnn"})[0];
    FunctionGraph before({x, h0, W}, {h});
    const std::string bodyBefore = io::debugPrint(scanOf(before)->body());
    const Rewritten r = rewrite({x, h0, W}, {h}, only({"scan_pushout_invariant"}));
    QVERIFY(logged(r, "scan_pushout_invariant"));
    const Scan* after = scanOf(*r.graph);
    QVERIFY(after != nullptr);
    const std::string bodyAfter = io::debugPrint(after->body());
    const std::string outerAfter = io::debugPrint(*r.graph);
    qInfo("body before:\n%s\nbody after:\n%s\ngraph after:\n%s", bodyBefore.c_str(),
          bodyAfter.c_str(), outerAfter.c_str());
    QCOMPARE(count(bodyBefore, "Elemwise{exp}"), 1);
    QCOMPARE(count(bodyAfter, "Elemwise{exp}"), 0);    // moved out ...
    QCOMPARE(count(bodyAfter, "Elemwise{tanh}"), 1);   // ... the step's own work stays
    QCOMPARE(after->layout().nNonSeqs, 2);             // W, and exp(W * 2)
    QVERIFY(count(outerAfter, "Elemwise{exp}") >= 1);  // computed once, outside
    QVERIFY(sameValues({x, h0, W}, {h}, *r.graph, kArgs));
    // Nothing invariant left: a second pass changes nothing.
    const Rewritten again =
        rewrite(r.graph->inputs(), r.graph->outputs(), only({"scan_pushout_invariant"}));
    QVERIFY(!logged(again, "scan_pushout_invariant"));
  }

  void testRemoveUnusedOutputs() {
    // a[t] = a[t-1] + x[t]; b[t] = b[t-1] * 0.5 + a[t-1]; c[t] = x[t] * 3 (not fed back). Only b
    // is read: c goes, a stays (b reads its states).
    auto x = dvar("x", {kUnknownDim, 2});
    auto a0 = dvar("a0", {2});
    auto b0 = dvar("b0", {2});
    const std::vector<VarPtr> outs = scan(
        [](const std::vector<VarPtr>& v) {  // x[t], a[t-1], b[t-1]
          return std::vector<VarPtr>{v[1] + v[0], v[2] * 0.5 + v[1], v[0] * 3.0};
        },
        {x}, {a0, b0, ScanOutputInfo::none()}, {}, {}, -1, {.label = "three"});
    FunctionGraph before({x, a0, b0}, {outs[1]});
    QCOMPARE(scanOf(before)->nOutputs(), 3);
    const Rewritten r = rewrite({x, a0, b0}, {outs[1]}, only({"scan_remove_unused_outputs"}));
    QVERIFY(logged(r, "scan_remove_unused_outputs"));
    const Scan* after = scanOf(*r.graph);
    qInfo("before:\n%s\nafter:\n%s", io::debugPrint(scanOf(before)->body()).c_str(),
          io::debugPrint(after->body()).c_str());
    QCOMPARE(after->nOutputs(), 2);
    QCOMPARE(after->body().outputs().size(), std::size_t{2});
    QVERIFY(sameValues({x, a0, b0}, {outs[1]}, *r.graph, kArgs));
    // With a read too, nothing is removable but c.
    const Rewritten both =
        rewrite({x, a0, b0}, {outs[0], outs[1]}, only({"scan_remove_unused_outputs"}));
    QCOMPARE(scanOf(*both.graph)->nOutputs(), 2);
    QVERIFY(sameValues({x, a0, b0}, {outs[0], outs[1]}, *both.graph, kArgs));
  }

  void testMergeOverTheSameSequences() {
    auto x = dvar("x", {kUnknownDim, 2});
    auto s0 = dvar("s0", {2});
    auto p0 = dvar("p0", {2});
    VarPtr s = scan([](const std::vector<VarPtr>& v) { return std::vector<VarPtr>{v[1] + v[0]}; },
                    {x}, {s0}, {}, {}, -1, {.label = "sum"})[0];
    VarPtr p = scan([](const std::vector<VarPtr>& v) { return std::vector<VarPtr>{v[1] * v[0]}; },
                    {x}, {p0}, {}, {}, -1, {.label = "prod"})[0];
    const Rewritten r = rewrite({x, s0, p0}, {s, p}, only({"scan_merge"}));
    QVERIFY(logged(r, "scan_merge"));
    const std::string text = io::debugPrint(*r.graph);
    qInfo("after:\n%s", text.c_str());
    QCOMPARE(countNodes(*r.graph, [](const Apply& n) { return n.op().name() == "Scan"; }), 1);
    QVERIFY(count(text, "Scan{sum+prod}") >= 1);
    QCOMPARE(scanOf(*r.graph)->nOutputs(), 2);
    QVERIFY(sameValues({x, s0, p0}, {s, p}, *r.graph, kArgs));
    // Not merged: different taps, or one scan reading the other.
    VarPtr shifted =
        scan([](const std::vector<VarPtr>& v) { return std::vector<VarPtr>{v[1] + v[0]}; },
             {ScanSequence(x, {1})}, {s0}, {}, {}, -1, {.label = "shifted"})[0];
    const Rewritten taps = rewrite({x, s0}, {s, shifted}, only({"scan_merge"}));
    QVERIFY(!logged(taps, "scan_merge"));
    auto k = sum(s);
    VarPtr reader =
        scan([&](const std::vector<VarPtr>& v) { return std::vector<VarPtr>{v[1] * v[0] + v[2]}; },
             {x}, {p0}, {k}, {}, -1, {.label = "reader"})[0];
    const Rewritten dependent = rewrite({x, s0, p0}, {s, reader}, only({"scan_merge"}));
    QVERIFY(!logged(dependent, "scan_merge"));
    QVERIFY(sameValues({x, s0, p0}, {s, reader}, *dependent.graph, kArgs));
  }

  void testFastRunKeepsValues() {
    // All three rewrites in the standard fast_run pipeline, on an RNN with its gradient.
    auto x = dvar("x", {kUnknownDim, 2});
    auto h0 = dvar("h0", {2});
    auto W = dvar("W", {2});
    VarPtr h = scan(
        [](const std::vector<VarPtr>& a) {
          return std::vector<VarPtr>{tanh(a[0] * exp(a[2]) + a[1] * 0.5)};
        },
        {x}, {h0}, {W})[0];
    const Rewritten r = rewrite({x, h0, W}, {sum(h)}, RewriteQuery::forMode("fast_run"));
    QVERIFY(sameValues({x, h0, W}, {sum(h)}, *r.graph, kArgs));
  }
};

TSCOPE_TEST_MAIN(TestScanRewrites)
#include "tst_scan_rewrites.moc"
