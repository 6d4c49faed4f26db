// The profile's tables (profiling/aggregate.h) and the text and JSON reports (profiling/report.h)
// on hand-built profiles whose every figure is known: self vs total time of a frame node, the
// class/op/apply groupings, shares that add up, sorting by each key, truncation with "remaining
// rows account for", the scope tree's inclusive and exclusive sums, untaken branches, the memory
// and rewrite sections, and the JSON form.
#include "profiling/aggregate.h"
#include "profiling/calibration.h"
#include "profiling/report.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::prof;

namespace {

// A node with per-run times `perRun` (seconds, one per measured run) and `calls` calls in all.
NodeProfile node(std::int64_t id, std::string op, std::string opClass, std::string scope,
                 std::vector<double> perRun, std::int64_t calls = -1) {
  NodeProfile n;
  n.id = id;
  n.op = std::move(op);
  n.opClass = std::move(opClass);
  n.scope = std::move(scope);
  n.calls = calls < 0 ? static_cast<std::int64_t>(perRun.size()) : calls;
  n.time = TimeStats::of(perRun);
  return n;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::fabs(b));
}

// Two runs. Times per run (ms): add 3 and 5 (mean 4), mul 1 and 1, a second add with other props
// 2 and 2, an OpFromGraph #10 of 6 and 8 (mean 7) whose body holds 10/1 (2 and 2) and 10/2 (1
// and 3), and an IfElse branch node 11/1 that never ran.
Profile sample() {
  Profile p;
  p.name = "sample.tsg";
  p.function.mode = "fast_run";
  p.function.measuredRuns = 2;
  p.function.warmupRuns = 1;
  p.function.call = TimeStats::of({0.020, 0.022});
  p.nodes.push_back(node(1, "Elemwise{add}", "Elemwise", "enc/l1", {0.003, 0.005}));
  p.nodes.push_back(node(2, "Elemwise{mul}", "Elemwise", "enc/l2", {0.001, 0.001}));
  p.nodes.push_back(node(3, "Elemwise{add,inplace}", "Elemwise", "enc", {0.002, 0.002}));
  NodeProfile ofg = node(10, "OpFromGraph{block}", "OpFromGraph", "dec", {0.006, 0.008});
  ofg.hasInnerGraph = true;
  p.nodes.push_back(ofg);
  NodeProfile inner1 = node(1, "Dot", "Dot", "dec/attn", {0.002, 0.002});
  inner1.framePath = {10};
  p.nodes.push_back(inner1);
  NodeProfile inner2 = node(2, "Elemwise{exp}", "Elemwise", "dec/attn", {0.001, 0.003});
  inner2.framePath = {10};
  p.nodes.push_back(inner2);
  NodeProfile untaken = node(1, "Elemwise{neg}", "Elemwise", "dec", {}, 0);
  untaken.framePath = {11};
  p.nodes.push_back(untaken);
  return p;
}

}  // namespace

class TestReport : public QObject {
  Q_OBJECT
 private slots:
  void selfTimeOfAFrameNodeExcludesItsBody() {
    const Tables t = aggregate(sample());
    // #10: total 7 ms per run, body 2 + 2 ms: self 3 ms.
    QVERIFY(near(t.selfSeconds[3], 0.003));
    QVERIFY(near(t.selfSeconds[0], 0.004));
    // Time in nodes counts each moment once: 4 + 1 + 2 + 3 + 2 + 2 = 14 ms.
    QVERIFY(near(t.timeInNodes, 0.014));
    const auto frame = std::find_if(t.applies.begin(), t.applies.end(),
                                    [](const ApplyRow& r) { return r.node == 3; });
    QVERIFY(frame != t.applies.end());
    QVERIFY(near(frame->totalSeconds, 0.007));
    QVERIFY(near(frame->selfSeconds, 0.003));
    QVERIFY(near(frame->perCall, 0.007));
  }

  void untakenNodesHaveNoRow() {
    const Tables t = aggregate(sample());
    QCOMPARE(t.applies.size(), std::size_t(6));
    for (const ApplyRow& r : t.applies) QVERIFY(r.node != 6);
  }

  void sharesAddUpInEveryTable() {
    const Tables t = aggregate(sample());
    auto sum = [](const auto& rows) {
      double s = 0;
      for (const auto& r : rows) s += r.share;
      return s;
    };
    QVERIFY(near(sum(t.applies), 1.0));
    QVERIFY(near(sum(t.ops), 1.0));
    QVERIFY(near(sum(t.classes), 1.0));
    QVERIFY(near(t.scopes.front().share, 1.0));
  }

