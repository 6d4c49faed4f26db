#pragma once
// Building tiny ONNX models in tests with ONNX's protobuf API, and checking them: import, run in
// modes none and fast_run, compare with expected outputs (onnx_fixture.h's compareOutputs), or
// expect a refusal. Header-only (inline functions) since only tst_*.cpp files are built.
//
//   ModelBuilder m(13);
//   m.input("x", x);                      // a graph input with its value for the run
//   m.initializer("w", w);
//   auto& n = m.node("Conv", {"x", "w"}, {"y"});
//   attrInts(n, "pads", {1, 1, 1, 1});
//   m.output("y", DType::Float32);
//   checkModel(m, {expected}, "Conv2d");  // and exactly one Conv2d node in the imported graph
#include "engine/graph/apply.h"
#include "engine/io/onnx/onnx_convert.h"
#include "engine/io/onnx/onnx_import.h"
#include "onnx_fixture.h"

#include <QtTest/QtTest>

#include <cstdint>
#include <functional>
#include <map>
#include <onnx/onnx_pb.h>
#include <random>
#include <string>
#include <vector>

namespace tscope::test::onnx {

using engine::kUnknownDim;
using engine::Shape;
using Ints = std::vector<std::int64_t>;

inline int onnxType(DType d) {
  return engine::io::onnx_import::dtypeToOnnx(d);
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset) {
    m_model.set_ir_version(8);
    m_model.add_opset_import()->set_version(opset);
    m_model.mutable_graph()->set_name("test");
  }
  // A graph input with the value `like`; dims (default: like's shape) with kUnknownDim symbolic.
  void input(const std::string& name, const Tensor& like, Ints dims = {}) {
    if (dims.empty()) dims = like.shape();
    auto* in = m_model.mutable_graph()->add_input();
    in->set_name(name);
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnxType(like.dtype()));
    t->mutable_shape();  // a 0-d input declares an empty shape (no shape would be unknown rank)
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == kUnknownDim)
        t->mutable_shape()->add_dim()->set_dim_param("d" + std::to_string(i));
      else
        t->mutable_shape()->add_dim()->set_dim_value(dims[i]);
    }
    m_values[name] = like;
  }
  void initializer(const std::string& name, const Tensor& t) {
    auto* p = m_model.mutable_graph()->add_initializer();
    p->set_name(name);
    p->set_data_type(onnxType(t.dtype()));
    for (std::int64_t d : t.shape()) p->add_dims(d);
    const std::vector<std::byte> bytes = t.toBytes();
    p->set_raw_data(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  // A graph output; dims, when given, declare its shape (as exporters write it).
  void output(const std::string& name, DType dtype, const Ints& dims = {}) {
    auto* o = m_model.mutable_graph()->add_output();
    o->set_name(name);
    auto* t = o->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnxType(dtype));
    for (std::int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  ::onnx::NodeProto& node(const std::string& type, const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs) {
    auto* n = m_model.mutable_graph()->add_node();
    n->set_op_type(type);
    n->set_name("/" + type);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return *n;
  }
  std::string bytes() const { return m_model.SerializeAsString(); }
  // The model itself, for what the helpers do not cover (another domain's opset import).
  ::onnx::ModelProto& proto() { return m_model; }
  const std::map<std::string, Tensor>& values() const { return m_values; }

 private:
  ::onnx::ModelProto m_model;
  std::map<std::string, Tensor> m_values;
};

inline ::onnx::AttributeProto& newAttr(::onnx::NodeProto& n, const std::string& name,
                                       ::onnx::AttributeProto::AttributeType type) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}
inline void attrInt(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  newAttr(n, name, ::onnx::AttributeProto::INT).set_i(v);
}
inline void attrFloat(::onnx::NodeProto& n, const std::string& name, double v) {
  newAttr(n, name, ::onnx::AttributeProto::FLOAT).set_f(static_cast<float>(v));
}
inline void attrString(::onnx::NodeProto& n, const std::string& name, const std::string& v) {
  newAttr(n, name, ::onnx::AttributeProto::STRING).set_s(v);
}
// Omitted when empty (the attribute's default applies).
inline void attrInts(::onnx::NodeProto& n, const std::string& name, const Ints& v) {
  if (v.empty()) return;
  auto& a = newAttr(n, name, ::onnx::AttributeProto::INTS);
  for (auto x : v) a.add_ints(x);
}

inline Tensor randomTensor(Shape shape, std::uint64_t seed, DType dtype = DType::Float32) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(engine::shapeNumel(shape)));
  for (double& x : v) x = dist(rng);
  return Tensor::fromDoubles(dtype, std::move(shape), v);
}

// Calls f(index) for every index of shape, row-major (for naive reference loops).
inline void forEachIndex(const Shape& shape, const std::function<void(const Shape&)>& f) {
  if (engine::shapeNumel(shape) == 0) return;
  Shape idx(shape.size(), 0);
  for (;;) {
    f(idx);
    int a = static_cast<int>(shape.size()) - 1;
    while (a >= 0 && ++idx[static_cast<std::size_t>(a)] == shape[static_cast<std::size_t>(a)])
      idx[static_cast<std::size_t>(a--)] = 0;
    if (a < 0) return;
  }
}

// The concatenation of two shapes.
inline Shape cat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// How many nodes of the graph run `op`.
inline int countOps(const engine::FunctionGraph& graph, const std::string& op) {
  int n = 0;
  for (const engine::Apply* node : graph.nodes()) n += node->op().name() == op ? 1 : 0;
  return n;
}

// Imports the model and runs it in modes none and fast_run against the expected outputs; when
// `directOp` is given the imported graph must hold exactly one node of it.
inline void checkModel(const ModelBuilder& model, const std::vector<Tensor>& expected,
                       const std::string& directOp = {}, double rtol = 1e-4, double atol = 1e-5) {
  engine::io::OnnxImportResult imported;
  try {
    imported = engine::io::readOnnx(model.bytes(), "test.onnx");
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
  QVERIFY2(imported.opaqueOps.empty(), "the model loaded with opaque ops");
  if (!directOp.empty()) QCOMPARE(countOps(*imported.document.original, directOp), 1);
  for (engine::Mode mode : {engine::Mode::None, engine::Mode::FastRun}) {
    engine::session::RunInputs run;
    run.byName = model.values();
    run.mode = mode;
    std::vector<Tensor> outputs;
    try {
      outputs = engine::session::runGraph(*imported.document.original, run).outputs;
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const auto diff = compareOutputs(outputs, expected, rtol, atol);
    const std::string where =
        (mode == engine::Mode::None ? "mode none: " : "mode fast_run: ") + diff.value_or("");
    QVERIFY2(!diff, where.c_str());
  }
}

// readOnnx must throw OnnxError with `expected` in its message.
inline void checkRefused(const ModelBuilder& model, const std::string& expected) {
  try {
    engine::io::readOnnx(model.bytes(), "bad.onnx");
  } catch (const engine::io::OnnxError& e) {
    const std::string what = e.what();
    QVERIFY2(what.find(expected) != std::string::npos,
             ("expected '" + expected + "' in: " + what).c_str());
    return;
  }
  QFAIL(("expected an OnnxError containing '" + expected + "', the model imported").c_str());
}

}  // namespace tscope::test::onnx
