// Elemwise layouts and shapes: numpy broadcasting (static and run-time), strided and transposed
// inputs, in-place operation, output-buffer reuse, inferShape (symbolic, with unknown dims), the
// dtype rules of Note [Elemwise dtype rules], and the errors for bad inputs.
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "op_test_support.h"
#include "test_main.h"

#include <chrono>
#include <functional>
#include <vector>

using namespace tscope::engine;
using namespace tscope::test;

using Dims = std::vector<std::int64_t>;
using DTypes = std::vector<tscope::engine::DType>;
Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::ScalarOp)
Q_DECLARE_METATYPE(Dims)
Q_DECLARE_METATYPE(DTypes)

namespace {
constexpr std::int64_t U = kUnknownDim;

// perform() on a node whose inputs have the given static types (default: the values' types).
Tensor runOp(const OpPtr& op, const std::vector<const Tensor*>& inputs, Tensor out = {},
             std::vector<TensorType> types = {}) {
  std::vector<VarPtr> vars;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    vars.push_back(Variable::create(types.empty() ? TensorType::ofValue(*inputs[i]) : types[i]));
  ApplyPtr node = op->makeNode(vars);
  Tensor* outs[] = {&out};
  op->perform(*node, inputs, outs);
  return out;
}
OpPtr elem(ScalarOp op, std::map<int, int> inplace = {}) {
  return std::make_shared<Elemwise>(op, std::move(inplace));
}

// The reference: f applied at every index of the broadcast shape, reading each input through
// numpy's index mapping (a size-1 axis reads index 0, missing leading axes are dropped).
Tensor naive(const std::function<double(const std::vector<double>&)>& f,
             const std::vector<const Tensor*>& inputs, const Shape& shape, DType dtype) {
  Tensor out(dtype, shape);
  const std::int64_t n = shapeNumel(shape);
  Shape index(shape.size(), 0);
  for (std::int64_t flat = 0; flat < n; ++flat) {
    std::int64_t rest = flat;
    for (std::size_t a = shape.size(); a-- > 0;) {
      index[a] = rest % shape[a];
      rest /= shape[a];
    }
    std::vector<double> args;
    for (const Tensor* t : inputs) {
      Shape sub;
      const std::size_t lead = shape.size() - t->shape().size();
      for (std::size_t a = 0; a < t->shape().size(); ++a)
        sub.push_back(t->shape()[a] == 1 ? 0 : index[lead + a]);
      args.push_back(t->at(sub));
    }
    out.set(index, f(args));
  }
  return out;
}
double addAll(const std::vector<double>& v) {
  return v[0] + v[1];
}
}  // namespace

class TestElemwiseLayout : public QObject {
  Q_OBJECT

 private slots:
  void testBroadcast_data();
  void testBroadcast();
  void testStridedInputs();
  void testInplaceWritesIntoInput();
  void testInplaceFallsBack();
  void testBufferReuse();
  void testRuntimeBroadcast();
  void testRuntimeBroadcastError();
  void testZeroSize();
  void testInferShapeExpressions();
  void testCheckInferShape_data();
  void testCheckInferShape();
  void testDTypeRules_data();
  void testDTypeRules();
  void testTypeErrors();
};

void TestElemwiseLayout::testBroadcast_data() {
  QTest::addColumn<Dims>("a");
  QTest::addColumn<Dims>("b");
  QTest::addColumn<DType>("dtype");
  for (DType d : {DType::Float32, DType::Float64, DType::Int16}) {
    const std::string s(dtypeName(d));
    QTest::newRow(("2x3x4 + 3x1/" + s).c_str()) << Dims{2, 3, 4} << Dims{3, 1} << d;
    QTest::newRow(("2x3x4 + 1x4/" + s).c_str()) << Dims{2, 3, 4} << Dims{1, 4} << d;
    QTest::newRow(("2x3x4 + scalar/" + s).c_str()) << Dims{2, 3, 4} << Dims{} << d;
    QTest::newRow(("scalar + 2x3x4/" + s).c_str()) << Dims{} << Dims{2, 3, 4} << d;
    QTest::newRow(("2x1x4 + 3x1/" + s).c_str()) << Dims{2, 1, 4} << Dims{3, 1} << d;
    QTest::newRow(("4 + 2x3x1/" + s).c_str()) << Dims{4} << Dims{2, 3, 1} << d;
    QTest::newRow(("same 2x3x4/" + s).c_str()) << Dims{2, 3, 4} << Dims{2, 3, 4} << d;
    QTest::newRow(("0-d/" + s).c_str()) << Dims{} << Dims{} << d;
  }
}

