// The CUDA backend's placement rules without a device (issue 22, label `cuda`): which nodes of
// real graphs the backend's own kernel table and rules move to the GPU, where the transfers land,
// which inputs stay host values (sizes, indices, a random state), and that every placed node's
// types are what its op infers (so a placed .tsg reloads).
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/compile/kernel.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/random/random_ops.h"
#include "engine/ops/reduce/argreduce.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"
#include "engine/rewrite/rules/gpu_placement.h"
#include "test_main.h"

#include <map>
#include <set>

using namespace tscope::engine;
using namespace tscope::engine::cuda;

class TestCudaPlacement : public QObject {
  Q_OBJECT
 private slots:
  void testPlacementRules();
  void testShapeAndIndexPlacement();
  void testCrossEntropyArgmaxRandomPlacement();
};

namespace {
struct Placed {
  std::map<std::string, int> onDevice, onHost;
  int toDevice = 0, toHost = 0;
  // Nodes whose output types contradict what their op infers from the placed inputs (a .tsg of
  // the placed graph would not load: tsg_reader re-infers every apply's types).
  std::vector<std::string> typeMismatches;
};

// Places fg with the backend's own kernel table and rules; a node counts as on the device when
// any of its values is (Note [Placed nodes]).
Placed placeWithBackend(FunctionGraph& fg) {
  KernelRegistry kernels;
  DeviceSupport rules;
  registerCudaKernels(kernels, rules);
  placeOnDevice(fg, kernels, Device::Cuda, &rules);
  fg.checkIntegrity();
  Placed p;
  for (const Apply* node : fg.nodes()) {
    const std::string name = node->op().name();
    if (name == "GpuFromHost") ++p.toDevice;
    if (name == "HostFromGpu") ++p.toHost;
    bool device = false;
    for (const VarPtr& in : node->inputs()) device = device || in->type().device() == Device::Cuda;
    for (int o = 0; o < node->nOutputs(); ++o)
      device = device || node->outputRef(o).type().device() == Device::Cuda;
    ++(device ? p.onDevice : p.onHost)[name];
    const std::vector<TensorType> inferred = node->op().outputTypes(node->inputs());
    for (int o = 0; o < node->nOutputs(); ++o)
      if (!inferred[static_cast<std::size_t>(o)].isCompatibleWith(node->outputRef(o).type()))
        p.typeMismatches.push_back(node->op().str() + ": " +
                                   inferred[static_cast<std::size_t>(o)].str() + " vs " +
                                   node->outputRef(o).type().str());
  }
  return p;
}

VarPtr var(DType d, std::vector<std::int64_t> shape, const char* name) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}
}  // namespace

void TestCudaPlacement::testPlacementRules() {
  // The backend's own rules: the whole graph moves, all() and float16 elementwise and float16
  // products included (Note [Half registers], Note [Half products]).
  KernelRegistry kernels;
  DeviceSupport rules;
  registerCudaKernels(kernels, rules);
  const VarPtr x = Variable::create(TensorType(DType::Float32, {4, 3}), "x");
  const VarPtr W = Variable::create(TensorType(DType::Float32, {3, 2}), "W");
  const VarPtr h = Variable::create(TensorType(DType::Float16, {4}), "h");
  const VarPtr y = sum(tanh(dot(x, W)), {1});
  const VarPtr z = exp(h);
  const VarPtr a = all(gt(x, constant(0.0, DType::Float32)));
  FunctionGraph fg({x, W, h}, {y, z, a});
  placeOnDevice(fg, kernels, Device::Cuda, &rules);
  fg.checkIntegrity();
  std::map<std::string, int> onDevice, onHost;
  for (const Apply* node : fg.nodes()) {
    const bool device = node->outputRef(0).type().device() == Device::Cuda;
    ++(device ? onDevice : onHost)[node->op().name()];
  }
  QCOMPARE(onDevice["Dot"], 1);
  QCOMPARE(onDevice["CAReduce"], 2);  // the sum and all()
  QCOMPARE(onHost["CAReduce"], 0);
  QCOMPARE(fg.outputs()[1]->owner()->op().name(), std::string("HostFromGpu"));  // float16 exp
  QCOMPARE(fg.outputs()[1]->owner()->input(0)->owner()->op().str(), std::string("Elemwise{exp}"));
  QCOMPARE(fg.outputs()[0]->owner()->op().name(), std::string("HostFromGpu"));
  // A float16 product is placed, a float64 one stays.
  const VarPtr ha = Variable::create(TensorType(DType::Float16, {4, 3}), "ha");
  const VarPtr hb = Variable::create(TensorType(DType::Float16, {3, 5}), "hb");
  const VarPtr da = Variable::create(TensorType(DType::Float64, {4, 3}), "da");
  const VarPtr db = Variable::create(TensorType(DType::Float64, {3, 5}), "db");
  FunctionGraph fh({ha, hb, da, db}, {dot(ha, hb), dot(da, db)});
  placeOnDevice(fh, kernels, Device::Cuda, &rules);
  QCOMPARE(fh.outputs()[0]->owner()->op().name(), std::string("HostFromGpu"));
  QCOMPARE(fh.outputs()[1]->owner()->op().name(), std::string("Dot"));  // float64: the CPU
}

