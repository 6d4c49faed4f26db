// Op::cost over every node of real compiled graphs: the MLP SGD step of the benchmarks and a
// small conv net training step (conv, batch norm, relu, max and average pooling, dense layer,
// softmax cross-entropy, their gradients and the SGD updates), each unoptimized (Mode::None) and
// optimized (fast_run). An observer asks each node's op for its cost with the input shapes the
// node ran with; every node must have a known cost, except the ops listed as unknown on purpose,
// so a future op without a cost is caught here. Where an op's outputs are fresh buffers (no
// viewMap) and the op writes them whole, the declared bytes written must equal the bytes of the
// outputs the kernel produced, which checks each op's output shapes against the real kernel.

#include "bench/mlp_step.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/random/random_stream.h"
#include "engine/ops/reduce/cumsum.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/ops/shape/tile_repeat.h"
#include "engine/ops/shape/topk.h"
#include "engine/tensor/tensor.h"
#include "engine/vm/observer.h"
#include "test_main.h"

#include <QtTest/QtTest>

#include <set>

using namespace tscope::engine;

namespace {

// Unknown on purpose (docs/profiling.md, "Cost model and roofline"): ops with an inner graph,
// whose inner nodes are counted on their own; user lambdas; ops a file names but the registry
// lacks; NonZero, whose output size depends on its input's values; ARange, whose length depends
// on its bounds' values (known when they are constants: tst_op_cost); here the one-hot gradient's
// arange(n) runs to a batch size the type leaves unknown.
const std::set<std::string> kUnknownOnPurpose = {"OpFromGraph", "IfElse", "AsOp", "NonZero",
                                                 "ARange"};
// Ops that write only part of their output (scatters into x) or a few int64s of metadata.
const std::set<std::string> kPartialWriters = {"IncSubtensor", "AdvancedIncSubtensor1",
                                               "AdvancedIncSubtensor"};

struct CostChecker final : ExecutionObserver {
  std::set<std::string> ops;  // op classes seen
  std::vector<std::string> errors;
  int nodes = 0;

  void afterNode(VM&, const NodeEvent& event) override {
    ++nodes;
    const Apply& node = event.node;
    ops.insert(node.op().name());
    std::vector<Shape> shapes;
    for (const Tensor* t : event.inputs) shapes.push_back(t->shape());
    const OpCost c = node.op().cost(node, shapes);
    if (!c.known) {
      if (!kUnknownOnPurpose.contains(node.op().name()))
        errors.push_back(node.op().str() + ": unknown cost");
      return;
    }
    if (!(c.flops >= 0) || !(c.bytesRead >= 0) || !(c.bytesWritten >= 0))
      errors.push_back(node.op().str() + ": a negative figure");
    if (!node.op().viewMap().empty() || kPartialWriters.contains(node.op().name())) return;
    double written = 0;
    for (const Tensor* t : event.outputs)
      written += static_cast<double>(t->numel()) * static_cast<double>(dtypeSize(t->dtype()));
    if (written != c.bytesWritten)
      errors.push_back(node.op().str() + ": declares " + std::to_string(c.bytesWritten) +
                       " bytes written, its kernel wrote " + std::to_string(written));
  }
};

void runAndCheck(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                 const std::vector<Update>& updates, const std::vector<Tensor>& args, Mode mode,
                 std::set<std::string>* seen) {
  auto checker = std::make_shared<CostChecker>();
  CompileOptions options;
  options.mode = mode;
  options.observers = {checker};
  Function f = compile(inputs, outputs, updates, options);
  f(args);
  QVERIFY(checker->nodes > 0);
  for (const std::string& e : checker->errors) qWarning("%s", e.c_str());
  const std::string first = checker->errors.empty() ? "" : checker->errors.front();
  QVERIFY2(checker->errors.empty(), first.c_str());
  seen->insert(checker->ops.begin(), checker->ops.end());
}

struct ConvNet {
  VarPtr x, y, loss;
  std::vector<std::shared_ptr<SharedVariable>> params;
  std::vector<Update> updates;
  std::vector<Tensor> args;

