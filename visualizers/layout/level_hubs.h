#pragma once
// Hubs of a big level (Note [Detached hubs]): source nodes with many out-edges (a graph input read
// by every chain of a wide graph) are laid out apart from the rest, which `dot` then sees as many
// small components instead of one big tangle.
//
//   HubSplit split = splitHubs(spec);
//   if (split.active()) {
//     LevelLayout rest = dotLayout(split.rest);        // the level without the hubs
//     LevelLayout whole = placeHubs(spec, split, rest); // hubs on top, their edges routed
//   }

#include "visualizers/layout/graphviz_level.h"

#include <vector>

namespace tscope::vis::layout {

// Sources (no in-edge) with at least this many out-edges are hubs, in levels laid out with the
// fast settings only.
inline constexpr std::size_t kHubMinOutEdges = 8;

struct HubSplit {
  std::vector<int> hubs;      // spec nodes that are hubs
  std::vector<int> restNode;  // by spec node: its index in `rest`, -1 for a hub
  std::vector<int> restEdge;  // by spec edge: its index in `rest`, -1 for a hub's edge
  LevelSpec rest;             // the spec without the hubs and their edges
  bool active() const { return !hubs.empty(); }
};

// The hubs of `spec` (none unless spec.fast and some node is a hub, and something is left).
HubSplit splitHubs(const LevelSpec& spec);

// The whole level from the layout of `split.rest`: the rest moved down one rank, the hubs in a row
// above it (each over the mean x of the nodes it feeds, without overlaps), and each hub edge a
// vertical cubic from the hub's bottom to its target's top, ending in an arrow.
LevelLayout placeHubs(const LevelSpec& spec, const HubSplit& split, const LevelLayout& rest);

}  // namespace tscope::vis::layout
