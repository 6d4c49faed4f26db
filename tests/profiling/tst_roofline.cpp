// roofline() against hand numbers: a compute-bound and a memory-bound node, the ridge point, the
// one-thread figures, a node faster than its bound, and the cases that are not known (unknown
// cost, no time, no calibration).

#include "profiling/roofline.h"
#include "test_main.h"

#include <QtTest/QtTest>

using namespace tscope;
using prof::RooflinePoint;

namespace {

// 100 GFLOP/s and 20 GB/s on all threads (ridge at 5 flop/byte); 25 and 10 on one.
prof::Calibration machine() {
  prof::Calibration c;
  c.cpu = "Test CPU";
  c.threads = 4;
  c.gemmGflopsAll = 100;
  c.bandwidthGBsAll = 20;
  c.gemmGflopsOne = 25;
  c.bandwidthGBsOne = 10;
  return c;
}

engine::OpCost cost(double flops, double read, double written) {
  engine::OpCost c;
  c.flops = flops;
  c.bytesRead = read;
  c.bytesWritten = written;
  c.known = true;
  return c;
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
}

}  // namespace

class TestRoofline : public QObject {
  Q_OBJECT

 private slots:
  void computeBound() {
    // 1e9 flops over 1e7 bytes (intensity 100) in 20 ms: the compute bound is 1e9 / 1e11 =
    // 10 ms, the memory bound 1e7 / 2e10 = 0.5 ms: compute, fraction 0.5, 50 GFLOP/s, 0.5 GB/s.
    const RooflinePoint p = prof::roofline(cost(1e9, 6e6, 4e6), 0.02, machine());
    QVERIFY(p.known);
    QCOMPARE(p.limit, RooflinePoint::Limit::Compute);
    QVERIFY(near(p.boundSeconds, 0.01));
    QVERIFY(near(p.fraction, 0.5));
    QVERIFY(near(p.gflops, 50));
    QVERIFY(near(p.gbps, 0.5));
    QVERIFY(near(p.intensity, 100));
    QCOMPARE(prof::rooflineLimitName(p.limit), std::string_view("compute"));
  }

  void memoryBound() {
    // An add of 1e6 float32: 1e6 flops, 1.2e7 bytes, in 2 ms. Memory bound 1.2e7 / 2e10 =
    // 0.6 ms, compute 1e-5 s: memory, fraction 0.3, 6 GB/s.
    const RooflinePoint p = prof::roofline(cost(1e6, 8e6, 4e6), 0.002, machine());
    QVERIFY(p.known);
    QCOMPARE(p.limit, RooflinePoint::Limit::Memory);
    QVERIFY(near(p.boundSeconds, 6e-4));
    QVERIFY(near(p.fraction, 0.3));
    QVERIFY(near(p.gbps, 6));
    QVERIFY(near(p.gflops, 0.5));
    QCOMPARE(prof::rooflineLimitName(p.limit), std::string_view("memory"));
  }

  void ridgePoint() {
    QVERIFY(near(prof::ridgeIntensity(machine()), 5));
    QVERIFY(near(prof::ridgeIntensity(machine(), false), 2.5));
    // At the ridge both bounds are equal (1e8 / 1e11 = 2e7 / 2e10 = 1 ms): compute by convention.
    const RooflinePoint at = prof::roofline(cost(1e8, 1e7, 1e7), 0.001, machine());
    QCOMPARE(at.limit, RooflinePoint::Limit::Compute);
    QVERIFY(near(at.fraction, 1));
    // Just below the ridge: memory.
    const RooflinePoint below = prof::roofline(cost(0.99e8, 1e7, 1e7), 0.001, machine());
    QCOMPARE(below.limit, RooflinePoint::Limit::Memory);
    QVERIFY(near(below.fraction, 1));
  }

  void oneThreadFigures() {
    // The same node against one thread's peaks (25 GFLOP/s): bound 40 ms, fraction 2 when it
    // took 20 ms (it ran on more threads than the roof assumes; not clamped).
    const RooflinePoint p = prof::roofline(cost(1e9, 6e6, 4e6), 0.02, machine(), false);
    QVERIFY(near(p.boundSeconds, 0.04));
    QVERIFY(near(p.fraction, 2));
  }

  void nothingMoved() {
    // A view: known, 0 bound, 0 fraction, memory, intensity 0.
    const RooflinePoint p = prof::roofline(cost(0, 0, 0), 1e-6, machine());
    QVERIFY(p.known);
    QCOMPARE(p.boundSeconds, 0.0);
    QCOMPARE(p.fraction, 0.0);
    QCOMPARE(p.intensity, 0.0);
    QCOMPARE(p.limit, RooflinePoint::Limit::Memory);
  }

  void unknownCases() {
    engine::OpCost unknown;
    QVERIFY(!prof::roofline(unknown, 0.01, machine()).known);
    QVERIFY(!prof::roofline(cost(1, 1, 1), 0, machine()).known);
    QVERIFY(!prof::roofline(cost(1, 1, 1), -1, machine()).known);
    QVERIFY(
        !prof::roofline(cost(1, 1, 1), std::numeric_limits<double>::infinity(), machine()).known);
    QVERIFY(!prof::roofline(cost(1, 1, 1), 0.01, prof::Calibration{}).known);
    prof::Calibration halfMeasured = machine();
    halfMeasured.bandwidthGBsAll = 0;
    QVERIFY(!prof::roofline(cost(1, 1, 1), 0.01, halfMeasured).known);
    QCOMPARE(prof::ridgeIntensity(prof::Calibration{}), 0.0);
    // An unknown point is all zeros.
    QCOMPARE(prof::roofline(unknown, 0.01, machine()), RooflinePoint{});
  }
};

TSCOPE_TEST_MAIN(TestRoofline)
#include "tst_roofline.moc"
