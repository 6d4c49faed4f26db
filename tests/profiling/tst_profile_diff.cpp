// Profile diffs (profiling/profile_diff.h) related through the rewrite log of real compiles: a
// chain fused into a Composite is one row (three nodes before, one after), duplicate nodes merged
// into one are one row, an inplace rewrite keeps its row, two profiles of one graph match by id,
// and the scope diff adds up. The profiles are built by hand on the compiled graphs' node ids, so
// every figure is known.
#include "engine/compile/function.h"
#include "engine/debug/lineage.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/composite.h"
#include "profiling/profile_diff.h"
#include "test_main.h"

#include <algorithm>
#include <cmath>
#include <functional>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;
using namespace tscope::prof;

namespace {

VarPtr fvar(const std::string& name) {
  return Variable::create(TensorType(DType::Float32, {kUnknownDim}), name);
}

// A profile of f's top-level nodes, two runs, each node taking seconds(node) per run.
Profile profileOf(const Function& f, const std::function<double(const Apply&)>& seconds) {
  Profile p;
  p.function.measuredRuns = 2;
  for (const Apply* a : f.graph().toposort()) {
    NodeProfile n;
    n.id = a->id();
    n.op = a->op().str();
    n.opClass = a->op().name();
    n.scope = a->scope();
    n.calls = 2;
    const double s = seconds(*a);
    n.time = TimeStats::of({s, s});
    p.nodes.push_back(n);
  }
  double total = 0;
  for (const NodeProfile& n : p.nodes) total += n.time.mean;
  p.function.call = TimeStats::of({total, total});
  return p;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-12;
}

const DiffRow* rowWith(const ProfileDiff& d, const std::string& text) {
  for (const DiffRow& r : d.rows)
    if (r.label.find(text) != std::string::npos) return &r;
  return nullptr;
}

}  // namespace

