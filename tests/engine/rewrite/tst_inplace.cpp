// insertInplace (Note [Inplace candidates]): which nodes switch to their inplace forms and which
// keep their own buffers, each case checked against the graph as built (compiled in mode none) on
// random inputs, with the caller's input tensors unchanged after the inplace graph ran in the
// order its DestroyHandler imposes.
#include "../ops/op_test_support.h"
#include "engine/graph/destroy_handler.h"
#include "engine/graph/history.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/rewrite/rules/inplace.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace tscope::engine;
using tscope::test::closeTo;
using tscope::test::randomTensor;

namespace {

VarPtr var(const std::string& name, std::vector<std::int64_t> shape) {
  return Variable::create(TensorType(DType::Float32, std::move(shape)), name);
}

struct Rewritten {
  std::unique_ptr<FunctionGraph> graph;
  std::size_t switched = 0;
};

// A FunctionGraph of inputs -> outputs after insertInplace.
Rewritten rewriteInplace(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs) {
  Rewritten r;
  r.graph = std::make_unique<FunctionGraph>(inputs, outputs);
  r.switched = insertInplace(*r.graph);
  r.graph->checkIntegrity();
  return r;
}

std::vector<Tensor> runInOrder(const FunctionGraph& fg, const std::vector<Tensor>& values) {
  VM vm(fg, fg.toposort());
  vm.start(values);
  while (vm.run() != VM::Status::Finished) {
  }
  return vm.outputValues();
}

// Random values in [0.1, 1) for the inputs; an unknown dimension gets size 3.
std::vector<Tensor> randomValues(const std::vector<VarPtr>& inputs, std::uint64_t seed = 7) {
  std::vector<Tensor> values;
  for (const VarPtr& in : inputs) {
    Shape shape = in->type().shape();
    for (auto& d : shape) d = d == kUnknownDim ? 3 : d;
    values.push_back(randomTensor(in->type().dtype(), shape, seed++, 0.1, 1.0));
  }
  return values;
}

// The rewritten graph computes on `values` what the graph as built computes (compiled in mode
// none), and the tensors handed to it are unchanged afterwards.
bool sameValuesInputsKept(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                          const FunctionGraph& rewritten, const std::vector<Tensor>& values) {
  std::vector<Tensor> copies;
  for (const Tensor& v : values) copies.push_back(v.clone());
  const std::vector<Tensor> expected = tscope::test::evaluate(inputs, outputs, values);
  const std::vector<Tensor> actual = runInOrder(rewritten, values);
  if (expected.size() != actual.size()) return false;
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (!closeTo(actual[i], expected[i])) return false;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i].toDoubles() != copies[i].toDoubles()) {
      qWarning("input %zu was overwritten", i);
      return false;
    }
  return true;
}

bool sameValuesInputsKept(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                          const FunctionGraph& rewritten) {
  return sameValuesInputsKept(inputs, outputs, rewritten, randomValues(inputs));
}

int countOps(const FunctionGraph& fg, const std::string& str) {
  return static_cast<int>(std::count_if(fg.nodes().begin(), fg.nodes().end(),
                                        [&](const Apply* n) { return n->op().str() == str; }));
}

std::vector<std::string> opsInOrder(const FunctionGraph& fg) {
  std::vector<std::string> ops;
  for (const Apply* n : fg.toposort()) ops.push_back(n->op().str());
  return ops;
}

std::ptrdiff_t positionOf(const std::vector<Apply*>& order, const std::string& op) {
  return std::find_if(order.begin(), order.end(),
                      [&](const Apply* n) { return n->op().str() == op; }) -
         order.begin();
}

std::map<int, int> inplacePatternOf(const Variable& v) {
  if (const auto* c = dynamic_cast<const Composite*>(&v.owner()->op())) return c->inplacePattern();
  return dynamic_cast<const Elemwise&>(v.owner()->op()).inplacePattern();
}

}  // namespace

class TestInplace : public QObject {
  Q_OBJECT

 private slots:
  void testChainAfterFirstIsInplace();
  void testBroadcastInputKeepsBuffer();
  void testSecondReaderRunsFirst();
  void testReaderDependingOnResultKeepsBuffer();
  void testViewOfInputKeepsBuffer();
  void testGraphOutputKeepsBuffer();
  void testGemmFamily();
  void testComposite();
  void testZeroDimKeepsFastPath();
  void testExistingHistoryKept();
  void testLargeGraphValidatesIncrementally();
  void testFarReaders_data();
  void testFarReaders();
};

