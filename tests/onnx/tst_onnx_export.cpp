// Exporting graphs to ONNX: each graph is exported (writeOnnx runs ONNX's checker and strict shape
// inference and throws when they refuse), imported back with readOnnx, and both graphs run on the
// same random inputs: the outputs must agree. Names, scopes and shapes survive the round trip; an
// op without an ONNX form is refused with the node named and nothing written.

#include "engine/compile/function.h"
#include "engine/graph/errors.h"
#include "engine/io/onnx/onnx_export.h"
#include "engine/io/onnx/onnx_import.h"
#include "engine/io/tsg.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/topk.h"
#include "engine/session/optimize_graph.h"
#include "engine/session/run_graph.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

using namespace tscope::engine;

namespace {

Tensor randomTensor(DType dtype, const std::vector<std::int64_t>& shape, std::mt19937_64& rng,
                    double lo = -2.0, double hi = 2.0) {
  std::vector<double> values(static_cast<std::size_t>(shapeNumel(shape)));
  std::uniform_real_distribution<double> real(lo, hi);
  for (double& v : values) {
    v = real(rng);
    if (dtype == DType::Bool)
      v = v > (lo + hi) / 2 ? 1 : 0;
    else if (!isFloat(dtype))
      v = std::round(v);
  }
  return Tensor::fromDoubles(dtype, shape, values);
}

std::shared_ptr<SharedVariable> param(const std::string& name,
                                      const std::vector<std::int64_t>& shape,
                                      std::mt19937_64& rng) {
  return SharedVariable::create(randomTensor(DType::Float32, shape, rng, -0.5, 0.5), name);
}

std::unique_ptr<FunctionGraph> graphOf(std::vector<VarPtr> inputs, std::vector<VarPtr> outputs) {
  return std::make_unique<FunctionGraph>(std::move(inputs), std::move(outputs));
}

// Every node's scope in a graph.
std::set<std::string> scopesOf(const FunctionGraph& g) {
  std::set<std::string> scopes;
  for (const Apply* node : g.nodes()) scopes.insert(node->scope());
  return scopes;
}

// The names of the graph's inputs, shared ones included, in order.
std::vector<std::string> inputNames(const FunctionGraph& g) {
  std::vector<std::string> names;
  for (const VarPtr& in : g.inputs()) names.push_back(in->name());
  return names;
}

struct RoundTrip {
  io::OnnxImportResult imported;
  std::vector<Tensor> expected, actual;
};

// Exports the graph, imports it back and runs both on the given inputs (by name); the imported
// graph also under fast_run. Fails the test when the outputs differ.
RoundTrip roundTrip(const FunctionGraph& graph, const std::map<std::string, Tensor>& inputs,
                    int opset = 17, double rtol = 1e-5, double atol = 1e-6) {
  RoundTrip r;
  io::OnnxExportOptions options;
  options.opset = opset;
  const std::string bytes = io::writeOnnx(graph, options);
  r.imported = io::readOnnx(bytes, "exported.onnx");
  session::RunInputs run;
  run.byName = inputs;
  r.expected = session::runGraph(graph, run).outputs;
  for (Mode mode : {Mode::None, Mode::FastRun}) {
    run.mode = mode;
    r.actual = session::runGraph(*r.imported.document.original, run).outputs;
    if (r.actual.size() != r.expected.size())
      throw std::runtime_error("the imported graph has " + std::to_string(r.actual.size()) +
                               " outputs, expected " + std::to_string(r.expected.size()));
    for (std::size_t i = 0; i < r.expected.size(); ++i) {
      const Tensor& want = r.expected[i];
      const Tensor& got = r.actual[i];
      if (want.dtype() != got.dtype() || want.shape() != got.shape() ||
          !got.allClose(want, rtol, atol))
        throw std::runtime_error("output " + std::to_string(i) + " differs (mode " +
                                 (mode == Mode::None ? "none" : "fast_run") + "): expected " +
                                 std::string(dtypeName(want.dtype())) + " " + want.toString() +
                                 ", found " + std::string(dtypeName(got.dtype())) + " " +
                                 got.toString());
    }
  }
  return r;
}

#define ROUND_TRIP(result, ...)       \
  RoundTrip result;                   \
  try {                               \
    result = roundTrip(__VA_ARGS__);  \
  } catch (const std::exception& e) { \
    QFAIL(e.what());                  \
  }

}  // namespace

