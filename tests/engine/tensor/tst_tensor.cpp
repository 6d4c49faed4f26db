// Tensor: construction, views over shared storage, copies and conversions, comparison, printing,
// and the messages of every error.
#include "engine/tensor/reshape_strides.h"
#include "engine/tensor/tensor.h"
#include "test_main.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

using namespace tscope::engine;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::Tensor)
Q_DECLARE_METATYPE(std::function<void()>)

namespace {

constexpr qint64 kMax = std::numeric_limits<qint64>::max();
constexpr qint64 kMin = std::numeric_limits<qint64>::min();
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

QList<double> values(const Tensor& t) {
  const std::vector<double> v = t.toDoubles();
  return QList<double>(v.begin(), v.end());
}

QList<qint64> qshape(const Shape& s) {
  return QList<qint64>(s.begin(), s.end());
}

// 0, 1, ..., numel-1 in the given shape.
Tensor arange(DType dtype, Shape shape) {
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::fromDoubles(dtype, std::move(shape), v);
}

// What numpy's astype makes of a value already representable in the source type.
double numpyConvert(double v, DType to) {
  if (to == DType::Bool) return v != 0 ? 1 : 0;
  if (isFloat(to)) return v;
  const double t = std::trunc(v);
  // A negative value wraps into an unsigned type: -2 -> 2^bits - 2.
  if (!isSigned(to) && t < 0) return t + std::ldexp(1.0, 8 * static_cast<int>(dtypeSize(to)));
  return t;
}

}  // namespace

class TestTensor : public QObject {
  Q_OBJECT

 private slots:
  void testConstruction();
  void testUndefined();
  void testStorage();
  void testShapeHelpers();
  void testFromDoublesAndAccess();
  void testFullAndScalar();
  void testTypedData();
  void testBytesRoundTrip();
  void testTransposeSharesStorage();
  void testSlice_data();
  void testSlice();
  void testSlice2DNegativeStepWritesThrough();
  void testSelect();
  void testBroadcastTo();
  void testExpandDimsAndSqueeze();
  void testReshape();
  void testReshapeStrides();
  void testContiguousAndClone();
  void testAstype_data();
  void testAstype();
  void testAstypeNumpyEdgeCases();
  void testCopyFromStridedIntoStrided();
  void testBitwiseEqual();
  void testAllClose();
  void testToString_data();
  void testToString();
  void testStreamOperator();
  void testErrors_data();
  void testErrors();
};

void TestTensor::testConstruction() {
  const Tensor t(DType::Float32, {2, 3});
  QVERIFY(t.defined());
  QCOMPARE(t.dtype(), DType::Float32);
  QCOMPARE(qshape(t.shape()), (QList<qint64>{2, 3}));
  QCOMPARE(qshape(t.strides()), (QList<qint64>{3, 1}));
  QCOMPARE(t.numel(), 6);
  QCOMPARE(t.ndim(), 2);
  QCOMPARE(t.nbytes(), std::size_t{24});
  QCOMPARE(t.itemSize(), std::size_t{4});
  QCOMPARE(t.device(), Device::Cpu);
  QVERIFY(t.isContiguous());
  QCOMPARE(values(t), QList<double>(6, 0.0));
  QCOMPARE(reinterpret_cast<std::uintptr_t>(t.rawData()) % 64, std::uintptr_t{0});

  const Tensor empty(DType::Int64, {0, 4});
  QCOMPARE(empty.numel(), 0);
  QVERIFY(empty.isContiguous());
  QVERIFY(empty.toDoubles().empty());
}

void TestTensor::testUndefined() {
  const Tensor t;
  QVERIFY(!t.defined());
  QCOMPARE(t.numel(), 0);
  QVERIFY(!t.sharesStorageWith(Tensor()));
  QVERIFY(t.bitwiseEqual(Tensor()));
  QVERIFY(!t.bitwiseEqual(Tensor(DType::Float32, {})));
}

