// ONNX and Scan (Note [ONNX loops] in onnx_import_loop.cpp, Note [Scan as Scan] in
// onnx_export_control.cpp): ONNX Scan and for-loop Loop import onto one Scan node (values in modes
// none and fast_run against hand-computed ones), what they refuse (reverse scans, while loops), and
// a Scan exported as ONNX Scan (checked by ONNX's checker in writeOnnx) that reads back to the
// same values.
#include "engine/io/onnx/onnx_export.h"
#include "engine/io/onnx/onnx_import.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/session/run_graph.h"
#include "onnx_builder.h"
#include "test_main.h"

using namespace tscope::engine;
using namespace tscope::test::onnx;

namespace {

::onnx::GraphProto& bodyOf(::onnx::NodeProto& n) {
  auto& a = newAttr(n, "body", ::onnx::AttributeProto::GRAPH);
  a.mutable_g()->set_name("body");
  return *a.mutable_g();
}
void bodyValue(::onnx::ValueInfoProto* v, const std::string& name, DType dtype, const Ints& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnxType(dtype));
  t->mutable_shape();
  for (std::int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}
::onnx::NodeProto* bodyNode(::onnx::GraphProto& g, const std::string& type,
                            const std::vector<std::string>& ins, const std::string& out) {
  auto* n = g.add_node();
  n->set_op_type(type);
  n->set_name("/body/" + type + "_" + out);
  for (const auto& i : ins) n->add_input(i);
  n->add_output(out);
  return n;
}

// s[t] = s[t-1] + x[t] (the state), y[t] = s[t] * w (a scan output; w an outer initializer).
ModelBuilder scanModel(bool reverse = false) {
  ModelBuilder m(13);
  m.input("s0", Tensor::fromDoubles(DType::Float32, {2}, {1, 1}));
  m.input("x", Tensor::fromDoubles(DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6}));
  m.initializer("w", Tensor::fromDoubles(DType::Float32, {2}, {2, -1}));
  auto& n = m.node("Scan", {"s0", "x"}, {"s_final", "y"});
  n.set_name("/rnn/Scan");
  attrInt(n, "num_scan_inputs", 1);
  if (reverse) attrInts(n, "scan_input_directions", {1});
  auto& g = bodyOf(n);
  bodyValue(g.add_input(), "s_in", DType::Float32, {2});
  bodyValue(g.add_input(), "x_t", DType::Float32, {2});
  bodyNode(g, "Add", {"s_in", "x_t"}, "s_out");
  bodyNode(g, "Mul", {"s_out", "w"}, "y_t");
  bodyValue(g.add_output(), "s_out", DType::Float32, {2});
  bodyValue(g.add_output(), "y_t", DType::Float32, {2});
  m.output("s_final", DType::Float32);
  m.output("y", DType::Float32);
  return m;
}

// for i in range(5): acc = acc + float(i); scan output acc. The cond is passed through.
ModelBuilder loopModel(bool computedCond = false) {
  ModelBuilder m(13);
  m.input("acc0", Tensor::fromDoubles(DType::Float32, {1}, {0}));
  m.initializer("M", Tensor::scalar(DType::Int64, 5));
  auto& n = m.node("Loop", {"M", "", "acc0"}, {"acc", "accs"});
  n.set_name("/bag/Loop");
  auto& g = bodyOf(n);
  bodyValue(g.add_input(), "i", DType::Int64, {});
  bodyValue(g.add_input(), "cond_in", DType::Bool, {});
  bodyValue(g.add_input(), "acc_in", DType::Float32, {1});
  auto* cast = bodyNode(g, "Cast", {"i"}, "i_f");
  attrInt(*cast, "to", onnxType(DType::Float32));
  bodyNode(g, "Add", {"acc_in", "i_f"}, "acc_out");
  if (computedCond) {
    bodyNode(g, "Less", {"acc_out", "acc_in"}, "cond_out");
  } else {
    bodyNode(g, "Identity", {"cond_in"}, "cond_out");
  }
  bodyNode(g, "Identity", {"acc_out"}, "acc_scan");
  bodyValue(g.add_output(), "cond_out", DType::Bool, {});
  bodyValue(g.add_output(), "acc_out", DType::Float32, {1});
  bodyValue(g.add_output(), "acc_scan", DType::Float32, {1});
  m.output("acc", DType::Float32);
  m.output("accs", DType::Float32);
  return m;
}

}  // namespace

