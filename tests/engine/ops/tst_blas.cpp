// Dot (numpy's matmul): values against a naive triple loop for every rank combination, batched
// with broadcast batch axes, float32/float64/float16/int32 and mixed dtypes; strided inputs
// (transposed, sliced, broadcast views); zero-size dimensions; inferShape; outer and matmul; bad
// inputs. Also the CPU GEMM kernel itself (all transpose combinations, beta, k = 0).
#include "engine/backends/cpu/gemm.h"
#include "engine/graph/errors.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
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

double tolFor(DType d) {
  return d == DType::Float16 ? 1e-2 : d == DType::Float32 ? 1e-5 : 1e-12;
}

void addRankRows() {
  QTest::addColumn<Shape>("a");
  QTest::addColumn<Shape>("b");
  QTest::addColumn<Shape>("expected");
  QTest::newRow("vector . vector") << Shape{3} << Shape{3} << Shape{};
  QTest::newRow("matrix . vector") << Shape{2, 3} << Shape{3} << Shape{2};
  QTest::newRow("vector . matrix") << Shape{3} << Shape{3, 4} << Shape{4};
  QTest::newRow("matrix . matrix") << Shape{2, 3} << Shape{3, 4} << Shape{2, 4};
  QTest::newRow("batch . matrix") << Shape{5, 2, 3} << Shape{3, 4} << Shape{5, 2, 4};
  QTest::newRow("matrix . batch") << Shape{2, 3} << Shape{5, 3, 4} << Shape{5, 2, 4};
  QTest::newRow("vector . batch") << Shape{3} << Shape{5, 3, 4} << Shape{5, 4};
  QTest::newRow("batch . vector") << Shape{5, 2, 3} << Shape{3} << Shape{5, 2};
  QTest::newRow("batch . batch") << Shape{4, 2, 3} << Shape{4, 3, 5} << Shape{4, 2, 5};
  QTest::newRow("broadcast batch") << Shape{2, 1, 3, 4} << Shape{5, 4, 2} << Shape{2, 5, 3, 2};
  QTest::newRow("broadcast 1 vs 4") << Shape{1, 2, 3} << Shape{4, 3, 5} << Shape{4, 2, 5};
  QTest::newRow("4-d . 4-d") << Shape{2, 3, 2, 3} << Shape{2, 1, 3, 4} << Shape{2, 3, 2, 4};
}

}  // namespace

class TestBlas : public QObject {
  Q_OBJECT

 private slots:
  void testDotValues_data();
  void testDotValues();
  void testDotDtypes();
  void testDotStrided_data();
  void testDotStrided();
  void testDotZeroSize();
  void testDotInferShape_data();
  void testDotInferShape();
  void testDotErrors();
  void testOuterAndMatmul();
  void testGemmKernel_data();
  void testGemmKernel();
  void testGemmKernelBetaAndEmpty();
};

void TestBlas::testDotValues_data() {
  addRankRows();
}

void TestBlas::testDotValues() {
  QFETCH(Shape, a);
  QFETCH(Shape, b);
  QFETCH(Shape, expected);
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Float16}) {
    const Tensor x = randomTensor(dtype, a, 1, -3, 3), y = randomTensor(dtype, b, 2, -3, 3);
    const auto got = evaluate(
        [](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; }, {x, y});
    QCOMPARE(got[0].shape(), expected);
    QVERIFY2(closeTo(got[0], referenceMatmul(x, y, dtype), tolFor(dtype), tolFor(dtype)),
             dtypeName(dtype).data());
  }
}

void TestBlas::testDotDtypes() {
  // Mixed dtypes promote as numpy's matmul: int32 . float32 -> float64.
  const Tensor i = randomTensor(DType::Int32, {2, 3}, 3, -4, 4);
  const Tensor f = randomTensor(DType::Float32, {3, 4}, 4);
  auto got = evaluate([](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; },
                      {i, f});
  QVERIFY(closeTo(got[0], referenceMatmul(i, f, DType::Float64), 1e-6, 1e-6));
  // Integer products wrap on overflow as numpy's do (int8: 100 * 3 = 300 -> 44).
  const Tensor a = Tensor::fromDoubles(DType::Int8, {1, 1}, {100});
  const Tensor b = Tensor::fromDoubles(DType::Int8, {1, 2}, {3, 1});
  got = evaluate([](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; },
                 {a, b});
  QCOMPARE(got[0].dtype(), DType::Int8);
  QCOMPARE(got[0].at({0, 0}), 44.0);
  QCOMPARE(got[0].at({0, 1}), 100.0);
  const Tensor big = Tensor::full(DType::Int64, {2, 3}, 1e12);
  const Tensor ones = Tensor::full(DType::Int64, {3, 2}, 1e6);
  got = evaluate([](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; },
                 {big, ones});
  QCOMPARE(got[0].at({1, 1}), 3e18);
}

