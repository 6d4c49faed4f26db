// uint16, uint32 and uint64: typed element access, numpy's astype conversions into and out of them
// (float -> uint64 above 2^63, negative values wrapping), text, .npy bytes, and the elementwise
// ops with numpy's integer semantics: wrapping add/sub/mul, unsigned floor division and
// remainder (division by zero gives 0), wrapping powers, comparisons of values past int64's
// range, and promotion of mixed operands (uint32 + int32 -> int64, uint64 + int64 -> float64).
#include "engine/io/npy.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/tensor/tensor.h"
#include "test_main.h"

#include <cstdint>
#include <limits>
#include <vector>

using namespace tscope::engine;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

template <class T>
Tensor tensorOf(std::vector<T> values) {
  DType dtype = DType::UInt64;
  if constexpr (std::is_same_v<T, std::uint16_t>)
    dtype = DType::UInt16;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    dtype = DType::UInt32;
  Tensor t = Tensor::empty(dtype, {static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

template <class T>
std::vector<T> valuesOf(const Tensor& t) {
  const Tensor c = t.contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

// Runs one Elemwise node's perform() on the values.
Tensor run(ScalarOp op, const std::vector<Tensor>& inputs, DType target = DType::Float32) {
  auto elemwiseOp = std::make_shared<Elemwise>(op, std::map<int, int>{}, target);
  std::vector<VarPtr> vars;
  for (const Tensor& t : inputs) vars.push_back(Variable::create(TensorType::ofValue(t)));
  ApplyPtr node = elemwiseOp->makeNode(vars);
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  Tensor out;
  Tensor* outs[] = {&out};
  elemwiseOp->perform(*node, ptrs, outs);
  return out;
}

}  // namespace

class TestUnsignedDtypes : public QObject {
  Q_OBJECT

 private slots:
  void testTypedAccessChecksTheDtype();
  void testAstypeIntoUnsigned();
  void testAstypeOutOfUnsigned();
  void testToString();
  void testNpyBytes_data();
  void testNpyBytes();
  void testWrappingArithmetic();
  void testDivisionAndRemainder();
  void testPowerWraps();
  void testComparisonsPastInt64();
  void testMixedOperandsPromote_data();
  void testMixedOperandsPromote();
};

void TestUnsignedDtypes::testTypedAccessChecksTheDtype() {
  Tensor t(DType::UInt32, {2});
  t.data<std::uint32_t>()[1] = 4000000000u;
  QCOMPARE(t.at({1}), 4000000000.0);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, t.data<std::int32_t>());
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, t.data<std::uint64_t>());
  QCOMPARE(t.itemSize(), std::size_t{4});
  QCOMPARE(Tensor(DType::UInt16, {3}).nbytes(), std::size_t{6});
  QCOMPARE(Tensor(DType::UInt64, {3}).nbytes(), std::size_t{24});
}

// numpy: np.array([-1, 65536, 70000.7, 3.9e9]).astype(np.uint32) (and the first three as
// uint16: truncated, then wrapped), and float64 -> uint64 takes [2^63, 2^64) exactly (not through
// int64), a negative value wrapping.
void TestUnsignedDtypes::testAstypeIntoUnsigned() {
  const Tensor f = Tensor::fromDoubles(DType::Float64, {4}, {-1.0, 65536.0, 70000.7, 3.9e9});
  QCOMPARE(valuesOf<std::uint16_t>(f.slice(0, 0, 3).astype(DType::UInt16)),
           (std::vector<std::uint16_t>{65535, 0, 4464}));
  QCOMPARE(valuesOf<std::uint32_t>(f.astype(DType::UInt32)),
           (std::vector<std::uint32_t>{4294967295u, 65536u, 70000u, 3900000000u}));
  const Tensor big =
      Tensor::fromDoubles(DType::Float64, {3}, {9223372036854775808.0, 1.5e19, -2.0});
  QCOMPARE(
      valuesOf<std::uint64_t>(big.astype(DType::UInt64)),
      (std::vector<std::uint64_t>{9223372036854775808ull, 15000000000000000000ull, kU64Max - 1}));
  // Integer -> unsigned wraps as C++20 (and numpy) do.
  const Tensor i = Tensor::fromDoubles(DType::Int64, {2}, {-1, 70000});
  QCOMPARE(valuesOf<std::uint16_t>(i.astype(DType::UInt16)),
           (std::vector<std::uint16_t>{65535, 4464}));
  QCOMPARE(valuesOf<std::uint64_t>(i.astype(DType::UInt64)),
           (std::vector<std::uint64_t>{kU64Max, 70000}));
}

void TestUnsignedDtypes::testAstypeOutOfUnsigned() {
  const Tensor u = tensorOf<std::uint64_t>({kU64Max, 1ull << 63, 5});
  QCOMPARE(valuesOf<std::int64_t>(u.astype(DType::Int64)),
           (std::vector<std::int64_t>{-1, std::numeric_limits<std::int64_t>::min(), 5}));
  QCOMPARE(u.astype(DType::Float64).toDoubles(),
           (std::vector<double>{18446744073709551615.0, 9223372036854775808.0, 5.0}));
  QCOMPARE(valuesOf<std::uint8_t>(tensorOf<std::uint32_t>({258, 255}).astype(DType::UInt8)),
           (std::vector<std::uint8_t>{2, 255}));
  QCOMPARE(tensorOf<std::uint16_t>({0, 7}).astype(DType::Bool).toDoubles(),
           (std::vector<double>{0, 1}));
}

void TestUnsignedDtypes::testToString() {
  QCOMPARE(QString::fromStdString(tensorOf<std::uint64_t>({kU64Max, 0}).toString()),
           QStringLiteral("[18446744073709551615,                    0]"));
  QCOMPARE(QString::fromStdString(tensorOf<std::uint32_t>({4000000000u}).toString()),
           QStringLiteral("[4000000000]"));
}

// The header numpy writes for each, and the little-endian data after it.
void TestUnsignedDtypes::testNpyBytes_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<QString>("descr");
  QTest::newRow("uint16") << DType::UInt16 << "'<u2'";
  QTest::newRow("uint32") << DType::UInt32 << "'<u4'";
  QTest::newRow("uint64") << DType::UInt64 << "'<u8'";
}