void TestElemwiseLayout::testBroadcast() {
  QFETCH(Dims, a);
  QFETCH(Dims, b);
  QFETCH(DType, dtype);
  const Tensor x = randomTensor(dtype, a, 1, -50, 50);
  const Tensor y = randomTensor(dtype, b, 2, -50, 50);
  Shape shape;
  QVERIFY(broadcastStaticShapes(std::vector<std::vector<std::int64_t>>{a, b}).has_value());
  shape = *broadcastStaticShapes(std::vector<std::vector<std::int64_t>>{a, b});
  QVERIFY(closeTo(runOp(elem(ScalarOp::Add), {&x, &y}), naive(addAll, {&x, &y}, shape, dtype)));
  // The same with every dimension unknown to the type: the broadcast happens at run time.
  const std::vector<TensorType> unknown{TensorType(dtype, Dims(a.size(), U)),
                                        TensorType(dtype, Dims(b.size(), U))};
  QVERIFY(closeTo(runOp(elem(ScalarOp::Add), {&x, &y}, {}, unknown),
                  naive(addAll, {&x, &y}, shape, dtype)));
  // A ternary op broadcasts all three.
  const Tensor lo = Tensor::scalar(dtype, -10);
  const Tensor clipped = runOp(elem(ScalarOp::Clip), {&x, &lo, &y});
  auto clipRef = [](const std::vector<double>& v) { return std::min(std::max(v[0], v[1]), v[2]); };
  QVERIFY(closeTo(clipped, naive(clipRef, {&x, &lo, &y}, shape, dtype)));
}

void TestElemwiseLayout::testStridedInputs() {
  // A transposed view (4x3 seen as 3x4), a sliced view (every other column) and a broadcast view.
  const Tensor base = randomTensor(DType::Float32, {4, 3}, 3);
  const Tensor t = base.transpose();
  QVERIFY(!t.isContiguous());
  const Tensor wide = randomTensor(DType::Float32, {3, 8}, 4);
  const Tensor sliced = wide.slice(1, 0, 8, 2);
  QCOMPARE(sliced.shape(), (Shape{3, 4}));
  QVERIFY(closeTo(runOp(elem(ScalarOp::Mul), {&t, &sliced}),
                  naive([](const std::vector<double>& v) { return v[0] * v[1]; }, {&t, &sliced},
                        {3, 4}, DType::Float32)));
  const Tensor col = randomTensor(DType::Float32, {3, 1}, 5);
  const Tensor stretched = col.broadcastTo({3, 4});
  QVERIFY(closeTo(runOp(elem(ScalarOp::Sub), {&stretched, &t}),
                  naive([](const std::vector<double>& v) { return v[0] - v[1]; }, {&stretched, &t},
                        {3, 4}, DType::Float32)));
  // A unary op on a transposed 3-d view.
  const Tensor cube = randomTensor(DType::Float64, {2, 3, 4}, 6);
  const std::vector<int> perm{2, 0, 1};
  const Tensor permuted = cube.transpose(perm);
  QVERIFY(closeTo(runOp(elem(ScalarOp::Exp), {&permuted}),
                  naive([](const std::vector<double>& v) { return std::exp(v[0]); }, {&permuted},
                        {4, 2, 3}, DType::Float64),
                  1e-14, 0));
}