void TestBlas::testDotStrided_data() {
  QTest::addColumn<QString>("view");
  for (const char* v :
       {"a transposed", "b transposed", "both transposed", "batch transposed", "sliced inner",
        "sliced rows", "reversed", "broadcast rows", "vector strided", "sequence first",
        "sequence first, rows apart", "unit rows strided"})
    QTest::newRow(v) << QString(v);
}

void TestBlas::testDotStrided() {
  QFETCH(QString, view);
  // Every case is a view that is not contiguous; the kernel takes column-major views as transposed
  // operands and packs the rest.
  Tensor a, b;
  if (view == "a transposed") {
    a = randomTensor(DType::Float64, {3, 2}, 1).transpose();
    b = randomTensor(DType::Float64, {3, 4}, 2);
  } else if (view == "b transposed") {
    a = randomTensor(DType::Float64, {2, 3}, 1);
    b = randomTensor(DType::Float64, {4, 3}, 2).transpose();
  } else if (view == "both transposed") {
    a = randomTensor(DType::Float32, {3, 2}, 1).transpose();
    b = randomTensor(DType::Float32, {4, 3}, 2).transpose();
  } else if (view == "batch transposed") {
    const int perm[] = {0, 2, 1};
    a = randomTensor(DType::Float64, {5, 3, 2}, 1).transpose(perm);
    b = randomTensor(DType::Float64, {3, 4}, 2);
  } else if (view == "sliced inner") {
    a = randomTensor(DType::Float64, {2, 6}, 1).slice(1, 0, 6, 2);
    b = randomTensor(DType::Float64, {3, 8}, 2).slice(1, 1, 8, 2);
  } else if (view == "sliced rows") {
    a = randomTensor(DType::Float32, {5, 3}, 1).slice(0, 0, 5, 2);
    b = randomTensor(DType::Float32, {3, 9}, 2).slice(1, 2, 6);
  } else if (view == "reversed") {
    a = randomTensor(DType::Float64, {2, 3}, 1).slice(1, 2, -4, -1);
    b = randomTensor(DType::Float64, {4, 3, 4}, 2).slice(0, 3, -5, -1);
  } else if (view == "sequence first") {
    // (T, 1, D) read through a transpose of (1, T, D): its unit axis has stride T*D; the stack
    // folds into one (T, D) . (D, H) product whose row step is D.
    const int perm[] = {1, 0, 2};
    a = randomTensor(DType::Float32, {1, 7, 5}, 1).transpose(perm);
    b = randomTensor(DType::Float32, {5, 4}, 2);
  } else if (view == "sequence first, rows apart") {
    // (T, 2, D) from (2, T, D): the rows of one batch element are not one step apart, no fold.
    const int perm[] = {1, 0, 2};
    a = randomTensor(DType::Float32, {2, 7, 5}, 1).transpose(perm);
    b = randomTensor(DType::Float32, {5, 4}, 2);
  } else if (view == "unit rows strided") {
    // (3, 1, 4, D) with every other row of a (3, 1, 8, D) tensor: batch step 8*D, row step 2*D.
    a = randomTensor(DType::Float32, {3, 1, 8, 5}, 1).slice(2, 0, 8, 2);
    b = randomTensor(DType::Float32, {5, 6}, 2);
  } else if (view == "broadcast rows") {
    a = randomTensor(DType::Float64, {1, 3}, 1).broadcastTo({2, 3});
    b = randomTensor(DType::Float64, {3, 1}, 2).broadcastTo({3, 4});
  } else {
    a = randomTensor(DType::Float64, {6}, 1).slice(0, 0, 6, 2);
    b = randomTensor(DType::Float64, {2, 3}, 2).transpose();
  }
  // A unit axis's stride does not count against contiguity: "sequence first" is contiguous, yet its
  // stride on the unit axis is not what a packed (T, 1, D) tensor would have.
  QVERIFY(!a.isContiguous() || !b.isContiguous() || view == "sequence first");
  const Tensor got = performOn(std::make_shared<Dot>(), {a, b});
  QVERIFY(
      closeTo(got, referenceMatmul(a, b, got.dtype()), tolFor(got.dtype()), tolFor(got.dtype())));
}

