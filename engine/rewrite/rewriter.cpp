#include "engine/rewrite/rewriter.h"

#include "engine/graph/config.h"
#include "engine/graph/errors.h"
#include "engine/graph/flat_hash_map.h"
#include "engine/graph/history.h"
#include "engine/graph/op.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/rewrite/shape_feature.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
#include <unordered_map>
#include <unordered_set>

namespace tscope::engine {

namespace {

class FnNodeRewriter final : public NodeRewriter {
 public:
  FnNodeRewriter(std::string name, std::vector<std::string> tracks, NodeRewriteFn fn)
      : NodeRewriter(std::move(name), std::move(tracks)), m_fn(std::move(fn)) {}
  Replacements transform(RewriteContext& ctx, Apply& node) override { return m_fn(ctx, node); }

 private:
  NodeRewriteFn m_fn;
};

class FnGraphRewriter final : public GraphRewriter {
 public:
  FnGraphRewriter(std::string name, GraphRewriteFn fn)
      : GraphRewriter(std::move(name)), m_fn(std::move(fn)) {}
  std::size_t apply(RewriteContext& ctx) override { return m_fn(ctx); }

 private:
  GraphRewriteFn m_fn;
};

using Clock = std::chrono::steady_clock;

// Note [Rewrite timing]: every transform() call is timed, millions per compile of a big graph, so
// the clock must be cheap: the time-stamp counter where there is one (against ~40 ns for
// steady_clock), converted to seconds with the rate measured over the whole phase. Even rdtsc costs
// about 20 ns on this project's virtual machines, a tenth of a compile when each attempt read it
// twice, so the attempts on one node share their boundaries: one read ends an attempt and starts
// the next.
#if defined(__x86_64__) || defined(__i386__)
std::uint64_t ticks() {
  return __rdtsc();
}
#else
std::uint64_t ticks() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}
#endif

std::string describeVar(const Variable& v) {
  std::string s = v.displayName() + " : " + v.type().str();
  if (v.owner()) s += " (output of " + v.owner()->op().str() + ")";
  return s;
}

// Note [Rewritten nodes keep their scope]: the nodes a rewrite builds are created inside the
// optimizer, outside the user's NameScope guards, so they would land at the top level of the
// viewer's grouping. Like Theano's copy_stack_trace, a new node without a scope takes the scope of
// the node whose output it replaces; the walk stops at variables already in the graph.
void inheritScope(const VarPtr& newVar, const Variable& oldVar) {
  const Apply* oldOwner = oldVar.owner();
  if (!oldOwner || oldOwner->scope().empty()) return;
  std::vector<Apply*> stack;
  std::unordered_set<const Apply*> seen;
  if (Apply* a = newVar->owner(); a && !a->fgraph()) stack.push_back(a);
  while (!stack.empty()) {
    Apply* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    if (node->scope().empty()) {
      node->setScope(oldOwner->scope());
      for (int k = 0; k < node->nOutputs(); ++k)
        if (node->outputRef(k).scope().empty()) node->outputRef(k).setScope(oldOwner->scope());
    }
    for (const VarPtr& in : node->inputs())
      if (Apply* a = in->owner(); a && !a->fgraph()) stack.push_back(a);
  }
}

}  // namespace

NodeRewriterPtr nodeRewriter(std::string name, std::vector<std::string> tracks, NodeRewriteFn fn) {
  return std::make_shared<FnNodeRewriter>(std::move(name), std::move(tracks), std::move(fn));
}

GraphRewriterPtr graphRewriter(std::string name, GraphRewriteFn fn) {
  return std::make_shared<FnGraphRewriter>(std::move(name), std::move(fn));
}

GraphRewriterPtr sequence(std::string name, std::vector<GraphRewriterPtr> steps) {
  for (const auto& step : steps)
    if (!step) throw std::invalid_argument("sequence '" + name + "': a step is null");
  return graphRewriter(std::move(name), [steps = std::move(steps)](RewriteContext& ctx) {
    std::size_t changes = 0;
    for (const auto& step : steps) changes += step->apply(ctx);
    return changes;
  });
}

