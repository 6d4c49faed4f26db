// DestroyHandler: the rules of Note [Destroy handler invariant] (one destroyer per buffer; graph
// inputs, constants and outputs never overwritten, not even through a view; no aliased reads),
// readers scheduled before the destroyer, cycles through those orderings refused on the full and
// on the incremental path, reverts, and the incrementally kept state matching a fresh handler
// through explicit and random edits.
#include "engine/graph/destroy_handler.h"
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/history.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/vm/vm.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

namespace {

const TensorType kMat(DType::Float32, {3, 3});
VarPtr mv(std::string name, Site site = Site::current()) {
  return Variable::create(kMat, std::move(name), site);
}
VarPtr inplace(ScalarOp op, std::vector<VarPtr> in, int k = 0) {
  return (*std::make_shared<Elemwise>(op, std::map<int, int>{{0, k}}))(std::move(in));
}
VarPtr negI(const VarPtr& a) {
  return inplace(ScalarOp::Neg, {a});
}
VarPtr addI(const VarPtr& a, const VarPtr& b) {
  return inplace(ScalarOp::Add, {a, b});
}
VarPtr sin_(const VarPtr& a) {
  return elemwise(ScalarOp::Sin, {a});
}
VarPtr scalar(double v) {
  return Constant::create(Tensor::full(DType::Float32, {}, v));
}

std::shared_ptr<DestroyHandler> attachHandler(FunctionGraph& fg) {
  auto dh = std::make_shared<DestroyHandler>();
  fg.attachFeature(dh);
  return dh;
}

std::optional<std::string> refusal(const FunctionGraph& fg, const DestroyHandler& dh) {
  return thrownMessage<InconsistencyError>([&] { dh.validate(fg); });
}

#define QVERIFY_REFUSED(msg, part) \
  QVERIFY2(contains(msg, part), (msg) ? (msg)->c_str() : "the graph was accepted")
#define QVERIFY_ACCEPTED(msg) QVERIFY2(!(msg), (msg) ? (msg)->c_str() : "")

std::string nodeTag(const Apply* n) {
  return "(node " + std::to_string(n->id()) + ")";
}

std::ptrdiff_t positionIn(const std::vector<Apply*>& order, const Apply* n) {
  return std::find(order.begin(), order.end(), n) - order.begin();
}

std::vector<Tensor> run(const FunctionGraph& fg, const std::vector<Tensor>& values) {
  VM vm(fg, fg.toposort());
  vm.start(values);
  while (vm.run() != VM::Status::Finished) {
  }
  return vm.outputValues();
}

Tensor values3x3(double offset) {
  std::vector<double> v;
  for (int i = 0; i < 9; ++i) v.push_back(0.1 * i - offset);
  return Tensor::fromDoubles(DType::Float32, {3, 3}, v);
}

// What the handler says about the graph, by ids: each variable's root and destroyers, and the
// readers each destroyer waits for. Two handlers that agree print the same text.
std::string handlerDump(const FunctionGraph& fg, const DestroyHandler& dh) {
  std::map<std::int64_t, std::string> lines;
  auto ids = [](const std::vector<Apply*>& nodes) {
    std::string s;
    for (const Apply* n : nodes) s += " " + std::to_string(n->id());
    return s;
  };
  for (const Variable* v : fg.variables())
    lines[v->id()] = "var " + std::to_string(v->id()) + ": root " +
                     std::to_string(dh.viewRoot(*v)->id()) + " destroyers" +
                     ids(dh.destroyersOf(*v));
  for (const Apply* n : fg.nodes())
    if (dh.isDestroyer(*n))
      lines[n->id()] =
          "destroyer " + std::to_string(n->id()) + ": after" + ids(dh.readersBefore(*n));
  std::string out;
  for (const auto& [id, line] : lines) out += line + "\n";
  return out;
}

// A fresh handler's verdict and dump on a copy of the graph (same ids).
std::pair<std::optional<std::string>, std::string> freshVerdict(const FunctionGraph& fg) {
  FunctionGraph copy(fg.inputs(), fg.outputs(), Ownership::Clone);
  auto dh = attachHandler(copy);
  auto msg = refusal(copy, *dh);
  return {msg, handlerDump(copy, *dh)};
}

// The variables of fg of type kMat, as handles.
std::vector<VarPtr> matrices(const FunctionGraph& fg) {
  std::vector<VarPtr> out;
  for (const VarPtr& in : fg.inputs())
    if (in->type() == kMat) out.push_back(in);
  for (Apply* n : fg.nodes())
    for (int o = 0; o < n->nOutputs(); ++o)
      if (n->outputRef(o).type() == kMat) out.push_back(n->output(o));
  std::sort(out.begin(), out.end(),
            [](const VarPtr& a, const VarPtr& b) { return a->id() < b->id(); });
  return out;
}

// The nodes that depend on var (its clients, theirs, ...).
std::set<const Apply*> downstream(const FunctionGraph& fg, const Variable& var) {
  std::set<const Apply*> seen;
  std::vector<const Variable*> stack{&var};
  while (!stack.empty()) {
    const Variable* v = stack.back();
    stack.pop_back();
    for (const Client& c : fg.clients(*v))
      if (c.node && seen.insert(c.node).second)
        for (int o = 0; o < c.node->nOutputs(); ++o) stack.push_back(&c.node->outputRef(o));
  }
  return seen;
}

}  // namespace

