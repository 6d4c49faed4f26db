// Argmax/Argmin, mean, var, stddev and logsumexp: values against naive loops (ties, NaN, strided
// inputs, ddof, large values that would overflow exp), result dtypes, unknown dimensions,
// inferShape, props and bad inputs.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "reduce_reference.h"
#include "test_main.h"

#include <cmath>
#include <optional>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(std::vector<int>)

namespace {

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// The first index of the extreme along axis (flattened when axis < 0), NaN first, in double.
Tensor naiveArg(const Tensor& x, int axis, bool isMax) {
  const Tensor t = axis < 0 ? x.reshape({x.numel()}) : x;
  const int ax = axis < 0 ? 0 : axis;
  Shape outShape;
  for (int a = 0; a < t.ndim(); ++a)
    if (a != ax) outShape.push_back(t.shape()[static_cast<std::size_t>(a)]);
  Tensor out = Tensor::zeros(DType::Int64, outShape);
  for (std::int64_t o = 0; o < out.numel(); ++o) {
    auto oi = unravel(o, outShape);
    std::vector<std::int64_t> idx;
    for (int a = 0, j = 0; a < t.ndim(); ++a)
      idx.push_back(a == ax ? 0 : oi[static_cast<std::size_t>(j++)]);
    std::int64_t best = 0;
    for (std::int64_t i = 0; i < t.shape()[static_cast<std::size_t>(ax)]; ++i) {
      idx[static_cast<std::size_t>(ax)] = i;
      const double v = t.at(idx);
      if (std::isnan(v)) {
        best = i;
        break;
      }
      idx[static_cast<std::size_t>(ax)] = best;
      const double b = t.at(idx);
      if (isMax ? v > b : v < b) best = i;
    }
    out.set(oi, static_cast<double>(best));
  }
  return out;
}

// mean / var over axes in double; ddof for var.
std::pair<Shape, std::vector<double>> naiveMoments(const Tensor& x, const std::vector<int>& axes,
                                                   bool variance, int ddof) {
  auto [shape, sums] = referenceReduce(x, axes, "sum");
  const double count = static_cast<double>(x.numel()) /
                       static_cast<double>(std::max<std::int64_t>(shapeNumel(shape), 1));
  for (double& s : sums) s /= count;
  if (!variance) return {shape, sums};
  std::vector<double> ss(sums.size(), 0.0);
  const std::vector<double> values = x.toDoubles();
  std::vector<int> all = axes;
  if (all.empty())
    for (int a = 0; a < x.ndim(); ++a) all.push_back(a);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const auto idx = unravel(i, x.shape());
    std::int64_t o = 0;
    for (int a = 0; a < x.ndim(); ++a)
      if (std::find(all.begin(), all.end(), a) == all.end())
        o = o * x.shape()[static_cast<std::size_t>(a)] + idx[static_cast<std::size_t>(a)];
    const double d = values[static_cast<std::size_t>(i)] - sums[static_cast<std::size_t>(o)];
    ss[static_cast<std::size_t>(o)] += d * d;
  }
  for (double& v : ss) v /= (count - ddof);
  return {shape, ss};
}

}  // namespace

class TestReduceStats : public QObject {
  Q_OBJECT

 private slots:
  void testArgmax_data();
  void testArgmax();
  void testArgNaNAndTies();
  void testArgStridedAndKeepdims();
  void testArgErrors();
  void testArgProps();
  void testMoments_data();
  void testMoments();
  void testMomentDtypes();
  void testLogsumexp();
  void testLogsumexpLargeAndInfinite();
  void testInferShape();
};

void TestReduceStats::testArgmax_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<int>("axis");  // -99: flattened
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Float16})
    for (int axis : {0, 1, 2, -1, -99})
      QTest::addRow("%s axis %d", std::string(dtypeName(dtype)).c_str(), axis) << dtype << axis;
}

void TestReduceStats::testArgmax() {
  QFETCH(DType, dtype);
  QFETCH(int, axis);
  const Tensor x = randomTensor(dtype, {2, 3, 4}, 21, -5, 5);  // integers tie often: first one wins
  std::optional<int> ax;
  if (axis != -99) ax = axis;
  const auto got = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector{argmax(in[0], ax), argmin(in[0], ax)};
      },
      {x});
  const int norm = axis == -99 ? -1 : (axis + 3) % 3;
  QVERIFY(closeTo(got[0], naiveArg(x, norm, true)));
  QVERIFY(closeTo(got[1], naiveArg(x, norm, false)));
  QCOMPARE(got[0].dtype(), DType::Int64);
}

void TestReduceStats::testArgNaNAndTies() {
  const double nan = std::nan("");
  const Tensor x = Tensor::fromDoubles(DType::Float32, {2, 5}, {3, 1, 3, 1, 0, 2, nan, 7, nan, -1});
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{argmax(in[0], 1), argmin(in[0], 1), argmax(in[0]), argmin(in[0], 0)};
      },
      {x});
  // Ties: the first occurrence; NaN: the first NaN, for argmax and argmin alike (numpy).
  QVERIFY(closeTo(got[0], Tensor::fromDoubles(DType::Int64, {2}, {0, 1})));
  QVERIFY(closeTo(got[1], Tensor::fromDoubles(DType::Int64, {2}, {4, 1})));
  QCOMPARE(got[2].item(), 6.0);
  QVERIFY(closeTo(got[3], Tensor::fromDoubles(DType::Int64, {5}, {1, 1, 0, 1, 1})));
}

