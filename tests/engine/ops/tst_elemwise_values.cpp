// Elemwise values: every scalar op in float32 and float64 against std:: math computed here in
// long double, the numpy edge cases (floor division and remainder of negatives, round half to
// even, log 0, sigmoid and softplus far out, NaN through minimum/maximum), integer semantics
// (division by zero gives 0, wrapping), comparisons and logic, switch/clip/second/cast, float16.
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "test_main.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace tscope::engine;

using Doubles = std::vector<double>;
Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::ScalarOp)
Q_DECLARE_METATYPE(Doubles)

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs the op's perform() on a node built from the values' exact types.
Tensor runOp(const OpPtr& op, const std::vector<Tensor>& inputs) {
  std::vector<VarPtr> vars;
  for (const Tensor& t : inputs) vars.push_back(Variable::create(TensorType::ofValue(t)));
  ApplyPtr node = op->makeNode(vars);
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  Tensor out;
  Tensor* outs[] = {&out};
  op->perform(*node, ptrs, outs);
  return out;
}
Tensor runOp(ScalarOp op, const std::vector<Tensor>& inputs) {
  return runOp(std::make_shared<Elemwise>(op), inputs);
}

// The reference value rounded to dtype (float32 results are compared after the same rounding).
double roundTo(DType dtype, double v) {
  return Tensor::scalar(dtype, v).item();
}

bool sameValues(const Tensor& actual, const Doubles& expected, double rtol, double atol = 0) {
  const Doubles a = actual.toDoubles();
  if (a.size() != expected.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = expected[i];
    const bool ok = (std::isnan(e) && std::isnan(a[i])) || a[i] == e ||
                    (std::isfinite(e) && std::abs(a[i] - e) <= atol + rtol * std::abs(e));
    if (!ok) {
      qWarning("element %zu: expected %.17g, found %.17g", i, e, a[i]);
      return false;
    }
  }
  return true;
}

long double roundHalfEven(long double x) {
  const long double f = std::floor(x);
  const long double d = x - f;
  if (d < 0.5L) return f;
  if (d > 0.5L) return f + 1;
  return std::fmod(f, 2.0L) == 0 ? f : f + 1;
}

struct UnaryCase {
  const char* name;
  ScalarOp op;
  long double (*ref)(long double);
  Doubles xs;
};

const Doubles kGeneral{-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.75};
const Doubles kFar{-50, -10, -1, -0.0, 0.5, 1, 10, 50};

const std::vector<UnaryCase>& unaryCases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", ScalarOp::Neg, [](long double x) { return -x; }, kGeneral},
      {"abs", ScalarOp::Abs, [](long double x) { return std::fabs(x); }, kGeneral},
      {"sign", ScalarOp::Sign,
       [](long double x) -> long double { return x > 0 ? 1 : (x < 0 ? -1 : 0); }, kGeneral},
      {"sqr", ScalarOp::Sqr, [](long double x) { return x * x; }, kGeneral},
      {"exp", ScalarOp::Exp, [](long double x) { return std::exp(x); }, kFar},
      {"expm1",
       ScalarOp::Expm1,
       [](long double x) { return std::expm1(x); },
       {-50, -1, -1e-10, 0, 1e-10, 1e-3, 1, 20}},
      {"log",
       ScalarOp::Log,
       [](long double x) { return std::log(x); },
       {0, 1e-3, 0.5, 1, 2, 10, 100, 1e6}},
      {"log_negative", ScalarOp::Log, [](long double x) { return std::log(x); }, {-1, -0.5}},
      {"log1p",
       ScalarOp::Log1p,
       [](long double x) { return std::log1p(x); },
       {-1, -0.5, 0, 1e-10, 0.5, 1, 10, 1e6}},
      {"log2",
       ScalarOp::Log2,
       [](long double x) { return std::log2(x); },
       {0, 0.125, 0.5, 1, 3, 8, 1000, 1e6}},
      {"log10",
       ScalarOp::Log10,
       [](long double x) { return std::log10(x); },
       {0, 1e-3, 0.5, 1, 3, 10, 1000, 1e6}},
      {"sqrt",
       ScalarOp::Sqrt,
       [](long double x) { return std::sqrt(x); },
       {0, 1e-6, 0.25, 1, 2, 9, 100, 1e6}},
      {"sqrt_negative", ScalarOp::Sqrt, [](long double x) { return std::sqrt(x); }, {-1, -4}},
      {"tanh", ScalarOp::Tanh, [](long double x) { return std::tanh(x); }, kFar},
      {"sigmoid", ScalarOp::Sigmoid, [](long double x) { return 1 / (1 + std::exp(-x)); }, kFar},
      {"softplus", ScalarOp::Softplus, [](long double x) { return std::log1p(std::exp(x)); }, kFar},
      {"sin", ScalarOp::Sin, [](long double x) { return std::sin(x); }, kGeneral},
      {"cos", ScalarOp::Cos, [](long double x) { return std::cos(x); }, kGeneral},
      {"erf", ScalarOp::Erf, [](long double x) { return std::erf(x); }, kGeneral},
      {"floor", ScalarOp::Floor, [](long double x) { return std::floor(x); }, kGeneral},
      {"ceil", ScalarOp::Ceil, [](long double x) { return std::ceil(x); }, kGeneral},
      {"round_half_even",
       ScalarOp::Round,
       roundHalfEven,
       {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4999}},
      {"relu", ScalarOp::Relu, [](long double x) -> long double { return x < 0 ? 0 : x; },
       kGeneral},
      {"identity", ScalarOp::Identity, [](long double x) { return x; }, kGeneral},
  };
  return cases;
}

