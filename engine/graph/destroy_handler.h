#pragma once
// DestroyHandler: the feature that makes inplace operations safe (Theano's DestroyHandler).
//   auto dh = std::make_shared<DestroyHandler>(); fg.attachFeature(dh);
//   fg.replace(y, addInplace(x, 1), "inplace");  dh->validate(fg);  // throws when unsafe
//   fg.toposort();  // every reader of x's buffer runs before the node that overwrites it
//
// Note [Destroy handler invariant]: buffers are tracked by *view root*. A viewMap output shares
// its (first) viewed input's buffer, so its root is that input's root; any other variable is its
// own root. A destroyMap output physically lives in the buffer it overwrote, but it starts a new
// *version* of that buffer: every reader of the old version runs before the destroyer (below), so
// nothing can observe the old contents afterwards, and the output is therefore a new root (this
// is what lets chains of inplace ops, each destroying its predecessor's output, coexist). The
// views of a root are the root and every variable whose root it is. When validate() returns, for
// every destroyer D and every input i that D's destroyMap names, with r the root of input i:
//   1. r is no graph input (unless setMutableInputs() lists it) and no constant: the caller's
//      tensors and the graph's constants are never overwritten, not even through a view;
//   2. no view of r is a graph output: the caller would see the overwritten contents;
//   3. D is the only node that destroys r, and it destroys it through one input only;
//   4. D reads r through no other variable than input i itself (the same variable twice, as in
//      add(x, x), is read element by element before it is written; another view, such as x.T,
//      would be overwritten while it is read);
//   5. orderings() puts every reader of r (a client of any view of r) other than D and the
//      producers of D's inputs before D, and the data edges plus these orderings have no cycle.
// The structure (roots, views, destroyers) is kept up to date by every event; validate() re-checks
// only what changed since it last passed (Note [Incremental destroy validation] in
// destroy_handler_order.cpp).

#include "engine/graph/feature.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tscope::engine {

class DestroyHandler final : public Feature {
 public:
  DestroyHandler();
  ~DestroyHandler() override;
  DestroyHandler(const DestroyHandler&) = delete;
  DestroyHandler& operator=(const DestroyHandler&) = delete;

  // Graph inputs whose buffers may be destroyed (Theano's mutable inputs: a caller that hands its
  // tensor over). Default: none. Takes effect at the next validate().
  void setMutableInputs(std::vector<VarPtr> inputs);
  const std::vector<VarPtr>& mutableInputs() const;

  // --- Queries on the current structure (the graph this handler is attached to) ---
  // The variable whose buffer var shares (Note [Destroy handler invariant]); var itself when it is
  // not a view.
  Variable* viewRoot(const Variable& var) const;
  // The nodes that destroy the buffer var shares, by id; empty when none.
  std::vector<Apply*> destroyersOf(const Variable& var) const;
  // Whether rules 1 and 2 forbid destroying var's buffer whatever else changes: its root is a
  // graph input that is not mutable or a constant, or one of the root's views is a graph output.
  bool isProtected(const Variable& var) const;
  bool isDestroyer(const Apply& node) const;
  std::size_t destroyerCount() const;
  // The readers of the buffer that node destroys that must run before it (rule 5), by id.
  std::vector<Apply*> readersBefore(const Apply& node) const;

  // How many validations checked the whole graph (every destroyer and a fresh order) rather than
  // what changed, and how many nodes the incremental order repairs visited; for tests and profiles.
  std::size_t fullChecks() const;
  std::size_t repairVisits() const;
  // Testing knobs for Note [Incremental destroy validation]: the distance between the positions a
  // full check hands out (0: the default, far apart; 1: packed, which forces the repairs that
  // reassign positions), and whether the kept positions fit every edge that is not pending
  // (true while none are kept). orderConsistent() walks the whole graph.
  void setOrderSpacing(std::int64_t gap);
  bool orderConsistent() const;

  // --- Feature ---
  // Refuses a second DestroyHandler on one graph, and a graph other than the one it is on.
  void onAttach(FunctionGraph& fg) override;
  void onDetach(FunctionGraph& fg) override;
  void onImport(FunctionGraph& fg, Apply& node, std::string_view reason) override;
  void onPrune(FunctionGraph& fg, Apply& node, std::string_view reason) override;
  void onChangeInput(FunctionGraph& fg, Apply* node, int index, const VarPtr& oldVar,
                     const VarPtr& newVar, std::string_view reason) override;
  // Destroyer -> the other readers of the buffer it destroys.
  Orderings orderings(const FunctionGraph& fg) const override;
  // Throws InconsistencyError naming the nodes, ops and variables of the first broken rule.
  void validate(const FunctionGraph& fg) const override;

 private:
  struct State;
  std::unique_ptr<State> m_state;  // validate() is const but updates the caches it keeps here
};

}  // namespace tscope::engine
