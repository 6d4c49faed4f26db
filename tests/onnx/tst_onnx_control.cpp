// ONNX and the debugging ops: If imports onto IfElse (only the taken branch runs, branch nodes keep
// their ONNX names, outer values and branch initializers flow in, bad branches are refused,
// branches of different ranks take the rank ONNX declares or the one the condition is known to
// take, the other branch failing clearly when taken), IfElse
// exports as If (checked by ONNX's checker and strict shape inference in writeOnnx; the model read
// back computes what the graph does for both conditions, nested and differentiated IfElses too),
// and BreakPoint exports as one Identity per monitored value with its name in the doc string.
#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/graph/source_site.h"
#include "engine/io/onnx/onnx_export.h"
#include "engine/io/onnx/onnx_import.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/session/run_graph.h"
#include "onnx_builder.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::engine;
using namespace tscope::test::onnx;

namespace {

::onnx::GraphProto& branch(::onnx::NodeProto& n, const std::string& attr, const std::string& name) {
  auto& a = newAttr(n, attr, ::onnx::AttributeProto::GRAPH);
  a.mutable_g()->set_name(name);
  return *a.mutable_g();
}
void branchNode(::onnx::GraphProto& g, const std::string& type, const std::string& name,
                const std::vector<std::string>& ins, const std::string& out) {
  auto* n = g.add_node();
  n->set_op_type(type);
  n->set_name(name);
  for (const auto& i : ins) n->add_input(i);
  n->add_output(out);
}
void branchOutput(::onnx::GraphProto& g, const std::string& name) {
  auto* o = g.add_output();
  o->set_name(name);
  o->mutable_type()->mutable_tensor_type()->set_elem_type(onnxType(DType::Float32));
}

// y = If(c) then Exp(x) * w else Neg(x) + b, where w is an outer initializer and b the else
// branch's own.
ModelBuilder ifModel(bool cond, const Tensor& x) {
  ModelBuilder m(13);
  m.input("c", Tensor::fromDoubles(DType::Bool, {1}, {cond ? 1.0 : 0.0}));
  m.input("x", x);
  m.initializer("w", Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3}));
  auto& n = m.node("If", {"c"}, {"y"});
  n.set_name("/decoder/If");
  auto& t = branch(n, "then_branch", "then");
  branchNode(t, "Exp", "/decoder/then/Exp", {"x"}, "t0");
  branchNode(t, "Mul", "/decoder/then/Mul", {"t0", "w"}, "t1");
  branchOutput(t, "t1");
  auto& e = branch(n, "else_branch", "else");
  auto* b = e.add_initializer();
  b->set_name("b");
  b->set_data_type(onnxType(DType::Float32));
  b->add_dims(3);
  const std::vector<float> bv{10, 20, 30};
  b->set_raw_data(std::string(reinterpret_cast<const char*>(bv.data()), bv.size() * 4));
  branchNode(e, "Neg", "/decoder/else/Neg", {"x"}, "e0");
  branchNode(e, "Add", "/decoder/else/Add", {"e0", "b"}, "e1");
  branchOutput(e, "e1");
  m.output("y", DType::Float32);
  return m;
}

// The If nodes of a model's graph, nested ones included, and the deepest nesting.
void collectIfs(const ::onnx::GraphProto& g, int depth, int& count, int& deepest) {
  for (const auto& n : g.node()) {
    if (n.op_type() != "If") continue;
    ++count;
    deepest = std::max(deepest, depth + 1);
    for (const auto& a : n.attribute())
      if (a.has_g()) collectIfs(a.g(), depth + 1, count, deepest);
  }
}

// Exports g, checks the model's If nodes, reads it back and compares the outputs with g's for each
// input set (by name). Returns the imported graph's IfElse count.
int ifRoundTrip(const FunctionGraph& g, const std::vector<std::map<std::string, Tensor>>& cases,
                int expectIfs, int expectDepth) {
  std::string bytes;
  try {
    bytes = io::writeOnnx(g);  // the checker and strict shape inference run here
  } catch (const std::exception& e) {
    QTest::qFail(e.what(), __FILE__, __LINE__);
    return -1;
  }
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return -1;
  int count = 0, deepest = 0;
  collectIfs(model.graph(), 0, count, deepest);
  if (count != expectIfs || deepest != expectDepth) {
    QTest::qFail(
        ("found " + std::to_string(count) + " If nodes nested " + std::to_string(deepest) + " deep")
            .c_str(),
        __FILE__, __LINE__);
    return -1;
  }
  const auto imported = io::readOnnx(bytes, "ifelse.onnx");
  for (const auto& inputs : cases) {
    session::RunInputs run;
    run.byName = inputs;
    const auto want = session::runGraph(g, run).outputs;
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      run.mode = mode;
      const auto got = session::runGraph(*imported.document.original, run).outputs;
      if (got.size() != want.size()) return -1;
      for (std::size_t i = 0; i < want.size(); ++i)
        if (got[i].dtype() != want[i].dtype() || got[i].shape() != want[i].shape() ||
            !got[i].allClose(want[i], 1e-5, 1e-6)) {
          QTest::qFail(("output " + std::to_string(i) + ": expected " + want[i].toString() +
                        ", found " + got[i].toString())
                           .c_str(),
                       __FILE__, __LINE__);
          return -1;
        }
    }
  }
  return countOps(*imported.document.original, "IfElse");
}

