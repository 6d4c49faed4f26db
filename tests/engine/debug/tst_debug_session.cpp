// DebugSession (engine/debug/debug_session.h): runs to the end and finish; steps with values and
// the next node's inputs; breakpoints of each target, condition, hit count and enabled flag; a
// breakpoint on an original node that fusion folded into a Composite; edits checked against the
// type, recompute touching only the downstream nodes (counted by an observer), undo; restart
// reproducing a random op's values; stop from every phase and during a long GEMM, leaving the
// shared variables unchanged; every command in the wrong phase; stepInto two OpFromGraphs deep;
// random command sequences from two threads.
#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/debug/nan_guard.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/source_site.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/random/random_stream.h"
#include "engine/ops/reduce/reduce.h"
#include "session_test_support.h"
#include "test_main.h"

#include <chrono>
#include <random>
#include <thread>

using namespace tscope::engine;
using namespace tscope::engine::debug;
using tscope::test::errorOf;
using tscope::test::get;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape = {U}) {
  return Variable::create(TensorType(DType::Float32, std::move(shape)), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}
VarPtr named(VarPtr v, const std::string& name) {
  v->setName(name);
  return v;
}

struct Counter : ExecutionObserver {
  std::vector<std::int64_t> after;
  void onStart(VM&) override { after.clear(); }
  void afterNode(VM&, const NodeEvent& e) override { after.push_back(e.node.id()); }
};

// h = exp(x); a = h * 2; b = h + 1; out = a * b  (mode none: four nodes in this order or a-b
// swapped), with names on every value.
struct Diamond {
  VarPtr x = fvar("x");
  VarPtr h = named(exp(x), "h");
  VarPtr a = named(h * 2.0, "a");
  VarPtr b = named(h + 1.0, "b");
  VarPtr out = named(a * b, "out");
  std::shared_ptr<Counter> counter = std::make_shared<Counter>();
  Function f = compile({x}, {out});
};

std::int64_t nodeOf(const Function& f, const std::string& name) {
  for (const Variable* v : f.graph().variables())
    if (v->name() == name && v->owner()) return v->owner()->id();
  return -1;
}
}  // namespace

class TestDebugSession : public QObject {
  Q_OBJECT
 private slots:
  void testRunAndFinish() {
    Diamond d;
    DebugSession s(d.f);
    QCOMPARE(s.state().phase, SessionPhase::Idle);
    SessionState st = get(s.start({ft({2}, {0, 1})}));
    QCOMPARE(st.phase, SessionPhase::Ready);
    QCOMPARE(st.frames.size(), std::size_t(1));
    QCOMPARE(st.frames[0].pc, std::size_t(0));
    st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
    QCOMPARE(st.reason, PauseKind::Finished);
    QVERIFY(st.serial > 0);
    // run(args): start and run as one command, the same values.
    QCOMPARE(get(s.run({ft({2}, {0, 1})})).phase, SessionPhase::Finished);
    const std::vector<Tensor> out = get(s.finish());
    QCOMPARE(out.size(), std::size_t(1));
    const double e = std::exp(1.0);
    QVERIFY(std::abs(out[0].at({1}) - (2 * e) * (e + 1)) < 1e-4);
    QCOMPARE(s.state().phase, SessionPhase::Idle);
  }

