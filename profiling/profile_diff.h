#pragma once
// Profile diffs: two profiles of one graph (two runs, two modes, the original graph against the
// optimized one) compared node by node and scope by scope.
//
//   prof::DiffSide a{&profileNone, nullptr, "none"};          // node ids of the original graph
//   prof::DiffSide b{&profileFast, &lineageFast, "fast_run"}; // optimized ids -> original ids
//   prof::ProfileDiff d = prof::diffProfiles(a, b);
//   d.rows[0].label;  // "Elemwise{add} #3 + Elemwise{tanh} #4 -> Composite{tanh((i0 + i1))} #17"
//
// Note [Diff through the rewrite log]: each side's top-level nodes are mapped to ids of the
// original graph: through the side's NodeLineage (NodeLineage::originalNodesFor) when its node
// ids are those of an optimized graph, as they are when it is the original graph (no lineage).
// Nodes of both sides that share an original node are joined (transitively) into one row, so the
// three nodes fused into one Composite are one row with three nodes on one side and one on the
// other, and two nodes merged into one are one row too. A node that stands for no original node
// (a cast a rewrite inserted) is a row of its own; a row with nodes on one side only says so
// ("removed" / "added"). Two profiles of the same graph need no lineage: ids match.
// Inner nodes (of OpFromGraph bodies) are compared through their scopes only.

#include "engine/debug/lineage.h"
#include "profiling/profile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tscope::prof {

struct DiffSide {
  const Profile* profile = nullptr;
  // Maps this side's node ids to original-graph ids; null when they are original ids already or
  // both sides profile the same graph.
  const engine::debug::NodeLineage* lineage = nullptr;
  std::string label;  // "none", "fast_run", "A.tsg"
};

struct DiffRow {
  std::vector<std::int64_t> nodesA, nodesB;  // indexes into each Profile::nodes (top level)
  std::string label;                         // the nodes of A -> the nodes of B
  double secondsA = 0, secondsB = 0;         // self time per measured run
  std::int64_t callsA = 0, callsB = 0;
  std::string scope;  // the scope the row's nodes share (their longest common prefix)
  double delta() const { return secondsB - secondsA; }
  // secondsA / secondsB: > 1 means B is faster; 0 when B took no time.
  double speedup() const { return secondsB > 0 ? secondsA / secondsB : 0; }
};

struct ScopeDiffRow {
  std::string path;  // "" is the root
  std::int32_t depth = 0;
  double inclusiveA = 0, inclusiveB = 0;
  double exclusiveA = 0, exclusiveB = 0;
};

struct ProfileDiff {
  std::string labelA, labelB;
  double callA = 0, callB = 0;       // mean call time
  double nodesA = 0, nodesB = 0;     // time in nodes per run (self times summed)
  std::vector<DiffRow> rows;         // by |delta|, largest first
  std::vector<ScopeDiffRow> scopes;  // depth-first, as in the scope tree
};

// Throws std::invalid_argument when a side has no profile.
ProfileDiff diffProfiles(const DiffSide& a, const DiffSide& b);

std::string diffText(const ProfileDiff& diff, std::size_t rows = 25);
nlohmann::json diffJson(const ProfileDiff& diff);

}  // namespace tscope::prof
