// Scan (engine/ops/control/scan.h): values against hand-unrolled graphs (sequence taps, several
// recurrent taps, several outputs, outputs without recurrence, symbolic steps), in every mode and
// through perform; shapes; the errors naming the scan and the argument.
#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/graph/errors.h"
#include "engine/io/tsg.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/tensor/alloc_hook.h"
#include "engine/vm/vm.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test;

namespace {
constexpr std::int64_t U = kUnknownDim;
constexpr Mode kModes[] = {Mode::None, Mode::FastCompile, Mode::FastRun, Mode::Debug};
CompileOptions withMode(Mode mode) {
  CompileOptions o;
  o.mode = mode;
  return o;
}
VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape,
            DType dtype = DType::Float64) {
  return Variable::create(TensorType(dtype, std::move(shape)), name);
}
std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}
bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
// Runs outputs over inputs in every mode and through each Scan's perform (Mode::None keeps the
// graph as built; DebugMode checks every kernel against perform).
std::vector<std::vector<Tensor>> runAll(const std::vector<VarPtr>& inputs,
                                        const std::vector<VarPtr>& outputs,
                                        const std::vector<Tensor>& args) {
  std::vector<std::vector<Tensor>> r;
  for (Mode mode : kModes) {
    Function f = compile(inputs, outputs, {}, withMode(mode));
    r.push_back(f(args));
  }
  return r;
}
}  // namespace

class TestScan : public QObject {
  Q_OBJECT

 private slots:
  void testRnnAgainstUnrolled() {
    // h[t] = tanh(x[t] W + h[t-1] U), 4 steps, against the same graph written out.
    auto x = fvar("x", {4, 3});
    auto h0 = fvar("h0", {2});
    auto W = fvar("W", {3, 2});
    auto Uw = fvar("U", {2, 2});
    const std::vector<VarPtr> h = scan(
        [](const std::vector<VarPtr>& a) {
          return std::vector<VarPtr>{tanh(dot(a[0], a[2]) + dot(a[1], a[3]))};
        },
        {x}, {h0}, {W, Uw}, {}, -1, {.label = "rnn"});
    QCOMPARE(h.size(), std::size_t{1});
    QCOMPARE(QString::fromStdString(h[0]->owner()->op().str()), QString("Scan{rnn}"));
    QCOMPARE(h[0]->type().shape(), (std::vector<std::int64_t>{4, 2}));
    std::vector<VarPtr> rows;
    VarPtr prev = h0;
    for (int t = 0; t < 4; ++t) {
      prev = tanh(dot(select(x, 0, t), W) + dot(prev, Uw));
      rows.push_back(prev);
    }
    const std::vector<Tensor> args{
        randomTensor(DType::Float64, {4, 3}, 1), randomTensor(DType::Float64, {2}, 2),
        randomTensor(DType::Float64, {3, 2}, 3), randomTensor(DType::Float64, {2, 2}, 4)};
    Function unrolled = compile({x, h0, W, Uw}, rows);
    const auto want = unrolled(args);
    for (const auto& got : runAll({x, h0, W, Uw}, h, args))
      for (int t = 0; t < 4; ++t)
        QVERIFY(closeTo(got[0].select(0, t), want[static_cast<std::size_t>(t)]));
  }

  void testSequenceTapsAndOutputsWithoutRecurrence() {
    // Taps {-1, +1} on x: y[t] = x[t-1] * x[t+1] for t = 1..n-2 (n - 2 steps), a running sum s
    // of y, and the step's difference x[t+1] - x[t-1] as an output nobody feeds back.
    auto x = fvar("x", {U});
    auto s0 = fvar("s0", {});
    const std::vector<VarPtr> out = scan(
        [](const std::vector<VarPtr>& a) {  // x[t-1], x[t+1], s[t-1]
          return std::vector<VarPtr>{a[2] + a[0] * a[1], a[1] - a[0]};
        },
        {ScanSequence(x, {-1, 1})}, {s0, ScanOutputInfo::none()});
    const Tensor xv = Tensor::fromDoubles(DType::Float64, {6}, {1, 2, 3, 4, 5, 6});
    const Tensor s0v = Tensor::scalar(DType::Float64, 10);
    // By hand: products 1*3, 2*4, 3*5, 4*6 -> running 13, 21, 36, 60; differences all 2.
    for (const auto& got : runAll({x, s0}, out, {xv, s0v})) {
      QVERIFY(closeTo(got[0], Tensor::fromDoubles(DType::Float64, {4}, {13, 21, 36, 60})));
      QVERIFY(closeTo(got[1], Tensor::fromDoubles(DType::Float64, {4}, {2, 2, 2, 2})));
    }
  }

