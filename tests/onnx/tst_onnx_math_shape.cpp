// The converters of ONNX's elementwise, logic, cast and reduction ops and of its shape ops: tiny
// models built here (onnx_builder.h), imported, run in modes none and fast_run and compared with
// values worked out by hand or with <cmath> below. The rows cover the forms that changed between
// opsets (legacy broadcast, Clip bounds, Squeeze/Unsqueeze/Reduce/Split axes and sizes, Slice
// attributes vs inputs) and shapes computed at run time; error rows check that bad nodes are
// refused with an OnnxError naming the node.
#include "onnx_cases.h"
#include "test_main.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

using namespace tscope::test::onnx_cases;

namespace {

struct UnaryCase {
  std::string op;
  int opset = 13;
  Attrs attrs;
  Ref ref;
  bool positive = false;  // the op needs positive inputs (Log, Sqrt)
};

double sigmoidRef(double x) {
  return 1 / (1 + std::exp(-x));
}
double softplusRef(double x) {
  return std::log1p(std::exp(x));
}

}  // namespace

Q_DECLARE_METATYPE(UnaryCase)

class TestOnnxMathShape : public QObject {
  Q_OBJECT

 private slots:
  // --- math ---
  void testUnary_data();
  void testUnary();
  void testBinary();
  void testVariadicAndLogic();
  void testClip();
  void testCastIdentityDropout();
  void testReductions();
  void testArgReduce();
  // --- shape ---
  void testReshapeFlatten();
  void testTransposeSqueezeUnsqueeze();
  void testConcatSplit();
  void testSlice();
  void testGather();
  void testExpandTile();
  void testShapeAndMakers();
  // --- errors ---
  void testErrors_data();
  void testErrors();
};

void TestOnnxMathShape::testUnary_data() {
  QTest::addColumn<UnaryCase>("c");
  auto row = [](const char* name, UnaryCase c) { QTest::newRow(name) << c; };
  auto alpha = [](double a) { return [a](onnx::NodeProto& n) { setAttr(n, "alpha", a); }; };
  row("Neg", {"Neg", 13, {}, [](double x) { return -x; }});
  row("Abs", {"Abs", 13, {}, [](double x) { return std::abs(x); }});
  row("Sign", {"Sign", 13, {}, [](double x) { return double((x > 0) - (x < 0)); }});
  row("Exp v6", {"Exp", 6, {}, [](double x) { return std::exp(x); }});
  row("Log", {"Log", 13, {}, [](double x) { return std::log(x); }, true});
  row("Sqrt", {"Sqrt", 13, {}, [](double x) { return std::sqrt(x); }, true});
  row("Reciprocal", {"Reciprocal", 13, {}, [](double x) { return 1 / x; }, true});
  row("Erf", {"Erf", 13, {}, [](double x) { return std::erf(x); }});
  row("Tanh", {"Tanh", 13, {}, [](double x) { return std::tanh(x); }});
  row("Sigmoid", {"Sigmoid", 13, {}, sigmoidRef});
  row("Softplus", {"Softplus", 13, {}, softplusRef});
  row("Relu v6", {"Relu", 6, {}, [](double x) { return std::max(x, 0.0); }});
  row("Floor", {"Floor", 13, {}, [](double x) { return std::floor(x); }});
  row("Ceil", {"Ceil", 13, {}, [](double x) { return std::ceil(x); }});
  // Half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0.
  row("Round", {"Round", 13, {}, [](double x) { return std::nearbyint(x); }});
  row("Sin", {"Sin", 13, {}, [](double x) { return std::sin(x); }});
  row("Cos", {"Cos", 13, {}, [](double x) { return std::cos(x); }});
  row("Identity", {"Identity", 13, {}, [](double x) { return x; }});
  row("Softsign", {"Softsign", 13, {}, [](double x) { return x / (1 + std::abs(x)); }});
  row("LeakyRelu default", {"LeakyRelu", 6, {}, [](double x) { return x >= 0 ? x : 0.01 * x; }});
  row("LeakyRelu 0.1",
      {"LeakyRelu", 16, alpha(0.1), [](double x) { return x >= 0 ? x : 0.1 * x; }});
  row("ThresholdedRelu",
      {"ThresholdedRelu", 10, alpha(0.5), [](double x) { return x > 0.5 ? x : 0; }});
  row("Elu 0.5", {"Elu", 6, alpha(0.5), [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }});
  row("Selu", {"Selu", 6, {}, [](double x) {
                 return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * std::expm1(x));
               }});
  row("Celu 2", {"Celu", 12, alpha(2.0),
                 [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * std::expm1(x / 2)); }});
  row("Shrink",
      {"Shrink", 9, [](onnx::NodeProto& n) { setAttr(n, "bias", 0.25), setAttr(n, "lambd", 1.0); },
       [](double x) { return x < -1  ? x + 0.25
                             : x > 1 ? x - 0.25
                                     : 0; }});
  row("Gelu",
      {"Gelu", 18, {}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }});
  row("Gelu tanh",
      {"Gelu", 18, [](onnx::NodeProto& n) { setAttr(n, "approximate", "tanh"); },
       [](double x) {
         return 0.5 * x *
                (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
       }});
  row("HardSigmoid",
      {"HardSigmoid", 6,
       [](onnx::NodeProto& n) { setAttr(n, "alpha", 0.5), setAttr(n, "beta", 0.25); },
       [](double x) { return std::clamp(0.5 * x + 0.25, 0.0, 1.0); }});
  row("HardSwish",
      {"HardSwish", 14, {}, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }});
  row("Mish", {"Mish", 18, {}, [](double x) { return x * std::tanh(softplusRef(x)); }});
}

