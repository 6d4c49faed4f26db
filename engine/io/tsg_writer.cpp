// Writing .tsg files: the header, the JSON document with each variable and apply on a line of its
// own (so the JSON diffs well), then the tensor section with each distinct tensor once.

#include "engine/graph/op.h"
#include "engine/io/atomic_file.h"
#include "engine/io/base64.h"
#include "engine/io/graph_json.h"
#include "engine/io/tsg.h"
#include "engine/io/tsg_binary.h"

#include <bit>
#include <map>
#include <span>
#include <stdexcept>

namespace tscope::engine::io {

static_assert(std::endian::native == std::endian::little,
              "the .tsg format stores tensors little-endian; add byte swapping for this platform");

using nlohmann::json;

namespace {
// Note [Messages are UTF-8]: error messages quote file names and file contents (nlohmann's parse
// errors echo the bytes they stopped at); the GUI and --json output need valid UTF-8, so every
// byte that does not start a well-formed sequence becomes '?'.
std::string validUtf8(std::string text) {
  auto cont = [&](std::size_t i) {
    return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80;
  };
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80                   ? 1
                      : (c >= 0xc2 && c <= 0xdf) ? 2
                      : (c >= 0xe0 && c <= 0xef) ? 3
                      : (c >= 0xf0 && c <= 0xf4) ? 4
                                                 : 0;
    bool ok = len != 0;
    for (std::size_t k = 1; ok && k < len; ++k) ok = cont(i + k);
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogate
    } else if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);  // overlong, above U+10FFFF
    }
    if (!ok) {
      text[i] = '?';
      len = 1;
    }
    i += len;
  }
  return text;
}
}  // namespace

TsgError::TsgError(std::string source, std::string path, std::string message)
    : std::runtime_error(validUtf8(source + ": " + path + ": " + message)),
      m_source(validUtf8(std::move(source))),
      m_path(validUtf8(std::move(path))),
      m_message(validUtf8(std::move(message))) {}

json tensorStatsToJson(const TsgTensorStats& s) {
  return {{"format_version", s.version},
          {"tensors", s.tensors},
          {"tensor_bytes", s.tensorBytes},
          {"references", s.references},
          {"shared_bytes", s.sharedBytes},
          {"shared_tensors", s.sharedTensors},
          {"shared_between_graphs", s.sharedBetweenGraphs}};
}

json tensorToJson(const Tensor& t) {
  std::vector<std::byte> bytes = t.toBytes();
  return {{"dtype", dtypeName(t.dtype())}, {"shape", t.shape()}, {"data", base64Encode(bytes)}};
}

namespace {

// "float32[?,784]" (see readType in tsg_reader.cpp).
std::string typeToJson(const TensorType& t) {
  std::string out(dtypeName(t.dtype()));
  out += '[';
  for (int i = 0; i < t.ndim(); ++i) {
    if (i) out += ',';
    out += t.isDimKnown(i) ? std::to_string(t.shape()[static_cast<std::size_t>(i)]) : "?";
  }
  out += ']';
  if (t.device() == Device::Cuda) out += "@cuda";
  return out;
}

// The document's creation-site table (see readSiteTable in tsg_reader.cpp): each distinct
// (file, function) once, in order of first use.
class SiteTable {
 public:
  json ref(const SourceSite& site) {
    auto [it, added] =
        m_index.try_emplace(std::make_pair(site.file, site.function), m_entries.size());
    if (added) m_entries.push_back({{"file", site.file}, {"function", site.function}});
    return json::array({it->second, site.line});
  }
  const std::vector<json>& entries() const { return m_entries; }

