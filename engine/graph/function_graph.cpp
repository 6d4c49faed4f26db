#include "engine/graph/function_graph.h"

#include "engine/graph/errors.h"
#include "engine/graph/function_graph_internal.h"
#include "engine/graph/graph_walk.h"
#include "engine/graph/op.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace tscope::engine {

using detail::ancestorsInOrder;
using detail::clientKey;
using detail::describe;
using detail::FreshIds;
using detail::kIndexedClients;

namespace {

[[noreturn]] void throwMissingInput(const Variable& var, const Apply* user) {
  std::string msg = "the graph needs the free variable " + describe(var);
  if (!var.site().empty()) msg += ", created at " + var.site().str() + ",";
  if (user) msg += " as an input of " + describe(*user) + ",";
  msg +=
      " but it is not among the graph's inputs (only constants may be used without being an input)";
  throw GraphError(msg);
}

}  // namespace

VarPtr CloneMap::operator[](const Variable* v) const {
  const VarPtr* found = variables.find(v);
  return found ? *found : nullptr;
}

ApplyPtr CloneMap::operator[](const Apply* a) const {
  const ApplyPtr* found = nodes.find(a);
  return found ? *found : nullptr;
}

// Brackets one outermost edit so features see onChangeBegin / onChangeEnd exactly once.
struct FunctionGraph::ChangeScope {
  FunctionGraph& fg;
  std::string_view reason;
  ChangeScope(FunctionGraph& g, std::string_view r) : fg(g), reason(r) { fg.beginChange(reason); }
  ~ChangeScope() { fg.endChange(reason); }
};

void FunctionGraph::beginChange(std::string_view reason) {
  if (m_changeDepth++ == 0)
    for (const auto& f : m_features) f->onChangeBegin(*this, reason);
}

void FunctionGraph::endChange(std::string_view reason) {
  if (--m_changeDepth == 0)
    for (const auto& f : m_features) f->onChangeEnd(*this, reason);
}

FunctionGraph::FunctionGraph(std::vector<VarPtr> inputs, std::vector<VarPtr> outputs,
                             Ownership ownership, CloneMap* map) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) throw GraphError("FunctionGraph: input " + std::to_string(i) + " is null");
    if (inputs[i]->owner())
      throw GraphError("FunctionGraph: input " + std::to_string(i) + " " + describe(*inputs[i]) +
                       " is computed by " + describe(*inputs[i]->owner()) +
                       "; graph inputs must be free variables, constants or shared variables");
  }
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i]) throw GraphError("FunctionGraph: output " + std::to_string(i) + " is null");

  if (ownership == Ownership::Clone) {
    std::vector<Apply*> clonedOrder;
    {
      // Note [Walk marks]: the walk's memo maps each of the caller's nodes to its position in the
      // order (its copy is copies[position]) and each free variable (the inputs, then constants
      // where first used) to its copy's position in freeCopies: no table keyed by address.
      WalkMemo memo;
      FreshIds ids;
      std::vector<const Variable*> freeOriginals;
      std::vector<VarPtr> freeCopies;
      freeCopies.reserve(inputs.size() + 16);
      for (const auto& in : inputs) {
        if (!memo.claim(*in, static_cast<std::uint32_t>(freeCopies.size())))
          throw GraphError("FunctionGraph: the input " + describe(*in) + " is listed twice");
        freeOriginals.push_back(in.get());
        freeCopies.push_back(in->cloneDetached());
        ids.give(*freeCopies.back());
      }
      std::vector<Variable*> roots;
      for (const auto& out : outputs) roots.push_back(out.get());
      std::vector<ApplyPtr> copies;
      auto mapped = [&](const VarPtr& v, const Apply* user) -> VarPtr {
        if (const Apply* owner = v->owner()) return copies[*memo.find(*owner)]->output(v->index());
        if (const std::uint32_t* k = memo.find(*v)) return freeCopies[*k];
        if (v->kind() != Variable::Kind::Constant) throwMissingInput(*v, user);
        memo.claim(*v,
                   static_cast<std::uint32_t>(freeCopies.size()));  // copied once, where first used
        freeOriginals.push_back(v.get());
        freeCopies.push_back(v->cloneDetached());
        ids.give(*freeCopies.back());
        return freeCopies.back();
      };
      // Each node is copied as the walk places it in the order: its inputs' copies exist by then.
      // Inputs are free variables, so no variable with an owner is known.
      std::vector<Apply*> order = ancestorsInOrder(
          roots, [](const Variable&) { return false; }, memo,
          [&](Apply* node) {
            std::vector<VarPtr> newInputs;
            newInputs.reserve(node->inputs().size());
            for (const auto& in : node->inputs()) newInputs.push_back(mapped(in, node));
            copies.push_back(node->cloneWithNewInputs(std::move(newInputs)));
            Apply& copy = *copies.back();
            ids.give(copy);
            for (int o = 0; o < copy.nOutputs(); ++o) ids.give(copy.outputRef(o));
            clonedOrder.push_back(&copy);
          });
      for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i] = freeCopies[i];
      for (auto& out : outputs) out = mapped(out, nullptr);
      if (map) {
        map->variables.reserve(map->variables.size() + freeCopies.size() + order.size() * 2);
        map->nodes.reserve(map->nodes.size() + order.size());
        for (std::size_t i = 0; i < freeCopies.size(); ++i)
          map->variables.set(freeOriginals[i], freeCopies[i]);
        for (std::size_t i = 0; i < order.size(); ++i) {
          for (int o = 0; o < order[i]->nOutputs(); ++o)
            map->variables.set(&order[i]->outputRef(o), copies[i]->output(o));
          map->nodes.set(order[i], copies[i]);
        }
      }
      // `copies` goes out of scope here, but the outputs (and so every copy they need) and the
      // inputs hold the new graph.
    }
    // The copies are new and consistent: import them in their known order without re-checking.
    init(std::move(inputs), std::move(outputs), &clonedOrder);
    return;
  }

  init(std::move(inputs), std::move(outputs), nullptr);
}