  ConvNet() {
    std::mt19937 rng(3);
    x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3, 8, 8}), "x");
    y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "y");
    auto w1 = SharedVariable::create(tscope::bench::uniform(rng, {4, 3, 3, 3}, 0.3f), "w1");
    auto gamma = SharedVariable::create(Tensor::full(DType::Float32, {1, 4, 1, 1}, 1.0), "gamma");
    auto beta = SharedVariable::create(Tensor::full(DType::Float32, {1, 4, 1, 1}, 0.0), "beta");
    auto w2 = SharedVariable::create(tscope::bench::uniform(rng, {4, 2, 3, 3}, 0.3f), "w2");
    auto wd = SharedVariable::create(tscope::bench::uniform(rng, {16, 5}, 0.3f), "wd");
    auto bd = SharedVariable::create(Tensor::full(DType::Float32, {5}, 0.0), "bd");
    params = {w1, gamma, beta, w2, wd, bd};
    Conv2dParams padded;
    padded.padding = {1, 1};
    auto h = conv2d(x, w1, padded);  // (N, 4, 8, 8)
    auto bn = batchNormTrain(h, gamma, beta, {0, 2, 3});
    auto r = relu(bn.y);
    auto p = maxPool2d(r, Pool2dParams::window(2, 2));  // (N, 4, 4, 4)
    Conv2dParams grouped;
    grouped.padding = {1, 1};
    grouped.stride = {2, 2};
    grouped.groups = 2;
    auto c2 = conv2d(p, w2, grouped);  // (N, 4, 2, 2)
    Pool2dParams avg;
    avg.kernel = {2, 2};
    avg.stride = {1, 1};
    avg.padding = {1, 1};
    auto a = avgPool2d(tanh(c2), avg);           // (N, 4, 3, 3)
    auto flat = flatten(subtensorCorner(a), 2);  // (N, 16)
    auto logits = dot(flat, wd) + bd;
    loss = mean(softmaxCrossEntropyWithLogits(logits, y));
    std::vector<VarPtr> wrt(params.begin(), params.end());
    auto g = grad(loss, wrt);
    for (std::size_t i = 0; i < params.size(); ++i)
      updates.push_back({params[i], params[i] - g[i] * 0.05});
    Tensor yb = Tensor::empty(DType::Int64, {6});
    for (std::int64_t i = 0; i < 6; ++i) yb.data<std::int64_t>()[i] = i % 5;
    args = {tscope::bench::uniform(rng, {6, 3, 8, 8}, 1.0f), yb};
  }

  // a[:, :, :2, :2]: a slice, so the graph has a Subtensor and its IncSubtensor gradient.
  static VarPtr subtensorCorner(const VarPtr& a) {
    return subtensor(
        a, {Idx::all(), Idx::all(), Idx::slice(std::nullopt, 2), Idx::slice(std::nullopt, 2)});
  }
};

// The ops the two training steps do not reach: an embedding lookup and its scatter gradient,
// softmax and log-softmax, join and split, tile and repeat, top-k, argmax, cumsum, one-hot,
// categorical cross-entropy, batch-norm inference, arange, a random draw of a static shape,
// max and prod reductions.
struct Assorted {
  VarPtr ids, x, t, loss;
  std::shared_ptr<SharedVariable> table;
  std::vector<Update> updates;
  std::vector<Tensor> args;

