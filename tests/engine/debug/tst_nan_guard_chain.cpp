// The root-cause chain of NanGuard (Note [Root-cause chain]): a NaN created in the middle and
// propagated, a NaN made from an Inf created two nodes earlier while the inf checks are off
// (creator and converter named apart), a NaN created inside a fused Composite named as the
// original log (Note [Fused code keeps names]), and a NaN in a gradient named after the forward
// node (Note [Gradient origin]), with the origin kept by clones and .tsg round trips.
#include "engine/compile/function.h"
#include "engine/debug/nan_guard.h"
#include "engine/grad/grad.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/traversal.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/reduce/reduce.h"
#include "nan_guard_test_support.h"
#include "test_main.h"

#include <cmath>

// Options are written as designated initializers naming only what a case sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;
using namespace tscope::engine::debug;
using namespace tscope::engine::debug::testing;

class TestNanGuardChain : public QObject {
  Q_OBJECT
 private slots:
  void nanStartsInTheMiddle() {
    VarPtr x = fvar("x");
    VarPtr a = x * 2.0;
    VarPtr b;
    {
      NameScope s("layer3");
      NameScope fc("fc");
      b = log(a - 10.0);  // the creator
    }
    VarPtr c = b * 3.0;
    VarPtr d = c + 1.0;
    auto guard = std::make_shared<NanGuard>(NanGuardOptions{.action = NanAction::Warn});
    Function f = compile({x}, {d}, {}, {.observers = {guard}});
    f({ft({3}, {8.0, 3.0, 9.0})});
    const auto events = guard->events();
    QCOMPARE(events.size(), std::size_t{3});  // log, mul, add
    const NanReport& r = events.back();
    QCOMPARE(r.node.op, std::string("Elemwise{add}"));
    QCOMPARE(r.chain.size(), std::size_t{3});
    QCOMPARE(r.chain[0].role, ChainLink::Role::Propagator);
    QCOMPARE(r.chain[1].role, ChainLink::Role::Propagator);
    QCOMPARE(r.chain[1].node.op, std::string("Elemwise{mul}"));
    const ChainLink& creator = r.chain[2];
    QCOMPARE(creator.role, ChainLink::Role::Creator);
    QCOMPARE(creator.node.op, std::string("Elemwise{log}"));
    QCOMPARE(creator.node.scope, std::string("layer3/fc"));
    QCOMPARE(creator.firstIndex, std::vector<std::int64_t>{1});
    // "Log at layer3/fc: input[1] = -4".
    QCOMPARE(creator.inputs.size(), std::size_t{1});
    QCOMPARE(creator.inputs[0].index, std::vector<std::int64_t>{1});
    QCOMPARE(*creator.inputs[0].value, -4.0);
    QVERIFY(!creator.inputs[0].bad);
    QVERIFY2(creator.node.site.find("tst_nan_guard_chain.cpp") != std::string::npos,
             creator.node.site.c_str());
    const std::string text = r.toText();
    QVERIFY2(text.find("propagated nan in Elemwise{mul}") != std::string::npos, text.c_str());
    QVERIFY2(text.find("* CREATED nan in Elemwise{log}") != std::string::npos, text.c_str());
    QVERIFY2(r.summary().find("created by Elemwise{log}") != std::string::npos,
             r.summary().c_str());
    const auto j = r.toJson();
    QCOMPARE(j["chain"][2]["role"].get<std::string>(), std::string("creator"));
    QCOMPARE(j["chain"][0]["role"].get<std::string>(), std::string("propagator"));
    QCOMPARE(j["chain"][2]["inputs"][0]["value"].get<double>(), -4.0);
  }

  void nanFromAnInfTwoNodesEarlier() {
    VarPtr x = fvar("x");
    VarPtr a;
    {
      NameScope s("encoder");
      a = exp(x * 100.0);  // +inf created here (not reported: inf checks are off)
    }
    VarPtr b = a * 2.0;  // +inf propagated
    VarPtr c = b - b;    // inf - inf = nan: converted here
    VarPtr d = c + 1.0;
    auto guard = std::make_shared<NanGuard>(NanGuardOptions{.checks = bit(NanCheck::NaN)});
    Function f = compile({x}, {d}, {}, {.observers = {guard}});
    const NanReport r = raised(f, {ft({2}, {0.01, 10.0})});
    QCOMPARE(r.check, NanCheck::NaN);
    QCOMPARE(r.node.op, std::string("Elemwise{sub}"));
    QCOMPARE(r.firstIndex, std::vector<std::int64_t>{1});
    QCOMPARE(r.chain.size(), std::size_t{3});
    QCOMPARE(r.chain[0].role, ChainLink::Role::Converter);
    QCOMPARE(r.chain[0].firstKind, NanCheck::NaN);
    QCOMPARE(r.chain[1].role, ChainLink::Role::Propagator);
    QCOMPARE(r.chain[1].firstKind, NanCheck::PosInf);
    QCOMPARE(r.chain[2].role, ChainLink::Role::Creator);
    QCOMPARE(r.chain[2].firstKind, NanCheck::PosInf);
    QCOMPARE(r.chain[2].node.op, std::string("Elemwise{exp}"));
    QCOMPARE(r.chain[2].node.scope, std::string("encoder"));
    QCOMPARE(*r.chain[2].inputs[0].value, 1000.0);
    QVERIFY(r.creator());
    const std::string text = r.toText();
    QVERIFY2(text.find("* CONVERTED to nan in Elemwise{sub}") != std::string::npos, text.c_str());
    QVERIFY2(text.find("* CREATED +inf in Elemwise{exp}") != std::string::npos, text.c_str());
    QCOMPARE(r.toJson()["chain"][0]["role"].get<std::string>(), std::string("converter"));
  }