Tensor vec3(double a, double b, double c) {
  return Tensor::fromDoubles(DType::Float32, {3}, {a, b, c});
}

}  // namespace

class TestOnnxControl : public QObject {
  Q_OBJECT

 private slots:
  void testIfImport() {
    const Tensor x = Tensor::fromDoubles(DType::Float32, {3}, {0.5, -1, 2});
    checkModel(ifModel(true, x),
               {Tensor::fromDoubles(DType::Float32, {3},
                                    {std::exp(0.5), 2 * std::exp(-1.0), 3 * std::exp(2.0)})},
               "IfElse");
    checkModel(ifModel(false, x), {Tensor::fromDoubles(DType::Float32, {3}, {9.5, 21, 28})},
               "IfElse");
    // The branch bodies keep the ONNX node names as scopes.
    const auto imported = io::readOnnx(ifModel(true, x).bytes(), "if.onnx");
    const IfElse* op = nullptr;
    for (const Apply* a : imported.document.original->nodes())
      if (auto* p = dynamic_cast<const IfElse*>(&a->op())) op = p;
    QVERIFY(op != nullptr);
    bool namedExp = false, namedNeg = false;
    for (const Apply* a : op->thenGraph().nodes())
      namedExp = namedExp || (a->op().str() == "Elemwise{exp}" &&
                              std::string(a->scope()).find("then") != std::string::npos);
    for (const Apply* a : op->elseGraph().nodes())
      namedNeg = namedNeg || std::string(a->scope()).find("else") != std::string::npos;
    QVERIFY(namedExp);
    QVERIFY(namedNeg);
    // No branch node leaks into the outer graph.
    QCOMPARE(countOps(*imported.document.original, "Elemwise"), 0);
  }

  void testIfRefused() {
    ModelBuilder m(13);
    m.input("c", Tensor::fromDoubles(DType::Bool, {1}, {1}));
    m.input("x", Tensor::fromDoubles(DType::Float32, {2}, {1, 2}));
    auto& n = m.node("If", {"c"}, {"y"});
    auto& t = branch(n, "then_branch", "then");
    branchNode(t, "Exp", "/then/Exp", {"x"}, "t0");
    branchOutput(t, "t0");
    m.output("y", DType::Float32);
    checkRefused(m, "else_branch");
  }

