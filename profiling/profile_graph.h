#pragma once
// Profiling a loaded graph: what `tensorscope profile` and the window's profiler run. The caller
// picks the values (engine/session/run_graph.h, prepareRun); this compiles the graph in a mode,
// with its updates compiled as updates (a training step profiles as it trains), runs it through
// profileFunction and returns the profile with the compiled graph and its rewrite log, so the node
// ids of the profile can be drawn and related to the original graph (engine/debug/lineage.h).
//
//   session::PreparedRun run = session::prepareRun(*doc.original, inputs);
//   prof::GraphProfile g = prof::profileGraph(*doc.original, run.inputs, run.args,
//                                             engine::Mode::FastRun, {.runs = 100});
//   std::cout << prof::reportText(g.profile);
//   prof::storeProfile(doc, g);  // the optimized graph, the rewrite log and the profile
//   engine::io::saveTsg(doc, "profiled.tsg");

#include "engine/compile/function.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/io/tsg.h"
#include "profiling/profile.h"
#include "profiling/profile_run.h"

#include <memory>
#include <vector>

namespace tscope::prof {

struct GraphProfile {
  Profile profile;
  // The graph the profile's node ids refer to: a copy of the compiled graph (for Mode::None, the
  // original's nodes with their ids) and the rewrite log from the original to it.
  std::unique_ptr<engine::FunctionGraph> graph;
  std::vector<engine::RewriteRecord> rewrites;
};

// inputs: the graph's non-shared inputs, args one value each (prepareRun). Throws what compile
// and the calls throw (ArgumentError, ExecutionError); the graph's shared values are left as the
// last completed call made them (each call's updates are all-or-nothing).
GraphProfile profileGraph(const engine::FunctionGraph& graph,
                          const std::vector<engine::VarPtr>& inputs,
                          const std::vector<engine::Tensor>& args, engine::Mode mode,
                          const ProfileRunOptions& options = {});

// Puts the profile into the document: for a profile of an optimized graph, that graph becomes the
// document's optimized graph and its log the rewrite log (so the ids match); the profile record
// replaces any earlier profile record of the same graph; other profiles are kept.
void storeProfile(engine::io::TsgDocument& doc, const GraphProfile& profile);

// The profile records ({"kind": "profile"}) of a document, read and checked (ProfileError names
// the JSON path, "/profiles/2/..."), in file order.
std::vector<Profile> profilesOf(const engine::io::TsgDocument& doc);

}  // namespace tscope::prof
