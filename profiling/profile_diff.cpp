#include "profiling/profile_diff.h"

#include "profiling/aggregate.h"
#include "profiling/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace tscope::prof {

namespace {

struct UnionFind {
  std::vector<std::size_t> parent;
  std::size_t add() {
    parent.push_back(parent.size());
    return parent.size() - 1;
  }
  std::size_t find(std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(std::size_t a, std::size_t b) {
    a = find(a), b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

std::string sideLabel(const Profile& p, const std::vector<std::int64_t>& nodes) {
  std::string text;
  const std::size_t shown = nodes.size() > 4 ? 3 : nodes.size();
  for (std::size_t i = 0; i < shown; ++i) {
    const NodeProfile& n = p.nodes[static_cast<std::size_t>(nodes[i])];
    text += (i ? " + " : "") + n.op + " #" + std::to_string(n.id);
  }
  if (shown < nodes.size()) text += " + " + std::to_string(nodes.size() - shown) + " more";
  return text;
}

std::string commonScope(const std::vector<std::string>& scopes) {
  if (scopes.empty()) return "";
  std::vector<std::string> common = scopeComponents(scopes.front());
  for (const std::string& s : scopes) {
    const std::vector<std::string> parts = scopeComponents(s);
    std::size_t k = 0;
    while (k < common.size() && k < parts.size() && common[k] == parts[k]) ++k;
    common.resize(k);
  }
  std::string path;
  for (const std::string& c : common) path += (path.empty() ? "" : "/") + c;
  return path;
}

struct ScopeSums {
  double incA = 0, incB = 0, excA = 0, excB = 0;
  std::map<std::string, ScopeSums> children;
};

void addScopes(ScopeSums& root, const Tables& t, bool sideA) {
  for (const ScopeRow& r : t.scopes) {
    ScopeSums* at = &root;
    for (const std::string& part : scopeComponents(r.path)) at = &at->children[part];
    (sideA ? at->incA : at->incB) = r.inclusive;
    (sideA ? at->excA : at->excB) = r.exclusive;
  }
}

void flattenScopes(const ScopeSums& s, const std::string& path, std::int32_t depth,
                   std::vector<ScopeDiffRow>& rows) {
  rows.push_back({path, depth, s.incA, s.incB, s.excA, s.excB});
  std::vector<const std::pair<const std::string, ScopeSums>*> order;
  for (const auto& c : s.children) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const auto* x, const auto* y) {
    return std::max(x->second.incA, x->second.incB) > std::max(y->second.incA, y->second.incB);
  });
  for (const auto* c : order)
    flattenScopes(c->second, path.empty() ? c->first : path + "/" + c->first, depth + 1, rows);
}

}  // namespace

ProfileDiff diffProfiles(const DiffSide& a, const DiffSide& b) {
  if (!a.profile || !b.profile)
    throw std::invalid_argument("a profile diff needs two profiles, found " +
                                std::string(!a.profile ? "none for A" : "none for B"));
  const Tables ta = aggregate(*a.profile), tb = aggregate(*b.profile);
  ProfileDiff diff;
  diff.labelA = a.label;
  diff.labelB = b.label;
  diff.callA = a.profile->function.call.mean;
  diff.callB = b.profile->function.call.mean;
  diff.nodesA = ta.timeInNodes;
  diff.nodesB = tb.timeInNodes;

  // Note [Diff through the rewrite log]: elements are the sides' top-level nodes and the original
  // ids they stand for; a row is a connected set.
  UnionFind uf;
  std::unordered_map<std::int64_t, std::size_t> originals;
  std::vector<std::pair<int, std::int64_t>> element;  // (side, node index) or (-1, original id)
  auto originalElement = [&](std::int64_t id) {
    auto [it, added] = originals.emplace(id, 0);
    if (added) {
      it->second = uf.add();
      element.emplace_back(-1, id);
    }
    return it->second;
  };
  for (int side = 0; side < 2; ++side) {
    const DiffSide& s = side == 0 ? a : b;
    for (std::size_t i = 0; i < s.profile->nodes.size(); ++i) {
      const NodeProfile& node = s.profile->nodes[i];
      if (!node.framePath.empty()) continue;
      const std::size_t e = uf.add();
      element.emplace_back(side, static_cast<std::int64_t>(i));
      const std::vector<std::int64_t> keys =
          s.lineage ? s.lineage->originalNodesFor(node.id) : std::vector<std::int64_t>{node.id};
      for (std::int64_t k : keys) uf.join(e, originalElement(k));
    }
  }
  std::map<std::size_t, DiffRow> rows;
  std::map<std::size_t, std::vector<std::string>> scopes;
  for (std::size_t e = 0; e < element.size(); ++e) {
    const auto [side, index] = element[e];
    if (side < 0) continue;
    DiffRow& row = rows[uf.find(e)];
    const Profile& p = side == 0 ? *a.profile : *b.profile;
    const Tables& t = side == 0 ? ta : tb;
    const NodeProfile& node = p.nodes[static_cast<std::size_t>(index)];
    (side == 0 ? row.nodesA : row.nodesB).push_back(index);
    (side == 0 ? row.secondsA : row.secondsB) += t.selfSeconds[static_cast<std::size_t>(index)];
    (side == 0 ? row.callsA : row.callsB) += node.calls;
    scopes[uf.find(e)].push_back(node.scope);
  }
  for (auto& [root, row] : rows) {
    row.scope = commonScope(scopes[root]);
    if (row.nodesB.empty())
      row.label = sideLabel(*a.profile, row.nodesA) + " -> (not in " + b.label + ")";
    else if (row.nodesA.empty())
      row.label = "(not in " + a.label + ") -> " + sideLabel(*b.profile, row.nodesB);
    else
      row.label = sideLabel(*a.profile, row.nodesA) + " -> " + sideLabel(*b.profile, row.nodesB);
    diff.rows.push_back(std::move(row));
  }
  std::stable_sort(diff.rows.begin(), diff.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::fabs(x.delta()) > std::fabs(y.delta());
  });

