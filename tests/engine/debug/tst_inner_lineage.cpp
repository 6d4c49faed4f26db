// Lineage inside inner graphs (Note [Inner lineage] in engine/debug/lineage.h): compile keeps the
// rewrite log of every OpFromGraph body and IfElse branch it optimizes
// (engine/compile/inner_log.h); NodeLineage built from the program maps a body's original nodes
// onto its optimized nodes (a log fused into a tanh chain maps onto the body's Composite), two
// bodies deep; a breakpoint set on an original inner node ("node:5/12", onOriginalGraph) breaks on
// the optimized inner node, in its frame, and says so; NanGuard names the original inner node as
// the creator when a fused node inside a body made the NaN; bad paths are refused naming the step.
#include "engine/compile/function.h"
#include "engine/debug/breakpoints.h"
#include "engine/debug/debug_session.h"
#include "engine/debug/lineage.h"
#include "engine/debug/nan_guard.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/source_site.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/reduce/reduce.h"
#include "session_test_support.h"
#include "test_main.h"

#include <chrono>
#include <future>

// Options are written as designated initializers naming only what a case sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;
using namespace tscope::engine::debug;
using tscope::test::errorOf;
using tscope::test::get;

namespace {

constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name) {
  return Variable::create(TensorType(DType::Float32, {U}), name);
}
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}
std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

// The one node of g with this op str (or op class), else null.
const Apply* only(const FunctionGraph& g, const std::function<bool(const Apply&)>& pred) {
  const Apply* found = nullptr;
  int n = 0;
  for (const Apply* a : g.nodes())
    if (pred(*a)) found = a, ++n;
  return n == 1 ? found : nullptr;
}
auto opIs(const std::string& str) {
  return [str](const Apply& a) { return a.op().str() == str; };
}
bool isComposite(const Apply& a) {
  return dynamic_cast<const Composite*>(&a.op()) != nullptr;
}
bool isOfg(const Apply& a) {
  return dynamic_cast<const OpFromGraph*>(&a.op()) != nullptr;
}
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// y = exp(block(x)) with block(xi) = tanh(log(xi) * 2 + 1), scope "block/inner" on the body's
// nodes: fast_run fuses the body's chain into one Composite inside the body.
struct Blocked {
  std::shared_ptr<const OpFromGraph> block;
  VarPtr x = fvar("x");
  VarPtr y;
  Blocked() {
    VarPtr xi = fvar("xi");
    VarPtr body;
    {
      NameScope scope("block");
      NameScope inner("inner");
      body = tanh(log(xi) * 2.0 + 1.0);
    }
    block = opFromGraph({xi}, {body}, "block");
    y = exp((*block)({x}));
    y->setName("y");
  }
  std::int64_t logId() const { return only(*block->innerGraph(), opIs("Elemwise{log}"))->id(); }
};

}  // namespace

