#include "engine/io/onnx/onnx_export.h"

#include "engine/graph/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/onnx/onnx_export_emit.h"
#include "engine/ops/nn/channel_blocks.h"

#include <cstring>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <set>
#include <unordered_map>

namespace tscope::engine::io {

namespace onnx_export {

// --- Types and tensors ---------------------------------------------------------------------------

void tensorToOnnx(const Tensor& value, const std::string& name, onnx::TensorProto& proto) {
  proto.set_name(name);
  proto.set_data_type(onnx_import::dtypeToOnnx(value.dtype()));
  for (std::int64_t d : value.shape()) proto.add_dims(d);
  const std::vector<std::byte> bytes = value.toBytes();
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::optional<DType> computeDTypeFor(DType d, DTypeSet allowed) {
  if (contains(allowed, d)) return d;
  // Widening candidates in order: each holds every value of d.
  std::vector<DType> wider;
  switch (d) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      wider = {DType::Int16, DType::Int32, DType::Int64};
      break;
    case DType::Int16:
    case DType::UInt16:
      wider = {DType::Int32, DType::Int64};
      break;
    case DType::UInt32:
      wider = {DType::Int64};
      break;
    case DType::Int32:
      wider = {DType::Int64};
      break;
    case DType::Float16:
      wider = {DType::Float32, DType::Float64};
      break;
    case DType::Float32:
      wider = {DType::Float64};
      break;
    default:
      break;
  }
  for (DType w : wider)
    if (contains(allowed, w)) return w;
  return std::nullopt;
}

void attrInt(onnx::NodeProto& node, std::string_view name, std::int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void attrFloat(onnx::NodeProto& node, std::string_view name, double value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(value));
}

void attrInts(onnx::NodeProto& node, std::string_view name,
              const std::vector<std::int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a->add_ints(v);
}

void attrString(onnx::NodeProto& node, std::string_view name, std::string_view value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(std::string(name));
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(std::string(value));
}

bool usedOnlyOnce(const FunctionGraph& graph, const Variable& v) {
  const std::vector<Client>& clients = graph.clients(v);
  return clients.size() == 1 && !clients[0].isOutput();
}

const EmitterTable& defaultEmitters() {
  static const EmitterTable table = [] {
    EmitterTable t;
    registerElemwiseEmitters(t);
    registerShapeEmitters(t);
    registerNnEmitters(t);
    registerControlEmitters(t);
    return t;
  }();
  return table;
}

// --- The model being built -----------------------------------------------------------------------

// Note [Export value names]: ONNX values are named once (SSA). Graph inputs, shared variables and
// graph outputs are named first, in that order, so they keep their variables' names; a clash
// appends "_1", "_2", .... Other values take their variable's name when it has one and is free,
// else "<node name>_output_<k>" after the ONNX node that writes them, as PyTorch names them
// ("/layer1/Tanh_output_0"): an emitter asks for an output's name before it adds that node, so it
// gets a placeholder that the node resolves. Names are looked up by Variable address,
// so every variable an expansion creates is kept alive until the model is written (a freed
// address reused by a later variable would otherwise find a stale name).
class ModelWriter {
 public:
  ModelWriter(const FunctionGraph& graph, const OnnxExportOptions& options)
      : m_graph(graph), m_options(options) {}

  std::string write();

  int opset() const { return m_options.opset; }
  // The graph nodes are written into: the model's, or a subgraph being written (emitSubgraph).
  onnx::GraphProto& graph() { return m_target ? *m_target : *m_model.mutable_graph(); }

  std::string value(const VarPtr& v);
  std::string outputName(const Variable& v, int k);
  std::string cast(const std::string& value, DType from, DType to);
  std::string initializer(const Tensor& value, const std::string& base);
  // A constant (an initializer or a Constant node) named varName, else after its node.
  std::string constant(const Tensor& value, const std::string& varName);
  // An initializer's name: its variable's name, else "/<scope>/Constant_<k>_output_0".
  std::string constantName(const std::string& name);
  onnx::NodeProto& addNode(std::string_view opType, std::vector<std::string> inputs,
                           std::vector<std::string> outputs);
  void emitNode(const Apply& node, const Apply& reported);
  void emitExpansion(NodeExport& parent, const std::vector<VarPtr>& outputs);
  void emitSubgraph(NodeExport& parent, const FunctionGraph& body,
                    const std::vector<std::string>& inputs, const std::string& name,
                    onnx::GraphProto& into);
  [[noreturn]] void unsupported(const Apply& reported, const std::string& why) const;
  std::string uniqueValue(const std::string& base);