  Assorted() {
    std::mt19937 rng(5);
    ids = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "ids");
    x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 6}), "x");
    t = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "t");
    table = SharedVariable::create(tscope::bench::uniform(rng, {20, 6}, 0.5f), "table");
    auto h = advancedSubtensor1(table, ids) + x;  // (n, 6)
    auto s = softmax(h);
    auto ls = logSoftmax(h);
    auto j = concatenate({s, ls}, 1);  // (n, 12)
    auto parts = split(j, std::vector<std::int64_t>{5, 7}, 1);
    auto tl = tile(parts[0], {1, 2});  // (n, 10)
    auto rp = repeat(parts[1], 2, 1);  // (n, 14)
    auto [values, indices] = topk(rp, 3);
    auto am = cast(argmax(tl, 1), DType::Float32);
    auto cs = cumsum(h, 1);
    auto oh = oneHot(t, constantInt(6));
    auto cce = categoricalCrossEntropy(s, t);
    auto one = SharedVariable::create(Tensor::full(DType::Float32, {1, 6}, 1.0), "one");
    auto zero = SharedVariable::create(Tensor::full(DType::Float32, {1, 6}, 0.0), "zero");
    auto bn = batchNormInference(h, one, zero, zero, one, {0});
    RandomStream stream(7);
    auto noise = stream.uniform(std::vector<std::int64_t>{4, 6});
    auto range = cast(arange(constantInt(6)), DType::Float32);
    loss = sum(cce) + mean(values) + sum(cs * bn * oh) + max(am) + sum(noise) + prod(range) +
           sum(max(h, {1}));
    auto g = grad(loss, std::vector<VarPtr>{table});
    updates = stream.updates();
    updates.push_back({table, table - g[0] * 0.1});
    Tensor idb = Tensor::empty(DType::Int64, {5});
    Tensor tb = Tensor::empty(DType::Int64, {5});
    for (std::int64_t i = 0; i < 5; ++i) {
      idb.data<std::int64_t>()[i] = (i * 7) % 20;
      tb.data<std::int64_t>()[i] = i % 6;
    }
    args = {idb, tscope::bench::uniform(rng, {5, 6}, 1.0f), tb};
  }
};

}  // namespace

class TestOpCostGraphs : public QObject {
  Q_OBJECT

 private slots:
  void everyNodeOfRealGraphsHasACost() {
    std::set<std::string> seen;
    {
      tscope::bench::MlpStep mlp(0.01);
      for (Mode mode : {Mode::None, Mode::FastRun})
        runAndCheck({mlp.x, mlp.y}, {mlp.loss}, mlp.updates, mlp.args, mode, &seen);
    }
    {
      ConvNet net;
      for (Mode mode : {Mode::None, Mode::FastRun})
        runAndCheck({net.x, net.y}, {net.loss}, net.updates, net.args, mode, &seen);
    }
    {
      Assorted net;
      for (Mode mode : {Mode::None, Mode::FastRun})
        runAndCheck({net.ids, net.x, net.t}, {net.loss}, net.updates, net.args, mode, &seen);
    }
    std::string all;
    for (const std::string& op : seen) all += (all.empty() ? "" : ", ") + op;
    qInfo("op classes seen: %s", all.c_str());
    // The walk reached the families it is meant to cover (a rewrite that removed them all would
    // make it pass without checking anything).
    for (const char* op : {"Elemwise",
                           "Composite",
                           "Dot",
                           "Conv2d",
                           "Conv2dGradInputs",
                           "Conv2dGradWeights",
                           "BatchNormTrain",
                           "MaxPool2d",
                           "MaxPool2dGrad",
                           "AvgPool2d",
                           "AvgPool2dGrad",
                           "CAReduce",
                           "Subtensor",
                           "IncSubtensor",
                           "SoftmaxCrossEntropyWithLogits",
                           "SoftmaxCrossEntropyGrad",
                           "Softmax",
                           "LogSoftmax",
                           "Join",
                           "Split",
                           "Tile",
                           "Repeat",
                           "TopK",
                           "Argmax",
                           "CumSum",
                           "OneHot",
                           "CategoricalCrossEntropy",
                           "BatchNormInference",
                           "RandomUniform",
                           "AdvancedSubtensor1",
                           "AdvancedIncSubtensor1"})
      QVERIFY2(seen.contains(op), op);
  }
};

TSCOPE_TEST_MAIN(TestOpCostGraphs)
#include "tst_op_cost_graphs.moc"