class TestOnnxScan : public QObject {
  Q_OBJECT

 private slots:
  void testScanImport() {
    // s: 2,3 -> 5,7 -> 10,13; y = s * (2, -1).
    checkModel(scanModel(),
               {Tensor::fromDoubles(DType::Float32, {2}, {10, 13}),
                Tensor::fromDoubles(DType::Float32, {3, 2}, {4, -3, 10, -7, 20, -13})},
               "Scan");
    const auto imported = io::readOnnx(scanModel().bytes(), "scan.onnx");
    const Scan* op = nullptr;
    for (const Apply* a : imported.document.original->nodes())
      if (auto* s = dynamic_cast<const Scan*>(&a->op())) op = s;
    QVERIFY(op != nullptr);
    QCOMPARE(QString::fromStdString(op->label()), QString("_rnn_Scan"));
    QVERIFY(op->layout().outStore[0] == Scan::Store::Last);  // the state: its final value
    QCOMPARE(op->layout().nNonSeqs, 1);                      // w, read from the outer graph
    // No body node leaks into the outer graph.
    QCOMPARE(countOps(*imported.document.original, "Elemwise"), 0);
  }

  void testLoopImport() {
    checkModel(loopModel(),
               {Tensor::fromDoubles(DType::Float32, {1}, {10}),
                Tensor::fromDoubles(DType::Float32, {5, 1}, {0, 1, 3, 6, 10})},
               "Scan");
  }

  void testRefused() {
    checkRefused(scanModel(true), "scan_input_directions");
    checkRefused(loopModel(true), "computes its cond output");
  }

  void testScanExport() {
    // h[t] = tanh(x[t] * w + h[t-1]) stacked, a running maximum kept as its last state only is
    // internal; here: a stacked recurrent output and an output without recurrence.
    auto x = Variable::create(TensorType(DType::Float32, {4, 3}), "x");
    auto h0 = Variable::create(TensorType(DType::Float32, {3}), "h0");
    auto w = SharedVariable::create(Tensor::fromDoubles(DType::Float32, {3}, {0.5, -1, 2}), "w");
    const std::vector<VarPtr> out = scan(
        [](const std::vector<VarPtr>& a) {  // x[t], h[t-1], w
          VarPtr h = tanh(a[0] * a[2] + a[1]);
          return std::vector<VarPtr>{h, h * 2.0 + a[0]};
        },
        {x}, {h0, ScanOutputInfo::none()}, {w}, {}, -1, {.label = "cell"});
    FunctionGraph g({x, h0, w}, out);
    const std::string bytes = io::writeOnnx(g);
    ::onnx::ModelProto model;
    QVERIFY(model.ParseFromString(bytes));
    int scans = 0;
    for (const auto& n : model.graph().node()) scans += n.op_type() == "Scan" ? 1 : 0;
    QCOMPARE(scans, 1);
    const auto imported = io::readOnnx(bytes, "scan.onnx");
    QCOMPARE(countOps(*imported.document.original, "Scan"), 1);
    session::RunInputs run;
    run.byName = {{"x", Tensor::fromDoubles(DType::Float32, {4, 3},
                                            {1, 2, 3, -1, -2, -3, 0.5, 0.25, 0, 1, 1, 1})},
                  {"h0", Tensor::fromDoubles(DType::Float32, {3}, {0, 0.1, 0.2})}};
    const auto want = session::runGraph(g, run).outputs;
    const auto got = session::runGraph(*imported.document.original, run).outputs;
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      QCOMPARE(got[i].shape(), want[i].shape());
      QVERIFY(got[i].allClose(want[i], 1e-5, 1e-6));
    }
    // Layouts ONNX Scan cannot express are refused, naming the node.
    VarPtr shifted =
        scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[0] + a[1]}; },
             {ScanSequence(x, {-1, 0})}, {ScanOutputInfo::none()})[0];
    FunctionGraph bad({x}, {shifted});
    std::string e;
    try {
      io::writeOnnx(bad);
    } catch (const std::exception& ex) {
      e = ex.what();
    }
    QVERIFY2(e.find("Scan{scan}") != std::string::npos && e.find("taps") != std::string::npos,
             e.c_str());
  }
};

TSCOPE_TEST_MAIN(TestOnnxScan)
#include "tst_onnx_scan.moc"
