#pragma once
// Text views of a graph: a debugprint-style tree (Theano's debugprint) and a summary (counts,
// inputs and outputs with types, op histogram), as text and as JSON.

#include "engine/graph/function_graph.h"

#include <nlohmann/json.hpp>
#include <string>

namespace tscope::engine::io {

struct DebugPrintOptions {
  bool showTypes = true;
  bool showUpdates = true;
};

// One tree per output, each node printed once; a later reference prints the node's line with
// "(see above)" and no children. Example:
//   Elemwise{add} [id 6] 'y' : float32 (?, 10)
//    |Dot [id 4] : float32 (?, 10)
//    | |x [id 0] : float32 (?, 784) (input)
//    | |W [id 1] : float32 (784, 10) (shared)
//    |b [id 2] : float32 (10,) (shared)
std::string debugPrint(const FunctionGraph& fg, const DebugPrintOptions& options = {});

// {"applies", "variables", "inputs": [{"name","id","type"}], "outputs": [...], "constants",
//  "shared", "ops": {"Elemwise{add}": 3, ...}, "opaque_ops": [...]}.
nlohmann::json graphSummary(const FunctionGraph& fg);
// The summary as indented text lines.
std::string graphSummaryText(const nlohmann::json& summary);

// "float32 (?, 784)".
std::string typeText(const TensorType& type);

}  // namespace tscope::engine::io
