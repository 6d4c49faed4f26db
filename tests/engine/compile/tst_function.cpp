// compile() and Function: argument checks, shared-variable updates, buffer reuse, and error
// context when a node fails. The VM itself is tested in tests/engine/vm/tst_vm.cpp.
#include "engine/compile/function.h"
#include "engine/graph/errors.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/tensor/alloc_hook.h"
#include "engine/vm/observer.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <set>

using namespace tscope::engine;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape = {U, U},
            DType d = DType::Float32) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v, DType d = DType::Float32) {
  return Tensor::fromDoubles(d, std::move(shape), v);
}

}  // namespace

class TestFunction : public QObject {
  Q_OBJECT

 private slots:
  void testCallComputesValues() {
    auto x = fvar("x"), y = fvar("y");
    Function f = compile({x, y}, {x * y + 1.0, -x});
    auto out = f({ft({2, 3}, {1, 2, 3, 4, 5, 6}), ft({2, 3}, {2, 2, 2, 2, 2, 2})});
    QCOMPARE(out.size(), std::size_t(2));
    QCOMPARE(out[0].toDoubles(), (std::vector<double>{3, 5, 7, 9, 11, 13}));
    QCOMPARE(out[1].toDoubles(), (std::vector<double>{-1, -2, -3, -4, -5, -6}));
  }

  void testArgumentCount() {
    auto x = fvar("x");
    Function f = compile({x}, {x + 1.0});
    try {
      f({});
      QFAIL("expected an ArgumentError");
    } catch (const ArgumentError& e) {
      QVERIFY2(std::string(e.what()).find("expected 1 argument, found 0") != std::string::npos,
               e.what());
    }
  }