void TestTensor::testStorage() {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{1000}}) {
    Storage s(n);
    QCOMPARE(s.nbytes(), n);
    QCOMPARE(reinterpret_cast<std::uintptr_t>(s.data()) % 64, std::uintptr_t{0});
    for (std::size_t i = 0; i < n; ++i) QCOMPARE(s.data()[i], std::byte{0});
  }
  // Note [Huge pages for big tensors]: from 4 MiB on, buffers start on a 2 MiB boundary (zeroed
  // or not); below, on a 64-byte one.
  for (std::size_t n :
       {(std::size_t{4} << 20) - 1, std::size_t{4} << 20, std::size_t{40'000'001}}) {
    Storage zeroed(n);
    Storage raw(n, Storage::Uninitialized{});
    const std::uintptr_t want = n >= (std::size_t{4} << 20) ? std::uintptr_t{2} << 20 : 64;
    QCOMPARE(reinterpret_cast<std::uintptr_t>(zeroed.data()) % want, std::uintptr_t{0});
    QCOMPARE(reinterpret_cast<std::uintptr_t>(raw.data()) % want, std::uintptr_t{0});
    QCOMPARE(zeroed.nbytes(), n);
    for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) QCOMPARE(zeroed.data()[i], std::byte{0});
    raw.data()[n - 1] = std::byte{7};  // the whole buffer is writable
    QCOMPARE(raw.data()[n - 1], std::byte{7});
  }
  try {
    Storage s(16, Device::Cuda);
    QFAIL("a CUDA storage was constructed");
  } catch (const std::runtime_error& e) {
    QVERIFY2(
        std::string(e.what()).find("CUDA backend allocates device storage") != std::string::npos,
        e.what());
  }
}

void TestTensor::testShapeHelpers() {
  QCOMPARE(shapeNumel(Shape{}), 1);
  QCOMPARE(shapeNumel(Shape{2, 3, 4}), 24);
  QCOMPARE(shapeNumel(Shape{2, 0, 4}), 0);
  QCOMPARE(qshape(contiguousStrides(Shape{2, 3, 4})), (QList<qint64>{12, 4, 1}));
  QCOMPARE(qshape(contiguousStrides(Shape{})), QList<qint64>{});
  QCOMPARE(shapeToString(Shape{2, 3}), std::string("(2, 3)"));
  QCOMPARE(shapeToString(Shape{5}), std::string("(5,)"));
  QCOMPARE(shapeToString(Shape{}), std::string("()"));
}

void TestTensor::testFromDoublesAndAccess() {
  Tensor t = Tensor::fromDoubles(DType::Int32, {2, 3}, {1, 2, 3, 4, 5, 6});
  QCOMPARE(t.at({0, 0}), 1.0);
  QCOMPARE(t.at({1, 2}), 6.0);
  QCOMPARE(t.at({-1, -3}), 4.0);  // negative indices count from the end
  t.set({0, 1}, -7.9);            // converted like astype: truncated
  QCOMPARE(t.at({0, 1}), -7.0);
  QCOMPARE(t.data<std::int32_t>()[1], -7);
  QCOMPARE(values(t), (QList<double>{1, -7, 3, 4, 5, 6}));
  QCOMPARE(Tensor::fromDoubles(DType::Float64, {1, 1, 1}, {2.5}).item(), 2.5);
}

void TestTensor::testFullAndScalar() {
  const Tensor f = Tensor::full(DType::Float16, {2, 2}, 1.5);
  QCOMPARE(values(f), (QList<double>{1.5, 1.5, 1.5, 1.5}));
  QCOMPARE(f.data<Half>()[3].bits, std::uint16_t{0x3e00});
  const Tensor s = Tensor::scalar(DType::Bool, 3.0);
  QCOMPARE(s.ndim(), 0);
  QCOMPARE(s.numel(), 1);
  QCOMPARE(s.item(), 1.0);
  QCOMPARE(Tensor::zeros(DType::UInt8, {3}).toDoubles(), (std::vector<double>{0, 0, 0}));
}

void TestTensor::testTypedData() {
  Tensor t(DType::Float64, {3});
  t.data<double>()[2] = 4.25;
  QCOMPARE(t.at({2}), 4.25);
  const Tensor& ct = t;
  QCOMPARE(ct.data<double>()[2], 4.25);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, t.data<float>());
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tensor(DType::Int8, {1}).data<std::uint8_t>());
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tensor(DType::Bool, {1}).data<std::int8_t>());
  QVERIFY(Tensor(DType::Bool, {1}).data<bool>() != nullptr);
  QVERIFY(Tensor(DType::Int16, {1}).data<std::int16_t>() != nullptr);
  QVERIFY(Tensor(DType::Int64, {1}).data<std::int64_t>() != nullptr);
}

void TestTensor::testBytesRoundTrip() {
  const Tensor t = Tensor::fromDoubles(DType::Int16, {2, 2}, {1, -2, 300, 4});
  const std::vector<std::byte> bytes = t.toBytes();
  QCOMPARE(bytes.size(), std::size_t{8});
  QCOMPARE(bytes[0], std::byte{1});
  QCOMPARE(bytes[2], std::byte{0xfe});
  QCOMPARE(bytes[3], std::byte{0xff});
  QVERIFY(Tensor::fromBytes(DType::Int16, {2, 2}, bytes).bitwiseEqual(t));
  // A view's bytes come in its logical (row-major) order.
  const std::vector<std::byte> tb = t.transpose().toBytes();
  QCOMPARE(tb[2], std::byte{44});  // 300 = 0x012c, now the second element
  QCOMPARE(tb[3], std::byte{1});
}