void TestElemwiseLayout::testInplaceWritesIntoInput() {
  const Tensor a = randomTensor(DType::Float32, {2, 3, 4}, 7);
  Tensor b = randomTensor(DType::Float32, {2, 3, 4}, 8);
  const Tensor expected = naive(addAll, {&a, &b}, {2, 3, 4}, DType::Float32);
  const Tensor out = runOp(elem(ScalarOp::Add, {{0, 1}}), {&a, &b});
  QVERIFY(out.sharesStorageWith(b));
  QVERIFY(closeTo(out, expected));
  QVERIFY(closeTo(b, expected));  // the input's buffer holds the result
  // In place into a transposed (strided) input, with a broadcast second operand.
  Tensor storage = randomTensor(DType::Float64, {4, 3}, 9);
  Tensor view = storage.transpose();
  const Tensor row = randomTensor(DType::Float64, {4}, 10);
  const Tensor expected2 = naive([](const std::vector<double>& v) { return v[0] * v[1]; },
                                 {&view, &row}, {3, 4}, DType::Float64);
  const Tensor out2 = runOp(elem(ScalarOp::Mul, {{0, 0}}), {&view, &row});
  QVERIFY(out2.sharesStorageWith(storage));
  QVERIFY(closeTo(view, expected2, 1e-14, 0));
  // An n-ary add writing into its third input still reads that input's old values.
  Tensor c = Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3});
  const Tensor d = Tensor::fromDoubles(DType::Float32, {3}, {10, 20, 30});
  const Tensor out3 = runOp(elem(ScalarOp::Add, {{0, 2}}), {&d, &d, &c});
  QVERIFY(out3.sharesStorageWith(c));
  QCOMPARE(c.toDoubles(), (std::vector<double>{21, 42, 63}));
  // In place in float16 (computed in float32, written back).
  Tensor h = Tensor::fromDoubles(DType::Float16, {2}, {1, 2});
  const Tensor out4 = runOp(elem(ScalarOp::Sqr, {{0, 0}}), {&h});
  QVERIFY(out4.sharesStorageWith(h));
  QCOMPARE(h.toDoubles(), (std::vector<double>{1, 4}));
}

void TestElemwiseLayout::testInplaceFallsBack() {
  // The inplace input turns out to be broadcast at run time (its type said unknown): the result
  // needs a larger buffer, so the op allocates and leaves the input alone.
  Tensor small = Tensor::fromDoubles(DType::Float32, {1, 4}, {1, 2, 3, 4});
  const Tensor big = randomTensor(DType::Float32, {3, 4}, 11);
  const std::vector<TensorType> types{TensorType(DType::Float32, {U, U}),
                                      TensorType(DType::Float32, {U, U})};
  const Tensor out = runOp(elem(ScalarOp::Add, {{0, 0}}), {&small, &big}, {}, types);
  QCOMPARE(out.shape(), (Shape{3, 4}));
  QVERIFY(!out.sharesStorageWith(small));
  QCOMPARE(small.toDoubles(), (std::vector<double>{1, 2, 3, 4}));
  QVERIFY(closeTo(out, naive(addAll, {&small, &big}, {3, 4}, DType::Float32)));
  // Another input reads the same storage through another view (x + x.T in place into x): the
  // elements would be overwritten before they are read, so the op allocates.
  Tensor sq = Tensor::fromDoubles(DType::Float64, {2, 2}, {1, 2, 3, 4});
  const Tensor sqT = sq.transpose();
  const Tensor out2 = runOp(elem(ScalarOp::Add, {{0, 0}}), {&sq, &sqT});
  QVERIFY(!out2.sharesStorageWith(sq));
  QCOMPARE(out2.toDoubles(), (std::vector<double>{2, 5, 5, 8}));
}

