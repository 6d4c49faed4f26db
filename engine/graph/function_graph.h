#pragma once
// FunctionGraph: the subgraph between a list of inputs and a list of outputs, with exact clients,
// features, and every edit going through replace()/changeInput() so features see it.

#include "engine/graph/apply.h"
#include "engine/graph/feature.h"
#include "engine/graph/flat_hash_map.h"
#include "engine/graph/id_index.h"
#include "engine/graph/variable.h"

#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tscope::engine {

// old -> new, for clone() and the cloning constructor.
struct CloneMap {
  FlatHashMap<const Variable*, VarPtr> variables;
  FlatHashMap<const Apply*, ApplyPtr> nodes;
  VarPtr operator[](const Variable* v) const;
  ApplyPtr operator[](const Apply* a) const;
};

class FunctionGraph {
 public:
  enum class Ownership {
    Clone,  // work on a copy of the subgraph (the default: the caller's graph is never edited)
    Adopt,  // take the given nodes as they are (they must not belong to another graph)
  };

  // Imports everything between inputs and outputs. A free variable reached from the outputs that
  // is not among the inputs (and is not a Constant) is an error naming it, the node that uses it
  // and its creation site. With Ownership::Clone, `map` (if given) receives old -> new.
  FunctionGraph(std::vector<VarPtr> inputs, std::vector<VarPtr> outputs,
                Ownership ownership = Ownership::Clone, CloneMap* map = nullptr);
  ~FunctionGraph();
  FunctionGraph(const FunctionGraph&) = delete;
  FunctionGraph& operator=(const FunctionGraph&) = delete;

  const std::vector<VarPtr>& inputs() const { return m_inputs; }
  const std::vector<VarPtr>& outputs() const { return m_outputs; }
  // Every node and variable of the graph, in no particular order (toposort() gives an order).
  const std::vector<Apply*>& nodes() const { return m_nodes; }
  const std::vector<Variable*>& variables() const { return m_variables; }
  std::size_t nodeCount() const { return m_nodes.size(); }
  bool contains(const Apply& node) const { return node.fgraph() == this; }
  bool contains(const Variable& var) const { return var.fgraph() == this; }
  // Throws GraphError when var is not in the graph.
  const std::vector<Client>& clients(const Variable& var) const;
  // By id (Note [Node ids]); null when no node or variable of the graph has it.
  Apply* nodeById(std::int64_t id) const;
  Variable* variableById(std::int64_t id) const;
  // The next id the graph will hand out (one more than the largest id in use).
  std::int64_t nextId() const { return m_nextId; }
  // Ids below `next` will not be handed out (a loaded graph keeps the counter it was saved with).
  void reserveIds(std::int64_t next) { m_nextId = std::max(m_nextId, next); }

  // Updates (shared variable <- new value): output index -> input index.
  const std::map<std::size_t, std::size_t>& updateMapping() const { return m_updates; }
  void setUpdate(std::size_t outputIndex, std::size_t inputIndex);

  // --- Edits. Each is one change for the features (onChangeBegin ... onChangeEnd). ---

  // Every client of var (node inputs and graph outputs) uses newVar instead; nodes only var needed
  // are pruned, nodes newVar needs are imported. newVar's type must be var's type or more specific.
  //   before: y = exp(log(x)); z = y + 1      replace(y, x, "exp_log")      after: z = x + 1
  void replace(const VarPtr& var, const VarPtr& newVar, std::string_view reason);
  // Several replacements as one change.
  void replaceAll(std::span<const std::pair<VarPtr, VarPtr>> pairs, std::string_view reason);
  // Input `index` of node (graph output `index` when node is null) becomes newVar.
  //   before: n = add(a, b)      changeInput(n, 1, c, "r")      after: n = add(a, c)
  void changeInput(Apply* node, int index, const VarPtr& newVar, std::string_view reason);
  // Brings var (and every node it needs that the graph lacks) into the graph.
  void importVar(const VarPtr& var, std::string_view reason);
  void addInput(const VarPtr& var);
  // Removes graph input `index`, which nothing reads any more (no client) and no update targets;
  // the inputs after it move up one place (and the update mapping with them). Throws GraphError
  // otherwise. With replaceOutput, what the gpu phase uses to make a shared variable
  // device-resident (Note [Device-resident shared variables] in engine/rewrite/rules/
  // gpu_placement.h): the device twin is added, its readers moved to it, the host input removed.
  void removeInput(std::size_t index);
  // Graph output `index` becomes newVar, whose type may differ from the old output's in its
  // device only (same dtype, the same or a more specific shape): an update whose value stays on
  // the device. Other edits keep outputs on their device (changeInput checks the type).
  void replaceOutput(std::size_t index, const VarPtr& newVar, std::string_view reason);
  // Removes every node none of whose outputs is used (by a node or a graph output), and what
  // only they needed; returns how many nodes left. Graph edits never leave such nodes behind, but
  // importVar() of a variable nothing uses does.
  std::size_t pruneUnused(std::string_view reason);
  //   before: outputs (y)      addOutput(z)      after: outputs (y, z)
  void addOutput(const VarPtr& var, std::string_view reason);