struct BinaryCase {
  const char* name;
  ScalarOp op;
  long double (*ref)(long double, long double);
  Doubles a, b;
};

const Doubles kA{-7, 7, -7, 7, 5.5, -5.5, 0.25, 3};
const Doubles kB{2, -2, -2, 2, 2, 2.5, 3, -0.5};

const std::vector<BinaryCase>& binaryCases() {
  static const std::vector<BinaryCase> cases = {
      {"add", ScalarOp::Add, [](long double a, long double b) { return a + b; }, kA, kB},
      {"sub", ScalarOp::Sub, [](long double a, long double b) { return a - b; }, kA, kB},
      {"mul", ScalarOp::Mul, [](long double a, long double b) { return a * b; }, kA, kB},
      {"true_div", ScalarOp::TrueDiv, [](long double a, long double b) { return a / b; }, kA, kB},
      // Python's a // b and a % b: floor the quotient; the remainder has the divisor's sign.
      {"int_div", ScalarOp::IntDiv, [](long double a, long double b) { return std::floor(a / b); },
       kA, kB},
      {"mod", ScalarOp::Mod, [](long double a, long double b) { return a - b * std::floor(a / b); },
       kA, kB},
      {"pow",
       ScalarOp::Pow,
       [](long double a, long double b) { return std::pow(a, b); },
       {0.5, 1, 2, 3, 1.5, 0.1, 4, 2},
       {2, -1, 0.5, 3, -2.5, 2, 0.5, 10}},
      {"minimum", ScalarOp::Minimum, [](long double a, long double b) { return std::min(a, b); },
       kA, kB},
      {"maximum", ScalarOp::Maximum, [](long double a, long double b) { return std::max(a, b); },
       kA, kB},
  };
  return cases;
}
}  // namespace

class TestElemwiseValues : public QObject {
  Q_OBJECT

 private slots:
  void testUnaryFloat_data();
  void testUnaryFloat();
  void testBinaryFloat_data();
  void testBinaryFloat();
  void testFloatEdgeCases();
  void testNaNPropagation();
  void testIntegerArithmetic_data();
  void testIntegerArithmetic();
  void testIntegerDivisionByZero();
  void testIntegerWrapping();
  void testComparisonsAndLogic_data();
  void testComparisonsAndLogic();
  void testSelection();
  void testCast();
  void testFloat16();
  void testNaryFold();
};