 private:
  std::string uniqueNode(const std::string& base);
  void addGraphInputs();
  void addGraphOutputs(const std::vector<std::string>& names);
  // The nodes of g in topological order, after matching the export patterns on g.
  void emitGraphNodes(const FunctionGraph& g);
  void check();

  const FunctionGraph& m_graph;
  const OnnxExportOptions& m_options;
  onnx::ModelProto m_model;
  std::unordered_map<const Variable*, std::string> m_names;     // emitted values
  std::unordered_map<const Variable*, std::string> m_reserved;  // names outputs must take
  std::set<std::string> m_usedValues;
  std::unordered_map<std::string, int> m_valueSuffix;
  std::unordered_map<std::string, int> m_nodeNameCount;
  std::set<std::string> m_usedNodes;
  std::map<std::pair<std::string, DType>, std::string> m_casts;
  std::vector<VarPtr> m_keepAlive;  // Note [Export value names]
  // Note [Export patterns]: the roots of matched patterns and the nodes they cover.
  std::unordered_map<const Apply*, Emitter> m_patternRoots;
  std::set<const Apply*> m_covered;
  // Output names handed out before the node that writes them is named: placeholder -> variables.
  static constexpr char kPendingMark[] = "\x01pending:";
  std::map<std::string, std::vector<const Variable*>> m_pending;
  int m_nextPending = 0;
  // The graph node being exported: its scope names the ONNX nodes, its op and site their doc.
  const Apply* m_current = nullptr;
  onnx::GraphProto* m_target = nullptr;  // null: the model's graph
};

std::string ModelWriter::uniqueValue(const std::string& base) {
  std::string name = base;
  // The next suffix to try per base, so that n values of one name cost O(n), not O(n^2).
  for (int& k = m_valueSuffix[base]; m_usedValues.count(name);)
    name = base + "_" + std::to_string(++k);
  m_usedValues.insert(name);
  return name;
}

std::string ModelWriter::uniqueNode(const std::string& base) {
  int& count = m_nodeNameCount[base];
  std::string name = count == 0 ? base : base + "_" + std::to_string(count);
  while (m_usedNodes.count(name)) name = base + "_" + std::to_string(++count);
  ++count;
  m_usedNodes.insert(name);
  return name;
}

std::string ModelWriter::initializer(const Tensor& value, const std::string& base) {
  const std::string name = uniqueValue(base);
  tensorToOnnx(value, name, *graph().add_initializer());
  return name;
}

// Note [Constants in the exported model]: shared variables are the model's parameters and become
// initializers, as do integer and bool constants (shapes, axes, indices). Float constants become
// Constant nodes instead: readers take float initializers for parameters (PyTorch writes its
// weights so, and the importer makes them shared variables, Note [Initializers] in
// onnx_import.cpp), and a literal 0.5 that came back as a parameter could no longer be folded by
// the optimizer.
std::string ModelWriter::constant(const Tensor& value, const std::string& varName) {
  if (!isFloat(value.dtype())) return initializer(value, constantName(varName));
  onnx::NodeProto& node =
      addNode("Constant", {}, {varName.empty() ? std::string(kPendingMark) : uniqueValue(varName)});
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  tensorToOnnx(value, {}, *a->mutable_t());
  a->mutable_t()->clear_name();
  return node.output(0);
}

std::string ModelWriter::constantName(const std::string& name) {
  if (!name.empty()) return name;
  const std::string scope = m_current ? m_current->scope() : std::string();
  return uniqueNode("/" + (scope.empty() ? std::string() : scope + "/") + "Constant") + "_output_0";
}

std::string ModelWriter::value(const VarPtr& v) {
  if (auto it = m_names.find(v.get()); it != m_names.end()) return it->second;
  if (v->kind() == Variable::Kind::Constant) {
    const auto& c = static_cast<const Constant&>(*v);
    const std::string name = constant(c.value(), v->name());
    m_names[v.get()] = name;
    return name;
  }
  if (v->kind() == Variable::Kind::Shared) {  // a shared value reached outside the graph inputs
    const auto& s = static_cast<const SharedVariable&>(*v);
    const std::string name = initializer(s.value(), v->name().empty() ? "param" : v->name());
    m_names[v.get()] = name;
    return name;
  }
  throw GraphError("ONNX export: the value " + v->displayName() +
                   " is used before a node computes it");
}

std::string ModelWriter::outputName(const Variable& v, int k) {
  if (auto it = m_names.find(&v); it != m_names.end()) return it->second;
  std::string name;
  if (auto it = m_reserved.find(&v); it != m_reserved.end())
    name = it->second;
  else if (!v.name().empty())
    name = uniqueValue(v.name());
  else
    name = kPendingMark + std::to_string(m_nextPending++);
  if (name.starts_with(kPendingMark)) m_pending[name].push_back(&v);
  m_names[&v] = name;
  return name;
}

std::string ModelWriter::cast(const std::string& value, DType from, DType to) {
  if (from == to) return value;
  auto key = std::make_pair(value, to);
  if (auto it = m_casts.find(key); it != m_casts.end()) return it->second;
  onnx::NodeProto& node = addNode("Cast", {value}, {});
  attrInt(node, "to", onnx_import::dtypeToOnnx(to));
  m_casts[key] = node.output(0);
  return node.output(0);
}

onnx::NodeProto& ModelWriter::addNode(std::string_view opType, std::vector<std::string> inputs,
                                      std::vector<std::string> outputs) {
  const std::string scope = m_current ? m_current->scope() : std::string();
  const std::string name =
      uniqueNode("/" + (scope.empty() ? std::string() : scope + "/") + std::string(opType));
  if (outputs.empty()) outputs.push_back(kPendingMark);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].starts_with(kPendingMark)) continue;
    // Note [Export value names]: a value named by the node that computes it.
    const std::string real = uniqueValue(name + "_output_" + std::to_string(k));
    if (auto it = m_pending.find(outputs[k]); it != m_pending.end()) {
      for (const Variable* v : it->second) m_names[v] = real;
      m_pending.erase(it);
    }
    outputs[k] = real;
  }
  for (const std::string& in : inputs)
    if (in.starts_with(kPendingMark))
      throw std::logic_error("ONNX export: a " + std::string(opType) +
                             " node reads a value no node has written yet");
  onnx::NodeProto& node = *graph().add_node();
  node.set_op_type(std::string(opType));
  node.set_name(name);
  for (auto& in : inputs) node.add_input(std::move(in));
  for (auto& out : outputs) node.add_output(std::move(out));
  if (m_current) {
    std::string doc = m_current->op().str() + " (node " + std::to_string(m_current->id());
    if (!m_current->site().empty()) doc += ", created at " + m_current->site().str();
    node.set_doc_string(doc + ")");
  }
  return node;
}

