// OpFromGraph for debugging: nested two deep (values, shapes, gradients), gradient and R-op
// overrides (callables and graphs, their .tsg round trip and the refusal to save a callable),
// observers seeing inner-inner nodes with their frame paths, and stepInto into the inner-inner
// frame.
#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/vm/vm.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test;

namespace {
CompileOptions withMode(Mode mode) {
  CompileOptions o;
  o.mode = mode;
  return o;
}
constexpr std::int64_t U = kUnknownDim;
VarPtr var(const std::string& name, DType dtype = DType::Float64) {
  return Variable::create(TensorType(dtype, {U}), name);
}
Tensor dt(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float64, std::move(shape), v);
}
std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// inner(a) = tanh(a) * 2; outer(b) = inner(b) + exp(b).
struct Nested {
  std::shared_ptr<const OpFromGraph> inner, outer;
  explicit Nested(DType dtype = DType::Float64) {
    auto a = var("a", dtype);
    inner = opFromGraph({a}, {tanh(a) * 2.0}, "inner");
    auto b = var("b", dtype);
    outer = opFromGraph({b}, {(*inner)({b}) + exp(b)}, "outer");
  }
};

struct Paths : ExecutionObserver {
  std::vector<std::pair<std::size_t, std::string>> seen;  // depth, op
  std::vector<std::int64_t> deepest;
  void afterNode(VM&, const NodeEvent& e) override {
    seen.emplace_back(e.depth(), e.node.op().str());
    if (e.depth() == 2) deepest.assign(e.framePath.begin(), e.framePath.end());
  }
};
}  // namespace

class TestOpFromGraphDebug : public QObject {
  Q_OBJECT

