// AssertType (engine/ops/shape/assert_type.h): a value that fits is x itself (a view) with the
// asserted static shape; one that does not fails naming both shapes; another rank fails whenever
// the node runs, and so does its gradient; inferShape, gradients and R-op in float32 and float64,
// props through the registry.
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/shape/assert_type.h"
#include "shape_test_support.h"
#include "test_main.h"

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {
constexpr std::int64_t U = kUnknownDim;

void addFloatRows() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
}
}  // namespace

class TestAssertType : public QObject {
  Q_OBJECT

 private slots:
  void testSameRank_data() { addFloatRows(); }
  void testSameRank() {
    QFETCH(DType, dtype);
    VarPtr v = symbol(dtype, {U, U, U}, "x");
    VarPtr y = assertType(v, {2, U, 4});
    QCOMPARE(y->owner()->op().str(), std::string("AssertType{shape=[2,-1,4]}"));
    QCOMPARE(y->type(), TensorType(dtype, {2, U, 4}));
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 9);
    const Tensor out = performNode(y, {x})[0];
    QVERIFY(out.sharesStorageWith(x));
    QVERIFY(closeTo(evaluate({v}, {y}, {x})[0], x));
    const std::string msg = messageOf([&] {
      evaluate({v}, {y}, {randomTensor(dtype, {2, 3, 5}, 9)});
    });
    QVERIFY2(
        msg.find("expected a value of shape (2, ?, 4), found shape (2, 3, 5)") != std::string::npos,
        msg.c_str());

    GraphBuilder build = unary([](const VarPtr& in) { return assertType(in, {2, U, 4}) * 3.0; });
    TSCOPE_CHECK(checkInferShape(build, {x}));
    TSCOPE_CHECK(verifyGrad(build, {x}));
    TSCOPE_CHECK(checkRopLop(build, {x}));
  }

  void testNoNodeWhenTheTypeSaysSo() {
    VarPtr v = symbol(DType::Float32, {2, 3}, "x");
    QCOMPARE(assertType(v, {U, 3}), v);
    QCOMPARE(assertType(v, {2, 3}), v);
    QVERIFY(assertType(v, {2, 4}) != v);  // a node that fails whenever it runs
    QVERIFY(assertType(v, {6}) != v);
  }

  // Note [IfElse branches of another rank]: the type has the asserted rank; every run fails at the
  // node, and a gradient through it fails the same way, naming the shape x had.
  void testAnotherRank() {
    VarPtr v = symbol(DType::Float32, {U, 1}, "x");
    VarPtr y = assertType(v, {U});
    QCOMPARE(y->type(), TensorType(DType::Float32, {U}));
    const Tensor x = iota(DType::Float32, {3, 1});
    const std::string msg = messageOf([&] { evaluate({v}, {y * 2.0}, {x}); });
    QVERIFY2(
        msg.find("AssertType{shape=[-1]}: expected a value of shape (?,), found shape (3, 1)") !=
            std::string::npos,
        msg.c_str());
    // The run fails at the node (ExecutionError), which the message names with its creation site.
    QVERIFY2(msg.starts_with("AssertType{shape=[-1]} (node ") &&
                 msg.find("created at tst_assert_type.cpp:") != std::string::npos,
             msg.c_str());
    const VarPtr g = grad(sum(y), v);
    QCOMPARE(g->type(), v->type());
    QCOMPARE(g->owner()->op().str(), std::string("AssertType{shape=[-1,1]}"));
    QCOMPARE(g->owner()->site(), y->owner()->site());
    // The gradient graph alone (it does not need y's value) fails too: (3,) is not (?, 1).
    VarPtr gy = symbol(DType::Float32, {U}, "gy");
    const VarPtr back = Lop({y}, {v}, {gy})[0];
    const std::string gmsg =
        messageOf([&] { evaluate({gy}, {back}, {iota(DType::Float32, {3})}); });
    QVERIFY2(gmsg.find("expected a value of shape (?, 1), found shape (3,)") != std::string::npos,
             gmsg.c_str());
  }

  void testProps() {
    const OpPtr op = defaultOpRegistry().make("AssertType", {{"shape", {-1, 4}}});
    QCOMPARE(static_cast<const AssertType&>(*op).shape(), (std::vector<std::int64_t>{U, 4}));
    const std::string below = messageOf([] { AssertType({2, -2}); });
    QVERIFY2(below.find("expected dimensions >= 0 (or -1 for unknown), found (2, -2)") !=
                 std::string::npos,
             below.c_str());
    const std::string key = messageOf([] {
      defaultOpRegistry().make("AssertType", {{"shap", {1}}});
    });
    QVERIFY2(key.find("unknown prop \"shap\"") != std::string::npos, key.c_str());
  }
};

TSCOPE_TEST_MAIN(TestAssertType)
#include "tst_assert_type.moc"