  void classesAndOpsGroup() {
    const Tables t = aggregate(sample());
    // Elemwise: add 4 + mul 1 + add,inplace 2 + exp 2 = 9 ms over 8 calls (the untaken neg
    // never ran); the first row is the slowest class.
    QCOMPARE(t.classes.front().name, std::string("Elemwise"));
    QVERIFY(near(t.classes.front().selfSeconds, 0.009));
    QCOMPARE(t.classes.front().calls, std::int64_t(8));
    QCOMPARE(t.classes.front().applies, std::int64_t(4));
    // per call: 18 ms summed over the two runs / 8 calls.
    QVERIFY(near(t.classes.front().perCall, 0.018 / 8));
    // Ops with other props are other rows.
    QCOMPARE(t.ops.size(), std::size_t(6));
    QCOMPARE(t.ops.front().name, std::string("Elemwise{add}"));
  }

  void sortKeys() {
    const Profile p = sample();
    Tables t = aggregate(p, SortKey::Total);
    for (std::size_t i = 1; i < t.applies.size(); ++i)
      QVERIFY(t.applies[i - 1].selfSeconds >= t.applies[i].selfSeconds);
    QCOMPARE(t.applies.front().node, std::int64_t(0));
    t = aggregate(p, SortKey::Mean);
    QCOMPARE(t.applies.front().node, std::int64_t(3));  // the frame: 7 ms per call
    t = aggregate(p, SortKey::P95);
    for (std::size_t i = 1; i < t.applies.size(); ++i)
      QVERIFY(t.applies[i - 1].p95 >= t.applies[i].p95);
    QVERIFY(near(t.applies.front().p95, 0.008));
    Profile calls = p;
    calls.nodes[1].calls = 50;
    t = aggregate(calls, SortKey::Calls);
    QCOMPARE(t.applies.front().node, std::int64_t(1));
    QCOMPARE(parseSortKey("p95"), SortKey::P95);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseSortKey("fast"));
  }

  void scopeTreeSums() {
    const Tables t = aggregate(sample());
    auto row = [&](const std::string& path) -> const ScopeRow* {
      for (const ScopeRow& r : t.scopes)
        if (r.path == path) return &r;
      return nullptr;
    };
    QVERIFY(row("") && near(row("")->inclusive, 0.014));
    QCOMPARE(row("")->depth, 0);
    // enc: its own add,inplace (2) + l1 (4) + l2 (1).
    QVERIFY(row("enc") && near(row("enc")->inclusive, 0.007));
    QVERIFY(near(row("enc")->exclusive, 0.002));
    QCOMPARE(row("enc")->applies, std::int64_t(3));
    QVERIFY(row("enc/l1") && near(row("enc/l1")->exclusive, 0.004));
    QCOMPARE(row("enc/l1")->depth, 2);
    // dec: the frame's self time (3) + its body under dec/attn (2 + 2).
    QVERIFY(row("dec") && near(row("dec")->inclusive, 0.007));
    QVERIFY(near(row("dec")->exclusive, 0.003));
    QVERIFY(row("dec/attn") && near(row("dec/attn")->inclusive, 0.004));
    // Depth first, larger child first: enc and dec tie at 7 ms, so the order is stable by name.
    QCOMPARE(t.scopes[1].path, std::string("dec"));
    QCOMPARE(t.scopes[2].path, std::string("dec/attn"));
    QCOMPARE(scopeComponents("a//b/"), (std::vector<std::string>{"a", "b"}));
  }

  void textReportHasEveryTable() {
    Profile p = sample();
    p.memory.planPeakBytes = 3 * 1024 * 1024;
    p.nodes[0].outputs.push_back({{256, 1024}, "float32", 1 << 20, OutputKind::Created});
    p.nodes[2].outputs.push_back({{256, 1024}, "float32", 1 << 20, OutputKind::Inplace});
    p.rewritePhases.push_back({"canonicalize", 0.001, 10, 8, 2});
    p.rewriters.push_back({"local_add_canonizer", "canonicalize", 10, 2, 0, 0.0005});
    const std::string text = reportText(p, {.rows = 3});
    if (qEnvironmentVariableIsSet("TSCOPE_SHOW_REPORT")) qInfo("%s", text.c_str());
    for (const char* part :
         {"Function profile: sample.tsg", "mode fast_run", "2 measured calls after 1 warm-up",
          "\nClass\n", "\nOps (equal props: one row)\n", "\nApply", "\nScopes", "\nMemory\n",
          "peak with the current plan:         3.0 MiB", "inplace", "\nRewrites\n",
          "local_add_canonizer (canonicalize)", "Self time is a node's own time"})
      QVERIFY2(text.find(part) != std::string::npos, part);
    // Apply: 6 rows, 3 shown; the other three (mul 1, exp 2, add,inplace 2 or dot 2) = 5 ms.
    QVERIFY2(text.find("(remaining 3 rows account for 35.7% (5 ms) of the runtime)") !=
                 std::string::npos,
             text.c_str());
  }

  void kernelNoteFollowsTheOp() {
    // Note [Kernel notes]: the cuDNN convolutions' chosen algorithm shows in the Apply table.
    Profile p = sample();
    p.nodes[0].kernelNote = "cudnn fwd WINOGRAD (time_once, ws 2 MiB)";
    const std::string text = reportText(p, {.rows = 10});
    QVERIFY2(text.find(p.nodes[0].op + " {cudnn fwd WINOGRAD (time_once, ws 2 MiB)}") !=
                     std::string::npos ||
                 text.find("{cudnn fwd WINOGRAD (time_once, ws 2 MiB)}") != std::string::npos,
             text.c_str());
    QVERIFY(reportText(sample(), {.rows = 10}).find("{cudnn") == std::string::npos);
  }

  void jsonHasEveryRow() {
    const nlohmann::json j = reportJson(sample());
    QCOMPARE(j["schema"].get<int>(), 1);
    QCOMPARE(j["applies"].size(), std::size_t(6));
    QCOMPARE(j["ops"].size(), std::size_t(6));
    QCOMPARE(j["classes"].size(), std::size_t(3));
    QVERIFY(j["applies"][0]["cost"].is_null());
    QCOMPARE(j["applies"][0]["id"].get<std::int64_t>(), std::int64_t(1));
    QVERIFY(near(j["function"]["time_in_nodes"].get<double>(), 0.014));
    QCOMPARE(j["scopes"][0]["path"].get<std::string>(), std::string(""));
    QVERIFY(j["memory"].contains("peak_without_inplace_bytes"));
    QVERIFY(j["capture"].contains("dropped_events"));
  }

  void rooflineUsesTheEngineThreads() {
    // One node of 1 GFLOP per call taking 10 ms; peaks 100 GFLOP/s on one thread, 200 on all.
    Profile p;
    p.function.measuredRuns = 1;
    p.nodes.push_back(node(1, "Dot", "Dot", "", {0.010}));
    p.nodes[0].cost = {1e9, 8, 8, true};
    Calibration c;
    c.threads = 2;
    c.gemmGflopsOne = 100;
    c.gemmGflopsAll = 200;
    c.bandwidthGBsOne = 10;
    c.bandwidthGBsAll = 20;
    p.calibration = c.toJson();
    auto fraction = [&] {
      return reportJson(p)["applies"][0]["roofline"]["fraction"].get<double>();
    };
    p.function.threads = 1;
    QVERIFY(near(fraction(), 1.0));
    QVERIFY(reportText(p).find("on one thread, as the engine ran") != std::string::npos);
    QVERIFY(reportText(p).find("faster than the calibrated bound") == std::string::npos);
    // Note [Roofline above the bound]: a calibration taken while the machine ran slower.
    c.gemmGflopsOne = 50;
    c.date = "2026-12-07T20:00:00Z";
    p.calibration = c.toJson();
    QVERIFY(near(fraction(), 2.0));
    const std::string slow = reportText(p);
    QVERIFY2(slow.find("note: 1 node ran faster than the calibrated bound (up to 200.0%): the "
                       "calibration of 2026-12-07T20:00:00Z") != std::string::npos,
             slow.c_str());
    c.gemmGflopsOne = 100;
    p.calibration = c.toJson();
    p.function.threads = 2;
    QVERIFY(near(fraction(), 0.5));
    p.function.threads = 0;  // not recorded: the all-threads peaks
    QVERIFY(near(fraction(), 0.5));
    QCOMPARE(reportJson(p)["applies"][0]["roofline"]["limit"].get<std::string>(),
             std::string("compute"));
    // No calibration: no roofline.
    p.calibration.reset();
    QVERIFY(reportJson(p)["applies"][0]["roofline"].is_null());
  }

  void formats() {
    QCOMPARE(formatSeconds(0), std::string("0"));
    QCOMPARE(formatSeconds(1.5), std::string("1.5 s"));
    QCOMPARE(formatSeconds(0.0123), std::string("12.3 ms"));
    QCOMPARE(formatSeconds(45.6e-6), std::string("45.6 us"));
    QCOMPARE(formatSeconds(789e-9), std::string("789 ns"));
    QCOMPARE(formatBytes(512), std::string("512 B"));
    QCOMPARE(formatBytes(1536), std::string("1.5 KiB"));
    QCOMPARE(formatShare(0.123), std::string("12.3%"));
  }

  void timeStatsNearestRank() {
    const TimeStats s = TimeStats::of({5, 1, 4, 2, 3});
    QCOMPARE(s.count, std::int64_t(5));
    QCOMPARE(s.median, 3.0);
    QCOMPARE(s.p95, 5.0);
    QCOMPARE(s.min, 1.0);
    QCOMPARE(s.mean, 3.0);
    std::vector<double> hundred;
    for (int i = 1; i <= 100; ++i) hundred.push_back(i);
    QCOMPARE(TimeStats::of(hundred).p95, 95.0);
    QCOMPARE(TimeStats::of(hundred).median, 50.0);
    QCOMPARE(TimeStats::of({}).count, std::int64_t(0));
  }
};

TSCOPE_TEST_MAIN(TestReport)
#include "tst_report.moc"