 private:
  std::map<std::pair<std::string, std::string>, std::size_t> m_index;
  std::vector<json> m_entries;
};

void putMetadata(json& out, const std::string& scope, const SourceSite& site, SiteTable& sites) {
  if (!scope.empty()) out["scope"] = scope;
  if (!site.empty()) out["site"] = sites.ref(site);
}

std::string_view kindName(const Variable& v) {
  if (v.owner()) return "computed";
  switch (v.kind()) {
    case Variable::Kind::Constant:
      return "constant";
    case Variable::Kind::Shared:
      return "shared";
    case Variable::Kind::Regular:
      break;
  }
  return "input";
}

// A tensor in the section (a .tsg file), or inline as base64 (a graph kept in op props).
json tensorRef(const Tensor& t, TensorSectionWriter* section) {
  return section ? section->add(t) : tensorToJson(t);
}

json variableToJson(const Variable& v, SiteTable& sites, TensorSectionWriter* section) {
  json out = {{"id", v.id()}, {"kind", kindName(v)}};
  if (!v.owner()) out["type"] = typeToJson(v.type());  // an apply states its outputs' types
  if (!v.name().empty()) out["name"] = v.name();
  // A computed variable's scope and site default to its apply's: written only when they differ.
  const Apply* owner = v.owner();
  if (!owner || v.scope() != owner->scope()) {
    if (owner && v.scope().empty())
      out["scope"] = "";
    else if (!v.scope().empty())
      out["scope"] = v.scope();
  }
  if (!owner || !(v.site() == owner->site())) {
    if (!v.site().empty())
      out["site"] = sites.ref(v.site());
    else
      out["site"] = nullptr;  // differs from the apply's by having none
  }
  if (auto* c = dynamic_cast<const Constant*>(&v)) out["value"] = tensorRef(c->value(), section);
  if (auto* s = dynamic_cast<const SharedVariable*>(&v))
    out["value"] = tensorRef(s->value(), section);
  if (v.testValue()) out["test_value"] = tensorRef(*v.testValue(), section);
  return out;
}

json applyToJson(const Apply& node, SiteTable& sites) {
  json inputs = json::array(), outputs = json::array(), types = json::array();
  for (const auto& in : node.inputs()) inputs.push_back(in->id());
  for (int o = 0; o < node.nOutputs(); ++o) {
    outputs.push_back(node.outputRef(o).id());
    types.push_back(typeToJson(node.outputRef(o).type()));
  }
  json out = {{"id", node.id()},
              {"op", node.op().name()},
              {"inputs", inputs},
              {"outputs", outputs},
              {"types", types}};
  json props = node.op().props();
  if (!props.empty()) out["props"] = std::move(props);
  putMetadata(out, node.scope(), node.site(), sites);
  if (const auto& g = node.gradientOf()) {  // Note [Gradient origin]
    json origin = {{"id", g->nodeId}, {"op", g->op}, {"kind", g->kind}};
    putMetadata(origin, g->scope, g->site, sites);
    out["gradient_of"] = std::move(origin);
  }
  return out;
}

// Appends `[\n<indent>e0,\n<indent>e1\n<indent-2>]`: one element per line.
void appendLines(std::string& out, const std::vector<std::string>& lines, const char* indent) {
  if (lines.empty()) {
    out += "[]";
    return;
  }
  out += "[\n";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += indent;
    out += lines[i];
    out += i + 1 < lines.size() ? ",\n" : "\n";
  }
  out += std::string(indent).substr(2) + "]";
}

void appendLines(std::string& out, const std::vector<json>& items, const char* indent) {
  std::vector<std::string> lines;
  lines.reserve(items.size());
  for (const json& item : items) lines.push_back(item.dump());
  appendLines(out, lines, indent);
}

// Note [Implicit outputs] (tsg_reader.cpp): a computed variable with nothing of its own (no name,
// no test value, its apply's scope and site) is not listed in "variables".
bool isImplicit(const Variable& v) {
  const Apply* owner = v.owner();
  return owner && v.name().empty() && !v.testValue() && v.scope() == owner->scope() &&
         v.site() == owner->site();
}

// The parts of a graph as the file holds them. Applies are visited first, in topological order,
// so the site table follows the data flow; then the listed variables by id. Each item is handed
// over at once: holding a JSON tree per line for a 100k-node graph cost more than writing it.
struct GraphHeader {
  json inputs = json::array(), outputs = json::array(), updates = json::array();
  std::int64_t nextId = 0;
};

template <class OnApply, class OnVariable>
GraphHeader visitGraph(const FunctionGraph& fg, SiteTable& sites, TensorSectionWriter* section,
                       OnApply onApply, OnVariable onVariable) {
  GraphHeader h;
  for (const auto& in : fg.inputs()) h.inputs.push_back(in->id());
  for (const auto& o : fg.outputs()) h.outputs.push_back(o->id());
  for (const auto& [o, i] : fg.updateMapping()) h.updates.push_back({{"output", o}, {"input", i}});
  h.nextId = fg.nextId();
  std::vector<Variable*> vars;
  vars.reserve(fg.variables().size());
  for (Variable* v : fg.variables())
    if (!isImplicit(*v)) vars.push_back(v);
  std::sort(vars.begin(), vars.end(),
            [](const Variable* a, const Variable* b) { return a->id() < b->id(); });
  for (const Apply* a : fg.toposort()) onApply(applyToJson(*a, sites));
  for (const Variable* v : vars) onVariable(variableToJson(*v, sites, section));
  return h;
}