class TestOnnxExport : public QObject {
  Q_OBJECT

 private slots:
  void mlpRoundTrip();
  void convNetRoundTrip();
  void shapeOpsRoundTrip();
  void reductionsRoundTrip();
  void nnOpsRoundTrip();
  void elemwise_data();
  void elemwise();
  void optimizedGraphRoundTrip();
  void trainingGraphRoundTrip_data();
  void trainingGraphRoundTrip();
  void namesAndShapes();
  void unsupportedOpNamesTheNode();
  void opsetRange();
};

// tanh(x W1 + b1) then softmax(h W2 + b2), each layer in its scope.
void TestOnnxExport::mlpRoundTrip() {
  std::mt19937_64 rng(1);
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 20}), "x");
  auto W1 = param("W1", {20, 16}, rng), b1 = param("b1", {16}, rng);
  auto W2 = param("W2", {16, 5}, rng), b2 = param("b2", {5}, rng);
  VarPtr h, y;
  {
    NameScope s("layer1");
    h = tanh(dot(x, W1) + b1);
  }
  {
    NameScope s("layer2");
    y = softmax(dot(h, W2) + b2);
  }
  y->setName("probs");
  auto g = graphOf({x, W1, b1, W2, b2}, {y});
  ROUND_TRIP(r, *g, {{"x", randomTensor(DType::Float32, {7, 20}, rng)}});
  const FunctionGraph& back = *r.imported.document.original;
  // The scopes come back from the node names, the parameters keep their names.
  const std::set<std::string> scopes = scopesOf(back);
  QVERIFY(scopes.count("layer1"));
  QVERIFY(scopes.count("layer2"));
  const std::vector<std::string> names = inputNames(back);
  for (const char* name : {"x", "W1", "b1", "W2", "b2"})
    QVERIFY2(std::find(names.begin(), names.end(), name) != names.end(), name);
  QCOMPARE(back.outputs()[0]->name(), std::string("probs"));
  QCOMPARE(r.imported.opset, 17);
  QVERIFY(r.imported.opaqueOps.empty());
}

// conv (padded) -> relu -> max pool -> grouped strided conv -> batch norm -> average pool without
// the padding -> flatten -> dense -> log_softmax.
void TestOnnxExport::convNetRoundTrip() {
  std::mt19937_64 rng(2);
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3, 12, 12}), "image");
  auto w1 = param("conv1.weight", {8, 3, 3, 3}, rng);
  auto w2 = param("conv2.weight", {8, 4, 3, 3}, rng);
  auto scale = param("bn.weight", {1, 8, 1, 1}, rng), shift = param("bn.bias", {1, 8, 1, 1}, rng);
  auto mean = param("bn.running_mean", {1, 8, 1, 1}, rng);
  auto var = SharedVariable::create(randomTensor(DType::Float32, {1, 8, 1, 1}, rng, 0.5, 1.5),
                                    "bn.running_var");
  auto fc = param("fc.weight", {8 * 2 * 2, 4}, rng);
  VarPtr y;
  {
    NameScope net("net");
    Conv2dParams p1;
    p1.padding = {1, 1};
    VarPtr h = relu(conv2d(x, w1, p1));
    h = maxPool2d(h, Pool2dParams::window(2, 2));  // 6x6
    Conv2dParams p2;
    p2.stride = {2, 2};
    p2.padding = {1, 0};
    p2.groups = 2;
    h = conv2d(h, w2, p2);  // (N, 8, 3, 2)
    h = batchNormInference(h, scale, shift, mean, var, {0, 2, 3}, 1e-3);
    Pool2dParams avg;
    avg.kernel = {2, 1};
    avg.stride = {1, 1};
    avg.padding = {1, 0};
    avg.includePad = false;
    h = avgPool2d(h, avg);                         // (N, 8, 4, 2)
    h = maxPool2d(h, Pool2dParams::window(2, 1));  // (N, 8, 2, 2)
    y = logSoftmax(dot(flatten(h, 2), fc));
  }
  auto g = graphOf({x, w1, w2, scale, shift, mean, var, fc}, {y});
  ROUND_TRIP(r, *g, {{"image", randomTensor(DType::Float32, {3, 3, 12, 12}, rng)}}, 17, 1e-4, 1e-5);
  QVERIFY(scopesOf(*r.imported.document.original).count("net"));
}

