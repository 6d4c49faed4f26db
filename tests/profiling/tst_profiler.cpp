// The Profiler (profiling/profiler.h): the arithmetic of per-node and per-call figures against a
// fake clock (per-run sums, calls, mean/median/p95 over runs, call/in-nodes/overhead), warm-up
// runs, runs that fail or are abandoned, the capture budget, and real runs: inner nodes of an
// OpFromGraph and an IfElse with their frame path (the untaken branch has no samples), output
// kinds and bytes, the memory figures, a DebugSession with the profiler attached, and
// profileFunction.
#include "bench/mlp_step.h"
#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/vm/vm.h"
#include "profiling/profile_run.h"
#include "profiling/profiler.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::engine;
namespace prof = tscope::prof;

namespace {

VarPtr fvar(const std::string& name) {
  return Variable::create(TensorType(DType::Float32, {kUnknownDim}), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}
bool near(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)) + 1e-18;
}

// exp(x) * 2 + 1 with mode none: three nodes, driven by hand with a fake clock.
struct Harness {
  VarPtr x = fvar("x");
  Function f = compile({x}, {exp(x) * 2.0 + 1.0});
  std::int64_t now = 0;
  std::shared_ptr<prof::Profiler> p;

  explicit Harness(std::int64_t maxEvents = 1000) {
    prof::ProfilerOptions o;
    o.clock = [this] { return now; };
    o.maxEvents = maxEvents;
    o.memory = false;
    p = std::make_shared<prof::Profiler>(o);
    p->setMeasuring(true);
  }
  NodeEvent event(std::size_t pos) {
    return NodeEvent{{}, pos, *f.vm().schedule()[pos], {}, {}, 0, 0};
  }
  void node(std::size_t pos, std::int64_t ns) {
    const NodeEvent e = event(pos);
    p->beforeNode(f.vm(), e);
    now += ns;
    p->afterNode(f.vm(), e);
  }
  // One run: 5 ns before node 0 (d0 ns), 1 ns, node 1 (50), 1, node 2 (10), 1, node 2 (30), 4.
  void run(std::int64_t d0) {
    p->onStart(f.vm());
    now += 5;
    node(0, d0);
    now += 1;
    node(1, 50);
    now += 1;
    node(2, 10);
    now += 1;
    node(2, 30);
    now += 4;
    p->onFinish(f.vm());
  }
};

}  // namespace

class TestProfiler : public QObject {
  Q_OBJECT

 private slots:
  void testPerNodeArithmeticOverRuns() {
    Harness h;
    for (int r = 0; r < 20; ++r) h.run(100 * (r + 1));
    const prof::Profile p = h.p->snapshot(h.f);
    QCOMPARE(p.nodes.size(), std::size_t(3));
    QCOMPARE(p.function.measuredRuns, std::int64_t(20));
    const prof::TimeStats& t0 = p.nodes[0].time;
    QCOMPARE(t0.count, std::int64_t(20));
    QVERIFY(near(t0.total, 21000e-9));
    QVERIFY(near(t0.mean, 1050e-9));
    QVERIFY(near(t0.min, 100e-9));
    QVERIFY(near(t0.median, 1000e-9));  // the 10th of 20
    QVERIFY(near(t0.p95, 1900e-9));     // the 19th of 20
    QVERIFY(near(t0.max, 2000e-9));
    QCOMPARE(p.nodes[0].calls, std::int64_t(20));
    // Node 2 runs twice per run: its per-run sum is a sample, its calls count both.
    QCOMPARE(p.nodes[2].calls, std::int64_t(40));
    QCOMPARE(p.nodes[2].time.count, std::int64_t(20));
    QVERIFY(near(p.nodes[2].time.mean, 40e-9));
    QVERIFY(near(p.nodes[2].time.p95, 40e-9));
    QVERIFY(near(p.nodes[1].time.total, 20 * 50e-9));
    // Call = d0 + 102 ns, in nodes = d0 + 90, overhead 12 ns in every run.
    QCOMPARE(p.function.call.count, std::int64_t(20));
    QVERIFY(near(p.function.call.min, 202e-9));
    QVERIFY(near(p.function.call.max, 2102e-9));
    QVERIFY(near(p.function.inNodes.median, 1090e-9));
    QVERIFY(near(p.function.overhead.min, 12e-9));
    QVERIFY(near(p.function.overhead.max, 12e-9));
    QCOMPARE(p.function.applyCount, std::int64_t(3));
    QCOMPARE(p.function.innerApplyCount, std::int64_t(0));
    QCOMPARE(p.function.mode, std::string("none"));
    QCOMPARE(p.function.compilePhases.back().name, std::string("link"));
    // Events: 4 per run, relative to the first run's start, in time order.
    QCOMPARE(p.events.size(), std::size_t(80));
    QCOMPARE(p.capture.keptEvents, std::int64_t(80));
    QCOMPARE(p.capture.droppedEvents, std::int64_t(0));
    QCOMPARE(p.events[0], (prof::NodeEventRecord{0, 0, 0, 5, 105, 0}));
    QCOMPARE(p.events[1], (prof::NodeEventRecord{0, 1, 0, 106, 156, 0}));
    QCOMPARE(p.events[3], (prof::NodeEventRecord{0, 2, 0, 168, 198, 0}));
    QCOMPARE(p.runs.size(), std::size_t(20));
    QCOMPARE(p.runs[0], (prof::RunSpan{0, 0, 202}));
    QCOMPARE(p.runs[1].startNs, std::int64_t(202));
    for (std::size_t k = 1; k < p.events.size(); ++k)
      QVERIFY(p.events[k - 1].startNs <= p.events[k].startNs);
  }