void TestTensor::testTransposeSharesStorage() {
  Tensor t = arange(DType::Float32, {2, 3});
  Tensor tt = t.transpose();
  QCOMPARE(qshape(tt.shape()), (QList<qint64>{3, 2}));
  QCOMPARE(qshape(tt.strides()), (QList<qint64>{1, 3}));
  QVERIFY(!tt.isContiguous());
  QVERIFY(tt.sharesStorageWith(t));
  QCOMPARE(values(tt), (QList<double>{0, 3, 1, 4, 2, 5}));
  tt.set({2, 0}, 42);
  QCOMPARE(t.at({0, 2}), 42.0);

  const Tensor c = arange(DType::Int32, {2, 3, 4});
  const int perm[] = {1, 2, 0};
  const Tensor p = c.transpose(perm);
  QCOMPARE(qshape(p.shape()), (QList<qint64>{3, 4, 2}));
  QCOMPARE(p.at({2, 1, 1}), c.at({1, 2, 1}));
}

void TestTensor::testSlice_data() {
  QTest::addColumn<qint64>("start");
  QTest::addColumn<qint64>("stop");
  QTest::addColumn<qint64>("step");
  QTest::addColumn<QList<double>>("expected");  // numpy's arange(10)[start:stop:step]
  QTest::newRow("2:8:2") << qint64(2) << qint64(8) << qint64(2) << QList<double>{2, 4, 6};
  QTest::newRow("-3:") << qint64(-3) << kMax << qint64(1) << QList<double>{7, 8, 9};
  QTest::newRow("::-1") << kMax << kMin << qint64(-1)
                        << QList<double>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  QTest::newRow("8:2:-3") << qint64(8) << qint64(2) << qint64(-3) << QList<double>{8, 5};
  QTest::newRow("1::-1") << qint64(1) << kMin << qint64(-1) << QList<double>{1, 0};
  QTest::newRow("::-4") << kMax << kMin << qint64(-4) << QList<double>{9, 5, 1};
  QTest::newRow("-1:-4:-1") << qint64(-1) << qint64(-4) << qint64(-1) << QList<double>{9, 8, 7};
  QTest::newRow("5:5") << qint64(5) << qint64(5) << qint64(1) << QList<double>{};
  QTest::newRow("7:3") << qint64(7) << qint64(3) << qint64(1) << QList<double>{};
  QTest::newRow("-100:100") << qint64(-100) << qint64(100) << qint64(3)
                            << QList<double>{0, 3, 6, 9};
  QTest::newRow("100:-100:-5") << qint64(100) << qint64(-100) << qint64(-5) << QList<double>{9, 4};
}

void TestTensor::testSlice() {
  QFETCH(qint64, start);
  QFETCH(qint64, stop);
  QFETCH(qint64, step);
  QFETCH(QList<double>, expected);
  const Tensor t = arange(DType::Int64, {10});
  const Tensor s = t.slice(0, start, stop, step);
  QCOMPARE(s.numel(), expected.size());
  QCOMPARE(values(s), expected);
  QCOMPARE(values(s.clone()), expected);
}

void TestTensor::testSlice2DNegativeStepWritesThrough() {
  Tensor t = arange(DType::Float64, {3, 4});
  Tensor s = t.slice(-1, kMax, kMin, -2);  // t[:, ::-2]
  QCOMPARE(qshape(s.shape()), (QList<qint64>{3, 2}));
  QCOMPARE(qshape(s.strides()), (QList<qint64>{4, -2}));
  QCOMPARE(values(s), (QList<double>{3, 1, 7, 5, 11, 9}));
  s.set({1, 1}, -1);
  QCOMPARE(t.at({1, 1}), -1.0);
  QCOMPARE(values(s.slice(0, 2, 0, -1)), (QList<double>{11, 9, 7, -1}));  // rows 2, 1
}

void TestTensor::testSelect() {
  Tensor t = arange(DType::Int32, {2, 3});
  const Tensor row = t.select(0, 1);
  QCOMPARE(qshape(row.shape()), (QList<qint64>{3}));
  QCOMPARE(values(row), (QList<double>{3, 4, 5}));
  const Tensor col = t.select(1, -1);
  QCOMPARE(values(col), (QList<double>{2, 5}));
  const Tensor element = row.select(0, 2);
  QCOMPARE(element.ndim(), 0);
  QCOMPARE(element.item(), 5.0);
  QVERIFY(element.sharesStorageWith(t));
}

