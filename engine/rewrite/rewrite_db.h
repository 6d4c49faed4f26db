#pragma once
// RewriteDb: the registered rewrites, in named phases, with tags that modes include or exclude;
// optimize() runs a query of it over a graph.
//
// Phases run in this order: merge, canonicalize, stabilize, specialize, fusion, inplace,
// final_merge. Within a phase the graph rewriters run once each in registration order, then the
// node rewriters run to equilibrium (Note [Equilibrium worklist] in rewriter.h).
//
// Note [Rewrite selection]: every entry carries its own name, its phase's name and the tags it was
// registered with. A query selects an entry when one of its tags (or its name) is included and
// none of its tags (nor its name) is excluded — Theano's optdb.query(include, exclude). Modes are
// queries: fast_run includes "fast_run"; fast_compile includes "fast_compile" (merge and
// canonicalize only); none selects nothing; debug is fast_run (plus DebugMode at run time).

#include "engine/rewrite/rewriter.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine {

enum class Phase { Merge, Canonicalize, Stabilize, Specialize, Fusion, Inplace, FinalMerge };
inline constexpr int kPhaseCount = 7;
std::string_view phaseName(Phase phase);

struct RewriteQuery {
  std::set<std::string> include;
  std::set<std::string> exclude;
  // The query of a mode name: "fast_run", "fast_compile", "none", "debug"; throws
  // std::invalid_argument naming the modes for another name.
  static RewriteQuery forMode(std::string_view mode);
};

class RewriteDb {
 public:
  struct Entry {
    Phase phase;
    std::set<std::string> tags;  // the given tags, the phase name and the rewriter's name
    NodeRewriterPtr node;        // exactly one of node and graph is set
    GraphRewriterPtr graph;
    const std::string& name() const { return node ? node->name() : graph->name(); }
  };

  // Tags: e.g. {"fast_run", "fast_compile"}. A name may be registered once per phase; a second
  // registration throws std::logic_error.
  void add(Phase phase, NodeRewriterPtr rewriter, std::vector<std::string> tags);
  void add(Phase phase, GraphRewriterPtr rewriter, std::vector<std::string> tags);
  const std::vector<Entry>& entries() const { return m_entries; }
  // The entries a query selects, in registration order.
  std::vector<const Entry*> select(const RewriteQuery& query) const;
  // Every tag and name known to the database (for CLI validation of --include/--exclude).
  std::set<std::string> knownTags() const;

  // The standard rewrites (merge, constant folding, canonicalize, stabilize, specialize, fusion,
  // inplace), registered explicitly by registerStandardRewrites(); built once, thread-safe.
  static const RewriteDb& standard();

 private:
  std::vector<Entry> m_entries;
};

// Registers every standard rewrite family into db (each family has its own register function).
void registerStandardRewrites(RewriteDb& db);

struct OptimizeOptions {
  // Run FunctionGraph::checkIntegrity() after every change (debug mode and tests).
  bool checkEachChange = false;
};

// Runs the selected rewrites over fg, phase by phase. When fg has a RewriteRecorder its phase is
// set before each phase, so the log says which phase made each change.
RewriteProfile optimize(FunctionGraph& fg, const RewriteQuery& query,
                        const RewriteDb& db = RewriteDb::standard(), OptimizeOptions options = {});

// The family registration functions (one per file of engine/rewrite/rules/).
void registerMergeRewrites(
    RewriteDb& db);  // rules/merge.cpp: merge, final_merge, constant folding, dead code
void registerCanonicalizeRewrites(RewriteDb& db);  // rules/canonicalize.cpp
void registerStabilizeRewrites(RewriteDb& db);     // rules/stabilize.cpp
void registerSpecializeRewrites(RewriteDb& db);    // rules/specialize.cpp
void registerShapeRewrites(RewriteDb& db);         // rules/shape_rewrites.cpp
void registerFusionRewrites(RewriteDb& db);        // rules/standard_rewrites.cpp: fusion phase
void registerInplaceRewrites(RewriteDb& db);       // rules/standard_rewrites.cpp: inplace phase
void registerInlineOpFromGraphRewrites(
    RewriteDb& db);  // rules/inline_op_from_graph.cpp (canonicalize)
// rules/scan_rewrites.cpp: Scan's loop-invariant code motion, unused outputs, merge (canonicalize)
void registerScanRewrites(RewriteDb& db);

}  // namespace tscope::engine
