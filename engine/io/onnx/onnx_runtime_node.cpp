// OnnxRuntimeNode: Note [Run-time ONNX values] in onnx_runtime_node.h.
#include "engine/io/onnx/onnx_runtime_node.h"

#include "engine/compile/function.h"
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/io/onnx/onnx_convert.h"
#include "engine/io/onnx/onnx_export_emit.h"
#include "engine/io/onnx/onnx_import.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace tscope::engine::io::onnx_import {

namespace {

const std::map<std::string, std::vector<int>, std::less<>>& valueInputTable() {
  static const std::map<std::string, std::vector<int>, std::less<>> table = {
      {"Unsqueeze", {1}},
      {"Squeeze", {1}},
      {"ReduceSum", {1}},
      {"ReduceMean", {1}},
      {"ReduceMax", {1}},
      {"ReduceMin", {1}},
      {"ReduceProd", {1}},
      {"ReduceL1", {1}},
      {"ReduceL2", {1}},
      {"ReduceLogSum", {1}},
      {"ReduceLogSumExp", {1}},
      {"ReduceSumSquare", {1}},
      {"Slice", {1, 2, 3, 4}},
      {"Resize", {1, 2, 3}},
      {"Upsample", {1}},
      {"Tile", {1}},
      {"TopK", {1}},
      {"Pad", {1, 2, 3}},
      {"Expand", {1}},
      {"Reshape", {1}},
      {"ConstantOfShape", {0}},
      {"Range", {0, 1, 2}},
      {"CumSum", {1}},
      {"STFT", {1, 3}},
      {"MelWeightMatrix", {0, 1, 2, 3, 4}},
      {"Split", {1}},
      {"Dropout", {1, 2}},
      {"LSTM", {4}},
      {"GRU", {4}},
      {"RNN", {4}},
  };
  return table;
}

std::string toHex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string fromHex(const std::string& hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::invalid_argument(std::string("OnnxRuntimeNode: 'node' holds a non-hex digit '") + c +
                                "'");
  };
  if (hex.size() % 2)
    throw std::invalid_argument("OnnxRuntimeNode: 'node' has an odd number of hex digits");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  return out;
}

// "[5, 0]" (at most 16 entries, then "...").
std::string valueText(const Tensor& t) {
  std::ostringstream os;
  os.precision(9);
  const std::vector<double> v = t.toDoubles();
  os << "[";
  for (std::size_t i = 0; i < v.size() && i < 16; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > 16) os << ", ...";
  os << "]";
  return os.str();
}

}  // namespace

std::vector<int> runtimeValueInputs(const std::string& onnxOp) {
  auto it = valueInputTable().find(onnxOp);
  return it == valueInputTable().end() ? std::vector<int>{} : it->second;
}

struct OnnxRuntimeNode::Cache {
  struct Entry {
    std::string key;
    std::optional<Function> fn;
    std::vector<int> args;     // per compiled input: the op input that feeds it
    std::vector<int> outputs;  // per ONNX output: the compiled output, -1 when unused
  };
  std::mutex mutex;
  std::vector<Entry> entries;  // most recently used last
};

OnnxRuntimeNode::OnnxRuntimeNode(std::string onnxOp, std::string nodeName, std::string nodeBytes,
                                 int opset, std::vector<bool> present, std::vector<int> valueInputs,
                                 std::vector<TensorType> types)
    : m_onnxOp(std::move(onnxOp)),
      m_nodeName(std::move(nodeName)),
      m_nodeBytes(std::move(nodeBytes)),
      m_opset(opset),
      m_present(std::move(present)),
      m_valueInputs(std::move(valueInputs)),
      m_types(std::move(types)),
      m_cache(std::make_shared<Cache>()) {}

OnnxRuntimeNode::~OnnxRuntimeNode() = default;

