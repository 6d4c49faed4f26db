// SumToShape: the reduction of a broadcast gradient back to an input's shape. Values against a
// naive sum, the view when nothing is summed, run-time-only broadcasts, the sumToShape builder's
// shortcut and output type, inferShape, gradient and R-op, registry, and bad inputs.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <vector>

using namespace tscope::engine;
using namespace tscope::test;

using Dims = std::vector<std::int64_t>;
Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(Dims)

namespace {
constexpr std::int64_t U = kUnknownDim;

// g summed to `target` by brute force: every element of g adds into the target element it
// broadcasts from.
Tensor naiveSum(const Tensor& g, const Shape& target) {
  const Tensor g64 = g.astype(DType::Float64);
  Tensor out(DType::Float64, target);
  const std::size_t lead = g.shape().size() - target.size();
  Shape index(g.shape().size(), 0);
  for (std::int64_t flat = 0; flat < g.numel(); ++flat) {
    std::int64_t rest = flat;
    for (std::size_t a = index.size(); a-- > 0;) {
      index[a] = rest % g.shape()[a];
      rest /= g.shape()[a];
    }
    Shape t;
    for (std::size_t a = 0; a < target.size(); ++a)
      t.push_back(target[a] == 1 ? 0 : index[lead + a]);
    out.set(t, out.at(t) + g64.at(index));
  }
  return out.astype(g.dtype());
}

Tensor runSumToShape(const Tensor& g, const Shape& target, Tensor out = {}) {
  auto op = std::make_shared<SumToShape>();
  std::vector<VarPtr> inputs{Variable::create(TensorType::ofValue(g))};
  std::vector<Tensor> sizeValues;
  for (std::int64_t d : target) {
    inputs.push_back(Variable::create(TensorType(DType::Int64, {})));
    sizeValues.push_back(Tensor::scalar(DType::Int64, static_cast<double>(d)));
  }
  ApplyPtr node = op->makeNode(inputs);
  std::vector<const Tensor*> ptrs{&g};
  for (const Tensor& s : sizeValues) ptrs.push_back(&s);
  Tensor* outs[] = {&out};
  op->perform(*node, ptrs, outs);
  return out;
}
}  // namespace

class TestElemwiseSumToShape : public QObject {
  Q_OBJECT

 private slots:
  void testValues_data();
  void testValues();
  void testNothingToSumIsAView();
  void testRuntimeBroadcast();
  void testBuilder();
  void testInferShape();
  void testGradient_data();
  void testGradient();
  void testRegistry();
  void testBadInputs();
};

void TestElemwiseSumToShape::testValues_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Dims>("g");
  QTest::addColumn<Dims>("target");
  for (DType d : {DType::Float32, DType::Float64, DType::Int32, DType::Float16, DType::UInt8}) {
    const std::string s(dtypeName(d));
    QTest::newRow(("2x3x4 -> 3x1/" + s).c_str()) << d << Dims{2, 3, 4} << Dims{3, 1};
    QTest::newRow(("2x3x4 -> 4/" + s).c_str()) << d << Dims{2, 3, 4} << Dims{4};
    QTest::newRow(("2x3x4 -> 1x4/" + s).c_str()) << d << Dims{2, 3, 4} << Dims{1, 4};
    QTest::newRow(("2x3x4 -> 2x1x4/" + s).c_str()) << d << Dims{2, 3, 4} << Dims{2, 1, 4};
    QTest::newRow(("2x3x4 -> 1x1x1/" + s).c_str()) << d << Dims{2, 3, 4} << Dims{1, 1, 1};
    QTest::newRow(("2x3x4 -> scalar/" + s).c_str()) << d << Dims{2, 3, 4} << Dims{};
    QTest::newRow(("5x1 -> 1/" + s).c_str()) << d << Dims{5, 1} << Dims{1};
  }
}

void TestElemwiseSumToShape::testValues() {
  QFETCH(DType, dtype);
  QFETCH(Dims, g);
  QFETCH(Dims, target);
  const Tensor gv = randomTensor(dtype, g, 1, 0, 4);
  Tensor out = runSumToShape(gv, target);
  QCOMPARE(out.dtype(), dtype);
  QCOMPARE(out.shape(), target);
  QVERIFY(closeTo(out, naiveSum(gv, target), dtype == DType::Float16 ? 1e-3 : 1e-6));
  // A strided g (a transposed view) sums the same.
  if (g.size() == 3) {
    const std::vector<int> perm{0, 2, 1};
    const Tensor base = randomTensor(dtype, {g[0], g[2], g[1]}, 2, 0, 4);
    const Tensor view = base.transpose(perm);
    QVERIFY(closeTo(runSumToShape(view, target), naiveSum(view, target),
                    dtype == DType::Float16 ? 1e-3 : 1e-6));
  }
  // The output buffer is reused from call to call.
  const void* buffer = out.rawData();
  const Tensor again = runSumToShape(gv, target, std::move(out));
  QCOMPARE(again.rawData(), buffer);
}