FunctionGraph::FunctionGraph(Trusted, std::vector<VarPtr> inputs, std::vector<VarPtr> outputs,
                             const std::vector<Apply*>& order) {
  init(std::move(inputs), std::move(outputs), &order);
}

void FunctionGraph::init(std::vector<VarPtr> inputs, std::vector<VarPtr> outputs,
                         const std::vector<Apply*>* trustedOrder) {
  m_deferIds = true;
  try {
    FlatHashMap<const Variable*, bool> seenInputs(inputs.size());
    for (const auto& in : inputs) {
      if (!seenInputs.tryEmplace(in.get(), true).second)
        throw GraphError("FunctionGraph: the input " + describe(*in) + " is listed twice");
      if (in->fgraph())
        throw GraphError("FunctionGraph: the input " + describe(*in) +
                         " belongs to another FunctionGraph; build this one with Ownership::Clone");
      m_inputs.push_back(in);
      addVariable(*in);
    }
    // All nodes at once, in topological order, into containers sized for them.
    std::vector<Apply*> found;
    if (!trustedOrder) {
      std::vector<Variable*> roots;
      for (const auto& out : outputs) roots.push_back(out.get());
      found = ancestorsInOrder(roots, [this](const Variable& v) { return v.fgraph() == this; });
    }
    const std::vector<Apply*>& order = trustedOrder ? *trustedOrder : found;
    m_nodes.reserve(order.size());
    m_nodeRefs.reserve(order.size());
    m_variables.reserve(m_inputs.size() + order.size() * 2);
    // Node and variable ids share one space: each index spans all of it.
    m_nodeIds.reserve(m_inputs.size() + order.size() * 3);
    m_variableIds.reserve(m_inputs.size() + order.size() * 3);
    m_pendingIds.reserve(m_inputs.size() + order.size() * 3);
    importNodes(order, "init", /*check=*/trustedOrder == nullptr);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      importVarImpl(outputs[i], "init");  // a constant output; every owned one is in already
      addClient(*outputs[i], Client{nullptr, static_cast<int>(i)});
      m_outputs.push_back(outputs[i]);
    }
  } catch (...) {
    // Leave the caller's variables as they were: no half-built graph.
    for (Apply* node : m_nodes) node->m_fgraph = nullptr;
    for (Variable* var : m_variables) {
      var->m_fgraph = nullptr;
      var->m_clients.clear();
    }
    throw;
  }
  m_deferIds = false;
  flushPendingIds();
}