void TestTensor::testBroadcastTo() {
  const Tensor v = Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3});
  const Tensor b = v.broadcastTo({2, 3});
  QCOMPARE(qshape(b.strides()), (QList<qint64>{0, 1}));
  QVERIFY(!b.isContiguous());
  QCOMPARE(values(b), (QList<double>{1, 2, 3, 1, 2, 3}));
  const Tensor c = b.contiguous();
  QVERIFY(c.isContiguous());
  QVERIFY(!c.sharesStorageWith(v));
  QCOMPARE(values(c), (QList<double>{1, 2, 3, 1, 2, 3}));

  const Tensor col = Tensor::fromDoubles(DType::Int8, {2, 1}, {5, 6});
  QCOMPARE(values(col.broadcastTo({2, 2, 3})), (QList<double>{5, 5, 5, 6, 6, 6, 5, 5, 5, 6, 6, 6}));
  QCOMPARE(values(Tensor::scalar(DType::Float64, 7).broadcastTo({2})), (QList<double>{7, 7}));
  QCOMPARE(col.broadcastTo({0, 2, 0}).numel(), 0);
}

void TestTensor::testExpandDimsAndSqueeze() {
  const Tensor t = arange(DType::Float32, {2, 3});
  const Tensor front = t.expandDims(0);
  QCOMPARE(qshape(front.shape()), (QList<qint64>{1, 2, 3}));
  QVERIFY(front.isContiguous());
  QCOMPARE(qshape(t.expandDims(-1).shape()), (QList<qint64>{2, 3, 1}));
  QCOMPARE(qshape(t.expandDims(1).shape()), (QList<qint64>{2, 1, 3}));
  QCOMPARE(values(t.expandDims(1)), values(t));
  QCOMPARE(qshape(front.squeeze(0).shape()), (QList<qint64>{2, 3}));
  QCOMPARE(qshape(t.expandDims(2).squeeze(-1).shape()), (QList<qint64>{2, 3}));
  QVERIFY(front.squeeze(0).sharesStorageWith(t));
}

void TestTensor::testReshape() {
  const Tensor t = arange(DType::Int32, {2, 3});
  const Tensor r = t.reshape({3, 2});
  QVERIFY(r.sharesStorageWith(t));  // contiguous: a view
  QCOMPARE(values(r), values(t));
  QCOMPARE(qshape(t.reshape({-1}).shape()), (QList<qint64>{6}));
  QCOMPARE(qshape(t.reshape({3, -1, 1}).shape()), (QList<qint64>{3, 2, 1}));
  QCOMPARE(qshape(Tensor(DType::Float32, {0, 3}).reshape({-1, 3}).shape()), (QList<qint64>{0, 3}));

  const Tensor tt = t.transpose();
  const Tensor copy = tt.reshape({6});  // not contiguous: a copy
  QVERIFY(!copy.sharesStorageWith(t));
  QCOMPARE(values(copy), (QList<double>{0, 3, 1, 4, 2, 5}));

  const Tensor sliced = arange(DType::Float32, {4, 3}).slice(0, 1, 3);  // rows 1, 2: contiguous
  QVERIFY(sliced.isContiguous());
  const Tensor flat = sliced.reshape({6});
  QVERIFY(flat.sharesStorageWith(sliced));
  QCOMPARE(values(flat), (QList<double>{3, 4, 5, 6, 7, 8}));
}

