// The importer: model checks, initializers, inputs, node order, conversion, scopes and sites.
// Note [ONNX import] in onnx_import.h.
#include "engine/compile/function.h"
#include "engine/graph/errors.h"
#include "engine/io/onnx/onnx_importer.h"
#include "engine/ops/basic.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <sstream>
#include <unordered_set>

namespace tscope::engine::io {

// Converters quote attribute values and names from the file: every part is made JSON-safe here
// (Note [Text from models]), so the GUI and --json output can always carry the message.
OnnxError::OnnxError(std::string source, std::string where, std::string message)
    : std::runtime_error(onnx_import::safeText(source) + ": " +
                         (where.empty() ? std::string() : onnx_import::safeText(where) + ": ") +
                         onnx_import::safeText(message)),
      m_source(onnx_import::safeText(source)),
      m_where(onnx_import::safeText(where)),
      m_message(onnx_import::safeText(message)) {}

namespace onnx_import {

namespace {

// The highest default-domain opset the linked ONNX library has schemas for (17 for 1.12).
int libraryMaxOpset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

std::string quoted(const std::string& name) {
  return "'" + safeText(name) + "'";
}

// "layer1/layer1.0/conv1" from PyTorch's "/layer1/layer1.0/conv1/Conv"; "" for a flat name.
std::string scopeOfNodeName(const std::string& name) {
  std::size_t last = name.rfind('/');
  if (last == std::string::npos) return {};
  std::string path;
  std::size_t start = 0;
  while (start < last) {
    std::size_t end = name.find('/', start);
    if (end == std::string::npos || end > last) end = last;
    if (end > start) path += (path.empty() ? "" : "/") + name.substr(start, end - start);
    start = end + 1;
  }
  return safeText(path);
}

}  // namespace

Importer::Importer(std::string source, std::string baseDir, OnnxImportOptions options)
    : m_source(std::move(source)), m_baseDir(std::move(baseDir)), m_options(options) {}

std::string Importer::nodeWhere(const onnx::NodeProto& node, int index) {
  std::string where = "graph.node[" + std::to_string(index) + "]";
  if (!node.name().empty()) where += " " + quoted(node.name());
  where += " (" +
           (node.domain().empty() || node.domain() == "ai.onnx" ? std::string()
                                                                : safeText(node.domain()) + "::") +
           safeText(node.op_type()) + ")";
  return where;
}

void Importer::fail(const std::string& where, const std::string& message) const {
  throw OnnxError(m_source, where, message);
}

std::optional<TensorType> Importer::inferredType(const std::string& valueName) const {
  auto it = m_inferred.find(valueName);
  if (it == m_inferred.end()) return std::nullopt;
  return typeFromOnnx(it->second);
}

void Importer::readOpsets(const onnx::ModelProto& model) {
  if (model.ir_version() <= 0)
    fail("model", "expected an ir_version >= 1, found " + std::to_string(model.ir_version()) +
                      " (is this an ONNX model?)");
  if (!model.has_graph()) fail("model", "expected a graph, found none (is this an ONNX model?)");
  bool found = false;
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      m_opset = static_cast<int>(opset.version());
      found = true;
    } else if (opset.domain() == kTrainingDomain) {
      m_trainingOpset = static_cast<int>(opset.version());
    }
  }
  // Note [Models without the default domain]: ONNX's optimizer cases import only
  // ai.onnx.preview.training. Such a model reads as if it imported the newest default-domain
  // opset the ONNX library knows (so its checker and shape inference run), and a default-domain
  // node in it is refused in convertNode, naming the node.
  if (!found && m_trainingOpset > 0) {
    m_importsDefaultDomain = false;
    m_opset = std::min(libraryMaxOpset(), kOnnxMaxOpset);
    m_result.opset = m_opset;
    return;
  }
  if (!found) {
    // IR version 1-2 models carry no opset_import: they are opset 1, which we cannot read.
    fail("model.opset_import",
         "expected an import of the default domain (\"\" or \"ai.onnx\"), found none");
  }
  // Note [Opsets before 6]: a model of opset 1 to 5 is read when every default-domain op in it
  // has the form it has at opset 6 (its schema at opset 6 dates from the model's opset or
  // before: Not, Softplus, GlobalAveragePool...), so the converters see what they know.
  if (m_opset >= 1 && m_opset < kOnnxMinOpset) {
    std::string changed;
    for (const auto& node : model.graph().node()) {
      if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
      const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), kOnnxMinOpset, "");
      if (!schema || schema->since_version() > m_opset) {
        changed = safeText(node.op_type()) +
                  (schema ? " changed at opset " + std::to_string(schema->since_version())
                          : " is unknown to ONNX");
        break;
      }
    }
    if (changed.empty()) {
      m_result.opset = m_opset;
      return;
    }
    fail("model.opset_import", "expected a default-domain opset from " +
                                   std::to_string(kOnnxMinOpset) + " to " +
                                   std::to_string(kOnnxMaxOpset) +
                                   " (or older, for ops unchanged "
                                   "since), found " +
                                   std::to_string(m_opset) + ", and " + changed);
  }
  if (m_opset < kOnnxMinOpset || m_opset > kOnnxMaxOpset)
    fail("model.opset_import",
         "expected a default-domain opset from " + std::to_string(kOnnxMinOpset) + " to " +
             std::to_string(kOnnxMaxOpset) + ", found " + std::to_string(m_opset));
  m_result.opset = m_opset;
}