void TestElemwiseValues::testUnaryFloat_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Doubles>("xs");
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const UnaryCase& c : unaryCases())
      QTest::newRow((std::string(c.name) + "/" + std::string(dtypeName(dtype))).c_str())
          << c.op << dtype << c.xs;
}

void TestElemwiseValues::testUnaryFloat() {
  QFETCH(ScalarOp, op);
  QFETCH(DType, dtype);
  QFETCH(Doubles, xs);
  const UnaryCase* c = nullptr;
  for (const UnaryCase& u : unaryCases())
    if (u.op == op && u.xs == xs) c = &u;
  QVERIFY(c);
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  const Shape shape = n % 4 == 0 ? Shape{2, n / 2} : Shape{n};
  const Tensor x = Tensor::fromDoubles(dtype, shape, xs);
  Doubles expected;
  for (double v : x.toDoubles()) expected.push_back(roundTo(dtype, static_cast<double>(c->ref(v))));
  const Tensor y = runOp(op, {x});
  QCOMPARE(y.dtype(), dtype);
  QCOMPARE(y.shape(), shape);
  QVERIFY(sameValues(y, expected, dtype == DType::Float32 ? 2e-7 : 1e-14,
                     dtype == DType::Float32 ? 1e-37 : 1e-300));
}

void TestElemwiseValues::testBinaryFloat_data() {
  QTest::addColumn<int>("index");
  QTest::addColumn<DType>("dtype");
  for (DType dtype : {DType::Float32, DType::Float64})
    for (std::size_t i = 0; i < binaryCases().size(); ++i)
      QTest::newRow(
          (std::string(binaryCases()[i].name) + "/" + std::string(dtypeName(dtype))).c_str())
          << static_cast<int>(i) << dtype;
}

void TestElemwiseValues::testBinaryFloat() {
  QFETCH(int, index);
  QFETCH(DType, dtype);
  const BinaryCase& c = binaryCases()[static_cast<std::size_t>(index)];
  const Tensor a = Tensor::fromDoubles(dtype, {2, 4}, c.a);
  const Tensor b = Tensor::fromDoubles(dtype, {2, 4}, c.b);
  Doubles expected;
  const Doubles av = a.toDoubles(), bv = b.toDoubles();
  for (std::size_t i = 0; i < av.size(); ++i)
    expected.push_back(roundTo(dtype, static_cast<double>(c.ref(av[i], bv[i]))));
  const Tensor y = runOp(c.op, {a, b});
  QCOMPARE(y.dtype(), dtype);
  QVERIFY(sameValues(y, expected, dtype == DType::Float32 ? 2e-7 : 1e-14));
}

void TestElemwiseValues::testFloatEdgeCases() {
  auto f64 = [](Doubles v) {
    return Tensor::fromDoubles(DType::Float64, {static_cast<std::int64_t>(v.size())}, v);
  };
  // numpy: -7 // 2 == -4, 7 // -2 == -4, -7 % 2 == 1, 7 % -2 == -1, -0.0 % 2 == 0.0.
  QVERIFY(sameValues(runOp(ScalarOp::IntDiv, {f64({-7, 7, -7, 1, -1}), f64({2, -2, -2, 0, 0})}),
                     {-4, -4, 3, kInf, -kInf}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Mod, {f64({-7, 7, -7, 7, 1}), f64({2, -2, -2, 2, 0})}),
                     {1, -1, -1, 1, kNaN}, 0));
  // The remainder of an exact division is a zero with the divisor's sign, as numpy gives.
  const Tensor m = runOp(ScalarOp::Mod, {f64({4, -4}), f64({-2, 2})});
  QVERIFY(std::signbit(m.at({0})) && !std::signbit(m.at({1})));
  // Round half to even, including negative halves.
  QVERIFY(sameValues(runOp(ScalarOp::Round, {f64({0.5, 1.5, 2.5, -0.5, -1.5, -2.5})}),
                     {0, 2, 2, -0.0, -2, -2}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Log, {f64({0, -0.0})}), {-kInf, -kInf}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::TrueDiv, {f64({1, -1, 0}), f64({0, 0, 0})}),
                     {kInf, -kInf, kNaN}, 0));
  // sigmoid and softplus stay finite and accurate far out (no exp overflow).
  const Tensor s = runOp(ScalarOp::Sigmoid, {f64({-50, 50, -800, 800})});
  QVERIFY(sameValues(s, {1.9287498479639178e-22, 1.0, 0.0, 1.0}, 1e-14));
  const Tensor sp = runOp(ScalarOp::Softplus, {f64({-50, 50, -800, 800})});
  QVERIFY(sameValues(sp, {1.9287498479639178e-22, 50.0, 0.0, 800.0}, 1e-14));
  const Tensor spf =
      runOp(ScalarOp::Softplus, {Tensor::fromDoubles(DType::Float32, {2}, {-100, 100})});
  QVERIFY(std::isfinite(spf.at({0})) && spf.at({1}) == 100.0);
}

