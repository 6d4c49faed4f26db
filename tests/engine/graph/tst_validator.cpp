// Validator: replace-then-validate; a refusal (by a feature or by the Validator's own cycle check)
// reverts the change and leaves the graph exactly as it was, with the refusal in lastError().
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/history.h"
#include "engine/graph/validator.h"
#include "engine/ops/elemwise/elemwise.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <memory>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

namespace {

using Pairs = std::vector<std::pair<VarPtr, VarPtr>>;

// Refuses every graph that contains a node whose op prints as `forbidden`.
class ForbidOp : public Feature {
 public:
  std::string forbidden;
  mutable int validations = 0;
  void validate(const FunctionGraph& fg) const override {
    ++validations;
    for (const Apply* n : fg.nodes())
      if (!forbidden.empty() && n->op().str() == forbidden)
        throw InconsistencyError("ForbidOp: the graph may not contain " + forbidden + " (node id " +
                                 std::to_string(n->id()) + ")");
  }
};

}  // namespace

class TestValidator : public QObject {
  Q_OBJECT

 private slots:
  void testAttachAddsHistory();
  void testAttachReusesHistory();
  void testSuccess();
  void testRefusedByFeature();
  void testRefusedReplaceAllRevertsEveryPair();
  void testCycleRefusedByValidator();
  void testTypeErrorStillThrows();
  void testValidateDirectly();
};

void TestValidator::testAttachAddsHistory() {
  const VarPtr x = fv("x");
  FunctionGraph fg({x}, {neg(x)}, FunctionGraph::Ownership::Adopt);
  fg.attachFeature(std::make_shared<Validator>());
  QCOMPARE(fg.features().size(), std::size_t{2});
  QVERIFY(fg.feature<History>() != nullptr);
  QVERIFY(fg.feature<Validator>() != nullptr);
}