// Slicing, indexing, concatenation, reshapes, transposes, tiling, splitting, alloc and arange.
void TestOnnxExport::shapeOpsRoundTrip() {
  std::mt19937_64 rng(3);
  auto x = Variable::create(TensorType(DType::Float32, {4, 6}), "x");
  auto y = Variable::create(TensorType(DType::Float32, {kUnknownDim, 6}), "y");
  auto i = Variable::create(TensorType(DType::Int64, {}), "i");
  auto rows = Variable::create(TensorType(DType::Int32, {5}), "rows");
  std::vector<VarPtr> outs;
  outs.push_back(subtensor(
      x, {Idx::slice(1, std::nullopt), Idx::slice(std::nullopt, std::nullopt, 2)}));  // x[1:, ::2]
  outs.push_back(subtensor(x, {Idx::all(), Idx::at(-1)}));                            // x[:, -1]
  outs.push_back(
      subtensor(x, {Idx::slice(std::nullopt, std::nullopt, -1), Idx::at(2)}));  // x[::-1, 2]
  outs.push_back(subtensor(y, {Idx::at(i), Idx::slice(i, std::nullopt)}));      // y[i, i:]
  outs.push_back(concatenate({x, y}, 0));
  outs.push_back(stack({x, x}, 1));
  outs.push_back(reshape(x, std::vector<std::int64_t>{3, -1, 2}));
  outs.push_back(reshape(y, ShapeExpr{constantInt(-1), shapeI(y, 0)}));
  outs.push_back(transpose(expandDims(x, 1), {2, 0, 1}));
  outs.push_back(squeeze(expandDims(y, 0), 0));
  outs.push_back(tile(x, {2, 1, 3}));
  const std::vector<VarPtr> parts = split(x, {1, 2, 3}, 1);
  outs.insert(outs.end(), parts.begin(), parts.end());
  outs.push_back(
      alloc(subtensor(x, {Idx::at(0)}), ShapeExpr{constantInt(3), shapeI(y, 0), constantInt(6)}));
  outs.push_back(arange(constantInt(2), shapeI(y, 0) + constantInt(5), constantInt(2)));
  outs.push_back(advancedSubtensor1(y, rows));
  outs.push_back(take(x, rows, 1));
  outs.push_back(repeat(x, 2, 1));
  outs.push_back(repeat(x, std::vector<std::int64_t>{1, 0, 2, 1}, 0));
  outs.push_back(shapeVector(y));
  outs.push_back(specifyShape(y, {-1, 6}));
  outs.push_back(setSubtensor(x, constant(Tensor::fromDoubles(DType::Float32, {2}, {7, 8})),
                              {Idx::slice(1, 3), Idx::at(2)}));  // x[1:3, 2] = [7, 8]
  outs.push_back(
      incSubtensor(y, subtensor(x, {Idx::at(0)}), {Idx::slice(1, -1)}));  // y[1:-1] += x[0]
  outs.push_back(
      setSubtensor(y, constant(0.5, DType::Float32), {Idx::all(), Idx::slice(-2, std::nullopt)}));
  // Integer-array indexing: arrays broadcast together ((2, 1) with (3,)), adjacent or not, with
  // slices around them.
  auto z = Variable::create(TensorType(DType::Float32, {3, 4, 5}), "z");
  auto r2 = Variable::create(TensorType(DType::Int64, {2, 1}), "r2");
  auto c3 = Variable::create(TensorType(DType::Int64, {3}), "c3");
  outs.push_back(advancedSubtensor(x, {r2, c3}));                               // (2, 3)
  outs.push_back(advancedSubtensor(z, {Idx::slice(1, std::nullopt), r2, c3}));  // (2, 2, 3)
  outs.push_back(advancedSubtensor(z, {r2, Idx::all(), c3}));                   // (2, 3, 4)
  outs.push_back(
      advancedSubtensor(z, {Idx::slice(std::nullopt, std::nullopt, -1), c3}));  // (3, 3, 5)
  auto g = graphOf({x, y, i, rows, z, r2, c3}, outs);
  ROUND_TRIP(r, *g,
             {{"x", randomTensor(DType::Float32, {4, 6}, rng)},
              {"y", randomTensor(DType::Float32, {5, 6}, rng)},
              {"i", Tensor::scalar(DType::Int64, 2)},
              {"rows", Tensor::fromDoubles(DType::Int32, {5}, {0, 3, -1, 2, 2})},
              {"z", randomTensor(DType::Float32, {3, 4, 5}, rng)},
              {"r2", Tensor::fromDoubles(DType::Int64, {2, 1}, {-1, 1})},
              {"c3", Tensor::fromDoubles(DType::Int64, {3}, {0, 3, -2})}});
}