FunctionGraph::~FunctionGraph() {
  auto features = m_features;
  for (auto it = features.rbegin(); it != features.rend(); ++it) (*it)->onDetach(*this);
  for (Apply* node : m_nodes) node->m_fgraph = nullptr;
  for (Variable* var : m_variables) {
    var->m_fgraph = nullptr;
    var->m_clients.clear();
  }
}

const std::vector<Client>& FunctionGraph::clients(const Variable& var) const {
  if (var.fgraph() != this) throw GraphError("clients: " + describe(var) + " is not in this graph");
  return var.m_clients;
}

Apply* FunctionGraph::nodeById(std::int64_t id) const {
  return m_nodeIds.find(id);
}

Variable* FunctionGraph::variableById(std::int64_t id) const {
  return m_variableIds.find(id);
}

void FunctionGraph::setUpdate(std::size_t outputIndex, std::size_t inputIndex) {
  if (outputIndex >= m_outputs.size() || inputIndex >= m_inputs.size())
    throw GraphError("setUpdate: output " + std::to_string(outputIndex) + " / input " +
                     std::to_string(inputIndex) + " out of range (" +
                     std::to_string(m_outputs.size()) + " outputs, " +
                     std::to_string(m_inputs.size()) + " inputs)");
  const Variable& target = *m_inputs[inputIndex];
  const Variable& value = *m_outputs[outputIndex];
  if (target.kind() != Variable::Kind::Shared)
    throw GraphError("setUpdate: the updated input " + describe(target) +
                     " is not a shared variable");
  if (!value.type().isSubtypeOf(target.type()))
    throw TypeError("setUpdate: the update of " + describe(target) + " has type " +
                    value.type().str());
  m_updates[outputIndex] = inputIndex;
}

// --- ids ---

template <class Node>
void FunctionGraph::assignId(Node& node) {
  constexpr bool kIsNode = std::is_same_v<Node, Apply>;
  std::int64_t id = node.m_id;
  bool free = id >= 0 && !m_nodeIds.contains(id) && !m_variableIds.contains(id);
  if (!free) {
    if (m_deferIds) {
      if constexpr (kIsNode)
        m_pendingIds.emplace_back(&node, nullptr);
      else
        m_pendingIds.emplace_back(nullptr, &node);
      return;
    }
    id = m_nextId;
    node.m_id = id;
  }
  if constexpr (kIsNode)
    m_nodeIds.set(id, &node);
  else
    m_variableIds.set(id, &node);
  m_nextId = std::max(m_nextId, id + 1);
}

void FunctionGraph::flushPendingIds() {
  // Imports run in topological order, so fresh ids follow the data flow.
  for (auto [node, var] : m_pendingIds) {
    if (node)
      assignId(*node);
    else
      assignId(*var);
  }
  m_pendingIds.clear();
}

// --- membership ---

void FunctionGraph::addVariable(Variable& var) {
  var.m_fgraph = this;
  var.m_slot = m_variables.size();
  m_variables.push_back(&var);
  assignId(var);
}

void FunctionGraph::removeVariable(Variable& var) {
  Variable* last = m_variables.back();
  m_variables[var.m_slot] = last;
  last->m_slot = var.m_slot;
  m_variables.pop_back();
  if (m_variableIds.find(var.m_id) == &var) m_variableIds.erase(var.m_id);
  var.m_fgraph = nullptr;
  var.m_clients.clear();
  if (!m_clientPositions.empty()) m_clientPositions.erase(&var);
}

// Note [Client positions]. A variable's clients keep the order they were added in until it has
// kIndexedClients of them; from then on a removal moves the last client into the hole (O(1)), until
// the list is small again.
void FunctionGraph::addClient(Variable& var, const Client& client) {
  var.m_clients.push_back(client);
  if (auto* positions = m_clientPositions.find(&var)) {
    if (const auto key = clientKey(client))
      (*positions)->set(*key, static_cast<std::uint32_t>(var.m_clients.size() - 1));
    else
      m_clientPositions.erase(&var);  // back to the linear search for this variable
  } else if (var.m_clients.size() >= kIndexedClients) {
    indexClients(var);
  }
}