// Note [Guarding ONNX shape inference]: ONNX 1.12's inference functions for the convolution and
// pooling family trust their inputs' ranks and attribute lengths; a malformed model (found by
// fuzzing: a rank-5 weight on a rank-4 input, a rank-1 "weight") makes them read out of bounds.
// Before inference runs, such nodes are checked against every rank known from the file (graph
// inputs, initializers, value_info) and refused with a clear error. Ranks that only inference
// itself would find are not covered; exporters write value_info for them.
void Importer::precheckConvLike(const onnx::GraphProto& graph) const {
  std::unordered_map<std::string, int> ranks;
  auto note = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      ranks[vi.name()] = vi.type().tensor_type().shape().dim_size();
  };
  for (const auto& vi : graph.input()) note(vi);
  for (const auto& vi : graph.value_info()) note(vi);
  for (const auto& init : graph.initializer()) ranks[init.name()] = init.dims_size();
  std::unordered_set<std::string> defined;
  for (const auto& vi : graph.input()) defined.insert(vi.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  for (const auto& n : graph.node())
    for (const std::string& out : n.output()) defined.insert(out);
  static const std::unordered_set<std::string> convs = {"Conv", "ConvTranspose", "ConvInteger",
                                                        "QLinearConv"};
  static const std::unordered_set<std::string> pools = {
      "MaxPool",      "AveragePool",       "LpPool",
      "MaxUnpool",    "GlobalAveragePool", "GlobalMaxPool",
      "GlobalLpPool", "MaxRoiPool",        "InstanceNormalization"};
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (!(node.domain().empty() || node.domain() == "ai.onnx")) continue;
    if (node.op_type() == "Scan") {
      // ONNX 1.12's Scan inference reads num_scan_inputs and the body without checking that
      // they are there, and sizes vectors by num_scan_inputs (found by fuzzing: a renamed
      // num_scan_inputs crashed Scan-8's, num_scan_inputs = 2^31 made Scan-9's allocate 17 GB).
      bool body = false;
      std::int64_t count = -1;
      for (const auto& a : node.attribute()) {
        body = body || (a.name() == "body" && a.type() == onnx::AttributeProto::GRAPH);
        if (a.name() == "num_scan_inputs" && a.type() == onnx::AttributeProto::INT) count = a.i();
      }
      if (!body || count < 1 || count > node.input_size())
        fail(nodeWhere(node, i),
             "expected the attributes body (a graph) and num_scan_inputs (from 1 to the " +
                 std::to_string(node.input_size()) + " inputs), found " +
                 (body ? "" : "no body and ") + "num_scan_inputs " +
                 (count == -1 ? "missing" : std::to_string(count)));
      continue;
    }
    const bool conv = convs.count(node.op_type()) > 0;
    if (!conv && !pools.count(node.op_type())) continue;
    auto rankOf = [&](int k) {
      if (k >= node.input_size()) return -1;
      auto it = ranks.find(node.input(k));
      return it == ranks.end() ? -1 : it->second;
    };
    const int xRank = rankOf(0);
    const int wIndex = node.op_type() == "QLinearConv" ? 3 : 1;
    const int wRank = conv ? rankOf(wIndex) : -1;
    if (node.input_size() == 0) fail(nodeWhere(node, i), "expected an input, found none");
    if (xRank >= 0 && xRank < 3)
      fail(nodeWhere(node, i), "expected an input of rank >= 3 (N, C, spatial...), found rank " +
                                   std::to_string(xRank));
    if (conv && wRank >= 0 && wRank < 3)
      fail(nodeWhere(node, i),
           "expected a weight of rank >= 3, found rank " + std::to_string(wRank));
    if (conv && xRank >= 0 && wRank >= 0 && xRank != wRank)
      fail(nodeWhere(node, i), "expected the input and the weight to have the same rank, found " +
                                   std::to_string(xRank) + " and " + std::to_string(wRank));
    if (node.op_type() == "MaxUnpool") {
      // ONNX 1.12's MaxUnpool inference reads the indices as if shaped like X and every input as
      // typed (found by fuzzing: a rank-1 tensor given as the indices, an input nothing defines).
      for (const std::string& name : node.input())
        if (!name.empty() && !defined.count(name))
          fail(nodeWhere(node, i),
               "the input " + quoted(name) + " is defined by no node, graph input or initializer");
      const int iRank = rankOf(1), sRank = rankOf(2);
      if (xRank >= 0 && iRank >= 0 && iRank != xRank)
        fail(nodeWhere(node, i), "expected the indices (input 1) to have the input's rank " +
                                     std::to_string(xRank) + ", found rank " +
                                     std::to_string(iRank));
      if (sRank >= 0 && sRank != 1)
        fail(nodeWhere(node, i),
             "expected output_shape (input 2) of rank 1, found rank " + std::to_string(sRank));
    }
    const int spatial = xRank >= 0 ? xRank - 2 : wRank >= 0 ? wRank - 2 : -1;
    for (const auto& a : node.attribute()) {
      if (a.type() != onnx::AttributeProto::INTS) continue;
      const int n = a.ints_size();
      int expected = -1;
      if (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations" ||
          a.name() == "output_padding" || a.name() == "output_shape")
        expected = spatial;
      else if (a.name() == "pads")
        expected = spatial >= 0 ? 2 * spatial : -1;
      if (expected >= 0 && n != expected && !(a.name() == "output_shape" && n == spatial + 2))
        fail(nodeWhere(node, i),
             "attribute '" + a.name() + "': expected " + std::to_string(expected) + " values for " +
                 std::to_string(spatial) + " spatial axes, found " + std::to_string(n));
      for (std::int64_t v : a.ints())
        if (v < 0 || v > (std::int64_t{1} << 31) ||
            (v == 0 &&
             (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations")))
          fail(nodeWhere(node, i),
               "attribute '" + a.name() + "': value " + std::to_string(v) + " is out of range");
    }
  }
}

void Importer::checkAndInfer(onnx::ModelProto& model) {
  const int known = libraryMaxOpset();
  if (m_opset > known) {
    m_result.warnings.push_back("opset " + std::to_string(m_opset) +
                                " is newer than the ONNX library's " + std::to_string(known) +
                                ": the checker and shape inference were skipped");
    return;
  }
  if (m_options.runChecker) {
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      m_result.warnings.push_back(std::string("ONNX checker: ") + e.what());
    }
  }
  if (m_options.inferShapes) {
    precheckConvLike(model.graph());
    try {
      onnx::shape_inference::InferShapes(model);
    } catch (const std::exception& e) {
      m_result.warnings.push_back(std::string("ONNX shape inference: ") + e.what());
    }
  }
  const auto& graph = model.graph();
  for (const auto& vi : graph.value_info()) m_inferred[vi.name()] = vi.type();
  for (const auto& vi : graph.output())
    if (vi.has_type()) m_inferred[vi.name()] = vi.type();
}

void Importer::readInitializers(const onnx::GraphProto& graph) {
  if (graph.sparse_initializer_size() > 0)
    fail("graph.sparse_initializer", "sparse initializers are not supported yet");
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const auto& proto = graph.initializer(i);
    const std::string where =
        "graph.initializer[" + std::to_string(i) + "] " + quoted(proto.name());
    if (proto.name().empty()) fail(where, "expected a name, found an empty one");
    if (m_values.count(proto.name())) fail(where, "the name is defined twice");
    Tensor value;
    try {
      value = tensorFromOnnx(proto, m_baseDir);
    } catch (const std::exception& e) {
      fail(where, e.what());
    }
    VarPtr v;
    // Note [Initializers]: float initializers are the model's parameters: shared variables, so the
    // viewer shows them as such and a run can change them; the rest (shapes, axes, indices) are
    // constants, which the importer and the optimizer can read and fold.
    if (isFloat(value.dtype())) {
      v = SharedVariable::create(std::move(value), safeText(proto.name()));
      m_shared.push_back(v);
    } else {
      v = Constant::create(std::move(value), safeText(proto.name()));
    }
    v->setSite(SourceSite{m_source, static_cast<std::uint32_t>(i + 1), "initializer"});
    m_values.emplace(proto.name(), v);
  }
}

