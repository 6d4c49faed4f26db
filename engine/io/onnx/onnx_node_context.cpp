// NodeContext (what a converter sees of one ONNX node) and the converter table.
#include "engine/io/onnx/onnx_importer.h"

#include <cmath>

namespace tscope::engine::io::onnx_import {

namespace {

using AP = onnx::AttributeProto;

std::string attrTypeName(int type) {
  if (AP::AttributeType_IsValid(type))
    return AP::AttributeType_Name(static_cast<AP::AttributeType>(type));
  return "attribute type " + std::to_string(type);
}

}  // namespace

NodeContext::NodeContext(Importer& importer, const onnx::NodeProto& node, int index,
                         std::vector<VarPtr> inputs)
    : m_importer(importer), m_node(node), m_index(index), m_inputs(std::move(inputs)) {}

int NodeContext::opset() const {
  return m_importer.opset();
}

bool NodeContext::hasInput(int i) const {
  return i >= 0 && i < nInputs() && m_inputs[static_cast<std::size_t>(i)] != nullptr;
}

const VarPtr& NodeContext::input(int i) const {
  if (!hasInput(i))
    fail("expected input " + std::to_string(i) + ", found " +
         (i < nInputs() ? std::string("it omitted (empty name)")
                        : "only " + std::to_string(nInputs()) + " inputs"));
  return m_inputs[static_cast<std::size_t>(i)];
}

std::optional<Tensor> NodeContext::constantInput(int i) const {
  if (!hasInput(i)) return std::nullopt;
  return m_importer.constantValue(m_inputs[static_cast<std::size_t>(i)]);
}

std::vector<std::int64_t> NodeContext::constantInts(int i, std::string_view what) const {
  std::optional<Tensor> value = constantInput(i);
  if (!value) needsConstant(i, what);
  if (isFloat(value->dtype()))
    fail("expected " + std::string(what) + " (input " + std::to_string(i) +
         ") to hold integers, found " + std::string(dtypeName(value->dtype())));
  std::vector<std::int64_t> out;
  for (double v : value->toDoubles()) out.push_back(static_cast<std::int64_t>(v));
  // int64 values beyond 2^53 (INT64_MAX as "to the end" in Slice) lose precision through double:
  // read them exactly when the dtype is int64.
  if (value->dtype() == DType::Int64) {
    Tensor c = value->contiguous();
    const auto* p = c.data<std::int64_t>();
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = p[k];
  }
  return out;
}

std::vector<double> NodeContext::constantDoubles(int i, std::string_view what) const {
  std::optional<Tensor> value = constantInput(i);
  if (!value) needsConstant(i, what);
  return value->toDoubles();
}

bool NodeContext::wantsOutput(int i) const {
  return i >= 0 && i < nOutputs() && !m_node.output(i).empty();
}

std::optional<TensorType> NodeContext::inferredOutputType(int i) const {
  if (!wantsOutput(i)) return std::nullopt;
  return m_importer.inferredType(m_node.output(i));
}

const AP* NodeContext::attr(std::string_view name) const {
  for (const AP& a : m_node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool NodeContext::hasAttr(std::string_view name) const {
  return attr(name) != nullptr;
}

namespace {

const AP* expectAttr(const NodeContext& ctx, const AP* a, std::string_view name,
                     AP::AttributeType type, bool hasFallback) {
  if (!a) {
    if (hasFallback) return nullptr;
    ctx.fail("expected the attribute '" + std::string(name) + "' (" + attrTypeName(type) +
             "), found none");
  }
  // Old exporters leave `type` unset; accept the attribute when the matching field is filled.
  if (a->type() != AP::UNDEFINED && a->type() != type)
    ctx.fail("expected the attribute '" + std::string(name) + "' to be " + attrTypeName(type) +
             ", found " + attrTypeName(a->type()));
  return a;
}

}  // namespace

std::int64_t NodeContext::attrInt(std::string_view name,
                                  std::optional<std::int64_t> fallback) const {
  const AP* a = expectAttr(*this, attr(name), name, AP::INT, fallback.has_value());
  return a ? a->i() : *fallback;
}

double NodeContext::attrFloat(std::string_view name, std::optional<double> fallback) const {
  const AP* a = expectAttr(*this, attr(name), name, AP::FLOAT, fallback.has_value());
  return a ? static_cast<double>(a->f()) : *fallback;
}

std::string NodeContext::attrString(std::string_view name,
                                    std::optional<std::string> fallback) const {
  const AP* a = expectAttr(*this, attr(name), name, AP::STRING, fallback.has_value());
  return a ? a->s() : *fallback;
}

std::vector<std::int64_t> NodeContext::attrInts(
    std::string_view name, std::optional<std::vector<std::int64_t>> fallback) const {
  const AP* a = expectAttr(*this, attr(name), name, AP::INTS, fallback.has_value());
  if (!a) return *fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> NodeContext::attrFloats(std::string_view name,
                                            std::optional<std::vector<double>> fallback) const {
  const AP* a = expectAttr(*this, attr(name), name, AP::FLOATS, fallback.has_value());
  if (!a) return *fallback;
  return {a->floats().begin(), a->floats().end()};
}

Tensor NodeContext::attrTensor(std::string_view name) const {
  const AP* a = expectAttr(*this, attr(name), name, AP::TENSOR, false);
  try {
    return tensorFromOnnx(a->t());
  } catch (const std::exception& e) {
    fail("the tensor attribute '" + std::string(name) + "': " + e.what());
  }
}

nlohmann::json NodeContext::attrsJson() const {
  nlohmann::json out = nlohmann::json::object();
  for (const AP& a : m_node.attribute()) {
    nlohmann::json v;
    switch (a.type()) {
      case AP::INT:
        v = a.i();
        break;
      case AP::FLOAT:
        v = std::isfinite(a.f()) ? nlohmann::json(a.f()) : nlohmann::json(std::to_string(a.f()));
        break;
      case AP::STRING:
        v = safeText(a.s());
        break;
      case AP::INTS:
        v = std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
        break;
      case AP::FLOATS: {
        v = nlohmann::json::array();
        for (float f : a.floats())
          v.push_back(std::isfinite(f) ? nlohmann::json(f) : nlohmann::json(std::to_string(f)));
        break;
      }
      case AP::STRINGS: {
        v = nlohmann::json::array();
        for (const std::string& str : a.strings()) v.push_back(safeText(str));
        break;
      }
      case AP::TENSOR: {
        auto dtype = dtypeFromOnnx(a.t().data_type());
        v = {{"tensor", dtype ? std::string(dtypeName(*dtype)) : onnxTypeName(a.t().data_type())},
             {"shape", std::vector<std::int64_t>(a.t().dims().begin(), a.t().dims().end())}};
        break;
      }
      case AP::GRAPH:
        v = {{"graph", a.g().name()}, {"nodes", a.g().node_size()}};
        break;
      default:
        v = attrTypeName(a.type());
    }
    out[safeText(a.name())] = std::move(v);
  }
  return out;
}

void NodeContext::fail(const std::string& message) const {
  m_importer.fail(Importer::nodeWhere(m_node, m_index), message);
}

void NodeContext::needsConstant(int i, std::string_view what) const {
  throw OnnxRuntimeValue(m_importer.source(), Importer::nodeWhere(m_node, m_index),
                         "expected " + std::string(what) + " (input " + std::to_string(i) +
                             ") to be a constant or an initializer, found a value computed at "
                             "run time",
                         i);
}

void NodeContext::unsupported(const std::string& what) const {
  fail(what + " is not supported yet");
}

int NodeContext::axis(std::int64_t axis, int rank, std::string_view what) const {
  if (rank <= 0)
    fail("expected " + std::string(what) +
         " of a tensor with at least one axis, found a 0-d tensor");
  if (axis < -rank || axis >= rank)
    fail("expected " + std::string(what) + " in [" + std::to_string(-rank) + ", " +
         std::to_string(rank - 1) + "] for rank " + std::to_string(rank) + ", found " +
         std::to_string(axis));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

int NodeContext::rank(int i) const {
  return input(i)->type().ndim();
}

std::string safeText(std::string_view text) {
  // Note [Text from models]: names and string attributes come from the file and are not
  // guaranteed UTF-8, while the .tsg (JSON) needs it: text that JSON accepts as it is (valid
  // UTF-8, checked by nlohmann's own decoder) passes; otherwise bytes >= 0x80 become \xNN.
  bool controls = false;
  for (char c : text) controls |= static_cast<unsigned char>(c) < 0x20;
  if (!controls) {
    try {
      (void)nlohmann::json(std::string(text)).dump();
      return std::string(text);
    } catch (const nlohmann::json::exception&) {
    }
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x80) {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// --- the table ---

void ConverterTable::add(std::string opType, Converter fn) {
  m_table[std::move(opType)] = fn;
}

Converter ConverterTable::find(const std::string& opType) const {
  auto it = m_table.find(opType);
  return it == m_table.end() ? nullptr : it->second;
}

std::vector<std::string> ConverterTable::opTypes() const {
  std::vector<std::string> out;
  for (const auto& [name, fn] : m_table) out.push_back(name);
  return out;
}

const ConverterTable& defaultConverters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    registerMathConverters(t);
    registerShapeConverters(t);
    registerNnConverters(t);
    registerRnnConverters(t);
    registerMiscConverters(t);
    return t;
  }();
  return table;
}

}  // namespace tscope::engine::io::onnx_import
