#pragma once
// Running a loaded graph on given values: what `tensorscope run` does, as an engine function so
// scripts, tests and the GUI share it.

#include "engine/compile/function.h"
#include "engine/graph/function_graph.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tscope::engine::session {

struct RunInputs {
  // Values by graph-input name (the names `tensorscope run --input NAME=x.npy` takes).
  std::map<std::string, Tensor> byName;
  // When set, an input with neither a given value nor a test value gets uniform random values
  // (floats in [-1, 1), integers in [0, 10), bools) of its static shape from this seed.
  std::optional<std::uint64_t> randomSeed;
  // How the graph is compiled (Mode::FastRun rewrites a copy first; the given graph is unchanged).
  Mode mode = Mode::None;
};

struct RunResult {
  std::vector<Tensor> outputs;         // one per graph output
  std::vector<std::string> inputSource;  // per non-shared graph input: "given", "test value", "random"
};

// Compiles the graph (inputs.mode) and runs it once. Throws std::invalid_argument for a name that is
// not a graph input (listing the inputs), an input without a value (naming it and saying how to
// give one), a value that does not fit its input; ExecutionError when a node fails.
RunResult runGraph(const FunctionGraph& graph, const RunInputs& inputs);

}  // namespace tscope::engine::session
