// DebugModeObserver: each check catches the bug it exists for, in a deliberately broken op, and
// names the node (id, op, creation site, scope) and the values; a correct graph with views and an
// in-place op passes every check and computes exactly what a run without the observer computes.
#include "engine/compile/debug_mode.h"
#include "engine/compile/function.h"
#include "engine/graph/errors.h"
#include "engine/graph/source_site.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/vm/vm.h"
#include "test_main.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace tscope::engine;
using tscope::test::randomTensor;

namespace {
constexpr std::int64_t U = kUnknownDim;

// One input, one output of the input's type, computed through doubles (slow, but any dtype).
class UnaryTestOp : public Op {
 public:
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override {
    checkInputCount(inputs, 1);
    return {inputs[0]->type()};
  }

 protected:
  static Tensor mapped(const Tensor& in, double (*f)(double)) {
    std::vector<double> v = in.toDoubles();
    for (double& x : v) x = f(x);
    return Tensor::fromDoubles(in.dtype(), in.shape(), v);
  }
};

// Bug: computes 2x correctly, then zeroes its input without a destroyMap entry.
class WritesInputOp final : public UnaryTestOp {
 public:
  std::string name() const override { return "WritesInput"; }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    *out[0] = mapped(*in[0], [](double x) { return 2 * x; });
    Tensor alias = *in[0];  // a handle on the input's storage
    alias.copyFrom(Tensor::zeros(alias.dtype(), alias.shape()));
  }
};

// y[i] = x[i] + x[i - 1] (y[0] = x[0]) over the flattened values. In place, the loop reads x[i - 1]
// after overwriting it (a running sum: the bug); out of place it is right. Every re-run of the
// in-place op repeats the bug, so only the out-of-place reference (Op::outOfPlace) can see it.
class NeighbourSumOp final : public UnaryTestOp {
 public:
  explicit NeighbourSumOp(bool inplace) : m_inplace(inplace) {}
  std::string name() const override { return "NeighbourSum"; }
  nlohmann::json props() const override { return {{"inplace", m_inplace}}; }
  DestroyMap destroyMap() const override { return m_inplace ? DestroyMap{{0, {0}}} : DestroyMap{}; }
  OpPtr outOfPlace() const override {
    return m_inplace ? std::make_shared<NeighbourSumOp>(false) : nullptr;
  }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    std::vector<double> v = in[0]->toDoubles();
    if (m_inplace) {
      for (std::size_t i = 1; i < v.size(); ++i)
        v[i] += v[i - 1];  // reads the overwritten v[i - 1]
      Tensor alias = *in[0];
      alias.copyFrom(Tensor::fromDoubles(alias.dtype(), alias.shape(), v));
      *out[0] = alias;
    } else {
      std::vector<double> y(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) y[i] = v[i] + (i ? v[i - 1] : 0.0);
      *out[0] = Tensor::fromDoubles(in[0]->dtype(), in[0]->shape(), y);
    }
  }

 private:
  bool m_inplace;
};

// Bug: returns its input itself without a viewMap entry.
class ViewWithoutViewMapOp final : public UnaryTestOp {
 public:
  std::string name() const override { return "ViewWithoutViewMap"; }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    *out[0] = *in[0];
  }
};

// Bug: the value it produces does not fit the type it declares (per `kind`).
class WrongTypeOp final : public Op {
 public:
  explicit WrongTypeOp(std::string kind) : m_kind(std::move(kind)) {}
  std::string name() const override { return "WrongType"; }
  nlohmann::json props() const override { return {{"kind", m_kind}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr>) const override {
    return {TensorType(DType::Float32, {2, 3})};
  }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    const Tensor& x = *in[0];
    if (m_kind == "dtype")
      *out[0] = x.astype(DType::Float64);
    else if (m_kind == "rank")
      *out[0] = x.clone().reshape({-1});
    else
      *out[0] = x.transpose().clone();  // (3, 2) where (2, 3) is declared
  }

 private:
  std::string m_kind;
};

