// Scan's gradient (backpropagation through time as a reversed Scan) checked with verifyGrad over
// sequence taps, several recurrent taps, non-sequences and outputs without recurrence; truncated
// gradients against the values worked out by hand; the R-op with checkRopLop.
#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::engine;
using namespace tscope::test;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape) {
  return Variable::create(TensorType(DType::Float64, std::move(shape)), name);
}
std::vector<VarPtr> rnn(const std::vector<VarPtr>& in, int truncate = -1) {
  // in: x [T, 3], h0 [2], W [3, 2], U [2, 2].
  return scan(
      [](const std::vector<VarPtr>& a) {
        return std::vector<VarPtr>{tanh(dot(a[0], a[2]) + dot(a[1], a[3]))};
      },
      {in[0]}, {in[1]}, {in[2], in[3]}, {}, truncate, {.label = "rnn"});
}
}  // namespace

class TestScanGrad : public QObject {
  Q_OBJECT

 private slots:
  void testRnn() {
    verifyGrad([](const std::vector<VarPtr>& in) { return rnn(in); },
               {randomTensor(DType::Float64, {5, 3}, 1), randomTensor(DType::Float64, {2}, 2),
                randomTensor(DType::Float64, {3, 2}, 3), randomTensor(DType::Float64, {2, 2}, 4)});
    // The gradient is a Scan (the reversed loop), not an unrolled graph.
    auto x = fvar("x", {U, 3});
    auto h0 = fvar("h0", {2});
    auto W = fvar("W", {3, 2});
    auto Uw = fvar("U", {2, 2});
    const std::vector<VarPtr> g = grad(sum(rnn({x, h0, W, Uw})[0]), std::vector<VarPtr>{W});
    bool gradScan = false;
    for (const Apply* n : FunctionGraph({x, h0, W, Uw}, g).toposort())
      gradScan = gradScan || n->op().str() == "Scan{grad_rnn}";
    QVERIFY(gradScan);
  }

  void testTapsAndSeveralOutputs() {
    // Sequence taps {-1, +1}, an output with taps {-2, -1}, an output with taps {-1}, an output
    // without recurrence, a non-sequence.
    verifyGrad(
        [](const std::vector<VarPtr>& in) {
          return scan(
              [](const std::vector<VarPtr>& a) {
                // x[t-1], x[t+1], f[t-2], f[t-1], s[t-1], w
                VarPtr f = a[2] * 0.5 + tanh(a[3]) * a[0] + a[1] * a[5];
                VarPtr s = a[4] * sin(a[1]) + a[3];
                return std::vector<VarPtr>{f, s, f * s};
              },
              {ScanSequence(in[0], {-1, 1})},
              {ScanOutputInfo(in[1], {-2, -1}), in[2], ScanOutputInfo::none()}, {in[3]});
        },
        {randomTensor(DType::Float64, {6, 2}, 5), randomTensor(DType::Float64, {2, 2}, 6),
         randomTensor(DType::Float64, {2}, 7), randomTensor(DType::Float64, {2}, 8)});
  }

  void testSymbolicStepsAndLongerSequences() {
    // nSteps fixed below the sequence's length: rows past the steps get a zero gradient.
    auto x = fvar("x", {U});
    auto z0 = fvar("z0", {});
    auto n = Variable::create(TensorType(DType::Int64, {}), "n");
    VarPtr y =
        scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] * a[0] + 1.0}; },
             {x}, {z0}, {}, n)[0];
    const auto g = grad(sum(y), {x, z0});
    Function f = compile({x, z0, n}, g);
    const Tensor xv = Tensor::fromDoubles(DType::Float64, {4}, {2, 3, 5, 7});
    const auto r = f({xv, Tensor::scalar(DType::Float64, 1), Tensor::scalar(DType::Int64, 2)});
    // z1 = z0 x0 + 1, z2 = z1 x1 + 1; sum = z1 + z2 -> d/dx0 = z0 (1 + x1) = 4, d/dx1 = z1 = 3.
    QVERIFY(closeTo(r[0], Tensor::fromDoubles(DType::Float64, {4}, {4, 3, 0, 0})));
    QCOMPARE(r[1].item(), 2.0 * (1 + 3));  // x0 (1 + x1)
    verifyGrad(
        [](const std::vector<VarPtr>& in) {
          return scan(
              [](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] * tanh(a[0])}; },
              {in[0]}, {in[1]}, {}, 3);
        },
        {randomTensor(DType::Float64, {5, 2}, 11), randomTensor(DType::Float64, {2}, 12)});
  }

  void testTruncatedGradient() {
    // h[t] = a h[t-1] + x[t], cost sum(h), 5 steps, truncateGradient 2: only the last two steps
    // are differentiated. d/dx[t] = sum_{s=t}^{4} a^(s-t) for t >= 3, 0 before; h0 gets none.
    auto x = fvar("x", {U});
    auto h0 = fvar("h0", {});
    auto a = fvar("a", {});
    for (int truncate : {-1, 2, 10}) {
      VarPtr h =
          scan([](const std::vector<VarPtr>& v) { return std::vector<VarPtr>{v[1] * v[2] + v[0]}; },
               {x}, {h0}, {a}, {}, truncate)[0];
      const auto g = grad(sum(h), {x, h0});
      Function f = compile({x, h0, a}, g);
      const auto r = f({Tensor::fromDoubles(DType::Float64, {5}, {1, 1, 1, 1, 1}),
                        Tensor::scalar(DType::Float64, 1), Tensor::scalar(DType::Float64, 0.5)});
      std::vector<double> want(5);
      for (int t = 0; t < 5; ++t)
        for (int s = t; s < 5; ++s) want[static_cast<std::size_t>(t)] += std::pow(0.5, s - t);
      double wantH0 = 0;
      for (int s = 0; s < 5; ++s) wantH0 += std::pow(0.5, s + 1);
      if (truncate == 2) {
        want[0] = want[1] = want[2] = 0;
        wantH0 = 0;
      }
      QVERIFY(closeTo(r[0], Tensor::fromDoubles(DType::Float64, {5},
                                                {want[0], want[1], want[2], want[3], want[4]})));
      QVERIFY(std::abs(r[1].item() - wantH0) < 1e-12);
    }
  }

  void testRop() {
    checkRopLop(
        [](const std::vector<VarPtr>& in) { return rnn(in); },
        {randomTensor(DType::Float64, {4, 3}, 21), randomTensor(DType::Float64, {2}, 22),
         randomTensor(DType::Float64, {3, 2}, 23), randomTensor(DType::Float64, {2, 2}, 24)});
    checkRopLop(
        [](const std::vector<VarPtr>& in) {
          return scan(
              [](const std::vector<VarPtr>& a) {
                return std::vector<VarPtr>{a[1] * 0.3 + a[2] * a[0], exp(a[0]) * a[2]};
              },
              {ScanSequence(in[0], {-1})},
              {ScanOutputInfo(in[1], {-2, -1}), ScanOutputInfo::none()});
        },
        {randomTensor(DType::Float64, {5}, 25), randomTensor(DType::Float64, {2}, 26)});
  }
};

TSCOPE_TEST_MAIN(TestScanGrad)
#include "tst_scan_grad.moc"