GraphRewriterPtr equilibrium(std::string name, std::vector<NodeRewriterPtr> rewriters) {
  for (const auto& r : rewriters)
    if (!r) throw std::invalid_argument("equilibrium '" + name + "': a rewriter is null");
  auto label = name;
  return graphRewriter(std::move(name),
                       [label = std::move(label), rewriters = std::move(rewriters)](
                           RewriteContext& ctx) { return runEquilibrium(ctx, label, rewriters); });
}

// --- RewriteContext ------------------------------------------------------------------------------

RewriteContext::RewriteContext(FunctionGraph& graph) : m_graph(graph) {}

RewriteContext::~RewriteContext() {
  // The History was attached for reverting refused changes only; it holds replaced subgraphs.
  if (m_history) m_graph.detachFeature(*m_history);
  // Its cached shape expressions are only useful while rewriting.
  if (m_ownedShapes) m_graph.detachFeature(*m_ownedShapes);
}

ShapeFeature& RewriteContext::shapes() {
  if (!m_shapes) {
    m_shapes = m_graph.feature<ShapeFeature>();
    if (!m_shapes) {
      m_ownedShapes = std::make_shared<ShapeFeature>();
      m_graph.attachFeature(m_ownedShapes);
      m_shapes = m_ownedShapes.get();
    }
  }
  return *m_shapes;
}

RewriterStats& RewriteContext::stats(const std::string& rewriter, const std::string& phase) {
  for (auto& s : m_profile.rewriters)
    if (s.name == rewriter && s.phase == phase) return s;
  m_profile.rewriters.push_back(RewriterStats{rewriter, phase});
  return m_profile.rewriters.back();
}

bool RewriteContext::replace(const Replacements& replacements, std::string_view reason) {
  Replacements pairs;
  pairs.reserve(replacements.size());
  for (const auto& [oldVar, newVar] : replacements) {
    if (!oldVar || !newVar) {
      m_lastRefusal = std::string(reason) + ": a replacement variable is null";
      return false;
    }
    if (oldVar == newVar) continue;
    if (oldVar->fgraph() != &m_graph) {
      m_lastRefusal = std::string(reason) + ": " + describeVar(*oldVar) + " is not in the graph";
      return false;
    }
    if (!newVar->type().isSubtypeOf(oldVar->type())) {
      m_lastRefusal = std::string(reason) + ": cannot replace " + describeVar(*oldVar) + " by " +
                      describeVar(*newVar) + ": the type would change";
      return false;
    }
    // REFERENCE.md "Test values": a rewrite that changes a test value's shape is caught here.
    const auto& tvOld = oldVar->testValue();
    const auto& tvNew = newVar->testValue();
    if (tvOld && tvNew && tvOld->shape() != tvNew->shape()) {
      m_lastRefusal = std::string(reason) + ": replacing " + describeVar(*oldVar) +
                      " would change its test value's shape from " + shapeToString(tvOld->shape()) +
                      " to " + shapeToString(tvNew->shape());
      return false;
    }
    pairs.emplace_back(oldVar, newVar);
  }
  for (const auto& [oldVar, newVar] : pairs) inheritScope(newVar, *oldVar);
  if (pairs.empty()) {
    m_lastRefusal = std::string(reason) + ": nothing to replace";
    return false;
  }
  if (!m_history) {
    m_history = std::make_shared<History>();
    m_graph.attachFeature(m_history);
  }
  const History::Checkpoint cp = m_history->checkpoint();
  try {
    m_graph.replaceAll(pairs, reason);
    m_graph.validate();
  } catch (const GraphError& e) {  // InconsistencyError included: a feature refused the change
    m_history->revert(cp);
    m_lastRefusal = std::string(reason) + ": " + e.what();
    return false;
  }
  // Accepted: the History need not keep what this change replaced.
  m_history->forget();
  if (m_checkEachChange) {
    m_graph.checkIntegrity();
    (void)m_graph.toposort();
  }
  return true;
}

// --- Equilibrium ---------------------------------------------------------------------------------

namespace {

// Collects the nodes a change touched (Note [Equilibrium worklist]).
class Worklist final : public Feature {
 public:
  void push(Apply& node) {
    if (m_queued.tryEmplace(&node, true).second) m_queue.push_back(node.shared_from_this());
  }
  ApplyPtr pop() {
    ApplyPtr n = std::move(m_queue.back());
    m_queue.pop_back();
    m_queued.erase(n.get());
    return n;
  }
  bool empty() const { return m_queue.empty(); }

