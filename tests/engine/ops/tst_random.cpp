// Random ops and RandomStream: Philox known answers, reproducibility for a seed, different seeds
// and successive calls differ, moments of 100k samples, integer bounds, dropout, state accounting,
// inferShape, gradients (disconnected / undefined), bad inputs and props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/random/philox.h"
#include "engine/ops/random/random_ops.h"
#include "engine/ops/random/random_stream.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>
#include <limits>
#include <set>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

struct Moments {
  double mean, var, min, max;
};
Moments momentsOf(const Tensor& t) {
  const std::vector<double> v = t.toDoubles();
  double s = 0, mn = INFINITY, mx = -INFINITY;
  for (double x : v) s += x, mn = std::min(mn, x), mx = std::max(mx, x);
  const double mean = s / static_cast<double>(v.size());
  double q = 0;
  for (double x : v) q += (x - mean) * (x - mean);
  return {mean, q / static_cast<double>(v.size()), mn, mx};
}

// Runs one draw of the op directly from a state: {new_state, sample}.
std::vector<Tensor> drawOnce(RandomDistribution d, DType dtype, const Tensor& state, Shape shape,
                             double a, double b) {
  std::vector<VarPtr> dims;
  for (std::int64_t s : shape) dims.push_back(constantInt(s));
  VarPtr st = Variable::create(TensorType(DType::Int64, {2}), "state");
  const DType pd = d == RandomDistribution::Integers ? DType::Int64 : DType::Float64;
  std::vector<VarPtr> out;
  if (d == RandomDistribution::Uniform)
    out = randomUniform(st, dims, constant(a, pd), constant(b, pd), dtype);
  if (d == RandomDistribution::Normal)
    out = randomNormal(st, dims, constant(a, pd), constant(b, pd), dtype);
  if (d == RandomDistribution::Integers)
    out = randomIntegers(st, dims, constant(a, pd), constant(b, pd), dtype);
  return evaluate({st}, out, {state});
}

}  // namespace

class TestRandom : public QObject {
  Q_OBJECT

 private slots:
  void testPhiloxKnownAnswers();
  void testStateAccounting();
  void testSameSeedSameNumbers();
  void testDifferentSeedsDiffer();
  void testUpdatesAdvanceTheState();
  void testReseed();
  void testUniformMoments_data();
  void testUniformMoments();
  void testNormalMoments_data();
  void testNormalMoments();
  void testIntegersWithinBounds();
  void testDropout();
  void testSymbolicShape();
  void testInferShape();
  void testGradients();
  void testBadInputs();
  void testProps();
};