  void testArgumentTypeErrors() {
    auto x = Variable::create(TensorType(DType::Float32, {U, 3}), "x");
    Function f = compile({x}, {x + 1.0});
    auto expectError = [&](const Tensor& t, const std::string& part) {
      try {
        f({t});
        QFAIL("expected an ArgumentError");
      } catch (const ArgumentError& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find("argument 0 ('x')") != std::string::npos, e.what());
        QVERIFY2(msg.find(part) != std::string::npos, e.what());
      }
    };
    expectError(Tensor::zeros(DType::Float64, {2, 3}), "float64");  // lossy downcast refused
    expectError(Tensor::zeros(DType::Float32, {2, 3, 1}), "TensorType(float32, (?, 3))");  // rank
    expectError(Tensor::zeros(DType::Float32, {2, 4}),
                "TensorType(float32, (?, 3))");  // static dimension
    // A lossless conversion is accepted.
    auto out = f({Tensor::full(DType::Int8, {2, 3}, 2)});
    QCOMPARE(out[0].dtype(), DType::Float32);
    QCOMPARE(out[0].toDoubles()[0], 3.0);
  }

  void testSharedUpdatesAreSimultaneous() {
    auto a = SharedVariable::create(Tensor::scalar(DType::Float64, 1), "a");
    auto b = SharedVariable::create(Tensor::scalar(DType::Float64, 2), "b");
    Function swap = compile({}, {a + b}, {{a, b}, {b, a}});
    auto out = swap({});
    QCOMPARE(out[0].item(), 3.0);
    QCOMPARE(a->value().item(), 2.0);
    QCOMPARE(b->value().item(), 1.0);
    swap({});
    QCOMPARE(a->value().item(), 1.0);
    QCOMPARE(b->value().item(), 2.0);
  }

  void testCounter() {
    auto n = SharedVariable::create(Tensor::scalar(DType::Int64, 0), "n");
    auto step = Variable::create(TensorType(DType::Int64, {}), "step");
    Function inc = compile({step}, {n}, {{n, n + step}});
    for (int i = 0; i < 3; ++i) inc({Tensor::scalar(DType::Int64, 5)});
    QCOMPARE(n->value().item(), 15.0);
  }

  void testUpdateTypeMismatch() {
    auto w = SharedVariable::create(Tensor::zeros(DType::Float32, {2, 3}), "w");
    auto v = fvar("v", {U}, DType::Float32);
    try {
      compile({v}, {}, {{w, v}});
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.find("'w'") != std::string::npos &&
                   msg.find("TensorType(float32, (2, 3))") != std::string::npos,
               e.what());
    }
  }

  void testMissingInputNamed() {
    auto x = fvar("x"), hidden = fvar("hidden");
    try {
      compile({x}, {x + hidden});
      QFAIL("expected a GraphError");
    } catch (const GraphError& e) {
      QVERIFY2(std::string(e.what()).find("hidden") != std::string::npos, e.what());
    }
  }

  // Note [Recycled buffers]: with keepBuffers a call allocates nothing but what it returns, and the
  // intermediates of a chain share the buffers the live set needs (two here), not one each.
  void testKeepBuffersReusesMemory() {
    auto x = fvar("x", {8, 8});
    VarPtr v = x;
    for (int k = 0; k < 5; ++k) v = dot(v, x);  // four intermediates, then the output
    CompileOptions opts;
    opts.keepBuffers = true;
    Function f = compile({x}, {v}, {}, opts);
    std::vector<double> ones(64, 0.125);
    const Tensor in = Tensor::fromDoubles(DType::Float32, {8, 8}, ones);
    struct Seen : ExecutionObserver {
      std::set<const void*> buffers;
      std::size_t nodes = 0;
      void afterNode(VM&, const NodeEvent& e) override {
        ++nodes;
        if (e.position + 1 < 5) buffers.insert(e.outputs[0]->rawData());
      }
    };
    f({in});
    f({in});
    auto seen = std::make_shared<Seen>();
    f.vm().addObserver(seen);
    AllocationCounters counters;
    std::vector<Tensor> results;
    {
      ScopedAllocationCounters hook(&counters);
      for (int call = 0; call < 3; ++call) results.push_back(f({in})[0]);
    }
    QCOMPARE(seen->nodes, std::size_t(15));
    // Note [Recycled buffers]: two buffers take turns; with it off (TSCOPE_RECYCLE_BUFFERS=0,
    // the suite's _no_recycle run) each intermediate keeps its own.
    const char* recycleEnv = std::getenv("TSCOPE_RECYCLE_BUFFERS");
    const bool recycling = !(recycleEnv && std::string(recycleEnv) == "0");
    QCOMPARE(seen->buffers.size(), std::size_t(recycling ? 2 : 4));
    // The outputs returned to `results`; the first call reused the output the second warm-up
    // call returned, which the caller dropped.
    QCOMPARE(counters.allocations, std::int64_t(2));
    // The returned outputs are not overwritten by the next call: 8 * 0.125 = 1 per product, so
    // every element of x^6 is 0.125.
    for (const Tensor& r : results)
      for (double e : r.toDoubles()) QCOMPARE(e, 0.125);
    QVERIFY(results[0].rawData() != results[1].rawData());
  }

  // Note [Update double buffering]: with keepBuffers, an update writes into the buffer its shared
  // variable held two calls before, and never into the value the caller can still see.
  void testUpdatesReuseThePreviousBuffer() {
    auto w = SharedVariable::create(Tensor::zeros(DType::Float32, {1000}), "w");
    auto x = fvar("x", {1000});
    CompileOptions opts;
    opts.keepBuffers = true;
    Function step = compile({x}, {}, {{w, w + x}}, opts);
    const Tensor ones = Tensor::full(DType::Float32, {1000}, 1);
    step({ones});
    step({ones});
    Tensor seen = w->value();  // the caller keeps this value: it must not change
    step({ones});
    step({ones});
    QCOMPARE(seen.toDoubles()[0], 2.0);
    QCOMPARE(w->value().toDoubles()[999], 4.0);
    // Without an outside holder the buffers alternate.
    seen = Tensor();
    step({ones});
    const void* a = w->value().rawData();
    step({ones});
    step({ones});
    QCOMPARE(w->value().rawData(), a);
    QCOMPARE(w->value().toDoubles()[0], 7.0);
  }

  // Note [Inputs a call may overwrite]: fast_run turns the SGD step W <- W - lr * dot(x.T, g) into
  // Gemm{inplace} on W's own buffer (W is updated, so its old value may go); the values are those
  // of mode none; a value of W the caller kept is copied first and never changes; compiled without
  // the update, the same expression leaves W alone.
  void testUpdatedSharedVariableOverwrittenInPlace() {
    const Tensor w0 = ft({3, 2}, {1, 2, 3, 4, 5, 6});
    auto W = SharedVariable::create(w0, "W");
    auto Wref = SharedVariable::create(w0, "Wref");
    auto x = fvar("x", {U, 3}), g = fvar("g", {U, 2});
    auto stepOf = [&](const VarPtr& w) { return w - 0.5 * dot(transpose(x), g); };
    CompileOptions fast;
    fast.mode = Mode::FastRun;
    Function step = compile({x, g}, {}, {{W, stepOf(W)}}, fast);
    Function reference = compile({x, g}, {}, {{Wref, stepOf(Wref)}});
    int gemmInplace = 0;
    for (const Apply* node : step.graph().nodes())
      gemmInplace += node->op().str() == "Gemm{inplace}";
    QCOMPARE(gemmInplace, 1);
    const Tensor xv = ft({2, 3}, {1, 0, 2, 0, 1, 1}), gv = ft({2, 2}, {1, -1, 0.5, 2});
    const void* buffer = W->value().rawData();
    for (int i = 0; i < 3; ++i) {
      step({xv, gv});
      reference({xv, gv});
      QCOMPARE(W->value().toDoubles(), Wref->value().toDoubles());
    }
    QCOMPARE(W->value().rawData(), buffer);  // overwritten in place: no new buffer per step
    Tensor kept = W->value();
    const std::vector<double> keptValues = kept.toDoubles();
    step({xv, gv});
    reference({xv, gv});
    QCOMPARE(kept.toDoubles(), keptValues);
    QVERIFY(kept.rawData() != W->value().rawData());
    QCOMPARE(W->value().toDoubles(), Wref->value().toDoubles());

    // The optimized graph (with Gemm{inplace} on W) run without its update: W stays as it is.
    std::vector<VarPtr> inputs;
    for (std::size_t i = 0; i < 2; ++i) inputs.push_back(step.graph().inputs()[i]);
    const std::vector<double> before = W->value().toDoubles();
    Function outputsOnly = compile(inputs, step.graph().outputs());
    auto out = outputsOnly({xv, gv});
    QCOMPARE(W->value().toDoubles(), before);
    reference({xv, gv});
    QCOMPARE(out[0].toDoubles(), Wref->value().toDoubles());
  }

  void testFailingNodeNamesOpAndSite() {
    auto boom = asOp(
        "Boom", {TensorType(DType::Float32, {U})}, {TensorType(DType::Float32, {U})},
        [](std::span<const Tensor>) -> std::vector<Tensor> { throw std::runtime_error("kaput"); });
    auto x = fvar("x", {U});
    auto y = (*boom)({x});
    const int line = __LINE__ - 1;
    Function f = compile({x}, {y});
    try {
      f({ft({2}, {1, 2})});
      QFAIL("expected an ExecutionError");
    } catch (const ExecutionError& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.find("Boom") != std::string::npos, e.what());
      QVERIFY2(msg.find("kaput") != std::string::npos, e.what());
      QVERIFY2(msg.find("tst_function.cpp:" + std::to_string(line)) != std::string::npos, e.what());
      QVERIFY2(msg.find("float32 (2,)") != std::string::npos, e.what());
    }
  }

  void testAsOpValueAndShape() {
    auto twice = asOp(
        "Twice", {TensorType(DType::Float64, {U, U})}, {TensorType(DType::Float64, {U, U})},
        [](std::span<const Tensor> in) {
          Tensor out = in[0].clone();
          auto* p = out.data<double>();
          for (std::int64_t i = 0; i < out.numel(); ++i) p[i] *= 2;
          return std::vector<Tensor>{out};
        },
        [](std::span<const ShapeExpr> s) { return std::vector<ShapeExpr>{s[0]}; });
    auto x = fvar("x", {U, U}, DType::Float64);
    Function f = compile({x}, {(*twice)({x})});
    auto out = f({Tensor::fromDoubles(DType::Float64, {1, 2}, {1.5, -2})});
    QCOMPARE(out[0].toDoubles(), (std::vector<double>{3, -4}));
    try {
      (*twice)({fvar("bad", {U}, DType::Float64)});
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      QVERIFY2(
          std::string(e.what()).find("expected TensorType(float64, (?, ?))") != std::string::npos,
          e.what());
    }
  }
};

TSCOPE_TEST_MAIN(TestFunction)
#include "tst_function.moc"