  void onImport(FunctionGraph&, Apply& node, std::string_view) override { push(node); }
  void onPrune(FunctionGraph& fg, Apply& node, std::string_view) override {
    for (const VarPtr& in : node.inputs())
      if (Apply* owner = in->owner(); owner && owner->fgraph() == &fg) push(*owner);
  }
  void onChangeInput(FunctionGraph& fg, Apply* node, int, const VarPtr& oldVar,
                     const VarPtr& newVar, std::string_view) override {
    if (node) push(*node);
    for (const VarPtr* v : {&oldVar, &newVar})
      if (Apply* owner = (*v)->owner(); owner && owner->fgraph() == &fg) push(*owner);
  }

 private:
  // A stack: the most recently touched node first, so a rewrite's consequences are followed up
  // while they are still in cache.
  std::vector<ApplyPtr> m_queue;
  FlatHashMap<const Apply*, bool> m_queued;
};

}  // namespace

std::size_t runEquilibrium(RewriteContext& ctx, std::string_view phase,
                           const std::vector<NodeRewriterPtr>& rewriters) {
  if (rewriters.empty()) return 0;
  FunctionGraph& fg = ctx.graph();
  const std::string phaseName(phase);
  // The first sweep walks a snapshot of the topological order (holding the nodes, so a pruned one
  // is recognised rather than dangling); after each node, the nodes its rewrites touched are
  // drained before the sweep goes on. No node is queued twice at once.
  std::vector<ApplyPtr> sweep;
  {
    const std::vector<Apply*> order = fg.toposort();
    sweep.reserve(order.size());
    for (Apply* node : order) sweep.push_back(node->shared_from_this());
  }
  auto worklist = std::make_shared<Worklist>();
  fg.attachFeature(worklist);
  struct Detach {
    FunctionGraph& fg;
    Worklist& w;
    ~Detach() { fg.detachFeature(w); }
  } detach{fg, *worklist};

  const std::size_t cap = kUseCapFactor * std::max<std::size_t>(fg.nodeCount(), 16);
  struct Slot {
    NodeRewriter* rewriter;
    RewriterStats* stats;
    std::uint64_t ticks = 0;  // converted to stats->seconds at the end (Note [Rewrite timing])
    bool capped = false;
  };
  const auto wallStart = Clock::now();
  const std::uint64_t tickStart = ticks();
  std::vector<Slot> slots;
  slots.reserve(rewriters.size());
  // Entries first, pointers after: stats() may grow the vector.
  for (const auto& r : rewriters) ctx.stats(r->name(), phaseName);
  for (const auto& r : rewriters) slots.push_back(Slot{r.get(), &ctx.stats(r->name(), phaseName)});
  // Op name -> the slots that look at it, in registration order (built on first sight of a name).
  std::unordered_map<std::string, std::vector<Slot*>> byOp;
  auto slotsFor = [&](const std::string& opName) -> const std::vector<Slot*>& {
    auto it = byOp.find(opName);
    if (it != byOp.end()) return it->second;
    std::vector<Slot*> chosen;
    for (Slot& s : slots) {
      const auto& tracks = s.rewriter->tracks();
      if (tracks.empty() || std::find(tracks.begin(), tracks.end(), opName) != tracks.end())
        chosen.push_back(&s);
    }
    return byOp.emplace(opName, std::move(chosen)).first->second;
  };

  std::size_t changes = 0;
  // Tries the rewriters on one node until one applies.
  auto visit = [&](const ApplyPtr& node) {
    if (node->fgraph() != &fg) return;  // pruned since it was listed
    const std::vector<Slot*>& candidates = slotsFor(node->op().name());
    if (candidates.empty()) return;
    // One clock read between two attempts ends the one and starts the next (Note [Rewrite timing]).
    std::uint64_t t0 = ticks();
    auto charge = [&t0](Slot& s) {
      const std::uint64_t now = ticks();
      s.ticks += now - t0;
      t0 = now;
    };
    for (Slot* s : candidates) {
      if (s->capped) continue;
      ++s->stats->tried;
      Replacements r;
      try {
        r = s->rewriter->transform(ctx, *node);
      } catch (const std::exception& e) {
        charge(*s);
        if (ctx.checkEachChange()) throw;
        // A failing rewrite does not fail the compilation (Theano warns and goes on).
        warn("rewrite '" + s->rewriter->name() + "' failed on node " + std::to_string(node->id()) +
             " (" + node->op().str() + "): " + e.what() + "; the node is left as it was");
        ++s->stats->refused;
        continue;
      }
      if (r.empty()) {
        charge(*s);
        continue;
      }
      const bool ok = ctx.replace(r, s->rewriter->name());
      charge(*s);
      if (!ok) {
        ++s->stats->refused;
        continue;
      }
      ++s->stats->applied;
      ++changes;
      if (s->stats->applied >= cap) {
        s->capped = true;
        ctx.profile().capped.push_back(s->rewriter->name());
        warn("rewrite '" + s->rewriter->name() + "' applied " + std::to_string(s->stats->applied) +
             " times in phase " + phaseName + " (the cap is " + std::to_string(kUseCapFactor) +
             " x the graph size); it is stopped for this phase. Another rewrite probably undoes "
             "it.");
      }
      // The node changed or left the graph; revisit it if it is still there.
      if (node->fgraph() == &fg) worklist->push(*node);
      break;
    }
  };
  struct ToSeconds {  // also when a rewrite's exception leaves the loop
    std::vector<Slot>& slots;
    Clock::time_point wallStart;
    std::uint64_t tickStart;
    ~ToSeconds() {
      const double wall = std::chrono::duration<double>(Clock::now() - wallStart).count();
      const std::uint64_t spent = ticks() - tickStart;
      const double perTick = spent > 0 ? wall / static_cast<double>(spent) : 0.0;
      for (Slot& s : slots) s.stats->seconds += static_cast<double>(s.ticks) * perTick;
    }
  } toSeconds{slots, wallStart, tickStart};
  for (const ApplyPtr& node : sweep) {
    visit(node);
    while (!worklist->empty()) visit(worklist->pop());
  }
  return changes;
}

