// CAReduce (sum, prod, max, min, all, any): values against a naive loop in float32, float64 and
// int32 on a 2x3x4 tensor over several axis sets (negative, keepdims, every axis), strided inputs
// (transposed, sliced, broadcast views), dtypes of the result, NaN, empty reductions, inferShape,
// props and the registry, and the messages for bad axes.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "reduce_reference.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::Shape)
Q_DECLARE_METATYPE(std::vector<int>)

namespace {

VarPtr buildReduce(const std::string& op, const VarPtr& x, const Axes& axes, bool keepdims) {
  if (op == "sum") return sum(x, axes, keepdims);
  if (op == "prod") return prod(x, axes, keepdims);
  if (op == "max") return max(x, axes, keepdims);
  if (op == "min") return min(x, axes, keepdims);
  if (op == "all") return all(x, axes, keepdims);
  return any(x, axes, keepdims);
}

ScalarOp scalarOf(const std::string& op) {
  if (op == "sum") return ScalarOp::Add;
  if (op == "prod") return ScalarOp::Mul;
  if (op == "max") return ScalarOp::Maximum;
  if (op == "min") return ScalarOp::Minimum;
  if (op == "all") return ScalarOp::And;
  return ScalarOp::Or;
}

DType resultDtype(const std::string& op, DType in) {
  if (op == "all" || op == "any") return DType::Bool;
  if ((op == "sum" || op == "prod") && !isFloat(in)) return DType::Int64;
  return in;
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// Runs op->perform on concrete (possibly strided) values, bypassing compile(), so the kernel sees
// the views exactly as given.
Tensor performOn(const OpPtr& op, const std::vector<Tensor>& values) {
  std::vector<VarPtr> vars;
  for (const Tensor& v : values) vars.push_back(Variable::create(TensorType::ofValue(v)));
  ApplyPtr node = op->makeNode(vars);
  std::vector<const Tensor*> ins;
  for (const Tensor& v : values) ins.push_back(&v);
  Tensor out;
  Tensor* outs[] = {&out};
  op->perform(*node, ins, outs);
  return out;
}

// The expected result of `op` over normalised axes of x, as a tensor (keepdims: 1 where reduced).
Tensor expected(const std::string& op, const Tensor& x, std::vector<int> axes, bool keepdims) {
  for (int& a : axes)
    if (a < 0) a += x.ndim();
  auto [shape, values] = referenceReduce(x, axes, op);
  if (keepdims) {
    shape.clear();
    for (int a = 0; a < x.ndim(); ++a)
      shape.push_back(axes.empty() || std::find(axes.begin(), axes.end(), a) != axes.end()
                          ? 1
                          : x.shape()[static_cast<std::size_t>(a)]);
  }
  return Tensor::fromDoubles(resultDtype(op, x.dtype()), shape, values);
}

// Values for op: near 1 for prod (so float32 keeps precision), with zeros for all/any.
Tensor inputFor(const std::string& op, DType dtype, Shape shape, std::uint64_t seed) {
  Tensor x = op == "prod" ? randomTensor(dtype, shape, seed, isFloat(dtype) ? 0.5 : -2.0,
                                         isFloat(dtype) ? 1.5 : 3.0)
                          : randomTensor(dtype, shape, seed, -4.0, 4.0);
  if (op == "all" || op == "any") {
    Tensor flat = x.reshape({-1});  // a view: x is contiguous
    flat.set({6 % flat.numel()}, 0.0);
    flat.set({(flat.numel() * 5) / 6}, 0.0);
  }
  return x;
}

}  // namespace

class TestReduce : public QObject {
  Q_OBJECT