// reshapeStrides (numpy's no-copy reshape): where it gives strides, the view reads the same
// row-major values as a copy; the cases a view must cover, and those that need a copy.
void TestTensor::testReshapeStrides() {
  const auto check = [](const Tensor& x, const Shape& to, bool expectView) {
    const std::optional<Strides> st = reshapeStrides(x.shape(), x.strides(), to);
    QCOMPARE(st.has_value(), expectView);
    if (!st) return;
    const Tensor view = x.view(to, *st, x.offset());
    QCOMPARE(values(view), values(x.contiguous().reshape(to)));
  };
  const Tensor base = arange(DType::Float32, {4, 6, 5});
  // Attention's heads: a column slice of a fused projection split into heads.
  const Tensor q = arange(DType::Float32, {7, 1, 12}).slice(2, 4, 8);  // (7, 1, 4), row step 12
  check(q, {7, 2, 2}, true);
  check(q, {7, 1, 2, 2}, true);
  check(q, {7, 4}, true);
  check(q, {28}, false);  // the rows are 12 apart, not 4
  const int perm[] = {1, 0, 2};
  // (6, 4, 5) with strides (5, 30, 1): no two axes step uniformly, only splits are views.
  check(base.transpose(perm), {6, 20}, false);
  check(base.transpose(perm), {24, 5}, false);
  check(base.transpose(perm), {3, 2, 4, 5}, true);
  check(base.transpose(), {5, 24}, false);
  check(base.transpose(), {5, 6, 2, 2}, true);          // only splits
  check(base.slice(1, 5, -7, -1), {4, 3, 2, 5}, true);  // reversed rows split
  check(base.slice(1, 0, 6, 2), {12, 5}, true);
  check(base.slice(2, 0, 5, 2), {24, 3}, true);  // strides (30, 5, 2): the rows merge
  check(base.slice(2, 0, 5, 2), {4, 18}, false);
  check(base.slice(2, 0, 1), {4, 6}, true);  // drops a unit axis
  check(Tensor::full(DType::Float32, {1}, 2.0).broadcastTo({3, 4}), {12}, true);  // stride 0
  check(Tensor::full(DType::Float32, {3, 1}, 2.0).broadcastTo({3, 4}), {12}, false);
  check(Tensor::full(DType::Float32, {1}, 2.0).broadcastTo({3, 4}), {3, 1, 4}, true);
  check(Tensor(DType::Float32, {0, 3}).transpose(), {3, 0, 1}, true);
  // Random views against random regroupings of their axes.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    Tensor x = arange(DType::Int32, {2, 3, 4, 2});
    if (rng() % 2) x = x.transpose();
    if (rng() % 2) x = x.slice(static_cast<int>(rng() % 4), 0, 1 + rng() % 2);
    if (rng() % 2) x = x.expandDims(static_cast<int>(rng() % 3));
    Shape to;
    std::int64_t left = x.numel();
    while (left > 1) {
      std::int64_t d = 1 + static_cast<std::int64_t>(rng() % 4);
      while (left % d != 0) --d;
      to.push_back(d);
      left /= d;
      if (rng() % 5 == 0) to.push_back(1);
    }
    if (to.empty()) to.push_back(1);
    const std::optional<Strides> st = reshapeStrides(x.shape(), x.strides(), to);
    if (x.isContiguous()) QVERIFY(st.has_value());
    if (st) QCOMPARE(values(x.view(to, *st, x.offset())), values(x.contiguous().reshape(to)));
  }
}

void TestTensor::testContiguousAndClone() {
  Tensor t = arange(DType::Float32, {2, 2});
  QVERIFY(t.contiguous().sharesStorageWith(t));
  Tensor c = t.clone();
  QVERIFY(!c.sharesStorageWith(t));
  QVERIFY(c.bitwiseEqual(t));
  c.set({0, 0}, 9);
  QCOMPARE(t.at({0, 0}), 0.0);
  const Tensor tc = t.transpose().contiguous();
  QVERIFY(tc.isContiguous());
  QCOMPARE(values(tc), (QList<double>{0, 2, 1, 3}));
}

void TestTensor::testAstype_data() {
  QTest::addColumn<DType>("from");
  QTest::addColumn<DType>("to");
  for (int i = 0; i < kDTypeCount; ++i)
    for (int j = 0; j < kDTypeCount; ++j) {
      const auto from = static_cast<DType>(i), to = static_cast<DType>(j);
      const std::string row = std::string(dtypeName(from)) + "->" + std::string(dtypeName(to));
      QTest::newRow(row.c_str()) << from << to;
    }
}

void TestTensor::testAstype() {
  QFETCH(DType, from);
  QFETCH(DType, to);
  // Values every source type holds exactly; floats add fractions and negatives.
  std::vector<double> input = {0, 1, 3, 100, 127, 0};
  if (from == DType::Bool) input = {0, 1, 1, 0, 1, 0};
  if (isFloat(from)) input = {0, 1.5, -2.75, 100.25, -0.5, 3};
  const Tensor src = Tensor::fromDoubles(from, {2, 3}, input);
  QCOMPARE(src.toDoubles(), input);
  QList<double> expected;
  for (double v : input) expected.append(numpyConvert(v, to));

  const Tensor converted = src.astype(to);
  QCOMPARE(converted.dtype(), to);
  QVERIFY(!converted.sharesStorageWith(src));
  QCOMPARE(values(converted), expected);
  // Through a strided view, the same values in the view's order.
  const Tensor viaView = src.transpose().astype(to);
  QCOMPARE(values(viaView), (QList<double>{expected[0], expected[3], expected[1], expected[4],
                                           expected[2], expected[5]}));
}

