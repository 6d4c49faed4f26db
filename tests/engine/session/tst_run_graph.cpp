// runGraph, the use case behind `tensorscope run`: values by name, test values, seeded random
// values, and refusals that say what is missing in the engine's terms (no front end's flags).

#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/session/run_graph.h"
#include "test_main.h"

using namespace tscope::engine;
using session::MissingInputValue;
using session::runGraph;
using session::RunInputs;

namespace {

// y = x + b with x: float32[?, 4] and b: float32[4]; `x` gets a test value when asked.
struct Small {
  VarPtr x, b, y;
  std::unique_ptr<FunctionGraph> graph;
};

Small small(bool xTestValue) {
  Small s;
  s.x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 4}), "x");
  if (xTestValue) s.x->setTestValue(Tensor::fromDoubles(DType::Float32, {1, 4}, {1, 2, 3, 4}));
  s.b = Variable::create(TensorType(DType::Float32, {4}), "b");
  s.y = s.x + s.b;
  s.graph =
      std::make_unique<FunctionGraph>(std::vector<VarPtr>{s.x, s.b}, std::vector<VarPtr>{s.y});
  return s;
}

bool namesAFlag(const std::string& message) {
  return message.find("--") != std::string::npos;
}

}  // namespace

class TestRunGraph : public QObject {
  Q_OBJECT

 private slots:
  void testGivenTestAndRandomValues() {
    Small s = small(true);
    RunInputs in;
    in.randomSeed = 3;
    const session::RunResult r = runGraph(*s.graph, in);
    QCOMPARE(r.inputSource, (std::vector<std::string>{"test value", "random"}));
    QCOMPARE(r.outputs.at(0).shape(), (Shape{1, 4}));
    in.byName["b"] = Tensor::fromDoubles(DType::Float32, {4}, {10, 20, 30, 40});
    const session::RunResult given = runGraph(*s.graph, in);
    QCOMPARE(given.inputSource, (std::vector<std::string>{"test value", "given"}));
    QCOMPARE(given.outputs.at(0).toDoubles(), (std::vector<double>{11, 22, 33, 44}));
  }

  // No value and no random values: the message names the input and its type and says what would
  // do, without naming a command-line flag.
  void testMissingValueSaysWhatIsMissing() {
    Small s = small(true);
    try {
      runGraph(*s.graph, RunInputs{});
      QFAIL("runGraph ran without a value for b");
    } catch (const MissingInputValue& e) {
      const std::string what = e.what();
      QCOMPARE(e.input, std::string("b"));
      QVERIFY(e.randomPossible);
      QVERIFY2(what.find("no value for input 'b' (" + s.b->type().str() + ")") != std::string::npos,
               e.what());
      QVERIFY2(what.find("give one, or use random inputs") != std::string::npos, e.what());
      QVERIFY2(!namesAFlag(what), e.what());
    }
  }

  // Random values asked for, but the input has an unknown dimension: random values are not
  // offered as the way out.
  void testRandomValuesNeedKnownDimensions() {
    Small s = small(false);
    RunInputs in;
    in.randomSeed = 1;
    try {
      runGraph(*s.graph, in);
      QFAIL("runGraph shaped random values for x: float32[?, 4]");
    } catch (const MissingInputValue& e) {
      const std::string what = e.what();
      QCOMPARE(e.input, std::string("x"));
      QVERIFY(!e.randomPossible);
      QVERIFY2(what.find("no value for input 'x'") != std::string::npos, e.what());
      QVERIFY2(what.find("unknown dimensions") != std::string::npos, e.what());
      QVERIFY2(!namesAFlag(what), e.what());
    }
  }

  void testUnknownNameListsTheInputs() {
    Small s = small(true);
    RunInputs in;
    in.byName["nope"] = Tensor::zeros(DType::Float32, {4});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runGraph(*s.graph, in));
    try {
      runGraph(*s.graph, in);
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("no input named 'nope'; its inputs are: x, b") !=
                   std::string::npos,
               e.what());
    }
  }
};

TSCOPE_TEST_MAIN(TestRunGraph)
#include "tst_run_graph.moc"
