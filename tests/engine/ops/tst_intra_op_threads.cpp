// The engine's intra-op thread count (engine/backends/cpu/threads.h): the setter reaches OpenBLAS
// and oneDNN, and a convolution and a matrix product give the same values on one thread and on
// several (Note [Deterministic threads]: equal up to the rounding of a reblocked sum).
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/threads.h"
#include "engine/compile/function.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/conv2d.h"
#include "op_test_support.h"
#include "test_main.h"

#include <filesystem>

using namespace tscope::test;

class TestIntraOpThreads : public QObject {
  Q_OBJECT

 private slots:
  void cleanup() { cpu::setIntraOpThreads(cpu::availableCpus()); }
  void testOneThreadStartsNoWorkers();  // first: it needs a process no convolution ran in yet
  void testSetter();
  void testSameValuesOnMoreThreads();
  void testSmallProductKeepsTheCount();
};

namespace {
int threadsOfThisProcess() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}
}  // namespace

// Note [oneDNN threads per plan] (dnnl_conv.cpp): at one intra-op thread the process's first
// convolution starts no OpenMP worker. Its plan used to be made at OpenMP's default count (every
// CPU) and kept it, so it ran on two threads with TSCOPE_NUM_THREADS=1.
void TestIntraOpThreads::testOneThreadStartsNoWorkers() {
  if (cpu::availableCpus() < 2) QSKIP("one CPU: OpenMP's default is one thread already");
  if (!std::filesystem::exists("/proc/self/task")) QSKIP("no /proc/self/task to count threads");
  cpu::setIntraOpThreads(1);
  const Tensor x = randomTensor(DType::Float32, {1, 8, 24, 24}, 5),
               w = randomTensor(DType::Float32, {16, 8, 3, 3}, 6);
  const VarPtr xv = Variable::create(TensorType(DType::Float32, x.shape()), "x");
  Conv2dParams p;
  p.padding = {1, 1};
  Function f = compile({xv}, {conv2d(xv, constant(w), p)});
  const int before = threadsOfThisProcess();
  for (int i = 0; i < 3; ++i) f({x});
  QCOMPARE(threadsOfThisProcess(), before);
}

void TestIntraOpThreads::testSetter() {
  QVERIFY(cpu::availableCpus() >= 1);
  QVERIFY(cpu::intraOpThreads() >= 1);
  cpu::setIntraOpThreads(3);
  QCOMPARE(cpu::intraOpThreads(), 3);
  if (cpu::gemmBackendName().find("OpenBLAS") != std::string::npos) QCOMPARE(cpu::gemmThreads(), 3);
  cpu::setIntraOpThreads(0);  // clamped
  QCOMPARE(cpu::intraOpThreads(), 1);
}

void TestIntraOpThreads::testSameValuesOnMoreThreads() {
  const Tensor x = randomTensor(DType::Float32, {2, 16, 20, 20}, 1),
               w = randomTensor(DType::Float32, {32, 16, 3, 3}, 2),
               a = randomTensor(DType::Float32, {300, 200}, 3),
               b = randomTensor(DType::Float32, {200, 250}, 4);
  const VarPtr xv = Variable::create(TensorType(DType::Float32, x.shape()), "x");
  const VarPtr av = Variable::create(TensorType(DType::Float32, a.shape()), "a");
  Conv2dParams p;
  p.padding = {1, 1};
  Function f = compile({xv, av}, {conv2d(xv, constant(w), p), dot(av, constant(b))});
  cpu::setIntraOpThreads(1);
  const std::vector<Tensor> one = f({x, a});
  cpu::setIntraOpThreads(4);
  const std::vector<Tensor> four = f({x, a});
  QVERIFY(closeTo(four[0], one[0], 1e-6, 1e-6));
  QVERIFY(closeTo(four[1], one[1], 1e-5, 1e-5));  // OpenBLAS reblocks the sum
}

// Note [Small products on one thread] (gemm.cpp): a classifier-sized product runs with OpenBLAS
// at one thread and gives the engine's count back after it, with the same values.
void TestIntraOpThreads::testSmallProductKeepsTheCount() {
  const Tensor a = randomTensor(DType::Float32, {1, 512}, 7),
               b = randomTensor(DType::Float32, {512, 1000}, 8);
  const VarPtr av = Variable::create(TensorType(DType::Float32, a.shape()), "a");
  Function f = compile({av}, {dot(av, constant(b))});
  cpu::setIntraOpThreads(1);
  const Tensor one = f({a})[0];
  cpu::setIntraOpThreads(2);
  const Tensor two = f({a})[0];
  QVERIFY(closeTo(two, one, 1e-6, 1e-6));
  QCOMPARE(cpu::intraOpThreads(), 2);
  if (cpu::gemmBackendName().find("OpenBLAS") != std::string::npos) QCOMPARE(cpu::gemmThreads(), 2);
}

TSCOPE_TEST_MAIN(TestIntraOpThreads)
#include "tst_intra_op_threads.moc"
