// train()/eval() decide what a call builds (Note [Build mode] in engine/nn/module.h): Dropout
// masks and rescales in train mode and is the identity in eval mode; BatchNorm2d normalizes with
// the batch's statistics and updates its running statistics in train mode, and uses them in eval
// mode.
#include "engine/compile/function.h"
#include "engine/nn/containers.h"
#include "engine/nn/conv_layers.h"
#include "engine/nn/layers.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::engine;

namespace {

Tensor ramp(Shape shape, double scale, double shift) {
  Tensor t = Tensor::empty(DType::Float32, shape);
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) * scale + shift);
  return t;
}

}  // namespace

class TestNnTrainEval : public QObject {
  Q_OBJECT

 private slots:
  void testDropout() {
    auto drop = std::make_shared<nn::Dropout>(0.5);
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "x");
    VarPtr trained = (*drop)(x);
    QCOMPARE(drop->updates().size(), std::size_t{1});  // the generator's state
    Function train = compile({x}, {trained}, drop->updates());
    const Tensor in = Tensor::full(DType::Float32, {1000}, 1.0);
    const std::vector<double> a = train({in})[0].toDoubles(), b = train({in})[0].toDoubles();
    int zeros = 0;
    for (double v : a) {
      QVERIFY(v == 0.0 || std::abs(v - 2.0) < 1e-6);  // dropped, or scaled by 1 / (1 - p)
      zeros += v == 0.0;
    }
    QVERIFY2(zeros > 400 && zeros < 600, std::to_string(zeros).c_str());
    QVERIFY(a != b);  // each call draws a new mask
    drop->clearUpdates();
    drop->eval();
    VarPtr evaluated = (*drop)(x);
    QVERIFY(evaluated == x);  // the identity: no node at all
    QVERIFY(drop->updates().empty());
  }

  void testBatchNorm() {
    auto bn = std::make_shared<nn::BatchNorm2d>(2, 1e-5, 0.5);
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 2, 3, 3}), "x");
    const Tensor in = ramp({4, 2, 3, 3}, 2.0, 3.0);
    // Train mode: the batch's statistics; output mean ~0 and variance ~1 per channel.
    VarPtr yTrain = (*bn)(x);
    QCOMPARE(bn->updates().size(), std::size_t{3});
    Function train = compile({x}, {yTrain}, bn->updates());
    const Tensor out = train({in})[0];
    for (std::int64_t c = 0; c < 2; ++c) {
      double s = 0, q = 0;
      for (std::int64_t n = 0; n < 4; ++n)
        for (std::int64_t i = 0; i < 9; ++i) {
          const double v = out.at(std::vector<std::int64_t>{n, c, i / 3, i % 3});
          s += v, q += v * v;
        }
      QVERIFY(std::abs(s / 36) < 1e-4);
      QVERIFY(std::abs(q / 36 - 1.0) < 1e-3);
    }
    // The running statistics moved half way (momentum 0.5) to the batch's; one batch tracked.
    QCOMPARE(bn->numBatchesTracked->value().item(), 1.0);
    const double rm0 = bn->runningMean->value().toDoubles()[0];
    QVERIFY(std::abs(rm0) > 0.5);  // from 0 towards ~3
    bn->clearUpdates();
    // Eval mode: the running statistics, no updates.
    bn->eval();
    VarPtr yEval = (*bn)(x);
    QVERIFY(bn->updates().empty());
    Function infer = compile({x}, {yEval});
    const Tensor outEval = infer({in})[0];
    const double rv0 = bn->runningVar->value().toDoubles()[0];
    const double want =
        (in.at(std::vector<std::int64_t>{0, 0, 0, 0}) - rm0) / std::sqrt(rv0 + 1e-5);
    QVERIFY(std::abs(outEval.at(std::vector<std::int64_t>{0, 0, 0, 0}) - want) < 1e-4);
    QVERIFY(!outEval.allClose(out, 1e-3, 1e-3));
  }
};

TSCOPE_TEST_MAIN(TestNnTrainEval)
#include "tst_nn_train_eval.moc"