void ModelWriter::unsupported(const Apply& reported, const std::string& why) const {
  std::string where = "node " + std::to_string(reported.id()) + " " + reported.str();
  std::string context;
  if (!reported.scope().empty()) context = "scope '" + reported.scope() + "'";
  if (!reported.site().empty())
    context += (context.empty() ? "" : ", ") + std::string("created at ") + reported.site().str();
  if (!context.empty()) where += " (" + context + ")";
  throw OnnxExportError("cannot export " + where + " to ONNX: " + why, reported.id());
}

void ModelWriter::emitNode(const Apply& node, const Apply& reported) {
  const OpPtr outOfPlace = node.op().outOfPlace();
  const Op& op = outOfPlace ? *outOfPlace : node.op();
  Emitter fn = op.isExecutable() ? defaultEmitters().find(op.name()) : nullptr;
  if (auto root = m_patternRoots.find(&node); root != m_patternRoots.end()) fn = root->second;
  if (fn == nullptr) {
    if (!op.isExecutable())
      unsupported(reported,
                  "the op " + op.name() + " is opaque (its file named an op this build lacks)");
    unsupported(reported, "the op " + op.name() + " has no ONNX form");
  }
  const Apply* previous = m_current;
  if (&node == &reported) m_current = &reported;
  NodeExport n(*this, node, op, reported);
  try {
    fn(n);
  } catch (const OnnxExportError&) {
    throw;
  } catch (const std::exception& e) {  // a builder refused what the emitter built: name the node
    unsupported(reported, e.what());
  }
  for (int k = 0; k < node.nOutputs(); ++k)
    if (auto it = m_names.find(&node.outputRef(k));
        it == m_names.end() || it->second.starts_with(kPendingMark))
      unsupported(reported,
                  "the exporter wrote no value for output " + std::to_string(k) + " (a bug)");
  m_current = previous;
}

