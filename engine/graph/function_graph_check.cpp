// FunctionGraph::checkIntegrity: every invariant the graph keeps, checked from scratch (tests,
// DebugMode's checkEachChange).
#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/function_graph_internal.h"

namespace tscope::engine {

using detail::clientKey;
using detail::describe;

void FunctionGraph::checkIntegrity() const {
  auto fail = [](const std::string& what) { throw GraphError("checkIntegrity: " + what); };
  FlatHashMap<const Variable*, bool> inputSet(m_inputs.size());
  for (const auto& in : m_inputs) {
    inputSet.set(in.get(), true);
    if (in->fgraph() != this) fail("input " + describe(*in) + " is not marked as in the graph");
  }
  for (std::size_t s = 0; s < m_nodes.size(); ++s) {
    const Apply* node = m_nodes[s];
    if (node->fgraph() != this || node->m_slot != s)
      fail(describe(*node) + " has a stale graph slot");
    if (m_nodeRefs[s].get() != node) fail(describe(*node) + " is not owned by the graph");
    if (nodeById(node->id()) != node) fail(describe(*node) + " is not found by its id");
    for (int i = 0; i < node->nInputs(); ++i) {
      const Variable& in = *node->input(i);
      if (in.fgraph() != this)
        fail("input " + std::to_string(i) + " of " + describe(*node) + " is not in the graph");
      auto n =
          std::count(in.m_clients.begin(), in.m_clients.end(), Client{const_cast<Apply*>(node), i});
      if (n != 1)
        fail(describe(in) + " lists input " + std::to_string(i) + " of " + describe(*node) + " " +
             std::to_string(n) + " times as a client, expected once");
    }
    for (int o = 0; o < node->nOutputs(); ++o) {
      const Variable& out = node->outputRef(o);
      if (out.owner() != node || out.index() != o)
        fail("output " + std::to_string(o) + " of " + describe(*node) + " has a wrong owner");
      if (out.fgraph() != this)
        fail("output " + std::to_string(o) + " of " + describe(*node) + " is not in the graph");
    }
  }
  for (std::size_t s = 0; s < m_variables.size(); ++s) {
    const Variable* var = m_variables[s];
    if (var->fgraph() != this || var->m_slot != s) fail(describe(*var) + " has a stale graph slot");
    if (variableById(var->id()) != var) fail(describe(*var) + " is not found by its id");
    if (!var->owner() && !inputSet.contains(var) && !m_orphans.contains(var))
      fail(describe(*var) + " is a free variable that is neither an input nor a constant");
    if (var->owner() && var->owner()->fgraph() != this)
      fail("the owner of " + describe(*var) + " is not in the graph");
    for (const Client& c : var->m_clients) {
      const VarPtr& used = c.node ? c.node->inputs().at(static_cast<std::size_t>(c.index))
                                  : m_outputs.at(static_cast<std::size_t>(c.index));
      if (used.get() != var) fail(describe(*var) + " has a client that does not use it");
      if (c.node && c.node->fgraph() != this)
        fail(describe(*var) + " has a client outside the graph");
    }
    if (var->owner() == nullptr && m_orphans.contains(var) && var->m_clients.empty())
      fail("the constant " + describe(*var) + " has no clients but is still in the graph");
  }
  for (const auto& [var, positions] : m_clientPositions) {  // Note [Client positions]
    if (var->fgraph() != this)
      fail("client positions are kept for " + describe(*var) + ", which is not in the graph");
    if (positions->size() != var->m_clients.size())
      fail("the client positions of " + describe(*var) + " do not match its clients");
    for (std::size_t p = 0; p < var->m_clients.size(); ++p) {
      const auto key = clientKey(var->m_clients[p]);
      const std::uint32_t* at = key ? positions->find(*key) : nullptr;
      if (!at || *at != p)
        fail("the position of client " + std::to_string(p) + " of " + describe(*var) + " is stale");
    }
  }
  for (std::size_t i = 0; i < m_outputs.size(); ++i) {
    const auto& c = m_outputs[i]->m_clients;
    if (std::count(c.begin(), c.end(), Client{nullptr, static_cast<int>(i)}) != 1)
      fail("output " + std::to_string(i) +
           " is not listed exactly once among its variable's clients");
  }
  if (toposort().size() != m_nodes.size()) fail("toposort does not reach every node");
}

}  // namespace tscope::engine
