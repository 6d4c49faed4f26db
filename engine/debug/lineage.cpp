#include "engine/debug/lineage.h"

#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace tscope::engine::debug {

namespace {

void addSorted(std::vector<std::int64_t>& into, std::int64_t id) {
  auto it = std::lower_bound(into.begin(), into.end(), id);
  if (it == into.end() || *it != id) into.insert(it, id);
}

}  // namespace

NodeLineage::NodeLineage(const FunctionGraph& optimized, std::span<const RewriteRecord> log)
    : m_graph(&optimized) {
  // origins: a node alive at this point of the log -> the original nodes it stands for. A node
  // without an entry stands for itself (an original node no record touched yet).
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> origins;
  auto originsOf = [&](std::int64_t node) {
    auto it = origins.find(node);
    return it != origins.end() ? it->second : std::vector<std::int64_t>{node};
  };
  for (const RewriteRecord& rec : log) {
    const std::unordered_set<std::int64_t> removed(rec.removedNodes.begin(),
                                                   rec.removedNodes.end());
    const std::unordered_set<std::int64_t> added(rec.addedNodes.begin(), rec.addedNodes.end());
    // Rule 1 (Note [Node lineage]): the owners of the replacing variables. Without owner records
    // (an old log), the new variable's owner in the optimized graph when it is still there.
    std::unordered_map<std::int64_t, std::vector<std::int64_t>> direct;
    for (std::size_t k = 0; k < rec.replaced.size(); ++k) {
      std::int64_t oldOwner = -1, newOwner = -1;
      if (k < rec.replacedOwners.size()) {
        std::tie(oldOwner, newOwner) = rec.replacedOwners[k];
      } else if (const Variable* v = optimized.variableById(rec.replaced[k].second);
                 v && v->owner()) {
        newOwner = v->owner()->id();
      }
      if (oldOwner >= 0 && newOwner >= 0 && oldOwner != newOwner && removed.count(oldOwner))
        addSorted(direct[oldOwner], newOwner);
    }
    // Successors of each removed node; a successor removed in the same record is followed on.
    auto successors = [&](std::int64_t r) {
      std::vector<std::int64_t> out, work{r};
      std::unordered_set<std::int64_t> seen{r};
      while (!work.empty()) {
        const std::int64_t n = work.back();
        work.pop_back();
        std::vector<std::int64_t> next;
        if (auto it = direct.find(n); it != direct.end()) {
          next = it->second;
        } else if (n == r) {
          for (std::int64_t a : rec.addedNodes)
            if (!removed.count(a) || a != r) next.push_back(a);
        }
        for (std::int64_t t : next) {
          if (!seen.insert(t).second) continue;
          if (removed.count(t) && !added.count(t))
            work.push_back(t);
          else if (!removed.count(t))
            addSorted(out, t);
        }
      }
      return out;
    };
    for (std::int64_t a : rec.addedNodes)
      if (!origins.count(a)) origins[a] = {};
    std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> moves;
    for (std::int64_t r : rec.removedNodes) moves.emplace_back(r, successors(r));
    for (const auto& [r, targets] : moves) {
      const std::vector<std::int64_t> from = originsOf(r);
      for (std::int64_t o : from) {
        auto& reasons = m_reasons[o];
        if (reasons.empty() || reasons.back() != rec.reason) reasons.push_back(rec.reason);
      }
      for (std::int64_t t : targets) {
        auto [it, fresh] = origins.try_emplace(t, std::vector<std::int64_t>{});
        if (fresh && !added.count(t)) it->second.push_back(t);  // an untouched node: itself
        for (std::int64_t o : from) addSorted(it->second, o);
      }
    }
    for (std::int64_t r : rec.removedNodes) {
      auto [it, fresh] = origins.try_emplace(r);
      it->second.clear();  // gone: stands for nothing any more
      if (fresh) m_reasons.try_emplace(r);
    }
  }
  for (auto& [node, from] : origins) {
    if (!optimized.nodeById(node)) continue;
    for (std::int64_t o : from) addSorted(m_became[o], node);
    m_origins[node] = from;
  }
  // Original nodes a record touched that became nothing.
  for (const auto& [o, reasons] : m_reasons) m_became.try_emplace(o);
  // An original node that survived a record that merged another into it keeps itself.
}

std::vector<std::int64_t> NodeLineage::optimizedNodesFor(std::int64_t originalNodeId) const {
  if (auto it = m_became.find(originalNodeId); it != m_became.end()) return it->second;
  if (m_graph->nodeById(originalNodeId) && !m_origins.count(originalNodeId))
    return {originalNodeId};
  return {};
}

std::vector<std::int64_t> NodeLineage::originalNodesFor(std::int64_t optimizedNodeId) const {
  if (auto it = m_origins.find(optimizedNodeId); it != m_origins.end()) return it->second;
  if (m_graph->nodeById(optimizedNodeId)) return {optimizedNodeId};
  return {};
}

std::vector<std::string> NodeLineage::reasonsFor(std::int64_t originalNodeId) const {
  if (auto it = m_reasons.find(originalNodeId); it != m_reasons.end()) return it->second;
  return {};
}

bool NodeLineage::rewritten(std::int64_t originalNodeId) const {
  return m_reasons.count(originalNodeId) > 0;
}

bool NodeLineage::removed(std::int64_t originalNodeId) const {
  return rewritten(originalNodeId) && optimizedNodesFor(originalNodeId).empty();
}

bool NodeLineage::known(std::int64_t id) const {
  return m_reasons.count(id) > 0 || m_graph->nodeById(id) != nullptr;
}

std::string NodeLineage::describe(std::int64_t originalNodeId) const {
  if (!rewritten(originalNodeId)) return {};
  std::string reasons;
  for (const std::string& r : reasonsFor(originalNodeId)) {
    if (!reasons.empty()) reasons += ", ";
    reasons += r;
  }
  const std::vector<std::int64_t> to = optimizedNodesFor(originalNodeId);
  if (to.empty()) return "removed (" + reasons + ")";
  std::string out;
  for (std::int64_t id : to) {
    if (!out.empty()) out += " and ";
    const Apply* node = m_graph->nodeById(id);
    if (id == originalNodeId) {
      out += "kept as node " + std::to_string(id);
      continue;
    }
    const std::vector<std::int64_t> from = originalNodesFor(id);
    const bool merged = std::binary_search(from.begin(), from.end(), id);
    out += std::string(merged            ? "merged into "
                       : from.size() > 1 ? "fused into "
                                         : "rewritten into ") +
           (node ? node->op().str() + " " : std::string()) + "node " + std::to_string(id);
  }
  return out + " (" + reasons + ")";
}

}  // namespace tscope::engine::debug