 private slots:
  void testNestedValuesShapesGradients() {
    Nested n;
    const auto build = [&](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{(*n.outer)({in[0]}) * in[1]};
    };
    const Tensor x = dt({3}, {0.1, -0.7, 1.3}), w = dt({3}, {2, 3, -1});
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      auto xs = var("x"), ws = var("w");
      Function f = compile({xs, ws}, build({xs, ws}), {}, withMode(mode));
      const Tensor got = f({x, w})[0];
      for (std::int64_t i = 0; i < 3; ++i) {
        const double xv = x.at({i});
        QVERIFY(std::abs(got.at({i}) - (2 * std::tanh(xv) + std::exp(xv)) * w.at({i})) < 1e-12);
      }
    }
    checkInferShape(build, {x, w});
    verifyGrad(build, {x, w});
  }

  void testGradOverrides() {
    // A callable: the gradient is 5 * the output gradient, whatever the body.
    auto a = var("a");
    OpFromGraphOverrides byFn;
    byFn.grad = [](std::span<const VarPtr>, std::span<const VarPtr> g) {
      return std::vector<VarPtr>{g[0] * 5.0};
    };
    const auto fnOp = opFromGraph({a}, {tanh(a)}, "fn_grad", byFn);
    // A graph: (a, g) -> g * a.
    auto ga = var("a"), gg = var("g");
    OpFromGraphOverrides byGraph;
    byGraph.gradGraph = opFromGraph({ga, gg}, {gg * ga}, "grad_of_sq");
    const auto graphOp = opFromGraph({a}, {tanh(a)}, "graph_grad", byGraph);
    QVERIFY(!fnOp->equals(*graphOp));
    auto x = var("x");
    const Tensor xv = dt({2}, {3, -2});
    Function f1 = compile({x}, {grad(sum((*fnOp)({x})), x)});
    QVERIFY(closeTo(f1({xv})[0], dt({2}, {5, 5})));
    Function f2 = compile({x}, {grad(sum((*graphOp)({x})), x)});
    QVERIFY(closeTo(f2({xv})[0], dt({2}, {3, -2})));
    // Inside another OpFromGraph, the override still applies.
    auto b = var("b");
    const auto wrapper = opFromGraph({b}, {(*graphOp)({b}) * 2.0}, "wrapper");
    Function f3 = compile({x}, {grad(sum((*wrapper)({x})), x)});
    QVERIFY(closeTo(f3({xv})[0], dt({2}, {6, -4})));
    // The wrong number of gradients, or of override inputs, is a clear error.
    OpFromGraphOverrides bad;
    bad.grad = [](std::span<const VarPtr>, std::span<const VarPtr>) {
      return std::vector<VarPtr>{};
    };
    const auto badOp = opFromGraph({a}, {tanh(a)}, "bad", bad);
    const std::string count = errorOf([&] { grad(sum((*badOp)({x})), x); });
    QVERIFY2(count.find("gave 0 gradients") != std::string::npos, count.c_str());
    OpFromGraphOverrides wrongGraph;
    wrongGraph.gradGraph = opFromGraph({ga}, {ga * 1.0}, "too_few");
    const std::string shape = errorOf([&] { opFromGraph({a}, {tanh(a)}, "w", wrongGraph); });
    QVERIFY2(shape.find("takes 1 inputs") != std::string::npos, shape.c_str());
  }

  void testRopOverride() {
    auto a = var("a");
    OpFromGraphOverrides o;
    o.rop = [](std::span<const VarPtr>, std::span<const VarPtr> t) {
      return std::vector<VarPtr>{t[0] * 7.0};
    };
    const auto op = opFromGraph({a}, {tanh(a)}, "rop7", o);
    auto x = var("x"), v = var("v");
    const auto r = Rop({(*op)({x})}, {x}, {v});
    QVERIFY(closeTo(compile({x, v}, r)({dt({2}, {1, 2}), dt({2}, {1, -1})})[0], dt({2}, {7, -7})));
    auto ta = var("a"), tv = var("t");
    OpFromGraphOverrides g;
    g.ropGraph = opFromGraph({ta, tv}, {tv * ta}, "rop_graph");
    const auto op2 = opFromGraph({a}, {tanh(a)}, "rop_by_graph", g);
    const auto r2 = Rop({(*op2)({x})}, {x}, {v});
    QVERIFY(closeTo(compile({x, v}, r2)({dt({2}, {3, 2}), dt({2}, {1, -1})})[0], dt({2}, {3, -2})));
  }

  void testOverridesInFiles() {
    auto a = var("a"), ga = var("a"), gg = var("g");
    OpFromGraphOverrides byGraph;
    byGraph.gradGraph = opFromGraph({ga, gg}, {gg * ga}, "grad_of_sq");
    const auto op = opFromGraph({a}, {tanh(a)}, "saved", byGraph);
    auto x = var("x");
    io::TsgDocument doc;
    doc.original =
        std::make_unique<FunctionGraph>(std::vector<VarPtr>{x}, std::vector<VarPtr>{(*op)({x})});
    const std::string text = io::writeTsg(doc);
    io::TsgDocument loaded = io::readTsg(text);
    QCOMPARE(QString::fromStdString(io::writeTsg(loaded)), QString::fromStdString(text));
    const VarPtr lx = loaded.original->inputs()[0];
    const auto* lop =
        dynamic_cast<const OpFromGraph*>(&loaded.original->outputs()[0]->owner()->op());
    QVERIFY(lop && lop->overrides().gradGraph);
    // The loaded op's gradient is the override's: g * x.
    auto y = var("y");
    VarPtr again = (*lop)({y});
    QVERIFY(closeTo(compile({y}, {grad(sum(again), y)})({dt({2}, {3, -2})})[0], dt({2}, {3, -2})));
    // A callable cannot be saved: the writer names the node and says why.
    OpFromGraphOverrides byFn;
    byFn.grad = [](std::span<const VarPtr>, std::span<const VarPtr> g) {
      return std::vector<VarPtr>{g[0]};
    };
    const auto fnOp = opFromGraph({a}, {tanh(a)}, "unsaveable", byFn);
    io::TsgDocument doc2;
    doc2.original =
        std::make_unique<FunctionGraph>(std::vector<VarPtr>{x}, std::vector<VarPtr>{(*fnOp)({x})});
    const std::string why = errorOf([&] { io::writeTsg(doc2); });
    QVERIFY2(why.find("OpFromGraph{unsaveable}") != std::string::npos, why.c_str());
    QVERIFY2(why.find("callable") != std::string::npos, why.c_str());
  }

  void testObserversAndStepInto() {
    Nested n(DType::Float32);
    auto x = Variable::create(TensorType(DType::Float32, {U}), "x");
    VarPtr y = (*n.outer)({x}) * 3.0;
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      Function f = compile({x}, {y}, {}, withMode(mode));
      auto paths = std::make_shared<Paths>();
      f.vm().addObserver(paths);
      f({Tensor::fromDoubles(DType::Float32, {2}, {1, 2})});
      f.vm().removeObserver(*paths);
      // The inner-inner nodes are seen, two frames deep, under the outer and inner nodes.
      QCOMPARE(paths->deepest.size(), std::size_t{2});
      const Apply* outerNode = nullptr;
      for (const Apply* a : f.graph().nodes())
        if (a->op().name() == "OpFromGraph") outerNode = a;
      QVERIFY(outerNode != nullptr);
      QCOMPARE(paths->deepest[0], outerNode->id());
      bool sawDepth1 = false;
      for (const auto& [depth, op] : paths->seen) sawDepth1 = sawDepth1 || depth == 1;
      QVERIFY(sawDepth1);
      // stepInto until the inner-inner frame.
      VM& vm = f.vm();
      Execution e = f.begin({Tensor::fromDoubles(DType::Float32, {2}, {1, 2})});
      int units = 0;
      while (vm.depth() < 2 && units < 50) {
        QVERIFY(vm.stepInto());
        ++units;
      }
      QCOMPARE(vm.depth(), std::size_t{2});
      QCOMPARE(vm.framePath()[0], outerNode->id());
      QCOMPARE(vm.frame(2).callerNodeId, vm.framePath()[1]);
      // Its values are readable in that frame once computed.
      QVERIFY(vm.stepInto());
      const Program& innerProgram = *vm.frame(2).program;
      const Apply* first = innerProgram.schedule()[0];
      QVERIFY(vm.value(2, first->outputRef(0)) != nullptr);
      QCOMPARE(vm.stepOut(), VM::Status::Paused);
      QCOMPARE(vm.depth(), std::size_t{1});
      QCOMPARE(e.run(), VM::Status::Finished);
      const Tensor out = e.finish()[0];
      QVERIFY(std::abs(out.at({1}) - 3 * (2 * std::tanh(2.0) + std::exp(2.0))) < 1e-3);
    }
  }
};

TSCOPE_TEST_MAIN(TestOpFromGraphDebug)
#include "tst_op_from_graph_debug.moc"
