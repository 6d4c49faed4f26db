#pragma once
// Walks over graphs that are not (yet) in a FunctionGraph.

#include "engine/graph/apply.h"

#include <functional>
#include <span>
#include <vector>

namespace tscope::engine {

// The free variables (inputs and shared variables, not constants) the outputs depend on, each
// once, in depth-first order of first use (Theano's graph_inputs without constants).
std::vector<VarPtr> graphInputs(std::span<const VarPtr> outputs);

// The nodes the outputs depend on, each once, inputs before users (iterative depth-first, so deep
// chains do not overflow the stack). The walk does not go past a variable for which stop(v) holds.
std::vector<Apply*> ancestorNodes(std::span<const VarPtr> outputs,
                                  const std::function<bool(const Variable&)>& stop = {});

}  // namespace tscope::engine