void TestTensor::testAstypeNumpyEdgeCases() {
  auto convert = [](DType from, double v, DType to) {
    return Tensor::fromDoubles(from, {1}, {v}).astype(to).item();
  };
  QCOMPARE(convert(DType::Float64, 200.0, DType::Int8), -56.0);
  QCOMPARE(convert(DType::Float64, -1.0, DType::UInt8), 255.0);
  QCOMPARE(convert(DType::Float32, 2.9, DType::Int32), 2.0);
  QCOMPARE(convert(DType::Float32, -2.9, DType::Int64), -2.0);
  QCOMPARE(convert(DType::Int32, 300, DType::UInt8), 44.0);
  QCOMPARE(convert(DType::Int16, -1, DType::UInt8), 255.0);
  QCOMPARE(convert(DType::Int64, 70000, DType::Int16), 4464.0);
  QCOMPARE(convert(DType::Float64, kNan, DType::Bool), 1.0);
  QCOMPARE(convert(DType::Float64, 0.25, DType::Bool), 1.0);
  QCOMPARE(convert(DType::Float64, -0.0, DType::Bool), 0.0);
  QCOMPARE(convert(DType::Float64, 70000, DType::Float16), kInf);
  QCOMPARE(convert(DType::Float64, 0.1, DType::Float16), 0.0999755859375);
  QCOMPARE(convert(DType::Float64, kNan, DType::Int64), double(kMin));
  QVERIFY(std::isnan(convert(DType::Float64, kNan, DType::Float16)));
  Tensor big(DType::Int64, {1});
  big.data<std::int64_t>()[0] = (std::int64_t{1} << 62) + 1;
  QCOMPARE(big.astype(DType::Int32).item(), 1.0);  // wraps like numpy's integer cast
}

void TestTensor::testCopyFromStridedIntoStrided() {
  const Tensor row = Tensor::fromDoubles(DType::Int32, {3}, {1, 2, 3});
  Tensor dst(DType::Float64, {3, 3});
  Tensor dstT = dst.transpose();
  dstT.copyFrom(row.broadcastTo({3, 3}));  // dst^T[i][j] = row[j], so dst[j][i] = row[j]
  QCOMPARE(values(dst), (QList<double>{1, 1, 1, 2, 2, 2, 3, 3, 3}));
  Tensor part = dst.slice(1, 0, 3, 2);  // columns 0 and 2
  part.copyFrom(Tensor::fromDoubles(DType::Float16, {3, 2}, {-1, -2, -3, -4, -5, -6}));
  QCOMPARE(values(dst), (QList<double>{-1, 1, -2, -3, 2, -4, -5, 3, -6}));
}

void TestTensor::testBitwiseEqual() {
  const Tensor a = Tensor::fromDoubles(DType::Float32, {3}, {1, kNan, 3});
  QVERIFY(a.bitwiseEqual(a.clone()));
  QVERIFY(!a.bitwiseEqual(a.astype(DType::Float64)));
  QVERIFY(!a.bitwiseEqual(a.reshape({1, 3})));
  Tensor payload = a.clone();
  payload.data<float>()[1] = std::bit_cast<float>(std::uint32_t{0x7fc00001});
  QVERIFY(!a.bitwiseEqual(payload));
  const Tensor zero = Tensor::fromDoubles(DType::Float64, {1}, {0.0});
  QVERIFY(!zero.bitwiseEqual(Tensor::fromDoubles(DType::Float64, {1}, {-0.0})));
  // Views compare by their logical elements.
  const Tensor m = arange(DType::Int16, {2, 3});
  QVERIFY(m.transpose().bitwiseEqual(m.transpose().contiguous()));
  QVERIFY(!m.transpose().bitwiseEqual(m.reshape({3, 2})));
  QVERIFY(Tensor::full(DType::UInt8, {2, 2}, 7)
              .bitwiseEqual(Tensor::scalar(DType::UInt8, 7).broadcastTo({2, 2})));
}

void TestTensor::testAllClose() {
  const Tensor a = Tensor::fromDoubles(DType::Float64, {4}, {1, kNan, kInf, -kInf});
  QVERIFY(a.allClose(a.clone()));
  QVERIFY(a.allClose(Tensor::fromDoubles(DType::Float64, {4}, {1 + 1e-9, kNan, kInf, -kInf})));
  QVERIFY(!a.allClose(Tensor::fromDoubles(DType::Float64, {4}, {1.001, kNan, kInf, -kInf})));
  QVERIFY(!a.allClose(Tensor::fromDoubles(DType::Float64, {4}, {1, 0, kInf, -kInf})));
  QVERIFY(!a.allClose(Tensor::fromDoubles(DType::Float64, {4}, {1, kNan, -kInf, -kInf})));
  QVERIFY(!a.allClose(Tensor::fromDoubles(DType::Float64, {4}, {1, kNan, 1e300, -kInf})));
  QVERIFY(a.allClose(Tensor::fromDoubles(DType::Float64, {4}, {1.001, kNan, kInf, -kInf}), 1e-2));
  QVERIFY(!a.allClose(a.reshape({2, 2})));
  const Tensor i = Tensor::fromDoubles(DType::Int32, {2}, {1, 2});
  QVERIFY(i.allClose(Tensor::fromDoubles(DType::Float32, {2}, {1, 2})));
  QVERIFY(!i.allClose(Tensor::fromDoubles(DType::Float32, {2}, {1, 2.1})));
  QVERIFY(Tensor::fromDoubles(DType::Float64, {1}, {0})
              .allClose(Tensor::fromDoubles(DType::Float64, {1}, {1e-3}), 0, 1e-2));
}

