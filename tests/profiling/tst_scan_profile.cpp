// Profiling a Scan (Note [Loop frames] in engine/vm/vm.h): the loop node's time per iteration
// (its body's nodes, on a fake clock so every figure is exact), the body's nodes once each with
// their calls and time summed over the iterations, the report's iteration table and the profile
// file's round trip.
#include "engine/compile/function.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "profiling/profile_io.h"
#include "profiling/profile_run.h"
#include "profiling/report.h"
#include "test_main.h"

#include <cmath>
#include <memory>

using namespace tscope::engine;
using namespace tscope;

class TestScanProfile : public QObject {
  Q_OBJECT

 private slots:
  void testPerIterationTimes() {
    auto x = Variable::create(TensorType(DType::Float64, {6}), "x");
    auto y0 = Variable::create(TensorType(DType::Float64, {}), "y0");
    VarPtr y = scan(
        [](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] * 0.5 + exp(a[0])}; },
        {x}, {y0}, {}, {}, -1, {.label = "acc"})[0];
    CompileOptions options;
    options.mode = Mode::FastCompile;  // the body keeps its separate nodes
    Function f = compile({x, y0}, {y * 2.0}, {}, options);
    const std::vector<Tensor> args{Tensor::fromDoubles(DType::Float64, {6}, {0, 1, 2, 3, 4, 5}),
                                   Tensor::scalar(DType::Float64, 1)};
    // Every clock reading is 1 us after the one before: a node without a frame takes exactly
    // 1 us (its two readings are consecutive).
    auto tick = std::make_shared<std::int64_t>(0);
    prof::ProfileRunOptions o;
    o.warmup = 0;
    o.runs = 3;
    o.profiler.clock = [tick] { return *tick += 1000; };
    const prof::Profile p = prof::profileFunction(f, args, o);
    const prof::NodeProfile* loop = nullptr;
    std::int64_t bodyNodes = 0;
    for (const prof::NodeProfile& n : p.nodes) {
      if (n.op == "Scan{acc}") loop = &n;
      if (!n.framePath.empty()) {
        ++bodyNodes;
        QCOMPARE(n.calls, std::int64_t{6 * 3});             // every iteration of every run
        QCOMPARE(n.time.count, std::int64_t{3});            // one sample per run
        QVERIFY(std::abs(n.time.mean - 6 * 1e-6) < 1e-12);  // summed over the 6 iterations
        QVERIFY(n.iterationSeconds.empty());
      }
    }
    QVERIFY(loop != nullptr);
    QVERIFY(bodyNodes >= 2);
    QCOMPARE(loop->iterationSeconds.size(), std::size_t{6});
    for (double s : loop->iterationSeconds)
      QVERIFY(std::abs(s - static_cast<double>(bodyNodes) * 1e-6) < 1e-12);
    const std::string text = prof::reportText(p);
    QVERIFY2(text.find("Iterations of Scan{acc}") != std::string::npos, text.c_str());
    QVERIFY2(text.find("6 iterations") != std::string::npos, text.c_str());
    QCOMPARE(prof::profileFromJson(prof::profileToJson(p), "/profile"), p);
  }
};

TSCOPE_TEST_MAIN(TestScanProfile)
#include "tst_scan_profile.moc"