void TestReduceStats::testArgStridedAndKeepdims() {
  const Tensor base = randomTensor(DType::Float64, {4, 3, 2}, 4);
  const Tensor x = base.transpose();  // 2x3x4, not contiguous
  for (int axis : {0, 1, 2}) {
    const OpPtr op = std::make_shared<ArgReduce>(ArgReduce::Kind::Max, axis);
    const VarPtr v = Variable::create(TensorType::ofValue(x));
    ApplyPtr node = op->makeNode({v});
    Tensor out;
    const Tensor* ins[] = {&x};
    Tensor* outs[] = {&out};
    op->perform(*node, ins, outs);
    QVERIFY(closeTo(out, naiveArg(x, axis, true)));
  }
  const OpPtr flat = std::make_shared<ArgReduce>(ArgReduce::Kind::Min, std::nullopt);
  ApplyPtr node = flat->makeNode({Variable::create(TensorType::ofValue(x))});
  Tensor out;
  const Tensor* ins[] = {&x};
  Tensor* outs[] = {&out};
  flat->perform(*node, ins, outs);
  QCOMPARE(out.item(), naiveArg(x.contiguous(), -1, false).item());
  // keepdims puts a broadcastable axis back.
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{argmax(in[0], 1, true), argmax(in[0], std::nullopt, true)};
      },
      {base});
  QCOMPARE(got[0].shape(), (Shape{4, 1, 2}));
  QVERIFY(closeTo(got[0].reshape({4, 2}), naiveArg(base, 1, true)));
  QCOMPARE(got[1].shape(), (Shape{1, 1, 1}));
  const VarPtr s = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}));
  QCOMPARE(argmax(s, -1, true)->type().shape(), (std::vector<std::int64_t>{kUnknownDim, 1}));
}

void TestReduceStats::testArgErrors() {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  std::string msg = message([&] { argmax(x, 2); });
  QVERIFY2(msg.find("argmax: axis 2 is out of range for TensorType(float32, (2, 3))") !=
               std::string::npos,
           msg.c_str());
  msg = message([&] { argmin(x, -3); });
  QVERIFY2(msg.find("argmin: axis -3") != std::string::npos, msg.c_str());
  // An empty axis has no first element.
  const Tensor empty = Tensor::zeros(DType::Float32, {2, 0});
  msg = message([&] {
    evaluate([](const std::vector<VarPtr>& in) { return std::vector{argmax(in[0], 1)}; }, {empty});
  });
  QVERIFY2(
      msg.find("empty sequence") != std::string::npos && msg.find("(2, 0)") != std::string::npos,
      msg.c_str());
  // The index output has no gradient: disconnected, not undefined.
  const VarPtr a = argmax(x, 1);
  const auto grads = a->owner()->op().pullback(*a->owner(), std::vector<VarPtr>{zerosLike(a)});
  QCOMPARE(grads.size(), std::size_t{1});
  QVERIFY(grads[0].kind == Grad::Kind::Disconnected);
}

void TestReduceStats::testArgProps() {
  const OpRegistry& registry = defaultOpRegistry();
  const OpPtr a = registry.make("Argmax", {{"axis", 1}});
  QCOMPARE(a->str(), std::string("Argmax{axis=1}"));
  QVERIFY(a->equals(ArgReduce(ArgReduce::Kind::Max, 1)));
  QVERIFY(!a->equals(ArgReduce(ArgReduce::Kind::Min, 1)));
  QCOMPARE(registry.make("Argmin", {{"axis", nullptr}})->props(),
           (nlohmann::json{{"axis", nullptr}}));
  const std::string msg = message([&] { registry.make("Argmin", {{"axis", 99}}); });
  QVERIFY2(msg.find("\"axis\"") != std::string::npos, msg.c_str());
}

void TestReduceStats::testMoments_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<std::vector<int>>("axes");
  QTest::addColumn<bool>("keepdims");
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32})
    for (const auto& [axes, keep] : std::vector<std::pair<std::vector<int>, bool>>{
             {{0, 2}, false}, {{1}, true}, {{}, false}, {{-1}, false}}) {
      std::string ax;
      for (int a : axes) ax += std::to_string(a) + " ";
      QTest::addRow("%s [%s]%s", std::string(dtypeName(dtype)).c_str(), ax.c_str(),
                    keep ? " keepdims" : "")
          << dtype << axes << keep;
    }
}