void TestOnnxMathShape::testUnary() {
  QFETCH(UnaryCase, c);
  const Tensor x = c.positive ? f32({2, 4}, {0.25, 0.5, 1, 1.5, 2, 2.5, 4, 9})
                              : f32({2, 4}, {-3.5, -1.5, -0.5, 0, 0.5, 1.5, 2.5, 4});
  CHECK_MODEL(oneNode(c.opset, c.op, {x}, DType::Float32, c.attrs), {mapped(x, c.ref)});
}

void TestOnnxMathShape::testBinary() {
  const Tensor a = iota({2, 3});
  // Opset 14, numpy broadcasting: (2, 3) + (3,).
  CHECK_MODEL(oneNode(14, "Add", {a, f32({3}, {10, 20, 30})}, DType::Float32),
              {f32({2, 3}, {11, 22, 33, 14, 25, 36})});
  // Opset 6 legacy broadcast: B (3,) lines up with A's axis 1 of (2, 3, 2).
  CHECK_MODEL(
      oneNode(6, "Add", {iota({2, 3, 2}, 0), f32({3}, {100, 200, 300})}, DType::Float32,
              [](onnx::NodeProto& n) { setAttr(n, "broadcast", 1), setAttr(n, "axis", 1); }),
      {f32({2, 3, 2}, {100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311})});
  // Without axis the legacy rule is numpy's right alignment.
  CHECK_MODEL(oneNode(6, "Mul", {a, f32({3}, {1, 0, -1})}, DType::Float32,
                      [](onnx::NodeProto& n) { setAttr(n, "broadcast", 1); }),
              {f32({2, 3}, {1, 0, -3, 4, 0, -6})});
  // Integer Div truncates towards zero, as C does.
  const Tensor num = i64({-7, 7, -7, 7, 6, -6}), den = i64({2, 2, -2, -2, 3, 3});
  CHECK_MODEL(oneNode(14, "Div", {num, den}, DType::Int64), {i64({-3, 3, 3, -3, 2, -2})});
  CHECK_MODEL(oneNode(13, "Div", {i32({4}, {-9, 9, 1, -1}), i32({1}, {4})}, DType::Int32),
              {i32({4}, {-2, 2, 0, 0})});
  CHECK_MODEL(oneNode(7, "Div", {f32({3}, {1, -3, 5}), f32({3}, {4, 2, -8})}, DType::Float32),
              {f32({3}, {0.25, -1.5, -0.625})});
  CHECK_MODEL(oneNode(14, "Sub", {i32({2}, {5, 3}), i32({1}, {1})}, DType::Int32),
              {i32({2}, {4, 2})});
  // Pow from opset 12 takes an exponent of another dtype; the result has the base's.
  CHECK_MODEL(oneNode(15, "Pow", {f32({3}, {2, 3, 4}), i64({3, 2, -1})}, DType::Float32),
              {f32({3}, {8, 9, 0.25})});
  CHECK_MODEL(oneNode(7, "Pow", {f32({2}, {4, 9}), f32({1}, {0.5})}, DType::Float32),
              {f32({2}, {2, 3})});
  // Mod: the divisor's sign (numpy) or, with fmod=1, the dividend's (C).
  const Tensor ma = i64({-7, 7, 7, -7}), mb = i64({3, 3, -3, -3});
  CHECK_MODEL(oneNode(13, "Mod", {ma, mb}, DType::Int64), {i64({2, 1, -2, -1})});
  CHECK_MODEL(
      oneNode(13, "Mod", {ma, mb}, DType::Int64, [](onnx::NodeProto& n) { setAttr(n, "fmod", 1); }),
      {i64({-1, 1, 1, -1})});
}