void TestElemwiseLayout::testBufferReuse() {
  // reuseOrAllocate keeps the output buffer from call to call: no allocation on the 0-d and
  // same-shape paths once the buffer exists.
  const OpPtr op = elem(ScalarOp::Add);
  const Tensor a = Tensor::scalar(DType::Float32, 1.5), b = Tensor::scalar(DType::Float32, 2);
  std::vector<VarPtr> vars{Variable::create(TensorType::ofValue(a)),
                           Variable::create(TensorType::ofValue(b))};
  ApplyPtr node = op->makeNode(vars);
  Tensor out;
  Tensor* outs[] = {&out};
  const Tensor* ins[] = {&a, &b};
  op->perform(*node, ins, outs);
  const void* first = out.rawData();
  op->perform(*node, ins, outs);
  QCOMPARE(out.rawData(), first);
  QCOMPARE(out.item(), 3.5);
  // The per-node cost of a 0-d add with the buffer reused (printed, not asserted: a figure).
  constexpr int kCalls = 200000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) op->perform(*node, ins, outs);
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kCalls;
  qInfo("0-d float32 add: %.1f ns per perform()", ns);
  QCOMPARE(out.rawData(), first);
  // Same-shape path.
  const Tensor x = randomTensor(DType::Float64, {2, 3, 4}, 12);
  std::vector<VarPtr> vars2{Variable::create(TensorType::ofValue(x))};
  ApplyPtr node2 = elem(ScalarOp::Tanh)->makeNode(vars2);
  const Tensor* ins2[] = {&x};
  Tensor out2;
  Tensor* outs2[] = {&out2};
  node2->op().perform(*node2, ins2, outs2);
  const void* first2 = out2.rawData();
  node2->op().perform(*node2, ins2, outs2);
  QCOMPARE(out2.rawData(), first2);
}

void TestElemwiseLayout::testRuntimeBroadcast() {
  // Through a compiled function, with the inputs' dims unknown to the types.
  const Tensor x = randomTensor(DType::Float64, {3, 1}, 13);
  const Tensor y = randomTensor(DType::Float64, {1, 4}, 14);
  const std::vector<Tensor> out = evaluate(
      [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{in[0] * in[1]}; }, {x, y});
  QVERIFY(closeTo(out[0], naive([](const std::vector<double>& v) { return v[0] * v[1]; }, {&x, &y},
                                {3, 4}, DType::Float64)));
}

void TestElemwiseLayout::testRuntimeBroadcastError() {
  const Tensor x = randomTensor(DType::Float32, {2, 3}, 15);
  const Tensor y = randomTensor(DType::Float32, {4}, 16);
  const std::vector<TensorType> types{TensorType(DType::Float32, {U, U}),
                                      TensorType(DType::Float32, {U})};
  try {
    runOp(elem(ScalarOp::Add), {&x, &y}, {}, types);
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    const QString msg = e.what();
    QVERIFY2(msg.contains("Elemwise{add}") && msg.contains("(2, 3)") && msg.contains("(4,)"),
             e.what());
  }
}

void TestElemwiseLayout::testZeroSize() {
  const Tensor x = Tensor::zeros(DType::Float32, {0, 3});
  const Tensor y = randomTensor(DType::Float32, {3}, 17);
  const Tensor out = runOp(elem(ScalarOp::Add), {&x, &y});
  QCOMPARE(out.shape(), (Shape{0, 3}));
}

void TestElemwiseLayout::testInferShapeExpressions() {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {U, U}), "x");
  const VarPtr y = Variable::create(TensorType(DType::Float32, {1, U}), "y");
  const VarPtr z = Variable::create(TensorType(DType::Float32, {U, 5}), "z");
  const VarPtr out = elemwise(ScalarOp::Add, {x, y, z});
  QCOMPARE(out->type().shape(), (Dims{U, 5}));
  const std::vector<ShapeExpr> shapes = inferShapes({out});
  QCOMPARE(shapes.size(), std::size_t(1));
  const ShapeExpr& s = shapes[0];
  QCOMPARE(s.size(), std::size_t(2));
  // Axis 0: y is statically 1, so the unknown sizes of x and z compete: maximum(x.shape[0],
  // z.shape[0]).
  QVERIFY(s[0]->owner());
  const auto* maxOp = dynamic_cast<const Elemwise*>(&s[0]->owner()->op());
  QVERIFY(maxOp && maxOp->scalarOp() == ScalarOp::Maximum);
  QCOMPARE(s[0]->owner()->nInputs(), 2);
  // Axis 1: z knows 5.
  QCOMPARE(constantIntValue(s[1]), std::optional<std::int64_t>(5));
  // One unknown candidate needs no maximum: x(?, ?) + y(1, ?) gives x.shape[0] itself.
  const std::vector<ShapeExpr> s2 = inferShapes({x + y});
  QVERIFY(s2[0][0]->owner() && dynamic_cast<const ShapeI*>(&s2[0][0]->owner()->op()));
  QCOMPARE(s2[0][0]->owner()->input(0), x);
  // All statically 1: the constant 1.
  const VarPtr r = Variable::create(TensorType(DType::Float32, {1, 1}), "r");
  QCOMPARE(constantIntValue(inferShapes({r * r})[0][0]), std::optional<std::int64_t>(1));
}