  void testWarmupRunsAreNotMeasured() {
    Harness h;
    h.p->setMeasuring(false);
    h.run(1000);
    h.run(1000);
    h.p->setMeasuring(true);
    h.run(10);
    const prof::Profile p = h.p->snapshot(h.f);
    QCOMPARE(p.function.warmupRuns, std::int64_t(2));
    QCOMPARE(p.function.measuredRuns, std::int64_t(1));
    QCOMPARE(p.nodes[0].calls, std::int64_t(1));
    QVERIFY(near(p.nodes[0].time.max, 10e-9));
    QCOMPARE(p.events.size(), std::size_t(4));
    QCOMPARE(p.events[0].startNs, std::int64_t(5));  // the origin is the first measured run
  }

  void testRunsThatDoNotFinishAddNothing() {
    Harness h;
    // A run that fails after node 0.
    h.p->onStart(h.f.vm());
    h.node(0, 777);
    h.p->onError(h.f.vm(), h.event(1), nullptr);
    // A run abandoned by the next start.
    h.p->onStart(h.f.vm());
    h.node(0, 888);
    h.run(10);
    const prof::Profile p = h.p->snapshot(h.f);
    QCOMPARE(p.function.measuredRuns, std::int64_t(1));
    QCOMPARE(p.nodes[0].calls, std::int64_t(1));
    QCOMPARE(p.nodes[0].time.count, std::int64_t(1));
    QVERIFY(near(p.nodes[0].time.total, 10e-9));
    QCOMPARE(p.events.size(), std::size_t(4));
    for (const prof::NodeEventRecord& e : p.events) QCOMPARE(e.run, 0);
  }

  void testCaptureBudgetBoundsOnlyTheTimeline() {
    Harness full, small(10), none(0);
    for (int r = 0; r < 20; ++r) {
      full.run(100 * (r + 1));
      small.run(100 * (r + 1));
      none.run(100 * (r + 1));
    }
    const prof::Profile a = full.p->snapshot(full.f), b = small.p->snapshot(small.f),
                        c = none.p->snapshot(none.f);
    QCOMPARE(b.capture.maxEvents, std::int64_t(10));
    QCOMPARE(b.capture.keptEvents, std::int64_t(10));
    QCOMPARE(b.capture.droppedEvents, std::int64_t(70));
    QCOMPARE(b.events.size(), std::size_t(10));
    // The oldest are dropped: what is kept are the last 10 events (runs 17 to 19).
    QCOMPARE(b.events.front().run, 17);
    QCOMPARE(b.events.back().run, 19);
    QCOMPARE(b.events.back(), a.events.back());
    QCOMPARE(c.capture.keptEvents, std::int64_t(0));
    QCOMPARE(c.capture.droppedEvents, std::int64_t(80));
    QVERIFY(c.events.empty());
    // Tables never lose anything.
    QCOMPARE(b.nodes, a.nodes);
    QCOMPARE(c.nodes, a.nodes);
    QCOMPARE(b.function.call, a.function.call);
    QCOMPARE(b.function.inNodes, a.function.inNodes);
    QCOMPARE(b.runs, a.runs);
  }