void TestBlas::testDotZeroSize() {
  // k = 0: a sum of nothing is 0; m = 0 or a batch of 0: an empty result.
  const std::vector<std::tuple<Shape, Shape, Shape>> cases = {{{2, 0}, {0, 3}, {2, 3}},
                                                              {{0, 3}, {3, 4}, {0, 4}},
                                                              {{0, 2, 3}, {3, 4}, {0, 2, 4}},
                                                              {{0}, {0}, {}}};
  for (const auto& [sa, sb, so] : cases) {
    const auto got =
        evaluate([](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; },
                 {Tensor::zeros(DType::Float32, sa), Tensor::zeros(DType::Float32, sb)});
    QCOMPARE(got[0].shape(), so);
    QVERIFY(closeTo(got[0], Tensor::zeros(DType::Float32, so)));
  }
}

void TestBlas::testDotInferShape_data() {
  addRankRows();
}

void TestBlas::testDotInferShape() {
  QFETCH(Shape, a);
  QFETCH(Shape, b);
  QFETCH(Shape, expected);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    // Some cases (batch . batch) have equal sizes on different axes by design.
    InferShapeOptions options;
    options.warnOnSquareInputs = false;
    TSCOPE_CHECK(checkInferShape(
        [](const std::vector<VarPtr>& in) { return std::vector{dot(in[0], in[1])}; },
        {randomTensor(dtype, a, 1), randomTensor(dtype, b, 2)}, options));
  }
  // Unknown batch sizes on both sides: the larger is the broadcast size at run time.
  const VarPtr x = Variable::create(TensorType(DType::Float64, {kUnknownDim, 2, 3}));
  const VarPtr y = Variable::create(TensorType(DType::Float64, {kUnknownDim, 3, 4}));
  const VarPtr d = dot(x, y);
  const auto shapes = inferShapes({d});
  const auto got = evaluate(
      {x, y}, shapes[0],
      {randomTensor(DType::Float64, {1, 2, 3}, 1), randomTensor(DType::Float64, {5, 3, 4}, 2)});
  QCOMPARE(got[0].item(), 5.0);
}

void TestBlas::testDotErrors() {
  const VarPtr a = Variable::create(TensorType(DType::Float32, {2, 3}), "a");
  const VarPtr b = Variable::create(TensorType(DType::Float32, {4, 5}), "b");
  std::string msg = message([&] { dot(a, b); });
  QVERIFY2(msg.find("TensorType(float32, (2, 3))") != std::string::npos, msg.c_str());
  QVERIFY2(msg.find("TensorType(float32, (4, 5))") != std::string::npos, msg.c_str());
  QVERIFY2(msg.find("3 vs 4") != std::string::npos, msg.c_str());
  // Unknown dimensions that disagree at run time: both runtime shapes are named.
  const VarPtr u = Variable::create(TensorType(DType::Float32, {kUnknownDim, kUnknownDim}), "u");
  const VarPtr v = Variable::create(TensorType(DType::Float32, {kUnknownDim, kUnknownDim}), "v");
  msg = message([&] {
    evaluate({u, v}, {dot(u, v)},
             {Tensor::zeros(DType::Float32, {2, 3}), Tensor::zeros(DType::Float32, {4, 5})});
  });
  QVERIFY2(
      msg.find("(2, 3) . (4, 5)") != std::string::npos && msg.find("3 vs 4") != std::string::npos,
      msg.c_str());
  const VarPtr p = Variable::create(TensorType(DType::Float32, {kUnknownDim, 2, 3}), "p");
  const VarPtr q = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3, 4}), "q");
  msg = message([&] {
    evaluate({p, q}, {dot(p, q)},
             {Tensor::zeros(DType::Float32, {2, 2, 3}), Tensor::zeros(DType::Float32, {3, 3, 4})});
  });
  QVERIFY2(msg.find("batch") != std::string::npos &&
               msg.find("(2, 2, 3) . (3, 3, 4)") != std::string::npos,
           msg.c_str());
  msg = message([&] { outer(a, Variable::create(TensorType(DType::Float32, {3}))); });
  QVERIFY2(msg.find("outer: expected two vectors, found TensorType(float32, (2, 3))") !=
               std::string::npos,
           msg.c_str());
}