void TestOnnxExport::reductionsRoundTrip() {
  std::mt19937_64 rng(4);
  auto x = Variable::create(TensorType(DType::Float32, {3, kUnknownDim, 5}), "x");
  auto n = Variable::create(TensorType(DType::Int16, {3, 4}), "n");
  auto b = Variable::create(TensorType(DType::Bool, {3, 4}), "b");
  auto h = Variable::create(TensorType(DType::Float16, {6}), "h");
  std::vector<VarPtr> outs = {sum(x, {1}),
                              sum(x),
                              prod(x, {0, 2}, true),
                              max(x, {-1}),
                              min(x, {0}),
                              mean(x, {1, 2}),
                              argmax(x, 1),
                              argmin(x),
                              sum(n, {1}),
                              max(n, {0}),
                              all(b, {1}),
                              any(b),
                              sum(h),
                              logsumexp(x, {2}),
                              var(x, {1}, true),
                              mean(x, {0, 2}, true),
                              mean(x, {2})};
  auto g = graphOf({x, n, b, h}, outs);
  ROUND_TRIP(r, *g,
             {{"x", randomTensor(DType::Float32, {3, 4, 5}, rng)},
              {"n", randomTensor(DType::Int16, {3, 4}, rng, -50, 50)},
              {"b", randomTensor(DType::Bool, {3, 4}, rng)},
              {"h", randomTensor(DType::Float16, {6}, rng)}},
             17, 1e-3, 1e-4);
  // The means over static axes are ONNX's ReduceMean (Note [ReduceMean]): the op type is in the
  // serialized model.
  const std::string bytes = io::writeOnnx(*g);
  QVERIFY(bytes.find("ReduceMean") != std::string::npos);
  auto only = graphOf({x}, {sum(x, {2}) / constant(5.0, DType::Float32)});
  QVERIFY(io::writeOnnx(*only).find("ReduceMean") != std::string::npos);
  auto notMean = graphOf({x}, {sum(x, {2}) / constant(4.0, DType::Float32)});  // not the count
  QVERIFY(io::writeOnnx(*notMean).find("ReduceMean") == std::string::npos);
}

