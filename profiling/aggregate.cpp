#include "profiling/aggregate.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace tscope::prof {

SortKey parseSortKey(const std::string& text) {
  if (text == "total") return SortKey::Total;
  if (text == "mean") return SortKey::Mean;
  if (text == "p95") return SortKey::P95;
  if (text == "calls") return SortKey::Calls;
  throw std::invalid_argument("--sort expects total, mean, p95 or calls, found '" + text + "'");
}

std::vector<std::string> scopeComponents(const std::string& scope) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin < scope.size()) {
    std::size_t end = scope.find('/', begin);
    if (end == std::string::npos) end = scope.size();
    if (end > begin) parts.push_back(scope.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

namespace {

// Largest first by the sort key; ties by name (or node order) so the order is stable.
template <typename Row>
double keyOf(const Row& row, SortKey sort) {
  switch (sort) {
    case SortKey::Total:
      return row.selfSeconds;
    case SortKey::Mean:
      return row.perCall;
    case SortKey::P95:
      return row.p95;
    case SortKey::Calls:
      return static_cast<double>(row.calls);
  }
  return row.selfSeconds;
}

struct ScopeNode {
  double inclusive = 0, exclusive = 0;
  std::int64_t applies = 0;
  std::map<std::string, ScopeNode> children;
};

void flatten(const ScopeNode& node, const std::string& path, const std::string& name,
             std::int32_t depth, double timeInNodes, std::vector<ScopeRow>& rows) {
  rows.push_back({path, name, depth, node.inclusive, node.exclusive, node.applies,
                  timeInNodes > 0 ? node.inclusive / timeInNodes : 0});
  std::vector<const std::pair<const std::string, ScopeNode>*> order;
  for (const auto& child : node.children) order.push_back(&child);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->second.inclusive > b->second.inclusive;
  });
  for (const auto* child : order)
    flatten(child->second, path.empty() ? child->first : path + "/" + child->first, child->first,
            depth + 1, timeInNodes, rows);
}

}  // namespace

Tables aggregate(const Profile& profile, SortKey sort) {
  Tables t;
  const double runs = static_cast<double>(std::max<std::int64_t>(profile.function.measuredRuns, 1));
  const std::size_t n = profile.nodes.size();

  // Note [Self and total time]: a frame node's self time is its total minus its frame's nodes'.
  std::vector<double> total(n);
  for (std::size_t i = 0; i < n; ++i) total[i] = profile.nodes[i].time.total / runs;
  t.selfSeconds = total;
  std::map<std::vector<std::int64_t>, std::size_t> frameOwner;
  for (std::size_t i = 0; i < n; ++i) {
    const NodeProfile& node = profile.nodes[i];
    if (!node.hasInnerGraph) continue;
    std::vector<std::int64_t> path = node.framePath;
    path.push_back(node.id);
    frameOwner.emplace(std::move(path), i);
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto it = frameOwner.find(profile.nodes[i].framePath);
    if (it != frameOwner.end()) t.selfSeconds[it->second] -= total[i];
  }
  for (double& s : t.selfSeconds) s = std::max(0.0, s);
  for (double s : t.selfSeconds) t.timeInNodes += s;
  auto share = [&](double s) { return t.timeInNodes > 0 ? s / t.timeInNodes : 0; };

  for (std::size_t i = 0; i < n; ++i) {
    const NodeProfile& node = profile.nodes[i];
    if (node.calls == 0) continue;  // never ran in a measured call (an untaken branch)
    ApplyRow row;
    row.node = static_cast<std::int64_t>(i);
    row.selfSeconds = t.selfSeconds[i];
    row.totalSeconds = total[i];
    row.perCall = node.time.total / static_cast<double>(node.calls);
    row.p95 = node.time.p95;
    row.calls = node.calls;
    row.share = share(row.selfSeconds);
    t.applies.push_back(row);
  }
  std::stable_sort(t.applies.begin(), t.applies.end(), [&](const ApplyRow& a, const ApplyRow& b) {
    return keyOf(a, sort) > keyOf(b, sort);
  });

  auto group = [&](auto keyFn) {
    std::vector<GroupRow> rows;
    std::unordered_map<std::string, std::size_t> index;
    std::vector<double> summed;  // the groups' time summed over runs, for per call
    for (std::size_t i = 0; i < n; ++i) {
      const NodeProfile& node = profile.nodes[i];
      if (node.calls == 0) continue;
      const std::string& key = keyFn(node);
      auto [it, added] = index.emplace(key, rows.size());
      if (added) {
        rows.push_back({key});
        summed.push_back(0);
      }
      GroupRow& row = rows[it->second];
      row.selfSeconds += t.selfSeconds[i];
      summed[it->second] += t.selfSeconds[i] * runs;
      row.p95 = std::max(row.p95, node.time.p95);
      row.calls += node.calls;
      row.applies += 1;
    }
    for (std::size_t k = 0; k < rows.size(); ++k) {
      rows[k].perCall = rows[k].calls > 0 ? summed[k] / static_cast<double>(rows[k].calls) : 0;
      rows[k].share = share(rows[k].selfSeconds);
    }
    std::stable_sort(rows.begin(), rows.end(), [&](const GroupRow& a, const GroupRow& b) {
      return keyOf(a, sort) > keyOf(b, sort);
    });
    return rows;
  };
  t.ops = group([](const NodeProfile& node) -> const std::string& { return node.op; });
  t.classes = group([](const NodeProfile& node) -> const std::string& { return node.opClass; });

  ScopeNode root;
  for (std::size_t i = 0; i < n; ++i) {
    const NodeProfile& node = profile.nodes[i];
    if (node.calls == 0) continue;
    const double s = t.selfSeconds[i];
    ScopeNode* at = &root;
    at->inclusive += s;
    at->applies += 1;
    for (const std::string& part : scopeComponents(node.scope)) {
      at = &at->children[part];
      at->inclusive += s;
      at->applies += 1;
    }
    at->exclusive += s;
  }
  flatten(root, "", "(all)", 0, t.timeInNodes, t.scopes);
  return t;
}

}  // namespace tscope::prof
