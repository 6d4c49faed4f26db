#include "engine/debug/nan_report.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tscope::engine::debug {

using nlohmann::json;

std::string_view checkName(NanCheck check) {
  switch (check) {
    case NanCheck::NaN:
      return "nan";
    case NanCheck::PosInf:
      return "+inf";
    case NanCheck::NegInf:
      return "-inf";
    case NanCheck::Big:
      return "big";
  }
  return "?";
}

std::string checksText(NanChecks checks) {
  std::string out;
  for (NanCheck c : {NanCheck::NaN, NanCheck::PosInf, NanCheck::NegInf, NanCheck::Big})
    if (checks & bit(c)) {
      if (!out.empty()) out += ",";
      out += checkName(c);
    }
  return out.empty() ? "none" : out;
}

NanChecks parseChecks(std::string_view text) {
  NanChecks out = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    if (item == "nan")
      out |= bit(NanCheck::NaN);
    else if (item == "inf")
      out |= bit(NanCheck::PosInf) | bit(NanCheck::NegInf);
    else if (item == "+inf")
      out |= bit(NanCheck::PosInf);
    else if (item == "-inf")
      out |= bit(NanCheck::NegInf);
    else if (item == "big")
      out |= bit(NanCheck::Big);
    else if (item == "all")
      out |= kAllNanChecks;
    else
      throw std::invalid_argument("unknown NanGuard check '" + std::string(item) + "' in '" +
                                  std::string(text) +
                                  "'; expected a comma-separated list of nan, inf, +inf, -inf, "
                                  "big, all");
    start = end + 1;
  }
  return out;
}

NanChecks BadCounts::kinds() const {
  NanChecks k = 0;
  if (nan) k |= bit(NanCheck::NaN);
  if (posInf) k |= bit(NanCheck::PosInf);
  if (negInf) k |= bit(NanCheck::NegInf);
  if (big) k |= bit(NanCheck::Big);
  return k;
}

std::string indexText(const std::vector<std::int64_t>& index) {
  std::string out = "[";
  for (std::size_t i = 0; i < index.size(); ++i) out += (i ? ", " : "") + std::to_string(index[i]);
  return out + "]";
}

std::string valueText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

namespace {
json countsJson(const BadCounts& c) {
  return {
      {"numel", c.numel}, {"nan", c.nan}, {"+inf", c.posInf}, {"-inf", c.negInf}, {"big", c.big}};
}
json valueJson(double v) {
  // JSON has no NaN or infinity: those are strings.
  if (std::isfinite(v)) return v;
  return valueText(v);
}
std::string countsText(const BadCounts& c) {
  std::string out;
  auto add = [&](std::int64_t n, const char* what) {
    if (!n) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + what;
  };
  add(c.nan, "nan");
  add(c.posInf, "+inf");
  add(c.negInf, "-inf");
  add(c.big, "big");
  return out + " of " + std::to_string(c.numel);
}
}  // namespace

std::string NodeRef::describe() const {
  std::string out = op.empty() ? std::string("?") : op;
  if (id >= 0 && fusedInto.empty()) out += " (node " + std::to_string(id) + ")";
  if (!scope.empty()) out += " at " + scope;
  if (!site.empty()) out += " (created at " + site + ")";
  if (!fusedInto.empty()) out += " [fused into " + fusedInto + "]";
  if (!rewrittenFrom.empty()) out += " [rewritten from " + rewrittenFrom + "]";
  if (!gradientOf.empty()) out += ": " + gradientOf;
  if (!frames.empty()) {
    out += " in frame";
    for (std::size_t k = 0; k < frames.size(); ++k) {
      out += " " + std::to_string(frames[k]);
      // Note [Loop frames]: the iteration of a loop's frame.
      if (k < iterations.size() && iterations[k] >= 0)
        out += " (iteration " + std::to_string(iterations[k]) + ")";
    }
  }
  return out;
}