// Bug: adds into a reused output buffer as if it held zeros (a forgotten fill).
class ReadsOutputBufferOp final : public UnaryTestOp {
 public:
  std::string name() const override { return "ReadsOutputBuffer"; }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    const Tensor& x = *in[0];
    const bool reused =
        out[0]->defined() && out[0]->dtype() == x.dtype() && out[0]->shape() == x.shape();
    Tensor& dest = reuseOrAllocate(out[0], x.dtype(), x.shape());
    std::vector<double> v = x.toDoubles();
    if (reused) {
      const std::vector<double> previous = dest.toDoubles();
      for (std::size_t i = 0; i < v.size(); ++i) v[i] += previous[i];
    }
    dest.copyFrom(Tensor::fromDoubles(x.dtype(), x.shape(), v));
  }
};

// Bug: reads the float32 input's memory as if it were contiguous from its first element.
class AssumesContiguousOp final : public UnaryTestOp {
 public:
  std::string name() const override { return "AssumesContiguous"; }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    const Tensor& x = *in[0];
    Tensor& dest = reuseOrAllocate(out[0], x.dtype(), x.shape());
    const float* src = x.data<float>();
    float* dst = dest.data<float>();
    for (std::int64_t i = 0; i < x.numel(); ++i) dst[i] = -src[i];
  }
};

// Bug: produces a NaN from finite inputs.
class MakesNanOp final : public UnaryTestOp {
 public:
  std::string name() const override { return "MakesNan"; }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    std::vector<double> v = in[0]->toDoubles();
    v.back() = std::numeric_limits<double>::quiet_NaN();
    *out[0] = Tensor::fromDoubles(in[0]->dtype(), in[0]->shape(), v);
  }
};

// Bug: not deterministic: adds how many times it ran before.
class CountsCallsOp final : public UnaryTestOp {
 public:
  std::string name() const override { return "CountsCalls"; }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    const double k = static_cast<double>(m_calls++);
    std::vector<double> v = in[0]->toDoubles();
    for (double& x : v) x += k;
    *out[0] = Tensor::fromDoubles(in[0]->dtype(), in[0]->shape(), v);
  }

 private:
  mutable int m_calls = 0;
};

