// TensorType: names (str, shortStr), the subtype and compatibility relations, filtering runtime
// values (conversions allowed and refused, and what the messages say), ofValue and bad dimensions.
#include "engine/graph/errors.h"
#include "engine/graph/type.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <cmath>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::TensorType)
Q_DECLARE_METATYPE(tscope::engine::Tensor)

namespace {
constexpr std::int64_t U = kUnknownDim;
TensorType tt(DType d, std::vector<std::int64_t> shape) {
  return TensorType(d, std::move(shape));
}
}  // namespace

class TestType : public QObject {
  Q_OBJECT

 private slots:
  void testAccessors();
  void testStr_data();
  void testStr();
  void testShortStr_data();
  void testShortStr();
  void testDTypeLetters_data();
  void testDTypeLetters();
  void testSubtypeAndCompatible_data();
  void testSubtypeAndCompatible();
  void testFilterAccepts_data();
  void testFilterAccepts();
  void testFilterConvertsLossless();
  void testFilterRefusesLossyUnlessDowncast();
  void testFilterRefuses_data();
  void testFilterRefuses();
  void testOfValue();
  void testOfRank();
  void testBadDims_data();
  void testBadDims();
};

void TestType::testAccessors() {
  const TensorType t(DType::Float64, {U, 1, 5});
  QCOMPARE(t.dtype(), DType::Float64);
  QCOMPARE(t.device(), Device::Cpu);
  QCOMPARE(t.ndim(), 3);
  QVERIFY(!t.isDimKnown(0));
  QVERIFY(t.isDimKnown(1));
  QVERIFY(!t.isBroadcastable(0));
  QVERIFY(t.isBroadcastable(1));
  QVERIFY(!t.isBroadcastable(2));
  QVERIFY(!t.isFullyKnown());
  QVERIFY(tt(DType::Float32, {2, 3}).isFullyKnown());
  QVERIFY(tt(DType::Float32, {}).isFullyKnown());
  QVERIFY(tt(DType::Float32, {2, 3}) == tt(DType::Float32, {2, 3}));
  QVERIFY(tt(DType::Float32, {2, 3}) != tt(DType::Float32, {2, U}));
  QVERIFY(tt(DType::Float32, {2, 3}) != tt(DType::Float64, {2, 3}));
  QVERIFY(TensorType(DType::Float32, {2}, Device::Cuda) != tt(DType::Float32, {2}));
}

void TestType::testStr_data() {
  QTest::addColumn<TensorType>("type");
  QTest::addColumn<QString>("expected");
  QTest::newRow("scalar") << tt(DType::Float32, {}) << "TensorType(float32, ())";
  QTest::newRow("vector") << tt(DType::Float64, {3}) << "TensorType(float64, (3,))";
  QTest::newRow("unknown vector") << tt(DType::Int32, {U}) << "TensorType(int32, (?,))";
  QTest::newRow("batch") << tt(DType::Float32, {U, 784}) << "TensorType(float32, (?, 784))";
  QTest::newRow("tensor3") << tt(DType::UInt8, {2, 1, U}) << "TensorType(uint8, (2, 1, ?))";
  QTest::newRow("cuda") << TensorType(DType::Float16, {4}, Device::Cuda)
                        << "TensorType(float16, (4,), cuda)";
}

void TestType::testStr() {
  QFETCH(TensorType, type);
  QFETCH(QString, expected);
  QCOMPARE(qs(type.str()), expected);
}

void TestType::testShortStr_data() {
  QTest::addColumn<TensorType>("type");
  QTest::addColumn<QString>("expected");
  QTest::newRow("fscalar") << tt(DType::Float32, {}) << "fscalar";
  QTest::newRow("dvector") << tt(DType::Float64, {U}) << "dvector";
  QTest::newRow("dvector known") << tt(DType::Float64, {7}) << "dvector";
  QTest::newRow("frow") << tt(DType::Float32, {1, U}) << "frow";
  QTest::newRow("frow known") << tt(DType::Float32, {1, 5}) << "frow";
  QTest::newRow("fcol") << tt(DType::Float32, {U, 1}) << "fcol";
  QTest::newRow("fcol known") << tt(DType::Float32, {5, 1}) << "fcol";
  QTest::newRow("fmatrix") << tt(DType::Float32, {U, U}) << "fmatrix";
  QTest::newRow("fmatrix known") << tt(DType::Float32, {2, 3}) << "fmatrix";
  QTest::newRow("ftensor3") << tt(DType::Float32, {U, U, U}) << "ftensor3";
  QTest::newRow("ftensor4") << tt(DType::Float32, {1, 2, 3, 4}) << "ftensor4";
  QTest::newRow("iscalar") << tt(DType::Int32, {}) << "iscalar";
}