void FunctionGraph::indexClients(Variable& var) {
  auto positions =
      std::make_shared<FlatHashMap<std::uint64_t, std::uint32_t>>(var.m_clients.size() * 2);
  for (std::size_t p = 0; p < var.m_clients.size(); ++p) {
    const auto key = clientKey(var.m_clients[p]);
    if (!key) return;
    positions->set(*key, static_cast<std::uint32_t>(p));
  }
  m_clientPositions.tryEmplace(&var, std::move(positions));
}

void FunctionGraph::eraseClient(Variable& var, const Client& client) {
  auto& clients = var.m_clients;
  auto noSuchClient = [&var] {
    return GraphError("removeClient: " + describe(var) +
                      " has no such client (Note [Clients are exact])");
  };
  auto* positions = m_clientPositions.find(&var);
  const auto key = positions ? clientKey(client) : std::nullopt;
  if (!key) {
    auto it = std::find(clients.rbegin(), clients.rend(), client);
    if (it == clients.rend()) throw noSuchClient();
    clients.erase(std::next(it).base());
    return;
  }
  const std::uint32_t* found = (*positions)->find(*key);
  if (!found) throw noSuchClient();
  const std::size_t at = *found;
  (*positions)->erase(*key);
  if (at + 1 != clients.size()) {
    clients[at] = clients.back();
    (*positions)->set(*clientKey(clients[at]), static_cast<std::uint32_t>(at));
  }
  clients.pop_back();
  if (clients.size() < kIndexedClients / 2) m_clientPositions.erase(&var);
}

void FunctionGraph::importVarImpl(const VarPtr& var, std::string_view reason) {
  if (var->fgraph() == this) return;
  if (var->fgraph())
    throw GraphError("import: " + describe(*var) +
                     " belongs to another FunctionGraph; clone it first");
  if (!var->owner()) {
    if (var->kind() != Variable::Kind::Constant) throwMissingInput(*var, nullptr);
    addVariable(*var);
    m_orphans.set(var.get(), var);
    return;
  }
  auto known = [this](const Variable& v) { return v.fgraph() == this; };
  importNodes(ancestorsInOrder({var.get()}, known), reason);
}

void FunctionGraph::importNodes(const std::vector<Apply*>& newNodes, std::string_view reason,
                                bool check) {
  // Check everything first so that a refused import changes nothing. The nodes coming in are
  // remembered in their walk marks (Note [Walk marks]).
  std::optional<WalkMemo> incoming;
  if (check) {
    incoming.emplace();
    for (Apply* node : newNodes) incoming->claim(*node, 0);
  }
  for (Apply* node : check ? newNodes : std::vector<Apply*>{}) {
    if (node->fgraph())
      throw GraphError("import: the node " + describe(*node) +
                       " belongs to another FunctionGraph; clone it first");
    for (const auto& in : node->inputs()) {
      if (in->fgraph() == this) continue;
      if (in->owner()) {
        if (!incoming->find(*in->owner()))
          throw GraphError("import: " + describe(*in) + " belongs to another FunctionGraph");
      } else if (in->kind() != Variable::Kind::Constant) {
        throwMissingInput(*in, node);
      } else if (in->fgraph()) {
        throw GraphError("import: the constant " + describe(*in) +
                         " belongs to another FunctionGraph");
      }
    }
  }
  for (Apply* node : newNodes) {
    for (int i = 0; i < node->nInputs(); ++i) {
      const VarPtr& in = node->input(i);
      if (in->fgraph() != this) {  // a constant: every owned input was imported before its user
        addVariable(*in);
        m_orphans.set(in.get(), in);
      }
      addClient(*in, Client{node, i});
    }
    node->m_fgraph = this;
    node->m_slot = m_nodes.size();
    m_nodes.push_back(node);
    m_nodeRefs.push_back(node->shared_from_this());  // Note [The graph owns its nodes]
    assignId(*node);
    for (int o = 0; o < node->nOutputs(); ++o) addVariable(node->outputRef(o));
    for (const auto& f : m_features) f->onImport(*this, *node, reason);
  }
}

