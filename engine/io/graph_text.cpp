#include "engine/io/graph_text.h"

#include "engine/graph/op.h"

#include <map>
#include <sstream>
#include <unordered_set>

namespace tscope::engine::io {

using nlohmann::json;

std::string typeText(const TensorType& type) {
  std::string out = std::string(dtypeName(type.dtype())) + " (";
  for (int i = 0; i < type.ndim(); ++i) {
    if (i) out += ", ";
    out += type.isDimKnown(i) ? std::to_string(type.shape()[static_cast<std::size_t>(i)]) : "?";
  }
  if (type.ndim() == 1) out += ",";
  out += ")";
  if (type.device() != Device::Cpu) out += " on " + std::string(deviceName(type.device()));
  return out;
}

namespace {

std::string roleOf(const Variable& v, const std::unordered_set<const Variable*>& inputs) {
  switch (v.kind()) {
    case Variable::Kind::Constant:
      return "constant";
    case Variable::Kind::Shared:
      return "shared";
    case Variable::Kind::Regular:
      break;
  }
  return inputs.count(&v) ? "input" : "free";
}

std::string constantText(const Constant& c) {
  const Tensor& t = c.value();
  if (t.numel() == 1) {
    std::string s = t.reshape({}).toString();
    return s;
  }
  return "<" + shapeToString(t.shape()) + " values>";
}

class Printer {
 public:
  Printer(const FunctionGraph& fg, const DebugPrintOptions& o) : m_fg(fg), m_options(o) {
    for (const auto& in : fg.inputs()) m_inputs.insert(in.get());
  }

  void print(const Variable& root) {
    // Iterative depth-first walk: (variable, prefix for its line, prefix for its children).
    struct Frame {
      const Variable* var;
      std::string prefix;
    };
    std::vector<Frame> stack{{&root, ""}};
    while (!stack.empty()) {
      Frame f = std::move(stack.back());
      stack.pop_back();
      const Variable& v = *f.var;
      m_out << f.prefix << line(v);
      const Apply* node = v.owner();
      if (node && !m_done.insert(node).second) {
        m_out << " (see above)\n";
        continue;
      }
      m_out << "\n";
      if (!node) continue;
      // Children print one level deeper: " |" under the root, " | |" below that, ...
      std::string next = f.prefix + " |";
      for (int i = node->nInputs() - 1; i >= 0; --i) stack.push_back({node->input(i).get(), next});
    }
  }

  std::string line(const Variable& v) const {
    std::ostringstream s;
    if (const Apply* node = v.owner()) {
      s << node->op().str();
      if (node->nOutputs() > 1) s << "." << v.index();
      s << " [id " << node->id() << "]";
      if (!v.name().empty()) s << " '" << v.name() << "'";
    } else if (auto* c = dynamic_cast<const Constant*>(&v)) {
      s << (v.name().empty() ? constantText(*c) : v.name()) << " [id " << v.id() << "]";
    } else {
      s << v.displayName() << " [id " << v.id() << "]";
    }
    if (m_options.showTypes) s << " : " << typeText(v.type());
    if (!v.owner()) s << " (" << roleOf(v, m_inputs) << ")";
    return s.str();
  }

  std::string text() const { return m_out.str(); }
  std::ostringstream& out() { return m_out; }

 private:
  const FunctionGraph& m_fg;
  const DebugPrintOptions& m_options;
  std::unordered_set<const Variable*> m_inputs;
  std::unordered_set<const Apply*> m_done;
  std::ostringstream m_out;
};

}  // namespace

std::string debugPrint(const FunctionGraph& fg, const DebugPrintOptions& options) {
  Printer p(fg, options);
  std::map<std::size_t, std::size_t> updates = fg.updateMapping();
  for (std::size_t i = 0; i < fg.outputs().size(); ++i) {
    if (updates.count(i)) continue;
    p.print(*fg.outputs()[i]);
  }
  if (options.showUpdates)
    for (const auto& [o, in] : updates) {
      p.out() << "Update of " << fg.inputs()[in]->displayName() << " [id " << fg.inputs()[in]->id()
              << "]:\n";
      p.print(*fg.outputs()[o]);
    }
  return p.text();
}

json graphSummary(const FunctionGraph& fg) {
  auto varJson = [](const Variable& v) {
    return json{{"name", v.displayName()}, {"id", v.id()}, {"type", typeText(v.type())}};
  };
  json inputs = json::array(), outputs = json::array(), opaque = json::array();
  for (const auto& in : fg.inputs()) {
    json j = varJson(*in);
    j["role"] = in->kind() == Variable::Kind::Shared     ? "shared"
                : in->kind() == Variable::Kind::Constant ? "constant"
                                                         : "input";
    inputs.push_back(j);
  }
  for (const auto& out : fg.outputs()) outputs.push_back(varJson(*out));
  std::map<std::string, int> ops;
  std::unordered_set<std::string> opaqueNames;
  for (const Apply* node : fg.nodes()) {
    ++ops[node->op().str()];
    if (!node->op().isExecutable() && opaqueNames.insert(node->op().name()).second)
      opaque.push_back(node->op().name());
  }
  int constants = 0, shared = 0;
  for (const Variable* v : fg.variables()) {
    if (v->kind() == Variable::Kind::Constant) ++constants;
    if (v->kind() == Variable::Kind::Shared) ++shared;
  }
  return {{"applies", fg.nodeCount()},
          {"variables", fg.variables().size()},
          {"inputs", inputs},
          {"outputs", outputs},
          {"constants", constants},
          {"shared", shared},
          {"updates", fg.updateMapping().size()},
          {"ops", ops},
          {"opaque_ops", opaque}};
}

std::string graphSummaryText(const json& s) {
  std::ostringstream out;
  out << "  " << s["applies"].get<std::size_t>() << " applies, "
      << s["variables"].get<std::size_t>() << " variables (" << s["inputs"].size() << " inputs, "
      << s["outputs"].size() << " outputs, " << s["constants"].get<int>() << " constants, "
      << s["shared"].get<int>() << " shared, " << s["updates"].get<std::size_t>() << " updates)\n";
  auto list = [&](const char* title, const json& vars) {
    out << "  " << title << ":\n";
    for (const auto& v : vars) {
      out << "    " << v["name"].get<std::string>() << " [id " << v["id"].get<std::int64_t>()
          << "] : " << v["type"].get<std::string>();
      if (v.contains("role") && v["role"] != "input")
        out << " (" << v["role"].get<std::string>() << ")";
      out << "\n";
    }
  };
  list("inputs", s["inputs"]);
  list("outputs", s["outputs"]);
  // The histogram, most frequent first.
  std::vector<std::pair<int, std::string>> ops;
  for (const auto& [name, count] : s["ops"].items()) ops.emplace_back(count.get<int>(), name);
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  out << "  ops:\n";
  for (const auto& [count, name] : ops) out << "    " << count << "  " << name << "\n";
  if (!s["opaque_ops"].empty()) {
    out << "  opaque ops (drawn and inspected, not executed):";
    for (const auto& name : s["opaque_ops"]) out << " " << name.get<std::string>();
    out << "\n";
  }
  return out.str();
}

}  // namespace tscope::engine::io
