// BreakPoint (engine/ops/debug/breakpoint.h): view semantics, gradients, shapes, surviving
// fast_run, .tsg round trips, and the VM's pause with breakOps (outer and inner frames, steps,
// the last node), no pause with breakOps off, and the errors of bad conditions.
#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "engine/vm/vm.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test;

namespace {
GradOptions ignoreDisconnected() {
  GradOptions o;
  o.disconnected = DisconnectedPolicy::Ignore;
  return o;
}
CompileOptions withMode(Mode mode) {
  CompileOptions o;
  o.mode = mode;
  return o;
}
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape = {U}) {
  return Variable::create(TensorType(DType::Float32, std::move(shape)), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}
std::vector<const Apply*> nodesNamed(const FunctionGraph& g, const std::string& name) {
  std::vector<const Apply*> out;
  for (const Apply* a : g.nodes())
    if (a->op().name() == name) out.push_back(a);
  return out;
}
std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// loss = sum(x * x); BreakPoint{spike}(loss > k, loss, x); y = seen_x * 2 + seen_loss.
struct Spike {
  VarPtr x = fvar("x");
  VarPtr k = Variable::create(TensorType(DType::Float32, {}), "k");
  VarPtr loss = sum(x * x);
  std::vector<VarPtr> seen = breakpoint("spike", gt(loss, k), {loss, x});
  VarPtr y = seen[1] * 2.0 + seen[0];
};
}  // namespace

class TestBreakPoint : public QObject {
  Q_OBJECT

 private slots:
  void testViewSemantics() {
    auto x = fvar("x");
    auto c = Variable::create(TensorType(DType::Bool, {}), "c");
    const std::vector<VarPtr> out = breakpoint("bp", c, {x, exp(x)});
    QCOMPARE(out.size(), std::size_t{2});
    const Apply& node = *out[0]->owner();
    QCOMPARE(QString::fromStdString(node.op().str()), QString("BreakPoint{bp}"));
    const ViewMap views = node.op().viewMap();
    QCOMPARE(views.at(0), std::vector<int>{1});
    QCOMPARE(views.at(1), std::vector<int>{2});
    QVERIFY(out[0]->type() == x->type());
    // perform aliases its inputs, whatever the condition.
    const Tensor xv = ft({3}, {1, 2, 3});
    const Tensor cv = Tensor::scalar(DType::Bool, 1);
    Tensor o0, o1;
    const Tensor ev = ft({3}, {4, 5, 6});
    std::vector<const Tensor*> ins{&cv, &xv, &ev};
    std::vector<Tensor*> outs{&o0, &o1};
    node.op().perform(node, ins, outs);
    QVERIFY(o0.sharesStorageWith(xv));
    QVERIFY(o1.sharesStorageWith(ev));
    // Compiled in every mode, the values pass through.
    for (Mode mode : {Mode::None, Mode::FastCompile, Mode::FastRun, Mode::Debug}) {
      Function f = compile({c, x}, {out[0] * 1.0, out[1]}, {}, withMode(mode));
      const auto r = f({Tensor::scalar(DType::Bool, 0), xv});
      QVERIFY(closeTo(r[0], xv));
      QVERIFY(closeTo(r[1], ft({3}, {std::exp(1.0), std::exp(2.0), std::exp(3.0)})));
    }
  }

  void testGradients() {
    // The condition is disconnected, the monitored values pass gradients through.
    Spike s;
    const std::vector<VarPtr> g = grad(sum(s.y), std::vector<VarPtr>{s.x});
    Function f = compile({s.x, s.k}, {g[0]});
    const auto r = f({ft({2}, {1, -3}), Tensor::scalar(DType::Float32, 0)});
    // sum(y) = 2 sum(x) + n sum(x^2) with n = 2 elements: d/dx = 2 + 4x.
    QVERIFY(closeTo(r[0], ft({2}, {6, -10})));
    const auto gc = grad(sum(s.y), std::vector<VarPtr>{s.k}, ignoreDisconnected());
    QVERIFY(closeTo(
        compile({s.x, s.k}, {gc[0]})({ft({2}, {1, -3}), Tensor::scalar(DType::Float32, 0)})[0],
        Tensor::scalar(DType::Float32, 0)));
    QVERIFY(!errorOf([&] { grad(sum(s.y), std::vector<VarPtr>{s.k}); }).empty());
    const auto pattern = s.seen[0]->owner()->op().connectionPattern(*s.seen[0]->owner());
    QCOMPARE(pattern[0], std::vector<bool>({false, false}));
    QCOMPARE(pattern[1], std::vector<bool>({true, false}));
    QCOMPARE(pattern[2], std::vector<bool>({false, true}));
    verifyGrad(
        [](const std::vector<VarPtr>& in) {
          const auto seen =
              breakpoint("b", gt(sum(in[0]), constant(0.0, DType::Float64)), {in[0], in[1]});
          return std::vector<VarPtr>{tanh(seen[0]) * seen[1]};
        },
        {randomTensor(DType::Float64, {3, 2}, 1), randomTensor(DType::Float64, {3, 2}, 2)});
    checkRopLop(
        [](const std::vector<VarPtr>& in) {
          const auto seen = breakpoint("b", gt(sum(in[0]), constant(0.0, DType::Float64)), {in[0]});
          return std::vector<VarPtr>{exp(seen[0])};
        },
        {randomTensor(DType::Float64, {4}, 3)});
  }

