// Elemwise derivatives: verifyGrad (finite differences) and checkRopLop for every differentiable
// scalar op, in float64 on non-square broadcast shapes (and a few in float32), inputs away from
// non-differentiable points; plus the conventions of Note [Elemwise gradient conventions]:
// disconnected discrete inputs, zeros through comparisons and rounding, minimum/maximum ties,
// clip routing, switch and second, gradient dtypes, and the R-op's output shape.
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "op_test_support.h"
#include "test_main.h"

#include <functional>
#include <vector>

using namespace tscope::engine;
using namespace tscope::test;

using Dims = std::vector<std::int64_t>;
Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {
using Build = std::function<VarPtr(const std::vector<VarPtr>&)>;
struct Domain {
  Dims shape;
  double lo, hi;
};
struct GradCase {
  const char* name;
  Build build;
  std::vector<Domain> inputs;
};

const Dims kX{2, 3, 4};

// Values in [lo, hi) with a random sign: away from 0 for abs, relu, sign-like points.
Tensor awayFromZero(DType dtype, const Dims& shape, std::uint64_t seed, double lo, double hi) {
  Tensor t = randomTensor(dtype, shape, seed, lo, hi);
  std::vector<double> v = t.toDoubles();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (i % 3 != 1) v[i] = -v[i];
  return Tensor::fromDoubles(dtype, shape, v);
}

const std::vector<GradCase>& gradCases() {
  static const std::vector<GradCase> cases = {
      {"neg", [](auto& in) { return -in[0]; }, {{kX, -2, 2}}},
      {"abs", [](auto& in) { return abs(in[0]); }, {{kX, 0.2, 2}}},
      {"sqr", [](auto& in) { return sqr(in[0]); }, {{kX, -2, 2}}},
      {"exp", [](auto& in) { return exp(in[0]); }, {{kX, -2, 2}}},
      {"expm1", [](auto& in) { return expm1(in[0]); }, {{kX, -2, 2}}},
      {"log", [](auto& in) { return log(in[0]); }, {{kX, 0.5, 2}}},
      {"log1p", [](auto& in) { return log1p(in[0]); }, {{kX, 0, 2}}},
      {"log2", [](auto& in) { return log2(in[0]); }, {{kX, 0.5, 2}}},
      {"log10", [](auto& in) { return log10(in[0]); }, {{kX, 0.5, 2}}},
      {"sqrt", [](auto& in) { return sqrt(in[0]); }, {{kX, 0.5, 2}}},
      {"tanh", [](auto& in) { return tanh(in[0]); }, {{kX, -2, 2}}},
      {"sigmoid", [](auto& in) { return sigmoid(in[0]); }, {{kX, -3, 3}}},
      {"softplus", [](auto& in) { return softplus(in[0]); }, {{kX, -3, 3}}},
      {"sin", [](auto& in) { return sin(in[0]); }, {{kX, -3, 3}}},
      {"cos", [](auto& in) { return cos(in[0]); }, {{kX, -3, 3}}},
      {"erf", [](auto& in) { return erf(in[0]); }, {{kX, -2, 2}}},
      {"relu", [](auto& in) { return relu(in[0]); }, {{kX, 0.2, 2}}},
      {"identity", [](auto& in) { return identity(in[0]); }, {{kX, -2, 2}}},
      // Piecewise constant: zero gradient away from the jumps.
      {"floor", [](auto& in) { return floor(in[0]) + in[0]; }, {{kX, 0.1, 0.9}}},
      {"round", [](auto& in) { return round(in[0]) * in[0]; }, {{kX, 0.1, 0.4}}},
      {"sign", [](auto& in) { return sign(in[0]) * in[0]; }, {{kX, 0.2, 2}}},
      {"add 2x3x4 3x1", [](auto& in) { return in[0] + in[1]; }, {{kX, -2, 2}, {{3, 1}, -2, 2}}},
      {"sub 1x4 2x3x4", [](auto& in) { return in[0] - in[1]; }, {{{1, 4}, -2, 2}, {kX, -2, 2}}},
      {"mul 2x3x4 scalar", [](auto& in) { return in[0] * in[1]; }, {{kX, -2, 2}, {{}, -2, 2}}},
      {"mul 2x1x4 3x1",
       [](auto& in) { return in[0] * in[1]; },
       {{{2, 1, 4}, -2, 2}, {{3, 1}, -2, 2}}},
      {"true_div 2x3x4 4", [](auto& in) { return in[0] / in[1]; }, {{kX, -2, 2}, {{4}, 0.5, 2}}},
      {"true_div 3x1 2x3x4",
       [](auto& in) { return in[0] / in[1]; },
       {{{3, 1}, -2, 2}, {kX, 0.5, 2}}},
      {"pow", [](auto& in) { return pow(in[0], in[1]); }, {{kX, 0.5, 2}, {{3, 1}, -1.5, 2}}},
      {"mod", [](auto& in) { return mod(in[0], in[1]); }, {{kX, 2.1, 2.9}, {{1, 4}, 1.5, 2}}},
      {"minimum", [](auto& in) { return minimum(in[0], in[1]); }, {{kX, -2, 2}, {{3, 1}, -2, 2}}},
      {"maximum", [](auto& in) { return maximum(in[0], in[1]); }, {{{1, 4}, -2, 2}, {kX, -2, 2}}},
      {"clip",
       [](auto& in) { return clip(in[0], in[1], in[2]); },
       {{kX, -2, 2}, {{3, 1}, -1, -0.2}, {{1, 4}, 0.2, 1}}},
      {"second",
       [](auto& in) {
         return elemwise(ScalarOp::Second, {in[0], in[1]});
       },
       {{kX, -2, 2}, {{3, 1}, -2, 2}}},
      {"add n-ary",
       [](auto& in) {
         return elemwise(ScalarOp::Add, {in[0], in[1], in[2]});
       },
       {{kX, -2, 2}, {{3, 1}, -2, 2}, {{4}, -2, 2}}},
      {"mul n-ary",
       [](auto& in) {
         return elemwise(ScalarOp::Mul, {in[0], in[1], in[2]});
       },
       {{kX, -2, 2}, {{3, 1}, -2, 2}, {{4}, -2, 2}}},
      {"maximum n-ary",
       [](auto& in) {
         return elemwise(ScalarOp::Maximum, {in[0], in[1], in[2]});
       },
       {{kX, -2, 2}, {{3, 1}, -2, 2}, {{4}, -2, 2}}},
      {"chain",
       [](auto& in) { return tanh(in[0] * in[1]) + sigmoid(in[1]) * exp(-sqr(in[0])); },
       {{kX, -1, 1}, {{3, 1}, -1, 1}}},
  };
  return cases;
}

std::vector<Tensor> pointsFor(const GradCase& c, DType dtype) {
  std::vector<Tensor> points;
  std::uint64_t seed = 100;
  for (const Domain& d : c.inputs) {
    const std::string name = c.name;
    const bool signed0 = (name == "abs" || name == "relu" || name == "sign") && points.empty();
    points.push_back(signed0 ? awayFromZero(dtype, d.shape, seed++, d.lo, d.hi)
                             : randomTensor(dtype, d.shape, seed++, d.lo, d.hi));
  }
  return points;
}

GraphBuilder builderFor(const GradCase& c) {
  Build build = c.build;
  return [build](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{build(in)}; };
}

// Evaluates grad(outputs . ones) with respect to wrt at the values.
std::vector<Tensor> gradValues(const VarPtr& out, const std::vector<VarPtr>& inputs,
                               const std::vector<VarPtr>& wrt, const std::vector<Tensor>& values) {
  GradOptions options;
  options.disconnected = DisconnectedPolicy::Ignore;
  return evaluate(inputs, grad({out}, {onesLike(out)}, wrt, options), values);
}
}  // namespace

