// DebugSession: breakpoints from outside the graph (debug_session.h, breakpoints.h): resolving a
// spec to the nodes of the program tree, and the observer that evaluates them after each node.
#include "engine/debug/debug_session_impl.h"
#include "engine/debug/lineage.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/tensor/device_memory.h"

#include <algorithm>
#include <stdexcept>

namespace tscope::engine::debug {

namespace {

void collect(const Program& p, std::vector<ProgramNode>& out) {
  for (std::size_t pos = 0; pos < p.schedule().size(); ++pos)
    out.push_back({&p, pos, p.schedule()[pos]});
  for (const auto& child : p.children()) collect(*child, out);
}

std::string nodeText(const Apply& node) {
  return "node " + std::to_string(node.id()) + " (" + node.op().str() + ")";
}

}  // namespace

void DebugSession::Impl::collectNodes() {
  if (!allNodes.empty()) return;
  collect(function.program(), allNodes);
}

std::vector<const Apply*> DebugSession::Impl::findNodes(std::int64_t id) const {
  std::vector<const Apply*> found;
  for (const ProgramNode& n : allNodes)
    if (n.node->id() == id && std::find(found.begin(), found.end(), n.node) == found.end())
      found.push_back(n.node);
  return found;
}

// Note [Inner lineage] (lineage.h): "5/12" names node 12 in the inner graphs of node 5, ids of
// the original graph and bodies (onOriginalGraph) or of the optimized ones; each level's nodes
// are found in the child programs of the node that runs them.
void DebugSession::Impl::resolvePath(const BreakpointSpec& spec, bool onOriginalGraph,
                                     const std::string& what, Breakpoint& bp,
                                     std::vector<std::pair<const Apply*, int>>& targets) const {
  std::vector<std::int64_t> path;
  for (std::size_t at = 0; at <= spec.key.size();) {
    const std::size_t slash = std::min(spec.key.find('/', at), spec.key.size());
    path.push_back(std::stoll(spec.key.substr(at, slash - at)));  // parseBreakSpec checked it
    at = slash + 1;
  }
  const NodeLineage lineage(function.program(), function.rewriteLog());
  std::vector<NodeLineage::Located> found;
  try {
    found = lineage.locate(path, onOriginalGraph, &bp.info.note);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(what + ": " + e.what());
  }
  for (const NodeLineage::Located& at : found)
    for (const ProgramNode& n : allNodes)
      if (n.program == at.lineage->program() && n.node->id() == at.node &&
          std::find_if(targets.begin(), targets.end(),
                       [&](const auto& t) { return t.first == n.node; }) == targets.end())
        targets.emplace_back(n.node, -1);
  if (targets.empty())
    throw std::invalid_argument(what + ": node " + spec.key + " is in no program the session runs");
  if (bp.info.note.empty() && onOriginalGraph && targets.size() == 1 &&
      targets[0].first->id() != path.back())
    bp.info.note = "node " + spec.key + " is " + nodeText(*targets[0].first);
}

Breakpoint DebugSession::Impl::resolve(const BreakpointSpec& spec, bool onOriginalGraph) const {
  Breakpoint bp;
  bp.info.spec = spec;
  const std::string what = "breakpoint '" + toString(spec) + "'";
  if (spec.hitCount < 1)
    throw std::invalid_argument(what + ": expected a hit count >= 1, found " +
                                std::to_string(spec.hitCount));
  std::vector<std::pair<const Apply*, int>> targets;  // (node, output or -1 for all)
  using Target = BreakpointSpec::Target;
  switch (spec.target) {
    case Target::Node: {
      if (spec.key.find('/') != std::string::npos) {
        resolvePath(spec, onOriginalGraph, what, bp, targets);
        break;
      }
      std::int64_t id = -1;
      try {
        std::size_t used = 0;
        id = std::stoll(spec.key, &used);
        if (used != spec.key.size()) id = -1;
      } catch (const std::exception&) {
        id = -1;
      }
      if (id < 0)
        throw std::invalid_argument(what + ": expected a node id, found '" + spec.key + "'");
      std::vector<std::int64_t> ids{id};
      if (onOriginalGraph) {
        const NodeLineage lineage(function.graph(), function.rewriteLog());
        if (!lineage.known(id))
          throw std::invalid_argument(what + ": no node " + spec.key +
                                      " in the original graph or its rewrite log");
        ids = lineage.optimizedNodesFor(id);
        if (ids.empty())
          throw std::invalid_argument(
              what + ": node " + spec.key +
              " of the original graph is not in the optimized graph: " + lineage.describe(id));
        if (lineage.rewritten(id)) bp.info.note = "node " + spec.key + " " + lineage.describe(id);
      }
      for (std::int64_t n : ids)
        for (const Apply* node : findNodes(n)) targets.emplace_back(node, -1);
      if (targets.empty())
        throw std::invalid_argument(what + ": no node " + spec.key + " in the optimized graph" +
                                    (onOriginalGraph ? ""
                                                     : " (for a node of the graph as built, "
                                                       "set it on the original graph)"));
      if (bp.info.note.empty() && onOriginalGraph && targets.size() == 1 &&
          targets[0].first->id() != id)
        bp.info.note = "node " + spec.key + " is " + nodeText(*targets[0].first);
      break;
    }
    case Target::Variable: {
      bool input = false;
      for (const ProgramNode& n : allNodes)
        for (int o = 0; o < n.node->nOutputs(); ++o)
          if (n.node->outputRef(o).name() == spec.key) targets.emplace_back(n.node, o);
      for (const VarPtr& in : function.graph().inputs()) input = input || in->name() == spec.key;
      if (targets.empty())
        throw std::invalid_argument(
            what + ": " +
            (input ? "'" + spec.key +
                         "' is an input of the graph, set before the first node; break on a node "
                         "that reads it instead"
                   : "no node of the optimized graph computes a variable named '" + spec.key +
                         "' (a rewrite may have fused or renamed it; break on its node on the "
                         "original graph instead)"));
      break;
    }
    case Target::OpType: {
      for (const ProgramNode& n : allNodes)
        if (n.node->op().str() == spec.key || n.node->op().name() == spec.key)
          targets.emplace_back(n.node, -1);
      if (targets.empty())
        throw std::invalid_argument(what + ": no node of op type '" + spec.key +
                                    "' in the optimized graph (give an op's name, as 'Dot', or "
                                    "its full str, as 'Elemwise{log}')");
      break;
    }
    case Target::Scope: {
      for (const ProgramNode& n : allNodes)
        if (scopeMatches(n.node->scope(), spec.key)) targets.emplace_back(n.node, -1);
      if (targets.empty())
        throw std::invalid_argument(what + ": no node in scope '" + spec.key +
                                    "' in the optimized graph");
      break;
    }
  }
  // Note [Breakpoint conditions]: the outputs the condition applies to.
  for (const auto& [node, output] : targets) {
    std::vector<int>& outs = bp.outputs[node];
    for (int o = 0; o < node->nOutputs(); ++o)
      if ((output < 0 || output == o) &&
          conditionApplies(spec.condition, node->outputRef(o).type().dtype()) &&
          std::find(outs.begin(), outs.end(), o) == outs.end())
        outs.push_back(o);
    if (outs.empty()) bp.outputs.erase(node);
  }
  if (bp.outputs.empty()) {
    const Apply& node = *targets.front().first;
    const int o = targets.front().second < 0 ? 0 : targets.front().second;
    const std::string found =
        node.nOutputs() > 0 ? std::string(dtypeName(node.outputRef(o).type().dtype())) : "none";
    throw std::invalid_argument(what + ": the condition " + toString(spec.condition) + " expects " +
                                (spec.condition.kind == BreakCondition::Kind::AnyNan ||
                                         spec.condition.kind == BreakCondition::Kind::AnyInf
                                     ? "floating-point"
                                     : "numeric (not bool)") +
                                " outputs, found " + found + " at " + nodeText(node) +
                                (targets.size() > 1 ? " and at every other node it names" : ""));
  }
  for (const auto& [node, outs] : bp.outputs) bp.info.nodes.push_back(node->id());
  std::sort(bp.info.nodes.begin(), bp.info.nodes.end());
  bp.info.nodes.erase(std::unique(bp.info.nodes.begin(), bp.info.nodes.end()), bp.info.nodes.end());
  return bp;
}

void BreakpointObserver::rebuild(const std::map<int, Breakpoint>& breakpoints) {
  m_table.clear();
  for (const auto& [id, bp] : breakpoints) {
    if (!bp.info.spec.enabled) continue;
    for (const auto& [node, outs] : bp.outputs) m_table[node].push_back(id);
  }
}

void BreakpointObserver::afterNode(VM& vm, const NodeEvent& event) {
  if (m_muted) return;
  const auto it = m_table.find(&event.node);
  if (it == m_table.end()) return;
  for (int id : it->second) {
    Breakpoint& bp = m_session.breakpoints.at(id);
    // Note [Loop breakpoints]: only in the iteration asked for.
    if (bp.info.spec.iteration >= 0 && event.iteration() != bp.info.spec.iteration) continue;
    const BreakCondition& c = bp.info.spec.condition;
    bool holds = false;
    for (int o : bp.outputs.at(&event.node)) {
      const Tensor* value = event.outputs[static_cast<std::size_t>(o)];
      if (value == nullptr || !value->defined()) continue;
      Tensor onHost;  // Note [Reading device values] (engine/tensor/device_memory.h)
      if (value->device() != Device::Cpu) {
        onHost = toHost(*value);
        value = &onHost;
      }
      if (c.kind == BreakCondition::Kind::ChangedBy) {
        // Note [Breakpoint conditions]: against the previous execution's value.
        Previous& prev = m_previous[&event.node.outputRef(o)];
        const std::uint64_t now = m_session.executions;
        const bool fromEarlier = prev.value.defined() && prev.generation < now;
        holds = holds || (fromEarlier && conditionHolds(c, *value, &prev.value));
        if (prev.generation != now || !prev.value.defined()) prev = {value->clone(), now};
      } else if (!holds) {
        holds = conditionHolds(c, *value);
      }
    }
    if (!holds) continue;
    ++bp.info.hits;
    if (bp.info.hits >= bp.info.spec.hitCount && m_hit < 0) {
      m_hit = id;
      m_hitNode = event.node.id();
      vm.requestPause();
    }
  }
}

}  // namespace tscope::engine::debug