void TestTensor::testToString_data() {
  QTest::addColumn<Tensor>("tensor");
  QTest::addColumn<int>("edgeItems");
  QTest::addColumn<QString>("expected");
  QTest::newRow("float scalar") << Tensor::scalar(DType::Float32, 1.5) << 3 << "1.5";
  QTest::newRow("int scalar") << Tensor::scalar(DType::Int64, -7) << 3 << "-7";
  QTest::newRow("bool scalar") << Tensor::scalar(DType::Bool, 1) << 3 << "true";
  QTest::newRow("float vector") << Tensor::fromDoubles(DType::Float64, {4}, {1.5, 2, kNan, -kInf})
                                << 3 << "[ 1.5,    2,  nan, -inf]";
  QTest::newRow("float digits") << Tensor::fromDoubles(DType::Float64, {5},
                                                       {1.0 / 3, -0.5, 1e-5, 1e20, 123456.789})
                                << 3
                                << "[    0.3333,       -0.5,      1e-05,      1e+20, 123456.789]";
  QTest::newRow("float16") << Tensor::fromDoubles(DType::Float16, {2}, {0.1, 2}) << 3
                           << "[0.1,   2]";
  QTest::newRow("int matrix") << arange(DType::Int32, {2, 2}) << 3 << "[[0, 1],\n [2, 3]]";
  QTest::newRow("padded matrix") << Tensor::fromDoubles(DType::Int8, {2, 2}, {1, 10, 100, -2}) << 3
                                 << "[[  1,  10],\n [100,  -2]]";
  QTest::newRow("uint8") << Tensor::fromDoubles(DType::UInt8, {2}, {255, 0}) << 3 << "[255,   0]";
  QTest::newRow("3-D") << arange(DType::Int64, {2, 2, 2}) << 3
                       << "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]";
  QTest::newRow("bool") << Tensor::fromDoubles(DType::Bool, {2}, {1, 0}) << 3 << "[ true, false]";
  QTest::newRow("summarised vector")
      << arange(DType::Int32, {10}) << 3 << "[0, 1, 2, ..., 7, 8, 9]";
  QTest::newRow("not summarised at 2*edge")
      << arange(DType::Int32, {6}) << 3 << "[0, 1, 2, 3, 4, 5]";
  QTest::newRow("summarised rows")
      << arange(DType::Int32, {8, 2}) << 1 << "[[ 0,  1],\n ...,\n [14, 15]]";
  QTest::newRow("summarised both")
      << arange(DType::Int32, {3, 3}) << 1 << "[[0, ..., 2],\n ...,\n [6, ..., 8]]";
  QTest::newRow("transposed view")
      << arange(DType::Int32, {2, 3}).transpose() << 3 << "[[0, 3],\n [1, 4],\n [2, 5]]";
  QTest::newRow("empty") << Tensor(DType::Float32, {2, 0}) << 3 << "[]";
}

void TestTensor::testToString() {
  QFETCH(Tensor, tensor);
  QFETCH(int, edgeItems);
  QFETCH(QString, expected);
  QCOMPARE(QString::fromStdString(tensor.toString(edgeItems)), expected);
}

void TestTensor::testStreamOperator() {
  std::ostringstream os;
  os << arange(DType::Float32, {2, 2});
  QCOMPARE(QString::fromStdString(os.str()),
           QStringLiteral("Tensor(float32, (2, 2))\n[[0, 1],\n [2, 3]]"));
  std::ostringstream undefined;
  undefined << Tensor();
  QCOMPARE(QString::fromStdString(undefined.str()), QStringLiteral("Tensor(undefined)"));
}