  // Note [IfElse branches of another rank]: y = If(c) then Squeeze(x, axis 1) (rank 1) else
  // Identity(x) (rank 2), with c given at run time and y declared as a vector: the then branch
  // gives its value, the else branch fails at its AssertType naming the shape it gave. Without the
  // declaration the rank is unknown and the import is refused.
  void testIfBranchesOfAnotherRank() {
    const Tensor x = Tensor::fromDoubles(DType::Float32, {3, 1}, {1, 2, 3});
    auto model = [&](bool cond, bool declared) {
      ModelBuilder m(11);
      m.input("c", Tensor::fromDoubles(DType::Bool, {1}, {cond ? 1.0 : 0.0}));
      m.input("x", x, {kUnknownDim, 1});
      auto& n = m.node("If", {"c"}, {"y"});
      n.set_name("/pool/If");
      auto& t = branch(n, "then_branch", "then");
      branchNode(t, "Squeeze", "/pool/Squeeze", {"x"}, "t0");
      attrInts(*t.mutable_node(0), "axes", {1});
      branchOutput(t, "t0");
      auto& e = branch(n, "else_branch", "else");
      branchNode(e, "Identity", "/pool/Identity", {"x"}, "e0");
      branchOutput(e, "e0");
      m.output("y", DType::Float32);
      if (declared)
        m.proto()
            .mutable_graph()
            ->mutable_output(0)
            ->mutable_type()
            ->mutable_tensor_type()
            ->mutable_shape()
            ->add_dim()
            ->set_dim_param("n");
      return m;
    };
    checkModel(model(true, true), {Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3})}, "IfElse");
    const auto imported = io::readOnnx(model(false, true).bytes(), "if.onnx");
    const FunctionGraph& g = *imported.document.original;
    QCOMPARE(g.outputs()[0]->type(), TensorType(DType::Float32, {kUnknownDim}));
    // The else body ends in the AssertType, which carries the If's scope.
    const IfElse* op = nullptr;
    for (const Apply* a : g.nodes())
      if (auto* p = dynamic_cast<const IfElse*>(&a->op())) op = p;
    QVERIFY(op != nullptr);
    const Apply* guard = op->elseGraph().outputs()[0]->owner();
    QVERIFY(guard != nullptr);
    QCOMPARE(guard->op().str(), std::string("AssertType{shape=[-1]}"));
    QCOMPARE(guard->scope(), std::string("pool"));
    QCOMPARE(countOps(op->thenGraph(), "AssertType"), 0);
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      session::RunInputs run;
      run.byName = model(false, true).values();
      run.mode = mode;
      std::string error;
      try {
        session::runGraph(g, run);
      } catch (const std::exception& ex) {
        error = ex.what();
      }
      QVERIFY2(
          error.find("AssertType{shape=[-1]}") != std::string::npos &&
              error.find("expected a value of shape (?,), found shape (3, 1)") != std::string::npos,
          error.c_str());
    }
    checkRefused(model(true, false),
                 "output 0 'y' is TensorType(float32, (?,)) in then_branch and "
                 "TensorType(float32, (?, 1)) in else_branch, and the condition is known only at "
                 "run time");
  }

  // PyTorch's opset-11 Squeeze of an axis it cannot prove is 1 (Faster R-CNN's box_roi_pool):
  // If(Equal(Gather(Shape(x), 1), 1)) then Squeeze(x, axis 1) else Identity(x), no type declared
  // for the If's output. x's type knows axis 1 is 1, so the importer computes the condition and
  // takes the then branch's rank.
  void testIfSqueezeOfAKnownAxis() {
    const Tensor x = Tensor::fromDoubles(DType::Float32, {4, 1}, {1, 2, 3, 4});
    ModelBuilder m(11);
    m.input("x", x, {kUnknownDim, 1});
    m.initializer("one", Tensor::fromDoubles(DType::Int64, {1}, {1}));
    m.node("Shape", {"x"}, {"s"});
    m.node("Gather", {"s", "one"}, {"d"});
    m.node("Equal", {"d", "one"}, {"c"});
    auto& n = m.node("If", {"c"}, {"y"});
    auto& t = branch(n, "then_branch", "then");
    branchNode(t, "Squeeze", "/Squeeze", {"x"}, "t0");
    attrInts(*t.mutable_node(0), "axes", {1});
    branchOutput(t, "t0");
    auto& e = branch(n, "else_branch", "else");
    branchNode(e, "Identity", "/Identity", {"x"}, "e0");
    branchOutput(e, "e0");
    m.node("Mul", {"y", "y"}, {"z"});
    m.output("z", DType::Float32);
    checkModel(m, {Tensor::fromDoubles(DType::Float32, {4}, {1, 4, 9, 16})}, "IfElse");
    const auto imported = io::readOnnx(m.bytes(), "squeeze.onnx");
    const FunctionGraph& g = *imported.document.original;
    for (const Apply* a : g.nodes())
      if (auto* op = dynamic_cast<const IfElse*>(&a->op()))
        QCOMPARE(countOps(op->elseGraph(), "AssertType"), 1);
    // Exported, the AssertType is an Identity again: the model read back computes the same.
    std::string bytes;
    try {
      bytes = io::writeOnnx(g);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    session::RunInputs run;
    run.byName["x"] = x;
    const auto out = session::runGraph(*io::readOnnx(bytes, "again.onnx").document.original, run);
    QVERIFY(out.outputs.at(0).allClose(Tensor::fromDoubles(DType::Float32, {4}, {1, 4, 9, 16})));
  }

  // Two outputs, one of them a branch input passed through (an Identity in the subgraph), a
  // shared variable and a constant read inside a branch, scopes on the branch nodes.
  void testIfElseExport() {
    auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
    auto w = SharedVariable::create(vec3(1, 2, 3), "w");
    VarPtr c = gt(sum(x), constant(0.0, DType::Float32));
    std::vector<VarPtr> thenOut, elseOut;
    {
      NameScope scope("then");
      thenOut = {exp(x) * w, x};
    }
    {
      NameScope scope("else");
      elseOut = {neg(x) + 1.0, x * 2.0};
    }
    std::vector<VarPtr> y;
    {
      NameScope scope("decoder");
      y = ifelse(c, thenOut, elseOut, "gate");
    }
    FunctionGraph g({x, w}, {y[0], y[1] + 1.0});
    QCOMPARE(ifRoundTrip(g, {{{"x", vec3(0.5, -1, 2)}}, {{"x", vec3(-0.5, -1, 2)}}}, 1, 1), 1);
    // The branch nodes keep their scopes through ONNX node names.
    const auto imported = io::readOnnx(io::writeOnnx(g), "ifelse.onnx");
    const IfElse* op = nullptr;
    for (const Apply* a : imported.document.original->nodes())
      if (auto* p = dynamic_cast<const IfElse*>(&a->op())) op = p;
    QVERIFY(op != nullptr);
    bool scoped = false;
    for (const Apply* a : op->thenGraph().nodes())
      scoped = scoped || (a->op().str() == "Elemwise{exp}" && a->scope() == "then");
    QVERIFY2(scoped, "the then branch's Exp keeps its scope");
  }

  // A float condition (nonzero: then) is cast to bool; an IfElse inside a branch becomes an If
  // inside a subgraph, reading values of both enclosing scopes.
  void testNestedIfElseExport() {
    auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
    auto s = Variable::create(TensorType(DType::Float32, {}), "s");
    VarPtr inner = ifelse(gt(s, constant(1.0, DType::Float32)), exp(x), x * 3.0);
    VarPtr y = ifelse(s, inner + x, neg(x));
    FunctionGraph g({x, s}, {y});
    const Tensor scalar2 = Tensor::scalar(DType::Float32, 2.0);
    const Tensor scalarHalf = Tensor::scalar(DType::Float32, 0.5);
    const Tensor scalar0 = Tensor::scalar(DType::Float32, 0.0);
    QCOMPARE(ifRoundTrip(g,
                         {{{"x", vec3(0.5, -1, 2)}, {"s", scalar2}},
                          {{"x", vec3(0.5, -1, 2)}, {"s", scalarHalf}},
                          {{"x", vec3(0.5, -1, 2)}, {"s", scalar0}}},
                         2, 2),
             1);
  }

  // The gradient of an IfElse is another IfElse on the same condition (a training graph): both
  // export, and the gradients read back agree for both conditions.
  void testIfElseGradientExport() {
    auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
    auto w = SharedVariable::create(vec3(0.5, -1, 2), "w");
    VarPtr c = gt(sum(x), constant(0.0, DType::Float32));
    VarPtr y = ifelse(c, tanh(x * w), sqr(w) - x);
    VarPtr loss = sum(y * y);
    loss->setName("loss");
    const auto g = grad(loss, std::vector<VarPtr>{w, x});
    FunctionGraph fg({x, w}, {loss, g[0], g[1]});
    QCOMPARE(ifRoundTrip(fg, {{{"x", vec3(0.5, -1, 2)}}, {{"x", vec3(-0.5, -1, 0.25)}}}, 2, 1), 2);
  }

  void testBreakPointExport() {
    auto x = Variable::create(TensorType(DType::Float32, {3}), "x");
    VarPtr loss = sum(x * x);
    const auto seen = breakpoint("loss_spike", gt(loss, constant(10.0, DType::Float32)), {loss, x});
    VarPtr y = seen[1] * seen[0];
    FunctionGraph g({x}, {y});
    const std::string bytes = io::writeOnnx(g);
    ::onnx::ModelProto model;
    QVERIFY(model.ParseFromString(bytes));
    int identities = 0;
    for (const auto& n : model.graph().node())
      if (n.op_type() == "Identity" &&
          n.doc_string().find("BreakPoint{loss_spike}") != std::string::npos)
        ++identities;
    QCOMPARE(identities, 2);
    // And it still computes the same.
    const auto imported = io::readOnnx(bytes, "bp.onnx");
    session::RunInputs run;
    run.byName["x"] = Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3});
    const auto out = session::runGraph(*imported.document.original, run).outputs;
    QCOMPARE(out.size(), std::size_t{1});
    QCOMPARE(out[0].at({2}), 42.0);
  }
};

TSCOPE_TEST_MAIN(TestOnnxControl)
#include "tst_onnx_control.moc"