void TestOnnxMathShape::testVariadicAndLogic() {
  // (2, 1), (3,) and a scalar broadcast to (2, 3).
  ModelBuilder m(13);
  const auto a = in(m, "a", f32({2, 1}, {1, 5})), b = in(m, "b", f32({3}, {2, 0, 7})),
             c = in(m, "c", f32({}, {3}));
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    named(m.node(op, {a, b, c}, {op}), std::string("/") + op);
    m.output(op, DType::Float32);
  }
  named(m.node("Max", {b}, {"single"}), "/MaxSingle");
  m.output("single", DType::Float32);
  CHECK_MODEL(m, {f32({2, 3}, {3, 3, 7, 5, 5, 7}), f32({2, 3}, {1, 0, 1, 2, 0, 3}),
                  f32({2, 3}, {6, 4, 11, 10, 8, 15}),
                  f32({2, 3}, {2, 4.0 / 3, 11.0 / 3, 10.0 / 3, 8.0 / 3, 5}), f32({3}, {2, 0, 7})});

  ModelBuilder cmp(13);
  const auto x = in(cmp, "x", i64({1, 2, 3})), y = in(cmp, "y", i64({2, 2, 2}));
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    named(cmp.node(op, {x, y}, {op}), std::string("/") + op);
    cmp.output(op, DType::Bool);
  }
  CHECK_MODEL(cmp, {bools({3}, {0, 1, 0}), bools({3}, {1, 0, 0}), bools({3}, {1, 1, 0}),
                    bools({3}, {0, 0, 1}), bools({3}, {0, 1, 1})});

  ModelBuilder logic(7);
  const auto p = in(logic, "p", bools({4}, {1, 1, 0, 0})),
             q = in(logic, "q", bools({4}, {1, 0, 1, 0}));
  for (const char* op : {"And", "Or", "Xor"}) {
    named(logic.node(op, {p, q}, {op}), std::string("/") + op);
    logic.output(op, DType::Bool);
  }
  logic.node("Not", {p}, {"Not"});
  logic.output("Not", DType::Bool);
  CHECK_MODEL(logic, {bools({4}, {1, 0, 0, 0}), bools({4}, {1, 1, 1, 0}), bools({4}, {0, 1, 1, 0}),
                      bools({4}, {0, 0, 1, 1})});
  // Opset 6: Or with the legacy broadcast of a (2,) B over a (2, 2) A.
  CHECK_MODEL(oneNode(6, "Or", {bools({2, 2}, {0, 0, 1, 0}), bools({2}, {0, 1})}, DType::Bool,
                      [](onnx::NodeProto& n) { setAttr(n, "broadcast", 1); }),
              {bools({2, 2}, {0, 1, 1, 1})});
  CHECK_MODEL(oneNode(16, "Where",
                      {bools({2, 2}, {1, 0, 0, 1}), i64({2, 2}, {1, 2, 3, 4}), i64({2}, {-1, -2})},
                      DType::Int64),
              {i64({2, 2}, {1, -2, -1, 4})});
}

void TestOnnxMathShape::testClip() {
  const Tensor x = f32({5}, {-3, -1, 0, 1, 3});
  CHECK_MODEL(withConstants(6, "Clip", x, {}, both(attr("min", -1.0), attr("max", 2.0))),
              {f32({5}, {-1, -1, 0, 1, 2})});
  CHECK_MODEL(oneNode(6, "Clip", {x}, DType::Float32), {x});
  // Opset 11: min only, as an initializer (a shared variable).
  CHECK_MODEL(withConstants(11, "Clip", x, {f32({}, {0})}), {f32({5}, {0, 0, 0, 1, 3})});
  {  // Opset 13: max only (min omitted with an empty name), from a Constant node.
    ModelBuilder m(13);
    setAttr(m.node("Constant", {}, {"hi"}), "value", f32({}, {1}));
    m.node("Clip", {in(m, "x", x), "", "hi"}, {"y"});
    m.output("y", DType::Float32);
    CHECK_MODEL(m, {f32({5}, {-3, -1, 0, 1, 1})});
  }
  CHECK_MODEL(oneNode(13, "Clip", {x, f32({}, {-2}), f32({}, {2})}, DType::Float32),
              {f32({5}, {-2, -1, 0, 1, 2})});
  CHECK_MODEL(
      oneNode(12, "Clip", {i32({5}, {-3, -1, 0, 1, 3}), i32({}, {-1}), i32({}, {1})}, DType::Int32),
      {i32({5}, {-1, -1, 0, 1, 1})});
}

