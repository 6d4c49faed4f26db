// Note [Kernel instruction sets]: every elementwise row function of each instruction set this CPU
// runs (AVX2, AVX-512) against the baseline build of the same source, on every op and dtype and on
// each stride pattern the row functions special-case. Arithmetic must agree bit for bit (the AVX
// units are compiled without FMA contraction); Eigen's vectorized tanh/exp/log may differ by a few
// ulp (tanh up to 8). Also: the active set is the widest one unless TSCOPE_CPU_KERNELS narrows it.
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/ops/elemwise/scalar_op.h"
#include "test_main.h"

#include <QTest>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace tscope::engine;

namespace {

constexpr std::int64_t kRow = 1003;  // vector bodies and a scalar tail

struct Pattern {
  const char* name;
  std::int64_t outStride;
  std::int64_t inStrides[3];
};
// The special cases of the row functions (contiguous, one operand broadcast) and the strided loop.
constexpr Pattern kPatterns[] = {
    {"contiguous", 1, {1, 1, 1}},
    {"second broadcast", 1, {1, 0, 0}},
    {"first broadcast", 1, {0, 1, 1}},
    {"strided", 2, {3, 1, 2}},
};

// Values for operand k of op: positive where logs and roots want them, never a zero divisor.
std::vector<char> operand(DType dtype, ScalarOp op, int k, std::int64_t count, std::mt19937& rng) {
  std::vector<char> bytes(static_cast<std::size_t>(count) * dtypeSize(dtype));
  const bool positive = op == ScalarOp::Log || op == ScalarOp::Log1p || op == ScalarOp::Log2 ||
                        op == ScalarOp::Log10 || op == ScalarOp::Sqrt ||
                        (op == ScalarOp::Pow && k == 0);
  std::uniform_real_distribution<double> real(positive ? 0.05 : -4.0, 4.0);
  std::uniform_int_distribution<int> small(1, 40);
  for (std::int64_t i = 0; i < count; ++i) {
    char* at = bytes.data() + i * static_cast<std::int64_t>(dtypeSize(dtype));
    const int magnitude = small(rng);
    const int integer = (op == ScalarOp::Pow && k == 1) ? magnitude % 4
                        : positive || rng() % 2         ? magnitude
                                                        : -magnitude;
    auto put = [at](auto v) { std::memcpy(at, &v, sizeof v); };
    switch (dtype) {
      case DType::Float32:
        put(static_cast<float>(real(rng)));
        break;
      case DType::Float64:
        put(real(rng));
        break;
      case DType::Int32:
        put(static_cast<std::int32_t>(integer));
        break;
      case DType::Int64:
        put(static_cast<std::int64_t>(integer));
        break;
      case DType::Int8:
        put(static_cast<std::int8_t>(integer));
        break;
      case DType::UInt8:
        put(static_cast<std::uint8_t>(magnitude));
        break;
      case DType::Bool:
        put(rng() % 2 == 0);
        break;
      default:
        QTest::qFail("no values for this dtype", __FILE__, __LINE__);
    }
  }
  return bytes;
}

// Distance in units in the last place (0 for equal values, also for two NaNs).
template <class F, class I>
std::uint64_t ulpDistance(F a, F b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return ~std::uint64_t{0};
  auto ordered = [](F x) {
    const auto bits = std::bit_cast<I>(x);
    return bits < 0 ? std::numeric_limits<I>::min() - bits : bits;
  };
  const I ia = ordered(a), ib = ordered(b);
  return static_cast<std::uint64_t>(ia > ib ? ia - ib : ib - ia);
}

}  // namespace

class TestKernelSets : public QObject {
  Q_OBJECT

 private slots:
  void testActiveSetIsTheWidest() {
    const std::vector<KernelSet> sets = availableKernelSets();
    QVERIFY(!sets.empty());
    QCOMPARE(sets.front(), KernelSet::Base);
    const char* asked = std::getenv("TSCOPE_CPU_KERNELS");
    const std::string want = asked ? asked : "";
    KernelSet expected = sets.back();
    if (want == "base") expected = KernelSet::Base;
    if (want == "avx2") expected = std::min(sets.back(), KernelSet::Avx2);
    QCOMPARE(kernelSetName(activeKernelSet()), kernelSetName(expected));
    qInfo("kernel sets on this CPU: %s%s%s; active: %s", kernelSetName(sets[0]),
          sets.size() > 1 ? ", avx2" : "", sets.size() > 2 ? ", avx512" : "",
          kernelSetName(activeKernelSet()));
  }