void Importer::readInputs(const onnx::GraphProto& graph) {
  for (int i = 0; i < graph.input_size(); ++i) {
    const auto& vi = graph.input(i);
    const std::string where = "graph.input[" + std::to_string(i) + "] " + quoted(vi.name());
    if (vi.name().empty()) fail(where, "expected a name, found an empty one");
    if (m_values.count(vi.name())) {
      // IR < 4 lists initializers as inputs too (a default the caller may override): the
      // initializer is the value.
      if (m_values[vi.name()]->owner() == nullptr &&
          m_values[vi.name()]->kind() != Variable::Kind::Regular)
        continue;
      fail(where, "the name is defined twice");
    }
    std::optional<TensorType> type = typeFromOnnx(vi.type());
    if (!type) {
      std::string found = !vi.type().has_tensor_type() ? "a non-tensor type"
                          : !dtypeFromOnnx(vi.type().tensor_type().elem_type())
                              ? "element type " + onnxTypeName(vi.type().tensor_type().elem_type())
                              : "a tensor of unknown rank";
      fail(where, "expected a tensor of known rank and a supported element type, found " + found);
    }
    VarPtr v = Variable::create(*type, safeText(vi.name()));
    v->setSite(SourceSite{m_source, static_cast<std::uint32_t>(i + 1), "graph input"});
    m_values.emplace(vi.name(), v);
    m_graphInputs.push_back(v);
  }
}