void TestElemwiseLayout::testCheckInferShape_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<Dims>("a");
  QTest::addColumn<Dims>("b");
  QTest::newRow("add 2x3x4 3x1") << ScalarOp::Add << Dims{2, 3, 4} << Dims{3, 1};
  QTest::newRow("mul 1x4 2x3x1") << ScalarOp::Mul << Dims{1, 4} << Dims{2, 3, 1};
  QTest::newRow("sub scalar") << ScalarOp::Sub << Dims{2, 3, 4} << Dims{};
  QTest::newRow("lt 2x1x4 3x1") << ScalarOp::Lt << Dims{2, 1, 4} << Dims{3, 1};
  QTest::newRow("second 2x3 3") << ScalarOp::Second << Dims{2, 3} << Dims{3};
  QTest::newRow("second scalar") << ScalarOp::Second << Dims{2, 3, 4} << Dims{};
  QTest::newRow("maximum same") << ScalarOp::Maximum << Dims{2, 3, 4} << Dims{2, 3, 4};
  QTest::newRow("exp") << ScalarOp::Exp << Dims{2, 3, 4} << Dims{};
}

void TestElemwiseLayout::testCheckInferShape() {
  QFETCH(ScalarOp, op);
  QFETCH(Dims, a);
  QFETCH(Dims, b);
  std::vector<Tensor> points{randomTensor(DType::Float32, a, 18, 0.5, 2)};
  if (scalarOpInfo(op).arity != 1) points.push_back(randomTensor(DType::Float32, b, 19, 0.5, 2));
  TSCOPE_CHECK(checkInferShape(
      [op](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{elemwise(op, in)}; },
      points));
  // Ternary and n-ary shapes as well.
  const std::vector<Tensor> three{randomTensor(DType::Float64, {2, 1, 4}, 20),
                                  randomTensor(DType::Float64, {3, 1}, 21),
                                  randomTensor(DType::Float64, {4}, 22)};
  TSCOPE_CHECK(checkInferShape(
      [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{clip(in[0], in[1], in[2])}; },
      three));
  TSCOPE_CHECK(checkInferShape(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{elemwise(ScalarOp::Add, {in[0], in[1], in[2]})};
      },
      three));
}