void TestElemwiseSumToShape::testNothingToSumIsAView() {
  const Tensor g = randomTensor(DType::Float32, {3, 4}, 3);
  const Tensor out = runSumToShape(g, {3, 4});
  QVERIFY(out.sharesStorageWith(g));
  QVERIFY(std::make_shared<SumToShape>()->viewMap() == (ViewMap{{0, {0}}}));
}

void TestElemwiseSumToShape::testRuntimeBroadcast() {
  // x's type leaves both dims unknown; at run time x is (1, 4) and broadcasts against y (3, 4).
  // The gradient of x must be summed over axis 0 although no static shape said so.
  const VarPtr x = Variable::create(TensorType(DType::Float64, {U, U}), "x");
  const VarPtr y = Variable::create(TensorType(DType::Float64, {U, U}), "y");
  const VarPtr out = x * y;
  GradOptions options;
  const std::vector<VarPtr> g = grad({out}, {onesLike(out)}, {x, y}, options);
  QVERIFY(g[0]->owner() && dynamic_cast<const SumToShape*>(&g[0]->owner()->op()));
  const Tensor xv = Tensor::fromDoubles(DType::Float64, {1, 4}, {1, 2, 3, 4});
  const Tensor yv = randomTensor(DType::Float64, {3, 4}, 4);
  const std::vector<Tensor> values = evaluate({x, y}, g, {xv, yv});
  QCOMPARE(values[0].shape(), (Shape{1, 4}));
  QVERIFY(closeTo(values[0], naiveSum(yv, {1, 4}), 1e-12));
  QCOMPARE(values[1].shape(), (Shape{3, 4}));
  // The same graph with equal shapes at run time: nothing is summed.
  const Tensor xw = randomTensor(DType::Float64, {3, 4}, 5);
  const std::vector<Tensor> same = evaluate({x, y}, g, {xw, yv});
  QVERIFY(closeTo(same[0], yv, 1e-12));
}

void TestElemwiseSumToShape::testBuilder() {
  const VarPtr g = Variable::create(TensorType(DType::Float32, {2, 3, 4}), "g");
  // Static shapes prove no broadcast: g itself.
  QCOMPARE(sumToShape(g, Variable::create(TensorType(DType::Float64, {2, 3, 4}))), g);
  const VarPtr gu = Variable::create(TensorType(DType::Float32, {U, 1}), "gu");
  QCOMPARE(sumToShape(gu, Variable::create(TensorType(DType::Float32, {5, U}))), gu);
  // Otherwise a SumToShape typed like `like`, in g's dtype.
  const VarPtr like = Variable::create(TensorType(DType::Float64, {3, 1}), "like");
  const VarPtr s = sumToShape(g, like);
  QVERIFY(s != g && dynamic_cast<const SumToShape*>(&s->owner()->op()));
  QCOMPARE(s->type(), TensorType(DType::Float32, {3, 1}));
  const VarPtr unknown = Variable::create(TensorType(DType::Float32, {U, 4}), "unknown");
  const VarPtr s2 = sumToShape(g, unknown);
  QCOMPARE(s2->type(), TensorType(DType::Float32, {U, 4}));
  QCOMPARE(s2->owner()->nInputs(), 3);
  QVERIFY(s2->owner()->input(1)->owner() &&
          dynamic_cast<const ShapeI*>(&s2->owner()->input(1)->owner()->op()));
  // Same rank, unknown like dims: cannot be proven, so the op is there.
  const VarPtr gq = Variable::create(TensorType(DType::Float32, {U, U}), "gq");
  QVERIFY(sumToShape(gq, Variable::create(TensorType(DType::Float32, {U, U}))) != gq);
}