class TestDestroyHandler : public QObject {
  Q_OBJECT

 private slots:
  void testTwoDestroyersRefused();
  void testProtectedBuffersRefused();
  void testMutableInputs();
  void testGraphOutputsNotOverwritten();
  void testAliasedReadRefused();
  void testReadersScheduledFirst();
  void testCycleRefusedFullCheck();
  void testCycleRefusedIncrementally();
  void testRevertRestoresValidity();
  void testChangeInputToDestroyedBuffer();
  void testRerootThroughChangeInput();
  void testSecondHandlerRefused();
  void testRandomEditsMatchFreshHandler_data();
  void testRandomEditsMatchFreshHandler();
};

void TestDestroyHandler::testTwoDestroyersRefused() {
  const VarPtr x = mv("x");
  const VarPtr t = exp_(x);
  const VarPtr a = negI(t);
  const VarPtr b = inplace(ScalarOp::Exp, {t});
  FunctionGraph fg({x}, {add(a, b)}, Ownership::Adopt);
  auto dh = attachHandler(fg);
  const auto msg = refusal(fg, *dh);
  QVERIFY_REFUSED(msg, "at most one destroyer");
  QVERIFY_REFUSED(msg, nodeTag(a->owner()));
  QVERIFY_REFUSED(msg, nodeTag(b->owner()));
  QCOMPARE(dh->destroyersOf(*t), (std::vector<Apply*>{a->owner(), b->owner()}));

  // One of them through a view of the buffer: the same buffer, refused all the same.
  const VarPtr y = mv("y");
  const VarPtr u = exp_(y);
  FunctionGraph fg2({y}, {add(negI(u), negI(transpose(u)))}, Ownership::Adopt);
  auto dh2 = attachHandler(fg2);
  QVERIFY_REFUSED(refusal(fg2, *dh2), "at most one destroyer");
}

void TestDestroyHandler::testProtectedBuffersRefused() {
  {
    const VarPtr x = mv("x");
    FunctionGraph fg({x}, {negI(x)}, Ownership::Adopt);
    auto dh = attachHandler(fg);
    const auto msg = refusal(fg, *dh);
    QVERIFY_REFUSED(msg, "'x'");
    QVERIFY_REFUSED(msg, "which is a graph input");
    QVERIFY_REFUSED(msg, "Elemwise{neg,inplace}");
    QVERIFY(dh->isProtected(*x));
  }
  {
    const VarPtr x = mv("x");
    const VarPtr c = Constant::create(Tensor::full(DType::Float32, {3, 3}, 2), "c");
    FunctionGraph fg({x}, {add(x, negI(c))}, Ownership::Adopt);
    auto dh = attachHandler(fg);
    QVERIFY_REFUSED(refusal(fg, *dh), "which is a constant");
  }
  {
    // Through a view, and through a view of a view.
    const VarPtr x = mv("x");
    const VarPtr v = transpose(x);
    FunctionGraph fg({x}, {negI(v), negI(transpose(transpose(x)))}, Ownership::Adopt);
    auto dh = attachHandler(fg);
    const auto msg = refusal(fg, *dh);
    QVERIFY_REFUSED(msg, "a view of 'x'");
    QVERIFY_REFUSED(msg, "which is a graph input");
    QCOMPARE(dh->viewRoot(*v), x.get());
  }
  {
    const auto s = SharedVariable::create(Tensor::full(DType::Float32, {3, 3}, 1), "s");
    FunctionGraph fg({s}, {negI(s)}, Ownership::Adopt);
    auto dh = attachHandler(fg);
    QVERIFY_REFUSED(refusal(fg, *dh), "'s'");
  }
}