void TestElemwiseLayout::testDTypeRules_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<DTypes>("inputs");
  QTest::addColumn<DType>("expected");
  using D = DType;
  QTest::newRow("int8+uint8 -> int16") << ScalarOp::Add << DTypes{D::Int8, D::UInt8} << D::Int16;
  QTest::newRow("int32/int32 true_div -> float64")
      << ScalarOp::TrueDiv << DTypes{D::Int32, D::Int32} << D::Float64;
  QTest::newRow("int8/int8 true_div -> float32")
      << ScalarOp::TrueDiv << DTypes{D::Int8, D::Int8} << D::Float32;
  QTest::newRow("bool+bool add -> bool") << ScalarOp::Add << DTypes{D::Bool, D::Bool} << D::Bool;
  QTest::newRow("float16 exp -> float16") << ScalarOp::Exp << DTypes{D::Float16} << D::Float16;
  QTest::newRow("int64 exp -> float64") << ScalarOp::Exp << DTypes{D::Int64} << D::Float64;
  QTest::newRow("uint8 sqrt -> float32") << ScalarOp::Sqrt << DTypes{D::UInt8} << D::Float32;
  QTest::newRow("float32*int32 -> float64")
      << ScalarOp::Mul << DTypes{D::Float32, D::Int32} << D::Float64;
  QTest::newRow("float32*int16 -> float32")
      << ScalarOp::Mul << DTypes{D::Float32, D::Int16} << D::Float32;
  QTest::newRow("float16+int16 -> float32")
      << ScalarOp::Add << DTypes{D::Float16, D::Int16} << D::Float32;
  QTest::newRow("int64+uint8 -> int64") << ScalarOp::Add << DTypes{D::Int64, D::UInt8} << D::Int64;
  QTest::newRow("int32 int_div -> int32")
      << ScalarOp::IntDiv << DTypes{D::Int32, D::Int32} << D::Int32;
  QTest::newRow("float32 < float64 -> bool")
      << ScalarOp::Lt << DTypes{D::Float32, D::Float64} << D::Bool;
  QTest::newRow("switch(bool, int8, float32) -> float32")
      << ScalarOp::Switch << DTypes{D::Bool, D::Int8, D::Float32} << D::Float32;
  QTest::newRow("switch(float64 cond, int8, int8) -> int8")
      << ScalarOp::Switch << DTypes{D::Float64, D::Int8, D::Int8} << D::Int8;
  QTest::newRow("second(float64, int16) -> int16")
      << ScalarOp::Second << DTypes{D::Float64, D::Int16} << D::Int16;
  QTest::newRow("clip(int16, int8, uint8) -> int16")
      << ScalarOp::Clip << DTypes{D::Int16, D::Int8, D::UInt8} << D::Int16;
  QTest::newRow("round int32 -> int32") << ScalarOp::Round << DTypes{D::Int32} << D::Int32;
  QTest::newRow("not float32 -> bool") << ScalarOp::Not << DTypes{D::Float32} << D::Bool;
}

void TestElemwiseLayout::testDTypeRules() {
  QFETCH(ScalarOp, op);
  QFETCH(DTypes, inputs);
  QFETCH(DType, expected);
  std::vector<VarPtr> vars;
  std::vector<Tensor> values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    vars.push_back(Variable::create(TensorType(inputs[i], {2, 3})));
    values.push_back(randomTensor(inputs[i], {2, 3}, 30 + i, 1, 5));
  }
  const VarPtr out = elemwise(op, vars);
  QCOMPARE(out->type().dtype(), expected);
  // The computed value has the declared dtype too.
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : values) ptrs.push_back(&t);
  QCOMPARE(runOp(elem(op), ptrs).dtype(), expected);
  // And the values agree with computing in float64 and converting, for the arithmetic ones.
  if (op == ScalarOp::Add) {
    const Tensor got = runOp(elem(op), ptrs);
    std::vector<Tensor> wide;
    for (const Tensor& t : values) wide.push_back(t.astype(DType::Float64));
    QVERIFY(closeTo(got.astype(DType::Float64),
                    runOp(elem(op), {&wide[0], &wide[1]}).astype(expected).astype(DType::Float64)));
  }
}

void TestElemwiseLayout::testTypeErrors() {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  const VarPtr y = Variable::create(TensorType(DType::Float32, {4}), "y");
  try {
    (void)(x + y);
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    const QString msg = e.what();
    QVERIFY2(msg.contains("Elemwise{add}") && msg.contains("cannot be broadcast") &&
                 msg.contains("(2, 3)") && msg.contains("(4,)"),
             e.what());
  }
  try {
    (void)elemwise(ScalarOp::Sub, {x});
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    QVERIFY2(QString(e.what()).contains("expected 2 inputs, found 1"), e.what());
  }
  try {
    (void)elemwise(ScalarOp::Add, {x});
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    QVERIFY2(QString(e.what()).contains("two or more inputs"), e.what());
  }
  // An inplace output must fit the input it overwrites.
  const VarPtr row = Variable::create(TensorType(DType::Float32, {1, 3}), "row");
  try {
    (void)elem(ScalarOp::Add, {{0, 1}})->operator()({x, row});
    QFAIL("expected a TypeError");
  } catch (const TypeError& e) {
    QVERIFY2(
        QString(e.what()).contains("input 1 ('row')") && QString(e.what()).contains("in place"),
        e.what());
  }
}

TSCOPE_TEST_MAIN(TestElemwiseLayout)
#include "tst_elemwise_layout.moc"
