#pragma once
// Running a loaded graph on given values: what `tensorscope run` does, as an engine function so
// scripts, tests and the GUI share it.

#include "engine/compile/function.h"
#include "engine/debug/nan_guard.h"
#include "engine/graph/function_graph.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tscope::engine::session {

struct RunInputs {
  // Values by graph-input name.
  std::map<std::string, Tensor> byName;
  // When set, an input with neither a given value nor a test value gets uniform random values
  // (floats in [-1, 1), integers in [0, 10), bools) of its static shape from this seed.
  std::optional<std::uint64_t> randomSeed;
  // How the graph is compiled (Mode::FastRun rewrites a copy first; the given graph is unchanged).
  Mode mode = Mode::None;
  // Where the nodes run (CompileOptions::device); Device::Cuda needs the CUDA backend registered.
  Device device = Device::Cpu;
  // `tensorscope run --nan-guard`: when set, the run is checked by a NanGuard with these options
  // (engine/debug/nan_guard.h), naming nodes as in the given graph; saveFailure there writes a
  // replayable .tsg at the first event. Raise rethrows the NanGuardError after the report is
  // written; Warn returns the events in RunResult::nanEvents (Pause acts as Warn: nothing drives
  // a pause here).
  std::optional<debug::NanGuardOptions> nanGuard;
  // With nanGuard: writes {"events": [report...], "event_count": n, "outcome": "clean" | "nan"}
  // there (the reports' toJson()).
  std::string reportJson;
};

struct RunResult {
  std::vector<Tensor> outputs;  // one per graph output
  std::vector<std::string>
      inputSource;  // per non-shared graph input: "given", "test value", "random"
  std::vector<debug::NanReport> nanEvents;  // with RunInputs::nanGuard
};

// An input that runGraph has no value for: none given, no test value, and random values either not
// asked for or impossible (unknown dimensions). The message says what is missing in the engine's
// terms ("no value for input 'b' (float32 (4)): give one, or use random inputs"); a front end that
// has its own way of giving values (the CLI's flags) adds it, using `input` and `randomPossible`.
class MissingInputValue : public std::invalid_argument {
 public:
  MissingInputValue(const std::string& message, std::string input, bool randomPossible)
      : std::invalid_argument(message), input(std::move(input)), randomPossible(randomPossible) {}
  std::string input;    // the input's name; empty for an unnamed input
  bool randomPossible;  // false when random values cannot be shaped (unknown dimensions)
};

// The values a run of the graph starts from: the non-shared graph inputs, one value each (given,
// the test value, or random), and where each came from. Throws as runGraph does.
struct PreparedRun {
  std::vector<VarPtr> inputs;  // the graph's non-shared inputs, in order
  std::vector<Tensor> args;    // one value per input
  std::vector<std::string> inputSource;
};
PreparedRun prepareRun(const FunctionGraph& graph, const RunInputs& inputs);

// Compiles the graph (inputs.mode) and runs it once. Throws std::invalid_argument for a name that
// is not a graph input (listing the inputs) or a value that does not fit its input,
// MissingInputValue for an input without a value, ExecutionError when a node fails,
// debug::NanGuardError when the guard (RunInputs::nanGuard, action raise) stops the run.
RunResult runGraph(const FunctionGraph& graph, const RunInputs& inputs);

}  // namespace tscope::engine::session
