// NonMaxSuppression: a hand-worked selection (overlap above and below the threshold, equal
// scores keep the lower index, the per-class limit, the score threshold, two batches and two
// classes in order), the center-point box format and flipped corners giving the same selection,
// an empty selection, bad inputs refused naming the input, no inferShape and a disconnected
// gradient, and props round-trip.
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/nn/nms.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>
#include <limits>

using namespace tscope::test;

namespace {

// Boxes of one image as [y1, x1, y2, x2]: 0 and 1 overlap with IoU 0.9 / 1.1 = 0.82, 2 is apart.
Tensor cornerBoxes() {
  return Tensor::fromDoubles(DType::Float32, {1, 3, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 5, 5, 6, 6});
}

std::vector<double> select(const Tensor& boxes, const Tensor& scores, std::int64_t maxPerClass,
                           double iou, double scoreThreshold, bool center = false) {
  auto build = [&](const std::vector<VarPtr>& in) {
    return std::vector<VarPtr>{nonMaxSuppression(in[0], in[1], constantInt(maxPerClass),
                                                 constant(iou, DType::Float32),
                                                 constant(scoreThreshold, DType::Float32), center)};
  };
  const Tensor out = evaluate(build, {boxes, scores}, /*staticShapes=*/true)[0];
  if (out.ndim() != 2 || out.shape()[1] != 3) return {-1};
  return out.toDoubles();
}

}  // namespace

class TestNms : public QObject {
  Q_OBJECT

 private slots:
  void greedySelection() {
    const Tensor scores = Tensor::fromDoubles(DType::Float32, {1, 1, 3}, {0.9, 0.8, 0.7});
    // IoU 0.82 > 0.5: box 1 suppressed by box 0.
    QCOMPARE(select(cornerBoxes(), scores, 10, 0.5, -INFINITY),
             (std::vector<double>{0, 0, 0, 0, 0, 2}));
    // Threshold 0.85: nothing suppressed, in score order.
    QCOMPARE(select(cornerBoxes(), scores, 10, 0.85, -INFINITY),
             (std::vector<double>{0, 0, 0, 0, 0, 1, 0, 0, 2}));
    // At most 2 per class; the score threshold drops box 2 (0.7 is not above 0.75).
    QCOMPARE(select(cornerBoxes(), scores, 2, 0.85, -INFINITY),
             (std::vector<double>{0, 0, 0, 0, 0, 1}));
    QCOMPARE(select(cornerBoxes(), scores, 10, 0.85, 0.75),
             (std::vector<double>{0, 0, 0, 0, 0, 1}));
    // max 0 selects nothing: a (0, 3) result.
    QCOMPARE(select(cornerBoxes(), scores, 0, 0.5, -INFINITY), (std::vector<double>{}));
  }

  // INT64_MAX means "no limit" (torchvision's batched_nms exports it): read exactly, not through a
  // double (which came back negative and kept nothing).
  void largestCountMeansNoLimit() {
    const Tensor scores = Tensor::fromDoubles(DType::Float32, {1, 1, 3}, {0.9, 0.8, 0.7});
    Tensor most(DType::Int64, {});
    *most.data<std::int64_t>() = std::numeric_limits<std::int64_t>::max();
    const Tensor out = evaluate(
        [&](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{nonMaxSuppression(in[0], in[1], constant(most),
                                                       constant(0.5, DType::Float32),
                                                       constant(-INFINITY, DType::Float32))};
        },
        {cornerBoxes(), scores}, /*staticShapes=*/true)[0];
    QCOMPARE(out.toDoubles(), (std::vector<double>{0, 0, 0, 0, 0, 2}));
  }

  void equalScoresKeepTheLowerIndex() {
    const Tensor scores = Tensor::fromDoubles(DType::Float32, {1, 1, 3}, {0.5, 0.5, 0.5});
    QCOMPARE(select(cornerBoxes(), scores, 10, 0.5, -INFINITY),
             (std::vector<double>{0, 0, 0, 0, 0, 2}));
  }

  void batchesAndClassesInOrder() {
    Tensor boxes = Tensor::fromDoubles(
        DType::Float32, {2, 3, 4},
        {0, 0, 1, 1, 0, 0.1, 1, 1.1, 5, 5, 6, 6, 0, 0, 1, 1, 0, 0.1, 1, 1.1, 5, 5, 6, 6});
    const Tensor scores = Tensor::fromDoubles(
        DType::Float32, {2, 2, 3}, {0.9, 0.8, 0.7, 0.1, 0.2, 0.3, 0.9, 0.8, 0.7, 0.1, 0.2, 0.3});
    QCOMPARE(select(boxes, scores, 1, 0.5, -INFINITY),
             (std::vector<double>{0, 0, 0, 0, 1, 2, 1, 0, 0, 1, 1, 2}));
  }

  void boxFormats() {
    const Tensor scores = Tensor::fromDoubles(DType::Float32, {1, 1, 3}, {0.9, 0.8, 0.7});
    // The same boxes with flipped corners, and as [xc, yc, w, h].
    const Tensor flipped =
        Tensor::fromDoubles(DType::Float32, {1, 3, 4}, {1, 1, 0, 0, 1, 1.1, 0, 0.1, 6, 6, 5, 5});
    const Tensor center = Tensor::fromDoubles(DType::Float32, {1, 3, 4},
                                              {0.5, 0.5, 1, 1, 0.6, 0.5, 1, 1, 5.5, 5.5, 1, 1});
    const std::vector<double> expected{0, 0, 0, 0, 0, 2};
    QCOMPARE(select(flipped, scores, 10, 0.5, -INFINITY), expected);
    QCOMPARE(select(center, scores, 10, 0.5, -INFINITY, true), expected);
  }

  void badInputsRefused() {
    const VarPtr boxes = Variable::create(TensorType(DType::Float32, {1, 3, 5}), "boxes");
    const VarPtr scores = Variable::create(TensorType(DType::Float32, {1, 1, 3}), "scores");
    try {
      nonMaxSuppression(boxes, scores, constantInt(1), constant(0.5, DType::Float32),
                        constant(0.0, DType::Float32));
      QFAIL("boxes with 5 coordinates were accepted");
    } catch (const TypeError& e) {
      QVERIFY2(std::string(e.what()).find("(batch, boxes, 4)") != std::string::npos, e.what());
    }
    // An IoU threshold outside [0, 1] fails when the node runs.
    QVERIFY_THROWS_EXCEPTION(
        std::exception,
        select(cornerBoxes(), Tensor::fromDoubles(DType::Float32, {1, 1, 3}, {1, 1, 1}), 1, 1.5,
               0));
  }

  void notDifferentiable() {
    const VarPtr boxes = Variable::create(TensorType(DType::Float32, {1, 3, 4}), "boxes");
    const VarPtr scores = Variable::create(TensorType(DType::Float32, {1, 1, 3}), "scores");
    const VarPtr sel =
        nonMaxSuppression(boxes, scores, constantInt(1), constant(0.5, DType::Float32),
                          constant(0.0, DType::Float32));
    const VarPtr cost = sum(cast(sel, DType::Float32));
    QVERIFY_THROWS_EXCEPTION(std::exception, grad(cost, {scores}));
  }

  void propsRoundTrip() {
    const OpPtr op = defaultOpRegistry().make("NonMaxSuppression", {{"center_point_box", true}});
    QVERIFY(op->equals(NonMaxSuppression(true)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             defaultOpRegistry().make("NonMaxSuppression", {{"center", 1}}));
  }
};

TSCOPE_TEST_MAIN(TestNms)
#include "tst_nms.moc"