void TestType::testShortStr() {
  QFETCH(TensorType, type);
  QFETCH(QString, expected);
  QCOMPARE(qs(type.shortStr()), expected);
}

void TestType::testDTypeLetters_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<QString>("expected");
  QTest::newRow("bool") << DType::Bool << "?matrix";
  QTest::newRow("int8") << DType::Int8 << "bmatrix";
  QTest::newRow("int16") << DType::Int16 << "wmatrix";
  QTest::newRow("int32") << DType::Int32 << "imatrix";
  QTest::newRow("int64") << DType::Int64 << "lmatrix";
  QTest::newRow("uint8") << DType::UInt8 << "Bmatrix";
  QTest::newRow("float16") << DType::Float16 << "hmatrix";
  QTest::newRow("float32") << DType::Float32 << "fmatrix";
  QTest::newRow("float64") << DType::Float64 << "dmatrix";
}

void TestType::testDTypeLetters() {
  QFETCH(DType, dtype);
  QFETCH(QString, expected);
  QCOMPARE(qs(TensorType::ofRank(dtype, 2).shortStr()), expected);
}

void TestType::testSubtypeAndCompatible_data() {
  QTest::addColumn<TensorType>("a");
  QTest::addColumn<TensorType>("b");
  QTest::addColumn<bool>("aSubB");
  QTest::addColumn<bool>("bSubA");
  QTest::addColumn<bool>("compatible");
  QTest::newRow("equal known") << tt(DType::Float32, {2, 3}) << tt(DType::Float32, {2, 3}) << true
                               << true << true;
  QTest::newRow("equal unknown") << tt(DType::Float32, {U, U}) << tt(DType::Float32, {U, U}) << true
                                 << true << true;
  QTest::newRow("known sub unknown")
      << tt(DType::Float32, {2, 3}) << tt(DType::Float32, {U, 3}) << true << false << true;
  QTest::newRow("partly known both ways")
      << tt(DType::Float32, {2, U}) << tt(DType::Float32, {U, 3}) << false << false << true;
  QTest::newRow("known sizes differ")
      << tt(DType::Float32, {2, 3}) << tt(DType::Float32, {2, 4}) << false << false << false;
  QTest::newRow("broadcastable vs unknown")
      << tt(DType::Float32, {1, U}) << tt(DType::Float32, {U, U}) << true << false << true;
  QTest::newRow("dtype differs") << tt(DType::Float32, {2}) << tt(DType::Float64, {2}) << false
                                 << false << false;
  QTest::newRow("rank differs") << tt(DType::Float32, {U}) << tt(DType::Float32, {U, U}) << false
                                << false << false;
  QTest::newRow("device differs") << tt(DType::Float32, {2})
                                  << TensorType(DType::Float32, {2}, Device::Cuda) << false << false
                                  << false;
  QTest::newRow("scalars") << tt(DType::Int64, {}) << tt(DType::Int64, {}) << true << true << true;
}

void TestType::testSubtypeAndCompatible() {
  QFETCH(TensorType, a);
  QFETCH(TensorType, b);
  QFETCH(bool, aSubB);
  QFETCH(bool, bSubA);
  QFETCH(bool, compatible);
  QCOMPARE(a.isSubtypeOf(b), aSubB);
  QCOMPARE(b.isSubtypeOf(a), bSubA);
  QCOMPARE(a.isCompatibleWith(b), compatible);
  QCOMPARE(b.isCompatibleWith(a), compatible);  // symmetric
  // A subtype is always compatible; every type is its own subtype.
  if (aSubB || bSubA) QVERIFY(compatible);
  QVERIFY(a.isSubtypeOf(a));
  QVERIFY(a.isCompatibleWith(a));
}