void TestElemwiseValues::testNaNPropagation() {
  const Tensor a = Tensor::fromDoubles(DType::Float32, {3}, {kNaN, 1, kNaN});
  const Tensor b = Tensor::fromDoubles(DType::Float32, {3}, {1, kNaN, kNaN});
  QVERIFY(sameValues(runOp(ScalarOp::Minimum, {a, b}), {kNaN, kNaN, kNaN}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Maximum, {a, b}), {kNaN, kNaN, kNaN}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Relu, {a}), {kNaN, 1, kNaN}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Sign, {a}), {kNaN, 1, kNaN}, 0));
  const Tensor lo = Tensor::scalar(DType::Float32, 0), hi = Tensor::scalar(DType::Float32, 0.5);
  QVERIFY(sameValues(runOp(ScalarOp::Clip, {a, lo, hi}), {kNaN, 0.5, kNaN}, 0));
}

void TestElemwiseValues::testIntegerArithmetic_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Doubles>("a");
  QTest::addColumn<Doubles>("b");
  QTest::addColumn<Doubles>("expected");
  const Doubles a{-7, 7, -7, 7, 6, -6}, b{2, -2, -2, 2, 3, 4};
  for (DType d : {DType::Int8, DType::Int16, DType::Int32, DType::Int64}) {
    const std::string s(dtypeName(d));
    QTest::newRow(("int_div/" + s).c_str())
        << ScalarOp::IntDiv << d << a << b << Doubles{-4, -4, 3, 3, 2, -2};
    QTest::newRow(("mod/" + s).c_str())
        << ScalarOp::Mod << d << a << b << Doubles{1, -1, -1, 1, 0, 2};
    QTest::newRow(("add/" + s).c_str())
        << ScalarOp::Add << d << a << b << Doubles{-5, 5, -9, 9, 9, -2};
    QTest::newRow(("mul/" + s).c_str())
        << ScalarOp::Mul << d << a << b << Doubles{-14, -14, 14, 14, 18, -24};
    QTest::newRow(("pow/" + s).c_str())
        << ScalarOp::Pow << d << Doubles{-2, 3, 2, 1, -1, 5} << Doubles{3, 2, 0, -3, -3, -1}
        << Doubles{-8, 9, 1, 1, -1, 0};
    QTest::newRow(("minimum/" + s).c_str())
        << ScalarOp::Minimum << d << a << b << Doubles{-7, -2, -7, 2, 3, -6};
    QTest::newRow(("abs/" + s).c_str())
        << ScalarOp::Abs << d << a << b << Doubles{7, 7, 7, 7, 6, 6};
    QTest::newRow(("sign/" + s).c_str())
        << ScalarOp::Sign << d << Doubles{-7, 0, 3} << Doubles{} << Doubles{-1, 0, 1};
    QTest::newRow(("relu/" + s).c_str())
        << ScalarOp::Relu << d << Doubles{-7, 0, 3} << Doubles{} << Doubles{0, 0, 3};
    QTest::newRow(("floor/" + s).c_str())
        << ScalarOp::Floor << d << Doubles{-7, 0, 3} << Doubles{} << Doubles{-7, 0, 3};
  }
  QTest::newRow("uint8 int_div") << ScalarOp::IntDiv << DType::UInt8 << Doubles{7, 200, 9}
                                 << Doubles{2, 3, 9} << Doubles{3, 66, 1};
  QTest::newRow("uint8 mod") << ScalarOp::Mod << DType::UInt8 << Doubles{7, 200, 9}
                             << Doubles{2, 3, 9} << Doubles{1, 2, 0};
  QTest::newRow("uint8 sub wraps")
      << ScalarOp::Sub << DType::UInt8 << Doubles{1, 200} << Doubles{2, 100} << Doubles{255, 100};
  QTest::newRow("uint8 pow") << ScalarOp::Pow << DType::UInt8 << Doubles{2, 3} << Doubles{7, 6}
                             << Doubles{128, 217};
  // bool arithmetic: add is or, mul is and, as numpy.
  QTest::newRow("bool add") << ScalarOp::Add << DType::Bool << Doubles{0, 0, 1, 1}
                            << Doubles{0, 1, 0, 1} << Doubles{0, 1, 1, 1};
  QTest::newRow("bool mul") << ScalarOp::Mul << DType::Bool << Doubles{0, 0, 1, 1}
                            << Doubles{0, 1, 0, 1} << Doubles{0, 0, 0, 1};
  QTest::newRow("bool maximum") << ScalarOp::Maximum << DType::Bool << Doubles{0, 0, 1, 1}
                                << Doubles{0, 1, 0, 1} << Doubles{0, 1, 1, 1};
}

