#include "engine/debug/breakpoints.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tscope::engine::debug {

namespace {

[[noreturn]] void refuse(std::string_view text, const std::string& what) {
  throw std::invalid_argument("breakpoint '" + std::string(text) + "': " + what);
}

// The shortest text that reads back as the same double ("10", "0.5", "1e+30").
std::string number(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

double parseNumber(std::string_view text, std::string_view part, std::string_view what) {
  const std::string s(part);
  char* end = nullptr;
  const double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || std::isnan(v))
    refuse(text, "expected a number after '" + std::string(what) + "', found '" + s + "'");
  return v;
}

struct ConditionSyntax {
  std::string_view prefix;  // what follows '@'
  BreakCondition::Kind kind;
  bool takesNumber;
};
constexpr ConditionSyntax kConditions[] = {
    {"nan", BreakCondition::Kind::AnyNan, false},
    {"inf", BreakCondition::Kind::AnyInf, false},
    {"max>", BreakCondition::Kind::MaxGt, true},
    {"min<", BreakCondition::Kind::MinLt, true},
    {"norm>", BreakCondition::Kind::NormGt, true},
    {"changed>", BreakCondition::Kind::ChangedBy, true},
};
constexpr std::string_view kTargetNames[] = {"node", "var", "op", "scope"};
static_assert(std::size(kTargetNames) ==
              static_cast<std::size_t>(BreakpointSpec::Target::Scope) + 1);

}  // namespace

std::string_view targetName(BreakpointSpec::Target target) {
  return kTargetNames[static_cast<std::size_t>(target)];
}

BreakpointSpec parseBreakSpec(std::string_view text) {
  BreakpointSpec spec;
  // Note [Loop breakpoints]: a trailing "[iteration==K]".
  constexpr std::string_view kIteration = "[iteration==";
  if (const std::size_t at = text.rfind(kIteration);
      at != std::string_view::npos && !text.empty() && text.back() == ']') {
    const std::string_view k =
        text.substr(at + kIteration.size(), text.size() - 1 - at - kIteration.size());
    std::int64_t n = -1;
    const auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), n);
    if (k.empty() || ec != std::errc() || ptr != k.data() + k.size() || n < 0)
      refuse(text, "expected an iteration filter [iteration==K] with K >= 0 at the end, found '" +
                       std::string(text.substr(at)) + "'");
    spec.iteration = n;
    text = text.substr(0, at);
  }
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos)
    refuse(text, "expected TARGET:KEY with a target node:, var:, op: or scope:, found no ':'");
  const std::string_view target = text.substr(0, colon);
  bool known = false;
  for (std::size_t t = 0; t < std::size(kTargetNames); ++t) {
    if (target == kTargetNames[t]) {
      spec.target = static_cast<BreakpointSpec::Target>(t);
      known = true;
    }
  }
  if (!known)
    refuse(text,
           "expected a target node:, var:, op: or scope:, found '" + std::string(target) + "'");
  std::string_view rest = text.substr(colon + 1);
  // The key runs to the first '@' or '#' (op strings hold braces and commas, never those).
  std::size_t keyEnd = rest.find_first_of("@#");
  const std::string_view key = rest.substr(0, keyEnd);
  if (key.empty()) refuse(text, "expected a " + std::string(target) + " after ':', found nothing");
  spec.key = std::string(key);
  if (spec.target == BreakpointSpec::Target::Node) {
    // A node id, or a path of them into inner graphs ("5/12", Note [Inner lineage]).
    std::string_view ids = key;
    while (true) {
      const std::size_t slash = ids.find('/');
      const std::string_view part = ids.substr(0, slash);
      std::int64_t id = 0;
      const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), id);
      if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || id < 0)
        refuse(text,
               "expected a node id (a number >= 0) or a path of them (5/12: node 12 in the inner "
               "graph of node 5) after 'node:', found '" +
                   spec.key + "'");
      if (slash == std::string_view::npos) break;
      ids = ids.substr(slash + 1);
    }
  }
  rest = keyEnd == std::string_view::npos ? std::string_view() : rest.substr(keyEnd);
  if (!rest.empty() && rest.front() == '@') {
    const std::size_t end = rest.find('#');
    const std::string_view cond = rest.substr(1, end == std::string_view::npos ? end : end - 1);
    bool matched = false;
    for (const ConditionSyntax& c : kConditions) {
      if (cond.substr(0, c.prefix.size()) != c.prefix) continue;
      const std::string_view tail = cond.substr(c.prefix.size());
      if (!c.takesNumber && !tail.empty()) continue;
      spec.condition.kind = c.kind;
      if (c.takesNumber) spec.condition.k = parseNumber(text, tail, "@" + std::string(c.prefix));
      matched = true;
      break;
    }
    if (!matched)
      refuse(text,
             "expected a condition @nan, @inf, @max>K, @min<K, @norm>K or @changed>K, found '@" +
                 std::string(cond) + "'");
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  if (!rest.empty()) {
    // rest starts with '#': the hit count, and nothing after it.
    const std::string_view count = rest.substr(1);
    int n = 0;
    const auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (count.empty() || ec != std::errc() || ptr != count.data() + count.size() || n < 1)
      refuse(text,
             "expected a hit count #N with N >= 1 at the end, found '" + std::string(rest) + "'");
    spec.hitCount = n;
  }
  return spec;
}

