// NanGuard (engine/debug/nan_guard.h): each check (nan, +inf, -inf, big, per dtype; integers
// never), each action (raise, warn, pause), allow rules (an attention-style -inf mask allowed in
// its scope while a NaN elsewhere is caught), inputs and shared values checked at the start,
// updates named, every compile mode, an OpFromGraph body (the frame path), the JSON and text of a
// report, and bad options.
#include "engine/compile/function.h"
#include "engine/debug/nan_guard.h"
#include "engine/debug/nan_scan.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/ops/basic.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/vm/vm.h"
#include "nan_guard_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <cmath>
#include <limits>

// Options are written as designated initializers naming only what a case sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;
using namespace tscope::engine::debug;
using namespace tscope::engine::debug::testing;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
std::shared_ptr<NanGuard> guardWith(NanChecks checks, NanAction action = NanAction::Raise) {
  NanGuardOptions o;
  o.checks = checks;
  o.action = action;
  return std::make_shared<NanGuard>(o);
}
}  // namespace

class TestNanGuard : public QObject {
  Q_OBJECT
 private slots:
  void eachCheckFires() {
    struct Case {
      NanCheck check;
      double input;
      std::function<VarPtr(const VarPtr&)> build;
      const char* op;
    };
    const std::vector<Case> cases{
        {NanCheck::NaN, -1.0, [](const VarPtr& x) { return log(x); }, "Elemwise{log}"},
        {NanCheck::PosInf, 0.0, [](const VarPtr& x) { return 1.0 / x; }, "Elemwise{true_div}"},
        {NanCheck::NegInf, 0.0, [](const VarPtr& x) { return log(x); }, "Elemwise{log}"},
        {NanCheck::Big, 1e6, [](const VarPtr& x) { return x * x; }, "Elemwise{mul}"},
    };
    for (const Case& c : cases) {
      VarPtr x = fvar("x");
      VarPtr y = c.build(x) + 1.0;
      auto guard = guardWith(bit(c.check));
      Function f = compile({x}, {y}, {}, {.observers = {guard}});
      const NanReport r = raised(f, {ft({3}, {2.0, c.input, 3.0})});
      QCOMPARE(r.check, c.check);
      QCOMPARE(r.where, std::string("node"));
      QCOMPARE(r.node.op.substr(0, 9), std::string(c.op).substr(0, 9));
      QCOMPARE(r.firstIndex, std::vector<std::int64_t>{1});
      QCOMPARE(r.shape, std::vector<std::int64_t>{3});
      QCOMPARE(r.counts.numel, std::int64_t{3});
      QVERIFY(r.creator());
      QCOMPARE(r.chain.size(), std::size_t{1});
      // The creator's input at the offending element.
      QVERIFY(std::any_of(r.chain[0].inputs.begin(), r.chain[0].inputs.end(),
                          [&](const InputSample& s) { return s.value == c.input; }));
      // With the check off, the same call is clean.
      guard->setOptions({.checks = kAllNanChecks & ~bit(c.check)});
      if (c.check != NanCheck::NegInf && c.check != NanCheck::NaN) {
        QVERIFY(f({ft({3}, {2.0, c.input, 3.0})}).size() == 1);
      }
    }
  }

