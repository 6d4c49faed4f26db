// Op::cost against hand counts: elementwise (broadcasting, inplace, second), Composite, the BLAS
// family, reductions, views and copies, gathers and scatters, random ops, and the ops that are
// unknown on purpose. The neural-network family is in tst_op_cost_nn.cpp; the walk over real
// compiled graphs in tst_op_cost_graphs.cpp.

#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/cost_common.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/random/random_ops.h"
#include "engine/ops/reduce/argreduce.h"
#include "engine/ops/reduce/careduce.h"
#include "engine/ops/reduce/cumsum.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"
#include "test_main.h"

#include <QtTest/QtTest>

using namespace tscope::engine;

namespace {

VarPtr var(DType dtype, Shape shape, const char* name = "v") {
  return Variable::create(TensorType(dtype, std::move(shape)), name);
}
VarPtr f32(Shape shape) {
  return var(DType::Float32, std::move(shape));
}

OpCost costOf(const ApplyPtr& node, std::vector<Shape> shapes) {
  return node->op().cost(*node, shapes);
}
OpCost costOf(const VarPtr& out, std::vector<Shape> shapes) {
  return out->owner()->op().cost(*out->owner(), shapes);
}

OpCost known(double flops, double read, double written) {
  OpCost c;
  c.flops = flops;
  c.bytesRead = read;
  c.bytesWritten = written;
  c.known = true;
  return c;
}

}  // namespace

class TestOpCost : public QObject {
  Q_OBJECT

 private slots:
  void elemwiseBinary() {
    // (2, 3) + (2, 3) float32: 6 adds, 2 * 24 bytes read, 24 written.
    auto node = std::make_shared<Elemwise>(ScalarOp::Add)->makeNode({f32({2, 3}), f32({2, 3})});
    QCOMPARE(costOf(node, {{2, 3}, {2, 3}}), known(6, 48, 24));
  }

  void elemwiseBroadcastReadsEachInputAtItsOwnSize() {
    // (4, 3) * (3,): 12 multiplies; reads 48 + 12 bytes (the row once), writes 48.
    auto node = std::make_shared<Elemwise>(ScalarOp::Mul)->makeNode({f32({4, 3}), f32({3})});
    QCOMPARE(costOf(node, {{4, 3}, {3}}), known(12, 60, 48));
    // Shapes known only at run time: (?, 3) given as (5, 3); a size-1 axis stretched.
    auto dyn =
        std::make_shared<Elemwise>(ScalarOp::Sub)->makeNode({f32({kUnknownDim, 3}), f32({1, 3})});
    QCOMPARE(costOf(dyn, {{5, 3}, {1, 3}}), known(15, 60 + 12, 60));
  }

  void elemwiseMixedDTypesAndCounts() {
    // A float64 comparison writes bool (1 byte each).
    auto lt = std::make_shared<Elemwise>(ScalarOp::Lt)
                  ->makeNode({var(DType::Float64, {10}), var(DType::Float64, {10})});
    QCOMPARE(costOf(lt, {{10}, {10}}), known(10, 160, 10));
    // A cast computes nothing and moves 4 -> 8 bytes per element.
    auto c = std::make_shared<Elemwise>(ScalarOp::Cast, std::map<int, int>{}, DType::Float64)
                 ->makeNode({f32({7})});
    QCOMPARE(costOf(c, {{7}}), known(0, 28, 56));
    // An n-ary add folds 3 operands with 2 adds; clip is 2 flops.
    auto add3 = std::make_shared<Elemwise>(ScalarOp::Add)->makeNode({f32({5}), f32({5}), f32({5})});
    QCOMPARE(costOf(add3, {{5}, {5}, {5}}).flops, 10.0);
    auto clip = std::make_shared<Elemwise>(ScalarOp::Clip)->makeNode({f32({5}), f32({}), f32({})});
    QCOMPARE(costOf(clip, {{5}, {}, {}}), known(10, 28, 20));
    // Transcendental: one flop per element by convention.
    auto e = std::make_shared<Elemwise>(ScalarOp::Exp)->makeNode({f32({8})});
    QCOMPARE(costOf(e, {{8}}), known(8, 32, 32));
  }

  void elemwiseInplaceStillWrites() {
    auto node = std::make_shared<Elemwise>(ScalarOp::Add, std::map<int, int>{{0, 0}})
                    ->makeNode({f32({2, 3}), f32({2, 3})});
    QCOMPARE(costOf(node, {{2, 3}, {2, 3}}), known(6, 48, 24));
  }

  void secondReadsOnlyItsSecondInput() {
    // second(a, b): b broadcast to a's shape; a's values are not read.
    auto node = std::make_shared<Elemwise>(ScalarOp::Second)->makeNode({f32({4, 3}), f32({})});
    QCOMPARE(costOf(node, {{4, 3}, {}}), known(0, 4, 48));
  }

