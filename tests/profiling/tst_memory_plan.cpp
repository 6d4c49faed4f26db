// The memory a plan needs (profiling/memory_plan.h) against hand-computed small graphs: a chain
// freed after last use, an inplace node that takes its input's buffer over, views and inplace
// writes on the caller's buffers (free), the peaks without inplace and without freeing, bad slot
// indices, and a compiled program with and without kept buffers (also as profileFunction fills it).
#include "engine/compile/function.h"
#include "engine/ops/basic.h"
#include "profiling/memory_plan.h"
#include "profiling/profile_run.h"
#include "test_main.h"

#include <cstdlib>
#include <string>

using namespace tscope::engine;
namespace prof = tscope::prof;
using prof::PlanGraph;

namespace {

// Slot 0 is the graph input; node k computes slot k + 1 from slot k. Slot 3 is the graph output.
PlanGraph chain(std::int64_t b1, std::int64_t b2, std::int64_t b3) {
  PlanGraph g;
  g.slotBytes = {10, b1, b2, b3};
  g.nodes.resize(3);
  for (std::uint32_t k = 0; k < 3; ++k) {
    g.nodes[k].inputs = {k};
    g.nodes[k].outputs = {{k + 1, -1, false}};
  }
  g.nodes[1].freedAfter = {1};
  g.nodes[2].freedAfter = {2};
  return g;
}

}  // namespace

class TestMemoryPlan : public QObject {
  Q_OBJECT

 private slots:
  void testChainFreedAfterLastUse() {
    // 100 | 100 + 200 = 300, then 200 | 200 + 50, then 50.
    QCOMPARE(prof::planMemory(chain(100, 200, 50)), (prof::PlanMemory{300, 300, 350}));
  }

  void testInplaceTakesTheInputBufferOver() {
    PlanGraph g = chain(100, 100, 50);
    g.nodes[1].outputs[0] = {2, 0, true};  // slot 2 overwrites slot 1
    // Plan: 100 | 100 (shared; slot 1 freed, the buffer stays for slot 2) | 150 -> 50.
    // Without inplace: 100 | 200 -> 100 | 150. Without freeing: 100 + 50.
    QCOMPARE(prof::planMemory(g), (prof::PlanMemory{150, 200, 150}));
  }

  void testViewsAndInplaceOnCallerBuffersCostNothing() {
    PlanGraph g = chain(10, 200, 50);
    g.nodes[0].outputs[0] = {1, 0, false};  // slot 1 views the graph input
    g.nodes[1].outputs[0] = {2, 0, true};   // slot 2 overwrites it in place (an SGD update)
    // Plan: 0 | 0 | 50. Without inplace: 0 | 200 | 250 (slot 2 is freed after node 2).
    QCOMPARE(prof::planMemory(g), (prof::PlanMemory{50, 250, 50}));
  }

  void testSeveralSlotsOfOneBuffer() {
    // Node 0 creates slot 1 (64 B); node 1 views it twice (slots 2, 3); the buffer lives until
    // the last of the three slots is freed.
    PlanGraph g;
    g.slotBytes = {8, 64, 64, 64, 32};
    g.nodes.resize(3);
    g.nodes[0] = {{0}, {{1, -1, false}}, {}};
    g.nodes[1] = {{1}, {{2, 0, false}, {3, 0, false}}, {1, 2}};
    g.nodes[2] = {{3}, {{4, -1, false}}, {3}};
    // 64 | 64 | 64 + 32 = 96, then the buffer's last slot goes: 32.
    QCOMPARE(prof::planMemory(g), (prof::PlanMemory{96, 96, 96}));
  }

  void testBadSlotIsRefused() {
    PlanGraph g = chain(1, 2, 3);
    g.nodes[2].freedAfter = {9};
    try {
      prof::planMemory(g);
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      QVERIFY(std::string(e.what()).find("node 2 names slot 9") != std::string::npos);
    }
  }

  void testCompiledProgram() {
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "x");
    VarPtr y = exp(x) * 2.0 + 1.0;
    for (bool keep : {false, true}) {
      Function f = compile({x}, {y}, {}, {.keepBuffers = keep});
      const Program& p = f.program();
      QCOMPARE(p.nodes().size(), std::size_t(3));
      std::vector<std::int64_t> bytes(p.slotCount(), 0);
      for (const Apply* n : p.schedule())
        bytes[static_cast<std::size_t>(p.slotOf(n->outputRef(0)))] = 16;
      const prof::PlanMemory m = prof::planMemory(prof::planGraphOf(p, bytes));
      // exp | exp + mul = 32, exp freed | mul + add = 32. With keepBuffers nothing is freed (48),
      // unless recycled buffers (Note [Recycled buffers], on unless TSCOPE_RECYCLE_BUFFERS=0)
      // recycle exp's buffer there.
      const char* recycleEnv = std::getenv("TSCOPE_RECYCLE_BUFFERS");
      const bool held = keep && recycleEnv && std::string(recycleEnv) == "0";
      QCOMPARE(m, (prof::PlanMemory{held ? 48 : 32, held ? 48 : 32, 48}));
      // The profiler fills the same figures from the sizes it measured.
      const prof::Profile profile =
          prof::profileFunction(f, {Tensor::fromDoubles(DType::Float32, {4}, {1, 2, 3, 4})});
      QCOMPARE(profile.memory.planPeakBytes, m.planPeak);
      QCOMPARE(profile.memory.peakWithoutFreeing, m.withoutFreeing);
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, prof::planGraphOf(p, {}));
    }
  }
};

TSCOPE_TEST_MAIN(TestMemoryPlan)
#include "tst_memory_plan.moc"