void TestDestroyHandler::testMutableInputs() {
  const VarPtr x = mv("x"), y = mv("y");
  FunctionGraph fg({x, y}, {add(negI(transpose(x)), y)}, Ownership::Adopt);
  auto dh = attachHandler(fg);
  QVERIFY_REFUSED(refusal(fg, *dh), "graph input");
  dh->setMutableInputs({x});
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  QVERIFY(!dh->isProtected(*x));
  QVERIFY(dh->isProtected(*y));
  dh->setMutableInputs({});
  QVERIFY_REFUSED(refusal(fg, *dh), "graph input");
}

void TestDestroyHandler::testGraphOutputsNotOverwritten() {
  {
    const VarPtr x = mv("x");
    const VarPtr t = exp_(x);
    FunctionGraph fg({x}, {negI(t), transpose(t)}, Ownership::Adopt);
    auto dh = attachHandler(fg);
    const auto msg = refusal(fg, *dh);
    QVERIFY_REFUSED(msg, "is graph output 1");
    QVERIFY(dh->isProtected(*t));
  }
  {
    // addOutput has no input-change event: validate() still sees the new output.
    const VarPtr x = mv("x");
    const VarPtr t = exp_(x);
    FunctionGraph fg({x}, {negI(t)}, Ownership::Adopt);
    auto dh = attachHandler(fg);
    QVERIFY_ACCEPTED(refusal(fg, *dh));
    fg.addOutput(transpose(t), "show t");
    QVERIFY_REFUSED(refusal(fg, *dh), "is graph output 1");
  }
}

void TestDestroyHandler::testAliasedReadRefused() {
  const VarPtr x = mv("x");
  const VarPtr t = exp_(x);
  FunctionGraph fg({x}, {addI(t, transpose(t))}, Ownership::Adopt);
  auto dh = attachHandler(fg);
  QVERIFY_REFUSED(refusal(fg, *dh), "reads the same buffer through its input 1");

  // The same variable twice is read element by element before it is written.
  const VarPtr y = mv("y");
  const VarPtr u = exp_(y);
  FunctionGraph fg2({y}, {addI(u, u)}, Ownership::Adopt);
  auto dh2 = attachHandler(fg2);
  QVERIFY_ACCEPTED(refusal(fg2, *dh2));
}

void TestDestroyHandler::testReadersScheduledFirst() {
  // The destroyer is built (and reached from the output) before its readers.
  const VarPtr x = mv("x");
  const VarPtr t = exp_(x);
  const VarPtr d = negI(t);
  const VarPtr r = sin_(t);
  const VarPtr v = transpose(t);
  const VarPtr r2 = sin_(v);
  const VarPtr out = add(add(d, r), r2);
  FunctionGraph fg({x}, {out}, Ownership::Adopt);
  const std::vector<Apply*> plain = fg.toposort();
  QVERIFY(positionIn(plain, d->owner()) <
          positionIn(plain, r->owner()));  // the order to be corrected

  auto dh = attachHandler(fg);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  std::vector<Apply*> readers{r->owner(), v->owner(), r2->owner()};
  std::sort(readers.begin(), readers.end(),
            [](const Apply* a, const Apply* b) { return a->id() < b->id(); });
  QCOMPARE(dh->readersBefore(*d->owner()), readers);
  const Orderings orderings = fg.orderings();
  QCOMPARE(orderings.size(), std::size_t{1});
  QCOMPARE(orderings.at(d->owner()), readers);
  const std::vector<Apply*> order = fg.toposort();
  for (const Apply* reader : readers)
    QVERIFY(positionIn(order, reader) < positionIn(order, d->owner()));

  // Run in that order, the readers see exp(x), not its negation.
  const VarPtr x2 = mv("x");
  const VarPtr t2 = exp_(x2);
  FunctionGraph reference({x2}, {add(add(neg(t2), sin_(t2)), sin_(transpose(t2)))},
                          Ownership::Adopt);
  const Tensor value = values3x3(0.3);
  const Tensor expected = run(reference, {value})[0];
  QVERIFY(run(fg, {value})[0].allClose(expected, 1e-6, 1e-6));
}