void TestBlas::testOuterAndMatmul() {
  const Tensor x = randomTensor(DType::Float64, {2}, 1), y = randomTensor(DType::Float64, {3}, 2);
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{outer(in[0], in[1]), matmul(in[0], outer(in[0], in[1]))};
      },
      {x, y});
  QCOMPARE(got[0].shape(), (Shape{2, 3}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) QCOMPARE(got[0].at({i, j}), x.at({i}) * y.at({j}));
  QVERIFY(closeTo(got[1], referenceMatmul(x, got[0], DType::Float64), 1e-12, 1e-12));
  const VarPtr a = Variable::create(TensorType(DType::Float32, {2, 3}));
  QVERIFY(matmul(a, transpose(a))->owner()->op().equals(Dot()));
}

void TestBlas::testGemmKernel_data() {
  QTest::addColumn<bool>("transA");
  QTest::addColumn<bool>("transB");
  for (bool ta : {false, true})
    for (bool tb : {false, true}) QTest::addRow("%s%s", ta ? "T" : "N", tb ? "T" : "N") << ta << tb;
}

void TestBlas::testGemmKernel() {
  QFETCH(bool, transA);
  QFETCH(bool, transB);
  // C (3x5, ldc 7) = 2 * op(A) op(B) + 0.5 * C with padded leading dimensions everywhere.
  const std::int64_t m = 3, n = 5, k = 4, lda = transA ? m + 2 : k + 1,
                     ldb = transB ? k + 3 : n + 1, ldc = 7;
  std::vector<double> A(static_cast<std::size_t>((transA ? k : m) * lda)),
      B(static_cast<std::size_t>((transB ? n : k) * ldb));
  std::vector<double> C(static_cast<std::size_t>(m * ldc));
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = std::sin(static_cast<double>(i));
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = std::cos(static_cast<double>(i));
  for (std::size_t i = 0; i < C.size(); ++i) C[i] = static_cast<double>(i % 5);
  auto a = [&](std::int64_t i, std::int64_t p) {
    return transA ? A[static_cast<std::size_t>(p * lda + i)]
                  : A[static_cast<std::size_t>(i * lda + p)];
  };
  auto b = [&](std::int64_t p, std::int64_t j) {
    return transB ? B[static_cast<std::size_t>(j * ldb + p)]
                  : B[static_cast<std::size_t>(p * ldb + j)];
  };
  std::vector<double> want = C;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a(i, p) * b(p, j);
      want[static_cast<std::size_t>(i * ldc + j)] =
          2 * s + 0.5 * C[static_cast<std::size_t>(i * ldc + j)];
    }
  cpu::gemm(transA, transB, m, n, k, 2.0, A.data(), lda, B.data(), ldb, 0.5, C.data(), ldc);
  for (std::size_t i = 0; i < C.size(); ++i) QVERIFY(std::abs(C[i] - want[i]) < 1e-12);
  // float: the same through the other overload.
  std::vector<float> Af(A.begin(), A.end()), Bf(B.begin(), B.end()), Cf(C.size(), 0.0f);
  cpu::gemm(transA, transB, m, n, k, 1.0f, Af.data(), lda, Bf.data(), ldb, 0.0f, Cf.data(), ldc);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a(i, p) * b(p, j);
      QVERIFY(std::abs(Cf[static_cast<std::size_t>(i * ldc + j)] - s) < 1e-5);
    }
}

void TestBlas::testGemmKernelBetaAndEmpty() {
  // beta = 0 ignores C's old contents, NaN included (BLAS semantics).
  std::vector<float> A = {1, 2, 3, 4, 5, 6}, B = {1, 0, 0, 1, 1, 1}, C(4, std::nanf(""));
  cpu::gemm(false, false, 2, 2, 3, 1.0f, A.data(), 3, B.data(), 2, 0.0f, C.data(), 2);
  QCOMPARE(C, (std::vector<float>{4, 5, 10, 11}));
  // k = 0: C = beta * C.
  std::vector<double> D = {1, 2, 3, 4};
  cpu::gemm(false, false, 2, 2, 0, 1.0, nullptr, 1, nullptr, 2, 3.0, D.data(), 2);
  QCOMPARE(D, (std::vector<double>{3, 6, 9, 12}));
  cpu::gemm(false, false, 2, 2, 0, 1.0, nullptr, 1, nullptr, 2, 0.0, D.data(), 2);
  QCOMPARE(D, (std::vector<double>{0, 0, 0, 0}));
  QVERIFY(!cpu::gemmBackendName().empty());
}

TSCOPE_TEST_MAIN(TestBlas)
#include "tst_blas.moc"