// Note [Node order]: ONNX requires nodes in topological order, but the checker is skipped for
// newer opsets and some exporters get it wrong, so the order is computed: a node is ready when
// every input it names is defined; a node that never becomes ready either names a value nobody
// defines or sits on a cycle, and the error says which. A node with subgraphs (If) also waits for
// the values of this graph its subgraphs read by name (their implicit inputs): a branch may read
// a value the graph computes after the If's own condition.
namespace {
// The names a subgraph (and the subgraphs in it) reads that it does not define itself.
void implicitInputs(const onnx::GraphProto& g, std::unordered_set<std::string> defined,
                    std::vector<std::string>& out) {
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto& node : g.node())
    for (const std::string& o : node.output()) defined.insert(o);
  for (const auto& node : g.node()) {
    for (const std::string& in : node.input())
      if (!in.empty() && !defined.count(in)) out.push_back(in);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) implicitInputs(a.g(), defined, out);
      for (const auto& sub : a.graphs()) implicitInputs(sub, defined, out);
    }
  }
}
}  // namespace

std::vector<int> Importer::nodeOrder(const onnx::GraphProto& graph) const {
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (m_values.count(out) || !producer.emplace(out, i).second)
        fail(nodeWhere(graph.node(i), i), "the output " + quoted(out) + " is defined twice");
    }
  std::vector<int> pending(static_cast<std::size_t>(n), 0);
  std::unordered_map<int, std::vector<int>> users;
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : graph.node(i).input()) {
      if (in.empty() || m_values.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        fail(nodeWhere(graph.node(i), i),
             "the input " + quoted(in) +
                 " is not a graph input, an initializer or any node's output");
      ++pending[static_cast<std::size_t>(i)];
      users[it->second].push_back(i);
    }
    // Implicit inputs: only those this graph computes order the node (the rest are the enclosing
    // scopes' values, or undefined names the branch's conversion reports).
    std::vector<std::string> implicit;
    for (const auto& a : graph.node(i).attribute()) {
      if (a.has_g()) implicitInputs(a.g(), {}, implicit);
      for (const auto& sub : a.graphs()) implicitInputs(sub, {}, implicit);
    }
    std::unordered_set<int> waits;
    for (const std::string& in : implicit) {
      auto it = producer.find(in);
      if (it == producer.end() || m_values.count(in) || it->second == i ||
          !waits.insert(it->second).second)
        continue;
      ++pending[static_cast<std::size_t>(i)];
      users[it->second].push_back(i);
    }
  }
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<std::size_t>(i)] == 0) order.push_back(i);
  for (std::size_t k = 0; k < order.size(); ++k)
    for (int user : users[order[k]])
      if (--pending[static_cast<std::size_t>(user)] == 0) order.push_back(user);
  if (order.size() != static_cast<std::size_t>(n)) {
    for (int i = 0; i < n; ++i)
      if (pending[static_cast<std::size_t>(i)] != 0)
        fail(nodeWhere(graph.node(i), i),
             "the node is on a cycle (its inputs depend on its own outputs)");
  }
  return order;
}