void TestOnnxMathShape::testCastIdentityDropout() {
  const Tensor x = f32({5}, {-1.7, -0.5, 0, 0.5, 2.9});
  auto to = [](int type) { return attr("to", type); };
  CHECK_MODEL(oneNode(13, "Cast", {x}, DType::Int32, to(onnx::TensorProto::INT32)),
              {i32({5}, {-1, 0, 0, 0, 2})});
  CHECK_MODEL(oneNode(6, "Cast", {x}, DType::Bool, to(onnx::TensorProto::BOOL)),
              {bools({5}, {1, 1, 0, 1, 1})});
  CHECK_MODEL(oneNode(13, "Cast", {i64({3, -2})}, DType::Float16, to(onnx::TensorProto::FLOAT16)),
              {values(DType::Float16, {2}, {3, -2})});
  CHECK_MODEL(oneNode(13, "Identity", {i64({4, 5})}, DType::Int64), {i64({4, 5})});
  {  // Opset 13: inference Dropout is the identity; the mask is all true.
    ModelBuilder m(13);
    m.node("Dropout",
           {in(m, "x", x), init(m, "ratio", f32({}, {0.3})), init(m, "t", bools({}, {0}))},
           {"y", "mask"});
    m.output("y", DType::Float32);
    m.output("mask", DType::Bool);
    CHECK_MODEL(m, {x, bools({5}, {1, 1, 1, 1, 1})});
  }
  {  // Opset 7: the mask has the input's dtype.
    ModelBuilder m(7);
    m.node("Dropout", {in(m, "x", x)}, {"y", "mask"});
    m.output("y", DType::Float32);
    m.output("mask", DType::Float32);
    CHECK_MODEL(m, {x, f32({5}, {1, 1, 1, 1, 1})});
  }
}

void TestOnnxMathShape::testReductions() {
  const Tensor x = iota({2, 3, 2});  // x[i, j, k] = 1 + 6i + 2j + k
  auto attrs = [](std::vector<std::int64_t> axes, int keepdims) {
    return [=](onnx::NodeProto& n) {
      if (!axes.empty()) setAttr(n, "axes", axes);
      if (keepdims >= 0) setAttr(n, "keepdims", keepdims);
    };
  };
  auto withAxesInput = [&](int opset, const std::string& op, const std::vector<std::int64_t>& axes,
                           int keepdims, int noop = -1) {
    ModelBuilder m(opset);
    auto& n = m.node(op, {in(m, "x", x), axes.empty() ? "" : init(m, "axes", i64(axes))}, {"y"});
    if (keepdims >= 0) setAttr(n, "keepdims", keepdims);
    if (noop >= 0) setAttr(n, "noop_with_empty_axes", noop);
    m.output("y", DType::Float32);
    return m;
  };
  CHECK_MODEL(oneNode(11, "ReduceSum", {x}, DType::Float32, attrs({1}, 0)),
              {f32({2, 2}, {9, 12, 27, 30})});
  CHECK_MODEL(withAxesInput(13, "ReduceSum", {-1}, -1), {f32({2, 3, 1}, {3, 7, 11, 15, 19, 23})});
  CHECK_MODEL(withAxesInput(13, "ReduceSum", {}, -1), {f32({1, 1, 1}, {78})});
  CHECK_MODEL(withAxesInput(13, "ReduceSum", {}, 0, 1), {x});
  CHECK_MODEL(oneNode(6, "ReduceSum", {i32({4}, {1, 2, 3, 4})}, DType::Int32, attrs({}, 0)),
              {i32({}, {10})});
  const Tensor means = f32({3}, {4.5, 6.5, 8.5});
  CHECK_MODEL(oneNode(13, "ReduceMean", {x}, DType::Float32, attrs({0, 2}, 0)), {means});
  CHECK_MODEL(withAxesInput(18, "ReduceMean", {0, -1}, 0), {means});
  CHECK_MODEL(withAxesInput(18, "ReduceMax", {}, 0, 1), {x});
  CHECK_MODEL(oneNode(13, "ReduceMax", {x}, DType::Float32, attrs({1}, 0)),
              {f32({2, 2}, {5, 6, 11, 12})});
  CHECK_MODEL(oneNode(13, "ReduceMin", {x}, DType::Float32, attrs({1}, -1)),
              {f32({2, 1, 2}, {1, 2, 7, 8})});
  CHECK_MODEL(oneNode(13, "ReduceProd", {x}, DType::Float32, attrs({2}, 0)),
              {f32({2, 3}, {2, 12, 30, 56, 90, 132})});
  CHECK_MODEL(
      oneNode(13, "ReduceL2", {x}, DType::Float32, attrs({2}, 0)),
      {mapped(f32({2, 3}, {5, 25, 61, 113, 181, 265}), [](double v) { return std::sqrt(v); })});
  CHECK_MODEL(oneNode(13, "ReduceLogSum", {x}, DType::Float32, attrs({2}, 0)),
              {mapped(f32({2, 3}, {3, 7, 11, 15, 19, 23}), [](double v) { return std::log(v); })});
  const Tensor s = f32({2, 2}, {-1, 2, -3, 4});
  CHECK_MODEL(oneNode(13, "ReduceL1", {s}, DType::Float32, attrs({1}, 0)), {f32({2}, {3, 7})});
  CHECK_MODEL(oneNode(13, "ReduceSumSquare", {s}, DType::Float32, attrs({1}, 0)),
              {f32({2}, {5, 25})});
  CHECK_MODEL(
      oneNode(13, "ReduceLogSumExp", {s}, DType::Float32, attrs({1}, 0)),
      {f32({2}, {std::log(std::exp(-1) + std::exp(2)), std::log(std::exp(-3) + std::exp(4))})});
}

