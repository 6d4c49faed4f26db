#include "engine/graph/destroy_handler.h"

#include "engine/graph/destroy_handler_state.h"
#include "engine/graph/errors.h"

#include <algorithm>
#include <string>

namespace tscope::engine {

using destroy_detail::describe;
using destroy_detail::eraseValue;
using destroy_detail::keysById;
using destroy_detail::sortById;

// --- structure ---

void DestroyHandler::State::unlinkChild(const Variable* parent, Variable* child) {
  if (std::vector<Variable*>* children = viewChildren.find(parent)) {
    eraseValue(*children, child);
    if (children->empty()) viewChildren.erase(parent);
  }
}

void DestroyHandler::State::linkView(Variable* out, Variable* in) {
  if (Variable** old = viewParent.find(out)) unlinkChild(*old, out);
  viewParent.set(out, in);
  viewChildren.tryEmplace(in).first->push_back(out);
}

void DestroyHandler::State::noteMultiView(Apply& node, const ViewMap& views) {
  multiViews.erase(&node);
  for (const auto& [o, ins] : views)
    for (int k : ins)
      if (node.input(k) != node.input(ins.front())) multiViews.set(&node, true);
}

void DestroyHandler::State::registerViews(Apply& node) {
  const ViewMap views = node.op().viewMap();
  for (const auto& [o, ins] : views)
    if (!ins.empty() && o >= 0 && o < node.nOutputs())
      linkView(&node.outputRef(o), node.input(ins.front()).get());
  if (!views.empty()) noteMultiView(node, views);
}

void DestroyHandler::State::listDestroyer(Apply& node) {
  Destroyer* rec = destroyed.find(&node);
  if (!rec) return;
  unlist(node, *rec);
  for (int i : rec->inputs) {
    Variable* r = root(*node.input(i));
    rec->roots.push_back(r);
    std::vector<Apply*>& list = *byRoot.tryEmplace(r).first;
    if (std::find(list.begin(), list.end(), &node) == list.end()) list.push_back(&node);
  }
  dirty.set(&node, true);
}

void DestroyHandler::State::unlist(Apply& node, Destroyer& rec) {
  for (Variable* r : rec.roots) {
    if (!r) continue;
    if (std::vector<Apply*>* list = byRoot.find(r)) {
      eraseValue(*list, &node);
      if (list->empty()) byRoot.erase(r);
    }
  }
  rec.roots.clear();
}

void DestroyHandler::State::registerDestroyer(Apply& node) {
  const DestroyMap dm = node.op().destroyMap();
  if (dm.empty()) return;
  std::vector<int> idx;
  for (const auto& [o, ins] : dm)
    for (int i : ins)
      if (i >= 0 && i < node.nInputs()) idx.push_back(i);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  if (idx.empty()) return;
  destroyed.tryEmplace(&node).first->inputs = std::move(idx);  // set() would copy the vector
  listDestroyer(node);
}

void DestroyHandler::State::markReaders(const Variable& v) {
  if (const std::vector<Apply*>* list = byRoot.find(root(v)))
    for (Apply* d : *list) dirty.set(d, true);
}

void DestroyHandler::State::rerootSubtree(Variable* out) {
  std::vector<Apply*> moved;
  forEachView(out, [&](Variable& w) {
    if (w.fgraph() != fg) return;
    for (const Client& c : fg->clients(w))
      if (c.node && destroyed.contains(c.node)) moved.push_back(c.node);
  });
  for (Apply* d : moved) listDestroyer(*d);
}

// --- rules ---

void DestroyHandler::State::checkRules(Apply& d) const {
  const std::vector<int>& idx = destroyed.find(&d)->inputs;
  for (std::size_t a = 0; a < idx.size(); ++a) {
    const int i = idx[a];
    const Variable& var = *d.input(i);
    Variable* r = root(var);
    // Built only for a refusal: validate() runs once per switch of the inplace pass.
    auto what = [&] {
      return "DestroyHandler: " + describe(d) + " overwrites its input " + std::to_string(i) + " " +
             describe(var) + (r == &var ? "" : ", a view of " + describe(*r) + ",");
    };
    // Rule 1.
    if (!r->owner()) {
      if (r->kind() == Variable::Kind::Constant)
        throw InconsistencyError(what() + " which is a constant; constants are never overwritten");
      if (!mutableSet.contains(r))
        throw InconsistencyError(
            what() + " which is a graph input; the caller's values are never overwritten " +
            "(setMutableInputs() lists the inputs that may be)");
    }
    // Rule 3.
    for (std::size_t b = a + 1; b < idx.size(); ++b)
      if (root(*d.input(idx[b])) == r)
        throw InconsistencyError(what() + " and also its input " + std::to_string(idx[b]) + " " +
                                 describe(*d.input(idx[b])) +
                                 ", which shares that buffer; a buffer is overwritten once");
    if (const std::vector<Apply*>* list = byRoot.find(r)) {
      std::vector<Apply*> others;
      for (Apply* o : *list)
        if (o != &d) others.push_back(o);
      if (!others.empty()) {
        sortById(others);
        throw InconsistencyError(what() + " which " + describe(*others.front()) +
                                 " overwrites too; a buffer has at most one destroyer");
      }
    }
    // Rule 4.
    for (int j = 0; j < d.nInputs(); ++j) {
      const Variable& other = *d.input(j);
      if (j == i || &other == &var || root(other) != r) continue;
      throw InconsistencyError(what() + " while it reads the same buffer through its input " +
                               std::to_string(j) + " " + describe(other) +
                               ", which would change under it");
    }
    // Rule 2.
    forEachView(r, [&](Variable& w) {
      if (w.fgraph() != fg) return;
      for (const Client& c : fg->clients(w))
        if (c.isOutput())
          throw InconsistencyError(what() + " but " + describe(w) + " is graph output " +
                                   std::to_string(c.index) + " and would be returned overwritten");
    });
  }
}

std::vector<Apply*> DestroyHandler::State::readersBefore(const Apply& d) const {
  std::vector<Apply*> readers;
  const Destroyer* rec = destroyed.find(&d);
  if (!rec) return readers;
  // The destroyer and the producers of its inputs run before it anyway.
  FlatHashMap<const Apply*, bool> seen;
  seen.set(&d, true);
  for (const VarPtr& in : d.inputs())
    if (in->owner()) seen.set(in->owner(), true);
  for (int i : rec->inputs)
    forEachView(root(*d.input(i)), [&](Variable& w) {
      if (w.fgraph() != fg) return;
      for (const Client& c : fg->clients(w))
        if (c.node && seen.tryEmplace(c.node, true).second) readers.push_back(c.node);
    });
  sortById(readers);
  return readers;
}

// --- DestroyHandler ---

DestroyHandler::DestroyHandler() : m_state(std::make_unique<State>()) {}
DestroyHandler::~DestroyHandler() = default;

void DestroyHandler::setMutableInputs(std::vector<VarPtr> inputs) {
  State& s = *m_state;
  s.mutableList = std::move(inputs);
  s.mutableSet.clear();
  for (const VarPtr& v : s.mutableList)
    if (v) s.mutableSet.set(v.get(), true);
  for (const auto& [d, idx] : s.destroyed) s.dirty.set(d, true);
}

const std::vector<VarPtr>& DestroyHandler::mutableInputs() const {
  return m_state->mutableList;
}

Variable* DestroyHandler::viewRoot(const Variable& var) const {
  return m_state->root(var);
}

std::vector<Apply*> DestroyHandler::destroyersOf(const Variable& var) const {
  const std::vector<Apply*>* list = m_state->byRoot.find(m_state->root(var));
  std::vector<Apply*> out = list ? *list : std::vector<Apply*>{};
  sortById(out);
  return out;
}

bool DestroyHandler::isProtected(const Variable& var) const {
  const State& s = *m_state;
  Variable* r = s.root(var);
  if (!r->owner() && (r->kind() == Variable::Kind::Constant || !s.mutableSet.contains(r)))
    return true;
  bool output = false;
  s.forEachView(r, [&](Variable& w) {
    if (output || w.fgraph() != s.fg) return;
    for (const Client& c : s.fg->clients(w)) output = output || c.isOutput();
  });
  return output;
}

bool DestroyHandler::isDestroyer(const Apply& node) const {
  return m_state->destroyed.contains(&node);
}
std::size_t DestroyHandler::destroyerCount() const {
  return m_state->destroyed.size();
}
std::vector<Apply*> DestroyHandler::readersBefore(const Apply& node) const {
  return m_state->readersBefore(node);
}
std::size_t DestroyHandler::fullChecks() const {
  return m_state->fullChecks;
}
std::size_t DestroyHandler::repairVisits() const {
  return m_state->repairVisits;
}

void DestroyHandler::setOrderSpacing(std::int64_t gap) {
  m_state->spacing = std::max<std::int64_t>(gap, 0);
  m_state->full = true;
}

void DestroyHandler::onAttach(FunctionGraph& fg) {
  State& s = *m_state;
  if (s.fg && s.fg != &fg) throw GraphError("DestroyHandler: already attached to another graph");
  for (const auto& f : fg.features())
    if (f.get() != this && dynamic_cast<const DestroyHandler*>(f.get()))
      throw GraphError(
          "DestroyHandler: the graph already has one; each would miss the other's destroyers");
  s.reset();
  s.fg = &fg;
  // Views first: listing a destroyer follows the view chains above it.
  for (Apply* node : fg.nodes()) s.registerViews(*node);
  for (Apply* node : fg.nodes()) s.registerDestroyer(*node);
  s.outputsSeen = fg.outputs().size();
}

void DestroyHandler::onDetach(FunctionGraph&) {
  m_state->reset();
}

void DestroyHandler::onImport(FunctionGraph&, Apply& node, std::string_view) {
  State& s = *m_state;
  s.registerViews(node);
  s.registerDestroyer(node);
  for (const VarPtr& in : node.inputs()) s.markReaders(*in);
  if (!s.full) s.newEdges.set(&node, true);
}

void DestroyHandler::onPrune(FunctionGraph&, Apply& node, std::string_view) {
  State& s = *m_state;
  if (State::Destroyer* rec = s.destroyed.find(&node)) {
    s.unlist(node, *rec);
    s.destroyed.erase(&node);
  }
  s.dirty.erase(&node);
  s.newEdges.erase(&node);
  s.multiViews.erase(&node);
  s.forgetPosition(node);
  for (int o = 0; o < node.nOutputs(); ++o) {
    Variable* out = &node.outputRef(o);
    // Destroyers still listed under a root that leaves are relisted by the input change that
    // made it leave (Note [Incremental destroy validation]).
    if (std::vector<Apply*>* list = s.byRoot.find(out)) {
      for (Apply* d : *list) {
        s.dirty.set(d, true);
        if (State::Destroyer* rec = s.destroyed.find(d))
          for (Variable*& r : rec->roots)
            if (r == out) r = nullptr;
      }
      s.byRoot.erase(out);
    }
    if (Variable** parent = s.viewParent.find(out)) {
      s.unlinkChild(*parent, out);
      s.viewParent.erase(out);
    }
    // Views still listed under it belong to nodes whose input is being changed away from it.
    s.viewChildren.erase(out);
  }
}

void DestroyHandler::onChangeInput(FunctionGraph&, Apply* node, int index, const VarPtr&,
                                   const VarPtr& newVar, std::string_view) {
  State& s = *m_state;
  s.markReaders(*newVar);  // rule 5's readers, or rule 2 for a graph output
  if (!node) return;
  bool isView = false;
  for (int o = 0; o < node->nOutputs() && !isView; ++o)
    isView = s.viewParent.contains(&node->outputRef(o));
  if (isView) {
    const ViewMap views = node->op().viewMap();
    for (const auto& [o, ins] : views) {
      if (ins.empty() || ins.front() != index || o < 0 || o >= node->nOutputs()) continue;
      Variable* out = &node->outputRef(o);
      s.linkView(out, newVar.get());
      s.rerootSubtree(out);
    }
    s.noteMultiView(*node, views);
  }
  if (s.destroyed.contains(node)) s.listDestroyer(*node);  // its root, or rule 4's other inputs
  if (!s.full) s.newEdges.set(node, true);
}

Orderings DestroyHandler::orderings(const FunctionGraph&) const {
  Orderings out;
  for (Apply* d : keysById(m_state->destroyed)) {
    std::vector<Apply*> readers = m_state->readersBefore(*d);
    if (!readers.empty()) out.emplace(d, std::move(readers));
  }
  return out;
}

void DestroyHandler::validate(const FunctionGraph& fg) const {
  State& s = *m_state;
  if (s.fg != &fg)
    throw GraphError("DestroyHandler::validate: the handler is not attached to this graph");
  for (; s.outputsSeen < fg.outputs().size(); ++s.outputsSeen)
    s.markReaders(*fg.outputs()[s.outputsSeen]);
  if (s.full && s.destroyed.empty())
    return;  // nothing destroyed, no orderings, no positions to keep
  if (!s.destroyed.empty() && !s.multiViews.empty()) {
    std::vector<Apply*> nodes = keysById(s.multiViews);
    throw InconsistencyError(
        "DestroyHandler: " + describe(*nodes.front()) +
        " has an output that views several inputs; the handler tracks one viewed input per "
        "output, so the graph cannot hold inplace operations");
  }
  if (s.full) {
    s.fullCheck();
    return;
  }
  if (s.dirty.empty() && s.newEdges.empty()) return;
  const std::vector<Apply*> dirty = keysById(s.dirty);
  for (Apply* d : dirty) s.checkRules(*d);
  if (!s.repairIncrementally(dirty)) {
    s.fullCheck();
    return;
  }
  s.dirty.clear();
  s.newEdges.clear();
}

}  // namespace tscope::engine
