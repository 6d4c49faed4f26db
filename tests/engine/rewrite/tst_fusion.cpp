// fuseElementwise: chains, trees, multi-output groups, duplicated cheap producers, broadcast
// producers left alone, maxInputs, inplace nodes skipped, existing Composites merged, no cycles
// (the diamond through a non-elementwise node, random graphs), the log's reason, and a 20k-node
// graph in well under a second. Every case checks the values before and after on random inputs.
#include "../ops/op_test_support.h"
#include "engine/graph/op.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/rewrite/rules/fusion.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <vector>

using namespace tscope::engine;
using namespace tscope::test;

namespace {
constexpr DType F32 = DType::Float32;

VarPtr input(const std::string& name, std::vector<std::int64_t> shape = {3, 5}, DType d = F32) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

std::vector<Tensor> runGraph(const FunctionGraph& fg, const std::vector<Tensor>& values) {
  VM vm(fg, fg.toposort());
  vm.start(values);
  while (vm.run() != VM::Status::Finished) {
  }
  return vm.outputValues();
}

std::vector<Tensor> valuesFor(const std::vector<VarPtr>& inputs, std::uint64_t seed = 1) {
  std::vector<Tensor> values;
  for (const VarPtr& in : inputs)
    values.push_back(randomTensor(in->type().dtype(), in->type().shape(), seed++, 0.1, 1.0));
  return values;
}

int count(const FunctionGraph& fg, const std::function<bool(const Apply&)>& pred) {
  int n = 0;
  for (const Apply* a : fg.nodes()) n += pred(*a) ? 1 : 0;
  return n;
}
bool isComposite(const Apply& a) {
  return dynamic_cast<const Composite*>(&a.op()) != nullptr;
}
bool isElemwiseNode(const Apply& a) {
  return a.op().name() == "Elemwise";
}
std::vector<const Apply*> composites(const FunctionGraph& fg) {
  std::vector<const Apply*> out;
  for (const Apply* a : fg.nodes())
    if (isComposite(*a)) out.push_back(a);
  return out;
}

// Fuses a clone of inputs -> outputs and checks the graph's integrity and that the values did not
// change: the graph as built (compile, mode none) against the fused graph, bit for bit.
struct Fused {
  std::unique_ptr<FunctionGraph> graph;
  std::size_t created = 0;
};
Fused fuse(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
           FusionOptions options = {}) {
  Fused f;
  f.graph = std::make_unique<FunctionGraph>(inputs, outputs);
  f.created = fuseElementwise(*f.graph, options);
  f.graph->checkIntegrity();
  f.graph->toposort();
  const std::vector<Tensor> values = valuesFor(inputs);
  const std::vector<Tensor> before = compile(inputs, outputs)(values);
  const std::vector<Tensor> after = runGraph(*f.graph, values);
  if (before.size() != after.size())
    throw std::logic_error("the fused graph has another number of outputs");
  for (std::size_t i = 0; i < before.size(); ++i)
    if (!after[i].bitwiseEqual(before[i]))
      throw std::logic_error("output " + std::to_string(i) + " changed:\n" + before[i].toString() +
                             "\n" + after[i].toString());
  return f;
}
#define FUSE(var, ...)                \
  Fused var;                          \
  try {                               \
    var = fuse(__VA_ARGS__);          \
  } catch (const std::exception& e) { \
    QFAIL(e.what());                  \
  }
}  // namespace

class TestFusion : public QObject {
  Q_OBJECT

 private slots:
  void testChainOfFive() {
    auto x = input("x"), a = input("a"), b = input("b"), c = input("c");
    auto y = tanh(x * a + b) * c - x;
    FUSE(f, {x, a, b, c}, {y});
    QCOMPARE(f.created, std::size_t(1));
    QCOMPARE(f.graph->nodeCount(), std::size_t(1));
    const Apply& node = *composites(*f.graph).at(0);
    QCOMPARE(QString::fromStdString(node.op().str()),
             QStringLiteral("Composite{sub(mul(tanh(add(mul(i0, i1), i2)), i3), i0)}"));
    QCOMPARE(node.nInputs(), 4);
    QCOMPARE(f.graph->outputs()[0]->owner(), &node);
  }

  void testTree() {
    auto x = input("x"), a = input("a"), b = input("b"), c = input("c");
    auto y = exp(x * a) + log(b + c);  // two branches joining
    FUSE(f, {x, a, b, c}, {y});
    QCOMPARE(f.created, std::size_t(1));
    QCOMPARE(f.graph->nodeCount(), std::size_t(1));
    QCOMPARE(composites(*f.graph).at(0)->nInputs(), 4);
  }