void ModelWriter::emitExpansion(NodeExport& parent, const std::vector<VarPtr>& outputs) {
  m_keepAlive.insert(m_keepAlive.end(), outputs.begin(), outputs.end());
  // The expansion's nodes in topological order: a depth-first walk from the outputs that stops at
  // values already named (the parent's inputs).
  std::vector<const Apply*> order;
  std::set<const Apply*> seen;
  std::vector<std::pair<const Apply*, std::size_t>> stack;
  for (const VarPtr& out : outputs) {
    if (!out->owner() || m_names.count(out.get()) || !seen.insert(out->owner()).second) continue;
    stack.emplace_back(out->owner(), 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < static_cast<std::size_t>(node->nInputs())) {
        const VarPtr& in = node->input(static_cast<int>(next++));
        m_keepAlive.push_back(in);
        if (in->owner() && !m_names.count(in.get()) && seen.insert(in->owner()).second)
          stack.emplace_back(in->owner(), 0);
      } else {
        order.push_back(node);
        stack.pop_back();
      }
    }
  }
  // Each expansion output takes the parent's output name; a value that is not a fresh node output
  // (an input, or one already bound to another output) gets an Identity.
  std::vector<std::size_t> copies;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Variable* v = outputs[k].get();
    if (v->owner() && !m_names.count(v) && !m_reserved.count(v))
      m_reserved[v] = parent.output(static_cast<int>(k));
    else
      copies.push_back(k);
  }
  for (const Apply* node : order) emitNode(*node, parent.reported());
  for (std::size_t k : copies)
    addNode("Identity", {value(outputs[k])}, {parent.output(static_cast<int>(k))});
}

void ModelWriter::addGraphInputs() {
  int k = 0;
  for (const VarPtr& in : m_graph.inputs()) {
    if (in->kind() == Variable::Kind::Shared || in->kind() == Variable::Kind::Constant) continue;
    const std::string name =
        uniqueValue(in->name().empty() ? "input_" + std::to_string(k) : in->name());
    ++k;
    m_names[in.get()] = name;
    onnx::ValueInfoProto& info = *graph().add_input();
    info.set_name(name);
    auto* tensorType = info.mutable_type()->mutable_tensor_type();
    tensorType->set_elem_type(onnx_import::dtypeToOnnx(in->type().dtype()));
    auto* shape = tensorType->mutable_shape();
    for (int axis = 0; axis < in->type().ndim(); ++axis) {
      auto* dim = shape->add_dim();
      if (in->type().isDimKnown(axis))
        dim->set_dim_value(in->type().shape()[axis]);
      else
        dim->set_dim_param(axis == 0 ? std::string("N") : "d" + std::to_string(axis));
    }
  }
  // Shared variables keep their names (after the inputs'): the model's parameters.
  int p = 0;
  for (const VarPtr& in : m_graph.inputs()) {
    if (in->kind() == Variable::Kind::Regular) continue;
    const Tensor& v = in->kind() == Variable::Kind::Shared
                          ? static_cast<const SharedVariable&>(*in).value()
                          : static_cast<const Constant&>(*in).value();
    m_names[in.get()] =
        in->kind() == Variable::Kind::Shared
            ? initializer(v, in->name().empty() ? "param_" + std::to_string(p) : in->name())
            : constant(v, in->name());
    ++p;
  }
}