void FunctionGraph::removeClient(Variable& first, const Client& firstClient,
                                 std::string_view reason) {
  std::vector<VarPtr> graveyard;      // orphans released only when the walk is over
  std::vector<ApplyPtr> prunedNodes;  // likewise: the walk still reads their inputs
  std::vector<std::pair<Variable*, Client>> work{{&first, firstClient}};
  removeClients(work, graveyard, prunedNodes, reason);
}

void FunctionGraph::removeClients(std::vector<std::pair<Variable*, Client>>& work,
                                  std::vector<VarPtr>& graveyard,
                                  std::vector<ApplyPtr>& prunedNodes, std::string_view reason) {
  while (!work.empty()) {
    auto [var, client] = work.back();
    work.pop_back();
    eraseClient(*var, client);
    if (!var->m_clients.empty()) continue;
    Apply* node = var->owner();
    if (!node) {
      if (VarPtr* orphan = m_orphans.find(var)) {
        graveyard.push_back(std::move(*orphan));
        m_orphans.erase(var);
        removeVariable(*var);
      }
      continue;
    }
    if (node->fgraph() != this) continue;
    pruneIfUnused(node, work, prunedNodes, reason);
  }
}

bool FunctionGraph::pruneIfUnused(Apply* node, std::vector<std::pair<Variable*, Client>>& work,
                                  std::vector<ApplyPtr>& prunedNodes, std::string_view reason) {
  for (int o = 0; o < node->nOutputs(); ++o)
    if (!node->outputRef(o).m_clients.empty()) return false;
  // Prune: the node leaves the graph; its inputs lose a client each.
  for (const auto& f : m_features) f->onPrune(*this, *node, reason);
  Apply* lastNode = m_nodes.back();
  prunedNodes.push_back(std::move(m_nodeRefs[node->m_slot]));  // released after the walk
  m_nodeRefs[node->m_slot] = std::move(m_nodeRefs.back());
  m_nodes[node->m_slot] = lastNode;
  lastNode->m_slot = node->m_slot;
  m_nodes.pop_back();
  m_nodeRefs.pop_back();
  if (m_nodeIds.find(node->m_id) == node) m_nodeIds.erase(node->m_id);
  node->m_fgraph = nullptr;
  for (int o = 0; o < node->nOutputs(); ++o) removeVariable(node->outputRef(o));
  for (int i = node->nInputs() - 1; i >= 0; --i)
    work.emplace_back(node->input(i).get(), Client{node, i});
  return true;
}

std::size_t FunctionGraph::pruneUnused(std::string_view reason) {
  std::vector<Apply*> unused;
  for (Apply* node : m_nodes) {
    bool used = false;
    for (int o = 0; o < node->nOutputs() && !used; ++o)
      used = !node->outputRef(o).m_clients.empty();
    if (!used) unused.push_back(node);
  }
  if (unused.empty()) return 0;
  const std::size_t before = m_nodes.size();
  ChangeScope change(*this, reason);
  std::vector<VarPtr> graveyard;
  std::vector<ApplyPtr> prunedNodes;
  std::vector<std::pair<Variable*, Client>> work;
  for (Apply* node : unused) {
    // The walks only prune nodes that lost their last client, never one without clients, so
    // every node of `unused` is still in the graph here.
    pruneIfUnused(node, work, prunedNodes, reason);
    removeClients(work, graveyard, prunedNodes, reason);
  }
  return before - m_nodes.size();
}

// --- edits ---

void FunctionGraph::changeInputImpl(Apply* node, int index, const VarPtr& newVar,
                                    std::string_view reason, bool checkType) {
  VarPtr& slot = node ? node->m_inputs.at(static_cast<std::size_t>(index))
                      : m_outputs.at(static_cast<std::size_t>(index));
  VarPtr old = slot;  // keeps the old subgraph alive until the features have seen the change
  if (old == newVar) return;
  if (checkType && !newVar->type().isSubtypeOf(old->type()))
    throw TypeError("changeInput (" + std::string(reason) + "): cannot use " + describe(*newVar) +
                    " in place of " + describe(*old) +
                    (node ? " as input " + std::to_string(index) + " of " + describe(*node)
                          : " as graph output " + std::to_string(index)) +
                    ": the new type must equal the old one or be more specific");
  importVarImpl(newVar, reason);
  slot = newVar;
  addClient(*newVar, Client{node, index});
  removeClient(*old, Client{node, index}, reason);
  for (const auto& f : m_features) f->onChangeInput(*this, node, index, old, newVar, reason);
}