class TestElemwiseGrad : public QObject {
  Q_OBJECT

 private slots:
  void testVerifyGrad_data();
  void testVerifyGrad();
  void testRopLop_data();
  void testRopLop();
  void testSwitchGrad();
  void testDiscreteInputsDisconnected();
  void testZeroGradients();
  void testMinMaxTies();
  void testClipRouting();
  void testGradientDTypes();
  void testRopSpansOutput();
};

void TestElemwiseGrad::testVerifyGrad_data() {
  QTest::addColumn<int>("index");
  QTest::addColumn<DType>("dtype");
  for (std::size_t i = 0; i < gradCases().size(); ++i)
    QTest::newRow((std::string(gradCases()[i].name) + "/float64").c_str())
        << static_cast<int>(i) << DType::Float64;
  for (std::size_t i = 0; i < gradCases().size(); ++i) {
    const std::string name = gradCases()[i].name;
    if (name == "add 2x3x4 3x1" || name == "mul 2x1x4 3x1" || name == "tanh" || name == "sigmoid" ||
        name == "true_div 2x3x4 4" || name == "exp" || name == "chain")
      QTest::newRow((name + "/float32").c_str()) << static_cast<int>(i) << DType::Float32;
  }
}

void TestElemwiseGrad::testVerifyGrad() {
  QFETCH(int, index);
  QFETCH(DType, dtype);
  const GradCase& c = gradCases()[static_cast<std::size_t>(index)];
  VerifyGradOptions options;
  options.nTests = 2;
  TSCOPE_CHECK(verifyGrad(builderFor(c), pointsFor(c, dtype), options));
}

