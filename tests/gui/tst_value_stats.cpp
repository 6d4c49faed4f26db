// Value statistics of the inspector: counts, min/max/mean/std over finite elements, NaN/Inf
// counts, the 32-bin histogram, for every dtype family and for empty tensors; and the histogram
// widget's bars.

#include "gui_test_main.h"
// The units under test and what they need:
#include "gui/app/inspector/histogram_widget.h"
#include "gui/app/inspector/value_stats.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace tscope;
using engine::DType;
using engine::Tensor;
using gui::computeValueStats;

namespace {
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
std::int64_t total(const std::vector<std::int64_t>& h) {
  return std::accumulate(h.begin(), h.end(), std::int64_t{0});
}
}  // namespace

class TestValueStats : public QObject {
  Q_OBJECT

 private slots:
  void testFloatWithNanAndInf() {
    const Tensor t =
        Tensor::fromDoubles(DType::Float32, {2, 4}, {1, 2, kNan, 3, kInf, -kInf, kInf, 4});
    const gui::ValueStats s = computeValueStats(t);
    QCOMPARE(s.count, 8);
    QCOMPARE(s.finiteCount, 4);
    QCOMPARE(s.nanCount, 1);
    QCOMPARE(s.posInfCount, 2);
    QCOMPARE(s.negInfCount, 1);
    QCOMPARE(s.min, 1.0);
    QCOMPARE(s.max, 4.0);
    QCOMPARE(s.mean, 2.5);
    QCOMPARE(s.std, std::sqrt(1.25));
    QCOMPARE(int(s.histogram.size()), gui::kHistogramBins);
    QCOMPARE(total(s.histogram), 4);  // NaN and Inf are counted, not binned
    QCOMPARE(s.histogram.front(), 1);
    QCOMPARE(s.histogram.back(), 1);  // max lands in the last bin
  }

