// Variable, Constant, SharedVariable and Apply: what a variable records when it is made (name,
// scope path, creation site), value ownership, test values, and who keeps which node alive.
#include "engine/graph/apply.h"
#include "engine/graph/errors.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/elemwise.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <memory>
#include <string>
#include <thread>

using namespace tscope::engine;
using namespace tscope::engine::testing;

namespace {
const TensorType kVec3(DType::Float32, {3});
const TensorType kMatrix(DType::Float32, {kUnknownDim, 3});

// An op with two outputs of its input's type.
class SplitOp final : public Op {
 public:
  std::string name() const override { return "Split"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override {
    return {inputs[0]->type(), inputs[0]->type()};
  }
};

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

class TestVariableApply : public QObject {
  Q_OBJECT

 private slots:
  void testCreateRecordsNameAndType();
  void testCreationSite();
  void testNameScopePaths();
  void testNameScopeIsPerThread();
  void testNameScopeRejectsBadNames();
  void testNodesRecordScopeAndSite();
  void testConstantOwnsItsValue();
  void testConstantClone();
  void testSharedVariableValue();
  void testSharedVariableSharedByClones();
  void testSharedVariableFilterErrors();
  void testTestValues();
  void testDisplayName();
  void testOutputKeepsUpstreamAlive();
  void testOutputKeepsOnlyUpstreamAlive();
  void testLongChainReleaseIsIterative();
  void testCloneWithNewInputs();
  void testApplyStr();
  void testMakeNodeNeedsSharedOp();
  void testMakeNodeNullInput();
  void testApplyCreateChecks();
};

void TestVariableApply::testCreateRecordsNameAndType() {
  const VarPtr x = Variable::create(kMatrix, "x");
  QCOMPARE(qs(x->name()), QStringLiteral("x"));
  QCOMPARE(x->type(), kMatrix);
  QCOMPARE(x->kind(), Variable::Kind::Regular);
  QVERIFY(x->owner() == nullptr);
  QCOMPARE(x->id(), std::int64_t{-1});
  QVERIFY(x->fgraph() == nullptr);
  QVERIFY(!x->testValue().has_value());
  x->setName("renamed");
  QCOMPARE(qs(x->name()), QStringLiteral("renamed"));
  x->presetId(17);
  QCOMPARE(x->id(), std::int64_t{17});
}

void TestVariableApply::testCreationSite() {
  const std::uint32_t line = __LINE__ + 1;
  const VarPtr x = Variable::create(kVec3, "x");
  QVERIFY2(endsWith(x->site().file, "tst_variable_apply.cpp"), x->site().file.c_str());
  // Creation sites are repository-relative (-fmacro-prefix-map), so saved graphs carry no paths
  // of the build machine.
  QCOMPARE(qs(x->site().file), QStringLiteral("tests/engine/graph/tst_variable_apply.cpp"));
  QCOMPARE(x->site().line, line);
  QVERIFY2(x->site().function.find("testCreationSite") != std::string::npos,
           x->site().function.c_str());
  // str(): the file name without directories, the line, and the function without its signature.
  const QString site = qs(x->site().str());
  QVERIFY2(site.startsWith(QStringLiteral("tst_variable_apply.cpp:%1 (").arg(line)),
           qPrintable(site));
  QVERIFY2(site.endsWith(QStringLiteral("testCreationSite)")), qPrintable(site));
  QVERIFY2(!site.contains(QLatin1String("void")) && !site.contains(QLatin1String("()")),
           qPrintable(site));

  const std::uint32_t cLine = __LINE__ + 1;
  const auto c = Constant::create(Tensor::scalar(DType::Float32, 1));
  QCOMPARE(c->site().line, cLine);
  const std::uint32_t sLine = __LINE__ + 1;
  const auto s = SharedVariable::create(Tensor(DType::Float32, {2}), "w");
  QCOMPARE(s->site().line, sLine);
  QVERIFY(endsWith(s->site().file, "tst_variable_apply.cpp"));
  QCOMPARE(qs(SourceSite{}.str()), QStringLiteral("<unknown site>"));
}

void TestVariableApply::testNameScopePaths() {
  QCOMPARE(qs(currentScope()), QString());
  const VarPtr top = Variable::create(kVec3, "top");
  VarPtr inA, inB, backInA;
  {
    NameScope a("a");
    QCOMPARE(qs(currentScope()), QStringLiteral("a"));
    inA = Variable::create(kVec3);
    {
      NameScope b("b");
      QCOMPARE(qs(currentScope()), QStringLiteral("a/b"));
      inB = Variable::create(kVec3);
      {
        NameScope layer("layer1.0");  // dots are part of the name, not separators
        QCOMPARE(qs(currentScope()), QStringLiteral("a/b/layer1.0"));
      }
    }
    backInA = Variable::create(kVec3);
  }
  QCOMPARE(qs(currentScope()), QString());
  QCOMPARE(qs(top->scope()), QString());
  QCOMPARE(qs(inA->scope()), QStringLiteral("a"));
  QCOMPARE(qs(inB->scope()), QStringLiteral("a/b"));
  QCOMPARE(qs(backInA->scope()), QStringLiteral("a"));
  inB->setScope("elsewhere");
  QCOMPARE(qs(inB->scope()), QStringLiteral("elsewhere"));
}

void TestVariableApply::testNameScopeIsPerThread() {
  NameScope main("main");
  std::string seenInThread = "unset", nestedInThread, varScopeInThread;
  std::thread worker([&] {
    seenInThread = currentScope();
    NameScope w("worker");
    nestedInThread = currentScope();
    varScopeInThread = Variable::create(kVec3)->scope();
  });
  worker.join();
  QCOMPARE(qs(seenInThread), QString());
  QCOMPARE(qs(nestedInThread), QStringLiteral("worker"));
  QCOMPARE(qs(varScopeInThread), QStringLiteral("worker"));
  // The worker's guard never touched this thread's path.
  QCOMPARE(qs(currentScope()), QStringLiteral("main"));
  QCOMPARE(qs(Variable::create(kVec3)->scope()), QStringLiteral("main"));
}

void TestVariableApply::testNameScopeRejectsBadNames() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, NameScope(""));
  const auto msg = thrownMessage<std::invalid_argument>([] { NameScope bad("enc/dec"); });
  QVERIFY(msg);
  QVERIFY2(contains(msg, "enc/dec"), msg->c_str());
  // A refused guard leaves the path alone.
  QCOMPARE(qs(currentScope()), QString());
}