  void createdInsideAFusedComposite() {
    VarPtr x = fvar("x");
    VarPtr y;
    {
      NameScope s("layer3");
      y = tanh(tanh(log(x) * 2.0 + 1.0) * 0.5);
    }
    Function plain = compile({x}, {y});
    std::int64_t logId = -1;
    for (const Apply* n : plain.graph().nodes())
      if (n->op().str() == "Elemwise{log}") logId = n->id();
    auto guard = std::make_shared<NanGuard>();
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun, .observers = {guard}});
    const Apply* comp = nullptr;
    int nodes = 0;
    for (const Apply* n : fast.graph().nodes()) {
      ++nodes;
      if (dynamic_cast<const Composite*>(&n->op())) comp = n;
    }
    QVERIFY2(comp && nodes == 1, "fast_run folds the log into the tanh chain: one Composite");
    // Without the original graph: the inner op is named, with the Composite it ran in.
    NanReport r = raised(fast, {ft({3}, {1.0, 2.0, -1.0})});
    QVERIFY(r.creator());
    QCOMPARE(r.creator()->node.op, std::string("Elemwise{log}"));
    QVERIFY2(r.creator()->node.fusedInto.find("Composite{") == 0,
             r.creator()->node.fusedInto.c_str());
    QVERIFY(r.creator()->node.fusedInto.find("node " + std::to_string(comp->id())) !=
            std::string::npos);
    QCOMPARE(r.firstIndex, std::vector<std::int64_t>{2});
    // The log's operand at the offending element.
    QCOMPARE(*r.creator()->inputs.at(0).value, -1.0);
    // With the original graph: the original node, its scope and site.
    guard->watch(fast, &plain.graph());
    r = raised(fast, {ft({3}, {1.0, 2.0, -1.0})});
    QCOMPARE(r.creator()->node.originalId, logId);
    QCOMPARE(r.creator()->node.scope, std::string("layer3"));
    QVERIFY(r.creator()->node.site.find("tst_nan_guard_chain.cpp") != std::string::npos);
    const std::string text = r.toText();
    QVERIFY2(text.find("Elemwise{log} at layer3") != std::string::npos, text.c_str());
    QVERIFY2(text.find("[fused into Composite{") != std::string::npos, text.c_str());
    QCOMPARE(r.toJson()["creator"]["original_id"].get<std::int64_t>(), logId);
    // An allow rule on the original op covers it inside the Composite.
    guard->setOptions({.allow = {AllowRule::parse("op:Elemwise{log}:nan")}});
    QCOMPARE(fast({ft({3}, {1.0, 2.0, -1.0})}).size(), std::size_t{1});
  }

  void inplaceFusedCreatorKeepsItsInputs() {
    // The Composite overwrites the Dot's output in place (Note [Inplace inputs]).
    VarPtr x = fvar("x", {U, 2});
    auto W = SharedVariable::create(ft({2, 2}, {1.0, 0.0, 0.0, -1.0}), "W");
    VarPtr y;
    {
      NameScope s("head");
      y = tanh(log(dot(x, W)) * 0.5);
    }
    Function plain = compile({x}, {y});
    auto guard = std::make_shared<NanGuard>();
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun, .observers = {guard}});
    guard->watch(fast, &plain.graph());
    bool inplace = false;
    for (const Apply* n : fast.graph().nodes())
      if (dynamic_cast<const Composite*>(&n->op()) && !n->op().destroyMap().empty()) inplace = true;
    if (!inplace) QSKIP("fast_run made no inplace Composite here");
    NanReport r = raised(fast, {ft({1, 2}, {2.0, 3.0})});  // dot = [2, -3]: log(-3)
    QVERIFY(r.creator());
    QCOMPARE(r.creator()->node.op, std::string("Elemwise{log}"));
    QCOMPARE(r.creator()->node.scope, std::string("head"));
    QCOMPARE(*r.creator()->inputs.at(0).value, -3.0);
    QCOMPARE(r.creator()->inputs.at(0).index, (std::vector<std::int64_t>{0, 1}));
    // Without the copies, the report says the input is gone and names the Composite.
    guard->setOptions({.explainInplace = false});
    r = raised(fast, {ft({1, 2}, {2.0, 3.0})});
    QVERIFY(r.creator());
    QVERIFY2(r.creator()->node.op.rfind("Composite{", 0) == 0, r.creator()->node.op.c_str());
    QCOMPARE(r.creator()->inputs.at(0).summary, std::string("overwritten in place by the node"));
  }

  void gradientNamesTheForwardNode() {
    VarPtr x = fvar("x");
    VarPtr h;
    {
      NameScope s("encoder");
      NameScope attn("attn");
      h = sqrt(x);
    }
    VarPtr cost = sum(h * 3.0);
    VarPtr gx = grad(cost, x);
    // Every node the pullbacks built names its forward node.
    int tagged = 0;
    for (const Apply* n : ancestorNodes(std::vector<VarPtr>{gx}))
      if (n->gradientOf()) ++tagged;
    QVERIFY(tagged > 0);
    QVERIFY(!h->owner()->gradientOf());  // forward nodes are not gradients
    auto guard = std::make_shared<NanGuard>();
    Function f = compile({x}, {gx}, {}, {.observers = {guard}});
    const NanReport r = raised(f, {ft({2}, {4.0, 0.0})});  // d sqrt(x)/dx = inf at 0
    QCOMPARE(r.firstIndex, std::vector<std::int64_t>{1});
    QVERIFY(r.creator());
    const std::string g = r.creator()->node.gradientOf;
    QVERIFY2(g.find("gradient of Elemwise{sqrt} at encoder/attn (created at "
                    "tst_nan_guard_chain.cpp:") == 0,
             g.c_str());
    QVERIFY2(r.toText().find("gradient of Elemwise{sqrt}") != std::string::npos,
             r.toText().c_str());
    // fast_run fuses the gradient chain; the name survives through the original graph.
    Function plain = compile({x}, {gx});
    auto g2 = std::make_shared<NanGuard>();
    Function fast = compile({x}, {gx}, {}, {.mode = Mode::FastRun, .observers = {g2}});
    g2->watch(fast, &plain.graph());
    const NanReport rf = raised(fast, {ft({2}, {4.0, 0.0})});
    QVERIFY(rf.creator());
    QVERIFY2(rf.creator()->node.gradientOf.find("gradient of Elemwise{sqrt}") == 0,
             rf.summary().c_str());
  }

  void ropNodesAreTaggedToo() {
    VarPtr x = fvar("x");
    VarPtr v = fvar("v");
    VarPtr y = exp(x) * 2.0;
    VarPtr jv = Rop({y}, {x}, {v})[0];
    bool found = false;
    for (const Apply* n : ancestorNodes(std::vector<VarPtr>{jv}))
      if (n->gradientOf() && n->gradientOf()->kind == "rop" &&
          n->gradientOf()->op == "Elemwise{exp}")
        found = true;
    QVERIFY(found);
  }

  void gradientOriginSurvivesCloneAndTsg() {
    VarPtr x = fvar("x");
    VarPtr h;
    {
      NameScope s("enc");
      h = exp(x);
    }
    VarPtr gx = grad(sum(h), x);
    FunctionGraph fg({x}, {gx});
    int tagged = 0, ofExp = 0;
    for (const Apply* n : fg.nodes())
      if (n->gradientOf()) {
        ++tagged;  // the gradient of exp, and of the sum (its broadcast back)
        if (n->gradientOf()->op == "Elemwise{exp}") {
          ++ofExp;
          QCOMPARE(n->gradientOf()->scope, std::string("enc"));
        }
      }
    QVERIFY(ofExp > 0);
    QVERIFY(tagged > 0);
    io::TsgDocument doc;
    doc.original = fg.clone();
    const std::string text = io::writeTsg(doc);
    QVERIFY(text.find("\"gradient_of\"") != std::string::npos);
    io::TsgDocument back = io::readTsg(text);
    int tagged2 = 0;
    for (const Apply* n : back.original->nodes())
      if (const auto& g = n->gradientOf()) {
        ++tagged2;
        QCOMPARE(g->kind, std::string("grad"));
        QVERIFY(g->site.file.str().find("tst_nan_guard_chain.cpp") != std::string::npos);
        const Apply* orig = fg.nodeById(n->id());
        QVERIFY(orig && orig->gradientOf() && *orig->gradientOf() == *g);
      }
    QCOMPARE(tagged2, tagged);
    // A bad kind is a clear error.
    std::string broken = text;
    const auto origin = broken.find("\"gradient_of\"");
    const auto at = broken.find("\"grad\"", origin);
    QVERIFY(origin != std::string::npos && at != std::string::npos);
    broken.replace(at, 6, "\"oops\"");
    try {
      io::readTsg(broken);
      QFAIL("expected a TsgError");
    } catch (const io::TsgError& e) {
      QVERIFY2(std::string(e.what()).find("\"grad\" or \"rop\"") != std::string::npos, e.what());
    }
  }
};

TSCOPE_TEST_MAIN(TestNanGuardChain)
#include "tst_nan_guard_chain.moc"
