// The engine's parallel loops (Note [Parallel loops] in engine/backends/cpu/parallel.h): every
// element covered once, ranges on whole SIMD vectors, small loops kept on the calling thread,
// exceptions brought back, and elementwise ops and the fused convolutions' activation giving the
// same bits on one thread and on several.
#include "engine/backends/cpu/parallel.h"
#include "engine/backends/cpu/threads.h"
#include "engine/compile/function.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "op_test_support.h"
#include "test_main.h"

#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace tscope::test;

class TestParallelLoops : public QObject {
  Q_OBJECT

 private slots:
  void cleanup() { cpu::setIntraOpThreads(cpu::availableCpus()); }

  void testRangesCoverOnce() {
    for (int threads : {1, 2, 3, 4})
      for (std::int64_t n : {std::int64_t{0}, std::int64_t{5}, std::int64_t{100},
                             std::int64_t{1000}, std::int64_t{100003}}) {
        cpu::setIntraOpThreads(threads);
        std::mutex mutex;
        std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
        std::vector<int> hits(static_cast<std::size_t>(n), 0);
        cpu::parallelFor(n, 100, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
          std::lock_guard lock(mutex);
          ranges.emplace_back(b, e);
        });
        for (int h : hits) QCOMPARE(h, 1);
        const std::size_t most =
            cpu::parallelLoopsAvailable()
                ? std::size_t(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n / 100)))
                : 1;
        QVERIFY(ranges.size() <= most);
        if (n > 0) QVERIFY(!ranges.empty());
        for (const auto& [b, e] : ranges) {
          QVERIFY(b < e);
          QVERIFY2(b % 16 == 0, "a range starts inside a SIMD vector");
        }
      }
  }

  void testSmallLoopStaysOnCaller() {
    cpu::setIntraOpThreads(4);
    std::thread::id ran;
    int calls = 0;
    cpu::parallelFor(cpu::kElementwiseGrain, cpu::kElementwiseGrain,
                     [&](std::int64_t, std::int64_t) {
                       ran = std::this_thread::get_id();
                       ++calls;
                     });
    QCOMPARE(calls, 1);
    QVERIFY(ran == std::this_thread::get_id());
  }

  void testExceptionComesBack() {
    cpu::setIntraOpThreads(2);
    bool thrown = false;
    try {
      cpu::parallelFor(1 << 20, 1 << 10, [](std::int64_t b, std::int64_t) {
        if (b > 0) throw std::runtime_error("range failed");
      });
    } catch (const std::runtime_error& e) {
      thrown = std::string(e.what()) == "range failed";
    }
    // One range starts past 0 only when the loop was split.
    QCOMPARE(thrown, cpu::parallelLoopsAvailable());
  }

  // exp, add and relu over tensors large enough to split: bit for bit the one-thread values
  // whatever the count; a fused convolution's clip too, up to oneDNN's own rounding.
  void testSameBitsOnMoreThreads() {
    const Shape s{3, 8, 61, 67};  // 98 k elements: split into up to 3 ranges
    const VarPtr x = Variable::create(TensorType(DType::Float32, s), "x");
    const VarPtr y = Variable::create(TensorType(DType::Float32, s), "y");
    ConvActivationSpec a{cpu::ConvActivation::Clip, -0.5, 0.5};
    const VarPtr conv = fusedConv2d(x, constant(randomTensor(DType::Float32, {8, 8, 3, 3}, 3)),
                                    constant(randomTensor(DType::Float32, {8}, 4)), {}, a);
    const std::vector<VarPtr> outs{exp(x), add(x, y), relu(x * y), conv};
    CompileOptions options;
    options.mode = Mode::None;
    Function f = compile({x, y}, outs, {}, options);
    const Tensor xv = randomTensor(DType::Float32, s, 1), yv = randomTensor(DType::Float32, s, 2);
    cpu::setIntraOpThreads(1);
    const std::vector<Tensor> one = f({xv, yv});
    for (int threads : {2, 3}) {
      cpu::setIntraOpThreads(threads);
      const std::vector<Tensor> many = f({xv, yv});
      for (std::size_t k = 0; k + 1 < one.size(); ++k)
        QVERIFY2(many[k].bitwiseEqual(one[k]), outs[k]->owner()->op().str().c_str());
      // oneDNN may reblock the convolution's sums for another count (Note [Deterministic
      // threads]); the clip after it is ours.
      QVERIFY(closeTo(many.back(), one.back(), 1e-5, 1e-6));
    }
  }
};

TSCOPE_TEST_MAIN(TestParallelLoops)
#include "tst_parallel_loops.moc"