 private slots:
  void testValues_data();
  void testValues();
  void testStridedInputs_data();
  void testStridedInputs();
  void testEmptyAxesMeanAll();
  void testDtypes();
  void testFloat16AccumulatesInFloat32();
  void testNaN();
  void testZeroSizeReductions();
  void testInferShape_data();
  void testInferShape();
  void testBadAxes();
  void testPropsAndRegistry();
  void testBadProps_data();
  void testBadProps();
};

void TestReduce::testValues_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<std::vector<int>>("axes");
  QTest::addColumn<bool>("keepdims");
  const std::vector<std::pair<std::vector<int>, bool>> axisSets = {
      {{0, 2}, false},  {{1}, false}, {{}, false}, {{-1}, false},
      {{-3, -1}, true}, {{1}, true},  {{}, true}};
  for (const char* op : {"sum", "prod", "max", "min", "all", "any"})
    for (DType dtype : {DType::Float32, DType::Float64, DType::Int32})
      for (const auto& [axes, keep] : axisSets) {
        std::string ax;
        for (int a : axes) ax += std::to_string(a) + " ";
        QTest::addRow("%s %s axes [%s]%s", op, std::string(dtypeName(dtype)).c_str(), ax.c_str(),
                      keep ? " keepdims" : "")
            << QString(op) << dtype << axes << keep;
      }
}

void TestReduce::testValues() {
  QFETCH(QString, op);
  QFETCH(DType, dtype);
  QFETCH(std::vector<int>, axes);
  QFETCH(bool, keepdims);
  const std::string o = op.toStdString();
  const Tensor x = inputFor(o, dtype, {2, 3, 4}, 11);
  const Tensor want = expected(o, x, axes, keepdims);
  const auto got = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector{buildReduce(o, in[0], axes, keepdims)};
      },
      {x});
  QVERIFY(closeTo(got[0], want, 1e-5, 1e-5));
  // The symbolic type agrees with the value: dtype, rank and the kept static sizes.
  const VarPtr xs = Variable::create(TensorType::ofValue(x));
  const VarPtr r = buildReduce(o, xs, axes, keepdims);
  QCOMPARE(r->type().dtype(), want.dtype());
  QCOMPARE(r->type().shape(), want.shape());
}

void TestReduce::testStridedInputs_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<QString>("view");
  QTest::addColumn<std::vector<int>>("axes");
  for (const char* op : {"sum", "max", "prod", "any"})
    for (const char* view : {"transposed", "sliced", "reversed", "broadcast"})
      for (const std::vector<int>& axes : {std::vector<int>{0, 2}, {1}, {2}, {0}, {}}) {
        std::string ax;
        for (int a : axes) ax += std::to_string(a) + " ";
        QTest::addRow("%s %s [%s]", op, view, ax.c_str()) << QString(op) << QString(view) << axes;
      }
}

void TestReduce::testStridedInputs() {
  QFETCH(QString, op);
  QFETCH(QString, view);
  QFETCH(std::vector<int>, axes);
  const std::string o = op.toStdString();
  // Every view is 2x3x4 but none is contiguous.
  Tensor x;
  if (view == "transposed")
    x = inputFor(o, DType::Float64, {4, 3, 2}, 5).transpose();
  else if (view == "sliced")
    x = inputFor(o, DType::Float64, {2, 3, 9}, 5).slice(2, 1, 9, 2);
  else if (view == "reversed")
    x = inputFor(o, DType::Float64, {2, 3, 4}, 5).slice(1, 2, -4, -1);
  else
    x = inputFor(o, DType::Float64, {2, 1, 4}, 5).broadcastTo({2, 3, 4});
  QCOMPARE(x.shape(), (Shape{2, 3, 4}));
  QVERIFY(!x.isContiguous());
  std::optional<std::vector<int>> opAxes;
  if (!axes.empty()) opAxes = axes;
  const Tensor got = performOn(std::make_shared<CAReduce>(scalarOf(o), opAxes), {x});
  QVERIFY(closeTo(got, expected(o, x, axes, false), 1e-12, 1e-12));
}