  ScopeSums root;
  addScopes(root, ta, true);
  addScopes(root, tb, false);
  flattenScopes(root, "", 0, diff.scopes);
  return diff;
}

std::string diffText(const ProfileDiff& d, std::size_t limit) {
  auto ratio = [](double x, double y) {
    if (y <= 0) return std::string("-");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", x / y);
    return std::string(buf);
  };
  std::string text = "Profile diff: A = " + d.labelA + ", B = " + d.labelB + "\n";
  text += "  time per call:  A " + formatSeconds(d.callA) + ", B " + formatSeconds(d.callB) +
          " (speedup A/B " + ratio(d.callA, d.callB) + ")\n";
  text += "  time in nodes:  A " + formatSeconds(d.nodesA) + ", B " + formatSeconds(d.nodesB) +
          " (speedup A/B " + ratio(d.nodesA, d.nodesB) + ")\n";
  text +=
      "\nNodes (self time per call; the nodes of A and B that stand for the same original "
      "nodes share a row)\n";
  std::size_t shown = 0;
  double rest = 0;
  for (const DiffRow& r : d.rows) {
    if (shown >= limit) {
      rest += r.delta();
      continue;
    }
    ++shown;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%+.3g ms", r.delta() * 1e3);
    text += "  " + formatSeconds(r.secondsA) + " -> " + formatSeconds(r.secondsB) + " (" + buf +
            ", " + ratio(r.secondsA, r.secondsB) + ")  " + r.label +
            (r.scope.empty() ? "" : "  [" + r.scope + "]") + "\n";
  }
  if (d.rows.size() > shown)
    text += "  ... (remaining " + std::to_string(d.rows.size() - shown) + " rows change " +
            formatSeconds(rest) + " in all)\n";
  text += "\nScopes (inclusive time per call)\n";
  for (const ScopeDiffRow& s : d.scopes)
    text += "  " + std::string(static_cast<std::size_t>(s.depth) * 2, ' ') +
            (s.path.empty() ? "(all)" : scopeComponents(s.path).back()) + ": " +
            formatSeconds(s.inclusiveA) + " -> " + formatSeconds(s.inclusiveB) + " (" +
            ratio(s.inclusiveA, s.inclusiveB) + ")\n";
  return text;
}

nlohmann::json diffJson(const ProfileDiff& d) {
  nlohmann::json rows = nlohmann::json::array(), scopes = nlohmann::json::array();
  for (const DiffRow& r : d.rows)
    rows.push_back({{"label", r.label},
                    {"nodes_a", r.nodesA},
                    {"nodes_b", r.nodesB},
                    {"seconds_a", r.secondsA},
                    {"seconds_b", r.secondsB},
                    {"calls_a", r.callsA},
                    {"calls_b", r.callsB},
                    {"scope", r.scope}});
  for (const ScopeDiffRow& s : d.scopes)
    scopes.push_back({{"path", s.path},
                      {"depth", s.depth},
                      {"inclusive_a", s.inclusiveA},
                      {"inclusive_b", s.inclusiveB},
                      {"exclusive_a", s.exclusiveA},
                      {"exclusive_b", s.exclusiveB}});
  return {{"schema", 1},         {"a", d.labelA},     {"b", d.labelB},
          {"call_a", d.callA},   {"call_b", d.callB}, {"nodes_a", d.nodesA},
          {"nodes_b", d.nodesB}, {"rows", rows},      {"scopes", scopes}};
}

}  // namespace tscope::prof