std::string toString(const BreakCondition& c) {
  switch (c.kind) {
    case BreakCondition::Kind::Always:
      return {};
    case BreakCondition::Kind::AnyNan:
      return "@nan";
    case BreakCondition::Kind::AnyInf:
      return "@inf";
    case BreakCondition::Kind::MaxGt:
      return "@max>" + number(c.k);
    case BreakCondition::Kind::MinLt:
      return "@min<" + number(c.k);
    case BreakCondition::Kind::NormGt:
      return "@norm>" + number(c.k);
    case BreakCondition::Kind::ChangedBy:
      break;
  }
  return "@changed>" + number(c.k);
}

std::string toString(const BreakpointSpec& spec) {
  std::string s = std::string(targetName(spec.target)) + ":" + spec.key + toString(spec.condition);
  if (spec.hitCount != 1) s += "#" + std::to_string(spec.hitCount);
  if (spec.iteration >= 0) s += "[iteration==" + std::to_string(spec.iteration) + "]";
  return s;
}

bool conditionApplies(const BreakCondition& c, DType dtype) {
  switch (c.kind) {
    case BreakCondition::Kind::Always:
      return true;
    case BreakCondition::Kind::AnyNan:
    case BreakCondition::Kind::AnyInf:
      return isFloat(dtype);
    default:
      return dtype != DType::Bool;
  }
}

bool conditionHolds(const BreakCondition& c, const Tensor& value, const Tensor* previous) {
  if (c.kind == BreakCondition::Kind::Always) return true;
  if (!value.defined() || !conditionApplies(c, value.dtype())) return false;
  if (c.kind == BreakCondition::Kind::ChangedBy) {
    if (previous == nullptr || !previous->defined() || previous->shape() != value.shape())
      return previous != nullptr && previous->defined();  // a new shape is a change
    return maxAbsDifference(value, *previous) > c.k;
  }
  const TensorStats s = statsOf(value);
  switch (c.kind) {
    case BreakCondition::Kind::AnyNan:
      return s.nan > 0;
    case BreakCondition::Kind::AnyInf:
      return s.posInf + s.negInf > 0;
    case BreakCondition::Kind::MaxGt:
      // An infinity is above every bound (the stats skip it, Note [Stats over finite elements]).
      return s.posInf > 0 || (s.finite() > 0 && s.max > c.k);
    case BreakCondition::Kind::MinLt:
      return s.negInf > 0 || (s.finite() > 0 && s.min < c.k);
    case BreakCondition::Kind::NormGt:
      return s.posInf + s.negInf > 0 || (s.finite() > 0 && s.norm > c.k);
    default:
      return false;
  }
}

bool scopeMatches(std::string_view scope, std::string_view prefix) {
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.empty()) return true;
  if (scope.substr(0, prefix.size()) != prefix) return false;
  return scope.size() == prefix.size() || scope[prefix.size()] == '/';
}

}  // namespace tscope::engine::debug