void TestUnsignedDtypes::testNpyBytes() {
  QFETCH(DType, dtype);
  QFETCH(QString, descr);
  Tensor t = tensorOf<std::uint64_t>({kU64Max, 258}).astype(dtype);
  const std::vector<std::byte> bytes = io::writeNpy(t);
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  QVERIFY2(text.find("'descr': " + descr.toStdString()) != std::string::npos, text.c_str());
  const std::size_t item = dtypeSize(dtype);
  const std::size_t start = bytes.size() - 2 * item;
  for (std::size_t i = 0; i < item; ++i)
    QCOMPARE(static_cast<int>(bytes[start + i]), 0xff);  // all ones: the maximum
  QCOMPARE(static_cast<int>(bytes[start + item]), 2);    // 258 = 0x0102, low byte first
  QCOMPARE(static_cast<int>(bytes[start + item + 1]), 1);
  const Tensor back = io::readNpy(bytes);
  QCOMPARE(back.dtype(), dtype);
  QVERIFY(back.bitwiseEqual(t));
}

void TestUnsignedDtypes::testWrappingArithmetic() {
  const Tensor a = tensorOf<std::uint16_t>({65535, 3, 300});
  const Tensor b = tensorOf<std::uint16_t>({1, 5, 300});
  QCOMPARE(valuesOf<std::uint16_t>(run(ScalarOp::Add, {a, b})),
           (std::vector<std::uint16_t>{0, 8, 600}));
  QCOMPARE(valuesOf<std::uint16_t>(run(ScalarOp::Sub, {a, b})),
           (std::vector<std::uint16_t>{65534, 65534, 0}));
  QCOMPARE(valuesOf<std::uint16_t>(run(ScalarOp::Mul, {a, b})),
           (std::vector<std::uint16_t>{65535, 15, 24464}));  // 90000 mod 65536
  const Tensor c = tensorOf<std::uint64_t>({kU64Max, 0});
  const Tensor one = tensorOf<std::uint64_t>({1, 1});
  QCOMPARE(valuesOf<std::uint64_t>(run(ScalarOp::Add, {c, one})),
           (std::vector<std::uint64_t>{0, 1}));
  QCOMPARE(valuesOf<std::uint64_t>(run(ScalarOp::Neg, {one})),
           (std::vector<std::uint64_t>{kU64Max, kU64Max}));
  QCOMPARE(valuesOf<std::uint64_t>(run(ScalarOp::Abs, {c})), valuesOf<std::uint64_t>(c));
}

