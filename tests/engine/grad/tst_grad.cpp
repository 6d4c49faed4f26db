// grad(), Lop, Rop and the checkers on small graphs; disconnected and undefined gradients; test
// values computed as nodes are built, in the three modes.
#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/grad/grad.h"
#include "engine/graph/config.h"
#include "engine/graph/errors.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "test_main.h"

using namespace tscope::engine;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr dvar(const std::string& name, std::vector<std::int64_t> shape = {}) {
  return Variable::create(TensorType(DType::Float64, std::move(shape)), name);
}
double eval1(const std::vector<VarPtr>& in, const VarPtr& out, std::vector<double> args) {
  std::vector<Tensor> t;
  for (double a : args) t.push_back(Tensor::scalar(DType::Float64, a));
  return compile(in, {out})(t)[0].item();
}
std::shared_ptr<const AsOp> opaqueSquare() {
  return asOp(
      "SquareNoGrad", {TensorType(DType::Float64, {})}, {TensorType(DType::Float64, {})},
      [](std::span<const Tensor> in) {
        return std::vector<Tensor>{Tensor::scalar(DType::Float64, in[0].item() * in[0].item())};
      });
}
}  // namespace

class TestGrad : public QObject {
  Q_OBJECT

 private slots:
  void testPolynomial() {
    auto x = dvar("x"), y = dvar("y");
    auto cost = x * x * y + exp(y);
    auto g = grad(cost, std::vector<VarPtr>{x, y});
    QCOMPARE(eval1({x, y}, g[0], {3, 2}), 12.0);                 // 2xy
    QCOMPARE(eval1({x, y}, g[1], {3, 2}), 9.0 + std::exp(2.0));  // x^2 + e^y
  }

  void testSharedSubexpressionSumsContributions() {
    auto x = dvar("x");
    auto t = tanh(x);
    auto cost = t * t + t;
    auto g = grad(cost, x);
    const double v = 0.3, th = std::tanh(v);
    QVERIFY(std::abs(eval1({x}, g, {v}) - (2 * th + 1) * (1 - th * th)) < 1e-12);
  }

  void testWrtIntermediate() {
    auto x = dvar("x");
    auto h = x * 3.0;
    auto cost = h * h;
    auto g = grad(cost, h);
    QCOMPARE(eval1({x}, g, {2}), 12.0);  // 2h
  }

  void testDisconnectedPolicies() {
    auto x = dvar("x"), z = dvar("z");
    auto cost = x * 2.0;
    try {
      grad(cost, z);
      QFAIL("expected a GradientError");
    } catch (const GradientError& e) {
      QVERIFY2(std::string(e.what()).find("does not depend on") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("'z'") != std::string::npos ||
                   std::string(e.what()).find("z (") != std::string::npos,
               e.what());
    }
    std::vector<std::string> warnings;
    auto previous = setWarningHandler([&](const std::string& m) { warnings.push_back(m); });
    GradOptions opts;
    opts.disconnected = DisconnectedPolicy::Warn;
    auto g = grad(cost, z, opts);
    setWarningHandler(previous);
    QCOMPARE(warnings.size(), std::size_t(1));
    QCOMPARE(eval1({z}, g, {5}), 0.0);
  }

  void testUndefinedGradientNamesTheOp() {
    auto x = dvar("x");
    auto cost = (*opaqueSquare())({x}) + x;
    try {
      grad(cost, x);
      QFAIL("expected a GradientError");
    } catch (const GradientError& e) {
      QVERIFY2(std::string(e.what()).find("SquareNoGrad") != std::string::npos, e.what());
    }
    GradOptions opts;
    opts.allowUndefined = true;
    QVERIFY(grad(cost, x, opts) == nullptr);
  }

  void testCostMustBeScalar() {
    auto v = dvar("v", {U});
    try {
      grad(v * 2.0, v);
      QFAIL("expected a GradientError");
    } catch (const GradientError& e) {
      QVERIFY2(std::string(e.what()).find("scalar") != std::string::npos, e.what());
    }
  }

  void testRopAndLop() {
    auto x = dvar("x", {U}), v = dvar("v", {U});
    auto f = sin(x) * x;
    auto jv = Rop({f}, {x}, {v})[0];
    auto lv = Lop({f}, {x}, {v})[0];
    Function fn = compile({x, v}, {jv, lv});
    const double a = 0.7, b = -1.3, dir = 0.5;
    auto out = fn({Tensor::fromDoubles(DType::Float64, {2}, {a, b}),
                   Tensor::fromDoubles(DType::Float64, {2}, {dir, dir})});
    auto d = [](double t) { return std::cos(t) * t + std::sin(t); };
    QVERIFY(std::abs(out[0].toDoubles()[0] - d(a) * dir) < 1e-12);
    QVERIFY(std::abs(out[0].toDoubles()[1] - d(b) * dir) < 1e-12);
    QVERIFY(std::abs(out[1].toDoubles()[1] - d(b) * dir) < 1e-12);
  }