void FunctionGraph::changeInput(Apply* node, int index, const VarPtr& newVar,
                                std::string_view reason) {
  changeInputWith(node, index, newVar, reason, /*checkType=*/true);
}

void FunctionGraph::changeInputUnchecked(Apply* node, int index, const VarPtr& oldVar,
                                         std::string_view reason) {
  changeInputWith(node, index, oldVar, reason, /*checkType=*/false);
}

void FunctionGraph::changeInputWith(Apply* node, int index, const VarPtr& newVar,
                                    std::string_view reason, bool checkType) {
  if (!newVar) throw GraphError("changeInput: the new variable is null");
  if (node && node->fgraph() != this)
    throw GraphError("changeInput: the node " + describe(*node) + " is not in this graph");
  if (index < 0 || index >= (node ? node->nInputs() : static_cast<int>(m_outputs.size())))
    throw GraphError("changeInput: index " + std::to_string(index) + " is out of range");
  ChangeScope change(*this, reason);
  changeInputImpl(node, index, newVar, reason, checkType);
}

void FunctionGraph::replace(const VarPtr& var, const VarPtr& newVar, std::string_view reason) {
  std::pair<VarPtr, VarPtr> pair{var, newVar};
  replaceAll(std::span(&pair, 1), reason);
}

void FunctionGraph::replaceAll(std::span<const std::pair<VarPtr, VarPtr>> pairs,
                               std::string_view reason) {
  // Check the types of every pair before touching the graph.
  for (const auto& [var, newVar] : pairs) {
    if (!var || !newVar)
      throw GraphError("replace (" + std::string(reason) + "): a variable is null");
    if (!newVar->type().isSubtypeOf(var->type()))
      throw TypeError("replace (" + std::string(reason) + "): cannot replace " + describe(*var) +
                      " by " + describe(*newVar) +
                      ": the new type must equal the old one or be more specific");
  }
  ChangeScope change(*this, reason);
  for (const auto& [var, newVar] : pairs) {
    // A variable an earlier pair already removed from the graph has nothing left to replace.
    if (var->fgraph() != this) continue;
    std::vector<Client> clients = var->m_clients;
    for (const Client& c : clients) changeInputImpl(c.node, c.index, newVar, reason);
  }
}

void FunctionGraph::importVar(const VarPtr& var, std::string_view reason) {
  if (!var) throw GraphError("importVar: the variable is null");
  ChangeScope change(*this, reason);
  importVarImpl(var, reason);
}

void FunctionGraph::addInput(const VarPtr& var) {
  if (!var) throw GraphError("addInput: the variable is null");
  if (var->owner()) throw GraphError("addInput: " + describe(*var) + " is computed by a node");
  if (var->fgraph() == this) {
    if (std::find(m_inputs.begin(), m_inputs.end(), var) != m_inputs.end()) return;
    throw GraphError("addInput: " + describe(*var) + " is already used in the graph as a constant");
  }
  if (var->fgraph())
    throw GraphError("addInput: " + describe(*var) + " belongs to another FunctionGraph");
  ChangeScope change(*this, "addInput");
  m_inputs.push_back(var);
  addVariable(*var);
}

void FunctionGraph::removeInput(std::size_t index) {
  if (index >= m_inputs.size())
    throw GraphError("removeInput: input " + std::to_string(index) + " is out of range (" +
                     std::to_string(m_inputs.size()) + " inputs)");
  const VarPtr var = m_inputs[index];
  if (!var->m_clients.empty())
    throw GraphError("removeInput: input " + std::to_string(index) + " (" + describe(*var) +
                     ") still has " + std::to_string(var->m_clients.size()) + " client(s)");
  for (const auto& [out, in] : m_updates)
    if (in == index)
      throw GraphError("removeInput: input " + std::to_string(index) + " (" + describe(*var) +
                       ") is the target of the update in output " + std::to_string(out));
  ChangeScope change(*this, "removeInput");
  m_inputs.erase(m_inputs.begin() + static_cast<std::ptrdiff_t>(index));
  for (auto& [out, in] : m_updates)
    if (in > index) --in;
  removeVariable(*var);
}