// --- Helpers ------------------------------------------------------------------------------------

std::optional<ScalarOp> elemwiseScalarOp(const Apply& node) {
  if (const auto* e = dynamic_cast<const Elemwise*>(&node.op())) return e->scalarOp();
  return std::nullopt;
}

bool isElemwise(const Apply& node, ScalarOp op) {
  const auto s = elemwiseScalarOp(node);
  return s && *s == op;
}

Apply* producedBy(const Variable& var, ScalarOp op) {
  Apply* owner = var.owner();
  return owner && isElemwise(*owner, op) ? owner : nullptr;
}

std::optional<double> scalarConstantValue(const Variable& var) {
  // Constants bigger than this are not scanned (a rewrite pays for every look).
  constexpr std::int64_t kMaxScan = 4096;
  const Variable* v = &var;
  for (int depth = 0; depth < 64; ++depth) {
    if (v->kind() == Variable::Kind::Constant) {
      const Tensor& t = static_cast<const Constant*>(v)->value();
      const std::int64_t n = t.numel();
      if (n == 0 || n > kMaxScan) return std::nullopt;
      if (n == 1) {  // the common scalar constant, read without a vector of its values
        const double x = t.item();
        if (!(x == x)) return std::nullopt;  // NaN, as below
        return x;
      }
      const std::vector<double> values = t.toDoubles();
      const double first = values.front();
      for (double x : values)
        if (!(x == first)) return std::nullopt;  // NaN never counts as one value
      return first;
    }
    const Apply* owner = v->owner();
    if (!owner) return std::nullopt;
    const std::string name = owner->op().name();
    if (name == "DimShuffle" || name == "SpecifyShape" || name == "Alloc") {
      v = owner->input(0).get();
    } else if (const auto s = elemwiseScalarOp(*owner); s && *s == ScalarOp::Second) {
      v = owner->input(1).get();
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool isConstantValue(const Variable& var, double value) {
  const auto c = scalarConstantValue(var);
  return c && *c == value;
}

std::size_t nodeClientCount(const FunctionGraph& fg, const Variable& var) {
  std::size_t n = 0;
  for (const Client& c : fg.clients(var)) n += c.isOutput() ? 0 : 1;
  return n;
}

bool isGraphOutput(const FunctionGraph& fg, const Variable& var) {
  for (const Client& c : fg.clients(var))
    if (c.isOutput()) return true;
  return false;
}

}  // namespace tscope::engine
