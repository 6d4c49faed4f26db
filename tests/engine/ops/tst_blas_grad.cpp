// Gradients of Dot for every rank combination (batched and broadcast included), its R-op, and the
// BLAS-shaped ops Gemm, Gemv and Ger: values against the dot expressions they replace, in-place
// writes (destroyMap), beta = 0 over NaN, inferShape, gradients, type errors and props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/shape/dimshuffle.h"
#include "op_test_support.h"
#include "reduce_reference.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::Shape)

namespace {

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

Tensor scalar(DType dtype, double v) {
  return Tensor::scalar(dtype, v);
}

// The three ops, and the dot expressions they stand for.
VarPtr blasExpr(const std::string& which, const std::vector<VarPtr>& in) {
  if (which == "gemm") return gemm(in[0], in[1], in[2], in[3], in[4]);
  if (which == "gemv") return gemv(in[0], in[1], in[2], in[3], in[4]);
  return ger(in[0], in[1], in[2], in[3]);
}
VarPtr dotExpr(const std::string& which, const std::vector<VarPtr>& in) {
  if (which == "ger") return in[0] + in[1] * outer(in[2], in[3]);
  return in[4] * in[0] + in[1] * dot(in[2], in[3]);
}
std::vector<Tensor> blasPoints(const std::string& which, DType dtype) {
  if (which == "gemm")
    return {randomTensor(dtype, {2, 4}, 1), scalar(dtype, 1.5), randomTensor(dtype, {2, 3}, 2),
            randomTensor(dtype, {3, 4}, 3), scalar(dtype, -0.5)};
  if (which == "gemv")
    return {randomTensor(dtype, {2}, 1), scalar(dtype, 1.5), randomTensor(dtype, {2, 3}, 2),
            randomTensor(dtype, {3}, 3), scalar(dtype, -0.5)};
  return {randomTensor(dtype, {2, 3}, 1), scalar(dtype, 1.5), randomTensor(dtype, {2}, 2),
          randomTensor(dtype, {3}, 3)};
}

Tensor performOn(const OpPtr& op, const std::vector<Tensor>& values) {
  std::vector<VarPtr> vars;
  for (const Tensor& v : values) vars.push_back(Variable::create(TensorType::ofValue(v)));
  ApplyPtr node = op->makeNode(vars);
  std::vector<const Tensor*> ins;
  for (const Tensor& v : values) ins.push_back(&v);
  Tensor out;
  Tensor* outs[] = {&out};
  op->perform(*node, ins, outs);
  return out;
}

}  // namespace

class TestBlasGrad : public QObject {
  Q_OBJECT

 private slots:
  void testDotGrad_data();
  void testDotGrad();
  void testDotRopLop_data();
  void testDotRopLop();
  void testDotGradMixedDtypes();
  void testBlasValues_data();
  void testBlasValues();
  void testBlasGrad_data();
  void testBlasGrad();
  void testInplace();
  void testBetaZeroIgnoresNaN();
  void testStridedOperands();
  void testBlasErrors();
  void testBlasProps();
};

void TestBlasGrad::testDotGrad_data() {
  QTest::addColumn<Shape>("a");
  QTest::addColumn<Shape>("b");
  QTest::addColumn<DType>("dtype");
  const std::vector<std::tuple<const char*, Shape, Shape>> shapes = {
      {"vector . vector", {3}, {3}},
      {"matrix . vector", {2, 3}, {3}},
      {"vector . matrix", {3}, {3, 4}},
      {"matrix . matrix", {2, 3}, {3, 4}},
      {"batch . matrix", {5, 2, 3}, {3, 4}},
      {"matrix . batch", {2, 3}, {5, 3, 4}},
      {"vector . batch", {3}, {5, 3, 4}},
      {"batch . vector", {5, 2, 3}, {3}},
      {"batch . batch", {4, 2, 3}, {4, 3, 5}},
      {"broadcast batch", {2, 1, 3, 4}, {5, 4, 2}},
      {"broadcast 1 vs 4", {1, 2, 3}, {4, 3, 5}},
  };
  for (const auto& [name, a, b] : shapes)
    for (DType dtype : {DType::Float32, DType::Float64})
      QTest::addRow("%s %s", name, std::string(dtypeName(dtype)).c_str()) << a << b << dtype;
}

void TestBlasGrad::testDotGrad() {
  QFETCH(Shape, a);
  QFETCH(Shape, b);
  QFETCH(DType, dtype);
  TSCOPE_CHECK(
      verifyGrad([](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; },
                 {randomTensor(dtype, a, 1), randomTensor(dtype, b, 2)}));
}

void TestBlasGrad::testDotRopLop_data() {
  testDotGrad_data();
}