void TestReduceStats::testMoments() {
  QFETCH(DType, dtype);
  QFETCH(std::vector<int>, axes);
  QFETCH(bool, keepdims);
  const Tensor x = randomTensor(dtype, {2, 3, 4}, 8, -6, 6);
  std::vector<int> norm = axes;
  for (int& a : norm)
    if (a < 0) a += 3;
  // Unknown dimensions (evaluate's default): the counts come from the runtime shape.
  const auto got = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector{mean(in[0], axes, keepdims), var(in[0], axes, keepdims),
                           var(in[0], axes, keepdims, 1), stddev(in[0], axes, keepdims, 1)};
      },
      {x});
  const DType outDtype = isFloat(dtype) ? dtype : DType::Float64;
  const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
  auto check = [&](const Tensor& actual, bool variance, int ddof, bool root) {
    auto [shape, values] = naiveMoments(x, norm, variance, ddof);
    if (root)
      for (double& v : values) v = std::sqrt(v);
    const Tensor want = Tensor::fromDoubles(outDtype, shape, values);
    return closeTo(keepdims ? actual.reshape(shape) : actual, want, tol, tol);
  };
  QVERIFY(check(got[0], false, 0, false));
  QVERIFY(check(got[1], true, 0, false));
  QVERIFY(check(got[2], true, 1, false));
  QVERIFY(check(got[3], true, 1, true));
  if (keepdims) QCOMPARE(got[0].ndim(), 3);
}

void TestReduceStats::testMomentDtypes() {
  const VarPtr i = Variable::create(TensorType(DType::Int32, {2, 3}));
  QCOMPARE(mean(i)->type().dtype(), DType::Float64);
  QCOMPARE(var(Variable::create(TensorType(DType::Bool, {2, 3})))->type().dtype(), DType::Float64);
  QCOMPARE(mean(Variable::create(TensorType(DType::Float32, {2, 3})), {1})->type().dtype(),
           DType::Float32);
  // float16 sums in float32 and returns float16 (numpy).
  const Tensor h = Tensor::full(DType::Float16, {4, 1000}, 3.0);
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{mean(in[0]), var(in[0], {1})};
      },
      {h});
  QCOMPARE(got[0].dtype(), DType::Float16);
  QCOMPARE(got[0].item(), 3.0);
  QVERIFY(closeTo(got[1], Tensor::zeros(DType::Float16, {4})));
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  const std::string msg = message([&] { var(x, {2}); });
  QVERIFY2(msg.find("var: axis 2 is out of range") != std::string::npos, msg.c_str());
}

void TestReduceStats::testLogsumexp() {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 12, -3, 3);
    const auto got = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector{logsumexp(in[0], {1}), logsumexp(in[0]),
                             logsumexp(in[0], {0, 2}, true)};
        },
        {x});
    auto naive = [&](std::vector<int> axes) {
      Tensor e = Tensor::fromDoubles(DType::Float64, x.shape(), [&] {
        std::vector<double> v = x.toDoubles();
        for (double& d : v) d = std::exp(d);
        return v;
      }());
      auto [shape, sums] = referenceReduce(e, axes, "sum");
      for (double& s : sums) s = std::log(s);
      return Tensor::fromDoubles(dtype, shape, sums);
    };
    QVERIFY(closeTo(got[0], naive({1}), 1e-5, 1e-5));
    QVERIFY(closeTo(got[1], naive({}), 1e-5, 1e-5));
    QCOMPARE(got[2].shape(), (Shape{1, 3, 1}));
    QVERIFY(closeTo(got[2].reshape({3}), naive({0, 2}), 1e-5, 1e-5));
  }
  // Integers upgrade to a float as exp does.
  QCOMPARE(logsumexp(Variable::create(TensorType(DType::Int32, {3})))->type().dtype(),
           DType::Float64);
}

void TestReduceStats::testLogsumexpLargeAndInfinite() {
  const double inf = std::numeric_limits<double>::infinity();
  // exp(1000) overflows even float64; the shifted form does not.
  const Tensor x =
      Tensor::fromDoubles(DType::Float32, {3, 2}, {1000, 1001, -inf, -inf, -1000, -1001});
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) { return std::vector{logsumexp(in[0], {1})}; }, {x});
  const double l = std::log1p(std::exp(-1.0));
  QVERIFY(closeTo(got[0], Tensor::fromDoubles(DType::Float32, {3}, {1001 + l, -inf, -1000 + l}),
                  1e-6, 1e-3));
  const Tensor big = Tensor::fromDoubles(DType::Float64, {2}, {700, 710});
  const auto g2 =
      evaluate([](const std::vector<VarPtr>& in) { return std::vector{logsumexp(in[0])}; }, {big});
  QVERIFY(std::abs(g2[0].item() - (710 + std::log1p(std::exp(-10.0)))) < 1e-9);
}

void TestReduceStats::testInferShape() {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 2);
    TSCOPE_CHECK(checkInferShape(
        [](const std::vector<VarPtr>& in) {
          return std::vector{mean(in[0], {0, 2}),    var(in[0], {1}, true),       stddev(in[0]),
                             logsumexp(in[0], {-1}), logsumexp(in[0], {1}, true), argmax(in[0], 1),
                             argmin(in[0]),          argmax(in[0], 2, true)};
        },
        {x}));
  }
}

TSCOPE_TEST_MAIN(TestReduceStats)
#include "tst_reduce_stats.moc"