void TestTensor::testErrors_data() {
  QTest::addColumn<std::function<void()>>("call");
  QTest::addColumn<bool>("outOfRange");  // std::out_of_range, else std::invalid_argument
  QTest::addColumn<QStringList>("mentions");
  const Tensor m = arange(DType::Float32, {2, 3});
  auto row = [](const char* name, std::function<void()> call, bool outOfRange,
                QStringList mentions) { QTest::newRow(name) << call << outOfRange << mentions; };
  row("reshape count",
      [=] {
        m.reshape({4, 2});
      },
      false, {"Tensor::reshape: cannot reshape (2, 3) (6 elements) into (4, 2) (8 elements)"});
  row("reshape two -1", [=] { m.reshape({-1, -1}); }, false, {"(2, 3)", "(-1, -1)", "-1"});
  row("reshape -1 indivisible", [=] { m.reshape({4, -1}); }, false, {"(2, 3)", "(4, -1)"});
  row("reshape negative", [=] { m.reshape({-2, -3}); }, false, {"(2, 3)", "(-2, -3)"});
  row("transpose perm",
      [=] {
        const int p[] = {0, 0};
        m.transpose(p);
      },
      false, {"(2, 3)", "(0, 0)", "permutation"});
  row("transpose length",
      [=] {
        const int p[] = {0};
        m.transpose(p);
      },
      false, {"(2, 3)", "(0,)"});
  row("slice step", [=] { m.slice(0, 0, 1, 0); }, false, {"step", "0"});
  row("slice axis", [=] { m.slice(2, 0, 1); }, true, {"axis 2", "(2, 3)"});
  row("select index", [=] { m.select(1, 3); }, true, {"index 3", "axis 1", "(2, 3)"});
  row("select negative index", [=] { m.select(0, -3); }, true, {"index -3", "(2, 3)"});
  row("select axis", [=] { m.select(-3, 0); }, true, {"axis -3", "(2, 3)"});
  row("broadcast mismatch",
      [=] {
        m.broadcastTo({3, 3});
      },
      false, {"cannot broadcast (2, 3) to (3, 3)"});
  row("broadcast fewer dims", [=] { m.broadcastTo({3}); }, false,
      {"cannot broadcast (2, 3) to (3,)"});
  row("squeeze size", [=] { m.squeeze(1); }, false, {"(2, 3)", "size 1", "found 3"});
  row("expandDims axis", [=] { m.expandDims(4); }, true, {"axis 4", "(2, 3)"});
  row("at arity", [=] { m.at({1}); }, true, {"(2, 3)", "(1,)"});
  row("at range", [=] { m.at({1, 3}); }, true, {"(1, 3)", "(2, 3)"});
  row("set range",
      [=] {
        Tensor c = m;
        c.set({2, 0}, 1);
      },
      true, {"(2, 0)", "(2, 3)"});
  row("item", [=] { m.item(); }, false, {"(2, 3)", "6 elements"});
  row("fromDoubles count",
      [] {
        Tensor::fromDoubles(DType::Int8, {2, 3}, {1, 2, 3, 4, 5});
      },
      false, {"(2, 3)", "6", "found 5"});
  row("fromBytes count",
      [] {
        Tensor::fromBytes(DType::Int32, {2, 3}, std::vector<std::byte>(20));
      },
      false, {"int32 (2, 3)", "24 bytes", "found 20"});
  row("copyFrom shape",
      [=] {
        Tensor(DType::Int8, {3, 2}).copyFrom(m);
      },
      false, {"(3, 2)", "(2, 3)"});
  row("data dtype", [=] { m.data<std::int32_t>(); }, false, {"int32", "float32 (2, 3)"});
  row("view out of storage",
      [=] {
        m.view({2, 3}, {3, 1}, 1);
      },
      true, {"(2, 3)", "(3, 1)", "offset 1", "storage holds 6"});
  row("view negative reach", [=] { m.view({3}, {-1}, 1); }, true, {"(3,)", "(-1,)"});
  row("strides length",
      [=] {
        Tensor(m.storage(), DType::Float32, {6}, {1, 1}, 0);
      },
      false, {"(6,)", "(1, 1)"});
  row("negative dim", [] { Tensor(DType::Float32, {2, -1}); }, false, {"(2, -1)"});
  row("numel overflow", [] { shapeNumel(Shape{kMax, 2}); }, false, {"overflows"});
  row("bytes overflow", [] { Tensor(DType::Float64, {kMax / 4}); }, false, {"overflows"});
  row("undefined", [] { Tensor().rawData(); }, false, {"undefined"});
  row("toString edge", [=] { (void)m.toString(0); }, false, {"edgeItems", "found 0"});
}

void TestTensor::testErrors() {
  QFETCH(std::function<void()>, call);
  QFETCH(bool, outOfRange);
  QFETCH(QStringList, mentions);
  QString message;
  bool gotOutOfRange = false;
  try {
    call();
    QFAIL("no exception");
  } catch (const std::out_of_range& e) {
    gotOutOfRange = true;
    message = QString::fromUtf8(e.what());
  } catch (const std::invalid_argument& e) {
    message = QString::fromUtf8(e.what());
  }
  QCOMPARE(gotOutOfRange, outOfRange);
  for (const QString& m : mentions)
    QVERIFY2(message.contains(m), qPrintable(QStringLiteral("'%1' not in: %2").arg(m, message)));
}

TSCOPE_TEST_MAIN(TestTensor)
#include "tst_tensor.moc"