void TestElemwiseValues::testIntegerArithmetic() {
  QFETCH(ScalarOp, op);
  QFETCH(DType, dtype);
  QFETCH(Doubles, a);
  QFETCH(Doubles, b);
  QFETCH(Doubles, expected);
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  std::vector<Tensor> inputs{Tensor::fromDoubles(dtype, {n}, a)};
  if (scalarOpInfo(op).arity != 1) inputs.push_back(Tensor::fromDoubles(dtype, {n}, b));
  const Tensor y = runOp(op, inputs);
  QCOMPARE(y.dtype(), dtype);
  QVERIFY(sameValues(y, expected, 0));
}

void TestElemwiseValues::testIntegerDivisionByZero() {
  // numpy gives 0 (with a warning) for integer division and remainder by zero; we give 0, no crash.
  for (DType d : {DType::Int8, DType::Int32, DType::Int64, DType::UInt8, DType::Bool}) {
    const Tensor a = Tensor::fromDoubles(d, {3}, {1, 0, 1});
    const Tensor zero = Tensor::zeros(d, {3});
    QVERIFY(sameValues(runOp(ScalarOp::IntDiv, {a, zero}), {0, 0, 0}, 0));
    QVERIFY(sameValues(runOp(ScalarOp::Mod, {a, zero}), {0, 0, 0}, 0));
  }
  // INT_MIN // -1 overflows: it wraps to INT_MIN, as numpy gives; the remainder is 0.
  const Tensor mn = Tensor::fromDoubles(DType::Int32, {1}, {-2147483648.0});
  const Tensor m1 = Tensor::fromDoubles(DType::Int32, {1}, {-1});
  QCOMPARE(runOp(ScalarOp::IntDiv, {mn, m1}).at({0}), -2147483648.0);
  QCOMPARE(runOp(ScalarOp::Mod, {mn, m1}).at({0}), 0.0);
}

void TestElemwiseValues::testIntegerWrapping() {
  const Tensor a = Tensor::fromDoubles(DType::Int8, {3}, {127, -128, 100});
  const Tensor b = Tensor::fromDoubles(DType::Int8, {3}, {1, -1, 2});
  QVERIFY(sameValues(runOp(ScalarOp::Add, {a, b}), {-128, 127, 102}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Mul, {a, b}), {127, -128, -56}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Neg, {a}), {-127, -128, -100}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Abs, {a}), {127, -128, 100}, 0));
  const Tensor big = Tensor::fromDoubles(DType::Int64, {1}, {9223372036854775807.0});
  QCOMPARE(runOp(ScalarOp::Add, {big, Tensor::fromDoubles(DType::Int64, {1}, {1})}).at({0}),
           -9223372036854775808.0);
}

