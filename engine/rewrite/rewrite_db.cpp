#include "engine/rewrite/rewrite_db.h"

#include "engine/graph/config.h"
#include "engine/graph/rewrite_recorder.h"

#include <chrono>
#include <stdexcept>

namespace tscope::engine {

std::string_view phaseName(Phase phase) {
  switch (phase) {
    case Phase::Merge:
      return "merge";
    case Phase::Canonicalize:
      return "canonicalize";
    case Phase::Stabilize:
      return "stabilize";
    case Phase::Specialize:
      return "specialize";
    case Phase::Fusion:
      return "fusion";
    case Phase::Inplace:
      return "inplace";
    case Phase::FinalMerge:
      break;
  }
  return "final_merge";
}

RewriteQuery RewriteQuery::forMode(std::string_view mode) {
  RewriteQuery q;
  if (mode == "fast_run" || mode == "debug") {
    q.include.insert("fast_run");
  } else if (mode == "fast_compile") {
    q.include.insert("fast_compile");
  } else if (mode != "none") {
    throw std::invalid_argument("unknown compile mode '" + std::string(mode) +
                                "': expected one of fast_run, fast_compile, none, debug");
  }
  return q;
}

namespace {
std::set<std::string> entryTags(Phase phase, const std::string& name,
                                std::vector<std::string> tags) {
  std::set<std::string> all(tags.begin(), tags.end());
  all.insert(std::string(phaseName(phase)));
  all.insert(name);
  return all;
}
}  // namespace

void RewriteDb::add(Phase phase, NodeRewriterPtr rewriter, std::vector<std::string> tags) {
  if (!rewriter) throw std::logic_error("RewriteDb::add: null rewriter");
  for (const Entry& e : m_entries)
    if (e.phase == phase && e.name() == rewriter->name())
      throw std::logic_error("RewriteDb::add: a rewrite named '" + rewriter->name() +
                             "' is already registered in phase " + std::string(phaseName(phase)));
  Entry e{phase, entryTags(phase, rewriter->name(), std::move(tags)), std::move(rewriter), nullptr};
  m_entries.push_back(std::move(e));
}

void RewriteDb::add(Phase phase, GraphRewriterPtr rewriter, std::vector<std::string> tags) {
  if (!rewriter) throw std::logic_error("RewriteDb::add: null rewriter");
  for (const Entry& e : m_entries)
    if (e.phase == phase && e.name() == rewriter->name())
      throw std::logic_error("RewriteDb::add: a rewrite named '" + rewriter->name() +
                             "' is already registered in phase " + std::string(phaseName(phase)));
  Entry e{phase, entryTags(phase, rewriter->name(), std::move(tags)), nullptr, std::move(rewriter)};
  m_entries.push_back(std::move(e));
}

std::vector<const RewriteDb::Entry*> RewriteDb::select(const RewriteQuery& query) const {
  std::vector<const Entry*> chosen;
  for (const Entry& e : m_entries) {
    bool included = false, excluded = false;
    for (const std::string& t : e.tags) {
      included = included || query.include.count(t) > 0;
      excluded = excluded || query.exclude.count(t) > 0;
    }
    if (included && !excluded) chosen.push_back(&e);
  }
  return chosen;
}

std::set<std::string> RewriteDb::knownTags() const {
  std::set<std::string> all;
  for (const Entry& e : m_entries) all.insert(e.tags.begin(), e.tags.end());
  return all;
}

const RewriteDb& RewriteDb::standard() {
  static const RewriteDb db = [] {
    RewriteDb d;
    registerStandardRewrites(d);
    return d;
  }();
  return db;
}

void registerStandardRewrites(RewriteDb& db) {
  registerMergeRewrites(db);
  registerShapeRewrites(db);
  registerInlineOpFromGraphRewrites(db);
  registerScanRewrites(db);
  registerCanonicalizeRewrites(db);
  registerStabilizeRewrites(db);
  registerSpecializeRewrites(db);
  registerFusionRewrites(db);
  registerInplaceRewrites(db);
}

RewriteProfile optimize(FunctionGraph& fg, const RewriteQuery& query, const RewriteDb& db,
                        OptimizeOptions options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  RewriteContext ctx(fg);
  ctx.setCheckEachChange(options.checkEachChange);
  auto* recorder = fg.feature<RewriteRecorder>();
  const std::vector<const RewriteDb::Entry*> selected = db.select(query);
  RewriteProfile& profile = ctx.profile();
  profile.nodesBefore = fg.nodeCount();
  for (int p = 0; p < kPhaseCount; ++p) {
    const auto phase = static_cast<Phase>(p);
    std::vector<const RewriteDb::Entry*> graphEntries;
    std::vector<NodeRewriterPtr> nodeRewriters;
    for (const auto* e : selected) {
      if (e->phase != phase) continue;
      if (e->graph)
        graphEntries.push_back(e);
      else
        nodeRewriters.push_back(e->node);
    }
    if (graphEntries.empty() && nodeRewriters.empty()) continue;
    const std::string name(phaseName(phase));
    if (recorder) recorder->setPhase(name);
    const auto tp = Clock::now();
    PhaseStats ps{name, 0, fg.nodeCount(), 0, 0};
    for (const auto* e : graphEntries) {
      // The stats entry is looked up again after apply(): a graph rewriter may add entries.
      ++ctx.stats(e->graph->name(), name).tried;
      const auto tg = Clock::now();
      std::size_t n = 0;
      try {
        n = e->graph->apply(ctx);
      } catch (const std::exception& ex) {
        ctx.stats(e->graph->name(), name).seconds +=
            std::chrono::duration<double>(Clock::now() - tg).count();
        if (options.checkEachChange) throw;
        warn("rewrite '" + e->graph->name() + "' failed in phase " + name + ": " + ex.what() +
             "; the graph keeps the changes made before the failure");
        continue;
      }
      RewriterStats& st = ctx.stats(e->graph->name(), name);
      st.seconds += std::chrono::duration<double>(Clock::now() - tg).count();
      st.applied += n;
      ps.changes += n;
    }
    ps.changes += runEquilibrium(ctx, name, nodeRewriters);
    ps.nodesAfter = fg.nodeCount();
    ps.seconds = std::chrono::duration<double>(Clock::now() - tp).count();
    profile.phases.push_back(ps);
  }
  if (recorder) recorder->setPhase("");
  profile.nodesAfter = fg.nodeCount();
  profile.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return profile;
}

}  // namespace tscope::engine