// The BLAS ops with constant and symbolic scalars, the input gradient of a strided grouped
// convolution, batch normalization in training and over non-channel axes, the softmax gradients,
// one-hot and the cross-entropy losses with both kinds of targets, top-k, and a DimShuffle that
// drops, moves and inserts axes at once.
void TestOnnxExport::nnOpsRoundTrip() {
  std::mt19937_64 rng(9);
  auto A = Variable::create(TensorType(DType::Float32, {4, 3}), "A");
  auto Z = Variable::create(TensorType(DType::Float32, {4, 5}), "Z");
  auto B = Variable::create(TensorType(DType::Float32, {3, 5}), "B");
  auto u = Variable::create(TensorType(DType::Float32, {3}), "u");
  auto v = Variable::create(TensorType(DType::Float32, {4}), "v");
  auto alpha = Variable::create(TensorType(DType::Float32, {}), "alpha");
  auto gy = Variable::create(TensorType(DType::Float32, {2, 4, 5, 4}), "gy");
  auto w = param("w", {4, 3, 3, 3}, rng);
  auto logits = Variable::create(TensorType(DType::Float32, {kUnknownDim, 5}), "logits");
  auto t = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "t");
  auto q = Variable::create(TensorType(DType::Float32, {kUnknownDim, 5}), "q");
  auto x3 = Variable::create(TensorType(DType::Float32, {2, 1, 3}), "x3");
  auto scale = param("scale", {1, 5}, rng), shift = param("shift", {1, 5}, rng);
  auto s3 = param("s3", {1, 1, 3}, rng), m3 = param("m3", {1, 1, 3}, rng);
  auto v3 = SharedVariable::create(randomTensor(DType::Float32, {1, 1, 3}, rng, 0.5, 2), "v3");
  const VarPtr half = constant(0.5, DType::Float32), two = constant(2.0, DType::Float32);
  Conv2dParams p;
  p.stride = {2, 2};
  p.padding = {1, 1};
  p.groups = 2;  // w: (4, 3, 3, 3) is (O, C/groups, KH, KW) for C = 6
  const auto bn = batchNormTrain(logits, scale, shift, {0}, 1e-3);
  const VarPtr sm = softmax(logits), lsm = logSoftmax(logits);
  const auto ce = softmaxCrossEntropyWithLogitsAndSoftmax(logits, t);
  const auto [topValues, topIndices] = topk(logits, 2, 1);
  std::vector<VarPtr> outs = {gemm(Z, alpha, A, B, half),
                              gemm(Z, half, A, B, constant(0.0, DType::Float32)),
                              gemm(Z, two, A, B, alpha),
                              gemv(v, alpha, A, u, half),
                              gemv(v, two, A, u, constant(0.0, DType::Float32)),
                              ger(A, alpha, v, u),
                              ger(A, two, v, u),
                              conv2dGradInputs(w, gy, constantInt(9), constantInt(8), p),
                              bn.y,
                              bn.mean,
                              bn.var,
                              batchNormInference(x3, s3, s3, m3, v3, {0, 1}, 1e-4),
                              softmaxGrad(q, sm, 1),
                              logSoftmaxGrad(q, lsm, 1),
                              oneHot(t, constantInt(5)),
                              categoricalCrossEntropy(sm, t),
                              categoricalCrossEntropy(sm, q),
                              ce[0],
                              ce[1],
                              softmaxCrossEntropyWithLogits(logits, q),
                              softmaxCrossEntropyGrad(ce[0], ce[1], t),
                              topValues,
                              topIndices,
                              topk(logits, 3, 0, false).first,
                              dimshuffle(x3, {2, DimShuffle::kNewAxis, 0})};
  auto g = graphOf({A, Z, B, u, v, alpha, gy, w, logits, t, q, x3, scale, shift, s3, m3, v3}, outs);
  ROUND_TRIP(r, *g,
             {{"A", randomTensor(DType::Float32, {4, 3}, rng)},
              {"Z", randomTensor(DType::Float32, {4, 5}, rng)},
              {"B", randomTensor(DType::Float32, {3, 5}, rng)},
              {"u", randomTensor(DType::Float32, {3}, rng)},
              {"v", randomTensor(DType::Float32, {4}, rng)},
              {"alpha", Tensor::scalar(DType::Float32, -1.5)},
              {"gy", randomTensor(DType::Float32, {2, 4, 5, 4}, rng)},
              {"logits", randomTensor(DType::Float32, {6, 5}, rng)},
              {"t", Tensor::fromDoubles(DType::Int64, {6}, {0, 4, 2, 2, 1, 3})},
              {"q", randomTensor(DType::Float32, {6, 5}, rng, 0, 1)},
              {"x3", randomTensor(DType::Float32, {2, 1, 3}, rng)}},
             17, 1e-4, 1e-5);
}

Q_DECLARE_METATYPE(tscope::engine::DType)