  void testDTypes_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<double>("min");
    QTest::addColumn<double>("max");
    QTest::addColumn<double>("mean");
    // Values 0, 1, 1, 2, 3, 5 (bool: 0, 1, 1, 1, 1, 1).
    QTest::newRow("int8") << int(DType::Int8) << 0.0 << 5.0 << 2.0;
    QTest::newRow("int32") << int(DType::Int32) << 0.0 << 5.0 << 2.0;
    QTest::newRow("int64") << int(DType::Int64) << 0.0 << 5.0 << 2.0;
    QTest::newRow("uint8") << int(DType::UInt8) << 0.0 << 5.0 << 2.0;
    QTest::newRow("float16") << int(DType::Float16) << 0.0 << 5.0 << 2.0;
    QTest::newRow("float64") << int(DType::Float64) << 0.0 << 5.0 << 2.0;
    QTest::newRow("bool") << int(DType::Bool) << 0.0 << 1.0 << 5.0 / 6.0;
  }

  void testDTypes() {
    QFETCH(int, dtype);
    QFETCH(double, min);
    QFETCH(double, max);
    QFETCH(double, mean);
    const Tensor t = Tensor::fromDoubles(DType(dtype), {6}, {0, 1, 1, 2, 3, 5});
    const gui::ValueStats s = computeValueStats(t);
    QCOMPARE(s.dtype, DType(dtype));
    QCOMPARE(s.finiteCount, 6);
    QCOMPARE(s.nanCount + s.posInfCount + s.negInfCount, 0);
    QCOMPARE(s.min, min);
    QCOMPARE(s.max, max);
    QVERIFY(std::abs(s.mean - mean) < 1e-12);
    QCOMPARE(total(s.histogram), 6);
  }

  void testFloat16NanAndInf() {
    const Tensor t = Tensor::fromDoubles(DType::Float16, {4}, {kNan, kInf, 0.5, -2});
    const gui::ValueStats s = computeValueStats(t);
    QCOMPARE(s.nanCount, 1);
    QCOMPARE(s.posInfCount, 1);
    QCOMPARE(s.min, -2.0);
    QCOMPARE(s.max, 0.5);
  }

  void testEmptyAndAllNan() {
    const gui::ValueStats empty = computeValueStats(Tensor(DType::Float32, {0, 3}));
    QCOMPARE(empty.count, 0);
    QVERIFY(std::isnan(empty.min) && std::isnan(empty.mean) && std::isnan(empty.std));
    QVERIFY(empty.histogram.empty());
    QCOMPARE(empty.shape, (engine::Shape{0, 3}));
    const gui::ValueStats nans =
        computeValueStats(Tensor::fromDoubles(DType::Float64, {2}, {kNan, kNan}));
    QCOMPARE(nans.nanCount, 2);
    QCOMPARE(nans.finiteCount, 0);
    QVERIFY(std::isnan(nans.max));
    QVERIFY(nans.histogram.empty());
  }

  void testViewsAndScalars() {
    // A transposed (non-contiguous) view has the same statistics as its base.
    const Tensor base = Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 60});
    const gui::ValueStats a = computeValueStats(base), b = computeValueStats(base.transpose());
    QCOMPARE(b.max, a.max);
    QCOMPARE(b.histogram, a.histogram);
    QCOMPARE(b.shape, (engine::Shape{3, 2}));
    const gui::ValueStats s = computeValueStats(Tensor::scalar(DType::Float64, 7));
    QCOMPARE(s.count, 1);
    QCOMPARE(s.std, 0.0);
    QCOMPARE(s.histogram[0], 1);  // min == max: everything in bin 0
  }

  void testHistogramBins_data() {
    QTest::addColumn<double>("x");
    QTest::addColumn<int>("bin");
    QTest::newRow("low") << 0.0 << 0;
    QTest::newRow("just below an edge") << 0.999 << 7;
    QTest::newRow("on an edge") << 1.0 << 8;
    QTest::newRow("middle") << 2.0 << 16;
    QTest::newRow("high is in the last bin") << 4.0 << 31;
  }

  void testHistogramBins() {
    QFETCH(double, x);
    QFETCH(int, bin);
    QCOMPARE(gui::histogramBin(x, 0, 4, 32), bin);
  }

  void testLargeValueHistogramShape() {
    // 0..9999 uniformly: every bin holds 10000/32 ± 1 values.
    std::vector<double> v(10000);
    std::iota(v.begin(), v.end(), 0.0);
    const gui::ValueStats s = computeValueStats(Tensor::fromDoubles(DType::Int32, {100, 100}, v));
    for (auto n : s.histogram) QVERIFY2(n >= 312 && n <= 313, qPrintable(QString::number(n)));
    QVERIFY(std::abs(s.std - std::sqrt((10000.0 * 10000.0 - 1) / 12)) < 1e-6);
  }

  void testHistogramWidgetBars() {
    gui::HistogramWidget w;
    w.resize(340, 160);
    w.setStats(computeValueStats(Tensor::fromDoubles(DType::Float32, {3}, {0, 0, 32})));
    const QRect r = w.rect();
    QCOMPARE(w.barAt(QPoint(6, r.height() / 3)), 0);
    QCOMPARE(w.barAt(QPoint(r.width() - 6, r.height() / 3)), 31);
    QCOMPARE(w.barText(0), QString("[0, 1): 2"));
    QCOMPARE(w.barText(31), QString("[31, 32]: 1"));
    QCOMPARE(w.barText(32), QString());
    // It paints: the highest bar (bin 0) is drawn in the highlight colour near the bottom.
    const QImage img = w.grab().toImage();
    const QColor bar = w.palette().color(QPalette::Highlight);
    bool found = false;
    for (int y = 0; y < img.height() && !found; ++y) found = img.pixelColor(8, y) == bar;
    QVERIFY(found);
    w.clear();
    QCOMPARE(w.barAt(QPoint(6, 20)), -1);
  }
};

TSCOPE_GUI_TEST_MAIN(TestValueStats)
#include "tst_value_stats.moc"