void TestBlasGrad::testDotRopLop() {
  QFETCH(Shape, a);
  QFETCH(Shape, b);
  QFETCH(DType, dtype);
  TSCOPE_CHECK(
      checkRopLop([](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; },
                  {randomTensor(dtype, a, 1), randomTensor(dtype, b, 2)}));
  // Dot has its own pushforward, dot(tA, B) + dot(A, tB); a fixed input drops its term.
  const VarPtr x = Variable::create(TensorType(dtype, a)),
               y = Variable::create(TensorType(dtype, b));
  const VarPtr d = dot(x, y);
  const auto pf = d->owner()->op().pushforward(*d->owner(), std::vector<VarPtr>{x, nullptr});
  QVERIFY(pf.has_value());
  QCOMPARE((*pf)[0]->type().shape(), d->type().shape());
}

void TestBlasGrad::testDotGradMixedDtypes() {
  // int32 . float32 -> float64: the float input's gradient comes back in float32, the integer
  // input is disconnected.
  const VarPtr i = Variable::create(TensorType(DType::Int32, {2, 3}), "i");
  const VarPtr f = Variable::create(TensorType(DType::Float32, {3, 4}), "f");
  const VarPtr d = dot(i, f);
  const auto grads = d->owner()->op().pullback(*d->owner(), std::vector<VarPtr>{onesLike(d)});
  QVERIFY(grads[0].kind == Grad::Kind::Disconnected);
  QVERIFY(grads[1].isValue());
  QCOMPARE(grads[1].value->type().dtype(), DType::Float32);
  const Tensor iv = randomTensor(DType::Int32, {2, 3}, 5, -3, 3);
  const auto g = evaluate({i, f}, {grads[1].value}, {iv, randomTensor(DType::Float32, {3, 4}, 6)});
  // d sum(i . f) / d f[k, j] = sum_r i[r, k].
  for (std::int64_t k = 0; k < 3; ++k) QCOMPARE(g[0].at({k, 1}), iv.at({0, k}) + iv.at({1, k}));
}

void TestBlasGrad::testBlasValues_data() {
  QTest::addColumn<QString>("which");
  QTest::addColumn<DType>("dtype");
  for (const char* w : {"gemm", "gemv", "ger"})
    for (DType dtype : {DType::Float32, DType::Float64})
      QTest::addRow("%s %s", w, std::string(dtypeName(dtype)).c_str()) << QString(w) << dtype;
}

void TestBlasGrad::testBlasValues() {
  QFETCH(QString, which);
  QFETCH(DType, dtype);
  const std::string w = which.toStdString();
  const auto points = blasPoints(w, dtype);
  const auto got = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector{blasExpr(w, in), dotExpr(w, in)};
      },
      points);
  QVERIFY(closeTo(got[0], got[1], 1e-5, 1e-6));
  // And against the naive loop.
  Tensor want;
  if (w == "ger") {
    want = points[0].astype(DType::Float64);
    for (std::int64_t r = 0; r < 2; ++r)
      for (std::int64_t c = 0; c < 3; ++c)
        want.set({r, c}, want.at({r, c}) + 1.5 * points[2].at({r}) * points[3].at({c}));
  } else {
    const Tensor p = referenceMatmul(points[2], points[3], DType::Float64);
    want = Tensor::fromDoubles(DType::Float64, p.shape(), [&] {
      std::vector<double> v = p.toDoubles(), z = points[0].toDoubles();
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.5 * v[i] - 0.5 * z[i];
      return v;
    }());
  }
  QVERIFY(closeTo(got[0], want.astype(dtype), 1e-5, 1e-6));
  TSCOPE_CHECK(checkInferShape(
      [&](const std::vector<VarPtr>& in) { return std::vector{blasExpr(w, in)}; }, points));
}

void TestBlasGrad::testBlasGrad_data() {
  testBlasValues_data();
}

void TestBlasGrad::testBlasGrad() {
  QFETCH(QString, which);
  QFETCH(DType, dtype);
  const std::string w = which.toStdString();
  // Every input, alpha and beta included.
  TSCOPE_CHECK(
      verifyGrad([&](const std::vector<VarPtr>& in) { return std::vector{blasExpr(w, in)}; },
                 blasPoints(w, dtype)));
  // The gradients are those of the dot expression.
  const auto points = blasPoints(w, dtype);
  const auto in = inputsLike(points);
  const VarPtr weights =
      Variable::create(TensorType(dtype, std::vector<std::int64_t>(points[0].ndim(), kUnknownDim)));
  const VarPtr c1 = sum(blasExpr(w, in) * weights), c2 = sum(dotExpr(w, in) * weights);
  std::vector<VarPtr> ins = in;
  ins.push_back(weights);
  std::vector<Tensor> vals = points;
  vals.push_back(randomTensor(dtype, points[0].shape(), 9));
  const auto g1 = evaluate(ins, grad(c1, in), vals), g2 = evaluate(ins, grad(c2, in), vals);
  for (std::size_t i = 0; i < g1.size(); ++i) QVERIFY(closeTo(g1[i], g2[i], 1e-4, 1e-5));
}