void appendGraph(std::string& out, const FunctionGraph& fg, SiteTable& sites,
                 TensorSectionWriter& section) {
  std::vector<std::string> varItems, applyItems;
  varItems.reserve(fg.variables().size());
  applyItems.reserve(fg.nodeCount());
  GraphHeader h = visitGraph(
      fg, sites, &section, [&](json&& a) { applyItems.push_back(a.dump()); },
      [&](json&& v) { varItems.push_back(v.dump()); });
  out += "{\n      \"inputs\": " + h.inputs.dump() + ",\n      \"outputs\": " + h.outputs.dump() +
         ",\n      \"updates\": " + h.updates.dump() +
         ",\n      \"next_id\": " + std::to_string(h.nextId) + ",\n      \"variables\": ";
  appendLines(out, varItems, "        ");
  out += ",\n      \"applies\": ";
  appendLines(out, applyItems, "        ");
  out += "\n    }";
}

json rewriteToJson(const RewriteRecord& r) {
  json replaced = json::array();
  for (const auto& [a, b] : r.replaced) replaced.push_back({a, b});
  json out = {{"order", r.order},     {"phase", r.phase},      {"reason", r.reason},
              {"replaced", replaced}, {"added", r.addedNodes}, {"removed", r.removedNodes},
              {"seconds", r.seconds}};
  if (!r.replacedOwners.empty()) {
    json owners = json::array();
    for (const auto& [a, b] : r.replacedOwners) owners.push_back({a, b});
    out["replaced_owners"] = std::move(owners);
  }
  return out;
}

}  // namespace

json graphToJson(const FunctionGraph& graph) {
  SiteTable sites;
  json applies = json::array(), variables = json::array();
  GraphHeader h = visitGraph(
      graph, sites, nullptr, [&](json&& a) { applies.push_back(std::move(a)); },
      [&](json&& v) { variables.push_back(std::move(v)); });
  json out = {{"inputs", std::move(h.inputs)},     {"outputs", std::move(h.outputs)},
              {"updates", std::move(h.updates)},   {"next_id", h.nextId},
              {"variables", std::move(variables)}, {"applies", std::move(applies)}};
  if (!sites.entries().empty()) out["sites"] = sites.entries();
  return out;
}

namespace {

// Note [Unsaveable props]: an op whose props hold "not_saveable" (an OpFromGraph with a C++
// callable gradient or R-op override) is built, compared and drawn like any other, but a file
// cannot hold it: saving names the node and the reason.
const json* notSaveable(const json& j) {
  if (j.is_object()) {
    if (auto it = j.find("not_saveable"); it != j.end()) return &*it;
    for (const auto& [key, value] : j.items())
      if (const json* why = notSaveable(value)) return why;
  } else if (j.is_array()) {
    for (const json& value : j)
      if (const json* why = notSaveable(value)) return why;
  }
  return nullptr;
}

void checkSaveable(const FunctionGraph& graph) {
  for (const Apply* node : graph.nodes()) {
    const json props = node->op().props();
    if (const json* why = notSaveable(props))
      throw std::invalid_argument(
          "writeTsg: node " + std::to_string(node->id()) + " " + node->op().str() +
          " cannot be saved: " + (why->is_string() ? why->get<std::string>() : why->dump()));
  }
}

}  // namespace

std::string writeTsg(const TsgDocument& doc) {
  if (!doc.original) throw std::invalid_argument("writeTsg: the document has no original graph");
  checkSaveable(*doc.original);
  if (doc.optimized) checkSaveable(*doc.optimized);
  json producer = doc.producer.is_object() && !doc.producer.empty()
                      ? doc.producer
                      : json{{"name", "tensorscope"}, {"version", "0.1.0"}};
  SiteTable sites;
  TensorSectionWriter section;
  std::string graphs = "{\n    \"original\": ";
  appendGraph(graphs, *doc.original, sites, section);
  if (doc.optimized) {
    graphs += ",\n    \"optimized\": ";
    appendGraph(graphs, *doc.optimized, sites, section);
  }
  std::string out = "{\n  \"format\": " + json(kTsgFormat).dump() +
                    ",\n  \"version\": " + std::to_string(kTsgVersion) +
                    ",\n  \"producer\": " + producer.dump() + ",\n  \"sites\": ";
  appendLines(out, sites.entries(), "    ");
  out += ",\n  \"graphs\": " + graphs;
  out += "\n  },\n  \"rewrites\": ";
  std::vector<json> rewrites;
  for (const auto& r : doc.rewrites) rewrites.push_back(rewriteToJson(r));
  appendLines(out, rewrites, "    ");
  out += ",\n  \"profiles\": " + (doc.profiles.is_array() ? doc.profiles : json::array()).dump() +
         "\n}\n";
  return assembleTsg(out, section.bytes());
}

void saveTsg(const TsgDocument& doc, const std::filesystem::path& path) {
  std::string text = writeTsg(doc);  // serialise first: a failure leaves the target untouched
  if (auto why = writeFileAtomically(path, std::as_bytes(std::span(text.data(), text.size()))))
    throw std::runtime_error(path.string() + ": cannot write: " + *why);
}

}  // namespace tscope::engine::io