  void testIntermediateUsedOutsideGivesMultiOutput() {
    auto x = input("x"), a = input("a"), b = input("b");
    auto h = tanh(x + a);
    auto y = h * b;
    FUSE(f, {x, a, b}, {y, sum(h, {1})}, FusionOptions{32, false});
    QCOMPARE(f.created, std::size_t(1));
    const auto fused = composites(*f.graph);
    QCOMPARE(fused.size(), std::size_t(1));
    QCOMPARE(fused[0]->nOutputs(), 2);
    QCOMPARE(count(*f.graph, isElemwiseNode), 0);
    // The sum reads the Composite's second output.
    const Variable* summed = f.graph->outputs()[1]->owner()->input(0).get();
    QCOMPARE(summed->owner(), fused[0]);
    QCOMPARE(summed->index(), 1);
  }

  void testCheapProducerDuplicated() {
    auto x = input("x"), a = input("a");
    auto n = -x;
    auto y = exp(n * a);
    FUSE(f, {x, a}, {y, sum(n, {0})});
    // neg stays for the sum and is recomputed inside the Composite.
    QCOMPARE(f.created, std::size_t(1));
    const auto fused = composites(*f.graph);
    QCOMPARE(fused.size(), std::size_t(1));
    QCOMPARE(fused[0]->nOutputs(), 1);
    QCOMPARE(QString::fromStdString(fused[0]->op().str()),
             QStringLiteral("Composite{exp(mul(neg(i0), i1))}"));
    QCOMPARE(count(*f.graph, [](const Apply& a) { return a.op().str() == "Elemwise{neg}"; }), 1);
  }

  // a -> b (elemwise) -> c (dot) -> d (elemwise, also using b). Fusing b's chain and d's chain
  // into one node would make c both its consumer and its producer.
  void testDiamondThroughDotIsNotACycle() {
    auto a = input("a", {4, 4}), w = input("w", {4, 4});
    auto b = exp(a * 2.0);
    auto c = dot(b, w);
    auto d = tanh(b + c);
    auto out = d * 3.0 - a;  // a second elemwise chain after d
    FUSE(f, {a, w}, {out});
    const auto fused = composites(*f.graph);
    QCOMPARE(fused.size(), std::size_t(2));
    QCOMPARE(f.created, std::size_t(2));
    for (const Apply* node : fused) {
      const std::string s = node->op().str();
      QVERIFY2(!(s.find("exp") != std::string::npos && s.find("tanh") != std::string::npos),
               s.c_str());
    }
    // b's group gives b to the dot and to d's group; d's group takes the dot's result.
    QCOMPARE(count(*f.graph, isElemwiseNode), 0);
    QCOMPARE(f.graph->nodeCount(), std::size_t(3));
  }

  void testBroadcastProducerNotFused() {
    auto x = input("x", {4, 5}), row = input("row", {5}), s = input("s", {});
    auto p = exp(row);  // (5,) broadcast into (4, 5): recomputing it per element would cost 4x
    auto y = p * x + 1.0;
    FUSE(f, {x, row, s}, {y, x * exp(s) - 2.0});
    const auto fused = composites(*f.graph);
    QCOMPARE(fused.size(), std::size_t(2));
    QCOMPARE(count(*f.graph, [](const Apply& a) { return a.op().str() == "Elemwise{exp}"; }), 1);
    // exp of a 0-d input is computed once per block: it joins.
    int withExp = 0;
    for (const Apply* node : fused)
      withExp += node->op().str().find("exp(i") != std::string::npos ? 1 : 0;
    QCOMPARE(withExp, 1);
  }

  void testMaxInputs() {
    std::vector<VarPtr> xs;
    for (int i = 0; i < 10; ++i) xs.push_back(input("x" + std::to_string(i)));
    const VarPtr one = constant(1.0, F32);
    VarPtr y = xs[0];
    for (int i = 1; i < 10; ++i) y = y * xs[static_cast<std::size_t>(i)] + one;
    {
      FUSE(f, xs, {y});
      QCOMPARE(f.created, std::size_t(1));
      QCOMPARE(composites(*f.graph).at(0)->nInputs(), 11);  // ten tensors and the constant
    }
    // Groups grow from the end of the chain: 5, 4, 4 and 4 nodes; the first mul is left alone.
    FUSE(f, xs, {y}, FusionOptions{4, true});
    QCOMPARE(f.created, std::size_t(4));
    for (const Apply* node : composites(*f.graph)) QVERIFY(node->nInputs() <= 4);
    QCOMPARE(count(*f.graph, isElemwiseNode), 1);
  }