void TestElemwiseGrad::testRopLop_data() {
  testVerifyGrad_data();
}

void TestElemwiseGrad::testRopLop() {
  QFETCH(int, index);
  QFETCH(DType, dtype);
  const GradCase& c = gradCases()[static_cast<std::size_t>(index)];
  TSCOPE_CHECK(checkRopLop(builderFor(c), pointsFor(c, dtype)));
}

void TestElemwiseGrad::testSwitchGrad() {
  // switch(cond, a, b): the bool condition is held fixed by the checkers; a and b get the
  // gradient where they were chosen.
  const Tensor cond = Tensor::fromDoubles(DType::Bool, {3, 1}, {1, 0, 1});
  const std::vector<Tensor> points{cond, randomTensor(DType::Float64, kX, 1),
                                   randomTensor(DType::Float64, {1, 4}, 2)};
  const GraphBuilder build = [](const std::vector<VarPtr>& in) {
    return std::vector<VarPtr>{where(in[0], in[1], in[2])};
  };
  TSCOPE_CHECK(verifyGrad(build, points));
  TSCOPE_CHECK(checkRopLop(build, points));
  // The condition's gradient is disconnected even for a float condition.
  const VarPtr fc = Variable::create(TensorType(DType::Float64, {3}), "c");
  const VarPtr a = Variable::create(TensorType(DType::Float64, {3}), "a");
  const VarPtr w = where(fc, a, a);
  const std::vector<Grad> g =
      w->owner()->op().pullback(*w->owner(), std::vector<VarPtr>{onesLike(w)});
  QCOMPARE(g[0].kind, Grad::Kind::Disconnected);
  QVERIFY(g[1].isValue() && g[2].isValue());
}

void TestElemwiseGrad::testDiscreteInputsDisconnected() {
  const VarPtr x = Variable::create(TensorType(DType::Float64, {2, 3}), "x");
  const VarPtr i = Variable::create(TensorType(DType::Int32, {3}), "i");
  const VarPtr y = x * i;
  QCOMPARE(y->type().dtype(), DType::Float64);
  const std::vector<Grad> g =
      y->owner()->op().pullback(*y->owner(), std::vector<VarPtr>{onesLike(y)});
  QVERIFY(g[0].isValue());
  QCOMPARE(g[1].kind, Grad::Kind::Disconnected);
  // The float input's gradient is x's dtype and shape: d(x * i)/dx = i.
  const Tensor iv = Tensor::fromDoubles(DType::Int32, {3}, {1, -2, 3});
  const std::vector<Tensor> gx =
      gradValues(y, {x, i}, {x}, {randomTensor(DType::Float64, {2, 3}, 3), iv});
  QCOMPARE(gx[0].dtype(), DType::Float64);
  QCOMPARE(gx[0].toDoubles(), (std::vector<double>{1, -2, 3, 1, -2, 3}));
  // second(a, b): a only gives the shape.
  const VarPtr s =
      elemwise(ScalarOp::Second, {x, Variable::create(TensorType(DType::Float64, {}), "b")});
  QCOMPARE(s->owner()->op().pullback(*s->owner(), std::vector<VarPtr>{onesLike(s)})[0].kind,
           Grad::Kind::Disconnected);
}