void FunctionGraph::replaceOutput(std::size_t index, const VarPtr& newVar,
                                  std::string_view reason) {
  if (!newVar) throw GraphError("replaceOutput: the new variable is null");
  if (index >= m_outputs.size())
    throw GraphError("replaceOutput: output " + std::to_string(index) + " is out of range (" +
                     std::to_string(m_outputs.size()) + " outputs)");
  const VarPtr& old = m_outputs[index];
  const TensorType& from = old->type();
  const TensorType moved(from.dtype(), from.shape(), newVar->type().device());
  if (!newVar->type().isSubtypeOf(moved))
    throw TypeError("replaceOutput (" + std::string(reason) + "): cannot use " + describe(*newVar) +
                    " as graph output " + std::to_string(index) + " in place of " + describe(*old) +
                    ": expected its dtype and shape (on any device)");
  ChangeScope change(*this, reason);
  changeInputImpl(nullptr, static_cast<int>(index), newVar, reason, /*checkType=*/false);
}

void FunctionGraph::addOutput(const VarPtr& var, std::string_view reason) {
  if (!var) throw GraphError("addOutput: the variable is null");
  ChangeScope change(*this, reason);
  importVarImpl(var, reason);
  addClient(*var, Client{nullptr, static_cast<int>(m_outputs.size())});
  m_outputs.push_back(var);
}

// --- features ---

void FunctionGraph::attachFeature(std::shared_ptr<Feature> feature) {
  if (!feature) throw GraphError("attachFeature: the feature is null");
  if (std::find(m_features.begin(), m_features.end(), feature) != m_features.end()) return;
  m_features.push_back(feature);
  try {
    feature->onAttach(*this);
  } catch (...) {
    m_features.pop_back();
    throw;
  }
}

void FunctionGraph::detachFeature(const Feature& feature) {
  auto it = std::find_if(m_features.begin(), m_features.end(),
                         [&](const auto& f) { return f.get() == &feature; });
  if (it == m_features.end()) return;
  auto keep = *it;
  m_features.erase(it);
  keep->onDetach(*this);
}

void FunctionGraph::validate() const {
  for (const auto& f : m_features) f->validate(*this);
}

Orderings FunctionGraph::orderings() const {
  Orderings all;
  for (const auto& f : m_features)
    for (auto& [node, before] : f->orderings(*this)) {
      auto& dst = all[node];
      dst.insert(dst.end(), before.begin(), before.end());
    }
  return all;
}

// --- order, copies, checks ---

