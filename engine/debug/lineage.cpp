#include "engine/debug/lineage.h"

#include "engine/compile/inner_log.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"

#include <algorithm>
#include <set>
#include <stdexcept>
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

// --- Inner graphs (Note [Inner lineage]) ---------------------------------------------------------

NodeLineage::NodeLineage(const Program& program, std::span<const RewriteRecord> log)
    : NodeLineage(program.graph(), log) {
  m_program = &program;
  linkBodies(program);
}

void NodeLineage::linkBodies(const Program& program) {
  std::unordered_map<const Program*, std::shared_ptr<const NodeLineage>> built;
  for (const LinkedNode& t : program.nodes()) {
    if (t.child < 0) continue;
    std::vector<std::shared_ptr<const NodeLineage>>& bodies = m_bodies[t.node->id()];
    if (!bodies.empty()) continue;
    for (std::uint32_t b = 0; b < t.nChildren; ++b) {
      const Program& child = *program.children()[static_cast<std::size_t>(t.child) + b];
      auto& lineage = built[&child];
      if (!lineage) {
        const InnerRewriteLog* kept = child.graph().feature<InnerRewriteLog>();
        auto made = std::make_shared<NodeLineage>(
            child, kept ? std::span<const RewriteRecord>(kept->records)
                        : std::span<const RewriteRecord>());
        if (kept) made->m_original = kept->original;
        lineage = std::move(made);
      }
      bodies.push_back(lineage);
    }
  }
}

std::vector<const NodeLineage*> NodeLineage::bodiesOf(std::int64_t optimizedNodeId) const {
  std::vector<const NodeLineage*> out;
  if (auto it = m_bodies.find(optimizedNodeId); it != m_bodies.end())
    for (const auto& b : it->second) out.push_back(b.get());
  return out;
}

const NodeLineage* NodeLineage::forGraph(const FunctionGraph* g) const {
  if (g == m_graph) return this;
  for (const auto& [node, bodies] : m_bodies)
    for (const auto& b : bodies)
      if (const NodeLineage* found = b->forGraph(g)) return found;
  return nullptr;
}

namespace {
std::string pathText(std::span<const std::int64_t> path, std::size_t upTo) {
  std::string out;
  for (std::size_t i = 0; i <= upTo && i < path.size(); ++i)
    out += (i ? "/" : "") + std::to_string(path[i]);
  return out;
}
}  // namespace

std::vector<NodeLineage::Located> NodeLineage::locate(std::span<const std::int64_t> path,
                                                      bool original, std::string* note) const {
  if (note) note->clear();
  if (path.empty()) throw std::invalid_argument("an empty node path");
  const std::string graphName = original ? "the original graph" : "the optimized graph";
  std::vector<const NodeLineage*> level{this};
  std::vector<Located> found;
  for (std::size_t step = 0; step < path.size(); ++step) {
    const std::int64_t id = path[step];
    const bool last = step + 1 == path.size();
    const std::string where =
        step == 0 ? graphName : "the inner graphs of node " + pathText(path, step - 1);
    std::vector<Located> here;
    bool known = false;
    std::string rewrites;
    for (const NodeLineage* l : level) {
      if (!original) {
        if (l->m_graph->nodeById(id)) here.push_back({l, id}), known = true;
        continue;
      }
      if (!l->known(id) && !(l->m_original && l->m_original->nodeById(id))) continue;
      known = true;
      for (std::int64_t n : l->optimizedNodesFor(id)) here.push_back({l, n});
      if (l->rewritten(id) && rewrites.empty()) rewrites = l->describe(id);
    }
    if (!known)
      throw std::invalid_argument("node " + pathText(path, step) + ": no node " +
                                  std::to_string(id) + " in " + where);
    if (here.empty())
      throw std::invalid_argument("node " + pathText(path, step) +
                                  " is not in the optimized graph" +
                                  (rewrites.empty() ? std::string() : ": " + rewrites));
    if (last) {
      if (note && !rewrites.empty()) *note = "node " + pathText(path, step) + " " + rewrites;
      found = std::move(here);
      break;
    }
    std::vector<const NodeLineage*> next;
    for (const Located& at : here)
      for (const NodeLineage* b : at.lineage->bodiesOf(at.node))
        if (std::find(next.begin(), next.end(), b) == next.end()) next.push_back(b);
    if (next.empty()) {
      const Apply* n = here.front().lineage->m_graph->nodeById(here.front().node);
      throw std::invalid_argument(
          "node " + pathText(path, step) + " (" + (n ? n->op().str() : std::string("?")) +
          ") runs no inner graph in the optimized graph" +
          (rewrites.empty() ? std::string() : " (" + rewrites + ")") +
          "; a path names the nodes whose inner graphs (OpFromGraph, IfElse) hold the node");
    }
    level = std::move(next);
  }
  return found;
}

}  // namespace tscope::engine::debug
