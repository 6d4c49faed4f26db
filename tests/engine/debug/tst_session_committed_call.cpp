// DebugSession::call as a committed run (Note [Committed runs] in engine/vm/vm.h): with nothing
// that can pause it, a call updates the parameters in place (no copy per step) and a stop that
// arrives after the first in-place update lets it finish with every update whole; restart()
// refuses to repeat such a call. With a breakpoint or Retain::All, a call copies as before and a
// stop leaves the parameters as they were. A call on an idle session runs on the caller's thread
// (Note [Inline call]); one made while another runs waits for it on the worker.
#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/graph/apply.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "session_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

using namespace tscope::engine;
using namespace tscope::engine::debug;
using tscope::test::errorOf;
using tscope::test::get;

namespace {
constexpr std::int64_t U = kUnknownDim;

// Asks for a stop after the top-level node at `at`, as the window's Stop would arrive then;
// passive, so the call is still committed.
struct PassiveStop : ExecutionObserver {
  std::size_t at = static_cast<std::size_t>(-1);
  bool mayInterrupt() const override { return false; }
  void afterNode(VM& vm, const NodeEvent& e) override {
    if (e.framePath.empty() && e.position == at) vm.requestStop();
  }
};

// One SGD-like step fast_run updates in place (Gemm{inplace} on W), b updated beside it.
struct Step {
  Tensor w0 = Tensor::fromDoubles(DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6});
  std::shared_ptr<SharedVariable> W = SharedVariable::create(w0, "W");
  std::shared_ptr<SharedVariable> b =
      SharedVariable::create(Tensor::fromDoubles(DType::Float32, {2}, {0, 0}), "b");
  VarPtr x = Variable::create(TensorType(DType::Float32, {U, 3}), "x");
  VarPtr g = Variable::create(TensorType(DType::Float32, {U, 2}), "g");
  Function f =
      compile({x, g}, {sum(g)}, {{W, W - 0.5 * dot(transpose(exp(x)), g)}, {b, b + sum(g, {0})}},
              {.mode = Mode::FastRun});
  std::vector<Tensor> args{Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 0, 2, 0, 1, 1}),
                           Tensor::fromDoubles(DType::Float32, {2, 2}, {1, -1, 0.5, 2})};
  std::size_t commitAt() {
    std::size_t at = static_cast<std::size_t>(-1);
    for (const auto& o : f.program().plan().overwrites)
      if (o.graphInput >= 0) at = std::min<std::size_t>(at, o.position);
    return at;
  }
};

DebugSessionOptions lean(std::shared_ptr<ExecutionObserver> observer = nullptr) {
  DebugSessionOptions o;
  o.retain = Retain::AfterLastUse;
  if (observer) o.observers.push_back(std::move(observer));
  return o;
}
}  // namespace

class TestSessionCommittedCall : public QObject {
  Q_OBJECT
 private slots:
  void testCallUpdatesInPlaceAndFinishesAfterALateStop() {
    Step ref;
    ref.f(ref.args);
    Step s;
    const std::size_t at = s.commitAt();
    QVERIFY2(at != static_cast<std::size_t>(-1) && at > 0, "fast_run did not update W in place");
    auto stop = std::make_shared<PassiveStop>();
    stop->at = at;  // right after the in-place update of W
    DebugSession session(s.f, lean(stop));
    // Its address only: holding the value would make the VM copy it (Note [Overwritten inputs]).
    const void* const wBuffer = s.W->value().rawData();
    const auto out = get(session.call(s.args));
    QVERIFY(out.has_value());
    QCOMPARE(session.state().phase, SessionPhase::Idle);
    QVERIFY(s.W->value().bitwiseEqual(ref.W->value()));
    QVERIFY(s.b->value().bitwiseEqual(ref.b->value()));
    QCOMPARE(s.W->value().rawData(), wBuffer);  // no private copy
    // Nor on the next call: the session holds no value of the last one's parameters.
    stop->at = static_cast<std::size_t>(-1);
    QVERIFY(get(session.call(s.args)).has_value());
    QCOMPARE(s.W->value().rawData(), wBuffer);
    stop->at = at;
    const std::string refused = errorOf(session.restart());
    QVERIFY2(refused.find("in place") != std::string::npos, refused.c_str());
    // A stop before the update is honoured: nothing was written.
    stop->at = at - 1;
    const Tensor w1 = s.W->value().clone(), b1 = s.b->value().clone();
    QVERIFY(!get(session.call(s.args)).has_value());
    QCOMPARE(session.state().phase, SessionPhase::Stopped);
    QVERIFY(s.W->value().bitwiseEqual(w1));
    QVERIFY(s.b->value().bitwiseEqual(b1));
  }