json NodeRef::toJson() const {
  json out = {{"id", id}, {"op", op}, {"scope", scope}, {"site", site}, {"frames", frames}};
  if (!fusedInto.empty()) {
    out["fused_into"] = fusedInto;
    out["original_id"] = originalId;
  }
  if (!gradientOf.empty()) out["gradient_of"] = gradientOf;
  if (!rewrittenFrom.empty()) out["rewritten_from"] = rewrittenFrom;
  bool loop = false;
  for (std::int64_t k : iterations) loop = loop || k >= 0;
  if (loop) out["iterations"] = iterations;
  return out;
}

json InputSample::toJson() const {
  json out = {{"input", input}, {"variable", variable}, {"bad", bad}};
  if (value) {
    out["index"] = index;
    out["value"] = valueJson(*value);
  }
  if (!summary.empty()) out["summary"] = summary;
  return out;
}

std::string_view roleName(ChainLink::Role role) {
  switch (role) {
    case ChainLink::Role::Creator:
      return "creator";
    case ChainLink::Role::Converter:
      return "converter";
    case ChainLink::Role::Propagator:
      return "propagator";
  }
  return "?";
}

json ChainLink::toJson() const {
  json ins = json::array();
  for (const InputSample& s : inputs) ins.push_back(s.toJson());
  return {{"role", roleName(role)},
          {"node", node.toJson()},
          {"output", output},
          {"variable", variable},
          {"kind", checkName(firstKind)},
          {"first_index", firstIndex},
          {"first_value", valueJson(firstValue)},
          {"counts", countsJson(counts)},
          {"inputs", ins}};
}

const ChainLink* NanReport::creator() const {
  if (chain.empty() || chain.back().role != ChainLink::Role::Creator) return nullptr;
  return &chain.back();
}

std::string NanReport::summary() const {
  std::string out = std::string(checkName(check)) + " in ";
  if (where == "input" || where == "shared")
    out += where + " '" + variable + "'";
  else
    out += node.describe() + (where == "update" ? ", the update of '" + updateOf + "'" : "") +
           ", output " + std::to_string(output);
  out += " " + indexText(firstIndex) + " = " + valueText(firstValue);
  if (const ChainLink* c = creator(); c && chain.size() > 1)
    out += "; created by " + c->node.describe();
  return out;
}

std::string NanReport::toText() const {
  std::string out = "NanGuard: " + summary() + "\n";
  out += "  counts: " + countsText(counts) + " elements of shape " + indexText(shape) + "\n";
  if (!chain.empty()) out += "  root-cause chain (from the reported value back to its creator):\n";
  for (std::size_t k = 0; k < chain.size(); ++k) {
    const ChainLink& l = chain[k];
    const std::string indent(4 + 2 * k, ' ');
    std::string mark = l.role == ChainLink::Role::Creator     ? "* CREATED "
                       : l.role == ChainLink::Role::Converter ? "* CONVERTED to "
                                                              : "  propagated ";
    out += indent + mark + std::string(checkName(l.firstKind)) + " in " + l.node.describe() +
           ", output " + std::to_string(l.output) + " " + indexText(l.firstIndex) + " = " +
           valueText(l.firstValue) + " (" + countsText(l.counts) + ")\n";
    for (const InputSample& s : l.inputs) {
      out += indent + "    input " + std::to_string(s.input) +
             (s.variable.empty() ? "" : " '" + s.variable + "'");
      if (s.value) out += indexText(s.index) + " = " + valueText(*s.value);
      if (!s.summary.empty()) out += ": " + s.summary;
      if (s.bad) out += " (held bad values)";
      out += "\n";
    }
  }
  return out;
}

json NanReport::toJson() const {
  json links = json::array();
  for (const ChainLink& l : chain) links.push_back(l.toJson());
  json out = {{"check", checkName(check)},
              {"where", where},
              {"node", node.toJson()},
              {"output", output},
              {"variable", variable},
              {"shape", shape},
              {"first_index", firstIndex},
              {"first_value", valueJson(firstValue)},
              {"counts", countsJson(counts)},
              {"big_threshold", bigThreshold},
              {"call", call},
              {"chain", links},
              {"summary", summary()}};
  if (!updateOf.empty()) out["update_of"] = updateOf;
  if (const ChainLink* c = creator()) out["creator"] = c->node.toJson();
  return out;
}

}  // namespace tscope::engine::debug
