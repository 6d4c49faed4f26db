#include "engine/graph/destroy_handler.h"
#include "engine/graph/destroy_handler_state.h"
#include "engine/graph/errors.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace tscope::engine {

// Note [Incremental destroy validation]: checking rule 5 (no cycle through the orderings) from
// scratch is a topological sort of the whole graph; the inplace pass validates once per node it
// switches, so that would make it quadratic. Instead the handler keeps, once it has been computed,
// a position for every node such that every edge (data edges and the readers-before-destroyer
// orderings) goes from a lower to a higher position: a dynamic topological order. An edge that
// fits the positions cannot close a cycle, so validate() only looks at what the events since the
// last successful validate() touched:
//   - a new node gets a free position between its latest producer and its earliest client (the
//     positions of a full check are far apart, so there is room: a node switched to its inplace
//     twin takes the old node's place and its edges fit at once);
//   - the input edges of nodes that were imported or had an input changed, and the ordering edges
//     of "dirty" destroyers (imported, an input changed, their root changed, or a node started
//     reading their root), are compared with the positions;
//   - an edge u -> v that does not fit (u after v) is repaired: two searches inside the window
//     between the two positions, forward from v and backward from u, advance in turn; meeting u
//     (or v) is a cycle. The side that completes first is usually small (a reader scheduled late
//     that depends on nothing in between) and moves past the other end of the window into free
//     positions; without room, both searches complete and the window's positions are reassigned,
//     the backward side first (Pearce and Kelly's dynamic topological sort).
// What a validation verified leaves the pending sets at once, so a refused change (which the
// caller reverts) leaves nothing to re-check. Rules 1-4 are re-checked for the dirty destroyers
// only: they depend on the destroyer's inputs, its root and the root's views, and every event that
// can change those marks it dirty. The structure itself (view parents and children, the
// destroyers listed under each root) is updated eagerly by the events, so it is exact between
// changes. Work is bounded: a validation whose repairs visit more than about twice the graph's
// nodes falls back to the full check, which costs one topological sort.

namespace {

// A full check spreads the positions this far apart (less for graphs of millions of nodes), so
// that nodes placed later find free positions between any two.
constexpr std::int64_t kMaxGap = std::int64_t{1} << 40;
constexpr int kProbeLimit = 64;  // free-position probes for a new node before a full check

}  // namespace

using destroy_detail::describe;
using destroy_detail::keysById;

// --- order ---

