#include "engine/session/optimize_graph.h"

#include "engine/graph/rewrite_recorder.h"
#include "engine/session/replay_rewrites.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace tscope::engine::session {

RewriteQuery rewriteQueryFor(std::string_view mode, const std::vector<std::string>& include,
                             const std::vector<std::string>& exclude) {
  RewriteQuery query = RewriteQuery::forMode(mode);
  const std::set<std::string> known = RewriteDb::standard().knownTags();
  auto add = [&](const char* option, const std::vector<std::string>& tags,
                 std::set<std::string>& into) {
    for (const std::string& tag : tags) {
      if (!known.count(tag)) {
        std::string list;
        for (const char* k : {"fast_run", "fast_compile", "merge", "canonicalize", "stabilize",
                              "specialize", "fusion", "inplace", "final_merge"})
          if (known.count(k)) list += (list.empty() ? "" : ", ") + std::string(k);
        throw std::invalid_argument(std::string("--") + option + " " + tag +
                                    ": no rewrite or tag has this name (tags include " + list +
                                    "; any rewrite's name works too)");
      }
      into.insert(tag);
    }
  };
  add("include", include, query.include);
  add("exclude", exclude, query.exclude);
  return query;
}

OptimizedGraph optimizeGraph(const FunctionGraph& original, const RewriteQuery& query,
                             const DevicePlacement& placement) {
  if (placement.device != Device::Cpu && !placement.kernels)
    throw std::invalid_argument(std::string("placing on ") +
                                std::string(deviceName(placement.device)) +
                                " needs the backend's kernel table");
  OptimizedGraph out;
  out.graph = original.clone();
  auto recorder = std::make_shared<RewriteRecorder>();
  out.graph->attachFeature(recorder);
  RewriteQuery withoutBlocks = query;
  // Note [Channel blocks]: the blocked layout is the CPU's; a GPU's kernels take plain tensors.
  if (placement.device != Device::Cpu) withoutBlocks.exclude.insert("channel_blocks");
  out.profile = optimize(*out.graph, withoutBlocks);
  if (placement.device != Device::Cpu) {
    // Note [Placement without a device]
    const auto start = std::chrono::steady_clock::now();
    PhaseStats phase;
    phase.name = "gpu";
    phase.nodesBefore = out.graph->nodes().size();
    recorder->setPhase("gpu");
    const std::size_t before = recorder->records().size();
    placeOnDevice(*out.graph, *placement.kernels, placement.device, placement.rules);
    phase.changes = recorder->records().size() - before;
    phase.nodesAfter = out.graph->nodes().size();
    phase.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.profile.phases.push_back(phase);
    out.profile.nodesAfter = phase.nodesAfter;
    out.profile.seconds += phase.seconds;
  }
  out.rewrites = recorder->takeRecords();
  out.graph->detachFeature(*recorder);
  out.profileJson = rewriteProfileJson(out.profile);
  // The GUI replays the log step by step with the same query (replay_rewrites.h).
  out.profileJson["query"] = rewriteQueryJson(query);
  return out;
}

nlohmann::json withRewriterProfile(const nlohmann::json& profiles, nlohmann::json rewriterProfile) {
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& p : profiles)
    if (!(p.is_object() && p.value("kind", "") == "rewriter")) kept.push_back(p);
  kept.push_back(std::move(rewriterProfile));
  return kept;
}

RewriteProfile optimizeDocument(io::TsgDocument& doc, const RewriteQuery& query,
                                const DevicePlacement& placement) {
  OptimizedGraph out = optimizeGraph(*doc.original, query, placement);
  doc.rewrites = std::move(out.rewrites);
  doc.optimized = std::move(out.graph);
  doc.profiles = withRewriterProfile(doc.profiles, std::move(out.profileJson));
  return out.profile;
}

nlohmann::json rewriteProfileJson(const RewriteProfile& profile) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : profile.phases)
    phases.push_back({{"name", p.name},
                      {"seconds", p.seconds},
                      {"nodes_before", p.nodesBefore},
                      {"nodes_after", p.nodesAfter},
                      {"changes", p.changes}});
  nlohmann::json rewriters = nlohmann::json::array();
  for (const auto& r : profile.rewriters)
    rewriters.push_back({{"name", r.name},
                         {"phase", r.phase},
                         {"tried", r.tried},
                         {"applied", r.applied},
                         {"refused", r.refused},
                         {"seconds", r.seconds}});
  return {{"kind", "rewriter"},
          {"seconds", profile.seconds},
          {"nodes_before", profile.nodesBefore},
          {"nodes_after", profile.nodesAfter},
          {"phases", std::move(phases)},
          {"rewriters", std::move(rewriters)},
          {"capped", profile.capped}};
}

namespace {
std::string format(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}
}  // namespace

std::string rewriteProfileText(const RewriteProfile& profile, std::size_t topRewrites) {
  std::string out = format("nodes: %zu -> %zu in %.3f s\n", profile.nodesBefore, profile.nodesAfter,
                           profile.seconds);
  out += "phases:\n";
  for (const auto& p : profile.phases)
    out += format("  %-14s %9.3f s  %7zu -> %-7zu nodes  %6zu changes\n", p.name.c_str(), p.seconds,
                  p.nodesBefore, p.nodesAfter, p.changes);
  std::vector<const RewriterStats*> used;
  for (const auto& r : profile.rewriters)
    if (r.applied > 0) used.push_back(&r);
  std::stable_sort(used.begin(), used.end(),
                   [](const auto* a, const auto* b) { return a->applied > b->applied; });
  out += used.empty() ? "no rewrite applied\n" : "top rewrites:\n";
  for (std::size_t i = 0; i < used.size() && i < topRewrites; ++i)
    out += format("  %7zu x  %-32s %-13s %8.3f s\n", used[i]->applied, used[i]->name.c_str(),
                  used[i]->phase.c_str(), used[i]->seconds);
  if (used.size() > topRewrites)
    out += format("  ... (%zu more rewrites applied)\n", used.size() - topRewrites);
  for (const auto& c : profile.capped) out += "warning: rewrite '" + c + "' reached its use cap\n";
  return out;
}

std::string rewriteLogText(const std::vector<RewriteRecord>& log, const FunctionGraph* original,
                           const FunctionGraph* optimized) {
  auto nodes = [](const std::vector<std::int64_t>& ids, const FunctionGraph* graph) {
    std::string text;
    for (std::int64_t id : ids) {
      if (!text.empty()) text += ", ";
      text += std::to_string(id);
      if (const Apply* node = graph ? graph->nodeById(id) : nullptr) text += " " + node->op().str();
    }
    return text;
  };
  std::string out;
  for (const RewriteRecord& r : log) {
    out += "#" + std::to_string(r.order) + " [" + (r.phase.empty() ? "no phase" : r.phase) + "] " +
           r.reason + ":";
    std::string parts;
    auto part = [&parts](const std::string& text) { parts += (parts.empty() ? " " : "; ") + text; };
    if (!r.removedNodes.empty()) part("removed " + nodes(r.removedNodes, original));
    if (!r.addedNodes.empty()) part("added " + nodes(r.addedNodes, optimized));
    if (!r.replaced.empty()) {
      std::string pairs;
      for (const auto& [from, to] : r.replaced)
        pairs += (pairs.empty() ? "" : ", ") + std::to_string(from) + " -> " + std::to_string(to);
      part("replaced " + pairs);
    }
    if (parts.empty()) part("no change");
    out += parts + format("; %.3f ms\n", r.seconds * 1e3);
  }
  return out;
}

}  // namespace tscope::engine::session