// One Elemwise scalar op on operands of the given dtypes, at opsets 13 and 17: the casts the
// engine's promotion implies and the widening ONNX's type constraints need (Add on int8 at opset
// 13).
void TestOnnxExport::elemwise_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<DType>("a");
  QTest::addColumn<DType>("b");
  QTest::addColumn<int>("opset");
  const DType F = DType::Float32, D = DType::Float64, I = DType::Int32, L = DType::Int64,
              B = DType::Int8, U = DType::UInt8, H = DType::Float16, Z = DType::Bool;
  struct Row {
    const char* op;
    DType a, b;
  };
  const Row rows[] = {
      {"add", F, F},      {"add", B, U},     {"add", Z, Z},      {"sub", F, D},
      {"sub", B, B},      {"mul", I, F},     {"mul", U, U},      {"true_div", I, I},
      {"true_div", F, F}, {"int_div", L, L}, {"int_div", F, F},  {"mod", I, I},
      {"mod", D, D},      {"pow", F, F},     {"pow", I, I},      {"minimum", F, H},
      {"maximum", B, L},  {"maximum", Z, Z}, {"neg", F, F},      {"neg", B, B},
      {"abs", I, I},      {"sign", F, F},    {"sqr", F, F},      {"sqr", B, B},
      {"exp", F, F},      {"exp", I, I},     {"expm1", F, F},    {"log", F, F},
      {"log1p", D, D},    {"log2", F, F},    {"log10", F, F},    {"sqrt", H, H},
      {"tanh", F, F},     {"sigmoid", F, F}, {"softplus", D, D}, {"sin", F, F},
      {"cos", F, F},      {"erf", F, F},     {"floor", F, F},    {"ceil", D, D},
      {"round", F, F},    {"floor", I, I},   {"relu", F, F},     {"relu", I, I},
      {"relu", U, U},     {"clip", F, F},    {"clip", I, I},     {"eq", F, I},
      {"neq", I, I},      {"lt", F, F},      {"le", I, F},       {"gt", Z, Z},
      {"ge", B, U},       {"and", Z, Z},     {"or", I, Z},       {"xor", Z, Z},
      {"not", F, F},      {"switch", F, F},  {"switch", I, F},   {"identity", I, I},
      {"second", F, I},
  };
  for (const Row& row : rows)
    for (int opset : {13, 17})
      QTest::addRow("%s %s %s opset %d", row.op, dtypeName(row.a).data(), dtypeName(row.b).data(),
                    opset)
          << QString(row.op) << row.a << row.b << opset;
}