void TestBlasGrad::testInplace() {
  // Gemm{inplace} writes into Z's buffer and returns it (destroyMap {0: [0]}); no_inplace leaves Z.
  const auto points = blasPoints("gemm", DType::Float64);
  const Tensor expectedOut = performOn(std::make_shared<Gemm>(false), points);
  Tensor z = points[0].clone();
  const Tensor zBefore = z.clone();
  std::vector<Tensor> vals = points;
  vals[0] = z;
  Tensor out = performOn(std::make_shared<Gemm>(false), vals);
  QVERIFY(!out.sharesStorageWith(z));
  QVERIFY(z.bitwiseEqual(zBefore));
  out = performOn(std::make_shared<Gemm>(true), vals);
  QVERIFY(out.sharesStorageWith(z));
  QVERIFY(closeTo(z, expectedOut, 1e-12, 1e-12));
  for (const char* w : {"gemv", "ger"}) {
    auto p = blasPoints(w, DType::Float32);
    const OpPtr plain = w == std::string("gemv") ? OpPtr(std::make_shared<Gemv>(false))
                                                 : OpPtr(std::make_shared<Ger>(false));
    const OpPtr inplace = w == std::string("gemv") ? OpPtr(std::make_shared<Gemv>(true))
                                                   : OpPtr(std::make_shared<Ger>(true));
    const Tensor want = performOn(plain, p);
    p[0] = p[0].clone();
    const Tensor got = performOn(inplace, p);
    QVERIFY(got.sharesStorageWith(p[0]));
    QVERIFY(closeTo(p[0], want, 1e-6, 1e-6));
    QCOMPARE(inplace->destroyMap(), (DestroyMap{{0, {0}}}));
    QVERIFY(plain->destroyMap().empty());
  }
  // Z that is also an operand (Z is X, square): the operand is read before Z is overwritten.
  const Tensor sq = randomTensor(DType::Float64, {3, 3}, 4);
  Tensor zz = sq.clone();
  const Tensor want = performOn(std::make_shared<Gemm>(false),
                                {zz, scalar(DType::Float64, 1), zz, sq, scalar(DType::Float64, 1)});
  performOn(std::make_shared<Gemm>(true),
            {zz, scalar(DType::Float64, 1), zz, sq, scalar(DType::Float64, 1)});
  QVERIFY(closeTo(zz, want, 1e-12, 1e-12));
}

void TestBlasGrad::testBetaZeroIgnoresNaN() {
  auto points = blasPoints("gemm", DType::Float32);
  points[0] = Tensor::full(DType::Float32, {2, 4}, std::nan(""));
  points[4] = scalar(DType::Float32, 0);
  const Tensor out = performOn(std::make_shared<Gemm>(false), points);
  for (double v : out.toDoubles()) QVERIFY(std::isfinite(v));
  auto v = blasPoints("gemv", DType::Float64);
  v[0] = Tensor::full(DType::Float64, {2}, std::nan(""));
  v[4] = scalar(DType::Float64, 0);
  for (double x : performOn(std::make_shared<Gemv>(true), v).toDoubles()) QVERIFY(std::isfinite(x));
}

void TestBlasGrad::testStridedOperands() {
  // Transposed X and Y, and a transposed (column-major) Z written in place.
  const Tensor xt = randomTensor(DType::Float64, {3, 2}, 1),
               yt = randomTensor(DType::Float64, {4, 3}, 2);
  Tensor zt = randomTensor(DType::Float64, {4, 2}, 3);
  const std::vector<Tensor> contiguous = {zt.transpose().contiguous(), scalar(DType::Float64, 2),
                                          xt.transpose().contiguous(), yt.transpose().contiguous(),
                                          scalar(DType::Float64, 3)};
  const Tensor want = performOn(std::make_shared<Gemm>(false), contiguous);
  const Tensor got = performOn(std::make_shared<Gemm>(false),
                               {zt.transpose(), scalar(DType::Float64, 2), xt.transpose(),
                                yt.transpose(), scalar(DType::Float64, 3)});
  QVERIFY(closeTo(got, want, 1e-12, 1e-12));
  performOn(std::make_shared<Gemm>(true),
            {zt.transpose(), scalar(DType::Float64, 2), xt.transpose(), yt.transpose(),
             scalar(DType::Float64, 3)});
  QVERIFY(closeTo(zt.transpose(), want, 1e-12, 1e-12));
  // A sliced Z (row stride 2) in place goes through a packed buffer.
  Tensor wide = randomTensor(DType::Float64, {2, 8}, 5);
  const Tensor zs = wide.slice(1, 0, 8, 2);
  const Tensor want2 = performOn(std::make_shared<Gemm>(false),
                                 {zs.contiguous(), scalar(DType::Float64, 2), xt.transpose(),
                                  yt.transpose(), scalar(DType::Float64, 3)});
  performOn(std::make_shared<Gemm>(true), {zs, scalar(DType::Float64, 2), xt.transpose(),
                                           yt.transpose(), scalar(DType::Float64, 3)});
  QVERIFY(closeTo(zs, want2, 1e-12, 1e-12));
}