  void testStepValuesNextInputs() {
    Diamond d;
    DebugSession s(d.f);
    get(s.start({ft({2}, {0, 1})}));
    SessionState st = get(s.step());
    QCOMPARE(st.phase, SessionPhase::Paused);
    QCOMPARE(st.reason, PauseKind::Step);
    QCOMPARE(st.frames[0].pc, std::size_t(1));
    QCOMPARE(st.lastNodeId, nodeOf(d.f, "h"));
    const std::optional<ValueView> h = get(s.value("h"));
    QVERIFY(h.has_value());
    QCOMPARE(h->producerId, nodeOf(d.f, "h"));
    QCOMPARE(h->value.at({0}), 1.0);
    QCOMPARE(h->stats.max, double(float(std::exp(1.0))));
    QVERIFY(!get(s.value("out")).has_value());  // not computed yet
    const std::vector<ValueView> all = get(s.values(0));
    QCOMPARE(all.size(), std::size_t(2));  // x and h
    // The next node (a or b) reads h and a constant.
    const std::vector<ValueView> next = get(s.nextInputs());
    QCOMPARE(next.size(), std::size_t(2));
    QVERIFY(
        std::any_of(next.begin(), next.end(), [](const ValueView& v) { return v.name == "h"; }));
    // Values are copies: changing one changes nothing in the session.
    Tensor copy = h->value;
    copy.set({0}, 42.0);
    QCOMPARE(get(s.value("h"))->value.at({0}), 1.0);
    // Other names: #ID and node:ID.
    QCOMPARE(get(s.value("#" + std::to_string(h->varId)))->name, std::string("h"));
    QCOMPARE(get(s.value("node:" + std::to_string(h->producerId)))->varId, h->varId);
    QVERIFY(errorOf(s.value("nope")).find("no variable 'nope'") != std::string::npos);
    QVERIFY(errorOf(s.values(3)).find("no frame 3") != std::string::npos);
    get(s.step());
    get(s.step());
    st = get(s.step());
    QCOMPARE(st.phase, SessionPhase::Finished);
  }