class TestInnerLineage : public QObject {
  Q_OBJECT
 private slots:
  void bodyLogMapsTheChainToTheInnerComposite() {
    Blocked m;
    Function fast = compile({m.x}, {m.y}, {}, {.mode = Mode::FastRun});
    const Apply* ofg = only(fast.graph(), isOfg);
    QVERIFY2(ofg, "the OpFromGraph stays one node through fast_run");
    const NodeLineage lineage(fast.program(), fast.rewriteLog());
    const auto bodies = lineage.bodiesOf(ofg->id());
    QCOMPARE(bodies.size(), std::size_t{1});
    const NodeLineage& inner = *bodies[0];
    QCOMPARE(inner.original(), m.block->innerGraph());  // the body as built
    const Apply* comp = only(inner.optimized(), isComposite);
    QVERIFY2(comp, "fast_run fuses the body's chain into one Composite");
    QCOMPARE(comp->fgraph(), &inner.optimized());
    QCOMPARE(inner.optimizedNodesFor(m.logId()), std::vector<std::int64_t>{comp->id()});
    const auto origins = inner.originalNodesFor(comp->id());
    QVERIFY(std::find(origins.begin(), origins.end(), m.logId()) != origins.end());
    QVERIFY(contains(inner.describe(m.logId()), "fused into Composite"));
    QCOMPARE(lineage.forGraph(comp->fgraph()), &inner);
    QCOMPARE(lineage.forGraph(&fast.graph()), &lineage);
    // A path of original ids.
    std::string note;
    const auto at = lineage.locate(std::vector<std::int64_t>{ofg->id(), m.logId()}, true, &note);
    QCOMPARE(at.size(), std::size_t{1});
    QCOMPARE(at[0].lineage, &inner);
    QCOMPARE(at[0].node, comp->id());
    QVERIFY2(contains(note, "fused into Composite"), note.c_str());
    // And of optimized ids.
    const auto direct =
        lineage.locate(std::vector<std::int64_t>{ofg->id(), comp->id()}, false, nullptr);
    QCOMPARE(direct.size(), std::size_t{1});
    QCOMPARE(direct[0].node, comp->id());
    // Refused, naming the step: an unknown inner id, a caller that runs no inner graph.
    const std::string unknown = errorOf([&] {
      lineage.locate(std::vector<std::int64_t>{ofg->id(), 1'000'000}, true, nullptr);
    });
    QVERIFY2(contains(unknown,
                      "no node 1000000 in the inner graphs of node " + std::to_string(ofg->id())),
             unknown.c_str());
    const Apply* expNode =
        only(fast.graph(), [](const Apply& a) { return contains(a.op().str(), "exp"); });
    QVERIFY(expNode);
    const std::string noBody = errorOf([&] {
      lineage.locate(std::vector<std::int64_t>{expNode->id(), m.logId()}, false, nullptr);
    });
    QVERIFY2(contains(noBody, "runs no inner graph"), noBody.c_str());
    // Mode none: the body's log is empty and every inner node maps to itself.
    Function plain = compile({m.x}, {m.y});
    const NodeLineage plainLineage(plain.program(), plain.rewriteLog());
    const auto plainBodies = plainLineage.bodiesOf(only(plain.graph(), isOfg)->id());
    QCOMPARE(plainBodies.size(), std::size_t{1});
    QCOMPARE(plainBodies[0]->optimizedNodesFor(m.logId()), std::vector<std::int64_t>{m.logId()});
  }