  void testJacobianAndHessian() {
    auto x = Variable::create(TensorType(DType::Float64, {3}), "x");
    auto j = jacobian(x * x * 2.0, x);  // diag(4x)
    QCOMPARE(j->type().shape(), (std::vector<std::int64_t>{3, 3}));
    auto jv = compile({x}, {j})({Tensor::fromDoubles(DType::Float64, {3}, {1, 2, 3})})[0];
    QCOMPARE(jv.toDoubles(), (std::vector<double>{4, 0, 0, 0, 8, 0, 0, 0, 12}));
    // f = x0^2 x1 + x2^3: H = [[2x1, 2x0, 0], [2x0, 0, 0], [0, 0, 6x2]]
    auto a = Variable::create(TensorType(DType::Float64, {2, 3}), "a");
    auto w = Variable::create(TensorType(DType::Float64, {}), "w");
    auto h = hessian(w * w * w, w);
    QCOMPARE(compile({w}, {h})({Tensor::scalar(DType::Float64, 2)})[0].item(), 12.0);
    auto ja = jacobian(exp(a), a);  // (2,3,2,3)
    QCOMPARE(ja->type().shape(), (std::vector<std::int64_t>{2, 3, 2, 3}));
    auto jav = compile({a}, {ja})({Tensor::zeros(DType::Float64, {2, 3})})[0];
    QCOMPARE(jav.at({1, 2, 1, 2}), 1.0);
    QCOMPARE(jav.at({1, 2, 0, 2}), 0.0);
    auto u = Variable::create(TensorType(DType::Float64, {kUnknownDim}), "u");
    try {
      jacobian(u * 2.0, u);
      QFAIL("expected a GradientError");
    } catch (const GradientError& e) {
      QVERIFY2(std::string(e.what()).find("static") != std::string::npos, e.what());
    }
  }

  void testCheckersPassOnCorrectOps() {
    auto build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{tanh(in[0]) * in[1] + exp(in[1])};
    };
    std::vector<Tensor> pts = {
        Tensor::fromDoubles(DType::Float64, {2, 3}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6}),
        Tensor::fromDoubles(DType::Float64, {2, 3}, {1, 2, -1, 0.5, 0.25, -0.75})};
    verifyGrad(build, pts);
    checkRopLop(build, pts);
    checkInferShape(build, pts);
  }

  void testVerifyGradCatchesWrongGradient() {
    // An op whose pullback is deliberately wrong (2x instead of 3x^2).
    struct Cube final : Op {
      std::string name() const override { return "WrongCube"; }
      std::vector<TensorType> outputTypes(std::span<const VarPtr> in) const override {
        return {in[0]->type()};
      }
      void perform(const Apply&, std::span<const Tensor* const> in,
                   std::span<Tensor* const> out) const override {
        Tensor& o = reuseOrAllocate(out[0], in[0]->dtype(), in[0]->shape());
        auto v = in[0]->toDoubles();
        for (auto& e : v) e = e * e * e;
        o.copyFrom(Tensor::fromDoubles(in[0]->dtype(), in[0]->shape(), v));
      }
      std::vector<Grad> pullback(const Apply& n, std::span<const VarPtr> g) const override {
        return {Grad(g[0] * n.input(0) * 2.0)};
      }
    };
    auto cube = std::make_shared<Cube>();
    auto build = [&](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{(*cube)({in[0]})};
    };
    try {
      verifyGrad(build, {Tensor::fromDoubles(DType::Float64, {3}, {0.5, 1.5, 2.5})});
      QFAIL("expected a CheckError");
    } catch (const CheckError& e) {
      QVERIFY2(std::string(e.what()).find("WrongCube") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("finite differences") != std::string::npos, e.what());
    }
  }

  void testTestValuesRaiseAtConstruction() {
    TestValueModeGuard mode(TestValueMode::Raise);
    auto a = Variable::create(TensorType(DType::Float32, {U, U}), "a");
    auto b = Variable::create(TensorType(DType::Float32, {U, U}), "b");
    a->setTestValue(Tensor::zeros(DType::Float32, {2, 3}));
    b->setTestValue(Tensor::zeros(DType::Float32, {4, 5}));
    auto ok = a * 2.0;
    QVERIFY(ok->testValue().has_value());
    QCOMPARE(ok->testValue()->shape(), (Shape{2, 3}));
    try {
      auto bad = a + b;
      QFAIL("expected a TestValueError");
    } catch (const TestValueError& e) {
      const int line = __LINE__ - 3;
      const std::string msg = e.what();
      QVERIFY2(msg.find("Elemwise{add}") != std::string::npos, e.what());
      QVERIFY2(msg.find("(2, 3), (4, 5)") != std::string::npos, e.what());
      QVERIFY2(msg.find("tst_grad.cpp:" + std::to_string(line)) != std::string::npos, e.what());
    }
    auto c = Variable::create(TensorType(DType::Float32, {U, U}), "c");
    try {
      auto bad = a + c;
      QFAIL("expected a TestValueError for the missing value");
    } catch (const TestValueError& e) {
      QVERIFY2(std::string(e.what()).find("('c') has no test value") != std::string::npos,
               e.what());
    }
  }

  void testTestValuesWarnAndOff() {
    auto a = Variable::create(TensorType(DType::Float32, {U}), "a");
    auto b = Variable::create(TensorType(DType::Float32, {U}), "b");
    a->setTestValue(Tensor::zeros(DType::Float32, {2}));
    b->setTestValue(Tensor::zeros(DType::Float32, {3}));
    {
      TestValueModeGuard mode(TestValueMode::Warn);
      std::vector<std::string> warnings;
      auto previous = setWarningHandler([&](const std::string& m) { warnings.push_back(m); });
      auto bad = a + b;
      setWarningHandler(previous);
      QCOMPARE(warnings.size(), std::size_t(1));
      QVERIFY(!bad->testValue().has_value());
    }
    {
      TestValueModeGuard mode(TestValueMode::Off);
      auto bad = a + b;  // nothing computed, nothing raised
      QVERIFY(!bad->testValue().has_value());
    }
  }
};

TSCOPE_TEST_MAIN(TestGrad)
#include "tst_grad.moc"
