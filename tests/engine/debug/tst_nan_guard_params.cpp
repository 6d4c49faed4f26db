// NanGuard and the parameters (Note [NanGuard actions], Function's Note [Parameters stay whole]):
// an MLP SGD step whose learning rate explodes, compiled with fast_run so that updates run in
// place on the weights, leaves every shared variable exactly as before a call the guard raised in
// or paused and abandoned; and a replay file (NanGuardOptions::saveFailure) loaded and run again
// through runGraph reproduces the same report.
#include "engine/compile/function.h"
#include "engine/debug/failure.h"
#include "engine/debug/nan_guard.h"
#include "engine/grad/grad.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/session/run_graph.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <random>

// Options are written as designated initializers naming only what a case sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;
using namespace tscope::engine::debug;

namespace {
constexpr std::int64_t U = kUnknownDim;

Tensor uniform(std::mt19937& rng, Shape shape, float limit) {
  std::uniform_real_distribution<float> d(-limit, limit);
  Tensor t = Tensor::empty(DType::Float32, shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// An MLP 20-16-4 trained by SGD with the learning rate as an input.
struct Mlp {
  std::mt19937 rng{7};
  VarPtr x = Variable::create(TensorType(DType::Float32, {U, 20}), "x");
  VarPtr y = Variable::create(TensorType(DType::Int64, {U}), "y");
  VarPtr lr = Variable::create(TensorType(DType::Float32, {}), "lr");
  std::shared_ptr<SharedVariable> W1 = SharedVariable::create(uniform(rng, {20, 16}, 0.3f), "W1");
  std::shared_ptr<SharedVariable> b1 =
      SharedVariable::create(Tensor::zeros(DType::Float32, {16}), "b1");
  std::shared_ptr<SharedVariable> W2 = SharedVariable::create(uniform(rng, {16, 4}, 0.3f), "W2");
  std::shared_ptr<SharedVariable> b2 =
      SharedVariable::create(Tensor::zeros(DType::Float32, {4}), "b2");
  VarPtr loss;
  std::vector<Update> updates;
  Tensor xb, yb;
  Mlp() {
    VarPtr h;
    {
      NameScope s("layer1");
      h = tanh(dot(x, W1) + b1);
    }
    {
      NameScope s("layer2");
      loss = mean(softmaxCrossEntropyWithLogits(dot(h, W2) + b2, y));
    }
    auto g = grad(loss, std::vector<VarPtr>{W1, b1, W2, b2});
    updates = {
        {W1, W1 - g[0] * lr}, {b1, b1 - g[1] * lr}, {W2, W2 - g[2] * lr}, {b2, b2 - g[3] * lr}};
    xb = uniform(rng, {8, 20}, 1.0f);
    yb = Tensor::empty(DType::Int64, {8});
    for (std::int64_t i = 0; i < 8; ++i) yb.data<std::int64_t>()[i] = i % 4;
  }
  std::vector<Tensor> args(double rate) const {
    return {xb, yb, Tensor::scalar(DType::Float32, rate)};
  }
  std::vector<Tensor> params() const {
    return {W1->value().clone(), b1->value().clone(), W2->value().clone(), b2->value().clone()};
  }
  bool paramsEqual(const std::vector<Tensor>& before) const {
    const std::vector<Tensor> now{W1->value(), b1->value(), W2->value(), b2->value()};
    for (std::size_t i = 0; i < now.size(); ++i)
      if (!now[i].bitwiseEqual(before[i])) return false;
    return true;
  }
};

// Whether a node of f overwrites a shared variable's buffer in place.
bool updatesInPlace(const Function& f) {
  for (const Apply* n : f.graph().nodes())
    for (const auto& [out, ins] : n->op().destroyMap())
      for (int i : ins)
        if (n->input(i)->kind() == Variable::Kind::Shared) return true;
  return false;
}
}  // namespace

class TestNanGuardParams : public QObject {
  Q_OBJECT
 private slots:
  void parametersUnchangedAfterARaiseWithInplaceUpdates() {
    Mlp m;
    // A large learning rate is allowed as such: what is caught is the update it makes.
    auto guard =
        std::make_shared<NanGuard>(NanGuardOptions{.allow = {AllowRule::parse("var:lr:big")}});
    Function step = compile({m.x, m.y, m.lr}, {m.loss}, m.updates,
                            {.mode = Mode::FastRun, .observers = {guard}});
    QVERIFY2(updatesInPlace(step), "fast_run updates a weight in place (the case that matters)");
    Function plain = compile({m.x, m.y, m.lr}, {m.loss}, m.updates);
    guard->watch(step, &plain.graph());
    // Healthy steps change the weights.
    std::vector<Tensor> start = m.params();
    step(m.args(0.1));
    QVERIFY(!m.paramsEqual(start));
    // The learning rate explodes: the update of some weight overflows.
    const std::vector<Tensor> before = m.params();
    NanReport report;
    try {
      step(m.args(1e14));
      QFAIL("expected a NanGuardError");
    } catch (const NanGuardError& e) {
      report = e.report();
    }
    qInfo("%s", report.toText().c_str());
    // Named as the user wrote it (the forward node of this gradient, at the user's line), and
    // what the rewrites made it from.
    QVERIFY2(report.node.gradientOf.find("gradient of ") == 0 &&
                 report.node.gradientOf.find("tst_nan_guard_params.cpp") != std::string::npos,
             report.summary().c_str());
    QVERIFY2(!report.node.rewrittenFrom.empty(), report.summary().c_str());
    QVERIFY(report.creator() && report.creator()->node.op == "input 'lr'");
    QVERIFY2(report.check == NanCheck::Big || report.check == NanCheck::PosInf ||
                 report.check == NanCheck::NegInf,
             report.summary().c_str());
    QVERIFY2(m.paramsEqual(before), "a raised call leaves every parameter as it was");
    // The function is reusable, with the same parameters.
    step(m.args(0.1));
    QVERIFY(!m.paramsEqual(before));
  }

  // Note [Guarded updates]: healthy steps prove that nothing from the first in-place update on can
  // raise, so the guard copies no weight.
  void healthyStepsCopyNoWeight() {
    Mlp m;
    auto guard = std::make_shared<NanGuard>();
    Function step = compile({m.x, m.y, m.lr}, {m.loss}, m.updates,
                            {.mode = Mode::FastRun, .observers = {guard}});
    QVERIFY(updatesInPlace(step));
    QVERIFY2(!guard->mayInterrupt(), "with Raise the guard keeps the parameters itself");
    for (int i = 0; i < 3; ++i) step(m.args(0.1));
    QCOMPARE(guard->parameterCopies(), std::uint64_t{0});
    QVERIFY(guard->valuesProven() > 0);
    // Without the proofs every step copies the weights it updates in place.
    guard->setOptions({.proveClean = false});
    const std::uint64_t copies = guard->parameterCopies();
    step(m.args(0.1));
    QVERIFY(guard->parameterCopies() > copies);
  }

  // Note [Guarded updates]: an in-place update whose bound exceeds the threshold is copied before
  // it runs; when it then raises, the copy is put back; a provable one is not copied.
  void guardedUpdateIsRestoredByTheRaise() {
    VarPtr x = Variable::create(TensorType(DType::Float32, {3}), "x");
    auto W = SharedVariable::create(Tensor::fromDoubles(DType::Float32, {3}, {1e6, 2e6, 3e6}), "W");
    auto guard = std::make_shared<NanGuard>();
    Function f =
        compile({x}, {sum(x)}, {{W, W * x}}, {.mode = Mode::FastRun, .observers = {guard}});
    QVERIFY2(updatesInPlace(f), "fast_run multiplies W in place");
    const Tensor before = W->value().clone();
    try {
      f({Tensor::fromDoubles(DType::Float32, {3}, {1.0, 1e5, 1.0})});  // 2e11: big
      QFAIL("expected a NanGuardError");
    } catch (const NanGuardError& e) {
      QVERIFY2(e.report().check == NanCheck::Big, e.report().summary().c_str());
      QCOMPARE(e.report().where, std::string("update"));
    }
    QCOMPARE(guard->parameterCopies(), std::uint64_t{1});
    QVERIFY2(W->value().bitwiseEqual(before), "the raise put the overwritten weight back");
    // A provable update: no copy, and it is applied.
    f({Tensor::fromDoubles(DType::Float32, {3}, {2.0, 2.0, 2.0})});
    QCOMPARE(guard->parameterCopies(), std::uint64_t{1});
    QCOMPARE(W->value().at({2}), 6e6);
  }

  void parametersUnchangedAfterAnAbandonedPause() {
    Mlp m;
    auto guard = std::make_shared<NanGuard>(NanGuardOptions{.action = NanAction::Pause});
    Function step = compile({m.x, m.y, m.lr}, {m.loss}, m.updates,
                            {.mode = Mode::FastRun, .observers = {guard}});
    const std::vector<Tensor> before = m.params();
    {
      Execution e = step.begin(m.args(1e38));
      QCOMPARE(e.run(), VM::Status::Paused);
      QVERIFY(guard->takePauseReport());
      // Run on past the pause up to the end, then abandon without finish().
      while (e.run() == VM::Status::Paused) {
      }
    }
    QVERIFY2(m.paramsEqual(before), "an abandoned call leaves every parameter as it was");
    // Without the guard in the way, a finished call applies the updates.
    guard->setEnabled(false);
    step(m.args(0.1));
    QVERIFY(!m.paramsEqual(before));
  }

  void replayFileReproducesTheEvent() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("failure.tsg").toStdString();
    Mlp m;
    // The original graph, with the ids compile's clone keeps: a function with mode none.
    Function plain = compile({m.x, m.y, m.lr}, {m.loss}, m.updates);
    auto guard = std::make_shared<NanGuard>(NanGuardOptions{.saveFailure = path});
    Function step = compile({m.x, m.y, m.lr}, {m.loss}, m.updates,
                            {.mode = Mode::FastRun, .observers = {guard}});
    guard->watch(step, &plain.graph());
    step(m.args(0.1));
    QVERIFY(guard->lastFailureFile().empty());
    NanReport first;
    try {
      step(m.args(1e38));
      QFAIL("expected a NanGuardError");
    } catch (const NanGuardError& e) {
      first = e.report();
    }
    QCOMPARE(guard->lastFailureFile(), path);
    // The file: the graph, the call's inputs as test values, the weights as of the call's start.
    io::TsgDocument doc = io::loadTsg(path);
    QVERIFY(doc.producer.contains("nan_report"));
    QCOMPARE(doc.producer["nan_report"]["check"].get<std::string>(),
             std::string(checkName(first.check)));
    int withValues = 0;
    for (const VarPtr& in : doc.original->inputs()) {
      if (in->kind() == Variable::Kind::Shared) {
        const auto& sv = static_cast<const SharedVariable&>(*in);
        if (sv.name() == "W1") QVERIFY(sv.value().bitwiseEqual(m.W1->value()));
        continue;
      }
      QVERIFY2(in->testValue().has_value(), in->displayName().c_str());
      ++withValues;
    }
    QCOMPARE(withValues, 3);
    // Run again with the guard: the same event.
    session::RunInputs run;
    run.mode = Mode::FastRun;
    run.nanGuard = NanGuardOptions{};
    run.reportJson = dir.filePath("report.json").toStdString();
    NanReport again;
    try {
      session::runGraph(*doc.original, run);
      QFAIL("expected the replay to raise");
    } catch (const NanGuardError& e) {
      again = e.report();
    }
    QCOMPARE(again.check, first.check);
    QCOMPARE(again.node.op, first.node.op);
    QCOMPARE(again.node.scope, first.node.scope);
    QCOMPARE(again.firstIndex, first.firstIndex);
    QCOMPARE(again.counts, first.counts);
    QCOMPARE(again.firstValue, first.firstValue);
    QCOMPARE(again.where, first.where);
    QCOMPARE(again.variable, first.variable);
    QCOMPARE(again.chain.size(), first.chain.size());
    if (first.creator()) {
      QVERIFY(again.creator());
      QCOMPARE(again.creator()->node.op, first.creator()->node.op);
      QCOMPARE(again.creator()->node.gradientOf, first.creator()->node.gradientOf);
    }
    QFile json(dir.filePath("report.json"));
    QVERIFY(json.open(QIODevice::ReadOnly));
    const auto j = nlohmann::json::parse(json.readAll().toStdString());
    QCOMPARE(j["outcome"].get<std::string>(), std::string("nan"));
    QCOMPARE(j["events"][0]["check"].get<std::string>(), std::string(checkName(first.check)));
  }

  void saveReplayRejectsValuesThatDoNotFit() {
    VarPtr x = Variable::create(TensorType(DType::Float32, {U}), "x");
    FunctionGraph fg({x}, {x * 2.0});
    QTemporaryDir dir;
    const std::string path = dir.filePath("r.tsg").toStdString();
    try {
      saveReplay(path, fg, {});
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("'x' has none") != std::string::npos, e.what());
    }
    try {
      saveReplay(path, fg, {Tensor::zeros(DType::Float32, {2, 2})});
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("input 'x'") != std::string::npos, e.what());
    }
    saveReplay(path, fg, {Tensor::zeros(DType::Float32, {3})});
    QVERIFY(io::loadTsg(path).original->inputs()[0]->testValue());
  }
};

TSCOPE_TEST_MAIN(TestNanGuardParams)
#include "tst_nan_guard_params.moc"
