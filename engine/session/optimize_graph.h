#pragma once
// Optimizing a loaded graph: what `tensorscope optimize` does, as an engine function so scripts,
// tests and the GUI share it.

#include "engine/io/tsg.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/rewrite/rules/gpu_placement.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::session {

// An optimized copy of a graph with its rewrite log and profile (what optimizeDocument stores).
struct OptimizedGraph {
  std::unique_ptr<FunctionGraph> graph;
  std::vector<RewriteRecord> rewrites;
  RewriteProfile profile;
  nlohmann::json profileJson;  // rewriteProfileJson(profile) plus {"query": ...}
};
// The query of `tensorscope optimize --mode MODE --include TAG... --exclude TAG...` (and of Graph >
// Optimize...): RewriteQuery::forMode plus the tags, each checked against the standard rewrite
// database. Throws std::invalid_argument naming an unknown mode, or an unknown tag with its option
// ("--include NAME: no rewrite or tag has this name (tags include ...)").
RewriteQuery rewriteQueryFor(std::string_view mode, const std::vector<std::string>& include,
                             const std::vector<std::string>& exclude);
// Note [Placement without a device]: after the rewrites, the nodes a device backend would run
// are placed on `device` exactly as compile's "gpu" phase places them (GpuFromHost/HostFromGpu at
// the borders, device types), from the backend's kernel table and placement rules alone: no
// device and no runtime are needed, so a machine without a GPU shows where a graph would run.
// The placement is logged as phase "gpu". kernels and rules must then be given
// (engine::cuda::registerCudaKernels fills both).
struct DevicePlacement {
  Device device = Device::Cpu;  // Cpu: no placement
  const KernelRegistry* kernels = nullptr;
  const DeviceSupport* rules = nullptr;
};

// Optimizes a copy of `original` (unchanged) with the query, then places it (when asked). Throws
// what optimize() throws, and std::invalid_argument for a device placement without kernels.
OptimizedGraph optimizeGraph(const FunctionGraph& original, const RewriteQuery& query,
                             const DevicePlacement& placement = {});
// `profiles` with any earlier rewriter profile replaced by `rewriterProfile`.
nlohmann::json withRewriterProfile(const nlohmann::json& profiles, nlohmann::json rewriterProfile);

// Optimizes a copy of doc.original with the query and stores it as doc.optimized, with the rewrite
// log in doc.rewrites and the rewriter profile (rewriteProfileJson) appended to doc.profiles,
// replacing an earlier rewriter profile. The original graph is not changed.
RewriteProfile optimizeDocument(io::TsgDocument& doc, const RewriteQuery& query,
                                const DevicePlacement& placement = {});

// {"kind": "rewriter", "seconds", "nodes_before", "nodes_after", "phases": [...], "rewriters":
// [...]}.
nlohmann::json rewriteProfileJson(const RewriteProfile& profile);
// The summary `tensorscope optimize` prints: nodes before/after, time per phase, the top rewrites
// by count.
std::string rewriteProfileText(const RewriteProfile& profile, std::size_t topRewrites = 10);

// The rewrite log, one change per line (`tensorscope print --rewrites`):
//   #53 [canonicalize] add_mul_canonical: removed 41 Elemwise{mul}, 40 Elemwise{add}; added 212
//       Elemwise{add}; replaced 44 -> 213; 0.004 ms
// Node ids are followed by their op where `original` (removed nodes) or `optimized` (added nodes)
// still holds the node; a node only an intermediate graph held shows its id alone.
std::string rewriteLogText(const std::vector<RewriteRecord>& log,
                           const FunctionGraph* original = nullptr,
                           const FunctionGraph* optimized = nullptr);

}  // namespace tscope::engine::session