  void compositeCountsItsScalarProgram() {
    // tanh(i0 + i1) * i2 over (8, 4), (4,), (8, 4): add 32, tanh 32, mul 32 = 96 flops.
    auto op = std::make_shared<Composite>(
        std::vector<DType>{DType::Float32, DType::Float32, DType::Float32},
        std::vector<CompositeInstruction>{
            {ScalarOp::Add, {0, 1}}, {ScalarOp::Tanh, {3}}, {ScalarOp::Mul, {4, 2}}},
        std::vector<int>{5});
    auto node = op->makeNode({f32({8, 4}), f32({4}), f32({8, 4})});
    QCOMPARE(costOf(node, {{8, 4}, {4}, {8, 4}}), known(96, 128 + 16 + 128, 128));
  }

  void compositeInstructionOnBroadcastInputRunsOnItsOwnShape() {
    // exp(i1) + i0 with i1 a (4,) row: exp runs 4 times, the add 32: 36 flops. Two outputs (the
    // exp also escapes): 16 + 128 bytes written.
    auto op = std::make_shared<Composite>(
        std::vector<DType>{DType::Float32, DType::Float32},
        std::vector<CompositeInstruction>{{ScalarOp::Exp, {1}}, {ScalarOp::Add, {2, 0}}},
        std::vector<int>{3, 2});
    auto node = op->makeNode({f32({8, 4}), f32({4})});
    QCOMPARE(costOf(node, {{8, 4}, {4}}), known(36, 128 + 16, 128 + 16));
  }

  void dotMatrixMatrixHandCount() {
    // The brief's example: 2x3 @ 3x4 = 2*2*3*4 = 48 flops, 4*(6+12+8) bytes.
    auto out = dot(f32({2, 3}), f32({3, 4}));
    QCOMPARE(costOf(out, {{2, 3}, {3, 4}}), known(48, 4 * (6 + 12), 4 * 8));
  }

  void dotVectorsAndBatches() {
    // vector . vector: 2k flops, a 0-d result.
    auto vv = std::make_shared<Dot>()->makeNode({f32({5}), f32({5})});
    QCOMPARE(costOf(vv, {{5}, {5}}), known(10, 40, 4));
    // matrix . vector: (3, 5) . (5,) -> (3,): 30 flops.
    auto mv = std::make_shared<Dot>()->makeNode({f32({3, 5}), f32({5})});
    QCOMPARE(costOf(mv, {{3, 5}, {5}}), known(30, 60 + 20, 12));
    // Batched with broadcast batch dims: (2, 1, 3, 4) @ (5, 4, 6) -> (2, 5, 3, 6): 10 products
    // of 2*3*6*4 = 144 flops each.
    auto bmm = std::make_shared<Dot>()->makeNode({f32({2, 1, 3, 4}), f32({5, 4, 6})});
    QCOMPARE(costOf(bmm, {{2, 1, 3, 4}, {5, 4, 6}}),
             known(1440, 4.0 * (24 + 120), 4.0 * 2 * 5 * 3 * 6));
    // float64 doubles the bytes, not the flops.
    auto d64 = std::make_shared<Dot>()->makeNode(
        {var(DType::Float64, {2, 3}), var(DType::Float64, {3, 4})});
    QCOMPARE(costOf(d64, {{2, 3}, {3, 4}}), known(48, 8 * 18, 8 * 8));
    // Mismatched inner dimensions: unknown, not a crash.
    QVERIFY(!costOf(dot(f32({kUnknownDim, 3}), f32({3, 4})), {{2, 7}, {3, 4}}).known);
  }

  void gemmGemvGer() {
    // Gemm Z(2,4), X(2,3), Y(3,4): 2*2*3*4 + 3*2*4 = 72 flops; reads Z, alpha, X, Y, beta.
    auto g = std::make_shared<Gemm>(false)->makeNode(
        {f32({2, 4}), f32({}), f32({2, 3}), f32({3, 4}), f32({})});
    QCOMPARE(costOf(g, {{2, 4}, {}, {2, 3}, {3, 4}, {}}),
             known(72, 4.0 * (8 + 1 + 6 + 12 + 1), 32));
    // Inplace writes as much.
    auto gi = std::make_shared<Gemm>(true)->makeNode(
        {f32({2, 4}), f32({}), f32({2, 3}), f32({3, 4}), f32({})});
    QCOMPARE(costOf(gi, {{2, 4}, {}, {2, 3}, {3, 4}, {}}).bytesWritten, 32.0);
    // Gemv y(3), A(3,5), x(5): 2*15 + 3*3 = 39.
    auto v = std::make_shared<Gemv>(false)->makeNode(
        {f32({3}), f32({}), f32({3, 5}), f32({5}), f32({})});
    QCOMPARE(costOf(v, {{3}, {}, {3, 5}, {5}, {}}), known(39, 4.0 * (3 + 1 + 15 + 5 + 1), 12));
    // Ger A(3,5), x(3), y(5): 2*15 + 3 = 33.
    auto r = std::make_shared<Ger>(false)->makeNode({f32({3, 5}), f32({}), f32({3}), f32({5})});
    QCOMPARE(costOf(r, {{3, 5}, {}, {3}, {5}}), known(33, 4.0 * (15 + 1 + 3 + 5), 60));
  }