namespace {
// A graph output's ValueInfo: its dtype and shape, unknown dimensions left without a value.
void outputInfo(onnx::ValueInfoProto& info, const std::string& name, const TensorType& type) {
  info.set_name(name);
  auto* tensorType = info.mutable_type()->mutable_tensor_type();
  tensorType->set_elem_type(onnx_import::dtypeToOnnx(type.dtype()));
  auto* shape = tensorType->mutable_shape();
  for (int axis = 0; axis < type.ndim(); ++axis) {
    auto* dim = shape->add_dim();
    if (type.isDimKnown(axis)) dim->set_dim_value(type.shape()[axis]);
  }
}
}  // namespace

void ModelWriter::addGraphOutputs(const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i)
    outputInfo(*graph().add_output(), names[i], m_graph.outputs()[i]->type());
}

void ModelWriter::emitGraphNodes(const FunctionGraph& g) {
  const std::vector<Apply*> order = g.toposort();
  // Note [Export patterns]: matched from the outputs back, so a pattern's root is not covered by
  // another pattern when it is matched.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Apply* node = *it;
    if (m_covered.count(node)) continue;
    const OpPtr outOfPlace = node->op().outOfPlace();
    const Op& op = outOfPlace ? *outOfPlace : node->op();
    for (const ExportPattern& pattern : defaultEmitters().patterns(op.name())) {
      std::vector<const Apply*> covered;
      if (!pattern.match(g, *node, covered)) continue;
      m_patternRoots[node] = pattern.emit;
      m_covered.insert(covered.begin(), covered.end());
      break;
    }
  }
  for (const Apply* node : order)
    if (!m_covered.count(node)) emitNode(*node, *node);
}

// Note [Exported subgraphs]: an inner graph (an IfElse branch) becomes a GraphProto whose nodes
// read the enclosing graph's values by name (ONNX's lexical scoping): body input k stands for the
// enclosing value inputs[k], so the subgraph has no inputs of its own. Value and node names stay
// unique across the whole model (ONNX wants SSA over every scope). What is only valid inside the
// subgraph is forgotten afterwards: the names of the body's variables (a body shared by two nodes
// is written twice) and the Cast nodes written inside it, which the enclosing graph must not
// reuse. Body output k is the value "<name>_output_<k>"; one that no body node computes (a body
// input, a constant, an output listed twice) is copied by an Identity.
void ModelWriter::emitSubgraph(NodeExport& parent, const FunctionGraph& body,
                               const std::vector<std::string>& inputs, const std::string& name,
                               onnx::GraphProto& into) {
  if (body.inputs().size() != inputs.size())
    unsupported(parent.reported(), "the inner graph " + name + " takes " +
                                       std::to_string(body.inputs().size()) + " inputs, the node " +
                                       std::to_string(inputs.size()));
  const auto savedNames = m_names;
  const auto savedCasts = m_casts;
  onnx::GraphProto* const savedTarget = m_target;
  m_target = &into;
  into.set_name(name);
  for (std::size_t k = 0; k < inputs.size(); ++k) m_names[body.inputs()[k].get()] = inputs[k];
  std::vector<std::string> outputNames;
  std::vector<std::size_t> copies;
  for (std::size_t k = 0; k < body.outputs().size(); ++k) {
    const VarPtr& v = body.outputs()[k];
    outputNames.push_back(uniqueValue(name + "_output_" + std::to_string(k)));
    if (v->owner() && !m_names.count(v.get()) && !m_reserved.count(v.get()))
      m_reserved[v.get()] = outputNames.back();
    else
      copies.push_back(k);
  }
  try {
    emitGraphNodes(body);
    for (std::size_t k : copies) addNode("Identity", {value(body.outputs()[k])}, {outputNames[k]});
  } catch (...) {
    m_target = savedTarget;
    throw;
  }
  for (std::size_t k = 0; k < outputNames.size(); ++k)
    outputInfo(*into.add_output(), outputNames[k], body.outputs()[k]->type());
  for (const VarPtr& v : body.outputs()) m_reserved.erase(v.get());
  m_names = savedNames;
  m_casts = savedCasts;
  m_target = savedTarget;
}