void TestType::testFilterAccepts_data() {
  QTest::addColumn<TensorType>("type");
  QTest::addColumn<DType>("valueDType");
  QTest::addColumn<QList<qint64>>("valueShape");
  QTest::newRow("exact") << tt(DType::Float32, {2, 3}) << DType::Float32 << QList<qint64>{2, 3};
  QTest::newRow("unknown dims") << tt(DType::Float32, {U, U}) << DType::Float32
                                << QList<qint64>{4, 1};
  QTest::newRow("partly known") << tt(DType::Int64, {U, 3}) << DType::Int64 << QList<qint64>{0, 3};
  QTest::newRow("scalar") << tt(DType::Float64, {}) << DType::Float64 << QList<qint64>{};
  QTest::newRow("broadcastable") << tt(DType::Bool, {1, U}) << DType::Bool << QList<qint64>{1, 9};
}

void TestType::testFilterAccepts() {
  QFETCH(TensorType, type);
  QFETCH(DType, valueDType);
  QFETCH(QList<qint64>, valueShape);
  const Tensor value = Tensor::full(valueDType, Shape(valueShape.begin(), valueShape.end()), 1);
  const Tensor out = type.filter(value);
  // Same dtype: no conversion, the very same storage comes back.
  QVERIFY(out.sharesStorageWith(value));
  QCOMPARE(out.dtype(), type.dtype());
  QCOMPARE(out.shape(), value.shape());
}

void TestType::testFilterConvertsLossless() {
  const TensorType type = tt(DType::Float64, {U});
  const Tensor ints = Tensor::fromDoubles(DType::Int32, {3}, {-7, 0, 2147483647});
  const Tensor out = type.filter(ints, "input 'x'");
  QCOMPARE(out.dtype(), DType::Float64);
  QCOMPARE(out.toDoubles(), (std::vector<double>{-7, 0, 2147483647}));
  QVERIFY(!out.sharesStorageWith(ints));
  // bool -> int8 and uint8 -> int16 widen without loss too.
  QCOMPARE(tt(DType::Int8, {}).filter(Tensor::scalar(DType::Bool, 1)).dtype(), DType::Int8);
  QCOMPARE(tt(DType::Int16, {}).filter(Tensor::scalar(DType::UInt8, 200)).item(), 200.0);
}

void TestType::testFilterRefusesLossyUnlessDowncast() {
  const TensorType type = tt(DType::Float32, {2});
  const Tensor value = Tensor::fromDoubles(DType::Float64, {2}, {0.1, 3.5});
  const auto msg = thrownMessage<TypeError>([&] { type.filter(value, "input 'x'"); });
  QVERIFY2(msg, "float64 -> float32 must be refused without allowDowncast");
  QVERIFY2(contains(msg, "input 'x'"), msg->c_str());
  QVERIFY2(contains(msg, "expected TensorType(float32, (2,))"), msg->c_str());
  QVERIFY2(contains(msg, "float64"), msg->c_str());
  QVERIFY2(contains(msg, "lose information"), msg->c_str());

  const Tensor down = type.filter(value, "input 'x'", /*allowDowncast=*/true);
  QCOMPARE(down.dtype(), DType::Float32);
  QCOMPARE(down.at({1}), 3.5);
  QVERIFY(std::abs(down.at({0}) - 0.1) < 1e-7);

  // int64 -> int32 and int32 -> float32 (numpy: float64) are lossy as well.
  QVERIFY(thrownMessage<TypeError>(
      [] { tt(DType::Int32, {}).filter(Tensor::scalar(DType::Int64, 1)); }));
  QVERIFY(thrownMessage<TypeError>(
      [] { tt(DType::Float32, {}).filter(Tensor::scalar(DType::Int32, 1)); }));
  QVERIFY(thrownMessage<TypeError>(
      [] { tt(DType::UInt8, {}).filter(Tensor::scalar(DType::Int8, 1)); }));
}