std::optional<Tensor> Importer::constantValue(const VarPtr& v) {
  if (v->kind() == Variable::Kind::Constant) return static_cast<const Constant&>(*v).value();
  // A float initializer is a shared variable (Note [Initializers]) but still the model's constant
  // while importing: Resize scales, Clip bounds and the like read its value.
  if (v->kind() == Variable::Kind::Shared) return static_cast<const SharedVariable&>(*v).value();
  if (!v->owner()) return std::nullopt;
  auto cached = m_folded.find(v.get());
  if (cached != m_folded.end()) return cached->second;
  // Note [Folding on demand]: a converter that needs a value (Unsqueeze axes, Slice starts) may
  // find it computed from constants (Shape of a static input, Concat of Constants). The importer
  // evaluates such a subgraph once — at most 256 nodes, all executable, no free input, every
  // value of a static size up to 2^20 elements — and keeps
  // the nodes in the graph.
  std::optional<Tensor> result;
  std::vector<Apply*> stack{v->owner()};
  std::unordered_set<Apply*> seen{v->owner()};
  bool foldable = true;
  while (!stack.empty() && foldable) {
    Apply* node = stack.back();
    stack.pop_back();
    if (!node->op().isExecutable() || seen.size() > 256) foldable = false;
    // Only values of known, small size: a model must not make the importer allocate gigabytes.
    for (int k = 0; foldable && k < node->nOutputs(); ++k) {
      const TensorType& t = node->outputRef(k).type();
      std::int64_t numel = 1;
      for (int d = 0; foldable && d < t.ndim(); ++d) {
        foldable = t.isDimKnown(d) && t.shape()[static_cast<std::size_t>(d)] <= (1 << 20);
        numel *= foldable ? t.shape()[static_cast<std::size_t>(d)] : 1;
        foldable = foldable && numel <= (1 << 20);
      }
    }
    for (const VarPtr& in : node->inputs()) {
      if (!foldable) break;
      if (in->kind() == Variable::Kind::Constant) continue;
      if (!in->owner())
        foldable = false;
      else if (seen.insert(in->owner()).second)
        stack.push_back(in->owner());
    }
  }
  if (foldable) {
    try {
      Function f = compile({}, {v});
      result = f({}).at(0);
    } catch (const std::exception&) {
      result.reset();
    }
  }
  m_folded.emplace(v.get(), result);
  return result;
}