void TestDestroyHandler::testCycleRefusedFullCheck() {
  // mul reads t and the result of the node that overwrites t: it cannot run before it.
  const VarPtr x = mv("x");
  const VarPtr t = exp_(x);
  const VarPtr d = negI(t);
  FunctionGraph fg({x}, {mul(t, d)}, Ownership::Adopt);
  auto dh = attachHandler(fg);
  const auto msg = refusal(fg, *dh);
  QVERIFY_REFUSED(msg, "cycle");
  QVERIFY_REFUSED(msg, nodeTag(d->owner()));
  QCOMPARE(dh->fullChecks(), std::size_t{1});
}

void TestDestroyHandler::testCycleRefusedIncrementally() {
  // A valid destroyer elsewhere makes the first validate() a full check; the change after it is
  // checked incrementally.
  const VarPtr x = mv("x"), y = mv("y");
  const VarPtr t = exp_(x);
  const VarPtr d = neg(t);
  const VarPtr other = negI(exp_(y));
  FunctionGraph fg({x, y}, {mul(t, d), other}, Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  auto dh = attachHandler(fg);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  QCOMPARE(dh->fullChecks(), std::size_t{1});
  const std::string before = structureDump(fg);

  const auto cp = history->checkpoint();
  const VarPtr dI = negI(t);
  fg.replace(d, dI, "inplace");
  const auto msg = refusal(fg, *dh);
  QVERIFY_REFUSED(msg, "depends on it");
  QVERIFY_REFUSED(msg, nodeTag(dI->owner()));
  QCOMPARE(dh->fullChecks(), std::size_t{1});  // found without a full check
  history->revert(cp);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  QCOMPARE(qs(structureDump(fg)), qs(before));
  QCOMPARE(dh->fullChecks(), std::size_t{1});
  QCOMPARE(qs(handlerDump(fg, *dh)), qs(freshVerdict(fg).second));
}

void TestDestroyHandler::testRevertRestoresValidity() {
  const VarPtr x = mv("x");
  const VarPtr t = exp_(x);
  const VarPtr a = negI(t);
  const VarPtr b = sin_(t);
  FunctionGraph fg({x}, {add(a, b)}, Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  auto dh = attachHandler(fg);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  const std::string before = structureDump(fg);
  const std::string handlerBefore = handlerDump(fg, *dh);

  // A second destroyer of t, and the graph input overwritten: refused, then undone.
  const auto cp = history->checkpoint();
  fg.replace(b, inplace(ScalarOp::Sin, {t}), "second destroyer");
  QVERIFY_REFUSED(refusal(fg, *dh), "at most one destroyer");
  fg.replace(t, negI(x), "input");
  QVERIFY(refusal(fg, *dh).has_value());
  history->revert(cp);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  QCOMPARE(qs(structureDump(fg)), qs(before));
  QCOMPARE(qs(handlerDump(fg, *dh)), qs(handlerBefore));
  const std::vector<Apply*> order = fg.toposort();
  QVERIFY(positionIn(order, b->owner()) < positionIn(order, a->owner()));
  fg.checkIntegrity();
}

void TestDestroyHandler::testChangeInputToDestroyedBuffer() {
  // Only input changes, no new node: m starts reading t after d overwrote it, and a graph output
  // starts showing t.
  const VarPtr x = mv("x");
  const VarPtr t = exp_(x);
  const VarPtr d = negI(t);
  const VarPtr u = sin_(x);
  const VarPtr m = mul(sin_(d), u);
  FunctionGraph fg({x}, {m, u}, Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  auto dh = attachHandler(fg);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  const auto cp = history->checkpoint();
  fg.changeInput(m->owner(), 1, t, "read t");
  QVERIFY_REFUSED(refusal(fg, *dh), "depends on it");
  history->revert(cp);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  fg.changeInput(nullptr, 1, transpose(t), "show t");
  QVERIFY_REFUSED(refusal(fg, *dh), "is graph output 1");
  history->revert(cp);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  QCOMPARE(dh->fullChecks(), std::size_t{1});
}

void TestDestroyHandler::testRerootThroughChangeInput() {
  // d overwrites t1 through the view v; moving v onto t2 moves the destroyed buffer with it.
  const VarPtr x = mv("x");
  const VarPtr t1 = exp_(x);
  const VarPtr t2 = sin_(x);
  const VarPtr v = transpose(t1);
  const VarPtr d = negI(v);
  const VarPtr s = exp_(t2);
  FunctionGraph fg({x}, {add(d, s)}, Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  auto dh = attachHandler(fg);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  QCOMPARE(dh->destroyersOf(*t1), std::vector<Apply*>{d->owner()});
  QVERIFY(dh->destroyersOf(*t2).empty());

  const auto cp = history->checkpoint();
  fg.changeInput(v->owner(), 0, t2, "reroot");  // t1's node is pruned
  QVERIFY(!fg.contains(*t1->owner()));
  QCOMPARE(dh->viewRoot(*v), t2.get());
  QCOMPARE(dh->destroyersOf(*t2), std::vector<Apply*>{d->owner()});
  QCOMPARE(dh->readersBefore(*d->owner()), std::vector<Apply*>{s->owner()});
  QVERIFY_ACCEPTED(refusal(fg, *dh));  // s reads t2 first
  QCOMPARE(qs(handlerDump(fg, *dh)), qs(freshVerdict(fg).second));
  const std::vector<Apply*> order = fg.toposort();
  QVERIFY(positionIn(order, s->owner()) < positionIn(order, d->owner()));

  // Now the graph output reads t2 after d overwrote it: refused, also by a fresh handler.
  fg.changeInput(s->owner(), 0, d, "read after");
  fg.replace(fg.outputs()[0], add(d, t2), "output reads t2");
  const auto msg = refusal(fg, *dh);
  QVERIFY(msg.has_value());
  QVERIFY(freshVerdict(fg).first.has_value());
  history->revert(cp);
  QVERIFY_ACCEPTED(refusal(fg, *dh));
  QCOMPARE(dh->destroyersOf(*t1), std::vector<Apply*>{d->owner()});
  QCOMPARE(qs(handlerDump(fg, *dh)), qs(freshVerdict(fg).second));
}

void TestDestroyHandler::testSecondHandlerRefused() {
  const VarPtr x = mv("x");
  FunctionGraph fg({x}, {exp_(x)}, Ownership::Adopt);
  auto dh = attachHandler(fg);
  QVERIFY_THROWS_EXCEPTION(GraphError, fg.attachFeature(std::make_shared<DestroyHandler>()));
  QCOMPARE(fg.features().size(), std::size_t{1});
  FunctionGraph other({mv("y")}, {}, Ownership::Adopt);
  QVERIFY_THROWS_EXCEPTION(GraphError, other.attachFeature(dh));
}

void TestDestroyHandler::testRandomEditsMatchFreshHandler_data() {
  QTest::addColumn<int>("seed");
  QTest::addColumn<int>(
      "spacing");  // of the kept order: default (far apart), packed, nearly packed
  for (int spacing : {0, 1, 3})
    for (int seed = 1; seed <= 30; ++seed)
      QTest::newRow(
          ("seed " + std::to_string(seed) + " spacing " + std::to_string(spacing)).c_str())
          << seed << spacing;
}

void TestDestroyHandler::testRandomEditsMatchFreshHandler() {
  QFETCH(int, seed);
  QFETCH(int, spacing);
  std::mt19937 rng(static_cast<unsigned>(seed));
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const VarPtr a = mv("a"), b = mv("b"), c = mv("c");
  const VarPtr alpha = scalar(0.5), beta = scalar(1.0);
  const VarPtr t1 = exp_(a), t2 = sin_(b);
  const VarPtr t3 = add(t1, t2);
  const VarPtr t5 = mul(transpose(t3), c);
  const VarPtr t7 = gemm(neg(t5), alpha, t1, t2, beta);
  FunctionGraph fg({a, b, c}, {t7, t3}, Ownership::Adopt);
  auto history = std::make_shared<History>();
  fg.attachFeature(history);
  auto dh = attachHandler(fg);
  dh->setOrderSpacing(spacing);
  QVERIFY_ACCEPTED(refusal(fg, *dh));

  // An expression over operands of the graph, of kMat type.
  auto build = [&](const std::vector<VarPtr>& ops) -> VarPtr {
    const VarPtr& o1 = ops[pick(ops.size())];
    const VarPtr& o2 = ops[pick(ops.size())];
    const VarPtr& o3 = ops[pick(ops.size())];
    switch (pick(8)) {
      case 0:
        return sin_(o1);
      case 1:
        return add(o1, o2);
      case 2:
        return negI(o1);
      case 3:
        return addI(o1, o2);
      case 4:
        return transpose(o1);
      case 5:
        return gemm(o1, alpha, o2, o3, beta, pick(2) == 0);
      case 6:
        return negI(transpose(o1));
      default:
        return mul(o1, o2);
    }
  };

  std::vector<History::Checkpoint> boundaries{history->checkpoint()};
  int refused = 0, accepted = 0, reverts = 0;
  for (int step = 0; step < 200; ++step) {
    const History::Checkpoint cp = history->checkpoint();
    const std::vector<VarPtr> vars = matrices(fg);
    const std::size_t kind = pick(10);
    bool revertStep = false;
    if (kind < 6) {
      std::vector<VarPtr> owned;
      for (const VarPtr& v : vars)
        if (v->owner()) owned.push_back(v);
      if (owned.empty()) continue;
      const VarPtr target = owned[pick(owned.size())];
      const std::set<const Apply*> after = downstream(fg, *target);
      std::vector<VarPtr> ops;
      for (const VarPtr& v : vars)
        if (v != target && (!v->owner() || !after.count(v->owner()))) ops.push_back(v);
      fg.replace(target, build(ops), "random replace");
    } else if (kind < 9) {
      std::vector<std::pair<Apply*, int>> uses;
      for (Apply* n : fg.nodes())
        for (int i = 0; i < n->nInputs(); ++i)
          if (n->input(i)->type() == kMat) uses.emplace_back(n, i);
      if (uses.empty()) continue;
      const auto [node, index] = uses[pick(uses.size())];
      std::set<const Apply*> after;
      for (int o = 0; o < node->nOutputs(); ++o) {
        const auto more = downstream(fg, node->outputRef(o));
        after.insert(more.begin(), more.end());
      }
      after.insert(node);
      std::vector<VarPtr> ops;
      for (const VarPtr& v : vars)
        if (v != node->input(index) && (!v->owner() || !after.count(v->owner()))) ops.push_back(v);
      if (ops.empty()) continue;
      fg.changeInput(node, index, ops[pick(ops.size())], "random input");
    } else {
      const std::size_t k = pick(boundaries.size());
      history->revert(boundaries[k]);
      boundaries.resize(k + 1);
      revertStep = true;
      ++reverts;
    }
    const auto msg = refusal(fg, *dh);
    const auto [freshMsg, freshDump] = freshVerdict(fg);
    QVERIFY2(msg.has_value() == freshMsg.has_value(),
             ("step " + std::to_string(step) + ": incremental: " + msg.value_or("accepted") +
              "; fresh: " + freshMsg.value_or("accepted"))
                 .c_str());
    if (msg) {
      QVERIFY2(!revertStep, msg->c_str());  // every boundary was a valid graph
      ++refused;
      history->revert(cp);
      QVERIFY_ACCEPTED(refusal(fg, *dh));
    } else {
      ++accepted;
      if (!revertStep) boundaries.push_back(history->checkpoint());
    }
    QCOMPARE(qs(handlerDump(fg, *dh)), qs(freshVerdict(fg).second));
    QVERIFY2(dh->orderConsistent(), ("step " + std::to_string(step)).c_str());
    fg.checkIntegrity();
  }
  QVERIFY(refused > 0);
  QVERIFY(accepted > 0);
  QVERIFY(reverts > 0);
}

TSCOPE_TEST_MAIN(TestDestroyHandler)
#include "tst_destroy_handler.moc"
