// The engine's parallel loops (Note [Parallel loops] in engine/backends/cpu/parallel.h): every
// element covered once, ranges on whole SIMD vectors, small loops kept on the calling thread,
// exceptions brought back, and the fused convolutions' activation giving the same bits split over
// threads as on one.
#include "engine/backends/cpu/parallel.h"
#include "engine/backends/cpu/threads.h"
#include "engine/compile/function.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/channel_blocks.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/nn/pool2d.h"
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

  // A fused convolution's clip, split over the threads, against Elemwise's clip of the same
  // convolution without one (one call on the calling thread): the same bits at every count.
  void testActivationSameBits() {
    const Shape s{3, 8, 61, 67};  // 98 k outputs: split into up to 3 ranges
    const VarPtr x = Variable::create(TensorType(DType::Float32, s), "x");
    const VarPtr w = constant(randomTensor(DType::Float32, {8, 8, 3, 3}, 3));
    const VarPtr b = constant(randomTensor(DType::Float32, {8}, 4));
    Conv2dParams same;
    same.padding = {1, 1};
    const ConvActivationSpec a{cpu::ConvActivation::Clip, -0.5, 0.5};
    const VarPtr fused = fusedConv2d(x, w, b, same, a);
    const VarPtr apart = clip(fusedConv2d(x, w, b, same, {}), constant(-0.5, DType::Float32),
                              constant(0.5, DType::Float32));
    CompileOptions options;
    options.mode = Mode::None;
    Function f = compile({x}, {fused, apart}, {}, options);
    const Tensor xv = randomTensor(DType::Float32, s, 1);
    for (int threads : {1, 2, 3}) {
      cpu::setIntraOpThreads(threads);
      const std::vector<Tensor> out = f({xv});
      QVERIFY(out[0].bitwiseEqual(out[1]));
    }
  }

  // Max pooling of a channel-last tensor (a convolution's output, NaN included) split by output
  // rows, and the reorder into channel blocks split by rows: the same bits at every count.
  void testPoolingAndBlocksSameBits() {
    const Shape s{2, 16, 64, 71};  // both loops split: 64 and 256 rows of enough work
    std::vector<double> v = randomTensor(DType::Float32, s, 11).toDoubles();
    v[3 * 64 * 71 + 20 * 71 + 7] = std::nan("");
    const VarPtr x = Variable::create(TensorType(DType::Float32, s), "x");
    Conv2dParams same;
    same.padding = {1, 1};
    CompileOptions options;
    options.mode = Mode::None;
    Function conv =
        compile({x},
                {fusedConv2d(x, constant(randomTensor(DType::Float32, {16, 16, 3, 3}, 12)),
                             constant(randomTensor(DType::Float32, {16}, 13)), same, {})},
                {}, options);
    cpu::setIntraOpThreads(1);
    const Tensor channelLast = conv({Tensor::fromDoubles(DType::Float32, s, v)})[0];
    QVERIFY(channelLast.strides()[1] == 1);  // NHWC in memory: the pooling's channel-last path
    Pool2dParams pool;
    pool.kernel = {3, 3};
    pool.padding = {1, 1};
    const VarPtr in = Variable::create(TensorType(DType::Float32, s), "in");
    Function g = compile({in}, {maxPool2d(in, pool), toChannelBlocks(in)}, {}, options);
    const std::vector<Tensor> one = g({channelLast});
    for (int threads : {2, 3}) {
      cpu::setIntraOpThreads(threads);
      const std::vector<Tensor> many = g({channelLast});
      QVERIFY(many[0].bitwiseEqual(one[0]));
      QVERIFY(many[1].bitwiseEqual(one[1]));
    }
  }
};

TSCOPE_TEST_MAIN(TestParallelLoops)
#include "tst_parallel_loops.moc"