void TestCudaPlacement::testShapeAndIndexPlacement() {
  // A pool-to-dot flatten with a symbolic batch, slicing, set/inc-subtensor, take and its
  // increment, a join and an alloc: every one moves, the sizes they read stay host values, and
  // the only transfers are the inputs going out and the outputs coming back.
  const VarPtr x = var(DType::Float32, {kUnknownDim, 4, 3, 3}, "x");
  const VarPtr W = var(DType::Float32, {36, 5}, "W");
  const VarPtr ids = var(DType::Int64, {7}, "ids");
  const VarPtr E = var(DType::Float32, {10, 5}, "E");
  const VarPtr i = var(DType::Int64, {}, "i");
  const VarPtr h = dot(flatten(relu(x), 2), W);                    // (?, 5)
  const VarPtr s = slice(h, 0, 1, std::nullopt);                   // h[1:]
  const VarPtr picked = select(E, 0, i);                           // E[i] (a symbolic index)
  const VarPtr set = setSubtensor(E, exp(picked), {Idx::at(i)});   // E[i] = exp(E[i])
  const VarPtr inc = incSubtensor(E, picked, {Idx::slice(2, 5)});  // E[2:5] += E[i]
  const VarPtr rows = advancedSubtensor1(E, ids);                  // E[ids]
  const VarPtr scat = advancedIncSubtensor1(E, tanh(rows), ids);   // E[ids] += ...
  const VarPtr joined = concatenate({E, tanh(E)}, 1);              // (10, 10)
  const VarPtr filled = alloc(sum(E), {shapeI(h, 0), constantInt(3)});
  const VarPtr bias = var(DType::Float32, {5}, "bias");
  const VarPtr summed = sumToShape(h, bias);  // a broadcast gradient summed back: (?, 5) -> (5,)
  FunctionGraph fg({x, W, ids, E, i, bias}, {s, set, inc, rows, scat, joined, filled, summed});
  Placed p = placeWithBackend(fg);
  QCOMPARE(p.typeMismatches, std::vector<std::string>{});
  for (const char* op : {"Reshape", "Subtensor", "IncSubtensor", "AdvancedSubtensor1",
                         "AdvancedIncSubtensor1", "Join", "Alloc", "Dot", "SumToShape"})
    QVERIFY2(p.onDevice.count(op) == 1 && p.onHost.count(op) == 0, op);
  // Shape arithmetic (the flattened size, the batch) stays on the host; the batch size of the
  // device value h is read there by ShapeI on the device (no copy).
  QVERIFY2(p.onHost.count("MakeVector") == 1, "MakeVector");
  QCOMPARE(p.onHost["ShapeI"] + p.onDevice["ShapeI"] >= 1, true);
  // Out: x, W, ids, E (and the sums' and alloc's constants); back: the eight outputs only.
  QCOMPARE(p.toHost, 8);
  // The symbolic index i goes to no device: Subtensor and IncSubtensor read it on the host.
  for (const Apply* node : fg.nodes())
    if (node->op().name() == "GpuFromHost") QVERIFY(node->input(0) != i);
}