  void quickScanFindsEveryPositionAndKind() {
    // Note [One pass per value]: the vector body and the scalar tail, float32 and float64.
    for (DType d : {DType::Float32, DType::Float64, DType::Float16}) {
      for (std::int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 70}) {
        Tensor clean = Tensor::full(d, {n}, -0.5);
        QVERIFY(!quickScan(clean, true).nonFinite);
        QCOMPARE(quickScan(clean, true).maxAbs, 0.5);
        for (std::int64_t at = 0; at < n; ++at) {
          for (double bad : {std::nan(""), kInf, -kInf}) {
            Tensor t = clean.clone();
            t.set({at}, bad);
            QVERIFY2(quickScan(t, at % 2 == 0).nonFinite,
                     qPrintable(QString("n %1 at %2").arg(n).arg(at)));
          }
          Tensor big = clean.clone();
          big.set({at}, -300.0);
          QCOMPARE(quickScan(big, true).maxAbs, 300.0);
        }
      }
    }
    // Strided values are scanned too.
    Tensor m = Tensor::full(DType::Float32, {4, 6}, 1.0);
    m.set({3, 1}, std::nan(""));
    QVERIFY(quickScan(m.transpose(), false).nonFinite);
    QVERIFY(!quickScan(m.slice(0, 0, 3), false).nonFinite);
    // Note [Dense views]: a channels-last value (NCHW shape over NHWC storage, as FusedConv2d
    // writes) is scanned in storage order without a copy: every slot is seen, the last included.
    for (DType d : {DType::Float32, DType::Float64, DType::Float16}) {
      const std::int64_t N = 2, C = 3, H = 4, W = 5;
      Tensor storage = Tensor::full(d, {N * H * W * C}, 0.25);
      const Tensor nchw = storage.view({N, C, H, W}, {H * W * C, 1, W * C, C}, 0);
      QVERIFY(!nchw.isContiguous());
      QVERIFY(!quickScan(nchw, true).nonFinite);
      QCOMPARE(quickScan(nchw, true).maxAbs, 0.25);
      for (std::int64_t at : {std::int64_t{0}, std::int64_t{37}, N * H * W * C - 1}) {
        Tensor s2 = storage.clone();
        s2.set({at}, std::nan(""));
        QVERIFY(quickScan(s2.view({N, C, H, W}, {H * W * C, 1, W * C, C}, 0), false).nonFinite);
        s2.set({at}, -7.0);
        QCOMPARE(quickScan(s2.view({N, C, H, W}, {H * W * C, 1, W * C, C}, 0), true).maxAbs, 7.0);
      }
    }
    // A view with holes (every other slot; an offset slice of a permuted buffer) reads only its
    // own elements: the NaN between them is not one of its values.
    Tensor holes = Tensor::full(DType::Float32, {12}, 1.0);
    for (std::int64_t at = 1; at < 12; at += 2) holes.set({at}, std::nan(""));
    QVERIFY(!quickScan(holes.view({6}, {2}, 0), true).nonFinite);
    QVERIFY(quickScan(holes.view({6}, {2}, 1), true).nonFinite);
    QVERIFY(!quickScan(holes.view({2, 3}, {2, 4}, 0), true).nonFinite);
    Tensor cl = Tensor::full(DType::Float32, {2 * 3 * 4}, 2.0);  // (H=2, W=3, C=4) storage
    cl.set({23}, std::nan(""));  // the last channel of the last pixel
    // channels 0..2 of every pixel as (C=3, H=2, W=3): dense strides, but not one block
    QVERIFY(!quickScan(cl.view({3, 2, 3}, {1, 12, 4}, 0), true).nonFinite);
    QVERIFY(quickScan(cl.view({1, 2, 3}, {1, 12, 4}, 3), true).nonFinite);
  }

  void countsAndFirstIndexOfA2dValue() {
    VarPtr x = fvar("x", {U, U});
    VarPtr y = sqrt(x);
    auto guard = guardWith(kAllNanChecks);
    Function f = compile({x}, {y}, {}, {.observers = {guard}});
    const NanReport r = raised(f, {ft({2, 3}, {1, 4, 9, 16, -1, -2})});
    QCOMPARE(r.check, NanCheck::NaN);
    QCOMPARE(r.firstIndex, (std::vector<std::int64_t>{1, 1}));
    QVERIFY(std::isnan(r.firstValue));
    QCOMPARE(r.counts.nan, std::int64_t{2});
    QCOMPARE(r.counts.posInf, std::int64_t{0});
    QCOMPARE(r.chain[0].inputs[0].index, (std::vector<std::int64_t>{1, 1}));
    QCOMPARE(*r.chain[0].inputs[0].value, -1.0);
    const std::string text = r.toText();
    QVERIFY2(text.find("CREATED nan in Elemwise{sqrt}") != std::string::npos, text.c_str());
    QVERIFY2(text.find("[1, 1] = -1") != std::string::npos, text.c_str());
    const nlohmann::json j = r.toJson();
    QCOMPARE(j["check"].get<std::string>(), std::string("nan"));
    QCOMPARE(j["first_value"].get<std::string>(), std::string("nan"));
    QCOMPARE(j["counts"]["nan"].get<int>(), 2);
    QCOMPARE(j["chain"][0]["role"].get<std::string>(), std::string("creator"));
    QCOMPARE(j["creator"]["op"].get<std::string>(), std::string("Elemwise{sqrt}"));
  }

  void bigThresholdPerDtypeAndIntegersNeverBig() {
    // float64 with its own threshold: 1e5 is big only there.
    auto x = Variable::create(TensorType(DType::Float64, {U}), "x");
    auto guard = std::make_shared<NanGuard>(
        NanGuardOptions{.checks = bit(NanCheck::Big), .bigThresholds = {{DType::Float64, 1e4}}});
    Function f = compile({x}, {x * 10.0}, {}, {.observers = {guard}});
    const NanReport r = raised(f, {Tensor::fromDoubles(DType::Float64, {2}, {1.0, 2e3})});
    QCOMPARE(r.check, NanCheck::Big);
    QCOMPARE(r.bigThreshold, 1e4);
    QCOMPARE(r.counts.big, std::int64_t{1});
    QCOMPARE(NanGuardOptions{}.thresholdFor(DType::Float16), 1e4);
    QCOMPARE(NanGuardOptions{}.thresholdFor(DType::Float32), 1e10);
    // Integers: never nan or inf; big only when asked.
    auto i = Variable::create(TensorType(DType::Int64, {U}), "i");
    auto g2 = std::make_shared<NanGuard>(NanGuardOptions{.bigThreshold = 10});
    Function fi = compile({i}, {i * constantInt(1000)}, {}, {.observers = {g2}});
    QCOMPARE(fi({Tensor::fromDoubles(DType::Int64, {2}, {5, 7})})[0].at({1}), 7000.0);
    QCOMPARE(g2->eventCount(), std::size_t{0});
    g2->setOptions({.bigThreshold = 10, .bigForIntegers = true});
    const NanReport ri = raised(fi, {Tensor::fromDoubles(DType::Int64, {2}, {5, 7})});
    QCOMPARE(ri.check, NanCheck::Big);
  }

  void warnCollectsEveryEventAndContinues() {
    VarPtr x = fvar("x");
    VarPtr a = log(x);          // nan created
    VarPtr b = a * 3.0;         // propagated
    VarPtr c = exp(x * 100.0);  // +inf created
    auto guard = guardWith(kAllNanChecks, NanAction::Warn);
    Function f = compile({x}, {b, c}, {}, {.observers = {guard}});
    auto out = f({ft({2}, {-1.0, 10.0})});
    QCOMPARE(out.size(), std::size_t{2});
    QVERIFY(std::isnan(out[0].at({0})));
    const auto events = guard->events();
    QCOMPARE(events.size(), std::size_t{3});
    QCOMPARE(guard->eventCount(), std::size_t{3});
    int creators = 0;
    for (const NanReport& r : events) creators += r.chain.size() == 1 ? 1 : 0;
    QCOMPARE(creators, 2);
    f({ft({2}, {-1.0, 10.0})});
    QCOMPARE(guard->eventCount(), std::size_t{6});
    QCOMPARE(guard->events().back().call, std::uint64_t{2});
    guard->reset();
    QCOMPARE(guard->eventCount(), std::size_t{0});
    // maxEvents bounds what is stored, not what is counted.
    guard->setOptions({.action = NanAction::Warn, .maxEvents = 1});
    f({ft({2}, {-1.0, 10.0})});
    QCOMPARE(guard->events().size(), std::size_t{1});
    QCOMPARE(guard->eventCount(), std::size_t{3});
  }

  void pauseStopsAfterTheNode() {
    VarPtr x = fvar("x");
    VarPtr a = x * 2.0;
    VarPtr b = log(a);
    VarPtr c = b + 1.0;
    auto guard = guardWith(kAllNanChecks, NanAction::Pause);
    Function f = compile({x}, {c}, {}, {.observers = {guard}});
    Execution e = f.begin({ft({2}, {1.0, -1.0})});
    QCOMPARE(e.run(), VM::Status::Paused);
    QVERIFY(guard->hasPauseReport());
    std::optional<NanReport> r = guard->takePauseReport();
    QVERIFY(r);
    QVERIFY(!guard->takePauseReport());
    QCOMPARE(r->node.op, std::string("Elemwise{log}"));
    // The VM stopped right after the log: the next node is the add.
    QCOMPARE(e.vm().schedule().at(e.vm().pc())->op().str(), std::string("Elemwise{add}"));
    // Resuming does not pause again on the values the NaN flows into; they are events.
    QCOMPARE(e.run(), VM::Status::Finished);
    QVERIFY(std::isnan(e.finish()[0].at({1})));
    QCOMPARE(guard->eventCount(), std::size_t{2});
    QVERIFY(!guard->hasPauseReport());
  }

  void allowedMaskInItsScopeWhileANanElsewhereIsCaught() {
    VarPtr scores = fvar("scores", {U, 3});
    VarPtr masked;
    {
      NameScope a("attention");
      NameScope m("mask");
      masked = scores + constant(ft({1, 3}, {0.0, -kInf, 0.0}));
    }
    VarPtr weights = exp(masked);     // exp(-inf) = 0: fine
    VarPtr bad = log(weights - 0.5);  // log of a negative: the real bug
    {
      // Without an allow rule the mask is reported.
      auto guard = guardWith(kAllNanChecks);
      Function f = compile({scores}, {bad}, {}, {.observers = {guard}});
      const NanReport r = raised(f, {ft({1, 3}, {1.0, 1.0, -3.0})});
      QCOMPARE(r.check, NanCheck::NegInf);
      QCOMPARE(r.node.scope, std::string("attention/mask"));
      // The -inf came from the constant: the add propagates it.
      QCOMPARE(r.chain.size(), std::size_t{2});
      QCOMPARE(r.chain[0].role, ChainLink::Role::Propagator);
      QCOMPARE(r.chain[1].role, ChainLink::Role::Creator);
      QVERIFY2(r.chain[1].node.op.rfind("constant", 0) == 0, r.chain[1].node.op.c_str());
    }
    auto guard = std::make_shared<NanGuard>(
        NanGuardOptions{.allow = {AllowRule::parse("scope:attention/mask:-inf")}});
    Function f = compile({scores}, {bad}, {}, {.observers = {guard}});
    const NanReport r = raised(f, {ft({1, 3}, {1.0, 1.0, -3.0})});
    QCOMPARE(r.check, NanCheck::NaN);
    QCOMPARE(r.node.op, std::string("Elemwise{log}"));
    QCOMPARE(r.firstIndex, (std::vector<std::int64_t>{0, 1}));
    guard->reset();
    // A scope rule covers sub-scopes, not siblings with the same prefix.
    AllowRule rule = AllowRule::parse("attention:nan");
    QCOMPARE(rule.kind, AllowRule::Kind::Scope);
    QVERIFY(rule.matchesScope("attention"));
    QVERIFY(rule.matchesScope("attention/mask"));
    QVERIFY(!rule.matchesScope("attention2"));
    // Allowed by op and by node id too.
    guard->setOptions({.allow = {AllowRule::parse("op:Elemwise{log}:nan"),
                                 AllowRule::parse("scope:attention/mask:-inf")}});
    QCOMPARE(f({ft({1, 3}, {1.0, 1.0, -3.0})}).size(), std::size_t{1});
    std::int64_t logId = -1;
    for (const Apply* n : f.graph().nodes())
      if (n->op().str() == "Elemwise{log}") logId = n->id();
    guard->setOptions({.allow = {AllowRule::parse("node:" + std::to_string(logId) + ":nan"),
                                 AllowRule::parse("scope:attention/mask:-inf")}});
    QCOMPARE(f({ft({1, 3}, {1.0, 1.0, -3.0})}).size(), std::size_t{1});
    QCOMPARE(guard->eventCount(), std::size_t{0});
  }

  void inputsAndSharedValuesAreCheckedAtTheStart() {
    VarPtr x = fvar("x");
    auto w = SharedVariable::create(ft({2}, {1.0, kInf}), "w");
    VarPtr y = x * w;
    auto guard = guardWith(kAllNanChecks);
    Function f = compile({x}, {y}, {}, {.observers = {guard}});
    NanReport r = raised(f, {ft({2}, {1.0, 2.0})});
    QCOMPARE(r.where, std::string("shared"));
    QCOMPARE(r.variable, std::string("w"));
    QCOMPARE(r.check, NanCheck::PosInf);
    w->setValue(ft({2}, {1.0, 2.0}));
    r = raised(f, {ft({2}, {std::nan(""), 2.0})});
    QCOMPARE(r.where, std::string("input"));
    QCOMPARE(r.variable, std::string("x"));
    QVERIFY2(r.summary().find("input 'x'") != std::string::npos, r.summary().c_str());
    guard->setOptions({.checkInputs = false});
    // The input is not reported, but the product it makes is, with the input as its creator.
    r = raised(f, {ft({2}, {std::nan(""), 2.0})});
    QCOMPARE(r.where, std::string("node"));
  }

  void readOnlySharedValuesAreScannedOncePerBuffer() {
    VarPtr x = fvar("x");
    auto w = SharedVariable::create(ft({2}, {1.0, 2.0}), "w");
    auto guard = guardWith(kAllNanChecks);
    Function f = compile({x}, {x * w}, {}, {.observers = {guard}});
    f({ft({2}, {1.0, 2.0})});
    const auto first = guard->valuesChecked();
    f({ft({2}, {1.0, 2.0})});
    const auto second = guard->valuesChecked() - first;
    QCOMPARE(second, first - 1);  // w was not scanned again
    // A new value (a new buffer) is scanned again.
    w->setValue(ft({2}, {1.0, std::nan("")}));
    const NanReport r = raised(f, {ft({2}, {1.0, 2.0})});
    QCOMPARE(r.where, std::string("shared"));
  }

  void updateIsNamedBeforeItIsWritten() {
    VarPtr x = fvar("x");
    auto w = SharedVariable::create(ft({2}, {1.0, 2.0}), "w");
    auto guard = guardWith(kAllNanChecks);
    Function f = compile({x}, {x + w}, {{w, w / x}}, {.observers = {guard}});
    const NanReport r = raised(f, {ft({2}, {1.0, 0.0})});
    QCOMPARE(r.where, std::string("update"));
    QCOMPARE(r.updateOf, std::string("w"));
    QVERIFY2(r.summary().find("the update of 'w'") != std::string::npos, r.summary().c_str());
    QCOMPARE(w->value().at({1}), 2.0);  // not written
  }

  void everyModeNamesTheLog() {
    for (Mode mode : {Mode::None, Mode::FastCompile, Mode::FastRun, Mode::Debug}) {
      VarPtr x = fvar("x");
      VarPtr y;
      {
        NameScope s("layer3");
        y = tanh(log(x) * 2.0 + 1.0);
      }
      Function plain = compile({x}, {y});
      auto guard = guardWith(kAllNanChecks);
      CompileOptions opts{.mode = mode, .observers = {guard}};
      opts.debug.checkNanInf = false;  // DebugMode would report the NaN itself
      Function f = compile({x}, {y}, {}, opts);
      guard->watch(f, &plain.graph());
      const NanReport r = raised(f, {ft({3}, {1.0, -1.0, 2.0})});
      const QString what = QString::fromStdString(std::string(modeName(mode)) + ": " + r.summary());
      QVERIFY2(r.check == NanCheck::NaN, qPrintable(what));
      QVERIFY2(r.creator(), qPrintable(what));
      QVERIFY2(r.creator()->node.op == "Elemwise{log}", qPrintable(what));
      QVERIFY2(r.creator()->node.scope == "layer3", qPrintable(what));
      QVERIFY2(r.firstIndex == std::vector<std::int64_t>{1}, qPrintable(what));
    }
  }

  void innerGraphNodesCarryTheirFrame() {
    VarPtr a = fvar("a");
    auto body = opFromGraph({a}, {sqrt(a) * 2.0}, "block");
    VarPtr x = fvar("x");
    VarPtr y = (*body)({x * 1.0});
    auto guard = guardWith(kAllNanChecks);
    Function f = compile({x}, {y + 1.0}, {}, {.observers = {guard}});
    std::int64_t outer = -1;
    for (const Apply* n : f.graph().nodes())
      if (n->op().innerGraph()) outer = n->id();
    QVERIFY(outer >= 0);
    const NanReport r = raised(f, {ft({2}, {4.0, -4.0})});
    QCOMPARE(r.node.op, std::string("Elemwise{sqrt}"));
    QCOMPARE(r.node.frames, std::vector<std::int64_t>{outer});
    QVERIFY(r.creator());
    QVERIFY2(r.toText().find("in frame " + std::to_string(outer)) != std::string::npos,
             r.toText().c_str());
    // Warn: the outer node's bad output links back into its frame, it is no new creator.
    guard->setOptions({.action = NanAction::Warn});
    f({ft({2}, {4.0, -4.0})});
    bool outerSeen = false;
    for (const NanReport& e : guard->events())
      if (e.node.id == outer && e.node.frames.empty()) {
        outerSeen = true;
        QVERIFY(e.creator());
        QCOMPARE(e.creator()->node.op, std::string("Elemwise{sqrt}"));
      }
    QVERIFY(outerSeen);
  }

  void disabledGuardDoesNothing() {
    VarPtr x = fvar("x");
    auto guard = guardWith(kAllNanChecks);
    Function f = compile({x}, {log(x)}, {}, {.observers = {guard}});
    guard->setEnabled(false);
    QVERIFY(std::isnan(f({ft({1}, {-1.0})})[0].at({0})));
    QCOMPARE(guard->calls(), std::uint64_t{0});
    guard->setEnabled(true);
    raised(f, {ft({1}, {-1.0})});
    QCOMPARE(guard->calls(), std::uint64_t{1});
    QVERIFY(guard->valuesChecked() >= 2);
  }

  void badOptionsAreClearErrors() {
    auto expectError = [](const std::function<void()>& fn, const std::string& part) {
      try {
        fn();
      } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find(part) != std::string::npos, msg.c_str());
        return;
      }
      QFAIL(("expected std::invalid_argument mentioning " + part).c_str());
    };
    expectError([] { AllowRule::parse("attention/mask"); }, "no ':CHECKS' part");
    expectError([] { AllowRule::parse("scope::nan"); }, "the target is empty");
    expectError([] { AllowRule::parse("scope:a:"); }, "no checks");
    expectError([] { AllowRule::parse("scope:a:nann"); }, "unknown NanGuard check 'nann'");
    expectError([] { AllowRule::parse("node:x1:nan"); }, "node id 'x1'");
    expectError([] { AllowRule::parse("node:-3:nan"); }, "node id '-3'");
    expectError([] { parseChecks("nan,,inf"); }, "unknown NanGuard check ''");
    expectError([] { parseAction("explode"); }, "expected raise, warn or pause");
    expectError([] { NanGuard g(NanGuardOptions{.bigThreshold = -1}); }, "big threshold");
    expectError([] { NanGuard g(NanGuardOptions{.bigThreshold = std::nan("")}); }, "big threshold");
    expectError(
        [] {
          NanGuard g(NanGuardOptions{.bigThresholds = {{DType::Float16, 0.0}}});
        },
        "for float16");
    QCOMPARE(parseChecks("nan,inf,big"), kAllNanChecks);
    QCOMPARE(parseChecks("-inf"), bit(NanCheck::NegInf));
    QCOMPARE(checksText(parseChecks("all")), std::string("nan,+inf,-inf,big"));
    QCOMPARE(AllowRule::parse("var:my:var:nan").target, std::string("my:var"));
    QCOMPARE(AllowRule::parse("node:7:inf").str(), std::string("node:7:+inf,-inf"));
  }
};

TSCOPE_TEST_MAIN(TestNanGuard)
#include "tst_nan_guard.moc"