  void testSeveralRecurrentTapsAndOutputs() {
    // Fibonacci with taps {-2, -1} (the initial value holds the two leading rows) and a second
    // output with taps {-1} counting the steps, 8 steps.
    auto f01 = fvar("f01", {2});
    auto c0 = fvar("c0", {});
    const std::vector<VarPtr> out = scan(
        [](const std::vector<VarPtr>& a) {  // f[t-2], f[t-1], c[t-1]
          return std::vector<VarPtr>{a[0] + a[1], a[2] + 1.0};
        },
        {}, {ScanOutputInfo(f01, {-2, -1}), c0}, {}, 8);
    QCOMPARE(out[0]->type().shape(), std::vector<std::int64_t>{8});
    const Tensor init = Tensor::fromDoubles(DType::Float64, {2}, {0, 1});
    for (const auto& got : runAll({f01, c0}, out, {init, Tensor::scalar(DType::Float64, 0)})) {
      QVERIFY(
          closeTo(got[0], Tensor::fromDoubles(DType::Float64, {8}, {1, 2, 3, 5, 8, 13, 21, 34})));
      QVERIFY(closeTo(got[1], Tensor::fromDoubles(DType::Float64, {8}, {1, 2, 3, 4, 5, 6, 7, 8})));
    }
    // Taps {-3, -1}: f[t] = f[t-3] + f[t-1] against the unrolled recurrence.
    auto g0 = fvar("g0", {3, 2});
    VarPtr g =
        scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[0] + a[1] * 0.5}; },
             {}, {ScanOutputInfo(g0, {-3, -1})}, {}, 5)[0];
    const Tensor gv = randomTensor(DType::Float64, {3, 2}, 9);
    std::vector<Tensor> rows{gv.select(0, 0), gv.select(0, 1), gv.select(0, 2)};
    for (int t = 0; t < 5; ++t) {
      Tensor r = rows[rows.size() - 3].clone();
      const Tensor& p = rows.back();
      for (std::int64_t k = 0; k < 2; ++k) r.set({k}, r.at({k}) + 0.5 * p.at({k}));
      rows.push_back(r);
    }
    for (const auto& got : runAll({g0}, {g}, {gv}))
      for (int t = 0; t < 5; ++t)
        QVERIFY(closeTo(got[0].select(0, t), rows[static_cast<std::size_t>(3 + t)]));
  }

  void testSymbolicSteps() {
    // nSteps a 0-d integer variable; the sequence may be longer.
    auto x = fvar("x", {U});
    auto n = Variable::create(TensorType(DType::Int64, {}), "n");
    auto a0 = fvar("a0", {});
    VarPtr acc =
        scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] * 2.0 + a[0]}; },
             {x}, {a0}, {}, n)[0];
    QCOMPARE(acc->type().shape(), std::vector<std::int64_t>{U});
    const Tensor xv = Tensor::fromDoubles(DType::Float64, {5}, {1, 2, 3, 4, 5});
    for (Mode mode : kModes) {
      Function f = compile({x, n, a0}, {acc}, {}, withMode(mode));
      QVERIFY(
          closeTo(f({xv, Tensor::scalar(DType::Int64, 3), Tensor::scalar(DType::Float64, 0)})[0],
                  Tensor::fromDoubles(DType::Float64, {3}, {1, 4, 11})));
      QVERIFY(
          closeTo(f({xv, Tensor::scalar(DType::Int64, 5), Tensor::scalar(DType::Float64, 1)})[0],
                  Tensor::fromDoubles(DType::Float64, {5}, {3, 8, 19, 42, 89})));
      // Zero steps: an empty output.
      QCOMPARE(
          f({xv, Tensor::scalar(DType::Int64, 0), Tensor::scalar(DType::Float64, 1)})[0].shape(),
          Shape{0});
      // A sequence shorter than the steps: the node's failure names the scan and the sequence.
      const std::string e = errorOf([&] {
        f({xv, Tensor::scalar(DType::Int64, 7), Tensor::scalar(DType::Float64, 0)});
      });
      QVERIFY2(
          has(e, "Scan{scan}") && has(e, "sequence 0") && has(e, "5 rows") && has(e, "nSteps is 7"),
          e.c_str());
    }
  }

  void testNonSequencesImplicitAndStrict() {
    // Without strict, an outer variable the body uses becomes a non-sequence; with strict it is
    // refused, named.
    auto x = fvar("x", {3});
    auto k = fvar("k", {});
    auto z0 = fvar("z0", {});
    VarPtr y =
        scan([&](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] + a[0] * k}; },
             {x}, {z0})[0];
    QCOMPARE(y->owner()->nInputs(), 4);  // nSteps, x, z0, k
    Function f = compile({x, k, z0}, {y});
    QVERIFY(closeTo(f({Tensor::fromDoubles(DType::Float64, {3}, {1, 2, 3}),
                       Tensor::scalar(DType::Float64, 2), Tensor::scalar(DType::Float64, 0)})[0],
                    Tensor::fromDoubles(DType::Float64, {3}, {2, 6, 12})));
    const std::string e = errorOf([&] {
      scan([&](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] + a[0] * k}; }, {x},
           {z0}, {}, {}, -1, {.label = "strictly", .strict = true});
    });
    QVERIFY2(has(e, "Scan{strictly}") && has(e, "'k'") && has(e, "strict"), e.c_str());
    // Given as a non-sequence it is fine, and a body using the outer variable directly gets the
    // inner one.
    VarPtr y2 =
        scan([&](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] + a[0] * k}; },
             {x}, {z0}, {k}, {}, -1, {.label = "strictly", .strict = true})[0];
    QCOMPARE(y2->owner()->nInputs(), 4);
  }

  void testShapes() {
    checkInferShape(
        [](const std::vector<VarPtr>& in) {
          return scan(
              [](const std::vector<VarPtr>& a) {
                return std::vector<VarPtr>{a[1] + a[0], sum(a[0]) * a[2]};
              },
              {ScanSequence(in[0])}, {in[1], ScanOutputInfo::none()}, {in[2]});
        },
        {randomTensor(DType::Float64, {5, 3}, 1), randomTensor(DType::Float64, {3}, 2),
         randomTensor(DType::Float64, {4}, 3)},
        InferShapeOptions{.warnOnSquareInputs = false});
    // With taps and a static length, the output type knows the steps.
    auto x = fvar("x", {7, 2});
    VarPtr y = scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[0] + a[1]}; },
                    {ScanSequence(x, {-2, 1})}, {ScanOutputInfo::none()})[0];
    QCOMPARE(y->type().shape(), (std::vector<std::int64_t>{4, 2}));
  }

  void testErrors() {
    auto x = fvar("x", {U, 3});
    auto h0 = fvar("h0", {3});
    auto body = [](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[0] + a[1]}; };
    // The body's output type against its initial value.
    auto h32 = fvar("h32", {3}, DType::Float32);
    std::string e = errorOf([&] { scan(body, {x}, {h32}, {}, {}, -1, {.label = "typed"}); });
    QVERIFY2(has(e, "Scan{typed}") && has(e, "output 0") && has(e, "'h32'") && has(e, "float64") &&
                 has(e, "float32"),
             e.c_str());
    auto hm = fvar("hm", {2, 3});
    e = errorOf([&] {
      scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{sum(a[1], {0})}; }, {x},
           {hm}, {}, {}, -1, {.label = "ranked"});
    });
    QVERIFY2(has(e, "Scan{ranked}") && has(e, "initial value") && has(e, "'hm'"), e.c_str());
    // Wrong taps.
    e = errorOf([&] { scan(body, {x}, {ScanOutputInfo(h0, {0})}); });
    QVERIFY2(has(e, "output 0") && has(e, "tap 0") && has(e, "negative"), e.c_str());
    e = errorOf([&] { scan(body, {ScanSequence(x, {1, 1})}, {h0}); });
    QVERIFY2(has(e, "sequence 0") && has(e, "twice"), e.c_str());
    e = errorOf([&] { scan(body, {ScanSequence(x, {})}, {h0}); });
    QVERIFY2(has(e, "sequence 0") && has(e, "no taps"), e.c_str());
    auto two = fvar("two", {3, 3});
    e = errorOf([&] { scan(body, {x}, {ScanOutputInfo(two, {-2, -1})}); });
    QVERIFY2(has(e, "output 0") && has(e, "3 leading rows") && has(e, "need 2"), e.c_str());
    // Wrong number of rows at run time.
    auto any = fvar("any", {U, 3});
    VarPtr y = scan(body, {x}, {ScanOutputInfo(any, {-2, -1})})[0];
    Function f = compile({x, any}, {y});
    e = errorOf([&] {
      f({randomTensor(DType::Float64, {4, 3}, 1), randomTensor(DType::Float64, {3, 3}, 2)});
    });
    QVERIFY2(
        has(e, "Scan{scan}") && has(e, "initial value of output 0") && has(e, "2 leading rows"),
        e.c_str());
    // No steps at all, a 0-d sequence, a body returning the wrong count.
    e = errorOf([&] { scan(body, {}, {h0}); });
    QVERIFY2(has(e, "nSteps"), e.c_str());
    e = errorOf([&] { scan(body, {fvar("s", {})}, {h0}); });
    QVERIFY2(has(e, "sequence 0") && has(e, "0-d"), e.c_str());
    e = errorOf([&] {
      scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[0], a[1]}; }, {x}, {h0});
    });
    QVERIFY2(has(e, "returned 2 values"), e.c_str());
  }

  void testFailureInsideTheBodyNamesTheIteration() {
    // A body op that throws at its third call: the error names the inner node, the scan node and
    // the iteration.
    auto calls = std::make_shared<int>(0);
    const auto picky =
        asOp("Picky", {TensorType(DType::Float64, {})}, {TensorType(DType::Float64, {})},
             [calls](std::span<const Tensor> in) -> std::vector<Tensor> {
               if (++*calls == 3) throw std::runtime_error("third call");
               return {in[0].clone()};
             });
    auto x = fvar("x", {5});
    auto z0 = fvar("z0", {});
    VarPtr y = scan(
        [&](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{(*picky)({a[0] + a[1]})}; },
        {x}, {z0}, {}, {}, -1, {.label = "loop"})[0];
    Function f = compile({x, z0}, {y});
    const std::string e = errorOf([&] {
      f({randomTensor(DType::Float64, {5}, 1), Tensor::scalar(DType::Float64, 0)});
    });
    QVERIFY2(
        has(e, "Picky") && has(e, "in Scan{loop}") && has(e, "iteration 2") && has(e, "third call"),
        e.c_str());
  }

  void testTsgRoundTrip() {
    // The body, the taps, the stores and truncateGradient are props: a .tsg file holds the Scan
    // whole, writes back byte for byte, and runs.
    auto x = fvar("x", {U});
    auto f01 = fvar("f01", {2});
    const std::vector<VarPtr> out = scan(
        [](const std::vector<VarPtr>& a) {  // x[t-1], x[t], f[t-2], f[t-1]
          return std::vector<VarPtr>{a[2] + a[3] * a[1], a[0] * 2.0};
        },
        {ScanSequence(x, {-1, 0})}, {ScanOutputInfo(f01, {-2, -1}), ScanOutputInfo::none()}, {}, {},
        3, {.label = "saved"});
    io::TsgDocument doc;
    doc.original = std::make_unique<FunctionGraph>(std::vector<VarPtr>{x, f01}, out);
    const std::string text = io::writeTsg(doc);
    QVERIFY(has(text, "\"Scan\""));
    io::TsgDocument loaded = io::readTsg(text);
    QCOMPARE(QString::fromStdString(io::writeTsg(loaded)), QString::fromStdString(text));
    const auto& op = static_cast<const Scan&>(loaded.original->outputs()[0]->owner()->op());
    QCOMPARE(op.layout().seqTaps, (std::vector<std::vector<int>>{{-1, 0}}));
    QCOMPARE(op.layout().truncateGradient, 3);
    const std::vector<Tensor> args{Tensor::fromDoubles(DType::Float64, {4}, {1, 2, 3, 4}),
                                   Tensor::fromDoubles(DType::Float64, {2}, {0, 1})};
    Function again = compile(loaded.original->inputs(), loaded.original->outputs());
    Function direct = compile({x, f01}, out);
    const auto a = again(args), b = direct(args);
    QVERIFY(closeTo(a[0], b[0]));
    QVERIFY(closeTo(a[1], b[1]));
    // Bad props are refused naming the prop.
    nlohmann::json props = op.props();
    props["seq_taps"] = nlohmann::json::array({nlohmann::json::array({1, 1})});
    QVERIFY(has(errorOf([&] { Scan::fromProps(props); }), "twice"));
    props = op.props();
    props["extra"] = 1;
    QVERIFY(has(errorOf([&] { Scan::fromProps(props); }), "unknown prop \"extra\""));
  }

  void testNestedScans() {
    // The outer loop's body is a loop: row sums of x by an inner running sum, then a running
    // total of those; every mode, frames nested two deep in the VM.
    auto x = fvar("x", {3, 4});
    auto t0 = fvar("t0", {});
    VarPtr total = scan(
        [](const std::vector<VarPtr>& a) {  // x[t] (a row), total[t-1]
          VarPtr zero = a[1] * 0.0;
          VarPtr run =
              scan([](const std::vector<VarPtr>& b) { return std::vector<VarPtr>{b[1] + b[0]}; },
                   {a[0]}, {zero}, {}, {}, -1, {.label = "inner"})[0];
          return std::vector<VarPtr>{a[1] + select(run, 0, -1)};
        },
        {x}, {t0}, {}, {}, -1, {.label = "outer"})[0];
    const Tensor xv =
        Tensor::fromDoubles(DType::Float64, {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    for (const auto& got : runAll({x, t0}, {total}, {xv, Tensor::scalar(DType::Float64, 100)}))
      QVERIFY(closeTo(got[0], Tensor::fromDoubles(DType::Float64, {3}, {110, 136, 178})));
  }

  void testStackedOutputsAllocatedOnce() {
    // Note [Scan execution]: the stacked output is one buffer for the whole loop; each step's
    // body allocates only its own values (here the one add), and the step's row is a copy into
    // the buffer. A buffer per step would show as twice the allocations.
    const std::int64_t T = 50, n = 1000;
    auto x = fvar("x", {T, n});
    auto s0 = fvar("s0", {n});
    VarPtr s = scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] + a[0]}; },
                    {x}, {s0})[0];
    Function f = compile({x, s0}, {s});
    const std::vector<Tensor> args{randomTensor(DType::Float64, {T, n}, 3),
                                   randomTensor(DType::Float64, {n}, 4)};
    f(args);
    AllocationCounters c;
    Tensor out;
    {
      ScopedAllocationCounters hook(&c);
      out = f(args)[0];
    }
    QVERIFY2(c.allocations <= T + 8, std::to_string(c.allocations).c_str());
    QVERIFY2(c.allocatedBytes <= 2 * (T + 1) * n * 8 + 64 * 1024,
             std::to_string(c.allocatedBytes).c_str());
    QCOMPARE(out.shape(), (Shape{T, n}));
    QVERIFY(closeTo(out.select(0, 0), [&] {
      Tensor r = args[1].clone();
      for (std::int64_t k = 0; k < n; ++k) r.set({k}, r.at({k}) + args[0].at({0, k}));
      return r;
    }()));
  }

  void testIterationsInTheVm() {
    // The body runs as one frame per step: observers see the iteration, stepInto enters
    // iteration 0, and at the end of an iteration the next one starts in the same frame.
    struct Seen : ExecutionObserver {
      std::vector<std::int64_t> iterations;
      void afterNode(VM&, const NodeEvent& e) override {
        if (e.depth() == 1) iterations.push_back(e.iteration());
      }
    };
    auto x = fvar("x", {3});
    auto z0 = fvar("z0", {});
    VarPtr y =
        scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{exp(a[0]) + a[1]}; },
             {x}, {z0})[0];
    Function f = compile({x, z0}, {y * 2.0});
    auto seen = std::make_shared<Seen>();
    f.vm().addObserver(seen);
    const std::vector<Tensor> args{Tensor::fromDoubles(DType::Float64, {3}, {0, 0, 0}),
                                   Tensor::scalar(DType::Float64, 0)};
    QVERIFY(closeTo(f(args)[0], Tensor::fromDoubles(DType::Float64, {3}, {2, 4, 6})));
    QVERIFY(!seen->iterations.empty());
    QCOMPARE(seen->iterations.front(), std::int64_t{0});
    QCOMPARE(seen->iterations.back(), std::int64_t{2});
    QVERIFY(std::is_sorted(seen->iterations.begin(), seen->iterations.end()));
    f.vm().removeObserver(*seen);
    VM& vm = f.vm();
    Execution e = f.begin(args);
    while (vm.schedule()[vm.pc()]->op().name() != "Scan") QVERIFY(vm.step());
    QVERIFY(vm.stepInto());
    QCOMPARE(vm.depth(), std::size_t{1});
    QCOMPARE(vm.frame(1).iteration, std::int64_t{0});
    QCOMPARE(vm.frame(1).iterations, std::int64_t{3});
    QCOMPARE(vm.frameIterations(), std::vector<std::int64_t>{0});
    const std::size_t bodySize = vm.frame(1).program->schedule().size();
    for (std::size_t k = 0; k < bodySize; ++k) QVERIFY(vm.step());
    QVERIFY(vm.step());  // the end of iteration 0: iteration 1 starts in the same frame
    QCOMPARE(vm.depth(), std::size_t{1});
    QCOMPARE(vm.frame(1).iteration, std::int64_t{1});
    QCOMPARE(vm.frame(1).pc, std::size_t{0});
    QCOMPARE(vm.stepOut(), VM::Status::Paused);  // the whole loop
    QCOMPARE(vm.depth(), std::size_t{0});
    QCOMPARE(e.run(), VM::Status::Finished);
    QVERIFY(closeTo(e.finish()[0], Tensor::fromDoubles(DType::Float64, {3}, {2, 4, 6})));
    // step() over the Scan node runs the whole loop.
    Execution e2 = f.begin(args);
    while (vm.schedule()[vm.pc()]->op().name() != "Scan") QVERIFY(vm.step());
    const std::size_t at = vm.pc();
    QVERIFY(vm.step());
    QCOMPARE(vm.depth(), std::size_t{0});
    QCOMPARE(vm.pc(), at + 1);
    QVERIFY(vm.value(vm.schedule()[at]->outputRef(0)) != nullptr);
    QCOMPARE(vm.value(vm.schedule()[at]->outputRef(0))->shape(), Shape{3});
    QCOMPARE(e2.run(), VM::Status::Finished);
  }
};

TSCOPE_TEST_MAIN(TestScan)
#include "tst_scan.moc"