void TestReduce::testEmptyAxesMeanAll() {
  // Note [Empty axes mean all]: an empty list reduces every axis, as null does in props.
  const Tensor x = randomTensor(DType::Float64, {2, 3, 4}, 3);
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{sum(in[0], {}), sum(in[0], {0, 1, 2})};
      },
      {x});
  QCOMPARE(got[0].ndim(), 0);
  QVERIFY(closeTo(got[0], got[1], 1e-12, 1e-12));
  QCOMPARE(CAReduce(ScalarOp::Add, std::vector<int>{}).props()["axis"], nlohmann::json(nullptr));
  // Spelling every axis gives the same op as spelling none, so the two nodes merge.
  const VarPtr v = Variable::create(TensorType(DType::Float64, {2, 3, 4}));
  QVERIFY(sum(v)->owner()->op().equals(sum(v, {2, -2, 0})->owner()->op()));
  QCOMPARE(sum(v, {0, 1, 2})->owner()->op().str(), std::string("Sum"));
}

void TestReduce::testDtypes() {
  // Note [Reduction dtypes]: integers and bool sum in int64 (no int32 overflow), floats keep
  // theirs.
  const Tensor big = Tensor::full(DType::Int32, {2, 4}, 1 << 30);
  auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{sum(in[0]), prod(in[0], {0})};
      },
      {big});
  QCOMPARE(got[0].dtype(), DType::Int64);
  QCOMPARE(got[0].item(), 8.0 * (1 << 30));
  QCOMPARE(got[1].dtype(), DType::Int64);
  QCOMPARE(got[1].at({0}), std::ldexp(1.0, 60));
  const Tensor flags = Tensor::fromDoubles(DType::Bool, {2, 3}, {1, 0, 1, 1, 1, 0});
  got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{sum(in[0], {1}), any(in[0], {0}), max(in[0])};
      },
      {flags});
  QVERIFY(closeTo(got[0], Tensor::fromDoubles(DType::Int64, {2}, {2, 2})));
  QVERIFY(closeTo(got[1], Tensor::fromDoubles(DType::Bool, {3}, {1, 1, 1})));
  QCOMPARE(got[2].dtype(), DType::Bool);
  const Tensor bytes = Tensor::full(DType::UInt8, {300}, 200);
  got = evaluate([](const std::vector<VarPtr>& in) { return std::vector{sum(in[0])}; }, {bytes});
  QCOMPARE(got[0].dtype(), DType::Int64);
  QCOMPARE(got[0].item(), 60000.0);
  // An explicit output dtype.
  const Tensor ints = Tensor::fromDoubles(DType::Int32, {2, 3}, {1, 2, 3, 4, 5, 6});
  got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{sum(in[0], {0}, false, DType::Float64)};
      },
      {ints});
  QVERIFY(closeTo(got[0], Tensor::fromDoubles(DType::Float64, {3}, {5, 7, 9})));
  const VarPtr f = Variable::create(TensorType(DType::Float32, {2, 3}));
  QCOMPARE(sum(f)->type().dtype(), DType::Float32);
  QCOMPARE(max(Variable::create(TensorType(DType::Int8, {2, 3})))->type().dtype(), DType::Int8);
  QCOMPARE(all(f)->type().dtype(), DType::Bool);
  // all/any treat NaN as true (nonzero), as numpy.
  const Tensor nan = Tensor::fromDoubles(DType::Float32, {2}, {std::nan(""), 1});
  got = evaluate([](const std::vector<VarPtr>& in) { return std::vector{all(in[0])}; }, {nan});
  QCOMPARE(got[0].item(), 1.0);
}

void TestReduce::testFloat16AccumulatesInFloat32() {
  // 3000 ones: a float16 accumulator sticks at 2048 (2049 is not representable); float32 does not.
  const Tensor ones = Tensor::full(DType::Float16, {3, 1000}, 1.0);
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{sum(in[0]), max(in[0], {1})};
      },
      {ones});
  QCOMPARE(got[0].dtype(), DType::Float16);
  QCOMPARE(got[0].item(), 3000.0);
  QCOMPARE(got[1].dtype(), DType::Float16);
  QVERIFY(closeTo(got[1], Tensor::full(DType::Float16, {3}, 1.0)));
}