void TestInplace::testChainAfterFirstIsInplace() {
  const VarPtr x = var("x", {4, 5}), y = var("y", {4, 5});
  VarPtr h = sqr(mul(tanh(neg(exp(x))), y));
  h->setName("h");
  const Rewritten r = rewriteInplace({x, y}, {h});
  const FunctionGraph& fg = *r.graph;
  // exp reads the graph input; everything after it overwrites its predecessor's buffer.
  QCOMPARE(opsInOrder(fg), (std::vector<std::string>{
                               "Elemwise{exp}", "Elemwise{neg,inplace}", "Elemwise{tanh,inplace}",
                               "Elemwise{mul,inplace}", "Elemwise{sqr,inplace}"}));
  QCOMPARE(r.switched, std::size_t{4});
  QCOMPARE(inplacePatternOf(*fg.outputs()[0]->owner()->input(0)),
           (std::map<int, int>{{0, 0}}));  // not y
  // The twin keeps the node's metadata.
  QCOMPARE(fg.outputs()[0]->name(), std::string("h"));
  QCOMPARE(fg.outputs()[0]->owner()->site().str(), h->owner()->site().str());
  auto* dh = fg.feature<DestroyHandler>();
  QVERIFY(dh != nullptr);
  QCOMPARE(dh->destroyerCount(), std::size_t{4});
  QVERIFY(fg.feature<History>() == nullptr);  // the pass's own History is gone again
  QVERIFY(sameValuesInputsKept({x, y}, {h}, fg));
  // A second pass finds nothing left to switch.
  QCOMPARE(insertInplace(*r.graph), std::size_t{0});
}

void TestInplace::testBroadcastInputKeepsBuffer() {
  // exp(b) has the shape (5,), smaller than the sum's (4, 5): only the other operand may be
  // overwritten.
  const VarPtr x = var("x", {4, 5}), b = var("b", {5});
  const VarPtr s = add(exp(b), exp(x));
  const Rewritten r = rewriteInplace({x, b}, {s});
  QCOMPARE(r.switched, std::size_t{1});
  QCOMPARE(inplacePatternOf(*r.graph->outputs()[0]), (std::map<int, int>{{0, 1}}));
  QVERIFY(sameValuesInputsKept({x, b}, {s}, *r.graph));

  // Unknown sizes: the types must be equal, which (?, 5) and (?, 5) are; when exp(u) turns out
  // to be broadcast at run time, the product goes to a fresh buffer (Elemwise::perform).
  const VarPtr u = var("u", {kUnknownDim, 5}), w = var("w", {kUnknownDim, 5});
  const VarPtr e = mul(exp(u), w);
  const Rewritten r2 = rewriteInplace({u, w}, {e});
  QCOMPARE(r2.switched, std::size_t{1});
  QCOMPARE(inplacePatternOf(*r2.graph->outputs()[0]), (std::map<int, int>{{0, 0}}));
  QVERIFY(sameValuesInputsKept({u, w}, {e}, *r2.graph));
  QVERIFY(sameValuesInputsKept(
      {u, w}, {e}, *r2.graph,
      {randomTensor(DType::Float32, {1, 5}, 3), randomTensor(DType::Float32, {4, 5}, 4)}));
}

void TestInplace::testSecondReaderRunsFirst() {
  const VarPtr x = var("x", {4, 4});
  const VarPtr t = exp(x);
  // neg is reached first, then sin reads t and tanh reads t through a view.
  const VarPtr out = add(add(neg(t), sin(t)), tanh(transpose(t)));
  const Rewritten r = rewriteInplace({x}, {out});
  const FunctionGraph& fg = *r.graph;
  // neg overwrites t; sin and tanh keep reading t: they run first.
  QCOMPARE(countOps(fg, "Elemwise{neg,inplace}"), 1);
  QCOMPARE(countOps(fg, "Elemwise{sin}"), 1);
  QCOMPARE(countOps(fg, "Elemwise{tanh}"), 1);
  const std::vector<Apply*> order = fg.toposort();
  QVERIFY(positionOf(order, "Elemwise{sin}") < positionOf(order, "Elemwise{neg,inplace}"));
  QVERIFY(positionOf(order, "Elemwise{tanh}") < positionOf(order, "Elemwise{neg,inplace}"));
  QVERIFY(sameValuesInputsKept({x}, {out}, fg));
}

void TestInplace::testReaderDependingOnResultKeepsBuffer() {
  // mul reads t and neg's result, so it runs after neg: neg must not overwrite t. The switch is
  // tried, refused by the handler (incrementally: the outer exp's switch came first) and undone;
  // mul then overwrites neg's result, whose buffer dies.
  const VarPtr x = var("x", {4, 5});
  const VarPtr t = exp(exp(x));
  const VarPtr out = mul(neg(t), t);
  const Rewritten r = rewriteInplace({x}, {out});
  const FunctionGraph& fg = *r.graph;
  QCOMPARE(opsInOrder(fg), (std::vector<std::string>{"Elemwise{exp}", "Elemwise{exp,inplace}",
                                                     "Elemwise{neg}", "Elemwise{mul,inplace}"}));
  QCOMPARE(inplacePatternOf(*fg.outputs()[0]), (std::map<int, int>{{0, 0}}));
  QCOMPARE(fg.feature<DestroyHandler>()->fullChecks(), std::size_t{1});
  QVERIFY(sameValuesInputsKept({x}, {out}, fg));
}