void TestValidator::testAttachReusesHistory() {
  const VarPtr x = fv("x"), y = fv("y");
  FunctionGraph fg({x, y}, {add(x, y)}, FunctionGraph::Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  auto validator = std::make_shared<Validator>();
  fg.attachFeature(validator);
  QCOMPARE(fg.features().size(), std::size_t{2});
  QVERIFY(validator->replaceValidate(fg, Pairs{{y, x}}, "r"));
  QCOMPARE(history->size(), std::size_t{1});  // the graph's own History recorded it
}

void TestValidator::testSuccess() {
  const VarPtr x = fv("x");
  const VarPtr y = exp_(log_(x));
  const VarPtr z = add(y, x);
  FunctionGraph fg({x}, {z}, FunctionGraph::Ownership::Adopt);
  auto forbid = std::make_shared<ForbidOp>();
  forbid->forbidden = "Elemwise{sin}";
  auto validator = std::make_shared<Validator>();
  fg.attachFeature(forbid);
  fg.attachFeature(validator);
  QVERIFY(validator->replaceValidate(fg, Pairs{{y, x}}, "exp_log"));
  QVERIFY(validator->lastError().empty());
  QCOMPARE(z->owner()->inputs(), (std::vector<VarPtr>{x, x}));
  QCOMPARE(fg.nodeCount(), std::size_t{1});
  QCOMPARE(forbid->validations, 1);
  QCOMPARE(fg.feature<History>()->size(), std::size_t{1});
  fg.checkIntegrity();
}

void TestValidator::testRefusedByFeature() {
  const VarPtr x = fv("x");
  const VarPtr lx = log_(x);
  const VarPtr y = neg(lx);
  const VarPtr z = add(y, x);
  FunctionGraph fg({x}, {z}, FunctionGraph::Ownership::Adopt);
  auto forbid = std::make_shared<ForbidOp>();
  auto validator = std::make_shared<Validator>();
  auto log = std::make_shared<ChangeLog>();
  fg.attachFeature(forbid);
  fg.attachFeature(validator);
  fg.attachFeature(log);
  const std::string before = structureDump(fg);
  const std::size_t historyBefore = fg.feature<History>()->size();
  forbid->forbidden = "Elemwise{exp}";

  // The replacement prunes neg and log and imports exp: refused, so all of that is undone.
  const VarPtr e = exp_(x);
  QVERIFY(!validator->replaceValidate(fg, Pairs{{y, e}}, "to_exp"));
  QVERIFY2(validator->lastError().find("ForbidOp: the graph may not contain Elemwise{exp}") !=
               std::string::npos,
           validator->lastError().c_str());
  QCOMPARE(qs(structureDump(fg)), qs(before));
  QVERIFY(!fg.contains(*e->owner()));
  QVERIFY(fg.contains(*y->owner()));
  QVERIFY(fg.contains(*lx->owner()));
  QCOMPARE(z->owner()->input(0), y);
  QCOMPARE(fg.feature<History>()->size(), historyBefore);
  QCOMPARE(log->reasons, (std::vector<std::string>{"to_exp", "revert"}));
  fg.checkIntegrity();

  // The same replacement goes through once the feature allows it, and lastError() is cleared.
  forbid->forbidden = "Elemwise{sin}";
  QVERIFY(validator->replaceValidate(fg, Pairs{{y, e}}, "to_exp"));
  QVERIFY(validator->lastError().empty());
  QCOMPARE(z->owner()->input(0), e);
  fg.checkIntegrity();
}

void TestValidator::testRefusedReplaceAllRevertsEveryPair() {
  const VarPtr a = fv("a"), b = fv("b");
  const VarPtr na = neg(a), nb = neg(b);
  const VarPtr out = add(na, nb);
  FunctionGraph fg({a, b}, {out, na}, FunctionGraph::Ownership::Adopt);
  auto forbid = std::make_shared<ForbidOp>();
  forbid->forbidden = "Elemwise{log}";
  auto validator = std::make_shared<Validator>();
  fg.attachFeature(forbid);
  fg.attachFeature(validator);
  const std::string before = structureDump(fg);
  QVERIFY(!validator->replaceValidate(fg, Pairs{{na, b}, {nb, log_(a)}}, "two"));
  QVERIFY(!validator->lastError().empty());
  QCOMPARE(qs(structureDump(fg)), qs(before));
  QCOMPARE(fg.outputs(), (std::vector<VarPtr>{out, na}));
  fg.checkIntegrity();
}

void TestValidator::testCycleRefusedByValidator() {
  const VarPtr x = fv("x");
  const VarPtr a = neg(x);
  const VarPtr b = exp_(a);
  const VarPtr c = log_(b);
  FunctionGraph fg({x}, {add(c, x)}, FunctionGraph::Ownership::Adopt);
  auto validator = std::make_shared<Validator>();
  fg.attachFeature(validator);
  const std::string before = structureDump(fg);
  // before: b = exp(neg(x)); c = log(b)      replace(a, c)      after: b = exp(c), c = log(b): a
  // cycle
  QVERIFY(!validator->replaceValidate(fg, Pairs{{a, c}}, "cyclic"));
  QVERIFY2(validator->lastError().find("cycle") != std::string::npos,
           validator->lastError().c_str());
  QCOMPARE(qs(structureDump(fg)), qs(before));
  QCOMPARE(b->owner()->input(0), a);
  QVERIFY(fg.contains(*a->owner()));
  fg.checkIntegrity();
  // A node replaced by its own output is a cycle too.
  QVERIFY(!validator->replaceValidate(fg, Pairs{{a, b}}, "self"));
  QCOMPARE(qs(structureDump(fg)), qs(before));
  fg.checkIntegrity();
}

void TestValidator::testTypeErrorStillThrows() {
  const VarPtr x = fv("x");
  const VarPtr d = Variable::create(TensorType(DType::Float64, {3}), "d");
  const VarPtr y = neg(x);
  FunctionGraph fg({x, d}, {exp_(y)}, FunctionGraph::Ownership::Adopt);
  auto validator = std::make_shared<Validator>();
  fg.attachFeature(validator);
  const std::string before = structureDump(fg);
  QVERIFY_THROWS_EXCEPTION(TypeError, validator->replaceValidate(fg, Pairs{{y, d}}, "bad type"));
  QCOMPARE(structureDump(fg), before);
  fg.checkIntegrity();
}

void TestValidator::testValidateDirectly() {
  const VarPtr x = fv("x");
  FunctionGraph fg({x}, {exp_(x)}, FunctionGraph::Ownership::Adopt);
  auto forbid = std::make_shared<ForbidOp>();
  fg.attachFeature(forbid);
  fg.attachFeature(std::make_shared<Validator>());
  fg.validate();  // nothing forbidden yet
  forbid->forbidden = "Elemwise{exp}";
  const auto msg = thrownMessage<InconsistencyError>([&] { fg.validate(); });
  QVERIFY2(contains(msg, "node id " + std::to_string(fg.outputs()[0]->owner()->id())),
           msg ? msg->c_str() : "no error");
  // InconsistencyError is a GraphError.
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.validate());
}

TSCOPE_TEST_MAIN(TestValidator)
#include "tst_validator.moc"
