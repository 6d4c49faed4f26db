#pragma once
// Small ONNX models for the converter tests of tst_onnx_math_shape.cpp and tst_onnx_indexing.cpp:
// named inputs and initializers, attributes of every kind, exact int64 values, one-node models, and
// importing and running a model in modes none and fast_run against expected outputs.
#include "onnx_builder.h"

#include <QtTest>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tscope::test::onnx_cases {

using namespace tscope::engine;
using namespace tscope::engine::io;
using namespace tscope::engine::session;
namespace fx = tscope::test::onnx;
using fx::ModelBuilder;

// --- Building on onnx_builder.h: named inputs, attributes of every kind, exact int64 values ----
inline std::string in(ModelBuilder& m, const std::string& name, const Tensor& value,
                      std::vector<std::int64_t> dims = {}) {
  m.input(name, value, std::move(dims));
  return name;
}
inline std::string init(ModelBuilder& m, const std::string& name, const Tensor& value) {
  m.initializer(name, value);
  return name;
}
inline ::onnx::NodeProto& named(::onnx::NodeProto& n, const std::string& name) {
  n.set_name(name);
  return n;
}
inline void setAttr(::onnx::NodeProto& n, const std::string& name, int v) {
  fx::attrInt(n, name, v);
}
inline void setAttr(::onnx::NodeProto& n, const std::string& name, double v) {
  fx::attrFloat(n, name, v);
}
inline void setAttr(::onnx::NodeProto& n, const std::string& name, const char* v) {
  fx::attrString(n, name, v);
}
inline void setAttr(::onnx::NodeProto& n, const std::string& name,
                    const std::vector<std::int64_t>& v) {
  auto& a = fx::newAttr(n, name, ::onnx::AttributeProto::INTS);
  for (auto x : v) a.add_ints(x);
}
inline void setAttr(::onnx::NodeProto& n, const std::string& name, const Tensor& v) {
  ::onnx::TensorProto& p = *fx::newAttr(n, name, ::onnx::AttributeProto::TENSOR).mutable_t();
  p.set_data_type(fx::onnxType(v.dtype()));
  for (std::int64_t d : v.shape()) p.add_dims(d);
  const std::vector<std::byte> bytes = v.toBytes();
  p.set_raw_data(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

inline Tensor values(DType dtype, Shape shape, const std::vector<double>& v) {
  return Tensor::fromDoubles(dtype, std::move(shape), v);
}
inline Tensor f32(Shape shape, const std::vector<double>& v) {
  return values(DType::Float32, std::move(shape), v);
}
// int64 values written exactly (INT64_MAX does not pass through a double).
inline Tensor i64(Shape shape, const std::vector<std::int64_t>& v) {
  Tensor t(DType::Int64, std::move(shape));
  std::copy(v.begin(), v.end(), t.data<std::int64_t>());
  return t;
}
inline Tensor i64(const std::vector<std::int64_t>& v) {
  return i64({static_cast<std::int64_t>(v.size())}, v);
}

// Imports the model (throws OnnxError) and runs it on the builder's input values.
inline std::vector<Tensor> importAndRun(const ModelBuilder& model, Mode mode) {
  const OnnxImportResult imported = readOnnx(model.bytes(), "test.onnx");
  if (!imported.opaqueOps.empty())
    throw std::runtime_error("the model loaded with the opaque op " + imported.opaqueOps.front());
  RunInputs run;
  run.byName = model.values();
  run.mode = mode;
  return runGraph(*imported.document.original, run).outputs;
}

using Attrs = std::function<void(::onnx::NodeProto&)>;
using Ref = std::function<double(double)>;

inline Tensor bools(Shape shape, const std::vector<double>& v) {
  return values(DType::Bool, std::move(shape), v);
}
inline Tensor i32(Shape shape, const std::vector<double>& v) {
  return values(DType::Int32, std::move(shape), v);
}
inline Tensor iota(Shape shape, double first = 1) {
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<double>(i);
  return f32(std::move(shape), v);
}
inline Tensor mapped(const Tensor& x, const Ref& f) {
  std::vector<double> v = x.toDoubles();
  for (double& e : v) e = f(e);
  return values(x.dtype(), x.shape(), v);
}

// Imports and runs the model in modes none and fast_run: nullopt when every output matches,
// else what went wrong and in which mode.
inline std::optional<std::string> mismatch(const ModelBuilder& m,
                                           const std::vector<Tensor>& expected, double rtol = 1e-5,
                                           double atol = 1e-6) {
  for (Mode mode : {Mode::None, Mode::FastRun}) {
    const std::string where = mode == Mode::None ? "mode none: " : "mode fast_run: ";
    try {
      if (auto diff = fx::compareOutputs(importAndRun(m, mode), expected, rtol, atol))
        return where + *diff;
    } catch (const std::exception& e) {
      return where + e.what();
    }
  }
  return std::nullopt;
}
#define CHECK_MODEL(model, ...)                          \
  do {                                                   \
    const auto problem = mismatch(model, __VA_ARGS__);   \
    QVERIFY2(!problem, problem ? problem->c_str() : ""); \
  } while (false)

// A model of one node reading `inputs` (graph inputs in0, in1, ... in order) with one output.
inline ModelBuilder oneNode(int opset, const std::string& type, const std::vector<Tensor>& inputs,
                            DType out, const Attrs& attrs = {}) {
  ModelBuilder m(opset);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    names.push_back(in(m, "in" + std::to_string(i), inputs[i]));
  auto& n = m.node(type, names, {"y"});
  if (attrs) attrs(n);
  m.output("y", out);
  return m;
}

// One node reading the graph input x (declared with `dims` when given), then initializers c0, c1,
// ... (an undefined Tensor omits that input); outputs y, or y0, y1, ..., of x's dtype.
inline ModelBuilder withConstants(int opset, const std::string& type, const Tensor& x,
                                  const std::vector<Tensor>& constants, const Attrs& attrs = {},
                                  int outputs = 1, std::vector<std::int64_t> dims = {}) {
  ModelBuilder m(opset);
  std::vector<std::string> ins{in(m, "x", x, std::move(dims))};
  for (std::size_t i = 0; i < constants.size(); ++i)
    ins.push_back(constants[i].defined() ? init(m, "c" + std::to_string(i), constants[i]) : "");
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) outs.push_back(outputs == 1 ? "y" : "y" + std::to_string(i));
  auto& n = m.node(type, ins, outs);
  if (attrs) attrs(n);
  for (const auto& o : outs) m.output(o, x.dtype());
  return m;
}

template <class T>
inline Attrs attr(const char* name, T value) {
  return [name, value](::onnx::NodeProto& n) { setAttr(n, name, value); };
}
inline Attrs ints(const char* name, std::vector<std::int64_t> v) {
  return attr(name, std::move(v));
}
inline Attrs both(Attrs a, Attrs b) {
  return [a, b](::onnx::NodeProto& n) { a(n), b(n); };
}

}  // namespace tscope::test::onnx_cases