void TestElemwiseValues::testComparisonsAndLogic_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Doubles>("expected");
  // a = {1, 2, 3, NaN}, b = {2, 2, 1, NaN}: NaN compares unequal to everything.
  for (DType d : {DType::Float32, DType::Float64}) {
    const std::string s(dtypeName(d));
    QTest::newRow(("eq/" + s).c_str()) << ScalarOp::Eq << d << Doubles{0, 1, 0, 0};
    QTest::newRow(("neq/" + s).c_str()) << ScalarOp::Neq << d << Doubles{1, 0, 1, 1};
    QTest::newRow(("lt/" + s).c_str()) << ScalarOp::Lt << d << Doubles{1, 0, 0, 0};
    QTest::newRow(("le/" + s).c_str()) << ScalarOp::Le << d << Doubles{1, 1, 0, 0};
    QTest::newRow(("gt/" + s).c_str()) << ScalarOp::Gt << d << Doubles{0, 0, 1, 0};
    QTest::newRow(("ge/" + s).c_str()) << ScalarOp::Ge << d << Doubles{0, 1, 1, 0};
  }
}

void TestElemwiseValues::testComparisonsAndLogic() {
  QFETCH(ScalarOp, op);
  QFETCH(DType, dtype);
  QFETCH(Doubles, expected);
  const Tensor a = Tensor::fromDoubles(dtype, {2, 2}, {1, 2, 3, kNaN});
  const Tensor b = Tensor::fromDoubles(dtype, {2, 2}, {2, 2, 1, kNaN});
  const Tensor y = runOp(op, {a, b});
  QCOMPARE(y.dtype(), DType::Bool);
  QVERIFY(sameValues(y, expected, 0));
}

void TestElemwiseValues::testSelection() {
  // Logic treats any nonzero as true, on every dtype; the result is bool.
  const Tensor p = Tensor::fromDoubles(DType::Float32, {4}, {0, 0, 2.5, -1});
  const Tensor q = Tensor::fromDoubles(DType::Int32, {4}, {0, 7, 0, 3});
  QVERIFY(sameValues(runOp(ScalarOp::And, {p, q}), {0, 0, 0, 1}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Or, {p, q}), {0, 1, 1, 1}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Xor, {p, q}), {0, 1, 1, 0}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Not, {q}), {1, 0, 1, 0}, 0));
  QCOMPARE(runOp(ScalarOp::Not, {q}).dtype(), DType::Bool);
  // switch(cond, a, b) == numpy.where; an int condition counts as true where nonzero.
  const Tensor a = Tensor::fromDoubles(DType::Float64, {2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::fromDoubles(DType::Float64, {2, 1}, {-1, -2});
  const Tensor cond = Tensor::fromDoubles(DType::Int8, {2}, {1, 0});
  const Tensor w = runOp(ScalarOp::Switch, {cond, a, b});
  QCOMPARE(w.dtype(), DType::Float64);
  QVERIFY(sameValues(w, {1, -1, 3, -2}, 0));
  // clip(x, lo, hi) with broadcast bounds; lo > hi gives hi, as numpy.clip.
  const Tensor x = Tensor::fromDoubles(DType::Float32, {2, 3}, {-2, 0.5, 3, -2, 0.5, 3});
  const Tensor lo = Tensor::fromDoubles(DType::Float32, {2, 1}, {0, 1});
  const Tensor hi = Tensor::fromDoubles(DType::Float32, {2, 1}, {1, 0});
  QVERIFY(sameValues(runOp(ScalarOp::Clip, {x, lo, hi}), {0, 0.5, 1, 0, 0, 0}, 0));
  // second(a, b): b broadcast to the shape of both, in b's dtype.
  const Tensor s = runOp(ScalarOp::Second,
                         {Tensor::zeros(DType::Float32, {2, 3}), Tensor::scalar(DType::Int16, 7)});
  QCOMPARE(s.dtype(), DType::Int16);
  QCOMPARE(s.shape(), (Shape{2, 3}));
  QVERIFY(sameValues(s, Doubles(6, 7.0), 0));
  const Tensor s2 = runOp(ScalarOp::Second, {Tensor::zeros(DType::Float32, {2, 1}),
                                             Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3})});
  QVERIFY(sameValues(s2, {1, 2, 3, 1, 2, 3}, 0));
}