void TestElemwiseGrad::testZeroGradients() {
  // Comparisons, logic and rounding give float inputs zeros (not disconnected), as Theano does.
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  const VarPtr y = Variable::create(TensorType(DType::Float32, {3}), "y");
  for (const VarPtr& out :
       {lt(x, y), eq(x, y), logicalAnd(x, y), floor(x), round(x), sign(x), intDiv(x, y)}) {
    const std::vector<Grad> g =
        out->owner()->op().pullback(*out->owner(), std::vector<VarPtr>{onesLike(out)});
    for (std::size_t k = 0; k < g.size(); ++k) {
      QVERIFY2(g[k].isValue(), out->owner()->op().str().c_str());
      QCOMPARE(g[k].value->type(), out->owner()->input(static_cast<int>(k))->type());
    }
  }
  const std::vector<Tensor> values{randomTensor(DType::Float32, {2, 3}, 4),
                                   randomTensor(DType::Float32, {3}, 5)};
  const std::vector<Tensor> g = gradValues(floor(x) * y, {x, y}, {x}, values);
  QCOMPARE(g[0].toDoubles(), std::vector<double>(6, 0.0));
}

void TestElemwiseGrad::testMinMaxTies() {
  // Ties go to the first input that attains the result.
  const VarPtr a = Variable::create(TensorType(DType::Float64, {4}), "a");
  const VarPtr b = Variable::create(TensorType(DType::Float64, {4}), "b");
  const Tensor av = Tensor::fromDoubles(DType::Float64, {4}, {1, 2, 3, 4});
  const Tensor bv = Tensor::fromDoubles(DType::Float64, {4}, {1, 5, 0, 4});
  std::vector<Tensor> g = gradValues(minimum(a, b), {a, b}, {a, b}, {av, bv});
  QCOMPARE(g[0].toDoubles(), (std::vector<double>{1, 1, 0, 1}));
  QCOMPARE(g[1].toDoubles(), (std::vector<double>{0, 0, 1, 0}));
  g = gradValues(maximum(a, b), {a, b}, {a, b}, {av, bv});
  QCOMPARE(g[0].toDoubles(), (std::vector<double>{1, 0, 1, 1}));
  QCOMPARE(g[1].toDoubles(), (std::vector<double>{0, 1, 0, 0}));
  // Three-way ties: only the first of the tied inputs.
  const VarPtr c = Variable::create(TensorType(DType::Float64, {4}), "c");
  const Tensor cv = Tensor::fromDoubles(DType::Float64, {4}, {1, 2, 0, 9});
  g = gradValues(elemwise(ScalarOp::Minimum, {a, b, c}), {a, b, c}, {a, b, c}, {av, bv, cv});
  QCOMPARE(g[0].toDoubles(), (std::vector<double>{1, 1, 0, 1}));
  QCOMPARE(g[1].toDoubles(), (std::vector<double>{0, 0, 1, 0}));
  QCOMPARE(g[2].toDoubles(), (std::vector<double>{0, 0, 0, 0}));
}

void TestElemwiseGrad::testClipRouting() {
  // x gets the gradient where lo <= x <= hi, lo where x < lo, hi where x > hi.
  const VarPtr x = Variable::create(TensorType(DType::Float64, {5}), "x");
  const VarPtr lo = Variable::create(TensorType(DType::Float64, {}), "lo");
  const VarPtr hi = Variable::create(TensorType(DType::Float64, {}), "hi");
  const Tensor xv = Tensor::fromDoubles(DType::Float64, {5}, {-2, -1, 0, 1, 2});
  const std::vector<Tensor> g =
      gradValues(clip(x, lo, hi), {x, lo, hi}, {x, lo, hi},
                 {xv, Tensor::scalar(DType::Float64, -1), Tensor::scalar(DType::Float64, 1)});
  QCOMPARE(g[0].toDoubles(), (std::vector<double>{0, 1, 1, 1, 0}));
  QCOMPARE(g[1].item(), 1.0);  // summed back to lo's 0-d shape
  QCOMPARE(g[2].item(), 1.0);
}