void TestInplace::testViewOfInputKeepsBuffer() {
  const VarPtr x = var("x", {4, 5});
  const VarPtr out = exp(neg(transpose(x)));
  const Rewritten r = rewriteInplace({x}, {out});
  QCOMPARE(opsInOrder(*r.graph),
           (std::vector<std::string>{"DimShuffle{1,0}", "Elemwise{neg}", "Elemwise{exp,inplace}"}));
  QVERIFY(sameValuesInputsKept({x}, {out}, *r.graph));
}

void TestInplace::testGraphOutputKeepsBuffer() {
  const VarPtr x = var("x", {4, 5});
  const VarPtr t = exp(x);
  const VarPtr n = neg(t);
  const Rewritten r = rewriteInplace({x}, {t, n});
  QCOMPARE(r.switched, std::size_t{0});
  QVERIFY(sameValuesInputsKept({x}, {t, n}, *r.graph));
  // Without t among the outputs, neg may overwrite it.
  QCOMPARE(rewriteInplace({x}, {n}).switched, std::size_t{1});
}

void TestInplace::testGemmFamily() {
  const VarPtr z = var("z", {3, 4}), a = var("a", {3, 5}), b = var("b", {5, 4});
  const VarPtr y = var("y", {3}), v = var("v", {5}), m = var("m", {3, 5});
  const VarPtr alpha = constant(0.5, DType::Float32), beta = constant(2.0, DType::Float32);
  const VarPtr fromIntermediate = gemm(exp(z), alpha, a, b, beta);
  const VarPtr fromInput = gemm(z, alpha, a, b, beta);
  const VarPtr gv = gemv(sin(y), alpha, a, v, beta);
  const VarPtr gr = ger(exp(m), alpha, y, v);
  const std::vector<VarPtr> inputs{z, a, b, y, v, m}, outputs{fromIntermediate, fromInput, gv, gr};
  const Rewritten r = rewriteInplace(inputs, outputs);
  const FunctionGraph& fg = *r.graph;
  QCOMPARE(countOps(fg, "Gemm{inplace}"), 1);
  QCOMPARE(countOps(fg, "Gemm{no_inplace}"), 1);  // Z is the graph input z
  QCOMPARE(countOps(fg, "Gemv{inplace}"), 1);
  QCOMPARE(countOps(fg, "Ger{inplace}"), 1);
  QCOMPARE(r.switched, std::size_t{3});
  QCOMPARE(fg.outputs()[0]->owner()->op().str(), std::string("Gemm{inplace}"));
  QCOMPARE(fg.outputs()[1]->owner()->op().str(), std::string("Gemm{no_inplace}"));
  QVERIFY(sameValuesInputsKept(inputs, outputs, fg));
}

void TestInplace::testComposite() {
  const VarPtr x = var("x", {4, 5}), y = var("y", {4, 5});
  // Two outputs: tanh(add(i0, i1)) and add(i0, i1); each may overwrite one of the intermediates.
  const auto fused = std::make_shared<Composite>(
      std::vector<DType>{DType::Float32, DType::Float32},
      std::vector<CompositeInstruction>{{ScalarOp::Add, {0, 1}}, {ScalarOp::Tanh, {2}}},
      std::vector<int>{3, 2});
  const ApplyPtr node = fused->makeNode({exp(x), sin(y)});
  // One output; input 0 is the graph input x, so only input 1 may be overwritten.
  const auto product = std::make_shared<Composite>(
      std::vector<DType>{DType::Float32, DType::Float32},
      std::vector<CompositeInstruction>{{ScalarOp::Mul, {0, 1}}}, std::vector<int>{2});
  const VarPtr p = (*product)({x, exp(y)});
  const std::vector<VarPtr> outputs{node->output(0), node->output(1), p};
  const Rewritten r = rewriteInplace({x, y}, outputs);
  const FunctionGraph& fg = *r.graph;
  QCOMPARE(r.switched, std::size_t{2});
  QCOMPARE(inplacePatternOf(*fg.outputs()[0]), (std::map<int, int>{{0, 0}, {1, 1}}));
  QCOMPARE(fg.outputs()[0]->owner(), fg.outputs()[1]->owner());
  QCOMPARE(inplacePatternOf(*fg.outputs()[2]), (std::map<int, int>{{0, 1}}));
  QVERIFY(sameValuesInputsKept({x, y}, outputs, fg));
}

