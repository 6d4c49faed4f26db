#pragma once
// Internal to engine/ops/control (scan.cpp, scan_grad.cpp, the Scan rewrites): scan() with a
// store per output (Store::Last for the gradient's accumulators), and the body rebuilt on outer
// variables.
#include "engine/ops/control/scan.h"

namespace tscope::engine {

std::vector<VarPtr> buildScan(const ScanFn& fn, const std::vector<ScanSequence>& sequences,
                              const std::vector<ScanOutputInfo>& outputsInfo,
                              const std::vector<VarPtr>& nonSequences, ScanSteps nSteps,
                              int truncateGradient, const ScanOptions& options,
                              std::source_location site, const std::vector<Scan::Store>& stores);

// "{-1, 1}"; the checks of a list of taps (GraphError naming the scan and `what`).
std::string scanTapsText(const std::vector<int>& taps);
void checkScanTaps(const std::string& op, const std::vector<int>& taps, const std::string& what,
                   bool output);

// The graph rebuilt on `inputs` (one per graph input) through makeNode; one variable per output.
std::vector<VarPtr> rebuildGraph(const FunctionGraph& g, std::span<const VarPtr> inputs);

}  // namespace tscope::engine