  void testResetAndCallSpan() {
    Harness h;
    h.run(10);
    h.p->recordCallSpan(h.now - 500, h.now + 20);  // the whole call, argument checks included
    prof::Profile p = h.p->snapshot(h.f);
    QVERIFY(near(p.function.call.max, 520e-9));  // from -388 to 132 ns
    // The origin moves to the call's start: nothing in the timeline lies before it.
    QCOMPARE(p.runs[0], (prof::RunSpan{0, 0, 520}));
    QCOMPARE(p.events[0].startNs, std::int64_t(5 + 388));
    h.p->reset();
    p = h.p->snapshot(h.f);
    QCOMPARE(p.function.measuredRuns, std::int64_t(0));
    QCOMPARE(p.nodes[0].calls, std::int64_t(0));
    QVERIFY(p.events.empty());
  }

  void testSnapshotOfAnotherProgramIsRefused() {
    Harness h, other;
    h.run(10);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, h.p->snapshot(other.f));
  }

  void testInnerFramesOfOpFromGraphAndIfElse() {
    auto a = fvar("a");
    auto body = opFromGraph({a}, {exp(a) * 2.0}, "body");
    auto x = fvar("x");
    VarPtr hx = (*body)({x});
    VarPtr c = gt(sum(x), constant(0.0, DType::Float32));
    VarPtr y = ifelse(c, {hx + 1.0}, {hx * 3.0 - 1.0}, {hx}, "branch")[0];
    Function f = compile({x}, {y});
    auto profiler = std::make_shared<prof::Profiler>();
    f.vm().addObserver(profiler);
    profiler->setMeasuring(true);
    const Tensor arg = ft({4}, {1, 2, 3, 4});
    for (int i = 0; i < 3; ++i) f({arg});
    const prof::Profile p = profiler->snapshot(f);
    QCOMPARE(p.function.measuredRuns, std::int64_t(3));
    const Apply* ofg = nullptr;
    const Apply* ite = nullptr;
    for (const Apply* n : f.program().schedule()) {
      if (n->op().name() == "OpFromGraph") ofg = n;
      if (n->op().name() == "IfElse") ite = n;
    }
    QVERIFY(ofg && ite);
    const std::int64_t o = p.find({}, ofg->id()), i = p.find({}, ite->id());
    QVERIFY(o >= 0 && i >= 0);
    QVERIFY(p.nodes[static_cast<std::size_t>(o)].hasInnerGraph);
    QCOMPARE(p.nodes[static_cast<std::size_t>(o)].calls, std::int64_t(3));
    int bodyNodes = 0, thenNodes = 0, elseNodes = 0;
    double innerSeconds = 0;
    for (const prof::NodeProfile& n : p.nodes) {
      if (n.framePath == std::vector<std::int64_t>{ofg->id()}) {
        ++bodyNodes;
        QCOMPARE(n.calls, std::int64_t(3));
        QCOMPARE(n.time.count, std::int64_t(3));
        innerSeconds += n.time.total;
      } else if (n.framePath == std::vector<std::int64_t>{ite->id()}) {
        if (n.body == 0) {
          ++thenNodes;
          QCOMPARE(n.calls, std::int64_t(3));
        } else {
          ++elseNodes;
          QCOMPARE(n.calls, std::int64_t(0));  // the untaken branch has no samples
          QCOMPARE(n.time.count, std::int64_t(0));
        }
      }
    }
    QCOMPARE(bodyNodes, 2);
    QVERIFY(thenNodes >= 1);
    QVERIFY(elseNodes >= 2);
    QCOMPARE(p.function.innerApplyCount,
             static_cast<std::int64_t>(f.program().totalNodeCount() - f.program().nodes().size()));
    // Inclusive time: the frame node's time holds its inner nodes'.
    QVERIFY(p.nodes[static_cast<std::size_t>(o)].time.total >= innerSeconds);
    // Each inner event lies inside its caller's event of the same run.
    for (const prof::NodeEventRecord& e : p.events) {
      const prof::NodeProfile& n = p.nodes[static_cast<std::size_t>(e.node)];
      if (n.framePath.empty()) continue;
      const std::int64_t caller = p.find({}, n.framePath[0]);
      bool inside = false;
      for (const prof::NodeEventRecord& c2 : p.events)
        if (c2.node == caller && c2.run == e.run && c2.startNs <= e.startNs && e.endNs <= c2.endNs)
          inside = true;
      QVERIFY(inside);
    }
    // The exp node of the body: a created float32 (4,) output of 16 bytes, which it allocated.
    for (const prof::NodeProfile& n : p.nodes)
      if (n.framePath == std::vector<std::int64_t>{ofg->id()} &&
          n.op.find("exp") != std::string::npos) {
        QCOMPARE(n.outputs.size(), std::size_t(1));
        QCOMPARE(n.outputs[0].bytes, std::int64_t(16));
        QCOMPARE(n.outputs[0].shape, (Shape{4}));
        QCOMPARE(n.outputs[0].dtype, std::string("float32"));
        QCOMPARE(n.outputs[0].kind, prof::OutputKind::Created);
        QVERIFY(n.allocatedBytes >= 16);
        QCOMPARE(n.inputShapes, (std::vector<Shape>{{4}}));
      }
    QVERIFY(p.memory.peakLiveBytes >= 16);
  }

  void testMlpStepKindsAndMemory() {
    tscope::bench::MlpStep mlp(0.01);
    Function step = mlp.compile({.mode = Mode::FastRun});
    prof::ProfileRunOptions o;
    o.warmup = 1;
    o.runs = 2;
    std::int64_t progressCalls = 0;
    o.progress = [&](std::int64_t done, std::int64_t total) {
      ++progressCalls;
      QCOMPARE(total, std::int64_t(3));
      QCOMPARE(done, progressCalls);
    };
    const prof::Profile p = prof::profileFunction(step, mlp.args, o);
    QCOMPARE(progressCalls, std::int64_t(3));
    QVERIFY(step.vm().observers().empty());  // detached
    QVERIFY(!step.vm().timing());            // restored
    QCOMPARE(p.function.warmupRuns, std::int64_t(1));
    QCOMPARE(p.function.measuredRuns, std::int64_t(2));
    QCOMPARE(p.function.mode, std::string("fast_run"));
    QVERIFY(p.function.compilePhases.size() >= 2);
    QCOMPARE(p.function.compilePhases.back().name, std::string("link"));
    QVERIFY(!p.rewritePhases.empty());
    QVERIFY(!p.rewriters.empty());
    QVERIFY(p.machine.threads > 0);
    QCOMPARE(p.date.size(), std::size_t(20));
    bool inplace = false, view = false;
    for (const prof::NodeProfile& n : p.nodes) {
      QCOMPARE(n.calls, std::int64_t(2));
      for (const prof::OutputInfo& out : n.outputs) {
        inplace = inplace || out.kind == prof::OutputKind::Inplace;
        view = view || out.kind == prof::OutputKind::View;
      }
    }
    QVERIFY(inplace);  // the SGD updates overwrite W1, b1, W2, b2
    // Call time holds the nodes' time in every run (the span encloses the events).
    QVERIFY(p.function.call.min >= p.function.inNodes.min);
    QVERIFY(p.memory.peakLiveBytes > 0);
    QVERIFY(p.memory.planPeakBytes > 0);
    QVERIFY(p.memory.planPeakBytes <= p.memory.peakWithoutFreeing);
    // Without inplace, the updates of W1 (784 x 500 float32) need a buffer of their own.
    QVERIFY(p.memory.peakWithoutInplace >= p.memory.planPeakBytes + 784 * 500 * 4);
    QCOMPARE(p.events.size(), p.nodes.size() * 2);
    // Each run's span (the whole call) encloses its events.
    for (const prof::NodeEventRecord& e : p.events) {
      const prof::RunSpan& r = p.runs[static_cast<std::size_t>(e.run)];
      QVERIFY(r.startNs <= e.startNs && e.startNs <= e.endNs && e.endNs <= r.endNs);
    }
    QVERIFY(p.runs[0].startNs >= 0);
    (void)view;
  }

  void testViewOutputs() {
    auto m = Variable::create(TensorType(DType::Float32, {kUnknownDim, kUnknownDim}), "m");
    Function f = compile({m}, {exp(transpose(m))});
    const prof::Profile p =
        prof::profileFunction(f, {Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6})});
    QCOMPARE(p.nodes.size(), std::size_t(2));
    QCOMPARE(p.nodes[0].opClass, std::string("DimShuffle"));
    QCOMPARE(p.nodes[0].outputs[0].kind, prof::OutputKind::View);
    QCOMPARE(p.nodes[0].outputs[0].shape, (Shape{3, 2}));
    QCOMPARE(p.nodes[0].outputs[0].bytes, std::int64_t(24));
    QCOMPARE(p.nodes[0].allocatedBytes, std::int64_t(0));  // a view allocates nothing
    QCOMPARE(p.nodes[1].outputs[0].kind, prof::OutputKind::Created);
    QCOMPARE(p.nodes[1].allocatedBytes, std::int64_t(24));
    QCOMPARE(p.nodes[1].inputShapes, (std::vector<Shape>{{3, 2}}));
    // The plan: the view shares the caller's buffer, exp creates 24 bytes.
    QCOMPARE(p.memory.planPeakBytes, std::int64_t(24));
    // Shapes as last measured: a call with other shapes replaces them (Note [Shape signature]).
    auto profiler = std::make_shared<prof::Profiler>();
    profiler->setMeasuring(true);
    f.vm().addObserver(profiler);
    f({Tensor::zeros(DType::Float32, {2, 3})});
    f({Tensor::zeros(DType::Float32, {4, 5})});
    f({Tensor::zeros(DType::Float32, {4, 5})});
    const prof::Profile q = profiler->snapshot(f);
    QCOMPARE(q.nodes[1].inputShapes, (std::vector<Shape>{{5, 4}}));
    QCOMPARE(q.nodes[1].outputs[0].shape, (Shape{5, 4}));
    QCOMPARE(q.nodes[1].outputs[0].bytes, std::int64_t(80));
    QCOMPARE(q.memory.planPeakBytes, std::int64_t(80));
  }

  void testProfilerKeepsInPlaceUpdates() {
    // Note [Passive observers]: with only the profiler attached, a plain call updates W1 in its
    // own buffer, as an unobserved call does; an observer that may interrupt the call makes the
    // VM write the update into a private copy first (Note [Parameters stay whole]).
    tscope::bench::MlpStep mlp(0.01);
    Function step = mlp.compile({.mode = Mode::FastRun});
    step(mlp.args);
    auto buffer = [&] { return static_cast<const void*>(mlp.W1->value().data<float>()); };
    auto profiler = std::make_shared<prof::Profiler>();
    profiler->setMeasuring(true);
    step.vm().addObserver(profiler);
    const void* before = buffer();
    step(mlp.args);
    QCOMPARE(buffer(), before);
    QCOMPARE(profiler->measuredRuns(), std::int64_t(1));
    QCOMPARE(profiler->lostRuns(), std::int64_t(0));
    auto watcher = std::make_shared<ExecutionObserver>();  // may interrupt (the default)
    step.vm().addObserver(watcher);
    step(mlp.args);
    QVERIFY(buffer() != before);
  }

  void testProfileFunctionPropagatesFailures() {
    tscope::bench::MlpStep mlp(0.01);
    Function step = mlp.compile({.mode = Mode::FastRun});
    const std::vector<Tensor> bad = {Tensor::zeros(DType::Float32, {4, 3}), mlp.args[1]};
    QVERIFY_THROWS_EXCEPTION(ArgumentError, prof::profileFunction(step, bad));
    QVERIFY(step.vm().observers().empty());
    prof::ProfileRunOptions o;
    o.runs = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, prof::profileFunction(step, mlp.args, o));
  }

  void testDebugSessionWithTheProfilerAttached() {
    auto x = fvar("x");
    auto a = fvar("a");
    auto body = opFromGraph({a}, {exp(a) * 2.0}, "body");
    Function f = compile({x}, {(*body)({x}) + 1.0});
    auto profiler = std::make_shared<prof::Profiler>();
    profiler->setMeasuring(true);
    debug::DebugSessionOptions options;
    options.observers = {profiler};
    {
      debug::DebugSession s(f, options);
      const debug::SessionState st = s.run({ft({2}, {0, 1})}).get();
      QCOMPARE(st.phase, debug::SessionPhase::Finished);
      const std::vector<Tensor> out = s.finish().get();
      QCOMPARE(out[0].toDoubles()[0], 3.0);
    }
    prof::Profile p = profiler->snapshot(f);
    QCOMPARE(p.function.measuredRuns, std::int64_t(1));
    QCOMPARE(p.nodes.size(), f.program().totalNodeCount());
    for (const prof::NodeProfile& n : p.nodes) QCOMPARE(n.calls, std::int64_t(1));
    // A run stepped node by node (paused between steps, into the frame and out) counts once
    // it finishes; a snapshot taken while it is paused leaves it out.
    {
      debug::DebugSession s(f, options);
      s.start({ft({2}, {0, 1})}).get();
      QCOMPARE(s.stepInto().get().phase, debug::SessionPhase::Paused);  // into the frame
      QCOMPARE(s.step().get().phase, debug::SessionPhase::Paused);      // its first node
      QCOMPARE(profiler->snapshot(f).function.measuredRuns, std::int64_t(1));
      debug::SessionState st = s.run().get();
      QCOMPARE(st.phase, debug::SessionPhase::Finished);
      s.finish().get();
    }
    p = profiler->snapshot(f);
    QCOMPARE(p.function.measuredRuns, std::int64_t(2));
    for (const prof::NodeProfile& n : p.nodes) QCOMPARE(n.calls, std::int64_t(2));
  }
};

TSCOPE_TEST_MAIN(TestProfiler)
#include "tst_profiler.moc"
