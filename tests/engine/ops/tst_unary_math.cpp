// UnaryMath: every function against libm in float32 and float64 on a non-square shape, inside its
// domain; NaN outside it (asin(2), acosh(0.5)); inferShape; gradients and R-op/L-op against finite
// differences; float16 rounds once; integer inputs refused naming the op; props round-trip.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/elemwise/unary_math.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::UnaryFn)
Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

double reference(UnaryFn fn, double x) {
  switch (fn) {
    case UnaryFn::Tan:
      return std::tan(x);
    case UnaryFn::Asin:
      return std::asin(x);
    case UnaryFn::Acos:
      return std::acos(x);
    case UnaryFn::Atan:
      return std::atan(x);
    case UnaryFn::Sinh:
      return std::sinh(x);
    case UnaryFn::Cosh:
      return std::cosh(x);
    case UnaryFn::Asinh:
      return std::asinh(x);
    case UnaryFn::Acosh:
      return std::acosh(x);
    case UnaryFn::Atanh:
      return std::atanh(x);
  }
  return 0;
}

// Inputs inside each function's domain, away from its edges (for finite differences).
Tensor domainInput(UnaryFn fn, DType dtype, std::uint64_t seed) {
  if (fn == UnaryFn::Acosh) return randomTensor(dtype, {3, 5}, seed, 1.2, 3.0);
  if (fn == UnaryFn::Asin || fn == UnaryFn::Acos || fn == UnaryFn::Atanh)
    return randomTensor(dtype, {3, 5}, seed, -0.8, 0.8);
  if (fn == UnaryFn::Tan) return randomTensor(dtype, {3, 5}, seed, -1.2, 1.2);
  return randomTensor(dtype, {3, 5}, seed, -2.0, 2.0);
}

}  // namespace

class TestUnaryMath : public QObject {
  Q_OBJECT

 private slots:
  void functions_data() {
    QTest::addColumn<UnaryFn>("fn");
    QTest::addColumn<DType>("dtype");
    for (UnaryFn fn : {UnaryFn::Tan, UnaryFn::Asin, UnaryFn::Acos, UnaryFn::Atan, UnaryFn::Sinh,
                       UnaryFn::Cosh, UnaryFn::Asinh, UnaryFn::Acosh, UnaryFn::Atanh})
      for (DType d : {DType::Float32, DType::Float64})
        QTest::newRow((std::string(unaryFnName(fn)) + "_" + std::string(dtypeName(d))).c_str())
            << fn << d;
  }
  void functions() {
    QFETCH(UnaryFn, fn);
    QFETCH(DType, dtype);
    const Tensor x = domainInput(fn, dtype, 11);
    auto build = [fn](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{unaryMath(fn, in[0])};
    };
    std::vector<double> expected;
    for (double v : x.toDoubles()) expected.push_back(reference(fn, v));
    QVERIFY(closeTo(evaluate(build, {x})[0], Tensor::fromDoubles(dtype, x.shape(), expected)));
    TSCOPE_CHECK(checkInferShape(build, {x}));
    TSCOPE_CHECK(verifyGrad(build, {x}));
    TSCOPE_CHECK(checkRopLop(build, {x}));
  }

  void outsideTheDomainIsNaN() {
    const Tensor x = Tensor::fromDoubles(DType::Float32, {2}, {2.0, 0.5});
    auto run = [&](UnaryFn fn) {
      return evaluate(
                 [fn](const std::vector<VarPtr>& in) {
                   return std::vector<VarPtr>{unaryMath(fn, in[0])};
                 },
                 {x})[0]
          .toDoubles();
    };
    QVERIFY(std::isnan(run(UnaryFn::Asin)[0]));
    QVERIFY(std::isnan(run(UnaryFn::Acosh)[1]));
    QVERIFY(std::isinf(evaluate(
                           [](const std::vector<VarPtr>& in) {
                             return std::vector<VarPtr>{unaryMath(UnaryFn::Atanh, in[0])};
                           },
                           {Tensor::fromDoubles(DType::Float64, {1}, {1.0})})[0]
                           .toDoubles()[0]));
  }

  void float16RoundsOnce() {
    const Tensor x = Tensor::fromDoubles(DType::Float16, {3}, {0.25, -0.5, 1.0});
    const Tensor y = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{unaryMath(UnaryFn::Atan, in[0])};
        },
        {x})[0];
    QCOMPARE(y.dtype(), DType::Float16);
    const Tensor expected =
        Tensor::fromDoubles(DType::Float32, {3},
                            {std::atan(0.25f), std::atan(-0.5f), std::atan(1.0f)})
            .astype(DType::Float16);
    QVERIFY(closeTo(y, expected, 0, 0));
  }

  void integersRefused() {
    const VarPtr i = Variable::create(TensorType(DType::Int32, {4}), "i");
    try {
      unaryMath(UnaryFn::Sinh, i);
      QFAIL("an int32 input was accepted");
    } catch (const TypeError& e) {
      const std::string what = e.what();
      QVERIFY2(
          what.find("UnaryMath") != std::string::npos && what.find("float") != std::string::npos,
          e.what());
    }
  }

  void propsRoundTrip() {
    const OpPtr op = defaultOpRegistry().make("UnaryMath", {{"fn", "acosh"}});
    QCOMPARE(op->str(), UnaryMath(UnaryFn::Acosh).str());
    QVERIFY(op->equals(UnaryMath(UnaryFn::Acosh)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             defaultOpRegistry().make("UnaryMath", {{"fn", "cot"}}));
  }
};

TSCOPE_TEST_MAIN(TestUnaryMath)
#include "tst_unary_math.moc"