  void testEverySetMatchesTheBaseline_data() {
    QTest::addColumn<int>("set");
    for (KernelSet set : availableKernelSets())
      if (set != KernelSet::Base) QTest::newRow(kernelSetName(set)) << static_cast<int>(set);
    if (availableKernelSets().size() == 1) QTest::newRow("none") << -1;
  }

  void testEverySetMatchesTheBaseline() {
    QFETCH(int, set);
    if (set < 0) QSKIP("this CPU runs the baseline kernels only");
    const auto wide = static_cast<KernelSet>(set);
    const DType dtypes[] = {DType::Float32, DType::Float64, DType::Int32, DType::Int64,
                            DType::Int8,    DType::UInt8,   DType::Bool};
    std::mt19937 rng(7);
    int compared = 0;
    for (int o = 0; o < kScalarOpCount; ++o) {
      const auto op = static_cast<ScalarOp>(o);
      const ScalarOpInfo& info = scalarOpInfo(op);
      const int arity = op == ScalarOp::Switch || op == ScalarOp::Clip ? 3
                        : info.arity < 0                               ? 2
                                                                       : info.arity;
      for (DType dtype : dtypes) {
        const ElemwiseRowFn base = elemwiseRowKernel(op, dtype, KernelSet::Base);
        const ElemwiseRowFn fn = elemwiseRowKernel(op, dtype, wide);
        QCOMPARE(fn == nullptr, base == nullptr);
        if (!base) continue;
        const DType outType = info.rule == DTypeRule::Bool ? DType::Bool : dtype;
        const bool approximate =
            (op == ScalarOp::Tanh || op == ScalarOp::Exp || op == ScalarOp::Log) && isFloat(dtype);
        // Eigen's rational tanh rounds each of its ~20 steps, with and without FMA: up to 8 ulp
        // apart (5 seen); exp and log stay within a couple.
        const std::uint64_t maxUlp = op == ScalarOp::Tanh ? 8 : 4;
        for (const Pattern& p : kPatterns) {
          std::vector<std::vector<char>> operands;
          std::vector<const char*> ptrs;
          for (int k = 0; k < arity; ++k) {
            const DType t = op == ScalarOp::Switch && k == 0 ? DType::Bool : dtype;
            operands.push_back(operand(t, op, k, kRow * 3, rng));
            ptrs.push_back(operands.back().data());
          }
          const std::size_t outBytes =
              static_cast<std::size_t>(kRow * p.outStride) * dtypeSize(outType);
          std::vector<char> expected(outBytes, 0), actual(outBytes, 0);
          base(expected.data(), p.outStride, ptrs.data(), p.inStrides, kRow);
          fn(actual.data(), p.outStride, ptrs.data(), p.inStrides, kRow);
          ++compared;
          const std::string where = std::string(info.name) + " on " +
                                    std::string(dtypeName(dtype)) + ", " + p.name + ", " +
                                    kernelSetName(wide) + " against base";
          if (!approximate) {
            QVERIFY2(expected == actual, (where + ": results differ").c_str());
            continue;
          }
          for (std::int64_t i = 0; i < kRow; ++i) {
            const std::size_t at = static_cast<std::size_t>(i * p.outStride);
            std::uint64_t ulp = 0;
            if (dtype == DType::Float32) {
              float a, b;
              std::memcpy(&a, expected.data() + at * 4, 4);
              std::memcpy(&b, actual.data() + at * 4, 4);
              ulp = ulpDistance<float, std::int32_t>(a, b);
            } else {
              double a, b;
              std::memcpy(&a, expected.data() + at * 8, 8);
              std::memcpy(&b, actual.data() + at * 8, 8);
              ulp = ulpDistance<double, std::int64_t>(a, b);
            }
            const std::string message = where + ": element " + std::to_string(i) + " is " +
                                        std::to_string(ulp) + " ulp away";
            QVERIFY2(ulp <= maxUlp, message.c_str());
          }
        }
      }
    }
    QVERIFY(compared > 300);
  }
};

TSCOPE_TEST_MAIN(TestKernelSets)
#include "tst_kernel_sets.moc"