std::vector<Apply*> DestroyHandler::State::topologicalOrder(bool withOrderings) const {
  const std::vector<Apply*>& nodes = fg->nodes();
  FlatHashMap<const Apply*, std::vector<Apply*>> before;
  if (withOrderings)
    for (const auto& [d, idx] : destroyed) *before.tryEmplace(d).first = readersBefore(*d);
  enum : std::uint8_t { kOpen = 1, kDone = 2 };
  FlatHashMap<const Apply*, std::uint8_t> state(nodes.size());
  std::vector<Apply*> order;
  order.reserve(nodes.size());
  // (node, next dependency): the inputs' producers first, then the orderings.
  std::vector<std::pair<Apply*, std::size_t>> stack;
  auto dependency = [&](Apply* n, std::size_t k) -> Apply* {
    if (k < static_cast<std::size_t>(n->nInputs())) {
      Apply* owner = n->input(static_cast<int>(k))->owner();
      return owner && owner->fgraph() == fg ? owner : nullptr;
    }
    return (*before.find(n))[k - static_cast<std::size_t>(n->nInputs())];
  };
  auto count = [&](Apply* n) {
    const std::vector<Apply*>* b = before.find(n);
    return static_cast<std::size_t>(n->nInputs()) + (b ? b->size() : 0);
  };
  for (Apply* start : nodes) {
    if (state.contains(start)) continue;
    state.set(start, kOpen);
    stack.emplace_back(start, 0);
    while (!stack.empty()) {
      Apply* n = stack.back().first;
      const std::size_t k = stack.back().second;
      if (k < count(n)) {
        ++stack.back().second;
        Apply* dep = dependency(n, k);
        if (!dep) continue;
        const std::uint8_t* s = state.find(dep);
        if (s && *s == kOpen) {
          std::string cycle;
          for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
            cycle += describe(*it->first) + " <- ";
            if (it->first == dep) break;
          }
          throw InconsistencyError(
              "DestroyHandler: the graph with its readers-before-destroyer orderings has a "
              "cycle: " +
              cycle + describe(*n));
        }
        if (!s) {
          state.set(dep, kOpen);
          stack.emplace_back(dep, 0);
        }
      } else {
        state.set(n, kDone);
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  return order;
}

void DestroyHandler::State::fullCheck() {
  ++fullChecks;
  std::vector<Apply*> order;
  std::string cycle;
  try {
    order = topologicalOrder(/*withOrderings=*/true);
  } catch (const InconsistencyError& e) {
    // Keep positions for the data edges alone, with every destroyer left to check, so that the
    // validation after the offending change is undone stays incremental.
    cycle = e.what();
    order = topologicalOrder(/*withOrderings=*/false);
  }
  pos.clear();
  atPos.clear();
  pos.reserve(order.size());
  atPos.reserve(order.size());
  const std::int64_t gap =
      spacing > 0
          ? spacing
          : std::clamp<std::int64_t>(
                (std::int64_t{1} << 62) / static_cast<std::int64_t>(order.size() + 2), 1, kMaxGap);
  for (std::size_t k = 0; k < order.size(); ++k)
    setPosition(*order[k], static_cast<std::int64_t>(k + 1) * gap);
  full = false;
  newEdges.clear();
  for (const auto& [d, idx] : destroyed) dirty.set(d, true);
  // Rules 1-4 first: their messages say more than the cycle's.
  for (Apply* d : keysById(destroyed)) checkRules(*d);
  if (!cycle.empty()) throw InconsistencyError(cycle);
  dirty.clear();
}

bool DestroyHandler::State::placeNewNodes(const std::vector<Apply*>& fresh) {
  // The first free position after the latest producer; false when every producer is not placed
  // yet (unplaced producers count as position 0 when `force`) or the probes run out.
  auto place = [&](Apply& n, bool force) {
    std::int64_t lo = 0, hi = std::numeric_limits<std::int64_t>::max();
    for (const VarPtr& in : n.inputs())
      if (Apply* owner = in->owner(); owner && owner->fgraph() == fg) {
        const std::int64_t q = positionOf(*owner);
        if (q < 0 && !force) return false;
        lo = std::max(lo, q);
      }
    for (int o = 0; o < n.nOutputs(); ++o)
      for (const Client& c : fg->clients(n.outputRef(o)))
        if (const std::int64_t q = c.node ? positionOf(*c.node) : -1; q > 0) hi = std::min(hi, q);
    // Midway between the latest producer and the earliest placed client when there is room (a
    // node switched to its twin takes the old node's place), else just after the producer.
    std::int64_t p = hi != std::numeric_limits<std::int64_t>::max() && hi - lo >= 2
                         ? lo + (hi - lo) / 2
                         : lo + 1;
    for (int probes = 0; atPos.contains(p); ++p)
      if (++probes > kProbeLimit) return false;
    setPosition(n, p);
    return true;
  };
  // Producers before consumers: a depth-first walk over the new nodes' unplaced producers, for
  // the nodes whose producers are not all placed already.
  FlatHashMap<const Apply*, bool> open;
  std::vector<std::pair<Apply*, int>> stack;
  for (Apply* first : fresh) {
    if (pos.contains(first) || place(*first, false)) continue;
    open.set(first, true);
    stack.emplace_back(first, 0);
    while (!stack.empty()) {
      Apply* n = stack.back().first;
      const int k = stack.back().second;
      if (k < n->nInputs()) {
        ++stack.back().second;
        Apply* owner = n->input(k)->owner();
        if (!owner || owner->fgraph() != fg || pos.contains(owner) || open.contains(owner))
          continue;
        if (!newEdges.contains(owner)) return false;  // a node without a position that is not new
        open.set(owner, true);
        stack.emplace_back(owner, 0);
        continue;
      }
      // A producer still open is on a data cycle: the edge checks report it.
      if (!place(*n, true)) return false;
      stack.pop_back();
    }
  }
  return true;
}

bool DestroyHandler::State::spreadInto(const std::vector<Apply*>& nodes, std::int64_t lo,
                                       std::int64_t hi,
                                       const FlatHashMap<const Apply*, Apply*>& moving) {
  const auto m = static_cast<std::int64_t>(nodes.size());
  if (hi - lo <= m) return false;
  const std::int64_t step = (hi - lo) / (m + 1);
  for (std::int64_t k = 1; k <= m; ++k)
    if (Apply* const* at = atPos.find(lo + step * k); at && !moving.contains(*at)) return false;
  for (Apply* n : nodes) forgetPosition(*n);
  for (std::int64_t k = 0; k < m; ++k)
    setPosition(*nodes[static_cast<std::size_t>(k)], lo + step * (k + 1));
  return true;
}

bool DestroyHandler::State::ensureBefore(Apply& u, Apply& v, std::size_t& spent,
                                         std::size_t budget) {
  const std::int64_t ub = positionOf(u), lb = positionOf(v);
  if (ub < 0 || lb < 0) return false;
  if (ub < lb) return true;
  if (&u == &v)
    throw InconsistencyError("DestroyHandler: " + describe(u) + " would have to run before itself");
  auto cycle = [&](const std::string& path) {
    return InconsistencyError("DestroyHandler: " + describe(u) + " must run before " + describe(v) +
                              " (a data edge, or it reads the buffer " + describe(v) +
                              " overwrites), but it depends on it: " + path);
  };
  // Two searches inside the window (lb, ub), one step each in turn: forward from v and backward
  // from u; each node remembers the node it was reached from, to name a cycle. The side that
  // completes first is usually small: moving it past the other end of the window (v's side after
  // u, or u's side before v) repairs the order; only when there is no room do both searches run to
  // the end for Pearce and Kelly's reassignment of the window's positions.
  FlatHashMap<const Apply*, Apply*> forward, backward;
  std::vector<Apply*> fset, bset, fstack{&v}, bstack{&u};
  forward.set(&v, nullptr);
  backward.set(&u, nullptr);
  std::int64_t above =
      std::numeric_limits<std::int64_t>::max();  // the lowest successor of F after the window
  std::int64_t below = 0;                        // the highest predecessor of B before it
  bool forwardTried = false, backwardTried = false;
  auto byPos = [&](const Apply* a, const Apply* b) { return positionOf(*a) < positionOf(*b); };
  while (!forwardTried || !backwardTried) {
    if (!fstack.empty()) {
      Apply* x = fstack.back();
      fstack.pop_back();
      fset.push_back(x);
      ++spent;
      forEachSuccessor(*x, [&](Apply& y) {
        if (&y == &u) {
          std::string path = describe(u);
          for (Apply* step = x; step; step = *forward.find(step))
            path = describe(*step) + " -> " + path;
          throw cycle(path);
        }
        const std::int64_t py = positionOf(y);
        if (py >= ub)
          above = std::min(above, py);
        else if (py > lb && forward.tryEmplace(&y, x).second)
          fstack.push_back(&y);
      });
    } else if (!forwardTried) {
      forwardTried = true;
      std::sort(fset.begin(), fset.end(), byPos);
      const std::int64_t hi = above != std::numeric_limits<std::int64_t>::max()
                                  ? above
                                  : ub + 1024 * static_cast<std::int64_t>(fset.size() + 1);
      if (spreadInto(fset, ub, hi, forward)) return true;
    }
    if (!bstack.empty()) {
      Apply* x = bstack.back();
      bstack.pop_back();
      bset.push_back(x);
      ++spent;
      forEachPredecessor(*x, [&](Apply& y) {
        if (&y == &v) {
          std::string path = describe(v);
          for (Apply* step = x; step; step = *backward.find(step)) path += " -> " + describe(*step);
          throw cycle(path);
        }
        const std::int64_t py = positionOf(y);
        if (py <= lb)
          below = std::max(below, py);
        else if (py < ub && backward.tryEmplace(&y, x).second)
          bstack.push_back(&y);
      });
    } else if (!backwardTried) {
      backwardTried = true;
      std::sort(bset.begin(), bset.end(), byPos);
      if (spreadInto(bset, below, lb, backward)) return true;
    }
    if (spent > budget) return false;
  }
  // Pearce and Kelly: the window's positions, lowest first to the backward set, then to the
  // forward set, each in its old order.
  std::vector<std::int64_t> slots;
  slots.reserve(fset.size() + bset.size());
  for (Apply* n : bset) slots.push_back(positionOf(*n));
  for (Apply* n : fset) slots.push_back(positionOf(*n));
  std::sort(slots.begin(), slots.end());
  for (Apply* n : bset) forgetPosition(*n);
  for (Apply* n : fset) forgetPosition(*n);
  std::size_t k = 0;
  for (Apply* n : bset) setPosition(*n, slots[k++]);
  for (Apply* n : fset) setPosition(*n, slots[k++]);
  return true;
}

bool DestroyHandler::State::repairIncrementally(const std::vector<Apply*>& dirtyList) {
  const std::vector<Apply*> fresh = keysById(newEdges);
  if (!placeNewNodes(fresh)) return false;
  const std::size_t budget = std::max<std::size_t>(2 * fg->nodeCount(), 4096);
  std::size_t spent = 0;
  struct Count {  // repairVisits counts the work even when a cycle is thrown
    std::size_t& total;
    std::size_t& spent;
    ~Count() { total += spent; }
  } count{repairVisits, spent};
  // What is verified leaves the pending sets at once: a refusal later in this validation (which
  // its caller usually reverts) must not leave it to be checked again and again.
  for (Apply* n : fresh) {
    for (const VarPtr& in : n->inputs())
      if (Apply* owner = in->owner(); owner && owner->fgraph() == fg)
        if (!ensureBefore(*owner, *n, spent, budget)) return false;
    newEdges.erase(n);
  }
  for (Apply* d : dirtyList) {
    for (Apply* r : readersBefore(*d))
      if (!ensureBefore(*r, *d, spent, budget)) return false;
    dirty.erase(d);
  }
  return true;
}

bool DestroyHandler::orderConsistent() const {
  const State& s = *m_state;
  if (s.full || !s.fg) return true;
  for (const Apply* n : s.fg->nodes()) {
    const std::int64_t p = s.positionOf(*n);
    if (p <= 0) return false;
    if (const Apply* const* at = s.atPos.find(p); !at || *at != n) return false;
    bool fits = true;
    auto check = [&](const Apply& before, const Apply& after) {
      fits = fits && (s.newEdges.contains(&after) || s.positionOf(before) < s.positionOf(after));
    };
    for (const VarPtr& in : n->inputs())
      if (const Apply* owner = in->owner(); owner && owner->fgraph() == s.fg) check(*owner, *n);
    if (s.destroyed.contains(n) && !s.dirty.contains(n))
      for (const Apply* r : s.readersBefore(*n)) check(*r, *n);
    if (!fits) return false;
  }
  return s.pos.size() == s.fg->nodeCount() && s.atPos.size() == s.pos.size();
}

}  // namespace tscope::engine