  void testInplaceNodesAreLeftAlone() {
    auto x = input("x"), a = input("a");
    auto t = exp(x * a);
    auto u =
        std::make_shared<Elemwise>(ScalarOp::Add, std::map<int, int>{{0, 0}})->operator()({t, a});
    auto y = tanh(u);
    FUSE(f, {x, a}, {y});
    QCOMPARE(
        count(*f.graph, [](const Apply& n) { return n.op().str() == "Elemwise{add,inplace}"; }), 1);
    QCOMPARE(f.created, std::size_t(1));  // exp(x * a); tanh alone stays an Elemwise
    QCOMPARE(count(*f.graph, isElemwiseNode), 2);
  }

  void testExistingCompositeJoins() {
    auto x = input("x"), a = input("a");
    auto inner = std::make_shared<Composite>(
        std::vector<DType>{F32, F32},
        std::vector<CompositeInstruction>{{ScalarOp::Mul, {0, 1}, F32}, {ScalarOp::Exp, {2}, F32}},
        std::vector<int>{3});
    auto y = sqrt(inner->operator()({x, a}) + a);
    FUSE(f, {x, a}, {y});
    QCOMPARE(f.created, std::size_t(1));
    QCOMPARE(f.graph->nodeCount(), std::size_t(1));
    QCOMPARE(QString::fromStdString(composites(*f.graph).at(0)->op().str()),
             QStringLiteral("Composite{sqrt(add(exp(mul(i0, i1)), i1))}"));
  }

  void testReasonInTheLog() {
    auto x = input("x"), a = input("a");
    FunctionGraph fg({x, a}, {tanh(x * a), exp(x) + 1.0});
    auto recorder = std::make_shared<RewriteRecorder>();
    fg.attachFeature(recorder);
    QCOMPARE(fuseElementwise(fg), std::size_t(2));
    QCOMPARE(recorder->records().size(), std::size_t(2));  // one replaceAll per Composite
    for (const RewriteRecord& r : recorder->records())
      QCOMPARE(QString::fromStdString(r.reason), QStringLiteral("elemwise_fusion"));
  }

  // Random DAGs of elementwise ops with dots in between and several outputs: whatever is fused,
  // the graph stays acyclic and computes the same values.
  void testRandomGraphs() {
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
      std::mt19937_64 rng(seed);
      std::vector<VarPtr> inputs{input("x0", {4, 4}), input("x1", {4, 4}), input("x2", {4, 4})};
      std::vector<VarPtr> pool = inputs;
      auto pick = [&] {
        return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)];
      };
      for (int i = 0; i < 30; ++i) {
        switch (rng() % 6) {
          case 0:
            pool.push_back(pick() + pick());
            break;
          case 1:
            pool.push_back(pick() * pick());
            break;
          case 2:
            pool.push_back(tanh(pick()));
            break;
          case 3:
            pool.push_back(-pick());
            break;
          case 4:
            pool.push_back(dot(pick(), pick()) * 0.25);
            break;
          default:
            pool.push_back(maximum(pick(), pick() - 0.5));
            break;
        }
      }
      std::vector<VarPtr> outputs{pool.back(), pool[pool.size() - 5], pool[pool.size() / 2]};
      for (bool duplicate : {true, false}) {
        FUSE(f, inputs, outputs, FusionOptions{6, duplicate});
        for (const Apply* node : composites(*f.graph)) QVERIFY(node->nInputs() <= 6);
      }
    }
  }

  // 2000 layers of a dot followed by a chain of 8 elementwise ops with shared constants (20k
  // nodes): fused in well under a second; the bound only catches quadratic behaviour.
  void testLargeGraphIsFast() {
    auto x = input("x", {2, 3}), w = input("w", {3, 3});
    VarPtr h = x;
    for (int layer = 0; layer < 2000; ++layer) {
      VarPtr z = dot(h, w) * 0.5 + 1.0;
      h = sigmoid(exp(-(z * z)) + z) * 0.9 - 0.1;
    }
    FunctionGraph fg({x, w}, {h});
    QVERIFY(fg.nodeCount() >= 20000);
    const auto start = std::chrono::steady_clock::now();
    const std::size_t created = fuseElementwise(fg);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("fuseElementwise on %zu nodes: %.3f s, %zu Composites", std::size_t(20000), seconds,
          created);
    QVERIFY2(seconds < 5.0, qPrintable(QString::number(seconds)));
    QCOMPARE(created, std::size_t(2000));
    QCOMPARE(fg.nodeCount(), std::size_t(4000));
    fg.checkIntegrity();
  }
};

TSCOPE_TEST_MAIN(TestFusion)
#include "tst_fusion.moc"
