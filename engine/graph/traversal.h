#pragma once
// Walks over graphs that are not (yet) in a FunctionGraph.

#include "engine/graph/apply.h"

#include <span>
#include <vector>

namespace tscope::engine {

// The free variables (inputs and shared variables, not constants) the outputs depend on, each
// once, in depth-first order of first use (Theano's graph_inputs without constants).
std::vector<VarPtr> graphInputs(std::span<const VarPtr> outputs);

}  // namespace tscope::engine