void TestOnnxMathShape::testArgReduce() {
  const Tensor x = f32({2, 4}, {1, 3, 3, 0, 5, 5, 2, 5});
  auto attrs = [](int axis, int keepdims, int last) {
    return [=](onnx::NodeProto& n) {
      setAttr(n, "axis", axis);
      if (keepdims >= 0) setAttr(n, "keepdims", keepdims);
      if (last >= 0) setAttr(n, "select_last_index", last);
    };
  };
  CHECK_MODEL(oneNode(13, "ArgMax", {x}, DType::Int64, attrs(1, -1, -1)), {i64({2, 1}, {1, 0})});
  CHECK_MODEL(oneNode(12, "ArgMax", {x}, DType::Int64, attrs(1, -1, 1)), {i64({2, 1}, {2, 3})});
  CHECK_MODEL(oneNode(11, "ArgMin", {x}, DType::Int64, attrs(-1, 0, -1)), {i64({2}, {3, 2})});
  CHECK_MODEL(oneNode(6, "ArgMin", {x}, DType::Int64, attrs(0, 1, -1)),
              {i64({1, 4}, {0, 0, 1, 0})});
  CHECK_MODEL(oneNode(13, "ArgMin", {f32({4}, {2, 1, 3, 1})}, DType::Int64, attrs(0, 0, 1)),
              {i64({}, {3})});
}

void TestOnnxMathShape::testReshapeFlatten() {
  const Tensor x = iota({2, 3, 2});
  auto reshaped = [&](Shape shape) {
    return values(DType::Float32, std::move(shape), x.toDoubles());
  };
  CHECK_MODEL(withConstants(13, "Reshape", x, {i64({0, -1})}), {reshaped({2, 6})});
  CHECK_MODEL(withConstants(6, "Reshape", x, {i64({3, 4})}), {reshaped({3, 4})});
  CHECK_MODEL(withConstants(14, "Reshape", x, {i64({-1, 3, 2})}, attr("allowzero", 1)),
              {reshaped({2, 3, 2})});
  // allowzero=1: a 0 stays 0, on an empty input.
  CHECK_MODEL(withConstants(14, "Reshape", f32({0, 4}, {}), {i64({4, 0})}, attr("allowzero", 1)),
              {f32({4, 0}, {})});
  // The shape a graph input: its 0 entry copies x's axis at run time.
  CHECK_MODEL(oneNode(13, "Reshape", {x, i64({0, -1})}, DType::Float32), {reshaped({2, 6})});
  CHECK_MODEL(oneNode(13, "Reshape", {x, i64({4, 0, -1})}, DType::Float32), {reshaped({4, 3, 1})});
  {  // PyTorch's x.view(x.size(0), -1) with a symbolic batch.
    ModelBuilder m(13);
    const auto input = in(m, "x", x, {kUnknownDim, 3, 2});
    m.node("Shape", {input}, {"shape"});
    m.node("Gather", {"shape", init(m, "zero", i64({}, {0}))}, {"batch"});
    m.node("Unsqueeze", {"batch", init(m, "axes", i64({0}))}, {"batch1"});
    setAttr(m.node("Concat", {"batch1", init(m, "rest", i64({-1}))}, {"s"}), "axis", 0);
    m.node("Reshape", {input, "s"}, {"y"});
    m.output("y", DType::Float32);
    CHECK_MODEL(m, {reshaped({2, 6})});
  }
  auto flatten = [&](int opset, int axis) {
    return withConstants(opset, "Flatten", x, {}, attr("axis", axis));
  };
  CHECK_MODEL(flatten(13, 0), {reshaped({1, 12})});
  CHECK_MODEL(flatten(9, 1), {reshaped({2, 6})});
  CHECK_MODEL(flatten(13, 2), {reshaped({6, 2})});
  CHECK_MODEL(flatten(11, -1), {reshaped({6, 2})});
  CHECK_MODEL(flatten(13, 3), {reshaped({12, 1})});
}

void TestOnnxMathShape::testTransposeSqueezeUnsqueeze() {
  CHECK_MODEL(oneNode(13, "Transpose", {iota({2, 3})}, DType::Float32),
              {f32({3, 2}, {1, 4, 2, 5, 3, 6})});
  // perm [2, 0, 1] of (2, 3, 2): y[k, i, j] = x[i, j, k] = 1 + 6i + 2j + k.
  CHECK_MODEL(withConstants(13, "Transpose", iota({2, 3, 2}), {}, ints("perm", {2, 0, 1})),
              {f32({2, 2, 3}, {1, 3, 5, 7, 9, 11, 2, 4, 6, 8, 10, 12})});
  const Tensor x = iota({1, 3, 1, 2});
  auto same = [&](Shape shape) { return values(DType::Float32, std::move(shape), x.toDoubles()); };
  CHECK_MODEL(withConstants(11, "Squeeze", x, {}, ints("axes", {0, -2})), {same({3, 2})});
  CHECK_MODEL(withConstants(6, "Squeeze", x, {}), {same({3, 2})});
  CHECK_MODEL(withConstants(13, "Squeeze", x, {i64({-2})}), {same({1, 3, 2})});
  CHECK_MODEL(withConstants(13, "Squeeze", x, {}), {same({3, 2})});
  // An axis of unknown size, checked at run time.
  CHECK_MODEL(withConstants(13, "Squeeze", iota({1, 3}), {i64({0})}, {}, 1, {kUnknownDim, 3}),
              {iota({3})});
  const Tensor v = iota({3, 2});
  CHECK_MODEL(withConstants(11, "Unsqueeze", v, {}, ints("axes", {0, 3})),
              {values(DType::Float32, {1, 3, 2, 1}, v.toDoubles())});
  CHECK_MODEL(withConstants(13, "Unsqueeze", v, {i64({-1, 1})}),
              {values(DType::Float32, {3, 1, 2, 1}, v.toDoubles())});
}