  void testCallWithABreakpointCopiesAndStopLeavesParametersWhole() {
    Step s;
    auto stop = std::make_shared<PassiveStop>();
    stop->at = s.commitAt();
    DebugSession session(s.f, lean(stop));
    // A breakpoint that never hits, but could pause the call.
    const std::int64_t first = s.f.vm().schedule().front()->id();
    get(session.addBreakpoint(parseBreakSpec("node:" + std::to_string(first) + "@nan")));
    QVERIFY(!get(session.call(s.args)).has_value());
    QCOMPARE(session.state().phase, SessionPhase::Stopped);
    QVERIFY(s.W->value().bitwiseEqual(s.w0));
    QCOMPARE(s.b->value().toDoubles(), std::vector<double>({0, 0}));
    // Without the stop, the call finishes and restart() repeats it from the same parameters.
    stop->at = static_cast<std::size_t>(-1);
    QVERIFY(get(session.call(s.args)).has_value());
    const Tensor after = s.W->value().clone();
    QVERIFY(!after.bitwiseEqual(s.w0));
    QCOMPARE(get(session.restart()).phase, SessionPhase::Ready);
    QVERIFY(s.W->value().bitwiseEqual(s.w0));
  }

  // Note [Inline call]: a call on an idle session runs on the caller's thread; a call made while
  // another runs is queued for the worker and runs after it.
  void testIdleCallRunsOnTheCallersThread() {
    Step s;
    struct Threads : ExecutionObserver {
      std::mutex m;
      std::condition_variable cv;
      bool holdFirst = false, entered = false, released = false;
      std::vector<std::thread::id> starts;
      bool mayInterrupt() const override { return false; }
      void onStart(VM&) override {
        std::unique_lock lock(m);
        starts.push_back(std::this_thread::get_id());
        if (holdFirst && starts.size() == 1) {
          entered = true;
          cv.notify_all();
          cv.wait(lock, [&] { return released; });
        }
      }
    };
    auto threads = std::make_shared<Threads>();
    DebugSession session(s.f, lean(threads));
    QVERIFY(get(session.call(s.args)).has_value());
    QCOMPARE(threads->starts.size(), std::size_t(1));
    QVERIFY(threads->starts[0] == std::this_thread::get_id());

    threads->starts.clear();
    threads->holdFirst = true;
    std::optional<std::vector<Tensor>> first;
    std::thread::id otherId;
    std::thread other([&] {
      otherId = std::this_thread::get_id();
      first = get(session.call(s.args));
    });
    {
      std::unique_lock lock(threads->m);
      QVERIFY(
          threads->cv.wait_for(lock, std::chrono::seconds(60), [&] { return threads->entered; }));
    }
    auto second = session.call(s.args);  // the first runs inline on `other`: this one is queued
    QVERIFY(second.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
    {
      std::lock_guard lock(threads->m);
      QCOMPARE(threads->starts.size(), std::size_t(1));  // the worker waits for the inline call
      threads->released = true;
    }
    threads->cv.notify_all();
    other.join();
    QVERIFY(first.has_value());
    QVERIFY(get(std::move(second)).has_value());
    QCOMPARE(threads->starts.size(), std::size_t(2));
    QVERIFY(threads->starts[0] == otherId);                     // inline, on its caller's thread
    QVERIFY(threads->starts[1] != std::this_thread::get_id());  // on the worker
    QVERIFY(threads->starts[1] != otherId);
  }
};

TSCOPE_TEST_MAIN(TestSessionCommittedCall)
#include "tst_session_committed_call.moc"
