// Float32 products through oneDNN's matmul (engine/backends/cpu/dnnl_matmul.h, Note [oneDNN
// products]): every transpose combination with leading dimensions wider than the matrices, alpha
// and beta (beta 0 ignoring NaN in C, 1 and 0.5 adding), against a float64 reference; the products
// it leaves to BLAS; the same bits at one and two threads; and cpu::gemm taking that path.
#include "engine/backends/cpu/dnnl_matmul.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/threads.h"
#include "test_main.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace tscope::engine;

namespace {

std::vector<float> randomVector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// C = alpha op(A) op(B) + beta C in float64.
std::vector<double> reference(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                              double alpha, const std::vector<float>& A, std::int64_t lda,
                              const std::vector<float>& B, std::int64_t ldb, double beta,
                              const std::vector<float>& C, std::int64_t ldc) {
  std::vector<double> out(static_cast<std::size_t>(m * ldc));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p)
        s += double(ta ? A[p * lda + i] : A[i * lda + p]) *
             double(tb ? B[j * ldb + p] : B[p * ldb + j]);
      out[i * ldc + j] = alpha * s + (beta == 0 ? 0.0 : beta * double(C[i * ldc + j]));
    }
  return out;
}

}  // namespace

class TestDnnlGemm : public QObject {
  Q_OBJECT
 private slots:
  void init() {
    if (!cpu::dnnlGemmEnabled()) QSKIP("this build has no oneDNN (or TSCOPE_DNNL_GEMM=0)");
    // Every product to oneDNN, whatever kernel this CPU gives it; testTakesOnlyBrgemm checks the
    // default choice.
    cpu::setDnnlGemmAnyKernel(true);
  }
  void cleanup() { cpu::setDnnlGemmAnyKernel(false); }

  void testMatchesReference_data() {
    QTest::addColumn<bool>("ta");
    QTest::addColumn<bool>("tb");
    QTest::addColumn<double>("alpha");
    QTest::addColumn<double>("beta");
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {-0.25, 1.0}, {2.0, 0.5}}) {
          const std::string name = std::string(ta ? "At" : "A") + (tb ? " Bt" : " B") + " alpha " +
                                   std::to_string(alpha) + " beta " + std::to_string(beta);
          QTest::newRow(name.c_str()) << ta << tb << alpha << beta;
        }
  }

  void testMatchesReference() {
    QFETCH(bool, ta);
    QFETCH(bool, tb);
    QFETCH(double, alpha);
    QFETCH(double, beta);
    const std::int64_t m = 37, n = 53, k = 71;
    // Stored shapes with a few elements of padding per row.
    const std::int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
    const std::vector<float> A = randomVector(static_cast<std::size_t>((ta ? k : m) * lda), 1);
    const std::vector<float> B = randomVector(static_cast<std::size_t>((tb ? n : k) * ldb), 2);
    std::vector<float> C = randomVector(static_cast<std::size_t>(m * ldc), 3);
    if (beta == 0) C[5] = std::nanf("");  // beta 0 ignores C, NaN included
    const std::vector<double> expected =
        reference(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    std::vector<float> got = C;
    QVERIFY(cpu::dnnlGemm(ta, tb, m, n, k, float(alpha), A.data(), lda, B.data(), ldb, float(beta),
                          got.data(), ldc));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < ldc; ++j) {
        const std::size_t at = static_cast<std::size_t>(i * ldc + j);
        if (j >= n) {
          QCOMPARE(got[at], C[at]);  // the padding is not written
          continue;
        }
        QVERIFY2(std::abs(got[at] - expected[at]) <= 1e-4 * (1 + std::abs(expected[at])),
                 qPrintable(QString("C[%1][%2] = %3, expected %4")
                                .arg(i)
                                .arg(j)
                                .arg(got[at])
                                .arg(expected[at])));
      }
  }

  void testLeavesTinyAndEmptyProducts() {
    float a[4] = {1, 2, 3, 4}, c[4] = {0, 0, 0, 0};
    QVERIFY(!cpu::dnnlGemm(false, false, 2, 2, 2, 1.f, a, 2, a, 2, 0.f, c, 2));
    QVERIFY(!cpu::dnnlGemm(false, false, 0, 2, 2, 1.f, a, 2, a, 2, 0.f, c, 2));
    QCOMPARE(c[0], 0.f);
    // cpu::gemm still computes them (BLAS).
    cpu::gemm(false, false, 2, 2, 2, 1.f, a, 2, a, 2, 0.f, c, 2);
    QCOMPARE(c[0], 7.f);
    QCOMPARE(c[3], 22.f);
  }

  // By default oneDNN takes a product only where its kernel is brgemm (Note [oneDNN products]);
  // the others go to BLAS through cpu::gemm with the same result.
  void testTakesOnlyBrgemm() {
    cpu::setDnnlGemmAnyKernel(false);
    const std::int64_t m = 64, n = 96, k = 80;
    const std::string kernel = cpu::dnnlGemmKernel(false, false, m, n, k);
    QVERIFY2(!kernel.empty(), "oneDNN names a kernel for a plain product");
    const std::vector<float> A = randomVector(static_cast<std::size_t>(m * k), 6);
    const std::vector<float> B = randomVector(static_cast<std::size_t>(k * n), 7);
    std::vector<float> C(static_cast<std::size_t>(m * n), 0.f);
    const bool taken =
        cpu::dnnlGemm(false, false, m, n, k, 1.f, A.data(), k, B.data(), n, 0.f, C.data(), n);
    QCOMPARE(taken, kernel.starts_with("brg"));
    cpu::gemm(false, false, m, n, k, 1.f, A.data(), k, B.data(), n, 0.f, C.data(), n);
    const std::vector<float> none(C.size());
    const std::vector<double> expected =
        reference(false, false, m, n, k, 1.0, A, k, B, n, 0.0, none, n);
    for (std::size_t i = 0; i < C.size(); ++i)
      QVERIFY(std::abs(C[i] - expected[i]) <= 1e-4 * (1 + std::abs(expected[i])));
  }

  // Each element of C is one thread's dot product: the thread count does not change a bit.
  void testSameBitsAtOneAndTwoThreads() {
    const std::int64_t m = 128, n = 256, k = 192;
    const std::vector<float> A = randomVector(static_cast<std::size_t>(m * k), 4);
    const std::vector<float> B = randomVector(static_cast<std::size_t>(k * n), 5);
    const int before = cpu::intraOpThreads();
    std::vector<float> one(static_cast<std::size_t>(m * n)), two(one.size());
    cpu::setIntraOpThreads(1);
    cpu::gemm(false, false, m, n, k, 1.f, A.data(), k, B.data(), n, 0.f, one.data(), n);
    cpu::setIntraOpThreads(2);
    cpu::gemm(false, false, m, n, k, 1.f, A.data(), k, B.data(), n, 0.f, two.data(), n);
    cpu::setIntraOpThreads(before);
    QVERIFY(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
    QVERIFY(cpu::gemmBackendName().find("oneDNN") != std::string::npos);
  }
};

TSCOPE_TEST_MAIN(TestDnnlGemm)
#include "tst_dnnl_gemm.moc"