void TestReduce::testNaN() {
  // numpy's max/min propagate NaN wherever it sits in the run (first, middle, last lane).
  for (std::int64_t at : {0, 5, 17, 39}) {
    Tensor x = randomTensor(DType::Float32, {2, 40}, 9);
    x.set({1, at}, std::nan(""));
    const auto got = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector{max(in[0], {1}), min(in[0], {1}), max(in[0], {0}), max(in[0])};
        },
        {x});
    QVERIFY(!std::isnan(got[0].at({0})));
    QVERIFY2(std::isnan(got[0].at({1})), qPrintable(QString("NaN at %1").arg(at)));
    QVERIFY(std::isnan(got[1].at({1})));
    QVERIFY(std::isnan(got[2].at({at})));
    QVERIFY(!std::isnan(got[2].at({at == 0 ? 1 : 0})));
    QVERIFY(std::isnan(got[3].item()));
  }
}

void TestReduce::testZeroSizeReductions() {
  const Tensor x = Tensor::zeros(DType::Float32, {2, 0, 3});
  const auto got = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector{sum(in[0], {1}), prod(in[0], {1}), all(in[0], {1}), any(in[0], {1}),
                           max(in[0], {0})};
      },
      {x});
  QVERIFY(closeTo(got[0], Tensor::zeros(DType::Float32, {2, 3})));
  QVERIFY(closeTo(got[1], Tensor::full(DType::Float32, {2, 3}, 1.0)));
  QVERIFY(closeTo(got[2], Tensor::full(DType::Bool, {2, 3}, 1.0)));
  QVERIFY(closeTo(got[3], Tensor::zeros(DType::Bool, {2, 3})));
  QCOMPARE(got[4].shape(), (Shape{0, 3}));  // nothing to reduce into: no error
  // max over an empty axis has no identity.
  const std::string msg = message(
      [&] { performOn(std::make_shared<CAReduce>(ScalarOp::Maximum, std::vector{1}), {x}); });
  QVERIFY2(msg.find("zero-size") != std::string::npos && msg.find("(2, 0, 3)") != std::string::npos,
           msg.c_str());
}

void TestReduce::testInferShape_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<std::vector<int>>("axes");
  QTest::addColumn<bool>("keepdims");
  for (const char* op : {"sum", "prod", "max", "min", "all", "any"}) {
    QTest::addRow("%s (0, 2)", op) << QString(op) << std::vector<int>{0, 2} << false;
    QTest::addRow("%s (1,) keepdims", op) << QString(op) << std::vector<int>{1} << true;
    QTest::addRow("%s all", op) << QString(op) << std::vector<int>{} << false;
    QTest::addRow("%s -1", op) << QString(op) << std::vector<int>{-1} << false;
  }
}

void TestReduce::testInferShape() {
  QFETCH(QString, op);
  QFETCH(std::vector<int>, axes);
  QFETCH(bool, keepdims);
  const std::string o = op.toStdString();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = inputFor(o, dtype, {2, 3, 4}, 1);
    TSCOPE_CHECK(checkInferShape(
        [&](const std::vector<VarPtr>& in) {
          return std::vector{buildReduce(o, in[0], axes, keepdims)};
        },
        {x}));
  }
}

void TestReduce::testBadAxes() {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3, 4}), "x");
  std::string msg = message([&] { sum(x, {3}); });
  QVERIFY2(msg.find("sum: axis 3 is out of range for TensorType(float32, (2, 3, 4))") !=
               std::string::npos,
           msg.c_str());
  msg = message([&] { max(x, {-4}); });
  QVERIFY2(msg.find("max: axis -4") != std::string::npos && msg.find("-3..2") != std::string::npos,
           msg.c_str());
  msg = message([&] { prod(x, {1, -2}); });
  QVERIFY2(msg.find("prod: axis 1 is repeated in [1, -2]") != std::string::npos, msg.c_str());
  bool typeError = false;
  try {
    sum(x, {0, 0});
  } catch (const TypeError&) {
    typeError = true;
  }
  QVERIFY(typeError);
  // The op itself names the missing axis and the input.
  msg = message([&] { std::make_shared<CAReduce>(ScalarOp::Add, std::vector{5})->makeNode({x}); });
  QVERIFY2(msg.find("Sum{axis=[5]}: input 0 ('x'): expected a tensor with an axis 5") !=
               std::string::npos,
           msg.c_str());
  QVERIFY2(msg.find("found TensorType(float32, (2, 3, 4))") != std::string::npos, msg.c_str());
}

