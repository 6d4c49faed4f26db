// NodeLineage (engine/debug/lineage.h) on real compiles: a chain fused into a Composite, duplicate
// nodes merged, log(1 + x) canonicalized to log1p, a constant-folded node, and a log without the
// owner records (as read from an older file).
#include "engine/compile/function.h"
#include "engine/debug/lineage.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/composite.h"
#include "test_main.h"

#include <algorithm>

// Options are written as designated initializers naming only what a case sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;
using tscope::engine::debug::NodeLineage;

namespace {
constexpr std::int64_t U = kUnknownDim;
VarPtr fvar(const std::string& name) {
  return Variable::create(TensorType(DType::Float32, {U}), name);
}
// The id a node with this op string has before any rewrite: compile with mode none clones the
// graph the same way as every other mode does.
std::int64_t originalId(const Function& plain, const std::string& opStr, int nth = 0) {
  std::vector<std::int64_t> ids;
  for (const Apply* a : plain.graph().nodes())
    if (a->op().str() == opStr) ids.push_back(a->id());
  std::sort(ids.begin(), ids.end());
  if (nth >= static_cast<int>(ids.size())) return -1;
  return ids[static_cast<std::size_t>(nth)];
}
const Apply* onlyNode(const Function& f, const std::function<bool(const Apply&)>& pred) {
  const Apply* found = nullptr;
  int n = 0;
  for (const Apply* a : f.graph().nodes())
    if (pred(*a)) found = a, ++n;
  return n == 1 ? found : nullptr;
}
bool isComposite(const Apply& a) {
  return dynamic_cast<const Composite*>(&a.op()) != nullptr;
}
bool has(const std::vector<std::int64_t>& v, std::int64_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}
}  // namespace