  void reductions() {
    // Sum over axis 1 of (4, 6): 24 flops, 96 read, 16 written.
    auto s =
        std::make_shared<CAReduce>(ScalarOp::Add, std::vector<int>{1})->makeNode({f32({4, 6})});
    QCOMPARE(costOf(s, {{4, 6}}), known(24, 96, 16));
    // Max over everything: a 0-d result.
    auto m = std::make_shared<CAReduce>(ScalarOp::Maximum)->makeNode({f32({4, 6})});
    QCOMPARE(costOf(m, {{4, 6}}), known(24, 96, 4));
    // A float16 sum accumulates in float32 but writes float16.
    auto h = std::make_shared<CAReduce>(ScalarOp::Add, std::vector<int>{0})
                 ->makeNode({var(DType::Float16, {8, 2})});
    QCOMPARE(costOf(h, {{8, 2}}), known(16, 32, 4));
    // Argmax along axis 0 of (5, 3): 15 comparisons, 3 int64 written.
    auto a = std::make_shared<ArgReduce>(ArgReduce::Kind::Max, 0)->makeNode({f32({5, 3})});
    QCOMPARE(costOf(a, {{5, 3}}), known(15, 60, 24));
    // Cumsum: one add per element.
    auto c = std::make_shared<CumSum>(0, false, false)->makeNode({f32({6})});
    QCOMPARE(costOf(c, {{6}}), known(6, 24, 24));
  }

  void viewsMoveNothing() {
    auto x = f32({kUnknownDim, 6});
    const OpCost zero = known(0, 0, 0);
    QCOMPARE(costOf(transpose(x), {{4, 6}}), zero);
    QCOMPARE(costOf(reshape(x, {2, -1}), {{4, 6}, {2}}), zero);
    auto sub = subtensor(x, {Idx::slice(1, std::nullopt)});
    QCOMPARE(costOf(sub, {{4, 6}}), zero);
    // Shape queries: a few int64s.
    QCOMPARE(costOf(std::make_shared<ShapeI>(1)->makeNode({x}), {{4, 6}}), known(0, 0, 8));
  }

  void copiesMoveBytesOnly() {
    // Join of (2, 3) and (4, 3) along 0: 72 bytes read and written.
    auto j = join(0, {f32({2, 3}), f32({4, 3})});
    QCOMPARE(costOf(j, {{2, 3}, {4, 3}}), known(0, 72, 72));
    // Alloc with constant dims: the (3, 5) result written, the fill value read.
    auto z = zeros(std::vector<std::int64_t>{3, 5}, DType::Float32);
    Apply* alloc = z->owner();
    QVERIFY(alloc != nullptr);
    std::vector<Shape> shapes(static_cast<std::size_t>(alloc->nInputs()), Shape{});
    const OpCost ac = alloc->op().cost(*alloc, shapes);
    QVERIFY(ac.known);
    QCOMPARE(ac.flops, 0.0);
    QCOMPARE(ac.bytesWritten, 60.0);
  }

  void arangeLengthFromConstantBounds() {
    // arange(2, 11, 3) = [2, 5, 8]: 3 int64 written, the three 0-d bounds read.
    auto r = arange(constantInt(2), constantInt(11), constantInt(3));
    QCOMPARE(costOf(r, {{}, {}, {}}), known(0, 24, 24));
    // A bound that is not a constant: the length is unknown.
    auto n = var(DType::Int64, {}, "n");
    QVERIFY(!costOf(arange(n), {{}, {}, {}}).known);
  }

  void gatherAndScatter() {
    // An embedding lookup: 3 rows of 4 out of a (1000, 4) table: reads 48 bytes of the table and
    // 24 of indices, writes 48; not the whole table.
    auto g = advancedSubtensor1(f32({1000, 4}), var(DType::Int64, {kUnknownDim}));
    QCOMPARE(costOf(g, {{1000, 4}, {3}}), known(0, 48 + 24, 48));
    // Inc (not inplace): x copied (read, written), y and idx read, the region read and written,
    // one add per element of y.
    auto inc =
        std::make_shared<AdvancedIncSubtensor1>(false, false)
            ->makeNode({f32({10, 4}), f32({kUnknownDim, 4}), var(DType::Int64, {kUnknownDim})});
    QCOMPARE(costOf(inc, {{10, 4}, {3, 4}, {3}}), known(12, 48 + 24 + 48 + 160, 48 + 160));
    // Set, inplace: no adds, the region written, x not copied.
    auto set =
        std::make_shared<AdvancedIncSubtensor1>(true, true)
            ->makeNode({f32({10, 4}), f32({kUnknownDim, 4}), var(DType::Int64, {kUnknownDim})});
    QCOMPARE(costOf(set, {{10, 4}, {3, 4}, {3}}), known(0, 48 + 24, 48));
  }