// numpy's floor_divide and remainder of unsigned operands, which C's / and % are; a zero divisor
// gives 0 for both.
void TestUnsignedDtypes::testDivisionAndRemainder() {
  const Tensor a = tensorOf<std::uint32_t>({4000000000u, 7, 9, 5});
  const Tensor b = tensorOf<std::uint32_t>({3, 2, 0, 4000000000u});
  QCOMPARE(valuesOf<std::uint32_t>(run(ScalarOp::IntDiv, {a, b})),
           (std::vector<std::uint32_t>{1333333333u, 3, 0, 0}));
  QCOMPARE(valuesOf<std::uint32_t>(run(ScalarOp::Mod, {a, b})),
           (std::vector<std::uint32_t>{1, 1, 0, 5}));
  const Tensor big = tensorOf<std::uint64_t>({kU64Max});
  QCOMPARE(valuesOf<std::uint64_t>(run(ScalarOp::Mod, {big, tensorOf<std::uint64_t>({10})})),
           (std::vector<std::uint64_t>{5}));
}

// 2^y wraps to 0 at the width: what BitShift's converter relies on.
void TestUnsignedDtypes::testPowerWraps() {
  const Tensor two = tensorOf<std::uint32_t>({2, 2, 2, 3});
  const Tensor e = tensorOf<std::uint32_t>({31, 32, 40, 21});
  QCOMPARE(valuesOf<std::uint32_t>(run(ScalarOp::Pow, {two, e})),
           (std::vector<std::uint32_t>{2147483648u, 0, 0, 1870418611u}));  // 3^21 mod 2^32
  const Tensor two64 = tensorOf<std::uint64_t>({2, 2});
  QCOMPARE(valuesOf<std::uint64_t>(run(ScalarOp::Pow, {two64, tensorOf<std::uint64_t>({63, 64})})),
           (std::vector<std::uint64_t>{1ull << 63, 0}));
}

void TestUnsignedDtypes::testComparisonsPastInt64() {
  const Tensor a = tensorOf<std::uint64_t>({kU64Max, 1ull << 63, 3});
  const Tensor b = tensorOf<std::uint64_t>({1, 1ull << 63, 4});
  QCOMPARE(run(ScalarOp::Gt, {a, b}).toDoubles(), (std::vector<double>{1, 0, 0}));
  QCOMPARE(run(ScalarOp::Eq, {a, b}).toDoubles(), (std::vector<double>{0, 1, 0}));
  QCOMPARE(valuesOf<std::uint64_t>(run(ScalarOp::Maximum, {a, b})),
           (std::vector<std::uint64_t>{kU64Max, 1ull << 63, 4}));
  QCOMPARE(valuesOf<std::uint64_t>(run(ScalarOp::Minimum, {a, b})),
           (std::vector<std::uint64_t>{1, 1ull << 63, 3}));
}

void TestUnsignedDtypes::testMixedOperandsPromote_data() {
  QTest::addColumn<DType>("a");
  QTest::addColumn<DType>("b");
  QTest::addColumn<DType>("sum");
  QTest::addColumn<double>("value");  // 3 + (-1) as the operand types allow
  QTest::newRow("uint32+int32") << DType::UInt32 << DType::Int32 << DType::Int64 << 2.0;
  QTest::newRow("uint16+int8") << DType::UInt16 << DType::Int8 << DType::Int32 << 2.0;
  QTest::newRow("uint64+int64") << DType::UInt64 << DType::Int64 << DType::Float64 << 2.0;
  QTest::newRow("uint16+float16") << DType::UInt16 << DType::Float16 << DType::Float32 << 2.0;
  QTest::newRow("uint32+float32") << DType::UInt32 << DType::Float32 << DType::Float64 << 2.0;
}

void TestUnsignedDtypes::testMixedOperandsPromote() {
  QFETCH(DType, a);
  QFETCH(DType, b);
  QFETCH(DType, sum);
  QFETCH(double, value);
  const Tensor out = run(ScalarOp::Add, {Tensor::scalar(a, 3), Tensor::scalar(b, -1)});
  QCOMPARE(out.dtype(), sum);
  QCOMPARE(out.item(), value);
  // true_div and the float functions of a wide unsigned integer compute in float64.
  QCOMPARE(run(ScalarOp::TrueDiv, {Tensor::scalar(a, 3), Tensor::scalar(a, 2)}).item(), 1.5);
}

TSCOPE_TEST_MAIN(TestUnsignedDtypes)
#include "tst_unsigned_dtypes.moc"