void TestElemwiseGrad::testGradientDTypes() {
  // Each input's gradient has the input's dtype and shape.
  const VarPtr h = Variable::create(TensorType(DType::Float16, {3, 1}), "h");
  const VarPtr f = Variable::create(TensorType(DType::Float32, {2, 3, 4}), "f");
  const VarPtr y = h * f;
  QCOMPARE(y->type().dtype(), DType::Float32);
  const std::vector<Tensor> values{randomTensor(DType::Float16, {3, 1}, 6),
                                   randomTensor(DType::Float32, {2, 3, 4}, 7)};
  const std::vector<Tensor> g = gradValues(y, {h, f}, {h, f}, values);
  QCOMPARE(g[0].dtype(), DType::Float16);
  QCOMPARE(g[0].shape(), (Shape{3, 1}));
  QCOMPARE(g[1].dtype(), DType::Float32);
  // dy/dh summed over the broadcast axes: sum of f over axes 0 and 2.
  for (std::int64_t r = 0; r < 3; ++r) {
    double expected = 0;
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t k = 0; k < 4; ++k) expected += values[1].at({i, r, k});
    QVERIFY(std::abs(g[0].at({r, 0}) - expected) <= 1e-2 * std::max(1.0, std::abs(expected)));
  }
  // A cast's gradient is cast back: float64 -> float32 gives a float64 gradient.
  const VarPtr d = Variable::create(TensorType(DType::Float64, {2, 3}), "d");
  const VarPtr c = cast(d, DType::Float32);
  const std::vector<Tensor> gd =
      gradValues(c * c, {d}, {d}, {randomTensor(DType::Float64, {2, 3}, 8)});
  QCOMPARE(gd[0].dtype(), DType::Float64);
  const GraphBuilder widen = [](const std::vector<VarPtr>& in) {
    return std::vector<VarPtr>{cast(in[0], DType::Float64) * in[1]};
  };
  const std::vector<Tensor> narrow{randomTensor(DType::Float32, {2, 3, 4}, 12),
                                   randomTensor(DType::Float64, {3, 1}, 13)};
  TSCOPE_CHECK(verifyGrad(widen, narrow));
  TSCOPE_CHECK(checkRopLop(widen, narrow));
  // A cast to an integer gives its float input zeros.
  const VarPtr ci = cast(d, DType::Int32);
  const std::vector<Grad> gi =
      ci->owner()->op().pullback(*ci->owner(), std::vector<VarPtr>{zerosLike(ci)});
  QVERIFY(gi[0].isValue());
}

void TestElemwiseGrad::testRopSpansOutput() {
  // Only the small input moves: the R-op still has the output's shape (2, 3, 4), not y's (3, 1).
  const VarPtr x =
      Variable::create(TensorType(DType::Float64, {kUnknownDim, kUnknownDim, kUnknownDim}), "x");
  const VarPtr y = Variable::create(TensorType(DType::Float64, {kUnknownDim, 1}), "y");
  const VarPtr v = Variable::create(y->type(), "v");
  const VarPtr out = x + y;
  const std::vector<VarPtr> jv = Rop({out}, {y}, {v});
  const Tensor vv = Tensor::fromDoubles(DType::Float64, {3, 1}, {1, 2, 3});
  const std::vector<Tensor> r =
      evaluate({x, y, v}, jv,
               {randomTensor(DType::Float64, kX, 9), randomTensor(DType::Float64, {3, 1}, 10), vv});
  QCOMPARE(r[0].shape(), (Shape{2, 3, 4}));
  QCOMPARE(r[0].at({1, 2, 3}), 3.0);
  // A switch whose condition is larger than the branches.
  const VarPtr cond = Variable::create(TensorType(DType::Bool, {kUnknownDim, kUnknownDim}), "cond");
  const VarPtr a = Variable::create(TensorType(DType::Float64, {kUnknownDim}), "a");
  const VarPtr va = Variable::create(a->type(), "va");
  const std::vector<VarPtr> jw = Rop({where(cond, a, a * 2.0)}, {a}, {va});
  const std::vector<Tensor> rw = evaluate(
      {cond, a, va}, jw,
      {Tensor::fromDoubles(DType::Bool, {2, 3}, {1, 0, 1, 0, 1, 0}),
       randomTensor(DType::Float64, {3}, 11), Tensor::fromDoubles(DType::Float64, {3}, {1, 1, 1})});
  QCOMPARE(rw[0].shape(), (Shape{2, 3}));
  QCOMPARE(rw[0].toDoubles(), (std::vector<double>{1, 2, 1, 2, 1, 2}));
}

TSCOPE_TEST_MAIN(TestElemwiseGrad)
#include "tst_elemwise_grad.moc"