void TestOnnxMathShape::testConcatSplit() {
  auto axis = [](int a) { return attr("axis", a); };
  CHECK_MODEL(
      oneNode(11, "Concat", {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}), f32({2, 0}, {})},
              DType::Float32, axis(-1)),
      {f32({2, 3}, {1, 3, 4, 2, 5, 6})});
  CHECK_MODEL(oneNode(6, "Concat", {i64({1}), i64({2, 3})}, DType::Int64, axis(0)),
              {i64({1, 2, 3})});

  const Tensor x = iota({2, 4});
  const std::vector<Tensor> oneThree{f32({2, 1}, {1, 5}), f32({2, 3}, {2, 3, 4, 6, 7, 8})};
  CHECK_MODEL(withConstants(11, "Split", x, {}, both(axis(1), ints("split", {1, 3})), 2), oneThree);
  CHECK_MODEL(withConstants(13, "Split", x, {i64({1, 3})}, axis(1), 2), oneThree);
  CHECK_MODEL(withConstants(13, "Split", x, {}, axis(-1), 2),
              {f32({2, 2}, {1, 2, 5, 6}), f32({2, 2}, {3, 4, 7, 8})});
  CHECK_MODEL(withConstants(18, "Split", iota({5}), {}, attr("num_outputs", 3), 3),
              {f32({2}, {1, 2}), f32({2}, {3, 4}), f32({1}, {5})});
  // Equal parts of an axis whose size is unknown while importing.
  CHECK_MODEL(withConstants(13, "Split", iota({6}), {}, {}, 3, {kUnknownDim}),
              {f32({2}, {1, 2}), f32({2}, {3, 4}), f32({2}, {5, 6})});
}

void TestOnnxMathShape::testSlice() {
  const Tensor x = iota({3, 4}, 0);  // x[r, c] = 4r + c
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  CHECK_MODEL(
      withConstants(9, "Slice", x, {},
                    both(both(ints("starts", {1}), ints("ends", {1000})), ints("axes", {1}))),
      {f32({3, 3}, {1, 2, 3, 5, 6, 7, 9, 10, 11})});
  CHECK_MODEL(
      withConstants(9, "Slice", x, {}, both(ints("starts", {-1, -100}), ints("ends", {3, 2}))),
      {f32({1, 2}, {8, 9})});
  CHECK_MODEL(withConstants(10, "Slice", x, {i64({-2}), i64({kMax}), i64({1})}),
              {f32({3, 2}, {2, 3, 6, 7, 10, 11})});
  CHECK_MODEL(withConstants(13, "Slice", x, {i64({-1}), i64({kMin}), i64({0}), i64({-1})}),
              {f32({3, 4}, {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3})});
  CHECK_MODEL(withConstants(13, "Slice", x, {i64({0, 1}), i64({3, 4}), Tensor(), i64({2, 2})}),
              {f32({2, 2}, {1, 3, 9, 11})});
  CHECK_MODEL(
      withConstants(11, "Slice", x, {i64({2, 10}), i64({-4, 0}), i64({1, 0}), i64({-1, -1})}),
      {f32({2, 2}, {10, 9, 6, 5})});
  {  // Starts computed at run time (a graph input).
    ModelBuilder m(13);
    m.node("Slice",
           {in(m, "x", x), in(m, "starts", i64({1})), init(m, "ends", i64({3})),
            init(m, "axes", i64({0}))},
           {"y"});
    m.output("y", DType::Float32);
    CHECK_MODEL(m, {f32({2, 4}, {4, 5, 6, 7, 8, 9, 10, 11})});
  }
}