void TestBlasGrad::testBlasErrors() {
  auto v = [](DType d, std::vector<std::int64_t> s, const char* name) {
    return Variable::create(TensorType(d, std::move(s)), name);
  };
  const DType f = DType::Float32;
  std::string msg = message([&] {
    gemm(v(f, {2, 4}, "Z"), v(f, {}, "a"), v(DType::Float64, {2, 3}, "X"), v(f, {3, 4}, "Y"),
         v(f, {}, "b"));
  });
  QVERIFY2(msg.find("Gemm{no_inplace}: input 2 ('X'): expected a 2-d float32 tensor (X), found "
                    "TensorType(float64, (2, 3))") != std::string::npos,
           msg.c_str());
  msg = message([&] {
    gemm(v(f, {2, 4}, "Z"), v(f, {1}, "a"), v(f, {2, 3}, "X"), v(f, {3, 4}, "Y"), v(f, {}, "b"));
  });
  QVERIFY2(msg.find("expected a 0-d float32 tensor (alpha)") != std::string::npos, msg.c_str());
  msg = message([&] {
    gemm(v(f, {2, 4}, "Z"), v(f, {}, "a"), v(f, {2, 3}, "X"), v(f, {5, 4}, "Y"), v(f, {}, "b"));
  });
  QVERIFY2(
      msg.find("X TensorType(float32, (2, 3)), Y TensorType(float32, (5, 4))") != std::string::npos,
      msg.c_str());
  msg = message([&] {
    gemv(v(DType::Int32, {2}, "y"), v(f, {}, "a"), v(f, {2, 3}, "A"), v(f, {3}, "x"),
         v(f, {}, "b"));
  });
  QVERIFY2(msg.find("expected a float32 or float64 tensor (y)") != std::string::npos, msg.c_str());
  msg = message([&] {
    gemv(v(f, {2}, "y"), v(f, {}, "a"), v(f, {2, 3}, "A"), v(f, {4}, "x"), v(f, {}, "b"));
  });
  QVERIFY2(msg.find("(3 vs 4)") != std::string::npos, msg.c_str());
  msg = message([&] { ger(v(f, {2, 3}, "A"), v(f, {}, "a"), v(f, {3}, "x"), v(f, {3}, "y")); });
  QVERIFY2(
      msg.find("A TensorType(float32, (2, 3)), x TensorType(float32, (3,))") != std::string::npos,
      msg.c_str());
  // Runtime shapes that do not fit are named.
  const OpPtr op = std::make_shared<Gemm>(false);
  const VarPtr u = v(f, {kUnknownDim, kUnknownDim}, "u");
  msg = message([&] {
    evaluate({u}, {gemm(u, constant(1.0, f), u, u, constant(1.0, f))}, {Tensor::zeros(f, {2, 3})});
  });
  QVERIFY2(msg.find("Z (2, 3), X (2, 3), Y (2, 3)") != std::string::npos, msg.c_str());
}

void TestBlasGrad::testBlasProps() {
  const OpRegistry& registry = defaultOpRegistry();
  for (const char* name : {"Gemm", "Gemv", "Ger"})
    for (bool inplace : {false, true}) {
      const OpPtr op = registry.make(name, {{"inplace", inplace}});
      QCOMPARE(op->name(), std::string(name));
      QCOMPARE(op->str(), std::string(name) + (inplace ? "{inplace}" : "{no_inplace}"));
      QVERIFY(registry.make(name, op->props())->equals(*op));
      QCOMPARE(op->destroyMap().empty(), !inplace);
    }
  QVERIFY(!Gemm(true).equals(Gemm(false)));
  QVERIFY(!Gemm(false).equals(Gemv(false)));
  std::string msg = message([&] { registry.make("Gemm", {{"inplace", 1}}); });
  QVERIFY2(msg.find("\"inplace\" must be true or false") != std::string::npos, msg.c_str());
  msg = message([&] { registry.make("Ger", {{"destructive", true}}); });
  QVERIFY2(msg.find("unknown prop \"destructive\"") != std::string::npos, msg.c_str());
  QCOMPARE(registry.make("Gemv", nlohmann::json::object())->str(), std::string("Gemv{no_inplace}"));
}

TSCOPE_TEST_MAIN(TestBlasGrad)
#include "tst_blas_grad.moc"