  void testBreakpointTargets_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("stopsAfter");  // the variable whose node pauses; "" for none
    QTest::newRow("variable") << "var:a"
                              << "a";
    QTest::newRow("op str") << "op:Elemwise{exp}"
                            << "h";
    QTest::newRow("scope") << "scope:block"
                           << "b";
    QTest::newRow("max holds") << "var:out@max>10"
                               << "out";
    QTest::newRow("max does not") << "var:out@max>1000"
                                  << "";
    QTest::newRow("nan") << "var:h@nan"
                         << "";
    QTest::newRow("hit count 2") << "op:Elemwise{mul}#2"
                                 << "out";
  }
  void testBreakpointTargets() {
    QFETCH(QString, spec);
    QFETCH(QString, stopsAfter);
    VarPtr x = fvar("x");
    VarPtr h = named(exp(x), "h");
    VarPtr a = named(h * 2.0, "a");
    VarPtr b;
    {
      NameScope scope("block");
      b = named(h + 1.0, "b");
    }
    VarPtr out = named(a * b, "out");
    Function f = compile({x}, {out});
    DebugSession s(f);
    const int id = get(s.addBreakpoint(parseBreakSpec(spec.toStdString())));
    QCOMPARE(id, 1);
    get(s.start({ft({2}, {0, 1})}));
    const SessionState st = get(s.run());
    if (stopsAfter.isEmpty()) {
      QCOMPARE(st.phase, SessionPhase::Finished);
      return;
    }
    QCOMPARE(st.phase, SessionPhase::Paused);
    QCOMPARE(st.reason, PauseKind::Breakpoint);
    QCOMPARE(st.breakpointId, id);
    QCOMPARE(st.lastNodeId, nodeOf(f, stopsAfter.toStdString()));
    QVERIFY(get(s.value(stopsAfter.toStdString())).has_value());  // paused after the node
    QCOMPARE(get(s.breakpoints())[0].hits, spec.contains("#2") ? 2 : 1);
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
  }

  // call(): start + run + finish as one command; a pause leaves the execution paused.
  void testCall() {
    Diamond d;
    DebugSession s(d.f);
    const auto out = get(s.call({ft({1}, {0})}));
    QVERIFY(out.has_value());
    QCOMPARE(out->size(), std::size_t{1});
    QCOMPARE(s.state().phase, SessionPhase::Idle);
    get(s.addBreakpoint(parseBreakSpec("var:h")));
    QVERIFY(!get(s.call({ft({1}, {0})})).has_value());
    QCOMPARE(s.state().phase, SessionPhase::Paused);
    QCOMPARE(s.state().reason, PauseKind::Breakpoint);
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
    QCOMPARE(get(s.finish()).size(), std::size_t{1});
  }

  void testBreakpointNodeDisabledRemovedTemporary() {
    Diamond d;
    DebugSession s(d.f);
    const std::int64_t hNode = nodeOf(d.f, "h");
    const int id = get(s.addBreakpoint(parseBreakSpec("node:" + std::to_string(hNode))));
    get(s.start({ft({1}, {0})}));
    QCOMPARE(get(s.run()).breakpointId, id);
    get(s.setBreakpointEnabled(id, false));
    get(s.restart());
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
    get(s.setBreakpointEnabled(id, true));
    get(s.restart());
    QCOMPARE(get(s.run()).reason, PauseKind::Breakpoint);
    get(s.removeBreakpoint(id));
    QVERIFY(get(s.breakpoints()).empty());
    BreakpointSpec once = parseBreakSpec("var:out");
    once.temporary = true;
    get(s.addBreakpoint(once));
    get(s.restart());
    QCOMPARE(get(s.run()).reason, PauseKind::Breakpoint);  // out is the last node: still pauses
    QVERIFY(get(s.breakpoints()).empty());                 // tbreak: gone after its hit
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
    // Refused, with the reason: unknown targets, conditions on the wrong dtype.
    QVERIFY(errorOf(s.addBreakpoint(parseBreakSpec("node:99999"))).find("no node 99999") !=
            std::string::npos);
    QVERIFY(errorOf(s.addBreakpoint(parseBreakSpec("var:zz"))).find("'zz'") != std::string::npos);
    QVERIFY(errorOf(s.addBreakpoint(parseBreakSpec("var:x"))).find("input") != std::string::npos);
    QVERIFY(errorOf(s.addBreakpoint(parseBreakSpec("op:Conv2d"))).find("no node of op type") !=
            std::string::npos);
    QVERIFY(errorOf(s.addBreakpoint(parseBreakSpec("scope:nowhere"))).find("scope 'nowhere'") !=
            std::string::npos);
    VarPtr i = Variable::create(TensorType(DType::Int64, {U}), "i");
    VarPtr j = named(i + i, "j");
    Function fi = compile({i}, {j});
    DebugSession si(fi);
    const std::string e = errorOf(si.addBreakpoint(parseBreakSpec("var:j@nan")));
    QVERIFY2(e.find("floating-point") != std::string::npos && e.find("int64") != std::string::npos,
             e.c_str());
    QCOMPARE(get(si.addBreakpoint(parseBreakSpec("var:j@max>3"))), 1);  // numeric: fine
  }

  void testChangedSinceLastRun() {
    VarPtr x = fvar("x");
    VarPtr y = named(x * 3.0, "y");
    Function f = compile({x}, {y});
    DebugSession s(f);
    get(s.addBreakpoint(parseBreakSpec("var:y@changed>1")));
    get(s.start({ft({1}, {1})}));
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);  // no previous run
    get(s.start({ft({1}, {1.2})}));
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);  // 3.6 - 3 < 1
    get(s.start({ft({1}, {2})}));
    QCOMPARE(get(s.run()).reason, PauseKind::Breakpoint);  // 6 - 3.6 > 1
  }

  // A breakpoint on a node of the graph as built follows it into the Composite fusion made.
  void testOriginalGraphBreakpointFollowsFusion() {
    VarPtr x = fvar("x");
    VarPtr l = log(x);
    VarPtr y = tanh(tanh(l * 2.0) + 1.0);
    // The id the log has before any rewrite: what a mode-none compile (the graph as built) shows.
    const std::int64_t logNode = nodeOf(compile({x}, {named(l, "l")}), "l");
    QVERIFY(logNode >= 0);
    Function f = compile({x}, {y}, {}, {.mode = Mode::FastRun});
    bool fused = false;
    for (const Apply* n : f.graph().nodes()) fused = fused || n->op().name() == "Composite";
    if (!fused) QSKIP("fast_run did not fuse this chain");
    DebugSession s(f);
    const int id = get(s.addBreakpoint(parseBreakSpec("node:" + std::to_string(logNode)), true));
    const BreakpointInfo info = get(s.breakpoints())[0];
    QCOMPARE(info.nodes.size(), std::size_t(1));
    QVERIFY(info.nodes[0] != logNode);
    QVERIFY2(info.note.find("Composite") != std::string::npos, info.note.c_str());
    get(s.start({ft({2}, {0.5, -1})}));
    const SessionState st = get(s.run());
    QCOMPARE(st.breakpointId, id);
    QCOMPARE(st.lastNodeId, info.nodes[0]);
    QVERIFY(st.message.find("Composite") != std::string::npos);
    // On the optimized graph the log's id is gone.
    QVERIFY(!errorOf(s.addBreakpoint(parseBreakSpec("node:" + std::to_string(logNode)))).empty());
  }

  void testEditRecomputeUndo() {
    Diamond d;
    DebugSessionOptions o;
    o.observers.push_back(d.counter);
    DebugSession s(d.f, o);
    get(s.start({ft({2}, {0, 1})}));
    get(s.runToNode(nodeOf(d.f, "out")));  // a and b ran, out did not
    const Tensor a0 = get(s.value("a"))->value;
    // Wrong edits are refused and change nothing.
    std::string e = errorOf(s.setValue("a", Tensor::fromDoubles(DType::Float64, {2}, {1, 2})));
    QVERIFY2(e.find("'a'") != std::string::npos && e.find("float32") != std::string::npos &&
                 e.find("float64") != std::string::npos,
             e.c_str());
    e = errorOf(s.setValue("a", ft({1, 2}, {1, 2})));
    QVERIFY2(e.find("(1, 2)") != std::string::npos, e.c_str());
    e = errorOf(s.setValue("out", ft({2}, {1, 2})));
    QVERIFY2(e.find("not computed yet") != std::string::npos, e.c_str());
    QVERIFY(get(s.value("a"))->value.bitwiseEqual(a0));
    // Edit h (consumed by a and b): recompute re-runs exactly a and b.
    get(s.setValue("h", ft({2}, {10, 20})));
    QVERIFY(get(s.value("h"))->edited);
    d.counter->after.clear();
    const RecomputeResult r = get(s.recompute());
    std::vector<std::int64_t> expected{nodeOf(d.f, "a"), nodeOf(d.f, "b")};
    std::vector<std::int64_t> rerun = r.rerunNodes;
    std::sort(rerun.begin(), rerun.end());
    std::sort(expected.begin(), expected.end());
    QCOMPARE(rerun, expected);
    QCOMPARE(d.counter->after.size(), std::size_t(2));  // the observer saw only the re-runs
    QCOMPARE(r.changedVars.size(), std::size_t(2));
    QCOMPARE(get(s.value("a"))->value.at({1}), 40.0);
    QCOMPARE(get(s.value("b"))->value.at({0}), 11.0);
    // Continuing uses the edited values.
    SessionState st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
    QCOMPARE(get(s.value("out"))->value.at({0}), 20.0 * 11.0);
    // Undo at a pause puts the original back; recompute propagates it.
    get(s.restart());
    get(s.runToNode(nodeOf(d.f, "out")));
    get(s.setValue("h", ft({2}, {10, 20})));
    get(s.recompute());
    get(s.undoEdit("h"));
    QVERIFY(!get(s.value("h"))->edited);
    get(s.recompute());
    QVERIFY(get(s.value("a"))->value.bitwiseEqual(a0));
    QVERIFY(errorOf(s.undoEdit("h")).find("no edit") != std::string::npos);
  }

  void testRestartReproducesRandom() {
    RandomStream rng(7);
    VarPtr x = fvar("x", {3});
    VarPtr noise = named(rng.uniform({3}), "noise");
    VarPtr y = named(x + noise, "y");
    Function f = compile({x}, {y}, rng.updates());
    DebugSession s(f);
    get(s.start({ft({3}, {0, 0, 0})}));
    get(s.run());
    const Tensor first = get(s.value("y"))->value;
    get(s.finish());  // the random state advanced
    get(s.restart());
    get(s.run());
    QVERIFY(get(s.value("y"))->value.bitwiseEqual(first));
    get(s.finish());
    get(s.start({ft({3}, {0, 0, 0})}));  // a new start draws new numbers
    get(s.run());
    QVERIFY(!get(s.value("y"))->value.bitwiseEqual(first));
  }

  // stop from every phase; a stopped run leaves the shared variables as they were and the
  // function reusable.
  void testStopFromEveryPhase() {
    auto w = SharedVariable::create(ft({2}, {1, 2}), "w");
    VarPtr x = fvar("x", {2});
    VarPtr y = named(x * w, "y");
    VarPtr z = named(y + 1.0, "z");
    Function f = compile({x}, {z}, {{w, z}});
    DebugSession s(f);
    QCOMPARE(get(s.stop()).phase, SessionPhase::Idle);  // nothing to stop
    for (int phase = 0; phase < 4; ++phase) {
      get(s.start({ft({2}, {3, 4})}));
      if (phase >= 1) get(s.step());                    // paused
      if (phase >= 2) get(s.run());                     // finished, not applied
      if (phase == 3) get(s.start({ft({2}, {3, 4})}));  // ready again
      const SessionState st = get(s.stop());
      QCOMPARE(st.phase, SessionPhase::Stopped);
      QCOMPARE(st.reason, PauseKind::StopRequested);
      QVERIFY(w->value().bitwiseEqual(ft({2}, {1, 2})));
      QVERIFY(!errorOf(s.run()).empty());  // nothing to run until the next start
    }
    get(s.start({ft({2}, {3, 4})}));
    get(s.run());
    get(s.finish());
    QVERIFY(w->value().bitwiseEqual(ft({2}, {4, 9})));
  }

  // A stop during a big GEMM ends the run (inside the product's blocks when it arrives there);
  // the in-place update of W never lands.
  void testStopDuringLongGemm() {
    const std::int64_t n = 1536;
    auto W = SharedVariable::create(Tensor::full(DType::Float32, {n, n}, 0.001), "W");
    VarPtr x = fvar("x", {n, n});
    VarPtr y = named(dot(dot(dot(x, W), W), W), "y");
    Function f = compile({x}, {y}, {{W, W - 0.1 * y}}, {.mode = Mode::FastRun});
    const Tensor w0 = W->value().clone();
    // Knows when the first product's kernel is about to run.
    struct Entered : ExecutionObserver {
      std::atomic<bool> first{false};
      void onStart(VM&) override { first = false; }
      void beforeNode(VM&, const NodeEvent&) override { first = true; }
    };
    auto entered = std::make_shared<Entered>();
    DebugSessionOptions options;
    options.observers.push_back(entered);
    DebugSession s(f, options);
    const Tensor ones = Tensor::full(DType::Float32, {n, n}, 1.0);
    // The whole run, for scale (not finished: no update).
    get(s.start({ones}));
    auto t0 = std::chrono::steady_clock::now();
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
    const double fullMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    get(s.start({ones}));
    std::future<SessionState> running = s.run();
    while (!entered->first &&
           running.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // inside the first product
    t0 = std::chrono::steady_clock::now();
    std::future<SessionState> stopped = s.stop();
    const SessionState st = get(std::move(running));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    qInfo("stop answered the running command after %.1f ms (phase %s); the whole run takes %.1f ms",
          ms, std::string(phaseName(st.phase)).c_str(), fullMs);
    QVERIFY(st.phase == SessionPhase::Stopped || st.phase == SessionPhase::Finished);
    QCOMPARE(get(std::move(stopped)).phase, SessionPhase::Stopped);
    QVERIFY(W->value().bitwiseEqual(w0));
    // Reusable: the next execution starts from the same W.
    QCOMPARE(get(s.start({ones})).phase, SessionPhase::Ready);
    QCOMPARE(get(s.stop()).phase, SessionPhase::Stopped);
  }

  void testCommandsInTheWrongPhase() {
    Diamond d;
    DebugSession s(d.f);
    // Idle: nothing to run, read, edit or finish.
    QVERIFY(errorOf(s.run()).find("needs a ready or paused execution") != std::string::npos);
    QVERIFY(!errorOf(s.step()).empty());
    QVERIFY(!errorOf(s.stepInto()).empty());
    QVERIFY(!errorOf(s.stepOut()).empty());
    QVERIFY(!errorOf(s.runToNode(nodeOf(d.f, "a"))).empty());
    QVERIFY(!errorOf(s.restart()).empty());
    QVERIFY(!errorOf(s.values()).empty());
    QVERIFY(!errorOf(s.nextInputs()).empty());
    QVERIFY(!errorOf(s.setValue("h", ft({1}, {0}))).empty());
    QVERIFY(!errorOf(s.recompute()).empty());
    QVERIFY(!errorOf(s.finish()).empty());
    QVERIFY(!errorOf(s.start({})).empty());  // wrong argument count
    QCOMPARE(s.state().phase, SessionPhase::Idle);
    // Ready: finish refused; Paused: finish refused; Finished: steps refused.
    get(s.start({ft({1}, {0})}));
    QVERIFY(errorOf(s.finish()).find("finished execution") != std::string::npos);
    get(s.step());
    QVERIFY(!errorOf(s.finish()).empty());
    QVERIFY(errorOf(s.runToNode(nodeOf(d.f, "h"))).find("already ran") != std::string::npos);
    QVERIFY(errorOf(s.runToNode(123456)).find("no node 123456") != std::string::npos);
    get(s.run());
    QVERIFY(!errorOf(s.step()).empty());
    QVERIFY(!errorOf(s.setValue("h", ft({1}, {0}))).empty());
    QCOMPARE(s.state().phase, SessionPhase::Finished);
    get(s.finish());
    QVERIFY(!errorOf(s.finish()).empty());
  }

  // Every command from every phase (table-driven): each is answered, accepted or refused as the
  // table says, and a refused one leaves the phase as it was.
  void testEveryCommandFromEveryPhase_data() {
    QTest::addColumn<int>("phase");
    QTest::addColumn<QString>("command");
    QTest::addColumn<bool>("accepted");
    const char* commands[] = {"start",     "run",           "step",       "stepInto",  "stepOut",
                              "runToNode", "restart",       "stop",       "interrupt", "values",
                              "value",     "nextInputs",    "setValue",   "recompute", "undoEdit",
                              "finish",    "addBreakpoint", "breakpoints"};
    // Per phase (Idle, Ready, Paused, Finished, Failed, Stopped), in the order of `commands`.
    const std::vector<std::pair<SessionPhase, std::string>> table{
        {SessionPhase::Idle, "100000011000000011"},
        {SessionPhase::Ready, "111111111111010011"},
        {SessionPhase::Paused, "111111111111110011"},
        {SessionPhase::Finished, "100000111111000111"},
        {SessionPhase::Failed, "100000111111000011"},
        {SessionPhase::Stopped, "100000111000000011"},
    };
    for (const auto& [phase, row] : table)
      for (std::size_t c = 0; c < std::size(commands); ++c)
        QTest::addRow("%s %s", std::string(phaseName(phase)).c_str(), commands[c])
            << int(phase) << QString(commands[c]) << (row[c] == '1');
  }
  void testEveryCommandFromEveryPhase() {
    QFETCH(int, phase);
    QFETCH(QString, command);
    QFETCH(bool, accepted);
    // exp, then a kernel that fails on values above 100, then two more nodes.
    auto boom = asOp("Boom", {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
                     [](std::span<const Tensor> in) -> std::vector<Tensor> {
                       if (in[0].at({0}) > 100) throw std::runtime_error("too big");
                       return {in[0].clone()};
                     });
    VarPtr x = fvar("x");
    VarPtr h = named(exp(x), "h");
    VarPtr b = named((*boom)({h}), "b");
    VarPtr out = named((b + 1.0) * 2.0, "out");
    Function f = compile({x}, {out});
    DebugSession s(f);
    const Tensor fine = ft({1}, {0}), failing = ft({1}, {10});
    switch (SessionPhase(phase)) {
      case SessionPhase::Idle:
        break;
      case SessionPhase::Ready:
        get(s.start({fine}));
        break;
      case SessionPhase::Paused:
        get(s.start({fine}));
        get(s.step());
        get(s.step());
        break;
      case SessionPhase::Finished:
        get(s.start({fine}));
        get(s.run());
        break;
      case SessionPhase::Failed:
        get(s.start({failing}));
        get(s.run());
        break;
      default:
        get(s.start({fine}));
        get(s.stop());
        break;
    }
    QCOMPARE(int(s.state().phase), phase);
    const std::string c = command.toStdString();
    const std::int64_t lastNode = nodeOf(f, "out");
    std::string error;
    if (c == "start") error = errorOf(s.start({fine}));
    if (c == "run") error = errorOf(s.run());
    if (c == "step") error = errorOf(s.step());
    if (c == "stepInto") error = errorOf(s.stepInto());
    if (c == "stepOut") error = errorOf(s.stepOut());
    if (c == "runToNode") error = errorOf(s.runToNode(lastNode));
    if (c == "restart") error = errorOf(s.restart());
    if (c == "stop") error = errorOf(s.stop());
    if (c == "interrupt") error = errorOf(s.interrupt());
    if (c == "values") error = errorOf(s.values());
    if (c == "value") error = errorOf(s.value("h"));
    if (c == "nextInputs") error = errorOf(s.nextInputs());
    if (c == "setValue") error = errorOf(s.setValue("h", ft({1}, {2})));
    if (c == "recompute") error = errorOf(s.recompute());
    if (c == "undoEdit") error = errorOf(s.undoEdit("h"));
    if (c == "finish") error = errorOf(s.finish());
    if (c == "addBreakpoint") error = errorOf(s.addBreakpoint(parseBreakSpec("var:out")));
    if (c == "breakpoints") error = errorOf(s.breakpoints());
    QVERIFY2(error.empty() == accepted, (c + ": " + (error.empty() ? "accepted" : error)).c_str());
    if (!accepted) {
      QCOMPARE(int(s.state().phase), phase);  // a refusal changes nothing
      QVERIFY2(error.find('\n') == std::string::npos, error.c_str());
    }
  }

  // A BreakPoint op in the graph pauses the session (reason BreakPointOp, its name, its outputs
  // readable) only when its condition holds.
  void testBreakPointOpPause() {
    VarPtr x = fvar("x");
    VarPtr loss = named(sum(x * x), "loss");
    const std::vector<VarPtr> seen =
        breakpoint("loss_spike", gt(loss, constant(10.0, DType::Float32)), {loss});
    VarPtr y = named(seen[0] * 2.0, "y");
    Function f = compile({x}, {y});
    DebugSession s(f);
    get(s.start({ft({2}, {1, 1})}));
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);  // 2 < 10: no pause
    get(s.start({ft({2}, {3, 3})}));
    const SessionState st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Paused);
    QCOMPARE(st.reason, PauseKind::BreakPointOp);
    QCOMPARE(st.breakOpName, std::string("loss_spike"));
    QVERIFY(st.breakOpNodeId >= 0);
    QCOMPARE(get(s.value("node:" + std::to_string(st.breakOpNodeId)))->value.item(), 18.0);
    QVERIFY(!get(s.value("y")).has_value());  // paused right after the BreakPoint
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
  }

  // stepInto enters the taken IfElse branch only; a breakpoint on a node of the other branch
  // never hits.
  void testStepIntoIfElseBranch() {
    VarPtr c = Variable::create(TensorType(DType::Float32, {}), "c");
    VarPtr x = fvar("x");
    const std::vector<VarPtr> r = ifelse(c, std::vector<VarPtr>{named(exp(x), "then_exp")},
                                         std::vector<VarPtr>{named(x * 5.0, "else_mul")});
    VarPtr y = named(r[0] + 1.0, "y");
    Function f = compile({c, x}, {y});
    DebugSession s(f);
    get(s.addBreakpoint(parseBreakSpec("var:else_mul")));
    get(s.start({Tensor::scalar(DType::Float32, 1), ft({1}, {0})}));
    SessionState st = get(s.stepInto());
    QCOMPARE(st.frames.size(), std::size_t(2));
    QCOMPARE(st.frames[1].nextNodeOp, std::string("Elemwise{exp}"));
    st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
    QCOMPARE(get(s.value("y"))->value.at({0}), 2.0);
    get(s.start({Tensor::scalar(DType::Float32, 0), ft({1}, {1})}));
    st = get(s.run());
    QCOMPARE(st.reason, PauseKind::Breakpoint);  // the else branch ran
    QCOMPARE(st.frames.size(), std::size_t(2));
    QCOMPARE(get(s.value("else_mul", 1))->value.at({0}), 5.0);
  }

  // Two OpFromGraphs deep: stepInto enters each frame, values are read per frame, stepOut leaves.
  void testStepIntoNested() {
    VarPtr a = fvar("a");
    VarPtr ia = named(exp(a), "inner_exp");
    auto inner = opFromGraph({a}, {named(ia * 2.0, "inner_out")}, "inner");
    VarPtr b = fvar("b");
    auto outer = opFromGraph({b}, {named((*inner)({b}) + 1.0, "outer_out")}, "outer");
    VarPtr x = fvar("x");
    VarPtr y = named((*outer)({x}) * 3.0, "y");
    Function f = compile({x}, {y});
    DebugSession s(f);
    get(s.start({ft({1}, {0})}));
    SessionState st = get(s.stepInto());  // enters outer
    QCOMPARE(st.frames.size(), std::size_t(2));
    QVERIFY(st.frames[1].callerOp.find("outer") != std::string::npos);
    st = get(s.stepInto());  // enters inner
    QCOMPARE(st.frames.size(), std::size_t(3));
    st = get(s.stepInto());  // exp in the inner frame
    QCOMPARE(st.frames[2].pc, std::size_t(1));
    QCOMPARE(get(s.value("inner_exp", 2))->value.at({0}), 1.0);
    QVERIFY(!errorOf(s.value("inner_exp", 0)).empty());  // not a variable of the outer frame
    QCOMPARE(get(s.values(2)).size(), std::size_t(2));   // a and exp(a)
    st = get(s.stepOut());
    QCOMPARE(st.frames.size(), std::size_t(2));
    st = get(s.stepOut());
    QCOMPARE(st.frames.size(), std::size_t(1));
    st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
    QCOMPARE(get(s.value("y"))->value.at({0}), 9.0);
  }

  // Seeded random command sequences from two threads: every future answers (bounded waits),
  // every answer is a value or an exception, and the session ends usable.
  void testRandomCommandsFromTwoThreads() {
    Diamond d;
    DebugSession s(d.f);
    get(s.addBreakpoint(parseBreakSpec("var:a")));
    std::atomic<int> answered{0};
    auto worker = [&](unsigned seed) {
      std::mt19937 rng(seed);
      for (int i = 0; i < 150; ++i) {
        try {
          switch (rng() % 10) {
            case 0:
              get(s.start({ft({2}, {0, 1})}));
              break;
            case 1:
              get(s.run());
              break;
            case 2:
              get(s.step());
              break;
            case 3:
              get(s.stepInto());
              break;
            case 4:
              get(s.stop());
              break;
            case 5:
              get(s.restart());
              break;
            case 6:
              get(s.values());
              break;
            case 7:
              get(s.setValue("h", ft({2}, {1, 2})));
              break;
            case 8:
              get(s.recompute());
              break;
            default:
              get(s.interrupt());
              break;
          }
        } catch (const std::exception&) {
          // A command in the wrong phase: refused with a message.
        }
        (void)s.state();
        ++answered;
      }
    };
    std::thread t1(worker, 1u), t2(worker, 2u);
    t1.join();
    t2.join();
    QCOMPARE(answered.load(), 300);
    get(s.stop());
    get(s.start({ft({2}, {0, 1})}));
    SessionState st = get(s.run());
    while (st.phase == SessionPhase::Paused) st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
  }

  // NanGuard with action Pause: the session pauses after the node that made the NaN, with the
  // report; continuing finishes; off again, the same run does not pause.
  void testNanGuardPause() {
    VarPtr x = fvar("x");
    VarPtr l = named(log(x), "l");
    VarPtr y = named(l * 2.0, "y");
    Function f = compile({x}, {y});
    DebugSession s(f);
    get(s.setNanGuard(NanGuardOptions{}));
    get(s.start({ft({2}, {1, -1})}));
    SessionState st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Paused);
    QCOMPARE(st.reason, PauseKind::NanGuard);
    QVERIFY(st.nan != nullptr);
    QCOMPARE(st.nan->node.id, nodeOf(f, "l"));
    QCOMPARE(st.lastNodeId, nodeOf(f, "l"));
    QVERIFY2(st.message.find("NanGuard") != std::string::npos, st.message.c_str());
    QVERIFY(!get(s.value("y")).has_value());  // paused right after the log
    // Fix the value and go on: the guard sees the recomputed value, the run finishes.
    get(s.setValue("l", ft({2}, {0, 0})));
    get(s.recompute());
    st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Finished);
    QCOMPARE(get(s.value("y"))->value.at({1}), 0.0);
    get(s.setNanGuard(std::nullopt));
    get(s.start({ft({2}, {1, -1})}));
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
  }

  void testOnPauseCallback() {
    Diamond d;
    DebugSession s(d.f);
    std::atomic<int> calls{0};
    std::atomic<std::uint64_t> lastSerial{0};
    s.onPause([&](const SessionState& st) {
      ++calls;
      lastSerial = st.serial;
    });
    get(s.start({ft({1}, {0})}));
    const SessionState st = get(s.step());
    QVERIFY(calls.load() >= 2);
    QCOMPARE(lastSerial.load(), st.serial);
  }
};

TSCOPE_TEST_MAIN(TestDebugSession)
#include "tst_debug_session.moc"
