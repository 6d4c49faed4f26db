// The tutorial ops of examples/custom_op: value, shape, gradient and R-op tests, as every op in the
// engine gets, plus bad inputs and their registration for files.
#include "../../examples/custom_op/custom_ops.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/op_test_support.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::examples;
using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

class TestCustomOp : public QObject {
  Q_OBJECT

 private slots:
  void testDoubleOp_data() { dtypes(); }
  void testDoubleOp() {
    QFETCH(DType, dtype);
    Tensor x = randomTensor(dtype, {2, 3, 4}, 1);
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{doubleOp(in[0])}; }, {x});
    std::vector<double> expected = x.toDoubles();
    for (double& v : expected) v *= 2;
    QVERIFY(closeTo(out[0], Tensor::fromDoubles(dtype, {2, 3, 4}, expected)));
    auto build = [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{doubleOp(in[0])}; };
    TSCOPE_CHECK(checkInferShape(build, {x}));
    TSCOPE_CHECK(verifyGrad(build, {x}));
    TSCOPE_CHECK(checkRopLop(build, {x}));
  }

  void testProdOp_data() { dtypes(); }
  void testProdOp() {
    QFETCH(DType, dtype);
    Tensor x = randomTensor(dtype, {3, 5}, 2), y = randomTensor(dtype, {3, 5}, 3);
    auto build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{prodOp(in[0], in[1])};
    };
    auto out = evaluate(build, {x, y});
    std::vector<double> a = x.toDoubles(), b = y.toDoubles();
    for (std::size_t i = 0; i < a.size(); ++i) a[i] *= b[i];
    QVERIFY(closeTo(out[0], Tensor::fromDoubles(dtype, {3, 5}, a)));
    TSCOPE_CHECK(checkInferShape(build, {x, y}));
    TSCOPE_CHECK(verifyGrad(build, {x, y}));
    TSCOPE_CHECK(checkRopLop(build, {x, y}));
  }

  void testSumDiffOp_data() { dtypes(); }
  void testSumDiffOp() {
    QFETCH(DType, dtype);
    Tensor x = randomTensor(dtype, {4, 2}, 4), y = randomTensor(dtype, {4, 2}, 5);
    auto build = [](const std::vector<VarPtr>& in) { return sumDiffOp(in[0], in[1]); };
    auto out = evaluate(build, {x, y});
    std::vector<double> a = x.toDoubles(), b = y.toDoubles(), s(a.size()), d(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      s[i] = a[i] + b[i];
      d[i] = a[i] - b[i];
    }
    QVERIFY(closeTo(out[0], Tensor::fromDoubles(dtype, {4, 2}, s)));
    QVERIFY(closeTo(out[1], Tensor::fromDoubles(dtype, {4, 2}, d)));
    TSCOPE_CHECK(checkInferShape(build, {x, y}));
    TSCOPE_CHECK(verifyGrad(build, {x, y}));
    // Only one output used: the other's gradient arrives as zeros.
    TSCOPE_CHECK(verifyGrad(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{sumDiffOp(in[0], in[1])[1]};
        },
        {x, y}));
    TSCOPE_CHECK(checkRopLop(build, {x, y}));
  }

  void testBadInputs() {
    auto i = Variable::create(TensorType(DType::Int32, {2}), "i");
    try {
      doubleOp(i);
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      QVERIFY2(
          std::string(e.what()).find("expected a float32 or float64 tensor") != std::string::npos,
          e.what());
    }
    auto a = Variable::create(TensorType(DType::Float32, {2}), "a");
    auto b = Variable::create(TensorType(DType::Float64, {2}), "b");
    try {
      prodOp(a, b);
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      QVERIFY2(std::string(e.what()).find("input 1") != std::string::npos, e.what());
    }
    // Shapes that only disagree at run time: a clear execution error.
    try {
      evaluate(
          [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{prodOp(in[0], in[1])}; },
          {Tensor::zeros(DType::Float32, {2, 3}), Tensor::zeros(DType::Float32, {3, 2})});
      QFAIL("expected an error");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("(2, 3) and (3, 2)") != std::string::npos, e.what());
    }
  }

  void testRegistry() {
    OpRegistry registry;
    registerTutorialOps(registry);
    OpPtr op = registry.make("SumDiffOp", nlohmann::json::object());
    QVERIFY(op->equals(SumDiffOp()));
  }

 private:
  void dtypes() {
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float32") << DType::Float32;
    QTest::newRow("float64") << DType::Float64;
  }
};

TSCOPE_TEST_MAIN(TestCustomOp)
#include "tst_custom_op.moc"