void TestCudaPlacement::testCrossEntropyArgmaxRandomPlacement() {
  // A classifier step: logits, the fused softmax cross-entropy and its gradient, argmax and
  // any() for an accuracy, one-hot targets, a categorical loss, dropout from a random draw:
  // all on the device. The random op's state and sizes stay on the host, its new state too.
  const VarPtr x = var(DType::Float32, {8, 6}, "x");
  const VarPtr W = var(DType::Float32, {6, 4}, "W");
  const VarPtr t = var(DType::Int32, {8}, "t");
  const VarPtr state = var(DType::Int64, {2}, "state");
  const VarPtr logits = dot(x, W);
  const std::vector<VarPtr> lossAndSoftmax = softmaxCrossEntropyWithLogitsAndSoftmax(logits, t);
  const VarPtr g = softmaxCrossEntropyGrad(lossAndSoftmax[0], lossAndSoftmax[1], t);
  const VarPtr pred = std::make_shared<ArgReduce>(ArgReduce::Kind::Max, 1)->operator()({logits});
  const VarPtr worst =
      std::make_shared<ArgReduce>(ArgReduce::Kind::Min, std::nullopt)->operator()({logits});
  const VarPtr wrong = any(neq(pred, t));
  const VarPtr oh = oneHot(t, constantInt(4), DType::Float32);
  const VarPtr cat = categoricalCrossEntropy(lossAndSoftmax[1], oh);
  const std::vector<VarPtr> draw =
      randomUniform(state, {constantInt(8), constantInt(6)}, constant(0.0, DType::Float32),
                    constant(1.0, DType::Float32));
  const VarPtr dropped = x * lt(draw[1], constant(0.5, DType::Float32));
  FunctionGraph fg({x, W, t, state},
                   {lossAndSoftmax[0], g, pred, worst, wrong, cat, draw[0], dropped});
  Placed p = placeWithBackend(fg);
  QCOMPARE(p.typeMismatches, std::vector<std::string>{});
  for (const char* op : {"SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyGrad", "Argmax",
                         "Argmin", "OneHot", "CategoricalCrossEntropy", "RandomUniform"})
    QVERIFY2(p.onDevice.count(op) == 1 && p.onHost.count(op) == 0, op);
  QCOMPARE(p.onDevice["CAReduce"], 1);  // any()
  for (const Apply* node : fg.nodes()) {
    if (node->op().name() == "RandomUniform") {
      QCOMPARE(node->input(0)->type().device(), Device::Cpu);      // the state
      QCOMPARE(node->input(1)->type().device(), Device::Cpu);      // a size
      QCOMPARE(node->input(3)->type().device(), Device::Cuda);     // low
      QCOMPARE(node->outputRef(0).type().device(), Device::Cpu);   // the new state
      QCOMPARE(node->outputRef(1).type().device(), Device::Cuda);  // the sample
    }
    if (node->op().name() == "OneHot") QCOMPARE(node->input(1)->type().device(), Device::Cpu);
  }
  QVERIFY(fg.outputs()[6]->owner()->op().name() == "RandomUniform");  // no HostFromGpu
  // float16 predictions and a float16 sample have no CUDA code: they stay.
  const VarPtr h = var(DType::Float16, {8, 6}, "h");
  const std::vector<VarPtr> d16 =
      randomNormal(state, {constantInt(3)}, constant(0.0, DType::Float16),
                   constant(1.0, DType::Float16), DType::Float16);
  FunctionGraph fg16(
      {h, state}, {std::make_shared<ArgReduce>(ArgReduce::Kind::Max, 0)->operator()({h}), d16[1]});
  Placed q = placeWithBackend(fg16);
  QCOMPARE(q.onHost["Argmax"], 1);
  QCOMPARE(q.onHost["RandomNormal"], 1);
}

TSCOPE_TEST_MAIN(TestCudaPlacement)
#include "tst_cuda_placement.moc"