void TestVariableApply::testNodesRecordScopeAndSite() {
  const VarPtr x = Variable::create(kVec3, "x");
  VarPtr y;
  std::uint32_t line = 0;
  {
    NameScope enc("encoder");
    NameScope dense("dense1");
    line = __LINE__ + 1;
    y = elemwise(ScalarOp::Exp, {x});
  }
  Apply* node = y->owner();
  QVERIFY(node != nullptr);
  QCOMPARE(qs(node->scope()), QStringLiteral("encoder/dense1"));
  QCOMPARE(qs(y->scope()), QStringLiteral("encoder/dense1"));
  QCOMPARE(node->site().line, line);
  QVERIFY(endsWith(node->site().file, "tst_variable_apply.cpp"));
  QCOMPARE(y->site(), node->site());
  QCOMPARE(y->index(), 0);
  QCOMPARE(y->owner()->input(0), x);
}

void TestVariableApply::testConstantOwnsItsValue() {
  Tensor source = Tensor::fromDoubles(DType::Float32, {2, 2}, {1, 2, 3, 4});
  const auto c = Constant::create(source, "c");
  QCOMPARE(c->kind(), Variable::Kind::Constant);
  QCOMPARE(c->type(), TensorType(DType::Float32, {2, 2}));
  QVERIFY(!c->value().sharesStorageWith(source));
  source.set({0, 0}, 100);
  source.set({1, 1}, -1);
  QCOMPARE(c->value().toDoubles(), (std::vector<double>{1, 2, 3, 4}));
  // A view of a bigger tensor: the constant keeps only the viewed elements, contiguous.
  Tensor big = Tensor::fromDoubles(DType::Float32, {2, 3}, {0, 1, 2, 3, 4, 5});
  const auto t = Constant::create(big.transpose());
  QCOMPARE(t->type(), TensorType(DType::Float32, {3, 2}));
  QCOMPARE(t->value().toDoubles(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  QVERIFY(t->value().isContiguous());
  QVERIFY_THROWS_EXCEPTION(TypeError, Constant::create(Tensor()));
}

void TestVariableApply::testConstantClone() {
  const auto c = Constant::create(Tensor::scalar(DType::Int64, 7), "seven");
  c->presetId(3);
  const VarPtr copy = c->cloneDetached();
  QVERIFY(copy != c);
  QCOMPARE(copy->kind(), Variable::Kind::Constant);
  QCOMPARE(qs(copy->name()), QStringLiteral("seven"));
  QCOMPARE(copy->id(), std::int64_t{3});
  QCOMPARE(copy->site(), c->site());
  auto asConstant = std::dynamic_pointer_cast<Constant>(copy);
  QVERIFY(asConstant);
  QCOMPARE(asConstant->value().item(), 7.0);
}

void TestVariableApply::testSharedVariableValue() {
  Tensor source = Tensor::fromDoubles(DType::Float32, {2}, {1, 2});
  const auto w = SharedVariable::create(source, "w");
  QCOMPARE(w->kind(), Variable::Kind::Shared);
  QCOMPARE(w->type(), TensorType(DType::Float32, {2}));
  source.set({0}, 50);
  QCOMPARE(w->value().toDoubles(), (std::vector<double>{1, 2}));  // the shared value is a copy

  // An explicit, more general type: any length, and lossless conversions on setValue.
  const auto v = SharedVariable::create(Tensor(DType::Float64, {2}), "v",
                                        TensorType(DType::Float64, {kUnknownDim}));
  QCOMPARE(v->type(), TensorType(DType::Float64, {kUnknownDim}));
  Tensor next = Tensor::fromDoubles(DType::Int32, {4}, {1, 2, 3, 4});
  v->setValue(next);
  QCOMPARE(v->value().dtype(), DType::Float64);
  QCOMPARE(v->value().toDoubles(), (std::vector<double>{1, 2, 3, 4}));
  Tensor same = Tensor::fromDoubles(DType::Float64, {1}, {9});
  v->setValue(same);
  same.set({0}, -9);
  QCOMPARE(v->value().item(), 9.0);  // setValue copies as well
}

void TestVariableApply::testSharedVariableSharedByClones() {
  const auto w = SharedVariable::create(Tensor::fromDoubles(DType::Float32, {2}, {1, 2}), "w");
  w->presetId(5);
  const VarPtr clone = w->cloneDetached();
  auto sharedClone = std::dynamic_pointer_cast<SharedVariable>(clone);
  QVERIFY(sharedClone);
  QVERIFY(sharedClone != w);
  QCOMPARE(clone->id(), std::int64_t{5});
  QCOMPARE(qs(clone->name()), QStringLiteral("w"));
  w->setValue(Tensor::fromDoubles(DType::Float32, {2}, {10, 20}));
  QCOMPARE(sharedClone->value().toDoubles(), (std::vector<double>{10, 20}));
  sharedClone->setValue(Tensor::fromDoubles(DType::Float32, {2}, {-1, -2}));
  QCOMPARE(w->value().toDoubles(), (std::vector<double>{-1, -2}));
}

void TestVariableApply::testSharedVariableFilterErrors() {
  const auto w = SharedVariable::create(Tensor(DType::Float32, {2, 3}), "weights");
  auto msg = thrownMessage<TypeError>([&] { w->setValue(Tensor(DType::Float32, {3, 2})); });
  QVERIFY2(msg, "a value of another shape must be refused");
  QVERIFY2(contains(msg, "shared variable 'weights'"), msg->c_str());
  QVERIFY2(contains(msg, "TensorType(float32, (2, 3))"), msg->c_str());
  QVERIFY2(contains(msg, "(3, 2)"), msg->c_str());
  msg = thrownMessage<TypeError>([&] { w->setValue(Tensor(DType::Float64, {2, 3})); });
  QVERIFY2(contains(msg, "lose information"), msg ? msg->c_str() : "no error");
  QCOMPARE(w->value().shape(), (Shape{2, 3}));  // refused values change nothing
  QCOMPARE(w->value().dtype(), DType::Float32);
  // The initial value must fit the explicit type too.
  msg = thrownMessage<TypeError>([] {
    SharedVariable::create(Tensor(DType::Float32, {4}), "b", TensorType(DType::Float32, {3}));
  });
  QVERIFY2(contains(msg, "shared variable 'b'"), msg ? msg->c_str() : "no error");
}

void TestVariableApply::testTestValues() {
  const VarPtr x = Variable::create(TensorType(DType::Float64, {kUnknownDim, 2}), "x");
  x->setTestValue(Tensor(DType::Float64, {5, 2}));
  QVERIFY(x->testValue().has_value());
  QCOMPARE(x->testValue()->shape(), (Shape{5, 2}));
  // Lossless conversion happens when set.
  x->setTestValue(Tensor::fromDoubles(DType::Int32, {1, 2}, {3, 4}));
  QCOMPARE(x->testValue()->dtype(), DType::Float64);
  QCOMPARE(x->testValue()->toDoubles(), (std::vector<double>{3, 4}));

  auto msg = thrownMessage<TypeError>([&] { x->setTestValue(Tensor(DType::Float64, {5, 3})); });
  QVERIFY2(msg, "a test value of the wrong shape must be refused");
  QVERIFY2(contains(msg, "test value of 'x'"), msg->c_str());
  QVERIFY2(contains(msg, "dimension 1 must be 2"), msg->c_str());
  QCOMPARE(x->testValue()->shape(),
           (Shape{1, 2}));  // the refused value did not replace the old one
  msg = thrownMessage<TypeError>([&] { x->setTestValue(Tensor(DType::Float32, {5})); });
  QVERIFY2(contains(msg, "test value of 'x'"), msg ? msg->c_str() : "no error");
  x->clearTestValue();
  QVERIFY(!x->testValue().has_value());

  const VarPtr unnamed = Variable::create(kVec3);
  msg = thrownMessage<TypeError>([&] { unnamed->setTestValue(Tensor(DType::Float32, {4})); });
  QVERIFY2(contains(msg, "test value of variable"), msg ? msg->c_str() : "no error");
}

void TestVariableApply::testDisplayName() {
  const VarPtr x = Variable::create(kVec3, "x");
  const VarPtr anon = Variable::create(kMatrix);
  QCOMPARE(qs(x->displayName()), QStringLiteral("x"));
  QCOMPARE(qs(anon->displayName()), QStringLiteral("fmatrix"));
  const VarPtr y = elemwise(ScalarOp::Neg, {x});
  QCOMPARE(qs(y->displayName()), QStringLiteral("Elemwise{neg}"));
  y->setName("y");
  QCOMPARE(qs(y->displayName()), QStringLiteral("y"));
}

void TestVariableApply::testOutputKeepsUpstreamAlive() {
  std::weak_ptr<Variable> weakX, weakY;
  std::weak_ptr<Apply> weakNegNode, weakExpNode;
  std::weak_ptr<Variable> weakConst;
  VarPtr z;
  {
    const VarPtr x = Variable::create(kVec3, "x");
    const auto c = Constant::create(Tensor::full(DType::Float32, {3}, 1));
    const VarPtr y = elemwise(ScalarOp::Neg, {x});
    z = elemwise(ScalarOp::Add, {elemwise(ScalarOp::Exp, {y}), c});
    weakX = x;
    weakY = y;
    weakConst = c;
    weakNegNode = y->owner()->weak_from_this();
    weakExpNode = z->owner()->input(0)->owner()->weak_from_this();
  }
  // Only z is held: its node holds exp(y), which holds y's node, which holds x.
  QVERIFY(!weakX.expired());
  QVERIFY(!weakY.expired());
  QVERIFY(!weakConst.expired());
  QVERIFY(!weakNegNode.expired());
  QVERIFY(!weakExpNode.expired());
  QCOMPARE(weakY.lock().get(), &weakNegNode.lock()->outputRef(0));  // aliasing: same object
  z.reset();
  QVERIFY(weakX.expired());
  QVERIFY(weakY.expired());
  QVERIFY(weakConst.expired());
  QVERIFY(weakNegNode.expired());
  QVERIFY(weakExpNode.expired());
}

void TestVariableApply::testOutputKeepsOnlyUpstreamAlive() {
  const VarPtr x = Variable::create(kVec3, "x");
  const VarPtr y = elemwise(ScalarOp::Neg, {x});
  std::weak_ptr<Apply> downstream;
  {
    const VarPtr z = elemwise(ScalarOp::Exp, {y});
    downstream = z->owner()->weak_from_this();
  }
  // y is held; the node that consumed y is downstream and nobody holds it.
  QVERIFY(downstream.expired());
  QVERIFY(y->owner() != nullptr);
  QCOMPARE(y->owner()->input(0), x);
}

void TestVariableApply::testLongChainReleaseIsIterative() {
  // Note [Iterative release]: recursive destruction of 200,000 nodes would overflow the stack.
  constexpr int kLength = 200'000;
  const auto neg = std::make_shared<Elemwise>(ScalarOp::Neg);
  std::weak_ptr<Variable> weakRoot;
  std::weak_ptr<Apply> weakMiddle;
  VarPtr v = Variable::create(kVec3, "root");
  weakRoot = v;
  for (int i = 0; i < kLength; ++i) {
    v = Apply::create(neg, {v}, {kVec3})->output(0);
    if (i == kLength / 2) weakMiddle = v->owner()->weak_from_this();
  }
  QVERIFY(!weakRoot.expired());
  QVERIFY(!weakMiddle.expired());
  v.reset();  // would crash with a stack overflow when recursive
  QVERIFY(weakRoot.expired());
  QVERIFY(weakMiddle.expired());

  // The same through a node with two inputs: both chains are released.
  VarPtr a = Variable::create(kVec3, "a"), b = Variable::create(kVec3, "b");
  std::weak_ptr<Variable> weakA = a, weakB = b;
  const auto add = std::make_shared<Elemwise>(ScalarOp::Add);
  for (int i = 0; i < kLength / 2; ++i) {
    a = Apply::create(neg, {a}, {kVec3})->output(0);
    b = Apply::create(neg, {b}, {kVec3})->output(0);
  }
  VarPtr joined = Apply::create(add, {a, b}, {kVec3})->output(0);
  a.reset();
  b.reset();
  QVERIFY(!weakA.expired() && !weakB.expired());
  joined.reset();
  QVERIFY(weakA.expired());
  QVERIFY(weakB.expired());
}

void TestVariableApply::testCloneWithNewInputs() {
  const VarPtr x = Variable::create(kVec3, "x"), y = Variable::create(kVec3, "y");
  ApplyPtr node;
  {
    NameScope scope("block");
    node = std::make_shared<Elemwise>(ScalarOp::Add)->makeNode({x, y});
  }
  node->presetId(42);
  Variable& out = node->outputRef(0);
  out.presetId(43);
  out.setName("sum");
  out.setTestValue(Tensor::full(DType::Float32, {3}, 2));

  const VarPtr a = Variable::create(kVec3, "a"), b = Variable::create(kVec3, "b");
  const ApplyPtr copy = node->cloneWithNewInputs({a, b});
  QVERIFY(copy != node);
  QCOMPARE(copy->opPtr(), node->opPtr());
  QCOMPARE(copy->inputs(), (std::vector<VarPtr>{a, b}));
  QCOMPARE(copy->id(), std::int64_t{42});
  QCOMPARE(qs(copy->scope()), QStringLiteral("block"));
  QCOMPARE(copy->site(), node->site());
  const Variable& copyOut = copy->outputRef(0);
  QVERIFY(&copyOut != &out);
  QCOMPARE(copyOut.id(), std::int64_t{43});
  QCOMPARE(qs(copyOut.name()), QStringLiteral("sum"));
  QCOMPARE(qs(copyOut.scope()), QStringLiteral("block"));
  QCOMPARE(copyOut.type(), out.type());
  QCOMPARE(copyOut.owner(), copy.get());
  QVERIFY(copyOut.testValue().has_value());
  QCOMPARE(copyOut.testValue()->toDoubles(), (std::vector<double>{2, 2, 2}));
  // The original is untouched.
  QCOMPARE(node->inputs(), (std::vector<VarPtr>{x, y}));
  QCOMPARE(out.owner(), node.get());

  const auto msg = thrownMessage<GraphError>([&] { node->cloneWithNewInputs({a}); });
  QVERIFY2(contains(msg, "got 1 inputs, expected 2"), msg ? msg->c_str() : "no error");
}

void TestVariableApply::testApplyStr() {
  const VarPtr x = Variable::create(kVec3, "x"), y = Variable::create(kVec3, "y");
  const VarPtr sum = elemwise(ScalarOp::Add, {x, y});
  QCOMPARE(qs(sum->owner()->str()), QStringLiteral("Elemwise{add}(x, y)"));
  const VarPtr anon = Variable::create(kVec3);
  const VarPtr prod = elemwise(ScalarOp::Mul, {elemwise(ScalarOp::Neg, {x}), anon});
  QCOMPARE(qs(prod->owner()->str()), QStringLiteral("Elemwise{mul}(Elemwise{neg}, fvector)"));
  const VarPtr c = cast(x, DType::Float64);
  QCOMPARE(qs(c->owner()->str()), QStringLiteral("Elemwise{cast{float64}}(x)"));
}

void TestVariableApply::testMakeNodeNeedsSharedOp() {
  const VarPtr x = Variable::create(kVec3, "x");
  const Elemwise onStack(ScalarOp::Neg);
  auto msg = thrownMessage<GraphError>([&] { onStack.makeNode({x}); });
  QVERIFY2(msg, "makeNode on an op not held by a shared_ptr must throw");
  QVERIFY2(contains(msg, "Elemwise{neg}"), msg->c_str());
  QVERIFY2(contains(msg, "shared_ptr"), msg->c_str());
  msg = thrownMessage<GraphError>([&] { onStack({x}); });
  QVERIFY(msg);
  // The same op held by a shared_ptr works.
  const auto held = std::make_shared<Elemwise>(ScalarOp::Neg);
  QCOMPARE(held->makeNode({x})->opPtr().get(), static_cast<const Op*>(held.get()));
}

void TestVariableApply::testMakeNodeNullInput() {
  const auto add = std::make_shared<Elemwise>(ScalarOp::Add);
  const auto msg = thrownMessage<TypeError>([&] {
    add->makeNode({Variable::create(kVec3), nullptr});
  });
  QVERIFY2(contains(msg, "input 1 is a null variable"), msg ? msg->c_str() : "no error");
}

void TestVariableApply::testApplyCreateChecks() {
  const VarPtr x = Variable::create(kVec3, "x");
  QVERIFY_THROWS_EXCEPTION(GraphError, Apply::create(nullptr, {x}, {kVec3}));
  const auto neg = std::make_shared<Elemwise>(ScalarOp::Neg);
  QVERIFY_THROWS_EXCEPTION(GraphError, Apply::create(neg, {nullptr}, {kVec3}));
  // Two outputs: each knows its owner and index, and keeps the node alive.
  const ApplyPtr two = Apply::create(neg, {x}, {kVec3, kMatrix});
  QCOMPARE(two->nOutputs(), 2);
  const std::vector<VarPtr> outs = two->outputs();
  QCOMPARE(outs[1]->index(), 1);
  QCOMPARE(outs[1]->type(), kMatrix);
  QCOMPARE(outs[1]->owner(), two.get());
  QCOMPARE(qs(outs[1]->displayName()), QStringLiteral("Elemwise{neg}.1"));
  QVERIFY_THROWS_EXCEPTION(std::out_of_range, two->output(2));
  // operator() is for single-output ops only.
  const auto split = std::make_shared<SplitOp>();
  QCOMPARE(split->makeNode({x})->nOutputs(), 2);
  const auto msg = thrownMessage<GraphError>([&] { (*split)({x}); });
  QVERIFY2(contains(msg, "has 2 outputs"), msg ? msg->c_str() : "no error");
}

TSCOPE_TEST_MAIN(TestVariableApply)
#include "tst_variable_apply.moc"