// ONNX's checker, then its strict shape inference on a copy, which also checks the inferred types
// of the graph outputs against the engine's. The symbols inference finds for output dimensions the
// engine left unknown ("N") are copied into the model's outputs.
void ModelWriter::check() {
  try {
    onnx::checker::check_model(m_model);
  } catch (const std::exception& e) {
    throw OnnxExportError(
        std::string("the exported model fails ONNX's checker (an exporter bug): ") + e.what());
  }
  onnx::ModelProto inferred = m_model;
  try {
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw OnnxExportError(
        std::string("the exported model fails ONNX's shape inference (an exporter bug): ") +
        e.what());
  }
  for (int i = 0; i < inferred.graph().output_size(); ++i) {
    const auto& from = inferred.graph().output(i).type().tensor_type().shape();
    auto* to = graph().mutable_output(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int axis = 0; axis < to->dim_size() && axis < from.dim_size(); ++axis)
      if (!to->dim(axis).has_dim_value() && from.dim(axis).has_dim_param())
        to->mutable_dim(axis)->set_dim_param(from.dim(axis).dim_param());
  }
}

std::string ModelWriter::write() {
  m_model.set_ir_version(m_options.opset >= 15 ? 8 : 7);
  m_model.set_producer_name(m_options.producerName);
  m_model.set_producer_version(m_options.producerVersion);
  onnx::OperatorSetIdProto* opsetImport = m_model.add_opset_import();
  opsetImport->set_domain("");
  opsetImport->set_version(m_options.opset);
  graph().set_name(m_options.graphName);

  addGraphInputs();
  // Graph outputs are named before any node (Note [Export value names]); one that no node of its
  // own computes (an input, a constant, an output listed twice) is copied by an Identity.
  std::vector<std::string> outputNames;
  std::vector<std::size_t> copies;
  for (std::size_t i = 0; i < m_graph.outputs().size(); ++i) {
    const VarPtr& v = m_graph.outputs()[i];
    // ONNX has no updates: an unnamed update of shared variable W is the output "W_update".
    std::string base = v->name().empty() ? "output_" + std::to_string(i) : v->name();
    if (auto u = m_graph.updateMapping().find(i); v->name().empty() &&
                                                  u != m_graph.updateMapping().end() &&
                                                  !m_graph.inputs()[u->second]->name().empty())
      base = m_graph.inputs()[u->second]->name() + "_update";
    outputNames.push_back(uniqueValue(base));
    if (v->owner() && !m_reserved.count(v.get()))
      m_reserved[v.get()] = outputNames.back();
    else
      copies.push_back(i);
  }
  emitGraphNodes(m_graph);
  for (std::size_t i : copies) addNode("Identity", {value(m_graph.outputs()[i])}, {outputNames[i]});
  addGraphOutputs(outputNames);
  check();
  std::string bytes;
  if (!m_model.SerializeToString(&bytes))
    throw OnnxExportError("serializing the ONNX model failed");
  return bytes;
}

// --- NodeExport ----------------------------------------------------------------------------------

NodeExport::NodeExport(ModelWriter& writer, const Apply& node, const Op& op, const Apply& reported)
    : m_writer(writer), m_node(node), m_op(op), m_reported(reported) {}

int NodeExport::opset() const {
  return m_writer.opset();
}

const Tensor* NodeExport::constantInput(int i) const {
  const VarPtr& v = m_node.input(i);
  if (v->kind() != Variable::Kind::Constant) return nullptr;
  return &static_cast<const Constant&>(*v).value();
}

std::optional<std::vector<std::int64_t>> NodeExport::constantInts(int i) const {
  const Tensor* t = constantInput(i);
  if (!t || isFloat(t->dtype())) return std::nullopt;
  const Tensor wide = t->astype(DType::Int64).contiguous();
  const std::int64_t* data = wide.data<std::int64_t>();
  return std::vector<std::int64_t>(data, data + wide.numel());
}

std::optional<double> NodeExport::constantScalar(int i) const {
  const Tensor* t = constantInput(i);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->item();
}

std::string NodeExport::input(int i) {
  return m_writer.value(m_node.input(i));
}
std::string NodeExport::value(const VarPtr& v) {
  return m_writer.value(v);
}