void TestOnnxMathShape::testGather() {
  const Tensor x = iota({3, 2});  // [[1, 2], [3, 4], [5, 6]]
  auto axis = [](int a) { return attr("axis", a); };
  CHECK_MODEL(withConstants(13, "Gather", x, {i64({2, 2}, {0, 2, -1, 1})}),
              {f32({2, 2, 2}, {1, 2, 5, 6, 5, 6, 3, 4})});
  CHECK_MODEL(withConstants(11, "Gather", x, {i64({1, 0, -1})}, axis(1)),
              {f32({3, 3}, {2, 1, 2, 4, 3, 4, 6, 5, 6})});
  CHECK_MODEL(withConstants(6, "Gather", x, {i64({}, {2})}), {f32({2}, {5, 6})});
  // Indices computed at run time (graph inputs).
  CHECK_MODEL(oneNode(13, "Gather", {x, i32({2}, {2, 0})}, DType::Float32),
              {f32({2, 2}, {5, 6, 1, 2})});
  CHECK_MODEL(oneNode(13, "Gather", {x, i64({}, {-1})}, DType::Float32, axis(1)),
              {f32({3}, {2, 4, 6})});
  CHECK_MODEL(oneNode(13, "Gather", {x, i64({2, 1}, {-1, 0})}, DType::Float32, axis(1)),
              {f32({3, 2, 1}, {2, 1, 4, 3, 6, 5})});
  {  // Gather of a Shape reads a dimension, also one unknown while importing.
    ModelBuilder m(13);
    m.node("Shape", {in(m, "x", x, {kUnknownDim, 2})}, {"s"});
    setAttr(m.node("Gather", {"s", init(m, "i", i64({2}, {0, -1}))}, {"y"}), "axis", 0);
    m.output("y", DType::Int64);
    CHECK_MODEL(m, {i64({3, 2})});
  }
  auto elements = [&](const Tensor& indices, int a) {
    return withConstants(13, "GatherElements", iota({2, 3}), {indices}, axis(a));
  };
  CHECK_MODEL(elements(i64({2, 2}, {2, 0, 1, -2}), 1), {f32({2, 2}, {3, 1, 5, 5})});
  CHECK_MODEL(elements(i64({1, 3}, {1, 0, 1}), 0), {f32({1, 3}, {4, 2, 6})});
}

void TestOnnxMathShape::testExpandTile() {
  std::vector<double> v;
  for (int b = 0; b < 2; ++b)
    for (double e : {1, 2, 3}) v.insert(v.end(), 4, e);
  CHECK_MODEL(withConstants(13, "Expand", f32({3, 1}, {1, 2, 3}), {i64({2, 1, 4})}),
              {f32({2, 3, 4}, v)});
  {  // The shape a graph input; x keeps its size where the shape says 1.
    ModelBuilder m(8);
    m.node("Expand", {in(m, "x", f32({3}, {1, 2, 3}), {kUnknownDim}), in(m, "s", i64({2, 1}))},
           {"y"});
    m.output("y", DType::Float32);
    CHECK_MODEL(m, {f32({2, 3}, {1, 2, 3, 1, 2, 3})});
  }
  CHECK_MODEL(withConstants(13, "Tile", iota({2, 2}), {i64({1, 2})}),
              {f32({2, 4}, {1, 2, 1, 2, 3, 4, 3, 4})});
}

void TestOnnxMathShape::testShapeAndMakers() {
  {
    ModelBuilder m(15);
    const auto x = in(m, "x", iota({2, 3, 4}), {kUnknownDim, 3, 4});
    named(m.node("Shape", {x}, {"all"}), "/ShapeAll");
    setAttr(named(m.node("Shape", {x}, {"tail"}), "/ShapeTail"), "start", -2);
    auto& mid = named(m.node("Shape", {x}, {"mid"}), "/ShapeMid");
    setAttr(mid, "start", 1), setAttr(mid, "end", -1);
    m.node("Size", {x}, {"size"});
    m.node("ConstantOfShape", {"all"}, {"zeros"});
    for (const char* o : {"all", "tail", "mid", "size"}) m.output(o, DType::Int64);
    m.output("zeros", DType::Float32);
    CHECK_MODEL(m, {i64({2, 3, 4}), i64({3, 4}), i64({3}), i64({}, {24}),
                    f32({2, 3, 4}, std::vector<double>(24, 0))});
  }
  {
    ModelBuilder m(13);
    setAttr(named(m.node("Constant", {}, {"ints"}), "/Ints"), "value_ints",
            std::vector<std::int64_t>{1, 2, 3});
    setAttr(named(m.node("Constant", {}, {"float"}), "/Float"), "value_float", 2.5);
    setAttr(named(m.node("Constant", {}, {"tensor"}), "/Tensor"), "value", i32({2}, {7, 8}));
    setAttr(m.node("ConstantOfShape", {init(m, "s", i64({2, 1}))}, {"sevens"}), "value",
            i64({1}, {7}));
    m.output("ints", DType::Int64);
    m.output("float", DType::Float32);
    m.output("tensor", DType::Int32);
    m.output("sevens", DType::Int64);
    CHECK_MODEL(m, {i64({1, 2, 3}), f32({}, {2.5}), i32({2}, {7, 8}), i64({2, 1}, {7, 7})});
  }
  CHECK_MODEL(oneNode(11, "Range", {i64({}, {10}), i64({}, {1}), i64({}, {-3})}, DType::Int64),
              {i64({10, 7, 4})});
  CHECK_MODEL(oneNode(11, "Range", {f32({}, {0}), f32({}, {1}), f32({}, {0.25})}, DType::Float32),
              {f32({4}, {0, 0.25, 0.5, 0.75})});
  CHECK_MODEL(oneNode(9, "EyeLike", {iota({3, 4})}, DType::Float32,
                      [](onnx::NodeProto& n) { setAttr(n, "k", 1); }),
              {f32({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1})});
  {  // A shape unknown while importing, another dtype and a negative k.
    ModelBuilder m(9);
    auto& n = m.node("EyeLike", {in(m, "x", iota({3, 2}), {kUnknownDim, 2})}, {"y"});
    setAttr(n, "k", -1), setAttr(n, "dtype", static_cast<int>(onnx::TensorProto::INT32));
    m.output("y", DType::Int32);
    CHECK_MODEL(m, {i32({3, 2}, {0, 0, 1, 0, 0, 1})});
  }
}