class TestProfileDiff : public QObject {
  Q_OBJECT
 private slots:
  void aFusedChainIsOneRow() {
    VarPtr x = fvar("x");
    VarPtr y = tanh(log(x) * 2.0 + 1.0);
    Function plain = compile({x}, {y});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun});
    const std::size_t before = plain.graph().nodeCount();
    QVERIFY(before >= 3);
    // Each original node 1 ms; the Composite 1.5 ms.
    const Profile a = profileOf(plain, [](const Apply&) { return 0.001; });
    const Profile b = profileOf(fast, [](const Apply& n) {
      return dynamic_cast<const Composite*>(&n.op()) ? 0.0015 : 0.0001;
    });
    debug::NodeLineage lineage(fast.graph(), fast.rewriteLog());
    const ProfileDiff d = diffProfiles({&a, nullptr, "none"}, {&b, &lineage, "fast_run"});
    const DiffRow* fused = rowWith(d, "-> Composite");
    QVERIFY2(fused, diffText(d).c_str());
    QVERIFY(fused->nodesA.size() >= 3);
    QCOMPARE(fused->nodesB.size(), std::size_t(1));
    QVERIFY(fused->label.find("Elemwise{log}") != std::string::npos ||
            fused->label.find("more") != std::string::npos);
    QVERIFY(near(fused->secondsA, 0.001 * double(fused->nodesA.size())));
    QVERIFY(near(fused->secondsB, 0.0015));
    QCOMPARE(fused->callsB, std::int64_t(2));
    // Every node of A and B is in exactly one row.
    std::size_t na = 0, nb = 0;
    for (const DiffRow& r : d.rows) na += r.nodesA.size(), nb += r.nodesB.size();
    QCOMPARE(na, a.nodes.size());
    QCOMPARE(nb, b.nodes.size());
    QVERIFY(near(d.nodesA, 0.001 * double(before)));
    const std::string text = diffText(d);
    QVERIFY2(text.find("Profile diff: A = none, B = fast_run") != std::string::npos, text.c_str());
    QVERIFY(text.find("-> Composite") != std::string::npos);
    const nlohmann::json j = diffJson(d);
    QCOMPARE(j["rows"].size(), d.rows.size());
  }

  void mergedDuplicatesAreOneRow() {
    VarPtr x = fvar("x"), w = fvar("w");
    VarPtr a1 = exp(x + w), a2 = exp(x + w);
    VarPtr y = a1 * a2;
    Function plain = compile({x, w}, {y});
    Function fast = compile({x, w}, {y}, {}, {.mode = Mode::FastRun, .exclude = {"fusion"}});
    debug::NodeLineage lineage(fast.graph(), fast.rewriteLog());
    const Profile a = profileOf(plain, [](const Apply&) { return 0.002; });
    const Profile b = profileOf(fast, [](const Apply&) { return 0.002; });
    const ProfileDiff d = diffProfiles({&a, nullptr, "none"}, {&b, &lineage, "fast_run"});
    // The two exp nodes of A became one node of B (merge): one row, 2 -> 1.
    bool found = false;
    for (const DiffRow& r : d.rows) {
      std::size_t exps = 0;
      for (std::int64_t i : r.nodesA)
        exps += a.nodes[std::size_t(i)].op.find("exp") != std::string::npos;
      if (exps == 2) {
        found = true;
        QVERIFY2(r.nodesB.size() < r.nodesA.size(), r.label.c_str());
      }
    }
    QVERIFY2(found, diffText(d).c_str());
  }

  void inplaceRewriteKeepsTheRow() {
    VarPtr x = fvar("x");
    VarPtr y = exp(x) * 3.0;
    Function plain = compile({x}, {y});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun, .exclude = {"fusion"}});
    debug::NodeLineage lineage(fast.graph(), fast.rewriteLog());
    const Profile a = profileOf(plain, [](const Apply&) { return 0.001; });
    const Profile b = profileOf(fast, [](const Apply&) { return 0.0005; });
    const ProfileDiff d = diffProfiles({&a, nullptr, "none"}, {&b, &lineage, "fast_run"});
    QVERIFY2(diffText(d).find("inplace") != std::string::npos, diffText(d).c_str());
    for (const DiffRow& r : d.rows) {
      // No node vanished or appeared without a counterpart: each row has both sides.
      QVERIFY2(!r.nodesA.empty() && !r.nodesB.empty(), diffText(d).c_str());
      QVERIFY(r.speedup() > 1);
    }
  }

  void sameGraphMatchesById() {
    VarPtr x = fvar("x");
    VarPtr y = sqrt(exp(x) + 1.0);
    Function f = compile({x}, {y}, {}, {.mode = Mode::FastRun, .exclude = {"fusion"}});
    const Profile a = profileOf(f, [](const Apply&) { return 0.001; });
    Profile b = profileOf(f, [](const Apply&) { return 0.001; });
    b.nodes.front().time = TimeStats::of({0.004, 0.004});
    const ProfileDiff d = diffProfiles({&a, nullptr, "run 1"}, {&b, nullptr, "run 2"});
    QCOMPARE(d.rows.size(), a.nodes.size());
    for (const DiffRow& r : d.rows) QCOMPARE(r.nodesA, r.nodesB);
    // The changed node is the first row (largest |delta|).
    QCOMPARE(d.rows.front().nodesB.front(), std::int64_t(0));
    QVERIFY(near(d.rows.front().delta(), 0.003));
  }

  void onlyOnOneSide() {
    Profile a, b;
    a.function.measuredRuns = b.function.measuredRuns = 1;
    NodeProfile n;
    n.id = 5;
    n.op = "Elemwise{neg}";
    n.calls = 1;
    n.scope = "enc/l1";
    n.time = TimeStats::of({0.001});
    a.nodes.push_back(n);
    n.id = 6;
    n.op = "Elemwise{abs}";
    n.scope = "enc/l2";
    b.nodes.push_back(n);
    const ProfileDiff d = diffProfiles({&a, nullptr, "A"}, {&b, nullptr, "B"});
    QCOMPARE(d.rows.size(), std::size_t(2));
    QVERIFY(rowWith(d, "-> (not in B)"));
    QVERIFY(rowWith(d, "(not in A) ->"));
    // Scopes: root, enc, then l1 and l2 (a tie, by name).
    QCOMPARE(d.scopes.size(), std::size_t(4));
    QVERIFY(near(d.scopes[0].inclusiveA, 0.001));
    QVERIFY(near(d.scopes[0].inclusiveB, 0.001));
    QCOMPARE(d.scopes[1].path, std::string("enc"));
    QVERIFY(near(d.scopes[2].inclusiveB, 0) || near(d.scopes[2].inclusiveA, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, diffProfiles({}, {&b, nullptr, "B"}));
  }
};

TSCOPE_TEST_MAIN(TestProfileDiff)
#include "tst_profile_diff.moc"