std::string NodeExport::input(int i, DType as) {
  return m_writer.cast(input(i), inType(i).dtype(), as);
}

std::string NodeExport::cast(const std::string& value, DType from, DType to) {
  return m_writer.cast(value, from, to);
}

std::string NodeExport::output(int i) {
  return m_writer.outputName(m_node.outputRef(i), i);
}

std::string NodeExport::newValue(std::string_view what) {
  const std::string& scope = m_reported.scope();
  return m_writer.uniqueValue("/" + (scope.empty() ? std::string() : scope + "/") +
                              std::string(what));
}

onnx::NodeProto& NodeExport::add(std::string_view opType, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs) {
  return m_writer.addNode(opType, std::move(inputs), std::move(outputs));
}

std::string NodeExport::add1(std::string_view opType, std::vector<std::string> inputs,
                             std::string output) {
  std::vector<std::string> outputs;
  if (!output.empty()) outputs.push_back(std::move(output));
  return add(opType, std::move(inputs), std::move(outputs)).output(0);
}

std::string NodeExport::compute(std::string_view opType,
                                const std::vector<std::pair<std::string, DType>>& inputs,
                                DType dtype, DTypeSet allowed, std::optional<DType> resultDType,
                                std::string output) {
  const std::optional<DType> k = computeDTypeFor(dtype, allowed);
  if (!k)
    unsupported("ONNX's " + std::string(opType) + " has no form for " +
                std::string(dtypeName(dtype)) + " values");
  std::vector<std::string> names;
  for (const auto& [name, d] : inputs) names.push_back(cast(name, d, *k));
  const DType result = resultDType.value_or(*k);
  if (result == *k) return add1(opType, std::move(names), std::move(output));
  const std::string raw = add1(opType, std::move(names));
  if (output.empty()) return cast(raw, *k, result);
  auto& node = add("Cast", {raw}, {output});
  attrInt(node, "to", onnx_import::dtypeToOnnx(result));
  return output;
}

std::string NodeExport::ints(const std::vector<std::int64_t>& values) {
  Tensor t(DType::Int64, {static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  return tensor(t);
}

std::string NodeExport::scalar(double value, DType dtype) {
  return tensor(Tensor::scalar(dtype, value));
}

std::string NodeExport::tensor(const Tensor& value) {
  return m_writer.constant(value, {});
}

void NodeExport::emitExpansion(const std::vector<VarPtr>& outputs) {
  m_writer.emitExpansion(*this, outputs);
}

void NodeExport::emitSubgraph(const FunctionGraph& body, const std::vector<std::string>& inputs,
                              const std::string& name, onnx::GraphProto& into) {
  m_writer.emitSubgraph(*this, body, inputs, name, into);
}

void NodeExport::unsupported(const std::string& why) const {
  m_writer.unsupported(m_reported, why);
}

}  // namespace onnx_export

std::string writeOnnx(const FunctionGraph& graph, const OnnxExportOptions& options) {
  if (options.opset < kOnnxExportMinOpset || options.opset > kOnnxExportMaxOpset)
    throw std::invalid_argument("ONNX export writes opsets " + std::to_string(kOnnxExportMinOpset) +
                                " to " + std::to_string(kOnnxExportMaxOpset) + ", found opset " +
                                std::to_string(options.opset));
  // Note [Channel blocks] (engine/ops/nn/channel_blocks.h): ONNX has no blocked layout; a graph
  // fast_run blocked is written as the FusedConv2d chain it came from.
  const std::unique_ptr<FunctionGraph> plain = withoutChannelBlocks(graph);
  onnx_export::ModelWriter writer(plain ? *plain : graph, options);
  return writer.write();
}

void saveOnnx(const FunctionGraph& graph, const std::filesystem::path& path,
              const OnnxExportOptions& options) {
  const std::string bytes = writeOnnx(graph, options);
  if (auto why = writeFileAtomically(path, std::as_bytes(std::span(bytes.data(), bytes.size()))))
    throw std::runtime_error("cannot write " + path.string() + ": " + *why);
}

}  // namespace tscope::engine::io