  void nestedTwoDeepAndIfElseBranches() {
    // mid(b) = leaf(b) * 3 with leaf(a) = tanh(log(a) * 2 + 1); y = mid(x), fast_run.
    VarPtr a = fvar("a");
    auto leaf = opFromGraph({a}, {tanh(log(a) * 2.0 + 1.0)}, "leaf");
    VarPtr b = fvar("b");
    auto mid = opFromGraph({b}, {(*leaf)({b}) * 3.0}, "mid");
    VarPtr x = fvar("x");
    VarPtr y = (*mid)({x});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun});
    const Apply* midNode = only(fast.graph(), isOfg);
    QVERIFY(midNode);
    const Apply* leafInMid = only(*mid->innerGraph(), isOfg);
    QVERIFY(leafInMid);
    const std::int64_t logId = only(*leaf->innerGraph(), opIs("Elemwise{log}"))->id();
    const NodeLineage lineage(fast.program(), fast.rewriteLog());
    const auto at = lineage.locate(std::vector<std::int64_t>{midNode->id(), leafInMid->id(), logId},
                                   true, nullptr);
    QCOMPARE(at.size(), std::size_t{1});
    QCOMPARE(at[0].lineage->original(), leaf->innerGraph());
    const Apply* comp = at[0].lineage->optimized().nodeById(at[0].node);
    QVERIFY(comp && isComposite(*comp));
    // IfElse: a path into a branch finds the node in the branch that holds it.
    VarPtr z = fvar("z");
    VarPtr c = gt(sum(z), constant(0.0, DType::Float32));
    VarPtr w = ifelse(c, tanh(log(z) * 2.0 + 1.0), z * 4.0);
    Function g = compile({z}, {w}, {}, {.mode = Mode::FastRun});
    const Apply* ifNode =
        only(g.graph(), [](const Apply& n) { return dynamic_cast<const IfElse*>(&n.op()); });
    QVERIFY(ifNode);
    const auto& op = dynamic_cast<const IfElse&>(ifNode->op());
    const std::int64_t branchLog = only(op.thenGraph(), opIs("Elemwise{log}"))->id();
    const NodeLineage ifLineage(g.program(), g.rewriteLog());
    QCOMPARE(ifLineage.bodiesOf(ifNode->id()).size(), std::size_t{2});
    const auto inThen =
        ifLineage.locate(std::vector<std::int64_t>{ifNode->id(), branchLog}, true, nullptr);
    QVERIFY(!inThen.empty());
    bool inThenBranch = false;
    for (const auto& l : inThen)
      inThenBranch = inThenBranch || l.lineage->original() == &op.thenGraph();
    QVERIFY(inThenBranch);
  }

  void breakpointOnAnOriginalInnerNode() {
    Blocked m;
    Function fast = compile({m.x}, {m.y}, {}, {.mode = Mode::FastRun});
    const Apply* ofg = only(fast.graph(), isOfg);
    QVERIFY(ofg);
    const std::string path = std::to_string(ofg->id()) + "/" + std::to_string(m.logId());
    DebugSession s(fast);
    const int id = get(s.addBreakpoint(parseBreakSpec("node:" + path), true));
    const auto infos = get(s.breakpoints());
    QCOMPARE(infos.size(), std::size_t{1});
    QVERIFY2(contains(infos[0].note, "fused into Composite"), infos[0].note.c_str());
    QCOMPARE(infos[0].nodes.size(), std::size_t{1});
    get(s.start({ft({3}, {1.0, 2.0, 3.0})}));
    const SessionState st = get(s.run());
    QCOMPARE(st.phase, SessionPhase::Paused);
    QCOMPARE(st.reason, PauseKind::Breakpoint);
    QCOMPARE(st.breakpointId, id);
    QCOMPARE(st.frames.size(), std::size_t{2});  // paused inside the body
    QCOMPARE(st.frames[1].callerNodeId, ofg->id());
    QCOMPARE(st.lastNodeId, infos[0].nodes[0]);
    QCOMPARE(get(s.run()).phase, SessionPhase::Finished);
    // Without onOriginalGraph the path takes optimized ids: the Composite's own id works.
    DebugSession t(fast);
    get(t.addBreakpoint(
        parseBreakSpec("node:" + std::to_string(ofg->id()) + "/" + std::to_string(st.lastNodeId))));
    get(t.start({ft({3}, {1.0, 2.0, 3.0})}));
    QCOMPARE(get(t.run()).reason, PauseKind::Breakpoint);
    // Refused, naming the step; malformed paths refused by the parser.
    const std::string bad = errorOf(
        s.addBreakpoint(parseBreakSpec("node:" + std::to_string(ofg->id()) + "/99999"), true));
    QVERIFY2(contains(bad, "no node 99999 in the inner graphs of node"), bad.c_str());
    for (const char* text : {"node:5/", "node:/3", "node:5//3", "node:5/x"}) {
      const std::string why = errorOf([&] { parseBreakSpec(text); });
      QVERIFY2(contains(why, "a path of them"), (std::string(text) + ": " + why).c_str());
    }
    QCOMPARE(toString(parseBreakSpec("node:5/12@nan#2")), std::string("node:5/12@nan#2"));
  }

  void nanGuardNamesTheOriginalInnerNode() {
    Blocked m;
    auto guard = std::make_shared<NanGuard>();
    Function fast = compile({m.x}, {m.y}, {}, {.mode = Mode::FastRun, .observers = {guard}});
    Function plain = compile({m.x}, {m.y});
    guard->watch(fast, &plain.graph());
    const Apply* ofg = only(fast.graph(), isOfg);
    QVERIFY(ofg);
    NanReport r;
    try {
      fast({ft({3}, {1.0, 2.0, -1.0})});
      QFAIL("expected a NanGuardError");
    } catch (const NanGuardError& e) {
      r = e.report();
    }
    const ChainLink* creator = r.creator();
    QVERIFY(creator);
    QCOMPARE(creator->node.frames, std::vector<std::int64_t>{ofg->id()});
    QCOMPARE(creator->node.op, std::string("Elemwise{log}"));
    QVERIFY2(contains(creator->node.fusedInto, "Composite{"), creator->node.fusedInto.c_str());
    // The body's original node: its id in the body, its scope and site.
    QCOMPARE(creator->node.originalId, m.logId());
    QCOMPARE(creator->node.scope, std::string("block/inner"));
    QVERIFY2(contains(creator->node.site, "tst_inner_lineage.cpp"), creator->node.site.c_str());
    QCOMPARE(*creator->inputs.at(0).value, -1.0);
    const std::string text = r.toText();
    QVERIFY2(contains(text, "Elemwise{log} at block/inner"), text.c_str());
  }
};

TSCOPE_TEST_MAIN(TestInnerLineage)
#include "tst_inner_lineage.moc"