void TestReduce::testPropsAndRegistry() {
  const OpRegistry& registry = defaultOpRegistry();
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"scalar_op", "add"}, {"axis", {0, 2}}}, "Sum{axis=[0,2]}"},
      {{{"scalar_op", "mul"}, {"axis", nullptr}}, "Prod"},
      {{{"scalar_op", "maximum"}, {"axis", {1}}}, "Max{axis=[1]}"},
      {{{"scalar_op", "minimum"}, {"axis", nullptr}}, "Min"},
      {{{"scalar_op", "and"}, {"axis", {0}}}, "All{axis=[0]}"},
      {{{"scalar_op", "or"}, {"axis", nullptr}}, "Any"},
      {{{"scalar_op", "add"}, {"axis", {1}}, {"dtype", "float64"}, {"acc_dtype", "float64"}},
       "Sum{axis=[1],dtype=float64,acc_dtype=float64}"},
  };
  for (const auto& [props, str] : cases) {
    const OpPtr op = registry.make("CAReduce", props);
    QCOMPARE(op->str(), str);
    QCOMPARE(op->props(), props);
    QVERIFY(registry.make("CAReduce", op->props())->equals(*op));
  }
  QVERIFY(!CAReduce(ScalarOp::Add, std::vector{1}).equals(CAReduce(ScalarOp::Add, std::vector{0})));
  QVERIFY(!CAReduce(ScalarOp::Add).equals(CAReduce(ScalarOp::Mul)));
  // Axes are kept sorted whatever order they came in.
  QCOMPARE(registry.make("CAReduce", {{"scalar_op", "add"}, {"axis", {2, 0}}})->str(),
           std::string("Sum{axis=[0,2]}"));
}

void TestReduce::testBadProps_data() {
  QTest::addColumn<QString>("props");
  QTest::addColumn<QString>("named");
  QTest::newRow("not a reduction") << R"({"scalar_op": "sub"})"
                                   << "\"sub\" is not a reduction";
  QTest::newRow("unknown scalar_op") << R"({"scalar_op": "frob"})"
                                     << "frob";
  QTest::newRow("no scalar_op") << R"({"axis": [0]})"
                                << "scalar_op";
  QTest::newRow("axis not array") << R"({"scalar_op": "add", "axis": 1})"
                                  << "\"axis\"";
  QTest::newRow("negative axis") << R"({"scalar_op": "add", "axis": [-1]})"
                                 << "-1";
  QTest::newRow("repeated axis") << R"({"scalar_op": "add", "axis": [1, 1]})"
                                 << "twice";
  QTest::newRow("dtype on max") << R"({"scalar_op": "maximum", "dtype": "float64"})"
                                << "add and mul only";
  QTest::newRow("bad acc_dtype") << R"({"scalar_op": "add", "acc_dtype": "int8"})"
                                 << "acc_dtype";
  QTest::newRow("unknown dtype") << R"({"scalar_op": "add", "dtype": "float8"})"
                                 << "float8";
  QTest::newRow("unknown key") << R"({"scalar_op": "add", "keepdims": true})"
                               << "keepdims";
  QTest::newRow("argmax axis") << R"({"axis": "x"})"
                               << "\"axis\"";
}

void TestReduce::testBadProps() {
  QFETCH(QString, props);
  QFETCH(QString, named);
  const auto json = nlohmann::json::parse(props.toStdString());
  const std::string name =
      QString(QTest::currentDataTag()) == "argmax axis" ? "Argmax" : "CAReduce";
  const std::string msg = message([&] {
    try {
      defaultOpRegistry().make(name, json);
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("wrong exception type: ") + e.what());
    }
  });
  QVERIFY2(msg.find(named.toStdString()) != std::string::npos, msg.c_str());
  QVERIFY2(msg.find("wrong exception type") == std::string::npos, msg.c_str());
}

TSCOPE_TEST_MAIN(TestReduce)
#include "tst_reduce.moc"
