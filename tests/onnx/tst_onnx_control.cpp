// ONNX and the debugging ops: If imports onto IfElse (only the taken branch runs, branch nodes keep
// their ONNX names, outer values and branch initializers flow in, bad branches are refused), and
// BreakPoint exports as one Identity per monitored value with its name in the doc string.
#include "engine/compile/function.h"
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