void Importer::adoptNewNodes(const std::vector<VarPtr>& outputs, const onnx::NodeProto& node,
                             int index) {
  const std::string scope = scopeOfNodeName(node.name());
  const SourceSite site{m_source, static_cast<std::uint32_t>(index + 1),
                        node.name().empty() ? safeText(node.op_type()) : safeText(node.name())};
  std::vector<Apply*> stack;
  for (const VarPtr& out : outputs)
    if (out && out->owner() && !m_known.count(out->owner()) && !m_existing.count(out.get()))
      stack.push_back(out->owner());
  while (!stack.empty()) {
    Apply* a = stack.back();
    stack.pop_back();
    if (!m_known.insert(a).second) continue;
    a->setScope(scope);
    a->setSite(site);
    for (int k = 0; k < a->nOutputs(); ++k) {
      a->outputRef(k).setScope(scope);
      a->outputRef(k).setSite(site);
    }
    for (const VarPtr& in : a->inputs()) {
      if (in->owner() && !m_known.count(in->owner()))
        stack.push_back(in->owner());
      else if (!in->owner() && in->kind() == Variable::Kind::Constant &&
               !m_existing.count(in.get())) {
        // Constants the converter made (1.0 in Reciprocal, axes) belong to this node too.
        in->setScope(scope);
        in->setSite(site);
      }
    }
  }
}

void Importer::checkOutputType(const VarPtr& out, const std::string& name,
                               const onnx::NodeProto& node, int index) const {
  // ONNX 1.12's STFT inference gives frame_length bins even when onesided (the default) keeps
  // frame_length / 2 + 1, contradicting ONNX's own cases; the converter's type is the spec's.
  if (node.op_type() == "STFT") return;
  std::optional<TensorType> expected = inferredType(name);
  if (!expected) return;
  const TensorType& got = out->type();
  bool ok = got.dtype() == expected->dtype() && got.ndim() == expected->ndim();
  for (int d = 0; ok && d < got.ndim(); ++d)
    ok = !got.isDimKnown(d) || !expected->isDimKnown(d) ||
         got.shape()[static_cast<std::size_t>(d)] == expected->shape()[static_cast<std::size_t>(d)];
  if (!ok)
    fail(nodeWhere(node, index), "the output " + quoted(name) + " was converted to " + got.str() +
                                     ", but ONNX shape inference says " + expected->str());
}