void TestInplace::testZeroDimKeepsFastPath() {
  const VarPtr s = var("s", {});
  const VarPtr out = exp(neg(exp(s)));
  const Rewritten r = rewriteInplace({s}, {out});
  QCOMPARE(r.switched, std::size_t{0});
  QVERIFY(sameValuesInputsKept({s}, {out}, *r.graph));
}

void TestInplace::testExistingHistoryKept() {
  const VarPtr x = var("x", {4, 5});
  const VarPtr out = exp(neg(exp(x)));
  FunctionGraph fg({x}, {out});
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  auto dh = std::make_shared<DestroyHandler>();
  fg.attachFeature(dh);
  QCOMPARE(insertInplace(fg), std::size_t{2});
  QCOMPARE(fg.feature<History>(), history.get());
  QCOMPARE(fg.feature<DestroyHandler>(), dh.get());
  QVERIFY(history->size() >= 2);  // the switches went through the graph's own History
  history->revert(0);
  QCOMPARE(countOps(fg, "Elemwise{neg}"), 1);
  QCOMPARE(dh->destroyerCount(), std::size_t{0});
}

void TestInplace::testLargeGraphValidatesIncrementally() {
  // Chains of elementwise ops that also read their neighbour chain (so buffers have several
  // readers and the orderings matter), with a dot per chain.
  constexpr int kChains = 60, kLength = 30;
  std::vector<VarPtr> inputs, outputs;
  VarPtr previous;
  for (int c = 0; c < kChains; ++c) {
    const VarPtr x = var("x" + std::to_string(c), {2, 2});
    inputs.push_back(x);
    VarPtr h = exp(x);
    for (int k = 0; k < kLength; ++k) {
      if (k % 7 == 3 && previous)
        h = mul(h, previous);
      else if (k % 11 == 5)
        h = add(dot(h, h), h);
      else if (k % 2)
        h = tanh(h);
      else
        h = neg(h);
      if (k == kLength / 2) previous = h;
    }
    outputs.push_back(h);
  }
  const Rewritten r = rewriteInplace(inputs, outputs);
  const FunctionGraph& fg = *r.graph;
  auto* dh = fg.feature<DestroyHandler>();
  QVERIFY(r.switched > static_cast<std::size_t>(kChains * kLength / 2));
  // One full check for the first destroyer; every later switch was checked incrementally, with
  // order repairs that visited few nodes.
  QCOMPARE(dh->fullChecks(), std::size_t{1});
  QVERIFY2(dh->repairVisits() < 4 * fg.nodeCount(),
           (std::to_string(dh->repairVisits()) + " visits for " + std::to_string(fg.nodeCount()) +
            " nodes")
               .c_str());
  QVERIFY(sameValuesInputsKept(inputs, outputs, fg));
}

void TestInplace::testFarReaders_data() {
  QTest::addColumn<bool>("readerDependsOnChain");
  QTest::newRow("independent readers") << false;
  QTest::newRow("readers after the chain") << true;
}

void TestInplace::testFarReaders() {
  // A forward chain whose activations a backward chain reads again, as in a training graph:
  // h[k+1] = tanh(h[k]); g = g * sqr(h[k]) (sqr can run early: every tanh may overwrite its input)
  // or g = g * h[k] (h[k] is read after the whole chain: no tanh may overwrite it). Either way the
  // order repairs stay proportional to the graph, not to its square.
  QFETCH(bool, readerDependsOnChain);
  constexpr int kDepth = 300;
  const VarPtr x = var("x", {2, 3});
  std::vector<VarPtr> h{exp(x)};
  for (int k = 0; k < kDepth; ++k) h.push_back(tanh(h.back()));
  VarPtr g = h.back();
  for (int k = kDepth - 1; k >= 0; --k)
    g = mul(g, readerDependsOnChain ? h[static_cast<std::size_t>(k)]
                                    : sqr(h[static_cast<std::size_t>(k)]));
  const Rewritten r = rewriteInplace({x}, {g});
  const FunctionGraph& fg = *r.graph;
  QCOMPARE(countOps(fg, "Elemwise{tanh,inplace}"), readerDependsOnChain ? 0 : kDepth);
  QCOMPARE(countOps(fg, "Elemwise{mul,inplace}"), kDepth);
  auto* dh = fg.feature<DestroyHandler>();
  QCOMPARE(dh->fullChecks(), std::size_t{1});
  QVERIFY2(dh->repairVisits() < 4 * fg.nodeCount(),
           (std::to_string(dh->repairVisits()) + " visits for " + std::to_string(fg.nodeCount()) +
            " nodes")
               .c_str());
  QVERIFY(sameValuesInputsKept({x}, {g}, fg));
}

TSCOPE_TEST_MAIN(TestInplace)
#include "tst_inplace.moc"