nlohmann::json OnnxRuntimeNode::props() const {
  nlohmann::json types = nlohmann::json::array();
  for (const TensorType& t : m_types) {
    std::vector<std::int64_t> shape;
    for (int d = 0; d < t.ndim(); ++d)
      shape.push_back(t.isDimKnown(d) ? t.shape()[static_cast<std::size_t>(d)] : -1);
    types.push_back({{"dtype", std::string(dtypeName(t.dtype()))}, {"shape", shape}});
  }
  std::vector<int> present;
  for (bool p : m_present) present.push_back(p ? 1 : 0);
  return {{"onnx_op", m_onnxOp}, {"node_name", m_nodeName}, {"node", toHex(m_nodeBytes)},
          {"opset", m_opset},    {"present", present},      {"value_inputs", m_valueInputs},
          {"types", types}};
}

std::string OnnxRuntimeNode::str() const {
  return "OnnxRuntimeNode{" + m_onnxOp + (m_nodeName.empty() ? "" : " '" + m_nodeName + "'") + "}";
}

std::vector<TensorType> OnnxRuntimeNode::outputTypes(std::span<const VarPtr> inputs) const {
  const auto expected =
      static_cast<std::size_t>(std::count(m_present.begin(), m_present.end(), true));
  if (inputs.size() != expected)
    throw TypeError(str() + ": expected " + std::to_string(expected) + " inputs, found " +
                    std::to_string(inputs.size()));
  return m_types;
}

void OnnxRuntimeNode::perform(const Apply&, std::span<const Tensor* const> inputs,
                              std::span<Tensor* const> outputs) const {
  // The op's input j is ONNX input onnxIndex[j].
  std::vector<int> onnxIndex;
  for (std::size_t k = 0; k < m_present.size(); ++k)
    if (m_present[k]) onnxIndex.push_back(static_cast<int>(k));
  const bool allValues = m_valueInputs.empty();
  auto isValue = [&](int k) {
    return allValues ||
           std::find(m_valueInputs.begin(), m_valueInputs.end(), k) != m_valueInputs.end();
  };
  std::string key;
  std::string values;  // "axes = [5, 0]" for messages
  onnx::NodeProto node;
  if (!node.ParseFromString(m_nodeBytes))
    throw std::runtime_error(str() + ": the stored ONNX node does not parse");
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& t = *inputs[j];
    const int k = onnxIndex[j];
    key += std::string(dtypeName(t.dtype())) + shapeToString(t.shape()) + ";";
    if (isValue(k)) {
      const std::vector<std::byte> bytes = t.toBytes();
      key.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      key += ";";
      if (!allValues)
        values += (values.empty() ? "" : ", ") + std::string("input ") + std::to_string(k) + " '" +
                  safeText(node.input(k)) + "' = " + valueText(t);
    }
  }

  std::lock_guard<std::mutex> lock(m_cache->mutex);
  auto& entries = m_cache->entries;
  auto hit = std::find_if(entries.begin(), entries.end(),
                          [&](const Cache::Entry& e) { return e.key == key; });
  if (hit == entries.end()) {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("tensorscope OnnxRuntimeNode");
    auto* opsetId = model.add_opset_import();
    opsetId->set_domain("");
    opsetId->set_version(m_opset);
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name("runtime_" + m_onnxOp);
    *graph->add_node() = node;
    std::set<std::string> named;
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      const int k = onnxIndex[j];
      const std::string& name = node.input(k);
      if (!named.insert(name).second) continue;
      const Tensor& t = *inputs[j];
      if (isValue(k)) {
        onnx_export::tensorToOnnx(t.contiguous(), name, *graph->add_initializer());
        continue;
      }
      onnx::ValueInfoProto* vi = graph->add_input();
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(dtypeToOnnx(t.dtype()));
      auto* shape = tt->mutable_shape();
      for (std::int64_t d : t.shape()) shape->add_dim()->set_dim_value(d);
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      onnx::ValueInfoProto* vi = graph->add_output();
      vi->set_name(node.output(k));
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(
          dtypeToOnnx(m_types[static_cast<std::size_t>(k)].dtype()));
    }
    OnnxImportOptions options;
    options.allowOpaque = false;
    options.deferRuntimeValues = false;  // the values are initializers now: no deferring again
    Cache::Entry entry{key, std::nullopt, {}, {}};
    try {
      OnnxImportResult imported =
          readOnnx(model.SerializeAsString(), str() + " at run time", options);
      const FunctionGraph& g = *imported.document.original;
      std::vector<VarPtr> args;
      for (const VarPtr& in : g.inputs()) {
        if (in->kind() == Variable::Kind::Shared) continue;
        int feeds = -1;
        for (std::size_t j = 0; j < inputs.size(); ++j)
          if (node.input(onnxIndex[j]) == in->name()) feeds = static_cast<int>(j);
        if (feeds < 0)
          throw std::runtime_error("the conversion reads an unknown input '" + in->name() + "'");
        args.push_back(in);
        entry.args.push_back(feeds);
      }
      int next = 0;
      for (int k = 0; k < node.output_size(); ++k)
        entry.outputs.push_back(node.output(k).empty() ? -1 : next++);
      entry.fn = compile(args, g.outputs());
    } catch (const std::exception& e) {
      throw std::runtime_error((values.empty() ? std::string() : values + ": ") + e.what());
    }
    if (entries.size() >= kCacheSize) entries.erase(entries.begin());
    entries.push_back(std::move(entry));
    hit = entries.end() - 1;
  } else if (hit != entries.end() - 1) {
    std::rotate(hit, hit + 1, entries.end());
    hit = entries.end() - 1;
  }
  std::vector<Tensor> args;
  for (int j : hit->args) args.push_back(*inputs[static_cast<std::size_t>(j)]);
  std::vector<Tensor> results;
  try {
    results = (*hit->fn)(args);
  } catch (const std::exception& e) {
    throw std::runtime_error((values.empty() ? std::string() : values + ": ") + e.what());
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const int r = k < hit->outputs.size() ? hit->outputs[k] : -1;
    const TensorType& type = m_types[k];
    if (r < 0) {
      // An output the model does not use: an empty value of the declared dtype.
      *outputs[k] = Tensor::zeros(type.dtype(), Shape(static_cast<std::size_t>(type.ndim()), 0));
      continue;
    }
    Tensor& value = results[static_cast<std::size_t>(r)];
    bool fits = value.dtype() == type.dtype() && value.ndim() == type.ndim();
    for (int d = 0; fits && d < type.ndim(); ++d)
      fits = !type.isDimKnown(d) || value.shape()[static_cast<std::size_t>(d)] ==
                                        type.shape()[static_cast<std::size_t>(d)];
    if (!fits)
      throw std::runtime_error(
          (values.empty() ? std::string() : values + ": ") + "output " + std::to_string(k) +
          " came out as " + std::string(dtypeName(value.dtype())) + " " +
          shapeToString(value.shape()) + ", which does not fit its type " + type.str());
    *outputs[k] = std::move(value);
  }
}

