// IfElse (engine/ops/control/ifelse.h): only the taken branch runs (counted with kernels and an
// observer, in every mode), several outputs, gradients through both branches, shapes, types that
// disagree, branches of another rank (checked when taken), .tsg round trips, explicit boundaries
// and stepInto into the taken branch.
#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/io/tsg.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/assert_type.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <atomic>

using namespace tscope::engine;
using namespace tscope::test;

namespace {
CompileOptions withMode(Mode mode) {
  CompileOptions o;
  o.mode = mode;
  return o;
}
constexpr std::int64_t U = kUnknownDim;
constexpr Mode kModes[] = {Mode::None, Mode::FastCompile, Mode::FastRun, Mode::Debug};

VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape = {U},
            DType dtype = DType::Float32) {
  return Variable::create(TensorType(dtype, std::move(shape)), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}
VarPtr positive(const VarPtr& x) {
  return gt(sum(x), constant(0.0, x->type().dtype()));
}
std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// x -> x + 1, counting its calls (an op no rewrite knows, so it survives every mode).
std::shared_ptr<const AsOp> counting(const std::string& name, std::atomic<int>& calls) {
  return asOp(name, {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
              [&calls](std::span<const Tensor> in) -> std::vector<Tensor> {
                ++calls;
                Tensor out = in[0].clone();
                for (std::int64_t i = 0; i < out.numel(); ++i)
                  out.data<float>()[i] = out.data<float>()[i] + 1.0f;
                return {out};
              });
}

struct Counter : ExecutionObserver {
  int inner = 0;
  int outer = 0;
  std::vector<std::string> innerOps;
  void afterNode(VM&, const NodeEvent& e) override {
    if (e.depth() > 0) {
      ++inner;
      innerOps.push_back(e.node.op().name());
    } else {
      ++outer;
    }
  }
};
}  // namespace

class TestIfElse : public QObject {
  Q_OBJECT

 private slots:
  void testOnlyTheTakenBranchRuns() {
    std::atomic<int> thenCalls{0}, elseCalls{0};
    const auto a = counting("ThenWork", thenCalls);
    const auto b = counting("ElseWork", elseCalls);
    auto x = fvar("x");
    VarPtr y = ifelse(positive(x), (*a)({exp(x)}), (*b)({x * 3.0}));
    for (Mode mode : kModes) {
      // DebugMode re-runs each node's perform (the IfElse's too, on its taken branch), so it may
      // call the taken branch's op more than once; the other branch never runs.
      const bool exact = mode != Mode::Debug;
      thenCalls = elseCalls = 0;
      Function f = compile({x}, {y}, {}, withMode(mode));
      QVERIFY(closeTo(f({ft({2}, {0, 1})})[0], ft({2}, {2, std::exp(1.0) + 1})));
      QVERIFY(exact ? thenCalls == 1 : thenCalls >= 1);
      QCOMPARE(elseCalls.load(), 0);
      const int thenBefore = thenCalls;
      QVERIFY(closeTo(f({ft({2}, {-1, -2})})[0], ft({2}, {-2, -5})));
      QCOMPARE(thenCalls.load(), thenBefore);
      QVERIFY(exact ? elseCalls == 1 : elseCalls >= 1);
      // An observer sees only the taken branch's nodes, in a frame.
      auto counter = std::make_shared<Counter>();
      f.vm().addObserver(counter);
      f({ft({2}, {-1, -2})});
      QCOMPARE(thenCalls.load(), thenBefore);
      QVERIFY(counter->inner >= 1);
      for (const std::string& op : counter->innerOps) QVERIFY(op != "ThenWork");
      QVERIFY(std::find(counter->innerOps.begin(), counter->innerOps.end(), "ElseWork") !=
              counter->innerOps.end());
      f.vm().removeObserver(*counter);
    }
    // perform, the reference, is lazy too.
    thenCalls = elseCalls = 0;
    const Apply& node = *y->owner();
    const Tensor c = Tensor::scalar(DType::Bool, 1), xv = ft({1}, {2});
    Tensor out;
    std::vector<const Tensor*> ins{&c, &xv};
    std::vector<Tensor*> outs{&out};
    node.op().perform(node, ins, outs);
    QCOMPARE(thenCalls.load(), 1);
    QCOMPARE(elseCalls.load(), 0);
    QVERIFY(closeTo(out, ft({1}, {std::exp(2.0) + 1})));
  }

  void testSeveralOutputsAndSharedVariables() {
    auto x = fvar("x");
    auto w = SharedVariable::create(ft({2}, {10, 20}), "w");
    const auto y = ifelse(positive(x), {x * w, sum(x)}, {x - w, sum(x) * 0.0}, "pick");
    QCOMPARE(y.size(), std::size_t{2});
    QCOMPARE(QString::fromStdString(y[0]->owner()->op().str()), QString("IfElse{pick}"));
    QCOMPARE(y[0]->owner()->nInputs(), 3);  // cond, x, w
    for (Mode mode : kModes) {
      Function f = compile({x}, y, {}, withMode(mode));
      auto r = f({ft({2}, {1, 2})});
      QVERIFY(closeTo(r[0], ft({2}, {10, 40})));
      QCOMPARE(r[1].item(), 3.0);
      r = f({ft({2}, {-1, -2})});
      QVERIFY(closeTo(r[0], ft({2}, {-11, -22})));
      QCOMPARE(r[1].item(), 0.0);
    }
    // An explicit boundary: h is computed before the IfElse, once.
    VarPtr h = exp(x);
    const auto z = ifelse(positive(x), {log(h)}, {h}, {h}, "boundary");
    QCOMPARE(z[0]->owner()->input(1).get(), h.get());
    QVERIFY(closeTo(compile({x}, z)({ft({2}, {1, 2})})[0], ft({2}, {1, 2})));
    // A branch reaching past the boundary is refused, naming the variable.
    const std::string past = errorOf([&] { ifelse(positive(x), {log(h)}, {x}, {h}, "b"); });
    QVERIFY2(past.find("'x'") != std::string::npos, past.c_str());
  }

  void testGradients() {
    for (double sign : {1.0, -1.0}) {
      verifyGrad(
          [](const std::vector<VarPtr>& in) {
            const auto y = ifelse(positive(in[0]), {tanh(in[0]) * in[1], in[0]},
                                  {exp(in[0] * 0.5), in[1] * in[1]});
            return std::vector<VarPtr>{y[0], y[1]};
          },
          {Tensor::full(DType::Float64, {3}, sign), randomTensor(DType::Float64, {3}, 2)});
    }
    // The R-op follows from the pullback.
    checkRopLop(
        [](const std::vector<VarPtr>& in) -> std::vector<VarPtr> {
          return {ifelse(positive(in[0]), tanh(in[0]) * in[1], exp(in[1]))};
        },
        {Tensor::full(DType::Float64, {3}, 1.0), randomTensor(DType::Float64, {3}, 4)});
    // A branch that does not use an input gives zeros for it.
    auto x = fvar("x");
    auto v = fvar("v");
    VarPtr y = ifelse(positive(x), x * 2.0, v * 3.0);
    const auto g = grad(sum(y), {x, v});
    Function f = compile({x, v}, g);
    auto r = f({ft({2}, {1, 1}), ft({2}, {5, 5})});
    QVERIFY(closeTo(r[0], ft({2}, {2, 2})));
    QVERIFY(closeTo(r[1], ft({2}, {0, 0})));
    r = f({ft({2}, {-1, -1}), ft({2}, {5, 5})});
    QVERIFY(closeTo(r[0], ft({2}, {0, 0})));
    QVERIFY(closeTo(r[1], ft({2}, {3, 3})));
    // The gradient is an IfElse too: lazy.
    QCOMPARE(g[0]->owner() ? g[0]->owner()->op().name() : std::string(), std::string("IfElse"));
  }

  void testShapes() {
    checkInferShape(
        [](const std::vector<VarPtr>& in) {
          return ifelse(positive(in[0]), {in[0] * 2.0, in[1]}, {exp(in[0]), in[1] + 1.0});
        },
        {randomTensor(DType::Float32, {3, 2}, 1), randomTensor(DType::Float32, {4}, 2)},
        InferShapeOptions{.warnOnSquareInputs = false});
    // Branches that disagree on a dimension: the output type leaves it unknown.
    auto x = fvar("x", {3});
    VarPtr y = ifelse(positive(x), x, constant(Tensor::fromDoubles(DType::Float32, {2}, {1, 2})));
    QCOMPARE(y->type().shape(), std::vector<std::int64_t>{U});
    auto same = ifelse(positive(x), x, x * 2.0);
    QCOMPARE(same->type().shape(), std::vector<std::int64_t>{3});
  }

  void testTypesThatDisagree() {
    auto x = fvar("x");
    auto d = fvar("d", {U}, DType::Float64);
    const std::string dtype = errorOf([&] { ifelse(positive(x), x, d); });
    QVERIFY2(dtype.find("output 0") != std::string::npos, dtype.c_str());
    QVERIFY2(dtype.find("float32") != std::string::npos, dtype.c_str());
    QVERIFY2(dtype.find("float64") != std::string::npos, dtype.c_str());
    auto m = fvar("m", {U, U});
    const std::string rank = errorOf([&] { ifelse(positive(x), x, m); });
    QVERIFY2(rank.find("rank") != std::string::npos, rank.c_str());
    const std::string cond = errorOf([&] { ifelse(x, x, x); });
    QVERIFY2(cond.find("0-d") != std::string::npos, cond.c_str());
    const std::string count = errorOf([&] {
      ifelse(positive(x), std::vector<VarPtr>{x, x}, std::vector<VarPtr>{x}, "n");
    });
    QVERIFY2(count.find("2 outputs") != std::string::npos, count.c_str());
  }

  // Note [IfElse branches of another rank]: the then branch squeezes x's axis 1, the else branch
  // gives x itself through an AssertType to rank 1. Either branch is taken by the run-time
  // condition c: then gives its value (and gradient); else fails at the AssertType, naming the
  // shape it gave, in every mode and in perform, and so does the gradient.
  void testBranchesOfAnotherRank() {
    auto x = fvar("x", {U, 1});
    auto c = Variable::create(TensorType(DType::Bool, {}), "c");
    VarPtr y = ifelse(c, {squeeze(x, 1) * 2.0}, {assertType(x + 1.0, {U})}, "squeeze")[0];
    QCOMPARE(y->type(), TensorType(DType::Float32, {U}));
    const std::string rank = errorOf([&] { ifelse(c, squeeze(x, 1), x + 1.0); });
    QVERIFY2(rank.find("Note [IfElse branches of another rank]") != std::string::npos,
             rank.c_str());
    const Tensor xv = ft({3, 1}, {1, 2, 3});
    const Tensor yes = Tensor::scalar(DType::Bool, 1), no = Tensor::scalar(DType::Bool, 0);
    const VarPtr g = grad(sum(y * y), x);
    for (Mode mode : kModes) {
      Function f = compile({c, x}, {y, g}, {}, withMode(mode));
      const auto r = f({yes, xv});
      QVERIFY(closeTo(r[0], ft({3}, {2, 4, 6})));
      QVERIFY(closeTo(r[1], ft({3, 1}, {8, 16, 24})));  // d/dx sum((2x)^2) = 8x
      const std::string taken = errorOf([&] { f({no, xv}); });
      QVERIFY2(
          taken.find("expected a value of shape (?,), found shape (3, 1)") != std::string::npos,
          taken.c_str());
      // The gradient alone (it does not need y) fails in the else branch too.
      Function fg = compile({c, x}, {g}, {}, withMode(mode));
      QVERIFY(closeTo(fg({yes, xv})[0], ft({3, 1}, {8, 16, 24})));
      const std::string back = errorOf([&] { fg({no, xv}); });
      QVERIFY2(back.find("AssertType") != std::string::npos, back.c_str());
    }
    // perform, the reference, checks the same.
    const Apply& node = *y->owner();
    std::vector<const Tensor*> ins{&no, &xv};
    Tensor out;
    std::vector<Tensor*> outs{&out};
    const std::string ref = errorOf([&] { node.op().perform(node, ins, outs); });
    QVERIFY2(ref.find("expected a value of shape (?,), found shape (3, 1)") != std::string::npos,
             ref.c_str());
    ins[0] = &yes;
    node.op().perform(node, ins, outs);
    QVERIFY(closeTo(out, ft({3}, {2, 4, 6})));
    // The finite-difference gradient of the then branch.
    verifyGrad(
        [](const std::vector<VarPtr>& in) -> std::vector<VarPtr> {
          return {ifelse(positive(in[0]), exp(squeeze(in[0], 1)), assertType(in[0], {U}))};
        },
        {Tensor::full(DType::Float64, {3, 1}, 0.5)});
    // A .tsg file keeps the AssertType inside the else body.
    io::TsgDocument doc;
    doc.original =
        std::make_unique<FunctionGraph>(std::vector<VarPtr>{c, x}, std::vector<VarPtr>{y});
    const std::string text = io::writeTsg(doc);
    io::TsgDocument loaded = io::readTsg(text);
    QCOMPARE(QString::fromStdString(io::writeTsg(loaded)), QString::fromStdString(text));
    Function again = compile(loaded.original->inputs(), loaded.original->outputs());
    QVERIFY(closeTo(again({yes, xv})[0], ft({3}, {2, 4, 6})));
    QVERIFY(errorOf([&] { again({no, xv}); }).find("found shape (3, 1)") != std::string::npos);
  }

  void testTsgRoundTrip() {
    auto x = fvar("x");
    const auto y = ifelse(positive(x), {exp(x), x}, {x * 2.0, -x}, "branchy");
    io::TsgDocument doc;
    doc.original = std::make_unique<FunctionGraph>(std::vector<VarPtr>{x}, y);
    const std::string text = io::writeTsg(doc);
    io::TsgDocument loaded = io::readTsg(text);
    QCOMPARE(QString::fromStdString(io::writeTsg(loaded)), QString::fromStdString(text));
    Function again = compile({loaded.original->inputs()[0]}, loaded.original->outputs(), {},
                             withMode(Mode::FastRun));
    const auto r = again({ft({2}, {-1, -2})});
    QVERIFY(closeTo(r[0], ft({2}, {-2, -4})));
    QVERIFY(closeTo(r[1], ft({2}, {1, 2})));
  }

  void testBreakPointInABranch() {
    // A BreakPoint inside the taken branch pauses in the IfElse's frame; in the other branch it
    // never runs.
    auto x = fvar("x");
    auto inner = [&](const VarPtr& v) {
      return breakpoint("in_then", gt(sum(v), constant(0.0, DType::Float32)), {v * 2.0})[0];
    };
    VarPtr y = ifelse(positive(x), inner(x), x * 3.0);
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      Function f = compile({x}, {y}, {}, withMode(mode));
      f.vm().setBreakOps(true);
      Execution e = f.begin({ft({2}, {1, 2})});
      QCOMPARE(e.run(), VM::Status::Paused);
      QCOMPARE(f.vm().pauseReason(), VM::PauseReason::BreakPointOp);
      QCOMPARE(f.vm().depth(), std::size_t{1});
      QVERIFY(closeTo(*f.vm().value(f.vm().breakOpNode()->outputRef(0)), ft({2}, {2, 4})));
      QCOMPARE(e.run(), VM::Status::Finished);
      QVERIFY(closeTo(e.finish()[0], ft({2}, {2, 4})));
      QCOMPARE(f.begin({ft({2}, {-1, -2})}).run(), VM::Status::Finished);
    }
  }

  void testStepInto() {
    auto x = fvar("x");
    VarPtr y = ifelse(positive(x), exp(x) + 1.0, x * 3.0) * 2.0;
    Function f = compile({x}, {y});
    VM& vm = f.vm();
    for (bool positiveInput : {true, false}) {
      Execution e = f.begin({positiveInput ? ft({2}, {1, 2}) : ft({2}, {-1, -2})});
      // Run up to the IfElse node, then enter it.
      while (vm.schedule()[vm.pc()]->op().name() != "IfElse") QVERIFY(vm.step());
      const Apply* node = vm.schedule()[vm.pc()];
      QVERIFY(vm.stepInto());
      QCOMPARE(vm.depth(), std::size_t{1});
      QCOMPARE(vm.framePath()[0], node->id());
      const FunctionGraph& branch = vm.frame(1).program->graph();
      const auto& op = static_cast<const IfElse&>(node->op());
      // The frame runs (a clone of) the taken body: same op names in the same order.
      const FunctionGraph& taken = positiveInput ? op.thenGraph() : op.elseGraph();
      QCOMPARE(branch.nodeCount(), taken.nodeCount());
      QCOMPARE(vm.stepOut(), VM::Status::Paused);
      QCOMPARE(vm.depth(), std::size_t{0});
      QCOMPARE(e.run(), VM::Status::Finished);
      const Tensor want = positiveInput
                              ? ft({2}, {2 * (std::exp(1.0) + 1), 2 * (std::exp(2.0) + 1)})
                              : ft({2}, {-6, -12});
      QVERIFY(closeTo(e.finish()[0], want));
    }
  }
};

TSCOPE_TEST_MAIN(TestIfElse)
#include "tst_ifelse.moc"