void TestOnnxExport::elemwise() {
  QFETCH(QString, op);
  QFETCH(DType, a);
  QFETCH(DType, b);
  QFETCH(int, opset);
  const ScalarOp scalar = *scalarOpFromName(op.toStdString());
  const int arity = scalarOpInfo(scalar).arity;
  std::mt19937_64 rng(5);
  const bool positive = op.startsWith("log") || op == "sqrt" || op == "pow";
  auto x = Variable::create(TensorType(a, {3, 4}), "x");
  auto y = Variable::create(TensorType(b, {4}), "y");  // broadcast along the rows
  auto c = Variable::create(TensorType(DType::Bool, {3, 1}), "c");
  std::vector<VarPtr> inputs{x};
  std::vector<VarPtr> operands{x};
  if (scalar == ScalarOp::Switch) {
    operands = {c, x, y};
    inputs = {c, x, y};
  } else if (scalar == ScalarOp::Clip) {
    operands = {x, constant(-1, a), constant(1, a)};
  } else if (arity != 1) {
    operands.push_back(y);
    inputs.push_back(y);
  }
  VarPtr out = tscope::engine::elemwise(scalar, operands);
  auto g = graphOf(inputs, {out});
  std::map<std::string, Tensor> values = {
      {"x", randomTensor(a, {3, 4}, rng, positive ? 0.1 : -3, 3)},
      {"y", randomTensor(b, {4}, rng, positive ? 0.5 : -3, 3)},
      {"c", randomTensor(DType::Bool, {3, 1}, rng)}};
  // Divisors away from zero (the engine and ONNX differ there by design).
  if (op == "int_div" || op == "mod" || op == "true_div")
    values["y"] = Tensor::fromDoubles(b, {4}, {2, -3, 1, -1});
  for (auto it = values.begin(); it != values.end();)
    it = std::any_of(inputs.begin(), inputs.end(),
                     [&](const VarPtr& v) { return v->name() == it->first; })
             ? std::next(it)
             : values.erase(it);
  // The exact float remainder is ONNX's Mod with fmod=1 (Note [Floor division and modulo]), which
  // the importer reads back exactly (Note [C fmod of floats]).
  try {
    roundTrip(*g, values, opset, 2e-3, 1e-5);
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
}

// A fast_run-optimized graph (fused Composites, Gemm, in-place ops) exports as its out-of-place,
// unfused form and computes what the original computes.
void TestOnnxExport::optimizedGraphRoundTrip() {
  std::mt19937_64 rng(6);
  auto x = Variable::create(TensorType(DType::Float32, {5, 4}), "x");
  auto z = Variable::create(TensorType(DType::Float32, {5, 3}), "z");
  auto W = param("W", {4, 3}, rng);
  VarPtr y = tanh(z + 2.0 * dot(x, W)) * exp(z) - sigmoid(z);
  VarPtr s = sum(sqr(y), {1});
  io::TsgDocument doc;
  doc.original = graphOf({x, z, W}, {y, s});
  session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
  std::set<std::string> ops;
  bool inplace = false;
  for (const Apply* node : doc.optimized->nodes()) {
    ops.insert(node->op().name());
    inplace = inplace || !node->op().destroyMap().empty();
  }
  QVERIFY2(ops.count("Composite"), "fast_run fuses the elementwise chain");
  QVERIFY2(ops.count("Gemm"), "fast_run turns z + 2 dot(x, W) into a Gemm");
  QVERIFY2(inplace, "fast_run makes some node in-place");
  ROUND_TRIP(r, *doc.optimized,
             {{"x", randomTensor(DType::Float32, {5, 4}, rng)},
              {"z", randomTensor(DType::Float32, {5, 3}, rng)}},
             17, 1e-5, 1e-5);
  // ... and what the original graph computes.
  session::RunInputs run;
  run.byName = {{"x", randomTensor(DType::Float32, {5, 4}, rng)},
                {"z", randomTensor(DType::Float32, {5, 3}, rng)}};
  const auto want = session::runGraph(*doc.original, run).outputs;
  const auto got = session::runGraph(*r.imported.document.original, run).outputs;
  for (std::size_t i = 0; i < want.size(); ++i) QVERIFY(got[i].allClose(want[i], 1e-5, 1e-5));
}

// The example training graphs: gradients (SumToShape with symbolic targets, the cross-entropy
// ops, SoftmaxGrad) and updates (exported as plain outputs).
void TestOnnxExport::trainingGraphRoundTrip_data() {
  QTest::addColumn<QString>("file");
  QTest::newRow("mlp") << "mlp.tsg";
  QTest::newRow("logistic_regression") << "logistic_regression.tsg";
  QTest::newRow("mlp_forward") << "mlp_forward.tsg";
}

void TestOnnxExport::trainingGraphRoundTrip() {
  QFETCH(QString, file);
  io::TsgDocument doc =
      io::loadTsg(std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/" + file.toStdString());
  std::mt19937_64 rng(7);
  std::map<std::string, Tensor> inputs;
  for (const VarPtr& in : doc.original->inputs()) {
    if (in->kind() == Variable::Kind::Shared) continue;
    std::vector<std::int64_t> shape = in->type().shape();
    for (std::int64_t& d : shape)
      if (d == kUnknownDim) d = 6;
    inputs[in->name()] = in->type().dtype() == DType::Int64
                             ? randomTensor(DType::Int64, shape, rng, 0, 9)
                             : randomTensor(in->type().dtype(), shape, rng, 0, 1);
  }
  ROUND_TRIP(r, *doc.original, inputs, 17, 1e-4, 1e-6);
  // The fast_run-optimized graph too, against the original's outputs.
  session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
  ROUND_TRIP(o, *doc.optimized, inputs, 13, 1e-4, 1e-6);
  for (std::size_t i = 0; i < r.expected.size(); ++i)
    QVERIFY(o.actual[i].allClose(r.expected[i], 1e-4, 1e-6));
}

// Graph inputs keep their names (made unique; "input_<k>" for none), unknown dims stay unknown,
// shared variables keep theirs after the inputs', an output that is an input or is listed twice is
// copied by an Identity, and outputs keep their names ("output_<i>" for none).
void TestOnnxExport::namesAndShapes() {
  std::mt19937_64 rng(8);
  auto a = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
  auto b = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
  auto c = Variable::create(TensorType(DType::Float32, {2, kUnknownDim}));
  auto w = SharedVariable::create(Tensor::full(DType::Float32, {3}, 0.5), "x");
  const Tensor va = randomTensor(DType::Float32, {4, 3}, rng),
               vb = randomTensor(DType::Float32, {4, 3}, rng),
               vc = randomTensor(DType::Float32, {2, 5}, rng);
  VarPtr total = a + b * w;
  total->setName("total");
  const std::vector<VarPtr> outs = {total, total, c, transpose(c)};
  auto g = graphOf({a, b, c, w}, outs);
  const io::OnnxImportResult back = io::readOnnx(io::writeOnnx(*g), "names.onnx");
  const FunctionGraph& h = *back.document.original;
  std::vector<std::string> regular, shared;
  for (const VarPtr& in : h.inputs())
    (in->kind() == Variable::Kind::Shared ? shared : regular).push_back(in->name());
  QCOMPARE(regular, (std::vector<std::string>{"x", "x_1", "input_2"}));
  QCOMPARE(shared, (std::vector<std::string>{"x_2"}));
  for (const VarPtr& in : h.inputs()) {
    if (in->name() == "input_2") QCOMPARE(in->type(), TensorType(DType::Float32, {2, kUnknownDim}));
    if (in->name() == "x") QCOMPARE(in->type(), TensorType(DType::Float32, {kUnknownDim, 3}));
  }
  std::vector<std::string> outputs;
  for (const VarPtr& out : h.outputs()) outputs.push_back(out->name());
  QCOMPARE(outputs, (std::vector<std::string>{"total", "total_1", "output_2", "output_3"}));
  // The original's inputs share a name, so it runs by position.
  const auto want = compile({a, b, c}, outs)({va, vb, vc});
  session::RunInputs run;
  run.byName = {{"x", va}, {"x_1", vb}, {"input_2", vc}};
  const auto got = session::runGraph(h, run).outputs;
  QCOMPARE(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) QVERIFY(got[i].allClose(want[i], 1e-6, 1e-6));
}

// An op without an ONNX form: the error names the op and the node (id, scope, creation site), and
// saveOnnx writes nothing (an existing file keeps its content).
void TestOnnxExport::unsupportedOpNamesTheNode() {
  auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
  auto twice =
      std::make_shared<AsOp>("TwiceOp", std::vector<TensorType>{TensorType(DType::Float32, {3})},
                             std::vector<TensorType>{TensorType(DType::Float32, {3})},
                             [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0]}; });
  VarPtr y;
  {
    NameScope s("block");
    y = exp((*twice)({tanh(x)}));
  }
  auto g = graphOf({x}, {y});
  std::int64_t id = -1;
  for (const Apply* node : g->nodes())
    if (node->op().name() == "TwiceOp") id = node->id();
  QVERIFY(id >= 0);
  try {
    io::writeOnnx(*g);
    QFAIL("writeOnnx accepted an op without an ONNX form");
  } catch (const io::OnnxExportError& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("TwiceOp") != std::string::npos, e.what());
    QVERIFY2(what.find("node " + std::to_string(id)) != std::string::npos, e.what());
    QVERIFY2(what.find("scope 'block'") != std::string::npos, e.what());
    QVERIFY2(what.find("tst_onnx_export.cpp") != std::string::npos, e.what());
    QVERIFY2(what.find("no ONNX form") != std::string::npos, e.what());
    QCOMPARE(e.nodeId(), id);
  }
  QTemporaryDir dir;
  const std::filesystem::path fresh = dir.filePath("fresh.onnx").toStdString();
  QVERIFY_THROWS_EXCEPTION(io::OnnxExportError, io::saveOnnx(*g, fresh));
  QVERIFY(!std::filesystem::exists(fresh));
  const std::filesystem::path existing = dir.filePath("existing.onnx").toStdString();
  std::ofstream(existing) << "old";
  QVERIFY_THROWS_EXCEPTION(io::OnnxExportError, io::saveOnnx(*g, existing));
  std::ifstream in(existing);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  QCOMPARE(content, std::string("old"));
  // The directory holds nothing else (no temporary left behind).
  QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                         std::filesystem::directory_iterator()),
           std::ptrdiff_t(1));
}

// Opsets 13 to 17 are written (and read back as written); others are refused.
void TestOnnxExport::opsetRange() {
  auto x = Variable::create(TensorType(DType::Int8, {2, 3}), "x");
  auto g = graphOf({x}, {relu(x + x)});
  for (int opset : {12, 18}) {
    io::OnnxExportOptions options;
    options.opset = opset;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, io::writeOnnx(*g, options));
  }
  for (int opset = io::kOnnxExportMinOpset; opset <= io::kOnnxExportMaxOpset; ++opset) {
    ROUND_TRIP(r, *g, {{"x", Tensor::fromDoubles(DType::Int8, {2, 3}, {-100, 100, 3, -4, 70, 0})}},
               opset);
    QCOMPARE(r.imported.opset, opset);
    QCOMPARE(r.actual[0].toDoubles(),
             (std::vector<double>{56, 0, 6, 0, 0, 0}));  // wraps as int8 does
  }
}

TSCOPE_TEST_MAIN(TestOnnxExport)
#include "tst_onnx_export.moc"