std::vector<VarPtr> Importer::convertOpaque(const onnx::NodeProto& node, int index,
                                            const std::vector<VarPtr>& inputs,
                                            const std::string& why) {
  const std::string where = nodeWhere(node, index);
  if (!m_options.allowOpaque) fail(where, why);
  std::vector<TensorType> types;
  for (int k = 0; k < node.output_size(); ++k) {
    std::optional<TensorType> t =
        node.output(k).empty() ? std::nullopt : inferredType(node.output(k));
    if (!t) {
      if (node.output(k).empty()) {
        types.push_back(TensorType::ofRank(DType::Float32, 0));
        continue;
      }
      fail(where,
           why +
               "; it cannot load as an opaque node either, because ONNX shape inference gave no "
               "tensor type for its output " +
               quoted(node.output(k)));
    }
    types.push_back(*t);
  }
  NodeContext ctx(*this, node, index, inputs);
  nlohmann::json props = {{"onnx_op", safeText(node.op_type())}, {"attributes", ctx.attrsJson()}};
  if (!node.domain().empty()) props["domain"] = safeText(node.domain());
  std::vector<VarPtr> present;
  nlohmann::json inputNames = nlohmann::json::array();
  for (int k = 0; k < node.input_size(); ++k) {
    inputNames.push_back(safeText(node.input(k)));
    if (inputs[static_cast<std::size_t>(k)]) present.push_back(inputs[static_cast<std::size_t>(k)]);
  }
  props["onnx_inputs"] = std::move(inputNames);
  std::string opName =
      (node.domain().empty() || node.domain() == "ai.onnx" ? "" : safeText(node.domain()) + "::") +
      safeText(node.op_type());
  auto op = std::make_shared<OpaqueOp>(opName, std::move(props), why + " (" + where + ")");
  ApplyPtr apply = Apply::create(op, std::move(present), std::move(types));
  const std::string type = safeText(node.op_type());
  if (std::find(m_result.opaqueOps.begin(), m_result.opaqueOps.end(), type) ==
      m_result.opaqueOps.end())
    m_result.opaqueOps.push_back(type);
  return apply->outputs();
}

void Importer::convertNode(const onnx::NodeProto& node, int index) {
  const std::string where = nodeWhere(node, index);
  std::vector<VarPtr> inputs;
  for (const std::string& name : node.input()) {
    if (name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    inputs.push_back(m_values.at(name));  // nodeOrder() checked every name
  }
  const bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  if (defaultDomain && !m_importsDefaultDomain)
    fail(where, "the model imports no default-domain opset (only " + std::string(kTrainingDomain) +
                    "), so it cannot hold the default-domain op " + safeText(node.op_type()));
  const bool training = node.domain() == kTrainingDomain && m_trainingOpset > 0;
  Converter fn = defaultDomain ? defaultConverters().find(node.op_type())
                 : training    ? trainingConverters().find(node.op_type())
                               : nullptr;
  std::vector<VarPtr> outputs;
  if (defaultDomain && node.op_type() == "If") {
    outputs = convertIf(node, index, inputs);
  } else if (defaultDomain && node.op_type() == "Scan") {
    outputs = convertScan(node, index, inputs);
  } else if (defaultDomain && node.op_type() == "Loop") {
    outputs = convertLoop(node, index, inputs);
  } else if (!fn) {
    std::string why =
        defaultDomain ? "the ONNX op " + safeText(node.op_type()) + " (opset " +
                            std::to_string(m_opset) + ") has no Tensorscope converter yet"
        : training ? "the " + std::string(kTrainingDomain) + " op " + safeText(node.op_type()) +
                         " has no Tensorscope converter yet"
                   : "ops of the domain '" + safeText(node.domain()) + "' are not supported";
    outputs = convertOpaque(node, index, inputs, why);
  } else {
    NodeContext ctx(*this, node, index, inputs);
    try {
      outputs = fn(ctx);
    } catch (const OnnxRuntimeValue& e) {
      if (!m_options.deferRuntimeValues) throw;
      outputs = convertDeferred(node, index, inputs, e);
    } catch (const OnnxError&) {
      throw;
    } catch (const std::exception& e) {
      fail(where, std::string("cannot convert: ") + e.what());
    }
  }
  if (outputs.size() > static_cast<std::size_t>(node.output_size()))
    fail(where, "the converter returned " + std::to_string(outputs.size()) +
                    " outputs for a node with " + std::to_string(node.output_size()));
  outputs.resize(static_cast<std::size_t>(node.output_size()));
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string& name = node.output(k);
    if (name.empty()) continue;
    VarPtr& out = outputs[static_cast<std::size_t>(k)];
    if (!out) fail(where, "the converter gave no value for the output " + quoted(name));
    // A converter that passes a value through (Identity, inference Dropout) still gets a node of
    // its own, so the ONNX node shows and the input keeps its name.
    if (m_existing.count(out.get()) || (!out->owner() && out->kind() != Variable::Kind::Constant))
      out = identity(out);
  }
  adoptNewNodes(outputs, node, index);
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string& name = node.output(k);
    if (name.empty()) continue;
    const VarPtr& out = outputs[static_cast<std::size_t>(k)];
    checkOutputType(out, name, node, index);
    out->setName(safeText(name));
    m_values.emplace(name, out);
    m_existing.insert(out.get());
  }
}

