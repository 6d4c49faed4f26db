#pragma once
// The state a DestroyHandler keeps (private to destroy_handler.cpp, which keeps the structure and
// checks rules 1-4, and destroy_handler_order.cpp, which keeps the order of Note [Incremental
// destroy validation]).

#include "engine/graph/destroy_handler.h"
#include "engine/graph/flat_hash_map.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tscope::engine {

namespace destroy_detail {

inline std::string describe(const Variable& v) {
  std::string out = "'" + v.displayName() + "'";
  if (v.id() >= 0) out += " (id " + std::to_string(v.id()) + ")";
  return out;
}

inline std::string describe(const Apply& node) {
  std::string out = node.op().str();
  if (node.id() >= 0) out += " (node " + std::to_string(node.id()) + ")";
  if (!node.site().empty()) out += " created at " + node.site().str();
  return out;
}

inline void sortById(std::vector<Apply*>& nodes) {
  std::sort(nodes.begin(), nodes.end(),
            [](const Apply* a, const Apply* b) { return a->id() < b->id(); });
}

template <class T>
void eraseValue(std::vector<T>& v, const T& x) {
  auto it = std::find(v.begin(), v.end(), x);
  if (it != v.end()) v.erase(it);
}

template <class K, class V>
std::vector<Apply*> keysById(const FlatHashMap<K, V>& map) {
  std::vector<Apply*> keys;
  keys.reserve(map.size());
  for (const auto& [key, value] : map) keys.push_back(const_cast<Apply*>(key));
  sortById(keys);
  return keys;
}

}  // namespace destroy_detail

struct DestroyHandler::State {
  FunctionGraph* fg = nullptr;
  std::vector<VarPtr> mutableList;
  FlatHashMap<const Variable*, bool> mutableSet;

  // Views: a viewMap output -> the input it views; a variable -> its views.
  FlatHashMap<const Variable*, Variable*> viewParent;
  FlatHashMap<const Variable*, std::vector<Variable*>> viewChildren;
  // Nodes with an output that views several different inputs (not supported: one root each).
  FlatHashMap<const Apply*, bool> multiViews;

  // Destroyer -> the inputs it destroys (sorted) and the roots it is listed under (null: that root
  // left the graph, relisting pends); root -> the destroyers listed under it.
  struct Destroyer {
    std::vector<int> inputs;
    std::vector<Variable*> roots;
  };
  FlatHashMap<const Apply*, Destroyer> destroyed;
  FlatHashMap<const Variable*, std::vector<Apply*>> byRoot;

  // Note [Incremental destroy validation].
  FlatHashMap<const Apply*, bool> dirty;
  FlatHashMap<const Apply*, bool> newEdges;
  std::size_t outputsSeen = 0;  // graph outputs whose readers were noted (addOutput has no event)
  std::int64_t spacing = 0;     // 0: the default spacing of a full check
  bool full = true;  // no positions yet (or they were given up): the next check is a full one
  FlatHashMap<const Apply*, std::int64_t> pos;
  FlatHashMap<std::int64_t, Apply*> atPos;

  std::size_t fullChecks = 0;
  std::size_t repairVisits = 0;

  void reset() {
    fg = nullptr;
    outputsSeen = 0;
    viewParent.clear();
    viewChildren.clear();
    multiViews.clear();
    destroyed.clear();
    byRoot.clear();
    dirty.clear();
    newEdges.clear();
    full = true;
    pos.clear();
    atPos.clear();
  }

  // --- structure ---

  Variable* root(const Variable& v) const {
    const Variable* cur = &v;
    std::size_t steps = 0;
    while (Variable* const* parent = viewParent.find(cur)) {
      cur = *parent;
      if (++steps > viewParent.size()) break;  // views in a data cycle: the order check reports it
    }
    return const_cast<Variable*>(cur);
  }

  // f(w) for r and every view of r.
  template <class F>
  void forEachView(Variable* r, F&& f) const {
    const std::vector<Variable*>* top = viewChildren.find(r);
    if (!top) {  // the usual case, without the stack's allocation
      f(*r);
      return;
    }
    std::vector<Variable*> stack{r};
    std::size_t budget = viewParent.size() + 1;  // terminates even on views in a data cycle
    while (!stack.empty()) {
      Variable* v = stack.back();
      stack.pop_back();
      f(*v);
      if (const std::vector<Variable*>* children = viewChildren.find(v))
        for (Variable* c : *children)
          if (budget-- > 0) stack.push_back(c);
    }
  }

  // Structure upkeep (destroy_handler.cpp).
  void unlinkChild(const Variable* parent, Variable* child);
  void linkView(Variable* out, Variable* in);
  void noteMultiView(Apply& node, const ViewMap& views);
  void registerViews(Apply& node);
  // (Re)lists a destroyer under the roots of the inputs it destroys and marks it dirty.
  void listDestroyer(Apply& node);
  void unlist(Apply& node, Destroyer& rec);
  void registerDestroyer(Apply& node);
  // A node (or graph output) now reads v: the destroyers of v's buffer get a new reader.
  void markReaders(const Variable& v);
  // The destroyers that destroy a view in out's subtree have a new root.
  void rerootSubtree(Variable* out);

  // --- rules 1-4 and the readers of rule 5 ---

  void checkRules(Apply& d) const;
  std::vector<Apply*> readersBefore(const Apply& d) const;

  // --- rule 5: positions (Note [Incremental destroy validation]) ---

  std::int64_t positionOf(const Apply& n) const {
    const std::int64_t* p = pos.find(&n);
    return p ? *p : -1;
  }
  void setPosition(Apply& n, std::int64_t p) {
    if (const std::int64_t* old = pos.find(&n))
      if (Apply* const* at = atPos.find(*old); at && *at == &n) atPos.erase(*old);
    pos.set(&n, p);
    atPos.set(p, &n);
  }
  void forgetPosition(const Apply& n) {
    if (const std::int64_t* old = pos.find(&n)) {
      if (Apply* const* at = atPos.find(*old); at && *at == &n) atPos.erase(*old);
      pos.erase(&n);
    }
  }

  template <class F>
  void forEachSuccessor(const Apply& x, F&& f) const {
    for (int o = 0; o < x.nOutputs(); ++o)
      for (const Client& c : fg->clients(x.outputRef(o)))
        if (c.node) f(*c.node);
    for (const VarPtr& in : x.inputs())
      if (const std::vector<Apply*>* list = byRoot.find(root(*in)))
        for (Apply* d : *list)
          if (d != &x) f(*d);
  }
  template <class F>
  void forEachPredecessor(const Apply& x, F&& f) const {
    for (const VarPtr& in : x.inputs())
      if (Apply* owner = in->owner(); owner && owner->fgraph() == fg) f(*owner);
    if (destroyed.contains(&x))
      for (Apply* r : readersBefore(x)) f(*r);
  }

  void fullCheck();
  std::vector<Apply*> topologicalOrder(bool withOrderings) const;
  bool placeNewNodes(const std::vector<Apply*>& fresh);
  bool ensureBefore(Apply& u, Apply& v, std::size_t& spent, std::size_t budget);
  // Moves nodes (sorted by position) into the open interval (lo, hi), spread out in their order;
  // false, changing nothing, when there is no room or a position there belongs to a node not in
  // `moving`.
  bool spreadInto(const std::vector<Apply*>& nodes, std::int64_t lo, std::int64_t hi,
                  const FlatHashMap<const Apply*, Apply*>& moving);
  bool repairIncrementally(const std::vector<Apply*>& dirtyList);
};

}  // namespace tscope::engine
