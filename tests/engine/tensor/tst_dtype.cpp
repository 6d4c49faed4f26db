// Element types: names, sizes, letters, numpy's promotion table (with the unsigned integers) and
// half-precision conversion.
#include "engine/tensor/dtype.h"
#include "test_main.h"

#include <bit>
#include <cmath>
#include <limits>

using namespace tscope::engine;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {
QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}
}  // namespace

class TestDType : public QObject {
  Q_OBJECT

 private slots:
  void testProperties_data();
  void testProperties();
  void testUnknownName();
  void testPromotion_data();
  void testPromotion();
  void testPromotionIsCommutativeAndIdempotent();
  void testDeviceName();
  void testHalfFromFloat_data();
  void testHalfFromFloat();
  void testHalfNan();
  void testHalfRoundTripsEveryFiniteValue();
};

void TestDType::testProperties_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<QString>("name");
  QTest::addColumn<int>("size");
  QTest::addColumn<char>("letter");
  QTest::addColumn<bool>("isFloat");
  QTest::addColumn<bool>("isInteger");
  QTest::addColumn<bool>("isSigned");
  QTest::newRow("bool") << DType::Bool << "bool" << 1 << '?' << false << false << false;
  QTest::newRow("int8") << DType::Int8 << "int8" << 1 << 'b' << false << true << true;
  QTest::newRow("int16") << DType::Int16 << "int16" << 2 << 'w' << false << true << true;
  QTest::newRow("int32") << DType::Int32 << "int32" << 4 << 'i' << false << true << true;
  QTest::newRow("int64") << DType::Int64 << "int64" << 8 << 'l' << false << true << true;
  QTest::newRow("uint8") << DType::UInt8 << "uint8" << 1 << 'B' << false << true << false;
  QTest::newRow("uint16") << DType::UInt16 << "uint16" << 2 << 'H' << false << true << false;
  QTest::newRow("uint32") << DType::UInt32 << "uint32" << 4 << 'I' << false << true << false;
  QTest::newRow("uint64") << DType::UInt64 << "uint64" << 8 << 'L' << false << true << false;
  QTest::newRow("float16") << DType::Float16 << "float16" << 2 << 'h' << true << false << true;
  QTest::newRow("float32") << DType::Float32 << "float32" << 4 << 'f' << true << false << true;
  QTest::newRow("float64") << DType::Float64 << "float64" << 8 << 'd' << true << false << true;
}

void TestDType::testProperties() {
  QFETCH(DType, dtype);
  QFETCH(QString, name);
  QFETCH(int, size);
  QFETCH(char, letter);
  QFETCH(bool, isFloat);
  QFETCH(bool, isInteger);
  QFETCH(bool, isSigned);
  QCOMPARE(qs(dtypeName(dtype)), name);
  QCOMPARE(dtypeFromName(name.toStdString()), std::optional<DType>(dtype));
  QCOMPARE(dtypeSize(dtype), static_cast<std::size_t>(size));
  QCOMPARE(dtypeLetter(dtype), letter);
  QCOMPARE(tscope::engine::isFloat(dtype), isFloat);
  QCOMPARE(tscope::engine::isInteger(dtype), isInteger);
  QCOMPARE(tscope::engine::isSigned(dtype), isSigned);
}

void TestDType::testUnknownName() {
  QVERIFY(!dtypeFromName("float").has_value());
  QVERIFY(!dtypeFromName("Float32").has_value());
  QVERIFY(!dtypeFromName("").has_value());
  QVERIFY(!dtypeFromName("uint128").has_value());
  QVERIFY(!dtypeFromName("bfloat16").has_value());
}

void TestDType::testPromotion_data() {
  QTest::addColumn<DType>("a");
  QTest::addColumn<DType>("b");
  QTest::addColumn<DType>("expected");
  // np.result_type(np.empty(0, a), np.empty(0, b)), numpy 1.26 and 2.x agree on all of these.
  struct Case {
    DType a, b, expected;
  };
  using enum DType;
  const Case cases[] = {
      {Bool, Bool, Bool},
      {Bool, Int8, Int8},
      {Bool, UInt8, UInt8},
      {Bool, Int64, Int64},
      {Bool, Float16, Float16},
      {Bool, Float64, Float64},
      {Int8, Int8, Int8},
      {Int8, Int16, Int16},
      {Int8, Int32, Int32},
      {Int8, Int64, Int64},
      {Int8, UInt8, Int16},
      {Int16, UInt8, Int16},
      {Int32, UInt8, Int32},
      {Int64, UInt8, Int64},
      {UInt8, UInt8, UInt8},
      {Int16, Int32, Int32},
      {Int32, Int64, Int64},
      {Float16, Int8, Float16},
      {Float16, UInt8, Float16},
      {Float16, Int16, Float32},
      {Float16, Int32, Float64},
      {Float16, Int64, Float64},
      {Float32, Int8, Float32},
      {Float32, UInt8, Float32},
      {Float32, Int16, Float32},
      {Float32, Int32, Float64},
      {Float32, Int64, Float64},
      {Float64, Int64, Float64},
      {Float16, Float16, Float16},
      {Float32, Float16, Float32},
      {Float64, Float16, Float64},
      {Float64, Float32, Float64},
      {Float32, Float32, Float32},
      // The wider unsigned integers: with a signed one, the signed type that holds both, and
      // for uint64 (which no signed integer holds) float64.
      {Bool, UInt64, UInt64},
      {UInt8, UInt16, UInt16},
      {UInt16, UInt32, UInt32},
      {UInt32, UInt64, UInt64},
      {Int8, UInt16, Int32},
      {Int16, UInt16, Int32},
      {Int32, UInt16, Int32},
      {Int8, UInt32, Int64},
      {Int32, UInt32, Int64},
      {Int64, UInt32, Int64},
      {Int8, UInt64, Float64},
      {Int64, UInt64, Float64},
      {Float16, UInt16, Float32},
      {Float16, UInt32, Float64},
      {Float32, UInt16, Float32},
      {Float32, UInt32, Float64},
      {Float32, UInt64, Float64},
      {Float16, UInt64, Float64},
  };
  for (const Case& c : cases) {
    const std::string row = std::string(dtypeName(c.a)) + "+" + std::string(dtypeName(c.b));
    QTest::newRow(row.c_str()) << c.a << c.b << c.expected;
  }
}