// Random123's tests/kat_vectors, the three "philox4x32 10" lines.
void TestRandom::testPhiloxKnownAnswers() {
  using philox::philox4x32_10;
  QCOMPARE(philox4x32_10({0, 0, 0, 0}, {0, 0}),
           (philox::Counter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  QCOMPARE(
      philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
      (philox::Counter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  QCOMPARE(
      philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
      (philox::Counter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// Note [Random state]: a draw advances the counter by the blocks it used and keeps the key; the
// sample is a function of the state alone.
void TestRandom::testStateAccounting() {
  const Tensor s0 = randomState(7);
  QCOMPARE(s0.at({1}), 0.0);
  // 5 float32 uniforms: 5 words -> 2 blocks; 5 float64: 10 words -> 3 blocks; 5 normals: 3 pairs ->
  // 12 words -> 3 blocks; 5 integers: 10 words -> 3 blocks.
  const struct {
    RandomDistribution d;
    DType dtype;
    double blocks;
  } cases[] = {{RandomDistribution::Uniform, DType::Float32, 2},
               {RandomDistribution::Uniform, DType::Float64, 3},
               {RandomDistribution::Normal, DType::Float32, 3},
               {RandomDistribution::Integers, DType::Int32, 3}};
  for (const auto& c : cases) {
    const double lo = c.d == RandomDistribution::Normal ? 0.0 : -5.0,
                 hi = c.d == RandomDistribution::Normal ? 1.0 : 5.0;
    const auto a = drawOnce(c.d, c.dtype, s0, {5}, lo, hi);
    QCOMPARE(a[0].at({0}), s0.at({0}));
    QCOMPARE(a[0].at({1}), c.blocks);
    QCOMPARE(a[1].dtype(), c.dtype);
    const auto b = drawOnce(c.d, c.dtype, s0, {5}, lo, hi);
    QVERIFY(a[1].bitwiseEqual(b[1]));
    const auto next = drawOnce(c.d, c.dtype, a[0], {5}, lo, hi);
    QVERIFY(!next[1].bitwiseEqual(a[1]));
  }
  // The first elements of a longer sample are the shorter sample (element j always uses the same
  // words).
  const auto shortDraw = drawOnce(RandomDistribution::Normal, DType::Float64, s0, {3}, 0, 1);
  const auto longDraw = drawOnce(RandomDistribution::Normal, DType::Float64, s0, {2, 4}, 0, 1);
  for (std::int64_t i = 0; i < 3; ++i) QCOMPARE(longDraw[1].at({0, i}), shortDraw[1].at({i}));
}

void TestRandom::testSameSeedSameNumbers() {
  auto run = [](std::uint64_t seed) {
    RandomStream rng(seed);
    VarPtr u = rng.uniform({2, 3});
    VarPtr n = rng.normal({4}, 1.0, 2.0, DType::Float64);
    VarPtr k = rng.integers({3, 2}, 0, 100);
    Function f = compile({}, {u, n, k}, rng.updates());
    return f({});
  };
  const auto a = run(42), b = run(42);
  for (std::size_t i = 0; i < a.size(); ++i) QVERIFY(a[i].bitwiseEqual(b[i]));
  QCOMPARE(a[0].shape(), (Shape{2, 3}));
  QCOMPARE(a[1].dtype(), DType::Float64);
  QCOMPARE(a[2].dtype(), DType::Int64);
  // Two draws of one stream are different streams.
  RandomStream rng(42);
  VarPtr u1 = rng.uniform({50}), u2 = rng.uniform({50});
  Function f = compile({}, {u1, u2}, rng.updates());
  const auto out = f({});
  QVERIFY(!out[0].bitwiseEqual(out[1]));
}

void TestRandom::testDifferentSeedsDiffer() {
  std::vector<Tensor> samples;
  for (std::uint64_t seed : {0ull, 1ull, 2ull, 0xFFFFFFFFFFFFFFFFull}) {
    RandomStream rng(seed);
    Function f = compile({}, {rng.uniform({64})}, rng.updates());
    samples.push_back(f({})[0]);
  }
  for (std::size_t i = 0; i < samples.size(); ++i)
    for (std::size_t j = i + 1; j < samples.size(); ++j) {
      const auto a = samples[i].toDoubles(), b = samples[j].toDoubles();
      int same = 0;
      for (std::size_t k = 0; k < a.size(); ++k) same += a[k] == b[k];
      QVERIFY2(
          same < 2,
          qPrintable(QStringLiteral("seeds %1 and %2 share %3 values").arg(i).arg(j).arg(same)));
    }
}

void TestRandom::testUpdatesAdvanceTheState() {
  RandomStream rng(3);
  VarPtr u = rng.uniform({10}, -1.0, 1.0, DType::Float64);
  QCOMPARE(rng.updates().size(), std::size_t{1});
  Function f = compile({}, {u}, rng.updates());
  const Tensor first = f({})[0], second = f({})[0];
  QVERIFY(!first.bitwiseEqual(second));
  QCOMPARE(rng.states()[0]->value().at({1}), 10.0);  // 2 calls x 20 words = 10 blocks
  // Without the updates, every call repeats the same numbers.
  RandomStream fixed(3);
  VarPtr v = fixed.uniform({10}, -1.0, 1.0, DType::Float64);
  Function g = compile({}, {v});
  QVERIFY(g({})[0].bitwiseEqual(first));
  QVERIFY(g({})[0].bitwiseEqual(first));
}

void TestRandom::testReseed() {
  RandomStream rng(11);
  VarPtr n = rng.normal({8});
  Function f = compile({}, {n}, rng.updates());
  const Tensor first = f({})[0];
  f({});
  rng.seed(11);
  QVERIFY(f({})[0].bitwiseEqual(first));
  rng.seed(12);
  QVERIFY(!f({})[0].bitwiseEqual(first));
  QCOMPARE(rng.currentSeed(), std::uint64_t{12});
}

void TestRandom::testUniformMoments_data() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
  QTest::newRow("float16") << DType::Float16;
}

void TestRandom::testUniformMoments() {
  QFETCH(DType, dtype);
  RandomStream rng(5);
  Function f = compile({}, {rng.uniform({400, 250}, -2.0, 6.0, dtype)}, rng.updates());
  const Moments m = momentsOf(f({})[0]);
  // 100k samples of U(-2, 6): mean 2 (std error 0.007), variance 64/12 = 5.33 (std error ~0.015).
  QVERIFY2(std::abs(m.mean - 2.0) < 0.05, qPrintable(QString::number(m.mean)));
  QVERIFY2(std::abs(m.var - 64.0 / 12.0) < 0.1, qPrintable(QString::number(m.var)));
  QVERIFY(m.min >= -2.0);
  if (dtype != DType::Float16) QVERIFY(m.max < 6.0);  // half rounding may reach the bound
  QVERIFY(m.min < -1.99 && m.max > 5.99);
}

void TestRandom::testNormalMoments_data() {
  testUniformMoments_data();
}

void TestRandom::testNormalMoments() {
  QFETCH(DType, dtype);
  RandomStream rng(6);
  Function f = compile({}, {rng.normal({100001}, 1.5, 3.0, dtype)},
                       rng.updates());  // odd: the last pair is half used
  const Tensor s = f({})[0];
  const Moments m = momentsOf(s);
  // Mean 1.5 (std error 0.0095), variance 9 (std error ~0.04).
  QVERIFY2(std::abs(m.mean - 1.5) < 0.05, qPrintable(QString::number(m.mean)));
  QVERIFY2(std::abs(m.var - 9.0) < 0.2, qPrintable(QString::number(m.var)));
  // About 68.3% within one standard deviation.
  int within = 0;
  for (double v : s.toDoubles()) within += std::abs(v - 1.5) < 3.0;
  QVERIFY2(std::abs(within / 100001.0 - 0.6827) < 0.01, qPrintable(QString::number(within)));
}

void TestRandom::testIntegersWithinBounds() {
  for (DType dtype : {DType::Int64, DType::Int8, DType::UInt8, DType::Int32}) {
    const std::int64_t lo = dtype == DType::UInt8 ? 250 : -3, hi = dtype == DType::UInt8 ? 256 : 4;
    RandomStream rng(9);
    Function f = compile({}, {rng.integers({100000}, lo, hi, dtype)}, rng.updates());
    const Tensor s = f({})[0];
    QCOMPARE(s.dtype(), dtype);
    std::set<double> seen;
    for (double v : s.toDoubles()) {
      QVERIFY(v >= static_cast<double>(lo) && v < static_cast<double>(hi));
      seen.insert(v);
    }
    QCOMPARE(seen.size(), static_cast<std::size_t>(hi - lo));  // every value appears
    QVERIFY(std::abs(momentsOf(s).mean - (lo + hi - 1) / 2.0) < 0.05);
  }
  // uint64: a range up to its top (its max() does not fit int64, which the bound check once
  // turned into -1, refusing every range).
  {
    RandomStream rng(10);
    Function f =
        compile({}, {rng.integers({1000}, 5, std::int64_t{1} << 62, DType::UInt64)}, rng.updates());
    const Tensor s = f({})[0];
    QCOMPARE(s.dtype(), DType::UInt64);
    for (double v : s.toDoubles()) QVERIFY(v >= 5);
  }
  // The full int64 range does not overflow.
  const auto wide =
      drawOnce(RandomDistribution::Integers, DType::Int64, randomState(1), {4}, -9.2e18, 9.2e18);
  QCOMPARE(wide[1].numel(), std::int64_t{4});
}

void TestRandom::testDropout() {
  const double p = 0.3;
  VarPtr x = Variable::create(TensorType(DType::Float64, {kUnknownDim, kUnknownDim}), "x");
  RandomStream rng(13);
  VarPtr y = rng.dropout(x, p);
  VarPtr gx = grad(sum(y), x);  // the mask / (1 - p)
  Function f = compile({x}, {y, gx}, rng.updates());
  const Tensor ones = Tensor::full(DType::Float64, {200, 500}, 1.0);
  const auto out = f({ones});
  int zeros = 0;
  for (double v : out[0].toDoubles()) {
    QVERIFY(v == 0.0 || std::abs(v - 1.0 / (1.0 - p)) < 1e-12);
    zeros += v == 0.0;
  }
  QVERIFY2(std::abs(zeros / 100000.0 - p) < 0.01, qPrintable(QString::number(zeros)));
  QVERIFY(out[1].bitwiseEqual(out[0]));         // x = 1: the gradient is the scaled mask itself
  QVERIFY(!f({ones})[0].bitwiseEqual(out[0]));  // a new mask every call
  QVERIFY(rng.dropout(x, 0.0) == x);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rng.dropout(x, 1.0));
}

void TestRandom::testSymbolicShape() {
  VarPtr x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
  RandomStream rng(1);
  VarPtr n = rng.normal(shapeOf(x));
  QCOMPARE(n->type(), TensorType(DType::Float32, {kUnknownDim, 3}));
  Function f = compile({x}, {n + x}, rng.updates());
  QCOMPARE(f({Tensor(DType::Float32, {5, 3})})[0].shape(), (Shape{5, 3}));
}

void TestRandom::testInferShape() {
  const Tensor x = Tensor(DType::Float32, {2, 3});
  const Tensor state = randomState(4);
  TSCOPE_CHECK(checkInferShape(
      [](const std::vector<VarPtr>& in) {
        const ShapeExpr dims = shapeOf(in[0]);
        std::vector<VarPtr> u = randomUniform(in[1], dims, constant(0.0, DType::Float32),
                                              constant(1.0, DType::Float32));
        std::vector<VarPtr> k =
            randomIntegers(in[1], {shapeI(in[0], 1)}, constantInt(0), constantInt(5), DType::Int16);
        return std::vector<VarPtr>{u[0], u[1], k[1]};
      },
      {x, state}));
}

void TestRandom::testGradients() {
  VarPtr x = Variable::create(TensorType(DType::Float64, {4}), "x");
  VarPtr low = Variable::create(TensorType(DType::Float64, {}), "low");
  auto state = SharedVariable::create(randomState(2), "state");
  std::vector<VarPtr> draw =
      randomUniform(state, {constantInt(4)}, low, constant(1.0, DType::Float64), DType::Float64);
  VarPtr cost = sum(draw[1] * x);
  QVERIFY(grad(cost, x) != nullptr);  // flows around the sample
  try {
    grad(cost, low);
    QFAIL("expected a GradientError");
  } catch (const GradientError& e) {
    QVERIFY2(QString::fromStdString(e.what()).contains("reparameterised"), e.what());
  }
  // The state does not influence the cost differentiably: disconnected.
  QVERIFY_THROWS_EXCEPTION(GradientError, grad(cost, VarPtr(state)));
}

void TestRandom::testBadInputs() {
  auto expectTypeError = [](auto&& build, std::initializer_list<const char*> parts) {
    try {
      build();
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      const QString msg = QString::fromStdString(e.what());
      for (const char* part : parts) QVERIFY2(msg.contains(QLatin1String(part)), qPrintable(msg));
    }
  };
  VarPtr state = Variable::create(TensorType(DType::Int64, {2}), "state");
  VarPtr one = constant(1.0, DType::Float64);
  expectTypeError(
      [&] { randomUniform(Variable::create(TensorType(DType::Int32, {2}), "s"), {}, one, one); },
      {"RandomUniform", "input 0 ('s')", "int64 tensor of shape (2,)", "int32"});
  expectTypeError([&] { randomNormal(state, {constant(3.0, DType::Float64)}, one, one); },
                  {"RandomNormal", "input 1", "size of sample axis 0 (a 0-d int64 tensor)"});
  expectTypeError([&] { randomIntegers(state, {}, one, constantInt(3)); },
                  {"RandomIntegers", "input 1", "low bound (a 0-d integer tensor)", "float64"});
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           RandomOp(RandomDistribution::Uniform, DType::Int32, 1));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           RandomOp(RandomDistribution::Integers, DType::Float32, 1));
  // Runtime: low > high, std < 0, empty integer range.
  for (auto [d, a, b] : {std::tuple{RandomDistribution::Uniform, 2.0, 1.0},
                         std::tuple{RandomDistribution::Normal, 0.0, -1.0},
                         std::tuple{RandomDistribution::Integers, 3.0, 3.0}}) {
    const DType dt = d == RandomDistribution::Integers ? DType::Int64 : DType::Float64;
    QVERIFY_THROWS_EXCEPTION(std::exception, drawOnce(d, dt, randomState(1), {2}, a, b));
  }
  QVERIFY_THROWS_EXCEPTION(std::exception, drawOnce(RandomDistribution::Integers, DType::Int8,
                                                    randomState(1), {2}, 0, 300));
}

void TestRandom::testProps() {
  const OpRegistry& reg = defaultOpRegistry();
  for (auto d : {RandomDistribution::Uniform, RandomDistribution::Normal}) {
    RandomOp op(d, DType::Float64, 3);
    QVERIFY(reg.make(op.name(), op.props())->equals(op));
  }
  RandomOp ints(RandomDistribution::Integers, DType::UInt8, 0);
  QCOMPARE(QString::fromStdString(ints.str()),
           QStringLiteral("RandomIntegers{dtype=uint8,ndim=0}"));
  QVERIFY(reg.make("RandomIntegers", ints.props())->equals(ints));
  for (const nlohmann::json& bad :
       {nlohmann::json::object(), nlohmann::json{{"dtype", "float32"}},
        nlohmann::json{{"dtype", "float32"}, {"ndim", 99}},
        nlohmann::json{{"dtype", "int8"}, {"ndim", 1}},
        nlohmann::json{{"dtype", "float32"}, {"ndim", 1}, {"seed", 3}}}) {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make("RandomUniform", bad));
  }
}

TSCOPE_TEST_MAIN(TestRandom)
#include "tst_random.moc"