// Two outputs of the input's type. Bug "shared": both outputs are one fresh buffer. Bug
// "second_dtype": output 1 (which the test graphs never read) is float64 although declared float32.
class TwoOutputsOp final : public Op {
 public:
  explicit TwoOutputsOp(std::string bug) : m_bug(std::move(bug)) {}
  std::string name() const override { return "TwoOutputs"; }
  nlohmann::json props() const override { return {{"bug", m_bug}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override {
    return {inputs[0]->type(), inputs[0]->type()};
  }
  void perform(const Apply&, std::span<const Tensor* const> in,
               std::span<Tensor* const> out) const override {
    *out[0] = in[0]->clone();
    *out[1] = m_bug == "shared" ? *out[0] : in[0]->astype(DType::Float64);
  }

 private:
  std::string m_bug;
};

VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape, DType d = DType::Float32) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

CompileOptions debugOptions(std::shared_ptr<DebugModeObserver> checks, bool keepBuffers = false) {
  CompileOptions options;
  options.keepBuffers = keepBuffers;
  options.observers.push_back(std::move(checks));
  return options;
}

// The node of the compiled graph whose op is named `opName`.
const Apply* nodeNamed(const Function& f, const std::string& opName) {
  for (const Apply* node : f.graph().nodes())
    if (node->op().name() == opName) return node;
  return nullptr;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

class TestDebugMode : public QObject {
  Q_OBJECT

  // Applies `op` to x (or, with `onIntermediate`, to x + 0: an op that overwrites a graph input
  // runs out of place, Note [Inputs a call may overwrite]) inside scope "broken" (output 0 feeds
  // y + 1; other outputs have no reader), compiles with a DebugModeObserver and calls it `calls`
  // times on `value`; expects the last call to throw a DebugModeError from `check` that names the
  // node, its op, site and scope.
  std::optional<DebugModeError> expectFinding(const OpPtr& op, const VarPtr& x, const Tensor& value,
                                              DebugCheck check, int output, int input,
                                              DebugModeOptions options = {},
                                              bool keepBuffers = false, int calls = 1,
                                              bool onIntermediate = false) {
    VarPtr y;
    const VarPtr in = onIntermediate ? x + 0.0 : x;
    {
      NameScope scope("broken");
      y = op->makeNode({in})->output(0);
    }
    auto checks = std::make_shared<DebugModeObserver>(options);
    Function f = compile({x}, {y + 1.0}, {}, debugOptions(checks, keepBuffers));
    const Apply* node = nodeNamed(f, op->name());
    for (int call = 1; call <= calls; ++call) {
      try {
        f({value.clone()});
        if (call < calls) continue;
        QTest::qFail(
            ("expected a DebugModeError from check " + std::string(debugCheckName(check))).c_str(),
            __FILE__, __LINE__);
        return std::nullopt;
      } catch (const DebugModeError& e) {
        const std::string msg = e.what();
        if (e.check() != check || e.nodeId() != node->id() || e.output() != output ||
            e.input() != input || !has(msg, "'" + std::string(debugCheckName(check)) + "'") ||
            !has(msg, op->str()) || !has(msg, "(node " + std::to_string(node->id()) + ")") ||
            !has(msg, "tst_debug_mode.cpp:") || !has(msg, "in scope 'broken'")) {
          QTest::qFail(("unexpected finding: " + msg).c_str(), __FILE__, __LINE__);
          return std::nullopt;
        }
        if (checks->findings().empty() || checks->findings().front().message() != msg) {
          QTest::qFail("the finding is not recorded", __FILE__, __LINE__);
          return std::nullopt;
        }
        return e;
      }
    }
    return std::nullopt;
  }

 private slots:
  void testInputWrittenWithoutDestroyMap() {
    auto x = fvar("x", {U, U});
    const Tensor value = Tensor::fromDoubles(DType::Float32, {2, 2}, {1, 2, 3, 4});
    const auto e = expectFinding(std::make_shared<WritesInputOp>(), x, value,
                                 DebugCheck::InputsUnchanged, -1, 0);
    QVERIFY(e);
    const std::string msg = e->what();
    QVERIFY2(has(msg, "input 0 (x)") && has(msg, "destroyMap"), e->what());
    QVERIFY2(has(msg, "4 of 4 elements differ") && has(msg, "[0, 1]: before 2, after 0"),
             e->what());
  }

  void testInplaceKernelAgainstOutOfPlaceForm() {
    auto x = fvar("x", {U, U});
    const Tensor value = Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
    const auto e = expectFinding(std::make_shared<NeighbourSumOp>(true), x, value,
                                 DebugCheck::PerformAgain, 0, -1, {}, false, 1, true);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "out-of-place form NeighbourSum{inplace=false}"), e->what());
    // The out-of-place op itself is fine.
    auto checks = std::make_shared<DebugModeObserver>();
    auto y = std::make_shared<NeighbourSumOp>(false)->makeNode({x})->output(0);
    Function f = compile({x}, {y + 1.0}, {}, debugOptions(checks, false));
    f({value});
    QVERIFY(checks->findings().empty());
  }