void TestElemwiseSumToShape::testInferShape() {
  const std::vector<Tensor> points{randomTensor(DType::Float64, {2, 3, 4}, 6),
                                   randomTensor(DType::Float64, {3, 1}, 7)};
  TSCOPE_CHECK(checkInferShape(
      [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{sumToShape(in[0], in[1])}; },
      points));
  const std::vector<Tensor> points2{randomTensor(DType::Float32, {2, 3, 4}, 8),
                                    randomTensor(DType::Float32, {4}, 9)};
  TSCOPE_CHECK(checkInferShape(
      [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{sumToShape(in[0], in[1])}; },
      points2));
  // The inferred shape is the size inputs themselves.
  const VarPtr g = Variable::create(TensorType(DType::Float32, {2, 3, 4}));
  const VarPtr s = sumToShape(g, Variable::create(TensorType(DType::Float32, {3, 1})));
  const std::vector<ShapeExpr> shapes = inferShapes({s});
  QCOMPARE(constantIntValue(shapes[0][0]), std::optional<std::int64_t>(3));
  QCOMPARE(constantIntValue(shapes[0][1]), std::optional<std::int64_t>(1));
}

void TestElemwiseSumToShape::testGradient_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Dims>("target");
  for (DType d : {DType::Float64, DType::Float32}) {
    const std::string s(dtypeName(d));
    QTest::newRow(("3x1/" + s).c_str()) << d << Dims{3, 1};
    QTest::newRow(("4/" + s).c_str()) << d << Dims{4};
    QTest::newRow(("2x1x4/" + s).c_str()) << d << Dims{2, 1, 4};
    QTest::newRow(("scalar/" + s).c_str()) << d << Dims{};
  }
}

void TestElemwiseSumToShape::testGradient() {
  QFETCH(DType, dtype);
  QFETCH(Dims, target);
  // The target's shape comes from a second input whose value is only a shape source.
  const std::vector<Tensor> points{randomTensor(dtype, {2, 3, 4}, 10),
                                   randomTensor(dtype, target, 11)};
  const GraphBuilder build = [](const std::vector<VarPtr>& in) {
    return std::vector<VarPtr>{sumToShape(in[0], in[1]) * in[1]};
  };
  VerifyGradOptions options;
  options.nTests = 2;
  TSCOPE_CHECK(verifyGrad(build, points, options));
  TSCOPE_CHECK(checkRopLop(build, points));
  // The pullback broadcasts the output gradient back: second(g, og), the sizes disconnected.
  const VarPtr g = Variable::create(TensorType(DType::Float64, {2, 3, 4}));
  const VarPtr s = sumToShape(g, Variable::create(TensorType(DType::Float64, {3, 1})));
  const std::vector<Grad> grads =
      s->owner()->op().pullback(*s->owner(), std::vector<VarPtr>{onesLike(s)});
  QCOMPARE(grads.size(), std::size_t(3));
  QVERIFY(grads[0].isValue());
  QCOMPARE(grads[0].value->type().shape(), (Dims{2, 3, 4}));
  QCOMPARE(grads[1].kind, Grad::Kind::Disconnected);
  QCOMPARE(grads[2].kind, Grad::Kind::Disconnected);
}

void TestElemwiseSumToShape::testRegistry() {
  const OpPtr op = defaultOpRegistry().make("SumToShape", nlohmann::json::object());
  QVERIFY(op->equals(SumToShape()));
  QCOMPARE(op->str(), std::string("SumToShape"));
  try {
    (void)SumToShape::fromProps({{"axis", 1}});
    QFAIL("expected std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains("takes no props"), e.what());
  }
}

void TestElemwiseSumToShape::testBadInputs() {
  auto op = std::make_shared<SumToShape>();
  const VarPtr g = Variable::create(TensorType(DType::Float32, {2, 3}), "g");
  // A size that is not a 0-d int64.
  try {
    (void)(*op)({g, Variable::create(TensorType(DType::Int32, {}), "n")});
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    const QString msg = e.what();
    QVERIFY2(msg.contains("SumToShape") && msg.contains("input 1 ('n')") &&
                 msg.contains("0-d int64") && msg.contains("int32"),
             e.what());
  }
  // More target sizes than g has axes.
  try {
    (void)(*op)({g, constantInt(1), constantInt(2), constantInt(3)});
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    QVERIFY2(
        QString(e.what()).contains("at least 3 dimensions") && QString(e.what()).contains("(2, 3)"),
        e.what());
  }
  // A static size that g cannot be summed to.
  try {
    (void)(*op)({g, constantInt(5)});
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    QVERIFY2(QString(e.what()).contains("size 5"), e.what());
  }
  try {
    (void)(*op)({});
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    QVERIFY2(QString(e.what()).contains("no inputs"), e.what());
  }
  // At run time.
  try {
    runSumToShape(randomTensor(DType::Float32, {2, 3}, 12), {2});
    QFAIL("expected std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains("(2, 3)") && QString(e.what()).contains("(2,)"), e.what());
  }
}

TSCOPE_TEST_MAIN(TestElemwiseSumToShape)
#include "tst_elemwise_sum_to_shape.moc"
