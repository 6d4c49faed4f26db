// Op::cost of the neural-network family against hand counts: convolution with stride, padding,
// dilation and groups and its two gradients, pooling and its gradients, softmax / log-softmax and
// their gradients, batch normalization, cross-entropy.

#include "engine/ops/basic.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/nn/softmax.h"
#include "test_main.h"

#include <QtTest/QtTest>

using namespace tscope::engine;

namespace {

VarPtr var(DType dtype, Shape shape) {
  return Variable::create(TensorType(dtype, std::move(shape)), "v");
}
VarPtr f32(Shape shape) {
  return var(DType::Float32, std::move(shape));
}
VarPtr i64(Shape shape) {
  return var(DType::Int64, std::move(shape));
}

OpCost costOf(const Apply& node, std::vector<Shape> shapes) {
  return node.op().cost(node, shapes);
}
OpCost costOf(const ApplyPtr& node, std::vector<Shape> shapes) {
  return costOf(*node, std::move(shapes));
}
OpCost costOf(const VarPtr& out, std::vector<Shape> shapes) {
  return costOf(*out->owner(), std::move(shapes));
}

OpCost known(double flops, double read, double written) {
  OpCost c;
  c.flops = flops;
  c.bytesRead = read;
  c.bytesWritten = written;
  c.known = true;
  return c;
}

Conv2dParams convParams(std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                        std::int64_t groups) {
  Conv2dParams p;
  p.stride = {stride, stride};
  p.padding = {pad, pad};
  p.dilation = {dilation, dilation};
  p.groups = groups;
  return p;
}

}  // namespace

class TestOpCostNn : public QObject {
  Q_OBJECT

 private slots:
  void convStridePaddingGroups() {
    // x (2, 4, 7, 7), w (6, 2, 3, 3), stride 2, padding 1, 2 groups: OH = OW = (7+2-2-1)/2+1 = 4;
    // 2 * N*K*(C/g)*R*S*OH*OW = 2*2*6*2*3*3*4*4 = 6912 flops.
    const Conv2dParams p = convParams(2, 1, 1, 2);
    auto y = conv2d(f32({kUnknownDim, 4, 7, 7}), f32({6, 2, 3, 3}), p);
    QCOMPARE(costOf(y, {{2, 4, 7, 7}, {6, 2, 3, 3}}),
             known(6912, 4.0 * (2 * 4 * 49 + 6 * 2 * 9), 4.0 * 2 * 6 * 4 * 4));
  }

  void convDilation() {
    // (1, 1, 7, 7) with a 3x3 filter dilated by 2: OH = (7 - 4 - 1) + 1 = 3; 2*9*9 = 162.
    auto y = conv2d(f32({1, 1, 7, 7}), f32({1, 1, 3, 3}), convParams(1, 0, 2, 1));
    QCOMPARE(costOf(y, {{1, 1, 7, 7}, {1, 1, 3, 3}}), known(162, 4.0 * (49 + 9), 4.0 * 9));
  }

  void convGradientsCostTheForwardFlops() {
    const Conv2dParams p = convParams(2, 1, 1, 2);
    // gx (2, 4, 7, 7) from w (6, 2, 3, 3) and gy (2, 6, 4, 4), H = W = 7 (constants).
    auto gx =
        conv2dGradInputs(f32({6, 2, 3, 3}), f32({2, 6, 4, 4}), constantInt(7), constantInt(7), p);
    QCOMPARE(costOf(gx, {{6, 2, 3, 3}, {2, 6, 4, 4}, {}, {}}),
             known(6912, 4.0 * (108 + 192) + 16, 4.0 * 2 * 4 * 49));
    // gw (6, 2, 3, 3) from x (2, 4, 7, 7) and gy.
    auto gw =
        conv2dGradWeights(f32({2, 4, 7, 7}), f32({2, 6, 4, 4}), constantInt(3), constantInt(3), p);
    QCOMPARE(costOf(gw, {{2, 4, 7, 7}, {2, 6, 4, 4}, {}, {}}),
             known(6912, 4.0 * (392 + 192) + 16, 4.0 * 108));
    // H and W not constants: gx's size is unknown, so is its cost.
    auto h = var(DType::Int64, {});
    auto gxDyn = conv2dGradInputs(f32({6, 2, 3, 3}), f32({2, 6, 4, 4}), h, h, p);
    QVERIFY(!costOf(gxDyn, {{6, 2, 3, 3}, {2, 6, 4, 4}, {}, {}}).known);
  }