  void testShapes() {
    checkInferShape(
        [](const std::vector<VarPtr>& in) {
          return breakpoint("b", gt(sum(in[0]), constant(0.0, DType::Float32)), {in[0], in[1]});
        },
        {randomTensor(DType::Float32, {3, 2}, 1), randomTensor(DType::Float32, {5}, 2)},
        InferShapeOptions{.warnOnSquareInputs = false});
  }

  void testSurvivesFastRun() {
    // Constant inputs (folding), two equal breakpoints (merge), elementwise chains on both sides
    // (fusion): every BreakPoint stays, between the fused parts.
    auto x = fvar("x");
    VarPtr a = exp(x) * 2.0 + 1.0;
    const auto b1 = breakpoint("twin", gt(sum(a), constant(0.0, DType::Float32)), {a});
    const auto b2 = breakpoint("twin", gt(sum(a), constant(0.0, DType::Float32)), {a});
    const auto folded = breakpoint("const", constant(1.0, DType::Float32),
                                   {constant(Tensor::fromDoubles(DType::Float32, {2}, {1, 2}))});
    VarPtr y = tanh(b1[0]) * 3.0 + b2[0] + sum(folded[0]);
    Function f = compile({x}, {y}, {}, withMode(Mode::FastRun));
    const auto kept = nodesNamed(f.graph(), "BreakPoint");
    QCOMPARE(kept.size(), std::size_t{3});
    // No fused node reads what a BreakPoint reads and also what it gives.
    for (const Apply* bp : kept)
      for (const Client& c : f.graph().clients(bp->outputRef(0)))
        if (c.node)
          for (const VarPtr& in : c.node->inputs()) QVERIFY(in.get() != bp->input(1).get());
    const Tensor xv = ft({2}, {0.5, -1});
    const auto want = compile({x}, {y})({xv})[0];
    QVERIFY(closeTo(f({xv})[0], want));
    // One output used of two: the node stays whole.
    auto z = fvar("z");
    const auto half = breakpoint("half", gt(sum(z), constant(0.0, DType::Float32)), {z, exp(z)});
    Function g = compile({z}, {half[0] * 2.0}, {}, withMode(Mode::FastRun));
    const auto left = nodesNamed(g.graph(), "BreakPoint");
    QCOMPARE(left.size(), std::size_t{1});
    QCOMPARE(left[0]->nOutputs(), 2);
  }

  void testTsgRoundTrip() {
    Spike s;
    io::TsgDocument doc;
    doc.original =
        std::make_unique<FunctionGraph>(std::vector<VarPtr>{s.x, s.k}, std::vector<VarPtr>{s.y});
    const std::string text = io::writeTsg(doc);
    QVERIFY(text.find("BreakPoint") != std::string::npos);
    io::TsgDocument loaded = io::readTsg(text);
    QCOMPARE(QString::fromStdString(io::writeTsg(loaded)), QString::fromStdString(text));
    const auto bps = nodesNamed(*loaded.original, "BreakPoint");
    QCOMPARE(bps.size(), std::size_t{1});
    QVERIFY(bps[0]->op().equals(s.seen[0]->owner()->op()));
    // Bad props are refused with the reason.
    const auto& reg = defaultOpRegistry();
    QVERIFY(errorOf([&] {
              reg.make("BreakPoint", {{"name", "a"}});
            }).find("monitored") != std::string::npos);
    QVERIFY(errorOf([&] {
              reg.make("BreakPoint", {{"name", ""}, {"monitored", 1}});
            }).find("name") != std::string::npos);
  }