OnnxImportResult Importer::run(onnx::ModelProto& model) {
  readOpsets(model);
  checkAndInfer(model);
  const onnx::GraphProto& graph = model.graph();
  readInitializers(graph);
  readInputs(graph);
  for (const auto& [name, v] : m_values) m_existing.insert(v.get());
  for (int index : nodeOrder(graph)) convertNode(graph.node(index), index);

  std::vector<VarPtr> outputs;
  for (int i = 0; i < graph.output_size(); ++i) {
    const std::string& name = graph.output(i).name();
    auto it = m_values.find(name);
    if (it == m_values.end())
      fail("graph.output[" + std::to_string(i) + "] " + quoted(name),
           "no node, input or initializer defines it");
    outputs.push_back(it->second);
  }
  if (outputs.empty()) fail("graph.output", "expected at least one graph output, found none");
  std::vector<VarPtr> inputs = m_graphInputs;
  inputs.insert(inputs.end(), m_shared.begin(), m_shared.end());
  try {
    m_result.document.original = std::make_unique<FunctionGraph>(
        std::move(inputs), std::move(outputs), FunctionGraph::Ownership::Adopt);
  } catch (const std::exception& e) {
    fail("graph", std::string("cannot build the graph: ") + e.what());
  }
  m_result.document.original->pruneUnused("onnx import: unused initializers");
  m_result.document.producer = {{"name", safeText(model.producer_name())},
                                {"version", safeText(model.producer_version())}};
  return std::move(m_result);
}

OnnxImportResult readOnnxFrom(std::string_view bytes, const std::string& source,
                              const std::string& baseDir, const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty()) throw OnnxError(source, "", "the file is empty, expected an ONNX model");
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw OnnxError(source, "", "models over 2 GiB must keep their weights in external data files");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    std::size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && bytes[first] == '{')
      throw OnnxError(source, "", "expected an ONNX model (protobuf), found JSON (a .tsg graph?)");
    throw OnnxError(source, "",
                    "expected an ONNX model, found bytes that do not parse as a ModelProto "
                    "(truncated or not an ONNX file)");
  }
  Importer importer(source, baseDir, options);
  try {
    return importer.run(model);
  } catch (const OnnxError&) {
    throw;
  } catch (const std::exception& e) {
    throw OnnxError(source, "", e.what());
  }
}

}  // namespace onnx_import

bool looksLikeOnnx(std::string_view bytes) {
  // A ModelProto starts with a field tag: ir_version (0x08), producer_name (0x12), ... graph
  // (0x3a), opset_import (0x42). JSON (.tsg) starts with '{' or whitespace.
  if (bytes.empty()) return false;
  auto c = static_cast<unsigned char>(bytes[0]);
  return c == 0x08 || c == 0x12 || c == 0x1a || c == 0x22 || c == 0x2a || c == 0x32 || c == 0x3a ||
         c == 0x42 || c == 0x52 || c == 0x62 || c == 0x72;
}

OnnxImportResult readOnnx(std::string_view bytes, std::string_view source,
                          const OnnxImportOptions& options) {
  return onnx_import::readOnnxFrom(bytes, std::string(source), std::string(), options);
}

OnnxImportResult loadOnnx(const std::filesystem::path& path, const OnnxImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw OnnxError(path.string(), "", "cannot open the file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  return onnx_import::readOnnxFrom(bytes, path.string(), path.parent_path().string(), options);
}

}  // namespace tscope::engine::io
