#pragma once
// A hand-built Profile for the .tsg section and trace tests: two runs of a three-node top level
// (scopes "enc/l1", "enc/l1", "dec") whose node 2 has an inner frame of two nodes, with doubles
// that do not print short (1/3, 0.1, 1e-300), calibration, and the events of both runs.
#include "profiling/profile.h"

#include <string>

namespace tscope::prof::testing {

inline Profile syntheticProfile(int runs = 2) {
  Profile p;
  p.name = "model.tsg";
  p.machine = {"host-1", "Some CPU @ 2.10GHz", 16};
  p.date = "2026-12-02T03:24:50Z";
  p.function.mode = "fast_run";
  p.function.warmupRuns = 1;
  p.function.measuredRuns = runs;
  p.function.call = TimeStats::of({1.0 / 3.0, 0.1});
  p.function.inNodes = TimeStats::of({0.25, 0.05});
  p.function.overhead = TimeStats::of({1.0 / 3.0 - 0.25, 0.1 - 0.05});
  p.function.compileSeconds = 0.0123456789012345;
  p.function.compilePhases = {{"canonicalize", 0.01}, {"link", 1e-300}};
  p.function.applyCount = 3;
  p.function.innerApplyCount = 2;
  const char* scopes[] = {"enc/l1", "enc/l1", "dec"};
  for (int k = 0; k < 3; ++k) {
    NodeProfile n;
    n.id = 10 + k;
    n.position = k;
    n.op = k == 2 ? "OpFromGraph{block}" : "Elemwise{exp}";
    n.opClass = k == 2 ? "OpFromGraph" : "Elemwise";
    n.scope = scopes[k];
    n.hasInnerGraph = k == 2;
    n.inputShapes = {{128, 784}, {}};
    n.outputs = {
        {{128, 784}, "float32", 128 * 784 * 4, k == 1 ? OutputKind::Inplace : OutputKind::Created}};
    n.calls = runs;
    n.time = TimeStats::of({0.001 * (k + 1), 0.002 / 3.0});
    n.allocatedBytes = 401408;
    n.freedBytes = 7;
    n.cost = {2.0 * 128 * 784, 1e9 / 3.0, 12345.0, k != 1};
    p.nodes.push_back(n);
  }
  for (int k = 0; k < 2; ++k) {
    NodeProfile n;
    n.framePath = {12};
    n.id = k;
    n.body = 0;
    n.position = k;
    n.op = "Elemwise{tanh}";
    n.opClass = "Elemwise";
    n.scope = "dec/block";
    n.outputs = {{{3}, "float64", 24, OutputKind::View}};
    n.calls = runs;
    n.time = TimeStats::of({1e-6, 2e-6});
    p.nodes.push_back(n);
  }
  p.memory = {1 << 20, 1 << 19, 3 << 18, 1 << 21};
  p.rewritePhases = {{"canonicalize", 0.01, 40, 30, 12}};
  p.rewriters = {{"local_fusion", "fusion", 20, 3, 1, 1.0 / 7.0}};
  p.calibration = nlohmann::json{{"gemmGflops", {{"oneThread", 95.5}, {"allThreads", 700.25}}}};
  p.capture = {1000, 6 * runs, 0};
  p.originNs = 123456789012345;
  // Per run r (1,000,000 ns apart): nodes 0, 1 top level, node 2 enclosing inner nodes 3, 4.
  for (int r = 0; r < runs; ++r) {
    const std::int64_t b = 1000000LL * r;
    p.runs.push_back({r, b, b + 900000});
    p.events.push_back({r, 0, 0, b + 1000, b + 101000, 1000});
    p.events.push_back({r, 1, 0, b + 102000, b + 202000, 2000});
    p.events.push_back({r, 2, 0, b + 203000, b + 800000, 3000});
    p.events.push_back({r, 3, 0, b + 204000, b + 300000, 4000});
    p.events.push_back({r, 4, 0, b + 300000, b + 799999, 5000});
    p.events.push_back({r, 0, 1, b + 1500, b + 2500, 0});  // another thread
  }
  return p;
}

}  // namespace tscope::prof::testing
