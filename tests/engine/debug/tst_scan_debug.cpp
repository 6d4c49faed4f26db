// Debugging a Scan (Note [Loop frames] in engine/vm/vm.h): DebugSession::runToIteration stops at
// the start of iteration k with the iteration in the frame stack, a breakpoint filtered on
// "[iteration==7]" pauses in that iteration only, "@nan" in a body pauses in the iteration that
// made the NaN, and NanGuard's report names the iteration.
#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/debug/nan_guard.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "test_main.h"

#include <cmath>
#include <limits>

using namespace tscope::engine;
using namespace tscope::engine::debug;

namespace {
template <class T>
T get(std::future<T> f) {
  return f.get();
}

// y[t] = y[t-1] + log(x[t]) over 10 steps: a NaN in iteration k when x[k] < 0.
struct Loop {
  VarPtr x = Variable::create(TensorType(DType::Float64, {10}), "x");
  VarPtr y0 = Variable::create(TensorType(DType::Float64, {}), "y0");
  VarPtr y =
      scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] + log(a[0])}; }, {x},
           {y0}, {}, {}, -1, {.label = "acc"})[0];
};

std::vector<Tensor> args(int negativeAt = -1) {
  std::vector<double> v;
  for (int k = 0; k < 10; ++k) v.push_back(k == negativeAt ? -1.0 : double(k + 1));
  return {Tensor::fromDoubles(DType::Float64, {10}, v), Tensor::scalar(DType::Float64, 0)};
}

// The Scan node of f's program and the id of its body's first node.
std::pair<std::int64_t, std::int64_t> scanAndBodyNode(Function& f, std::string_view op) {
  const Program& p = f.vm().program();
  for (const LinkedNode& n : p.nodes())
    if (n.node->op().name() == "Scan") {
      const Program& body = *p.children()[static_cast<std::size_t>(n.child)];
      for (const Apply* inner : body.schedule())
        if (inner->op().str().find(op) != std::string::npos) return {n.node->id(), inner->id()};
    }
  return {-1, -1};
}
}  // namespace

class TestScanDebug : public QObject {
  Q_OBJECT

 private slots:
  void testRunToIteration() {
    Loop m;
    Function f = compile({m.x, m.y0}, {m.y * 1.0});
    const auto [scanId, logId] = scanAndBodyNode(f, "log");
    QVERIFY(scanId >= 0 && logId >= 0);
    DebugSession s(f);
    get(s.start(args()));
    SessionState st = get(s.runToIteration(scanId, 3));
    QCOMPARE(st.phase, SessionPhase::Paused);
    QCOMPARE(st.reason, PauseKind::Step);
    QCOMPARE(st.frames.size(), std::size_t{2});
    QCOMPARE(st.frames[1].callerNodeId, scanId);
    QCOMPARE(QString::fromStdString(st.frames[1].callerOp), QString("Scan{acc}"));
    QCOMPARE(st.frames[1].iteration, std::int64_t{3});
    QCOMPARE(st.frames[1].iterations, std::int64_t{10});
    QCOMPARE(st.frames[1].pc, std::size_t{0});
    QVERIFY2(st.message.find("iteration 3") != std::string::npos, st.message.c_str());
    // The frame's inputs are iteration 3's: x[3] = 4, y[2] = log 1 + log 2 + log 3.
    bool sawX = false, sawY = false;
    for (const ValueView& v : get(s.values(1))) {
      if (v.name.rfind("x[t]", 0) == 0) {
        QCOMPARE(v.value.item(), 4.0);
        sawX = true;
      }
      if (v.name.rfind("y0[t-1]", 0) == 0) {
        QVERIFY(std::abs(v.value.item() - std::log(6.0)) < 1e-12);
        sawY = true;
      }
    }
    QVERIFY(sawX && sawY);
    // Further on in the same execution, then to the end.
    st = get(s.runToIteration(scanId, 8));
    QCOMPARE(st.frames.back().iteration, std::int64_t{8});
    st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
    // Refusals: not a loop, a negative iteration.
    get(s.start(args()));
    bool refused = false;
    try {
      get(s.runToIteration(logId, 1));
    } catch (const std::invalid_argument& e) {
      refused = std::string(e.what()).find("not a loop") != std::string::npos;
    }
    QVERIFY(refused);
  }

  void testBreakpointInOneIteration() {
    const BreakpointSpec spec = parseBreakSpec("node:9/4@nan[iteration==7]");
    QCOMPARE(spec.iteration, std::int64_t{7});
    QCOMPARE(spec.condition.kind, BreakCondition::Kind::AnyNan);
    QCOMPARE(QString::fromStdString(toString(spec)), QString("node:9/4@nan[iteration==7]"));
    bool refused = false;
    try {
      parseBreakSpec("node:9/4[iteration==x]");
    } catch (const std::invalid_argument& e) {
      refused = std::string(e.what()).find("[iteration==K]") != std::string::npos;
    }
    QVERIFY(refused);
    Loop m;
    Function f = compile({m.x, m.y0}, {m.y * 1.0});
    const auto [scanId, logId] = scanAndBodyNode(f, "log");
    DebugSession s(f);
    const std::string text =
        "node:" + std::to_string(scanId) + "/" + std::to_string(logId) + "[iteration==7]";
    get(s.addBreakpoint(parseBreakSpec(text)));
    SessionState st = get(s.run(args()));
    QCOMPARE(st.reason, PauseKind::Breakpoint);
    QCOMPARE(st.frames.back().iteration, std::int64_t{7});
    // Once per execution: the next run finishes.
    st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
  }

  void testNanBreakpointFindsTheIteration() {
    Loop m;
    Function f = compile({m.x, m.y0}, {m.y * 1.0});
    const auto [scanId, logId] = scanAndBodyNode(f, "log");
    DebugSession s(f);
    get(s.addBreakpoint(
        parseBreakSpec("node:" + std::to_string(scanId) + "/" + std::to_string(logId) + "@nan")));
    SessionState st = get(s.run(args(5)));
    QCOMPARE(st.reason, PauseKind::Breakpoint);
    QCOMPARE(st.frames.back().iteration, std::int64_t{5});
    // Without a NaN: no pause.
    st = get(s.run(args()));
    QCOMPARE(st.phase, SessionPhase::Finished);
  }

  void testNanGuardNamesTheIteration() {
    Loop m;
    auto guard = std::make_shared<NanGuard>(NanGuardOptions{.checks = bit(NanCheck::NaN)});
    Function f = compile({m.x, m.y0}, {m.y * 1.0}, {}, {.observers = {guard}});
    std::optional<NanReport> report;
    try {
      f(args(6));
    } catch (const NanGuardError& e) {
      report = e.report();
    }
    QVERIFY(report.has_value());
    QCOMPARE(report->node.frames.size(), std::size_t{1});
    QCOMPARE(report->node.iterations, std::vector<std::int64_t>{6});
    const std::string text = report->summary() + "\n" + report->toText();
    QVERIFY2(text.find("(iteration 6)") != std::string::npos, text.c_str());
    QCOMPARE(report->node.toJson()["iterations"], nlohmann::json::array({6}));
  }
};

TSCOPE_TEST_MAIN(TestScanDebug)
#include "tst_scan_debug.moc"