  void pooling() {
    // Max 2x2 stride 2 on (1, 3, 4, 4): 12 outputs * 4 comparisons.
    auto m = maxPool2d(f32({1, 3, 4, 4}), Pool2dParams::window(2, 2));
    QCOMPARE(costOf(m, {{1, 3, 4, 4}}), known(48, 192, 48));
    // Average 3x3 stride 1 padding 1 on (1, 1, 4, 4): 16 outputs * (9 adds + 1 divide).
    Pool2dParams avg;
    avg.kernel = {3, 3};
    avg.stride = {1, 1};
    avg.padding = {1, 1};
    auto a = avgPool2d(f32({1, 1, 4, 4}), avg);
    QCOMPARE(costOf(a, {{1, 1, 4, 4}}), known(160, 64, 64));
    // MaxPool2dGrad(x, gy): 12 gy elements * (4 + 1); x and gy read, gx written.
    auto g = maxPool2dGrad(f32({1, 3, 4, 4}), f32({1, 3, 2, 2}), Pool2dParams::window(2, 2));
    QCOMPARE(costOf(g, {{1, 3, 4, 4}, {1, 3, 2, 2}}), known(60, 192 + 48, 192));
    // MaxPool2dGradGrad(x, gx) -> (1, 3, 2, 2): 12 * 4.
    auto gg = maxPool2dGradGrad(f32({1, 3, 4, 4}), f32({1, 3, 4, 4}), Pool2dParams::window(2, 2));
    QCOMPARE(costOf(gg, {{1, 3, 4, 4}, {1, 3, 4, 4}}), known(48, 384, 48));
    // AvgPool2dGrad(gy, H, W) with constant H, W: 16 gy elements * 10.
    auto ag = avgPool2dGrad(f32({1, 1, 4, 4}), constantInt(4), constantInt(4), avg);
    QCOMPARE(costOf(ag, {{1, 1, 4, 4}, {}, {}}), known(160, 64 + 16, 64));
  }

  void softmaxFamily() {
    auto x = f32({kUnknownDim, 10});
    // (4, 10): 5 flops per element.
    QCOMPARE(costOf(std::make_shared<Softmax>()->makeNode({x}), {{4, 10}}), known(200, 160, 160));
    // log-softmax: 5 per element + one log per row.
    QCOMPARE(costOf(std::make_shared<LogSoftmax>()->makeNode({x}), {{4, 10}}),
             known(204, 160, 160));
    // Along axis 0 of (4, 10): 10 rows of 4.
    QCOMPARE(costOf(std::make_shared<LogSoftmax>(0)->makeNode({x}), {{4, 10}}),
             known(210, 160, 160));
    QCOMPARE(costOf(std::make_shared<SoftmaxGrad>()->makeNode({x, x}), {{4, 10}, {4, 10}}),
             known(160, 320, 160));
    QCOMPARE(costOf(std::make_shared<LogSoftmaxGrad>()->makeNode({x, x}), {{4, 10}, {4, 10}}),
             known(160, 320, 160));
  }

  void batchNorm() {
    // x (8, 3, 2, 2) over axes [0, 2, 3]: n = 96, 3 statistics.
    auto x = f32({8, 3, 2, 2});
    auto s = f32({1, 3, 1, 1});
    auto train = std::make_shared<BatchNormTrain>(std::vector<int>{0, 2, 3})->makeNode({x, s, s});
    QCOMPARE(costOf(*train, {{8, 3, 2, 2}, {1, 3, 1, 1}, {1, 3, 1, 1}}),
             known(8 * 96 + 4 * 3, 4.0 * (96 + 6), 4.0 * (96 + 6)));
    auto inference =
        std::make_shared<BatchNormInference>(std::vector<int>{0, 2, 3})->makeNode({x, s, s, s, s});
    QCOMPARE(
        costOf(*inference, {{8, 3, 2, 2}, {1, 3, 1, 1}, {1, 3, 1, 1}, {1, 3, 1, 1}, {1, 3, 1, 1}}),
        known(4 * 96 + 2 * 3, 4.0 * (96 + 12), 4.0 * 96));
  }

  void crossEntropy() {
    auto logits = f32({kUnknownDim, 10});
    // Class targets: softmax 200 + log per row 4 + subtraction per row 4.
    auto withClasses =
        std::make_shared<SoftmaxCrossEntropyWithLogits>()->makeNode({logits, i64({kUnknownDim})});
    QCOMPARE(costOf(*withClasses, {{4, 10}, {4}}), known(208, 160 + 32, 16 + 160));
    // Distribution targets: 200 + 4 + 3 * 40.
    auto withDist = std::make_shared<SoftmaxCrossEntropyWithLogits>()->makeNode(
        {logits, f32({kUnknownDim, 10})});
    QCOMPARE(costOf(*withDist, {{4, 10}, {4, 10}}), known(324, 320, 176));
    auto cce = std::make_shared<CategoricalCrossEntropy>()->makeNode({logits, i64({kUnknownDim})});
    QCOMPARE(costOf(*cce, {{4, 10}, {4}}), known(4, 192, 16));
    auto cceDist =
        std::make_shared<CategoricalCrossEntropy>()->makeNode({logits, f32({kUnknownDim, 10})});
    QCOMPARE(costOf(*cceDist, {{4, 10}, {4, 10}}), known(120, 320, 16));
    auto grad = std::make_shared<SoftmaxCrossEntropyGrad>()->makeNode(
        {f32({kUnknownDim}), logits, i64({kUnknownDim})});
    QCOMPARE(costOf(*grad, {{4}, {4, 10}, {4}}), known(80, 16 + 160 + 32, 160));
    // OneHot with a constant depth: bytes only.
    auto oh = std::make_shared<OneHot>()->makeNode({i64({kUnknownDim}), constantInt(10)});
    QCOMPARE(costOf(*oh, {{4}, {}}), known(0, 32 + 8, 160));
  }
};

TSCOPE_TEST_MAIN(TestOpCostNn)
#include "tst_op_cost_nn.moc"