// --- Errors --------------------------------------------------------------------------------------

// Note [ScatterND]: indices are read at run time, so one out of range fails the run, naming the
// ONNX node, the index and the axis, in both modes.
void TestOnnxMathShape::testErrors_data() {
  QTest::addColumn<QByteArray>("model");
  QTest::addColumn<QString>("node");
  QTest::addColumn<QString>("message");
  auto row = [](const char* name, const ModelBuilder& m, const char* node, const char* message) {
    const std::string bytes = m.bytes();
    QTest::newRow(name) << QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size()))
                        << QString(node) << QString(message);
  };
  const Tensor x = iota({2, 3});
  row("Reshape two -1", withConstants(13, "Reshape", x, {i64({-1, -1})}), "/Reshape",
      "at most one -1");
  row("Reshape size", withConstants(13, "Reshape", x, {i64({4, -1})}), "/Reshape",
      "cannot reshape");
  row("Slice zero step", withConstants(13, "Slice", x, {i64({0}), i64({2}), i64({1}), i64({0})}),
      "/Slice", "non-zero steps");
  row("Concat axis", oneNode(13, "Concat", {x, x}, DType::Float32, attr("axis", 2)), "/Concat",
      "expected axis in [-2, 1]");
  row("Transpose perm", withConstants(13, "Transpose", x, {}, ints("perm", {0, 0})), "/Transpose",
      "permutation");
  row("Cast to string", withConstants(13, "Cast", x, {}, attr("to", 8)), "/Cast",
      "not supported yet");
  row("Dropout training", withConstants(13, "Dropout", x, {Tensor(), bools({}, {1})}), "/Dropout",
      "training mode");
  row("Gather out of range", withConstants(13, "Gather", x, {i64({2})}), "/Gather", "out of range");
  row("Split sizes",
      withConstants(11, "Split", x, {}, both(attr("axis", 1), ints("split", {1, 1})), 2), "/Split",
      "add up to 3");
  row("Unsqueeze repeated axis", withConstants(11, "Unsqueeze", x, {}, ints("axes", {1, -3})),
      "/Unsqueeze", "distinct axes");
  row("Squeeze size 3", withConstants(11, "Squeeze", x, {}, ints("axes", {1})), "/Squeeze",
      "cannot squeeze axis 1");
  row("Squeeze axes attribute at 13", withConstants(13, "Squeeze", x, {}, ints("axes", {0})),
      "/Squeeze", "an input since opset 13");
  // Computed axes are no longer refused (Note [Run-time ONNX values]; tst_onnx_node runs them).
  row("ReduceSum axes out of range", withConstants(13, "ReduceSum", x, {i64({5})}), "/ReduceSum",
      "found 5");
  row("Expand mismatch", withConstants(13, "Expand", x, {i64({2, 4})}), "/Expand", "cannot expand");
  row("Flatten axis", withConstants(13, "Flatten", x, {}, attr("axis", 3)), "/Flatten",
      "expected axis in [-2, 2]");
}

void TestOnnxMathShape::testErrors() {
  QFETCH(QByteArray, model);
  QFETCH(QString, node);
  QFETCH(QString, message);
  try {
    (void)readOnnx(std::string_view(model.constData(), static_cast<std::size_t>(model.size())),
                   "bad.onnx");
    QFAIL("the model imported without an error");
  } catch (const OnnxError& e) {
    const QString what = QString::fromStdString(e.what());
    QVERIFY2(what.startsWith("bad.onnx: graph.node["), qPrintable(what));
    QVERIFY2(what.contains("'" + node + "'"), qPrintable(what));
    QVERIFY2(what.contains(message), qPrintable(what));
  }
}

TSCOPE_TEST_MAIN(TestOnnxMathShape)
#include "tst_onnx_math_shape.moc"
