#pragma once
// The rewrite framework (DESIGN.md "From graph to Function", step 2).
//
//   NodeRewriter   looks at one node (of the ops it tracks) and returns replacements for its
//                  outputs, or nothing. It never edits the graph itself.
//   GraphRewriter  a whole-graph pass (merge, fusion, inplace) that edits the graph through the
//                  RewriteContext.
//   RewriteContext the graph being rewritten plus what rewriters share: the ShapeFeature, the
//                  replace() that every change goes through (type checks, validation with revert,
//                  the reason recorded in the rewrite log), and use counts.
//
// Note [Equilibrium worklist]: a phase runs its graph rewriters once each, then its node
// rewriters to a fixed point. The first sweep visits every node in topological order; after
// that only nodes a change touched are revisited: nodes it imported, nodes whose inputs it
// changed, and the producers of the inputs of nodes it pruned (their client counts changed, which
// single-client conditions read). There is no global re-scan, and each node rewriter may apply at
// most kUseCapFactor x (nodes at the start of the phase) times per phase, so a rewriter that undoes
// another cannot loop forever: it is stopped with a warning naming it.

#include "engine/graph/function_graph.h"
#include "engine/ops/elemwise/scalar_op.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tscope::engine {

class ShapeFeature;
class History;

// (variable to replace, its replacement). The replacement must have the same type as the
// variable or a more specific one (same dtype and rank; static dims only added, never lost).
using Replacements = std::vector<std::pair<VarPtr, VarPtr>>;

class RewriteContext;

class NodeRewriter {
 public:
  // tracks: the Op::name()s of the nodes to look at ("Elemwise", "Dot"); empty: every node.
  NodeRewriter(std::string name, std::vector<std::string> tracks = {})
      : m_name(std::move(name)), m_tracks(std::move(tracks)) {}
  virtual ~NodeRewriter() = default;
  const std::string& name() const { return m_name; }
  const std::vector<std::string>& tracks() const { return m_tracks; }
  // Replacements for (some of) node's outputs, empty when the rewrite does not apply. New nodes
  // are built with the ordinary builders (Op::makeNode, add(), ...) on variables of the graph.
  virtual Replacements transform(RewriteContext& ctx, Apply& node) = 0;

 private:
  std::string m_name;
  std::vector<std::string> m_tracks;
};
using NodeRewriterPtr = std::shared_ptr<NodeRewriter>;

using NodeRewriteFn = std::function<Replacements(RewriteContext&, Apply&)>;
// A NodeRewriter from a function.
NodeRewriterPtr nodeRewriter(std::string name, std::vector<std::string> tracks, NodeRewriteFn fn);

class GraphRewriter {
 public:
  explicit GraphRewriter(std::string name) : m_name(std::move(name)) {}
  virtual ~GraphRewriter() = default;
  const std::string& name() const { return m_name; }
  // Rewrites the graph (every change through ctx.replace or with ctx's reason conventions);
  // returns the number of changes made.
  virtual std::size_t apply(RewriteContext& ctx) = 0;

 private:
  std::string m_name;
};
using GraphRewriterPtr = std::shared_ptr<GraphRewriter>;

using GraphRewriteFn = std::function<std::size_t(RewriteContext&)>;
GraphRewriterPtr graphRewriter(std::string name, GraphRewriteFn fn);
// Runs the graph rewriters one after the other, once each (Theano's SequenceDB); returns the sum
// of their changes.
GraphRewriterPtr sequence(std::string name, std::vector<GraphRewriterPtr> steps);
// Node rewriters to a fixed point as one graph rewriter (Note [Equilibrium worklist]), so an
// equilibrium can be a step of a sequence.
GraphRewriterPtr equilibrium(std::string name, std::vector<NodeRewriterPtr> rewriters);

// Per-rewriter figures of one optimize() run.
struct RewriterStats {
  std::string name;
  std::string phase;
  std::size_t tried = 0;    // transform() calls (node rewriters) or runs (graph rewriters)
  std::size_t applied = 0;  // accepted changes
  std::size_t refused = 0;  // replacements refused (type mismatch, validation)
  double seconds = 0;       // time in transform()/apply(), replace() included
};

struct PhaseStats {
  std::string name;
  double seconds = 0;
  std::size_t nodesBefore = 0;
  std::size_t nodesAfter = 0;
  std::size_t changes = 0;
};

struct RewriteProfile {
  std::vector<PhaseStats> phases;
  std::vector<RewriterStats> rewriters;  // in first-use order
  double seconds = 0;
  std::size_t nodesBefore = 0;
  std::size_t nodesAfter = 0;
  // Rewriters stopped by the use cap (Note [Equilibrium worklist]).
  std::vector<std::string> capped;
};

class RewriteContext {
 public:
  explicit RewriteContext(FunctionGraph& graph);
  ~RewriteContext();
  RewriteContext(const RewriteContext&) = delete;
  RewriteContext& operator=(const RewriteContext&) = delete;

  FunctionGraph& graph() { return m_graph; }
  // The graph's ShapeFeature, attached on first use.
  ShapeFeature& shapes();

  // Applies the replacements as one change named `reason` and validates the graph (the features'
  // validate(), e.g. the DestroyHandler's). Returns false, with the graph unchanged and the
  // reason in lastRefusal(), when a replacement's type does not fit or validation refuses.
  // Replacing a variable by itself is dropped; an empty list is a no-op that returns false.
  bool replace(const Replacements& replacements, std::string_view reason);
  const std::string& lastRefusal() const { return m_lastRefusal; }

  // After every accepted change, run FunctionGraph::checkIntegrity() and toposort() (debug mode).
  void setCheckEachChange(bool on) { m_checkEachChange = on; }
  bool checkEachChange() const { return m_checkEachChange; }

  RewriteProfile& profile() { return m_profile; }
  RewriterStats& stats(const std::string& rewriter, const std::string& phase);

 private:
  FunctionGraph& m_graph;
  ShapeFeature* m_shapes = nullptr;
  std::shared_ptr<ShapeFeature> m_ownedShapes;  // attached by this context, detached with it
  std::shared_ptr<History> m_history;
  std::string m_lastRefusal;
  bool m_checkEachChange = false;
  RewriteProfile m_profile;
};

// Runs node rewriters to a fixed point (Note [Equilibrium worklist]). Returns the changes made.
inline constexpr std::size_t kUseCapFactor = 8;
std::size_t runEquilibrium(RewriteContext& ctx, std::string_view phase,
                           const std::vector<NodeRewriterPtr>& rewriters);

// --- Helpers shared by the rewrite families ----------------------------------------------------

// The scalar op of an Elemwise node (inplace or not); nullopt for any other node.
std::optional<ScalarOp> elemwiseScalarOp(const Apply& node);
bool isElemwise(const Apply& node, ScalarOp op);
// The producer of var when it is an Elemwise of `op`, else null.
Apply* producedBy(const Variable& var, ScalarOp op);
// The single value of a constant-valued variable: a Constant whose elements are all equal, seen
// through DimShuffle/Alloc/SpecifyShape/Second that only broadcast it; nullopt otherwise.
std::optional<double> scalarConstantValue(const Variable& var);
bool isConstantValue(const Variable& var, double value);
// The clients of var in the graph that are nodes (graph outputs not counted) and whether var is
// a graph output.
std::size_t nodeClientCount(const FunctionGraph& fg, const Variable& var);
bool isGraphOutput(const FunctionGraph& fg, const Variable& var);

}  // namespace tscope::engine