void TestDType::testPromotion() {
  QFETCH(DType, a);
  QFETCH(DType, b);
  QFETCH(DType, expected);
  QCOMPARE(qs(dtypeName(promoteTypes(a, b))), qs(dtypeName(expected)));
  QCOMPARE(qs(dtypeName(promoteTypes(b, a))), qs(dtypeName(expected)));
}

void TestDType::testPromotionIsCommutativeAndIdempotent() {
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto a = static_cast<DType>(i);
    QCOMPARE(promoteTypes(a, a), a);
    QCOMPARE(promoteTypes(DType::Bool, a), a);
    QCOMPARE(promoteTypes(a, DType::Float64), DType::Float64);
    for (int j = 0; j < kDTypeCount; ++j) {
      const auto b = static_cast<DType>(j);
      QCOMPARE(promoteTypes(a, b), promoteTypes(b, a));
      // The result can hold both operands: promoting it again with either changes nothing.
      QCOMPARE(promoteTypes(promoteTypes(a, b), a), promoteTypes(a, b));
    }
  }
}

void TestDType::testDeviceName() {
  QCOMPARE(qs(deviceName(Device::Cpu)), QStringLiteral("cpu"));
  QCOMPARE(qs(deviceName(Device::Cuda)), QStringLiteral("cuda"));
}

void TestDType::testHalfFromFloat_data() {
  QTest::addColumn<float>("value");
  QTest::addColumn<int>("bits");
  QTest::addColumn<float>("back");  // halfToFloat of the result
  const float inf = std::numeric_limits<float>::infinity();
  QTest::newRow("zero") << 0.0f << 0x0000 << 0.0f;
  QTest::newRow("one") << 1.0f << 0x3c00 << 1.0f;
  QTest::newRow("minus two") << -2.0f << 0xc000 << -2.0f;
  QTest::newRow("one third") << 1.0f / 3.0f << 0x3555 << 0.333251953125f;
  QTest::newRow("0.1") << 0.1f << 0x2e66 << 0.0999755859375f;
  QTest::newRow("max") << 65504.0f << 0x7bff << 65504.0f;
  QTest::newRow("overflow to inf") << 65520.0f << 0x7c00 << inf;
  QTest::newRow("largest below overflow") << 65519.0f << 0x7bff << 65504.0f;
  QTest::newRow("inf") << inf << 0x7c00 << inf;
  QTest::newRow("-inf") << -inf << 0xfc00 << -inf;
  QTest::newRow("min normal") << std::ldexp(1.0f, -14) << 0x0400 << std::ldexp(1.0f, -14);
  QTest::newRow("min subnormal") << std::ldexp(1.0f, -24) << 0x0001 << std::ldexp(1.0f, -24);
  QTest::newRow("max subnormal") << std::ldexp(1023.0f, -24) << 0x03ff << std::ldexp(1023.0f, -24);
  QTest::newRow("negative subnormal") << -std::ldexp(3.0f, -24) << 0x8003 << -std::ldexp(3.0f, -24);
  QTest::newRow("underflow to zero") << 1e-8f << 0x0000 << 0.0f;
  QTest::newRow("half of min subnormal rounds to even (zero)")
      << std::ldexp(1.0f, -25) << 0x0000 << 0.0f;
  QTest::newRow("2049 rounds to even 2048") << 2049.0f << 0x6800 << 2048.0f;
  QTest::newRow("2051 rounds to even 2052") << 2051.0f << 0x6802 << 2052.0f;
}

void TestDType::testHalfFromFloat() {
  QFETCH(float, value);
  QFETCH(int, bits);
  QFETCH(float, back);
  QCOMPARE(int(floatToHalf(value).bits), bits);
  const float roundTrip = halfToFloat(floatToHalf(value));
  QCOMPARE(std::bit_cast<std::uint32_t>(roundTrip), std::bit_cast<std::uint32_t>(back));
}

void TestDType::testHalfNan() {
  const Half h = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  QCOMPARE(h.bits & 0x7c00, 0x7c00);  // all-ones exponent
  QVERIFY((h.bits & 0x03ff) != 0);    // non-zero mantissa: NaN, not inf
  QVERIFY(std::isnan(halfToFloat(Half{0x7e00})));
  QVERIFY(std::isnan(halfToFloat(Half{0xfc01})));
  QVERIFY(std::isinf(halfToFloat(Half{0xfc00})));
  QVERIFY(std::signbit(halfToFloat(Half{0x8000})));
}

void TestDType::testHalfRoundTripsEveryFiniteValue() {
  for (int bits = 0; bits < 0x10000; ++bits) {
    const Half h{static_cast<std::uint16_t>(bits)};
    const float f = halfToFloat(h);
    if (std::isnan(f)) continue;
    if (floatToHalf(f).bits != h.bits)
      QFAIL(qPrintable(QStringLiteral("half 0x%1 -> %2 -> 0x%3")
                           .arg(bits, 4, 16, QLatin1Char('0'))
                           .arg(double(f))
                           .arg(floatToHalf(f).bits, 4, 16, QLatin1Char('0'))));
  }
}

TSCOPE_TEST_MAIN(TestDType)
#include "tst_dtype.moc"