  void testViewWithoutViewMap() {
    auto x = fvar("x", {U});
    const auto e = expectFinding(std::make_shared<ViewWithoutViewMapOp>(), x,
                                 randomTensor(DType::Float32, {5}, 1), DebugCheck::Aliasing, 0, 0);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "shares storage with input 0 (x)") &&
                 has(e->what(), "output float32 (5,), input float32 (5,)"),
             e->what());

    // With the aliasing check off, nothing else objects to the view.
    DebugModeOptions off;
    off.checkAliasing = false;
    auto checks = std::make_shared<DebugModeObserver>(off);
    auto x2 = fvar("x", {U});
    Function f = compile({x2}, {(*std::make_shared<ViewWithoutViewMapOp>())({x2}) * 2.0}, {},
                         debugOptions(checks));
    QCOMPARE(f({Tensor::fromDoubles(DType::Float32, {2}, {1, 2})})[0].toDoubles(),
             (std::vector<double>{2, 4}));
    QVERIFY(checks->findings().empty());
  }

  void testOutputDoesNotFitType_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("found");
    QTest::newRow("dtype") << "dtype"
                           << "float64 (2, 3)";
    QTest::newRow("rank") << "rank"
                          << "float32 (6,)";
    QTest::newRow("static dim") << "static_dim"
                                << "float32 (3, 2)";
  }
  void testOutputDoesNotFitType() {
    QFETCH(QString, kind);
    QFETCH(QString, found);
    auto x = fvar("x", {2, 3});
    DebugModeOptions options;
    options.checkPerformAgain = options.checkGarbageOutputs = options.checkStrides = false;
    const auto e =
        expectFinding(std::make_shared<WrongTypeOp>(kind.toStdString()), x,
                      randomTensor(DType::Float32, {2, 3}, 2), DebugCheck::Types, 0, -1, options);
    QVERIFY(e);
    QVERIFY2(has(e->what(),
                 "expected a value of TensorType(float32, (2, 3)), found " + found.toStdString()),
             e->what());
  }

  void testReadsGarbageOutputBuffer_data() {
    QTest::addColumn<int>("dtype");
    QTest::newRow("float32") << static_cast<int>(DType::Float32);
    QTest::newRow("int32") << static_cast<int>(DType::Int32);
  }
  void testReadsGarbageOutputBuffer() {
    QFETCH(int, dtype);
    const auto d = static_cast<DType>(dtype);
    auto x = fvar("x", {U, U}, d);
    const auto e =
        expectFinding(std::make_shared<ReadsOutputBufferOp>(), x, randomTensor(d, {3, 4}, 3, -5, 5),
                      DebugCheck::GarbageOutputs, 0, -1);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "12 of 12 elements differ") && has(e->what(), "[0, 0]: VM's run"),
             e->what());
    if (d == DType::Float32) QVERIFY2(has(e->what(), "re-run nan"), e->what());
  }

  void testReadsPreviousBufferWithKeepBuffers() {
    // The second call hands the first call's output buffer back to the op, which adds into it: the
    // VM's own result is wrong, and the re-run with fresh outputs says so.
    auto x = fvar("x", {U});
    DebugModeOptions options;
    options.checkGarbageOutputs = false;  // would object already in the first call
    const auto e =
        expectFinding(std::make_shared<ReadsOutputBufferOp>(), x,
                      Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3}), DebugCheck::PerformAgain,
                      0, -1, options, /*keepBuffers=*/true, /*calls=*/2);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "[0]: VM's run 2, re-run 1"), e->what());
  }

  void testAssumesContiguousInputs() {
    auto x = fvar("x", {U, U});
    const auto e =
        expectFinding(std::make_shared<AssumesContiguousOp>(), x,
                      randomTensor(DType::Float32, {3, 4}, 4), DebugCheck::Strides, 0, -1);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "strided copies"), e->what());

    // The transposed layout alone catches it too.
    auto t = fvar("t", {U, U});
    DebugModeOptions options;
    options.checkPerformAgain = options.checkGarbageOutputs = false;
    auto checks = std::make_shared<DebugModeObserver>(options);
    Function f =
        compile({t}, {(*std::make_shared<AssumesContiguousOp>())({t})}, {}, debugOptions(checks));
    QVERIFY_THROWS_EXCEPTION(DebugModeError, f({randomTensor(DType::Float32, {3, 4}, 5)}));
    QCOMPARE(checks->findings().size(), std::size_t(1));  // one finding per check and output
    QCOMPARE(checks->findings()[0].check, DebugCheck::Strides);
  }

  void testNanFromFiniteInputs() {
    auto x = fvar("x", {U, U});
    const auto e =
        expectFinding(std::make_shared<MakesNanOp>(), x, randomTensor(DType::Float32, {2, 3}, 6),
                      DebugCheck::NanInf, 0, -1);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "[1, 2] is nan; 1 of 6 elements are not finite"), e->what());
  }

  void testNanInputsAreNotBlamed() {
    auto checks = std::make_shared<DebugModeObserver>();
    auto x = fvar("x", {U}, DType::Float64);
    Function f = compile({x}, {tanh(x * 2.0)}, {}, debugOptions(checks));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto out = f({Tensor::fromDoubles(DType::Float64, {3}, {0, nan, 1})});
    QVERIFY(std::isnan(out[0].toDoubles()[1]));
    QVERIFY(checks->findings().empty());
    // A correct op that makes a NaN from finite inputs is still reported: log of a negative.
    Function g = compile({x}, {log(x)}, {}, debugOptions(checks));
    QVERIFY_THROWS_EXCEPTION(DebugModeError,
                             g({Tensor::fromDoubles(DType::Float64, {2}, {1, -1})}));
    QCOMPARE(checks->findings().back().check, DebugCheck::NanInf);
  }

  void testNonDeterministicPerform() {
    auto x = fvar("x", {U}, DType::Int64);
    const auto e = expectFinding(std::make_shared<CountsCallsOp>(), x,
                                 Tensor::fromDoubles(DType::Int64, {2}, {1, 5}),
                                 DebugCheck::PerformAgain, 0, -1);
    QVERIFY(e);
    QVERIFY2(has(e->what(),
                 "2 of 2 elements differ (exact comparison); [0]: VM's run 1, re-run 2; [1]: VM's "
                 "run 5, "
                 "re-run 6"),
             e->what());
  }

  void testOutputsSharingStorage() {
    auto x = fvar("x", {U});
    const auto e = expectFinding(std::make_shared<TwoOutputsOp>("shared"), x,
                                 randomTensor(DType::Float32, {4}, 7), DebugCheck::Aliasing, 0, -1);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "output 0") && has(e->what(), "and output 1") &&
                 has(e->what(), "neither views an input"),
             e->what());
  }

  void testUnusedOutputCheckedOnRerun() {
    // Output 1 has no reader, so the VM frees it before afterNode: its type is checked on the
    // fresh re-run.
    auto x = fvar("x", {U});
    const auto e = expectFinding(std::make_shared<TwoOutputsOp>("second_dtype"), x,
                                 randomTensor(DType::Float32, {4}, 8), DebugCheck::Types, 1, -1);
    QVERIFY(e);
    QVERIFY2(has(e->what(), "found float64 (4,)"), e->what());
  }

  void testFindingsCollectedWithoutRaising() {
    DebugModeOptions options;
    options.raise = false;
    auto checks = std::make_shared<DebugModeObserver>(options);
    auto x = fvar("x", {U});
    auto y = (*std::make_shared<MakesNanOp>())({(*std::make_shared<ViewWithoutViewMapOp>())({x})});
    Function f = compile({x}, {y}, {}, debugOptions(checks));
    const auto out = f({Tensor::fromDoubles(DType::Float32, {2}, {1, 2})});
    QVERIFY(std::isnan(out[0].toDoubles()[1]));
    QCOMPARE(checks->findings().size(), std::size_t(2));
    QCOMPARE(checks->findings()[0].check, DebugCheck::Aliasing);
    QCOMPARE(checks->findings()[0].nodeId, nodeNamed(f, "ViewWithoutViewMap")->id());
    QCOMPARE(checks->findings()[1].check, DebugCheck::NanInf);
    QCOMPARE(checks->findings()[1].nodeId, nodeNamed(f, "MakesNan")->id());
    QCOMPARE(checks->nodesChecked(), std::size_t(2));
  }

  void testCorrectGraphPasses_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<bool>("keepBuffers");
    QTest::newRow("float64") << static_cast<int>(DType::Float64) << false;
    QTest::newRow("float32") << static_cast<int>(DType::Float32) << false;
    QTest::newRow("float32 keepBuffers") << static_cast<int>(DType::Float32) << true;
  }
  void testCorrectGraphPasses() {
    QFETCH(int, dtype);
    QFETCH(bool, keepBuffers);
    const auto d = static_cast<DType>(dtype);
    auto x = fvar("x", {U, 5}, d), w1 = fvar("w1", {5, 6}, d), b1 = fvar("b1", {6}, d);
    auto w2 = fvar("w2", {6, 3}, d), b2 = fvar("b2", {3}, d);
    auto h = tanh(dot(x, w1) + b1);
    auto logits = dot(h, w2);
    // In place on an intermediate only this node reads: the VM overwrites dot's result, and the
    // re-runs must run on the snapshot taken before (on the overwritten buffer, b2 would be added
    // twice).
    auto shifted =
        (*std::make_shared<Elemwise>(ScalarOp::Add, std::map<int, int>{{0, 0}}))({logits, b2});
    auto probs = softmax(shifted);
    auto gram = sum(dot(transpose(h), h));  // a DimShuffle view read by a GEMM
    const std::vector<VarPtr> inputs = {x, w1, b1, w2, b2};
    const std::vector<VarPtr> outputs = {probs, gram, sum(probs, {1})};

    CompileOptions plain;
    plain.keepBuffers = keepBuffers;
    Function normal = compile(inputs, outputs, {}, plain);
    auto checks = std::make_shared<DebugModeObserver>();
    Function debug = compile(inputs, outputs, {}, debugOptions(checks, keepBuffers));
    int destroyers = 0;
    for (const Apply* node : debug.graph().nodes())
      destroyers += node->op().destroyMap().empty() ? 0 : 1;
    QCOMPARE(destroyers, 1);

    for (std::uint64_t seed = 10; seed < 12;
         ++seed) {  // a second call reuses buffers with keepBuffers
      std::vector<Tensor> args = {randomTensor(d, {4, 5}, seed), randomTensor(d, {5, 6}, seed + 1),
                                  randomTensor(d, {6}, seed + 2), randomTensor(d, {6, 3}, seed + 3),
                                  randomTensor(d, {3}, seed + 4)};
      const auto expected = normal(args);
      std::vector<Tensor> found;
      try {
        found = debug(args);
      } catch (const DebugModeError& e) {
        QFAIL(e.what());
      }
      QCOMPARE(found.size(), expected.size());
      for (std::size_t o = 0; o < found.size(); ++o)
        QVERIFY2(found[o].bitwiseEqual(expected[o]), qPrintable(QString::number(o)));
    }
    QVERIFY(checks->findings().empty());
    QCOMPARE(checks->nodesChecked(), 2 * debug.graph().nodeCount());
    // perform again + garbage for every node, strided and transposed layouts where they differ,
    // and the out-of-place form for the one in-place node (two calls).
    QVERIFY(checks->reruns() >= 2 * checks->nodesChecked());
    QVERIFY(checks->reruns() <= 4 * checks->nodesChecked() + 2);
  }

  void testFindingMessage() {
    DebugModeFinding f;
    f.check = DebugCheck::Strides;
    f.nodeId = 12;
    f.op = "Foo{k=1}";
    f.site = "model.cpp:7 (build)";
    f.scope = "encoder/layer1";
    f.output = 0;
    f.detail = "output 0 differs";
    QCOMPARE(QString::fromStdString(f.message()),
             QStringLiteral("DebugMode check 'strides' failed on Foo{k=1} (node 12), created at "
                            "model.cpp:7 (build), "
                            "in scope 'encoder/layer1': output 0 differs"));
    const DebugModeError e(f);
    QCOMPARE(e.check(), DebugCheck::Strides);
    QCOMPARE(e.nodeId(), std::int64_t(12));
    QCOMPARE(std::string(e.what()), f.message());
    QCOMPARE(debugCheckName(DebugCheck::InputsUnchanged), std::string_view("inputs_unchanged"));
  }
};

TSCOPE_TEST_MAIN(TestDebugMode)
#include "tst_debug_mode.moc"