  // --- Features. ---
  void attachFeature(std::shared_ptr<Feature> feature);
  void detachFeature(const Feature& feature);
  const std::vector<std::shared_ptr<Feature>>& features() const { return m_features; }
  template <class F>
  F* feature() const {
    for (const auto& f : m_features)
      if (auto* typed = dynamic_cast<F*>(f.get())) return typed;
    return nullptr;
  }
  // Every feature's validate(); throws InconsistencyError from the first that refuses.
  void validate() const;
  // The union of the features' orderings.
  Orderings orderings() const;

  // A topological order of the nodes that honours orderings(); deterministic for a given graph
  // structure. Throws GraphError naming the nodes of a cycle.
  std::vector<Apply*> toposort() const;
  // A copy of the graph (same ids, no features); map receives old -> new.
  std::unique_ptr<FunctionGraph> clone(CloneMap* map = nullptr) const;
  // Checks every structural invariant (clients exact, owners, membership, no cycle); throws
  // GraphError describing the first violation.
  void checkIntegrity() const;

 private:
  struct ChangeScope;
  friend class History;

  // changeInput without the type check, for History::revert only: a replacement by a more
  // specific type ((?, 3) -> (2, 3)) is undone by putting back the more general variable, which
  // the check would refuse (Theano's change_node_input(..., check=False)).
  void changeInputUnchecked(Apply* node, int index, const VarPtr& oldVar, std::string_view reason);
  void changeInputWith(Apply* node, int index, const VarPtr& newVar, std::string_view reason,
                       bool checkType);

  void importVarImpl(const VarPtr& var, std::string_view reason);
  // check == false: the nodes are known to be new, consistent and in topological order (copies).
  void importNodes(const std::vector<Apply*>& newNodes, std::string_view reason, bool check = true);
  struct Trusted {};
  // Adopts nodes known to be consistent, in the given topological order (clone()).
  FunctionGraph(Trusted, std::vector<VarPtr> inputs, std::vector<VarPtr> outputs,
                const std::vector<Apply*>& order);
  void init(std::vector<VarPtr> inputs, std::vector<VarPtr> outputs,
            const std::vector<Apply*>* trustedOrder);
  void addVariable(Variable& var);
  void removeVariable(Variable& var);
  // Every change to a variable's clients goes through these (Note [Client positions]).
  void addClient(Variable& var, const Client& client);
  void eraseClient(Variable& var, const Client& client);
  void indexClients(Variable& var);
  void removeClient(Variable& var, const Client& client, std::string_view reason);
  // The walk of removeClient: drops each (variable, client) and prunes what is left unused.
  void removeClients(std::vector<std::pair<Variable*, Client>>& work,
                     std::vector<VarPtr>& graveyard, std::vector<ApplyPtr>& prunedNodes,
                     std::string_view reason);
  bool pruneIfUnused(Apply* node, std::vector<std::pair<Variable*, Client>>& work,
                     std::vector<ApplyPtr>& prunedNodes, std::string_view reason);
  void changeInputImpl(Apply* node, int index, const VarPtr& newVar, std::string_view reason,
                       bool checkType = true);
  template <class Node>
  void assignId(Node& node);
  void flushPendingIds();
  void beginChange(std::string_view reason);
  void endChange(std::string_view reason);

  std::vector<VarPtr> m_inputs;
  std::vector<VarPtr> m_outputs;
  std::vector<Apply*> m_nodes;
  // Note [The graph owns its nodes]: m_nodeRefs[i] owns m_nodes[i]. Output handles alone do not
  // cover every node: importVar may bring in nodes that no output needs.
  std::vector<ApplyPtr> m_nodeRefs;
  std::vector<Variable*> m_variables;
  // Orphans (constants used by nodes) are owned here while in the graph.
  FlatHashMap<const Variable*, VarPtr> m_orphans;
  // Note [Client positions]: for a variable with many clients (a constant shared by thousands of
  // nodes), where each client sits in its list, so removing one is O(1) instead of a scan and a
  // shift of the whole list (which made optimizing large graphs quadratic).
  FlatHashMap<const Variable*, std::shared_ptr<FlatHashMap<std::uint64_t, std::uint32_t>>>
      m_clientPositions;
  IdIndex<Apply> m_nodeIds;
  IdIndex<Variable> m_variableIds;
  std::int64_t m_nextId = 0;
  std::map<std::size_t, std::size_t> m_updates;
  std::vector<std::shared_ptr<Feature>> m_features;
  int m_changeDepth = 0;
  // While the constructor imports, ids already set are kept and the rest wait here.
  bool m_deferIds = false;
  // In import order; exactly one of the pair is set.
  std::vector<std::pair<Apply*, Variable*>> m_pendingIds;
};

}  // namespace tscope::engine