void TestType::testFilterRefuses_data() {
  QTest::addColumn<TensorType>("type");
  QTest::addColumn<Tensor>("value");
  QTest::addColumn<QString>("problem");
  QTest::newRow("rank") << tt(DType::Float32, {U, U}) << Tensor(DType::Float32, {3})
                        << "expected 2 dimensions, found 1";
  QTest::newRow("rank scalar") << tt(DType::Float32, {}) << Tensor(DType::Float32, {1})
                               << "expected 0 dimensions, found 1";
  QTest::newRow("known dim") << tt(DType::Float32, {U, 3}) << Tensor(DType::Float32, {2, 4})
                             << "dimension 1 must be 3";
  QTest::newRow("broadcastable dim")
      << tt(DType::Float32, {1, U}) << Tensor(DType::Float32, {2, 4}) << "dimension 0 must be 1";
  QTest::newRow("undefined") << tt(DType::Float32, {U}) << Tensor() << "found no value";
}

void TestType::testFilterRefuses() {
  QFETCH(TensorType, type);
  QFETCH(Tensor, value);
  QFETCH(QString, problem);
  const auto msg = thrownMessage<TypeError>([&] { type.filter(value, "input 'data'", true); });
  QVERIFY2(msg, "filter must refuse the value even with allowDowncast");
  QVERIFY2(contains(msg, "input 'data'"), msg->c_str());
  QVERIFY2(contains(msg, "expected " + type.str()), msg->c_str());
  QVERIFY2(contains(msg, problem.toStdString()), msg->c_str());
  if (value.defined()) {
    QVERIFY2(contains(msg, "shape " + shapeToString(value.shape())), msg->c_str());
    QVERIFY2(contains(msg, "dtype float32"), msg->c_str());
  }
}

void TestType::testOfValue() {
  const TensorType t = TensorType::ofValue(Tensor(DType::Int16, {4, 1, 2}));
  QCOMPARE(t, tt(DType::Int16, {4, 1, 2}));
  QVERIFY(t.isFullyKnown());
  QCOMPARE(TensorType::ofValue(Tensor::scalar(DType::Float64, 2)), tt(DType::Float64, {}));
  // A value is always accepted by the type of itself.
  const Tensor v = Tensor(DType::UInt8, {0, 3});
  QCOMPARE(TensorType::ofValue(v).filter(v).shape(), v.shape());
}

void TestType::testOfRank() {
  const TensorType t = TensorType::ofRank(DType::Int8, 3, Device::Cuda);
  QCOMPARE(t.ndim(), 3);
  QCOMPARE(t.dtype(), DType::Int8);
  QCOMPARE(t.device(), Device::Cuda);
  for (int axis = 0; axis < 3; ++axis) QVERIFY(!t.isDimKnown(axis));
  QCOMPARE(TensorType::ofRank(DType::Float32, 0), tt(DType::Float32, {}));
  const auto msg = thrownMessage<TypeError>([] { TensorType::ofRank(DType::Float32, -1); });
  QVERIFY2(msg, "a negative rank must be refused with a TypeError");
  QVERIFY2(contains(msg, "-1"), msg->c_str());
}

void TestType::testBadDims_data() {
  QTest::addColumn<QList<qint64>>("shape");
  QTest::addColumn<QString>("fragment");
  QTest::newRow("-2") << QList<qint64>{-2} << "dimension 0 is -2";
  QTest::newRow("second") << QList<qint64>{3, -5} << "dimension 1 is -5";
  QTest::newRow("very negative") << QList<qint64>{U, 2, -100} << "dimension 2 is -100";
}

void TestType::testBadDims() {
  QFETCH(QList<qint64>, shape);
  QFETCH(QString, fragment);
  const auto msg = thrownMessage<TypeError>(
      [&] { TensorType(DType::Float32, std::vector<std::int64_t>(shape.begin(), shape.end())); });
  QVERIFY2(msg, "a dimension below -1 must be refused");
  QVERIFY2(contains(msg, fragment.toStdString()), msg->c_str());
  QVERIFY2(contains(msg, "-1 (unknown)"), msg->c_str());
}

TSCOPE_TEST_MAIN(TestType)
#include "tst_type.moc"