  void randomOps() {
    // A (4, 5) float32 normal sample with constant dims: 6 flops per element, the sample and the
    // new state written, the state and the 0-d inputs read.
    auto state = var(DType::Int64, {2});
    auto outs = randomNormal(state, {constantInt(4), constantInt(5)}, constant(0.0, DType::Float32),
                             constant(1.0, DType::Float32));
    Apply* node = outs[1]->owner();
    QVERIFY(node != nullptr);
    std::vector<Shape> shapes{{2}, {}, {}, {}, {}};
    const OpCost c = node->op().cost(*node, shapes);
    QVERIFY(c.known);
    QCOMPARE(c.flops, 120.0);
    QCOMPARE(c.bytesWritten, 16.0 + 80.0);
    QCOMPARE(c.bytesRead, 16.0 + 8 + 8 + 4 + 4);
    // Dims that are not constants: the size is unknown, so is the cost.
    auto n = var(DType::Int64, {}, "n");
    auto dyn =
        randomUniform(state, {n}, constant(0.0, DType::Float32), constant(1.0, DType::Float32));
    Apply* dnode = dyn[1]->owner();
    std::vector<Shape> dshapes{{2}, {}, {}, {}};
    QVERIFY(!dnode->op().cost(*dnode, dshapes).known);
  }

  void unknownOnPurposeAndBadInput() {
    // OpFromGraph: its inner nodes are counted on their own.
    auto a = f32({3});
    auto b = f32({3});
    auto inner = std::make_shared<OpFromGraph>(std::vector<VarPtr>{a, b},
                                               std::vector<VarPtr>{a * b + a}, "fma");
    auto node = inner->makeNode({f32({3}), f32({3})});
    QVERIFY(!costOf(node, {{3}, {3}}).known);
    // IfElse: its branches' nodes are counted on their own.
    auto x = f32({3});
    auto c = var(DType::Bool, {}, "c");
    std::vector<VarPtr> branches =
        ifelse(c, std::vector<VarPtr>{exp(x)}, std::vector<VarPtr>{x * 2.0});
    Apply* ifNode = branches[0]->owner();
    QVERIFY(ifNode != nullptr);
    QCOMPARE(ifNode->op().name(), std::string("IfElse"));
    std::vector<Shape> ifShapes;
    for (const VarPtr& in : ifNode->inputs()) ifShapes.push_back(in->type().shape());
    QVERIFY(!ifNode->op().cost(*ifNode, ifShapes).known);
    // A user's lambda (asOp): unknown.
    auto lambda = asOp("CostTestIdentity", {TensorType(DType::Float32, {3})},
                       {TensorType(DType::Float32, {3})},
                       [](std::span<const Tensor> in) { return std::vector<Tensor>{in[0]}; });
    auto applied = lambda->makeNode({f32({3})});
    QVERIFY(!costOf(applied, {{3}}).known);
    // OpaqueOp and the default: unknown.
    OpaqueOp opaque("Mystery", nlohmann::json::object(), "no op named 'Mystery' is registered");
    QVERIFY(!opaque.Op::cost(*node, std::vector<Shape>{{3}, {3}}).known);
    // Wrong number of shapes, wrong rank, a negative size: unknown, never a crash.
    auto add = std::make_shared<Elemwise>(ScalarOp::Add)->makeNode({f32({2, 3}), f32({2, 3})});
    QVERIFY(!costOf(add, {{2, 3}}).known);
    QVERIFY(!costOf(add, {{2, 3}, {6}}).known);
    QVERIFY(!costOf(add, {{2, 3}, {-1, 3}}).known);
    QVERIFY(!costOf(add, {{2, 3}, {4, 3}}).known);  // does not broadcast
    QVERIFY(!costOf(dot(f32({2, 3}), f32({3, 4})), {{2, 3}}).known);
  }

  void intensityAndBytes() {
    const OpCost c = known(48, 72, 32);
    QCOMPARE(c.bytes(), 104.0);
    QCOMPARE(c.intensity(), 48.0 / 104.0);
    QCOMPARE(known(0, 0, 0).intensity(), 0.0);
  }
};

TSCOPE_TEST_MAIN(TestOpCost)
#include "tst_op_cost.moc"