void TestElemwiseValues::testCast() {
  const Tensor x = Tensor::fromDoubles(DType::Float64, {5}, {-1.7, -0.5, 0, 2.9, 300});
  auto castOp = [](DType d) {
    return std::make_shared<Elemwise>(ScalarOp::Cast, std::map<int, int>{}, d);
  };
  const Tensor i8 = runOp(castOp(DType::Int8), {x});
  QCOMPARE(i8.dtype(), DType::Int8);
  QVERIFY(sameValues(i8, {-1, 0, 0, 2, 44}, 0));  // truncation toward zero; 300 wraps like numpy
  QVERIFY(sameValues(runOp(castOp(DType::Bool), {x}), {1, 1, 0, 1, 1}, 0));
  const Tensor f32 =
      runOp(castOp(DType::Float32), {Tensor::fromDoubles(DType::Float64, {1}, {0.1})});
  QCOMPARE(f32.dtype(), DType::Float32);
  QCOMPARE(f32.at({0}), static_cast<double>(0.1f));
}

void TestElemwiseValues::testFloat16() {
  // float16 computes in float32 and rounds the result once: exp stays float16.
  const Tensor h = Tensor::fromDoubles(DType::Float16, {2, 3}, {-2, -0.5, 0, 0.25, 1, 3});
  const Tensor e = runOp(ScalarOp::Exp, {h});
  QCOMPARE(e.dtype(), DType::Float16);
  Doubles expected;
  for (double v : h.toDoubles())
    expected.push_back(
        Tensor::scalar(DType::Float16, static_cast<float>(std::exp(static_cast<float>(v)))).item());
  QVERIFY(sameValues(e, expected, 0));
  const Tensor sum = runOp(ScalarOp::Add, {h, Tensor::scalar(DType::Float16, 1024)});
  QCOMPARE(sum.dtype(), DType::Float16);
  QCOMPARE(sum.at({1, 0}), 1024.0);  // 1024.25 is not a float16: rounds to even
  const Tensor cmp = runOp(ScalarOp::Lt, {h, Tensor::scalar(DType::Float16, 0.25)});
  QCOMPARE(cmp.dtype(), DType::Bool);
  QVERIFY(sameValues(cmp, {1, 1, 1, 0, 0, 0}, 0));
  // float16 with int8 stays float16 (numpy promotion).
  const Tensor mixed = runOp(ScalarOp::Mul, {h, Tensor::fromDoubles(DType::Int8, {3}, {2, -2, 3})});
  QCOMPARE(mixed.dtype(), DType::Float16);
  QVERIFY(sameValues(mixed, {-4, 1, 0, 0.5, -2, 9}, 0));
}

void TestElemwiseValues::testNaryFold() {
  const Tensor a = Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::fromDoubles(DType::Float32, {3}, {10, 20, 30});
  const Tensor c = Tensor::scalar(DType::Float32, 100);
  const Tensor d = Tensor::fromDoubles(DType::Float32, {2, 1}, {1000, 2000});
  QVERIFY(sameValues(runOp(ScalarOp::Add, {a, b, c, d}), {1111, 1122, 1133, 2114, 2125, 2136}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Mul, {a, b, Tensor::scalar(DType::Float32, 2)}),
                     {20, 80, 180, 80, 200, 360}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Minimum, {a, b, Tensor::scalar(DType::Float32, 4.5)}),
                     {1, 2, 3, 4, 4.5, 4.5}, 0));
  QVERIFY(sameValues(runOp(ScalarOp::Maximum, {a, Tensor::scalar(DType::Float32, 2.5), d}),
                     {1000, 1000, 1000, 2000, 2000, 2000}, 0));
}

TSCOPE_TEST_MAIN(TestElemwiseValues)
#include "tst_elemwise_values.moc"