std::vector<Grad> OnnxRuntimeNode::pullback(const Apply& node, std::span<const VarPtr>) const {
  std::vector<Grad> out;
  for (std::size_t j = 0; j < node.inputs().size(); ++j)
    out.push_back(Grad::undefined(str() +
                                  " has no gradient: the node is converted at run time from values "
                                  "the model computes (Note [Run-time ONNX values])"));
  return out;
}

OpPtr OnnxRuntimeNode::fromProps(const nlohmann::json& props) {
  try {
    std::vector<bool> present;
    for (int p : props.at("present").get<std::vector<int>>()) present.push_back(p != 0);
    std::vector<TensorType> types;
    for (const auto& t : props.at("types")) {
      auto dtype = dtypeFromName(t.at("dtype").get<std::string>());
      if (!dtype) throw std::invalid_argument("OnnxRuntimeNode: unknown dtype in 'types'");
      std::vector<std::int64_t> shape = t.at("shape").get<std::vector<std::int64_t>>();
      for (auto& d : shape)
        if (d < 0) d = kUnknownDim;
      types.emplace_back(*dtype, shape);
    }
    return std::make_shared<OnnxRuntimeNode>(
        props.at("onnx_op").get<std::string>(), props.value("node_name", std::string()),
        fromHex(props.at("node").get<std::string>()), props.at("opset").get<int>(),
        std::move(present), props.at("value_inputs").get<std::vector<int>>(), std::move(types));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("OnnxRuntimeNode: bad props: ") + e.what());
  }
}

}  // namespace tscope::engine::io::onnx_import
