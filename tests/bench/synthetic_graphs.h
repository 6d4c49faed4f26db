#pragma once
// Synthetic engine graphs for the GUI benchmarks and the responsiveness tests: DNN-like DAGs of a
// chosen number of Apply nodes, either flat (no scopes) or grouped by scope in nested levels, so
// the view sees many groups the way it does for a real model ("layer1/layer1.0/conv1").

#include "engine/graph/function_graph.h"

#include <memory>

namespace tscope::synthetic {

struct GraphShape {
  int applies = 2000;  // Apply nodes in the graph
  // 0: flat. 1..3: scope levels; a leaf scope holds `leafSize` applies and each level above holds
  // `fanOut` scopes of the level below ("stage0/block3/unit1").
  int levels = 0;
  int leafSize = 25;
  int fanOut = 8;
  // Independent chains side by side (leaves are dealt to them in turn), each ending in an output:
  // 1 gives one long chain; more give a wide graph, as for panning over many visible items.
  int chains = 1;
  unsigned seed = 42;
};

// Chains of Elemwise nodes with skip connections (each node reads the previous value and often
// one from up to 12 values back), a matrix product with a shared weight every 8 nodes and a
// constant every 16, over four graph inputs; every value feeds the next node of its chain, so each
// chain has one output and nothing is dead code.
std::shared_ptr<const engine::FunctionGraph> makeGraph(const GraphShape& shape);

inline std::shared_ptr<const engine::FunctionGraph> flatGraph(int applies) {
  return makeGraph({.applies = applies});
}
inline std::shared_ptr<const engine::FunctionGraph> groupedGraph(int applies, int levels = 3) {
  return makeGraph({.applies = applies, .levels = levels});
}

}  // namespace tscope::synthetic