std::vector<Apply*> FunctionGraph::toposort() const {
  const Orderings extra = orderings();
  const std::size_t n = m_nodes.size();
  // First a compact adjacency (CSR, by slot) built in one pass over m_nodes, whose order follows
  // allocation order; the depth-first walk then runs on small arrays instead of chasing node and
  // variable pointers in data-flow order, which missed the cache on every step for large graphs.
  // Dependencies per node: its inputs' producers in input order, then its orderings.
  std::vector<std::uint32_t> offsets(n + 1, 0);
  std::vector<std::uint32_t> deps;
  deps.reserve(n * 2);
  for (std::size_t s = 0; s < n; ++s) {
    const Apply* node = m_nodes[s];
    for (const auto& in : node->inputs())
      if (const Apply* owner = in->owner(); owner && owner->fgraph() == this)
        deps.push_back(static_cast<std::uint32_t>(owner->m_slot));
    if (!extra.empty())
      if (auto it = extra.find(const_cast<Apply*>(node)); it != extra.end())
        for (const Apply* before : it->second)
          if (before && before->fgraph() == this)
            deps.push_back(static_cast<std::uint32_t>(before->m_slot));
    offsets[s + 1] = static_cast<std::uint32_t>(deps.size());
  }
  enum : std::uint8_t { kNew, kOpen, kDone };
  std::vector<std::uint8_t> state(n, kNew);
  std::vector<Apply*> order;
  order.reserve(n);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> stack;  // slot, next dependency position
  auto visit = [&](std::size_t root) {
    if (state[root] != kNew) return;
    state[root] = kOpen;
    stack.emplace_back(static_cast<std::uint32_t>(root), offsets[root]);
    while (!stack.empty()) {
      auto& [slot, k] = stack.back();
      if (k < offsets[slot + 1]) {
        std::uint32_t dep = deps[k++];
        if (state[dep] == kOpen) {
          std::string cycle;
          for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
            cycle += describe(*m_nodes[it->first]) + " <- ";
            if (it->first == dep) break;
          }
          throw GraphError("toposort: the graph has a cycle: " + cycle + describe(*m_nodes[slot]));
        }
        if (state[dep] == kNew) {
          state[dep] = kOpen;
          stack.emplace_back(dep, offsets[dep]);
        }
      } else {
        state[slot] = kDone;
        order.push_back(m_nodes[slot]);
        stack.pop_back();
      }
    }
  };
  for (const auto& out : m_outputs)
    if (const Apply* owner = out->owner(); owner && owner->fgraph() == this) visit(owner->m_slot);
  // Nodes no output needs (only orderings or zero-output nodes keep them) come last, in a
  // deterministic order.
  for (std::size_t s = 0; s < n; ++s) visit(s);
  return order;
}

std::unique_ptr<FunctionGraph> FunctionGraph::clone(CloneMap* map) const {
  // Copies indexed by slot: no hashing, one pass in topological order. A copied node's outputs are
  // remembered by address only (the node is held by nodeCopies): a handle per output would be
  // released in a last pass over every copied node, which a 100k-node graph no longer has in
  // cache by then. Inputs and constants, cloned on first use, are held in `detached`.
  std::vector<Variable*> copies(m_variables.size(), nullptr);
  std::vector<VarPtr> detached(m_variables.size());
  auto copyOf = [&](const VarPtr& v) -> VarPtr {
    const std::size_t s = v->m_slot;
    if (Variable* c = copies[s]) return c->owner() ? c->owner()->output(c->index()) : detached[s];
    detached[s] = v->cloneDetached();
    copies[s] = detached[s].get();
    return detached[s];
  };
  std::vector<Apply*> order = toposort();
  std::vector<ApplyPtr> nodeCopies;
  nodeCopies.reserve(order.size());
  std::vector<Apply*> copiedOrder;
  copiedOrder.reserve(order.size());
  std::vector<VarPtr> inputs, outputs;
  for (const auto& in : m_inputs) inputs.push_back(copyOf(in));
  for (const Apply* node : order) {
    std::vector<VarPtr> newInputs;
    newInputs.reserve(node->inputs().size());
    for (const auto& in : node->inputs()) newInputs.push_back(copyOf(in));
    ApplyPtr copy = node->cloneWithNewInputs(std::move(newInputs));
    for (int o = 0; o < node->nOutputs(); ++o)
      copies[node->outputRef(o).m_slot] = &copy->outputRef(o);
    copiedOrder.push_back(copy.get());
    nodeCopies.push_back(std::move(copy));
  }
  for (const auto& out : m_outputs) outputs.push_back(copyOf(out));
  auto copy = std::unique_ptr<FunctionGraph>(
      new FunctionGraph(Trusted{}, std::move(inputs), std::move(outputs), copiedOrder));
  copy->m_updates = m_updates;
  copy->m_nextId = std::max(copy->m_nextId, m_nextId);
  if (map) {
    map->variables.reserve(m_variables.size());
    map->nodes.reserve(order.size());
    for (const Variable* v : m_variables) {
      Variable* c = copies[v->m_slot];
      map->variables.set(v, c && c->owner() ? c->owner()->output(c->index()) : detached[v->m_slot]);
    }
    for (std::size_t i = 0; i < order.size(); ++i) map->nodes.set(order[i], nodeCopies[i]);
  }
  return copy;
}

}  // namespace tscope::engine
