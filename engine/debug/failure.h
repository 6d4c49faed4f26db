#pragma once
// A replayable failure: a .tsg holding the graph with the inputs and shared values as of the
// failed call's start as test values, so `tensorscope run FILE.tsg --nan-guard` (or runGraph with
// a NanGuard) reproduces the same event. Random ops draw from shared state variables
// (engine/ops/random/random_stream.h), which are saved with the values they had at the call's
// start, so they draw the same numbers again.
//
//   debug::saveReplay("failure.tsg", originalGraph, startInputs, &report);
//
// NanGuard writes one itself at the first event of a call when NanGuardOptions::saveFailure is
// set (Note [NanGuard actions]).

#include "engine/debug/nan_report.h"
#include "engine/graph/function_graph.h"
#include "engine/tensor/tensor.h"

#include <filesystem>
#include <vector>

namespace tscope::engine::debug {

// graph: the graph to save (preferably the original one the user built or loaded; its shared
// variables must still hold the call's start values, which Note [Parameters stay whole]
// guarantees until the call finishes). inputValues: one per non-shared input of `graph`, in order.
// report (optional) is stored in the document's producer entry ("nan_report"). Throws
// std::invalid_argument when the values do not fit the inputs, std::runtime_error naming the path
// when the file cannot be written.
void saveReplay(const std::filesystem::path& path, const FunctionGraph& graph,
                const std::vector<Tensor>& inputValues, const NanReport* report = nullptr);

}  // namespace tscope::engine::debug