class TestLineage : public QObject {
  Q_OBJECT
 private slots:
  void fusionMapsTheChainToTheComposite() {
    VarPtr x = fvar("x");
    VarPtr y = tanh(log(x) * 2.0 + 1.0);
    Function plain = compile({x}, {y});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun});
    const std::int64_t logId = originalId(plain, "Elemwise{log}");
    const std::int64_t tanhId = originalId(plain, "Elemwise{tanh}");
    QVERIFY(logId >= 0 && tanhId >= 0);
    const Apply* comp = onlyNode(fast, isComposite);
    QVERIFY2(comp, "fast_run fuses the chain into one Composite");
    NodeLineage lineage(fast.graph(), fast.rewriteLog());
    QCOMPARE(lineage.optimizedNodesFor(logId), std::vector<std::int64_t>{comp->id()});
    QCOMPARE(lineage.optimizedNodesFor(tanhId), std::vector<std::int64_t>{comp->id()});
    const auto origins = lineage.originalNodesFor(comp->id());
    QVERIFY(has(origins, logId));
    QVERIFY(has(origins, tanhId));
    QVERIFY(!has(origins, comp->id()));
    QVERIFY(lineage.rewritten(logId));
    QVERIFY(!lineage.removed(logId));
    const auto reasons = lineage.reasonsFor(logId);
    QVERIFY(!reasons.empty());
    QVERIFY2(
        std::any_of(reasons.begin(), reasons.end(),
                    [](const std::string& r) { return r.find("fusion") != std::string::npos; }),
        reasons.back().c_str());
    const std::string text = lineage.describe(logId);
    QVERIFY2(text.find("fused into Composite") != std::string::npos, text.c_str());
    QVERIFY2(text.find("node " + std::to_string(comp->id())) != std::string::npos, text.c_str());
    // The input is no node; an unknown id maps to nothing.
    QVERIFY(lineage.optimizedNodesFor(1'000'000).empty());
    QVERIFY(lineage.originalNodesFor(1'000'000).empty());
    QVERIFY(!lineage.known(1'000'000));
    QVERIFY(lineage.known(logId));
  }

  void mergedDuplicatesMapToTheSurvivor() {
    VarPtr x = fvar("x");
    VarPtr a = exp(x);
    VarPtr b = exp(x);
    VarPtr y = a * b;
    Function plain = compile({x}, {y});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun, .exclude = {"fusion"}});
    const std::int64_t e0 = originalId(plain, "Elemwise{exp}", 0);
    const std::int64_t e1 = originalId(plain, "Elemwise{exp}", 1);
    QVERIFY(e0 >= 0 && e1 >= 0 && e0 != e1);
    const Apply* survivor =
        onlyNode(fast, [](const Apply& n) { return n.op().str() == "Elemwise{exp}"; });
    QVERIFY2(survivor, "the duplicate exp is merged");
    NodeLineage lineage(fast.graph(), fast.rewriteLog());
    QCOMPARE(lineage.optimizedNodesFor(e0), std::vector<std::int64_t>{survivor->id()});
    QCOMPARE(lineage.optimizedNodesFor(e1), std::vector<std::int64_t>{survivor->id()});
    const auto origins = lineage.originalNodesFor(survivor->id());
    QVERIFY(has(origins, e0));
    QVERIFY(has(origins, e1));
    const std::int64_t gone = survivor->id() == e0 ? e1 : e0;
    const std::string text = lineage.describe(gone);
    QVERIFY2(text.find("merged into") != std::string::npos, text.c_str());
  }

  void canonicalizedNodeMapsToItsReplacement() {
    VarPtr x = fvar("x");
    VarPtr y = log(1.0 + x);
    Function plain = compile({x}, {y});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun, .exclude = {"fusion"}});
    const std::int64_t logId = originalId(plain, "Elemwise{log}");
    const std::int64_t addId = originalId(plain, "Elemwise{add}");
    QVERIFY(logId >= 0 && addId >= 0);
    const Apply* l1p =
        onlyNode(fast, [](const Apply& n) { return n.op().str() == "Elemwise{log1p}"; });
    QVERIFY2(l1p, "log(1 + x) becomes log1p(x)");
    NodeLineage lineage(fast.graph(), fast.rewriteLog());
    QCOMPARE(lineage.optimizedNodesFor(logId), std::vector<std::int64_t>{l1p->id()});
    QVERIFY(has(lineage.originalNodesFor(l1p->id()), logId));
    // The add is gone: nothing reads it any more.
    QVERIFY(!fast.graph().nodeById(addId) ||
            fast.graph().nodeById(addId)->op().str() != "Elemwise{add}");
    QVERIFY(!lineage.reasonsFor(logId).empty());
  }

  void constantFoldedNodeIsRemoved() {
    VarPtr x = fvar("x");
    VarPtr c = exp(constant(2.0, DType::Float32));
    VarPtr y = x * c;
    Function plain = compile({x}, {y});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun, .exclude = {"fusion"}});
    const std::int64_t expId = originalId(plain, "Elemwise{exp}");
    QVERIFY(expId >= 0);
    QVERIFY(!onlyNode(fast, [](const Apply& n) { return n.op().str() == "Elemwise{exp}"; }));
    NodeLineage lineage(fast.graph(), fast.rewriteLog());
    QVERIFY(lineage.optimizedNodesFor(expId).empty());
    QVERIFY(lineage.removed(expId));
    const std::string text = lineage.describe(expId);
    QVERIFY2(text.rfind("removed (", 0) == 0, text.c_str());
    // An untouched node maps to itself: the multiplication survives somewhere as a node whose
    // origins include the original mul, or is the original mul.
    const std::int64_t mulId = originalId(plain, "Elemwise{mul}");
    const auto became = lineage.optimizedNodesFor(mulId);
    QCOMPARE(became.size(), std::size_t{1});
    QVERIFY(has(lineage.originalNodesFor(became[0]), mulId));
  }

  void logWithoutOwnerRecordsStillFollowsFusion() {
    VarPtr x = fvar("x");
    VarPtr y = tanh(log(x) * 2.0 + 1.0);
    Function plain = compile({x}, {y});
    Function fast = compile({x}, {y}, {}, {.mode = Mode::FastRun});
    std::vector<RewriteRecord> old = fast.rewriteLog();
    for (RewriteRecord& r : old) r.replacedOwners.clear();
    const Apply* comp = onlyNode(fast, isComposite);
    QVERIFY(comp);
    NodeLineage lineage(fast.graph(), old);
    QCOMPARE(lineage.optimizedNodesFor(originalId(plain, "Elemwise{log}")),
             std::vector<std::int64_t>{comp->id()});
  }

  void unrewrittenGraphMapsToItself() {
    VarPtr x = fvar("x");
    VarPtr y = exp(x);
    Function plain = compile({x}, {y});
    NodeLineage lineage(plain.graph(), plain.rewriteLog());
    const std::int64_t id = originalId(plain, "Elemwise{exp}");
    QCOMPARE(lineage.optimizedNodesFor(id), std::vector<std::int64_t>{id});
    QCOMPARE(lineage.originalNodesFor(id), std::vector<std::int64_t>{id});
    QVERIFY(!lineage.rewritten(id));
    QCOMPARE(lineage.describe(id), std::string());
  }
};

TSCOPE_TEST_MAIN(TestLineage)
#include "tst_lineage.moc"