  void testPauseOuterFrame() {
    Spike s;
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      Function f = compile({s.x, s.k}, {s.y}, {}, withMode(mode));
      VM& vm = f.vm();
      vm.setBreakOps(true);
      QVERIFY(vm.breakOps());
      const Tensor xv = ft({2}, {3, 4});  // loss 25
      Execution e = f.begin({xv, Tensor::scalar(DType::Float32, 10)});
      QCOMPARE(e.run(), VM::Status::Paused);
      QCOMPARE(vm.pauseReason(), VM::PauseReason::BreakPointOp);
      QCOMPARE(pauseReasonName(vm.pauseReason()), std::string_view("breakpoint-op"));
      const Apply* bp = vm.breakOpNode();
      QVERIFY(bp != nullptr);
      QCOMPARE(QString::fromStdString(static_cast<const BreakPointOp&>(bp->op()).label()),
               QString("spike"));
      // pc is past the node; its outputs are the monitored values.
      QVERIFY(vm.schedule()[vm.pc() - 1] == bp);
      QVERIFY(vm.value(bp->outputRef(0)) != nullptr);
      QCOMPARE(vm.value(bp->outputRef(0))->item(), 25.0);
      QVERIFY(closeTo(*vm.value(bp->outputRef(1)), xv));
      QCOMPARE(e.run(), VM::Status::Finished);
      QVERIFY(vm.breakOpNode() == nullptr);
      QVERIFY(closeTo(e.finish()[0], ft({2}, {31, 33})));
      // The condition does not hold: no pause.
      Execution quiet = f.begin({ft({2}, {1, 1}), Tensor::scalar(DType::Float32, 10)});
      QCOMPARE(quiet.run(), VM::Status::Finished);
      // breakOps off: a view, never a pause.
      vm.setBreakOps(false);
      Execution off = f.begin({xv, Tensor::scalar(DType::Float32, 10)});
      QCOMPARE(off.run(), VM::Status::Finished);
      QVERIFY(closeTo(off.finish()[0], ft({2}, {31, 33})));
      QVERIFY(closeTo(f({xv, Tensor::scalar(DType::Float32, 10)})[0], ft({2}, {31, 33})));
    }
  }

  void testStepAndLastNode() {
    // A step that runs the BreakPoint ends with its reason; a BreakPoint as the last node pauses
    // at the end of the schedule and run() then finishes.
    auto x = fvar("x");
    const auto seen = breakpoint("last", gt(sum(x), constant(0.0, DType::Float32)), {exp(x)});
    Function f = compile({x}, {seen[0]});
    VM& vm = f.vm();
    vm.setBreakOps(true);
    Execution e = f.begin({ft({2}, {1, 2})});
    std::size_t steps = 0;
    while (vm.pauseReason() != VM::PauseReason::BreakPointOp && steps < 10) {
      QVERIFY(e.step());
      ++steps;
    }
    QCOMPARE(vm.pc(), vm.schedule().size());
    QCOMPARE(vm.status(), VM::Status::Paused);
    QCOMPARE(e.run(), VM::Status::Finished);
    QVERIFY(closeTo(e.finish()[0], ft({2}, {std::exp(1.0), std::exp(2.0)})));
  }

  void testPauseInnerFrame() {
    // A BreakPoint inside an OpFromGraph body, itself inside another: the pause names the frames.
    auto a = fvar("a");
    const auto seenA = breakpoint("inner", gt(sum(a), constant(0.0, DType::Float32)), {a});
    const auto inner = opFromGraph({a}, {seenA[0] * 2.0}, "inner_block");
    auto b = fvar("b");
    const auto outer = opFromGraph({b}, {(*inner)({b + 1.0})}, "outer_block");
    auto x = fvar("x");
    VarPtr y = (*outer)({x});
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      Function f = compile({x}, {y}, {}, withMode(mode));
      VM& vm = f.vm();
      vm.setBreakOps(true);
      Execution e = f.begin({ft({2}, {1, 2})});
      QCOMPARE(e.run(), VM::Status::Paused);
      QCOMPARE(vm.pauseReason(), VM::PauseReason::BreakPointOp);
      QCOMPARE(vm.depth(), std::size_t{2});
      QCOMPARE(vm.framePath().size(), std::size_t{2});
      const Apply* bp = vm.breakOpNode();
      QVERIFY(bp && bp->op().name() == "BreakPoint");
      QVERIFY(closeTo(*vm.value(bp->outputRef(0)), ft({2}, {2, 3})));
      QCOMPARE(e.run(), VM::Status::Finished);
      QVERIFY(closeTo(e.finish()[0], ft({2}, {4, 6})));
      // Negative inputs: the inner condition does not hold.
      Execution q = f.begin({ft({2}, {-5, -5})});
      QCOMPARE(q.run(), VM::Status::Finished);
    }
  }

  void testBadInput() {
    auto x = fvar("x");
    const std::string notScalar = errorOf([&] { breakpoint("b", x, {x}); });
    QVERIFY2(notScalar.find("0-d") != std::string::npos, notScalar.c_str());
    QVERIFY2(notScalar.find("BreakPoint{b}") != std::string::npos, notScalar.c_str());
    const std::string none =
        errorOf([&] { breakpoint("b", gt(sum(x), constant(0.0, DType::Float32)), {}); });
    QVERIFY2(none.find("at least one") != std::string::npos, none.c_str());
    const std::string unnamed =
        errorOf([&] { breakpoint("", gt(sum(x), constant(0.0, DType::Float32)), {x}); });
    QVERIFY2(unnamed.find("name") != std::string::npos, unnamed.c_str());
  }
};

TSCOPE_TEST_MAIN(TestBreakPoint)
#include "tst_breakpoint.moc"
