// Compile time of fast_run on synthetic graphs (issue 4): stacked MLP layers with elementwise tails
// and many shared constants, at about 1k, 10k and 100k nodes. Prints the time of each size, the
// ratio time(100k)/time(10k) (linear would be 10; the target is under 12) from the medians and from
// paired rounds, the time per phase of the largest graph's last compile, and the median time of
// each phase at the two largest sizes.
//
//   bench_optimize [--max-nodes N] [--repeat R]
// Each size runs at least R times and, below the largest size, until about one second of compiles
// has been measured (capped at 15 runs): this shared machine's noise moves single 10k compiles by
// half, and a median of more runs settles where they are cheap. Every run compiles twice, each time
// on a freshly built graph: "hot" right after building it (a 10k-node graph is still in the caches,
// a 100k-node one mostly not) and "cold" after evicting every cache level (Note [Hot and cold
// scaling], evict_caches.h), whose ratio is the compiler's own scaling.
#include "engine/compile/function.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/session/optimize_graph.h"
#include "engine/tensor/tensor.h"
#include "evict_caches.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

using namespace tscope::engine;

namespace {

struct Synthetic {
  VarPtr x;
  VarPtr out;
  std::size_t nodes = 0;
};

// One layer: h = tanh(dot(h, W) + b); a tail of elementwise ops with fresh scalar constants (the
// same values every layer, so merge has constants to merge), a duplicated subexpression (merge),
// x * 1 (canonicalize) and log(1 + u) (stabilize). About 16 nodes per layer.
Synthetic build(std::size_t targetNodes) {
  Synthetic s;
  s.x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 16}), "x");
  VarPtr h = s.x;
  std::size_t layer = 0;
  const std::size_t perLayer = 16;
  for (; layer * perLayer < targetNodes; ++layer) {
    auto W = SharedVariable::create(Tensor::full(DType::Float32, {16, 16}, 0.01),
                                    "W" + std::to_string(layer));
    auto b = SharedVariable::create(Tensor::full(DType::Float32, {16}, 0.0),
                                    "b" + std::to_string(layer));
    VarPtr a = dot(h, W) + b;
    VarPtr t = tanh(a);
    VarPtr u = t * 0.5f + 0.25f;
    VarPtr v = t * 0.5f + 0.25f;  // the same expression again
    VarPtr w = log(1.0f + sqr(u)) * 1.0f;
    h = (w - v * 0.125f) / 2.0f + exp(neg(neg(u))) * 0.01f;
  }
  s.out = h;
  s.nodes = layer * perLayer;
  return s;
}

using tscope::bench::secondsOf;

struct CompileRun {
  double buildSeconds = 0;
  double seconds = 0;
  RewriteProfile profile;
  std::size_t after = 0;
};

// Builds a fresh graph of about n nodes and compiles it in fast_run; `cold` evicts the caches
// between the two.
CompileRun compileOnce(std::size_t n, bool cold) {
  CompileRun run;
  Synthetic s;
  run.buildSeconds = secondsOf([&] { s = build(n); });
  if (cold) tscope::bench::evictCaches();
  CompileOptions o;
  o.mode = Mode::FastRun;
  o.keepBuffers = true;
  std::optional<Function> f;
  run.seconds = secondsOf([&] { f.emplace(compile({s.x}, {s.out}, {}, o)); });
  run.profile = f->rewriteProfile();
  run.after = f->graph().nodeCount();
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t maxNodes = 100000;
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--max-nodes"))
      maxNodes = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::stoi(argv[i + 1]);
  }
  std::printf("fast_run compile of synthetic MLP stacks (median of at least %d runs)\n", repeat);
  std::printf("%10s %10s %10s %12s %12s %12s %12s %6s\n", "nodes", "after", "build s", "compile s",
              "cold s", "rewrite s", "us/node", "runs");
  std::vector<std::pair<std::size_t, double>> results, coldResults;
  // Per size: the median seconds of each phase in the hot runs, then of everything outside the
  // phases (the clone, the VM's set-up), so that a step that scales worse than the rest shows.
  std::vector<std::vector<std::pair<std::string, double>>> phaseMedians;
  auto medianOf = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (std::size_t n = 1000; n <= maxNodes; n *= 10) {
    std::vector<double> times, coldTimes;
    std::vector<std::pair<std::string, std::vector<double>>> phaseTimes;
    RewriteProfile last;
    std::size_t after = 0;
    double buildSeconds = 0;
    for (int r = 0; r < repeat || (n < maxNodes && r < 15 &&
                                   std::accumulate(times.begin(), times.end(), 0.0) < 1.0);
         ++r) {
      for (bool cold : {false, true}) {
        CompileRun run = compileOnce(n, cold);
        const double seconds = run.seconds;
        buildSeconds = run.buildSeconds;
        (cold ? coldTimes : times).push_back(seconds);
        last = std::move(run.profile);
        after = run.after;
        if (cold) continue;
        if (phaseTimes.empty()) {
          for (const PhaseStats& p : last.phases) phaseTimes.push_back({p.name, {}});
          phaseTimes.push_back({"(outside)", {}});
        }
        for (std::size_t k = 0; k < last.phases.size() && k + 1 < phaseTimes.size(); ++k)
          phaseTimes[k].second.push_back(last.phases[k].seconds);
        phaseTimes.back().second.push_back(seconds - last.seconds);
      }
    }
    phaseMedians.emplace_back();
    for (auto& [name, v] : phaseTimes) phaseMedians.back().push_back({name, medianOf(v)});
    const double median = medianOf(times), coldMedian = medianOf(coldTimes);
    std::printf("%10zu %10zu %10.3f %12.3f %12.3f %12.3f %12.2f %6zu\n", last.nodesBefore, after,
                buildSeconds, median, coldMedian, last.seconds,
                1e6 * median / static_cast<double>(last.nodesBefore), times.size());
    results.emplace_back(last.nodesBefore, median);
    coldResults.emplace_back(last.nodesBefore, coldMedian);
    if (n == maxNodes || n * 10 > maxNodes)
      std::printf("\nprofile of the largest graph:\n%s",
                  session::rewriteProfileText(last, 20).c_str());
  }
  if (phaseMedians.size() >= 2) {
    const auto& small = phaseMedians[phaseMedians.size() - 2];
    const auto& large = phaseMedians.back();
    std::printf("\nhot medians per phase: %zu vs %zu nodes\n", results[results.size() - 2].first,
                results.back().first);
    for (std::size_t k = 0; k < small.size() && k < large.size(); ++k)
      std::printf("  %-16s %9.4f s %9.4f s   ratio %6.2f\n", small[k].first.c_str(),
                  small[k].second, large[k].second,
                  small[k].second > 0 ? large[k].second / small[k].second : 0.0);
  }
  std::printf("\nscaling, medians of separate runs:\n");
  for (std::size_t i = 1; i < results.size(); ++i)
    std::printf("  time(%zu)/time(%zu) = %.2f hot, %.2f cold (linear: %.1f)\n", results[i].first,
                results[i - 1].first, results[i].second / results[i - 1].second,
                coldResults[i].second / coldResults[i - 1].second,
                static_cast<double>(results[i].first) / static_cast<double>(results[i - 1].first));
  // Note [Paired ratios] (bench_graph.cpp): the two largest sizes again, one after the other in
  // each round, so that both runs of a ratio see the same load on this shared machine.
  if (results.size() >= 2) {
    std::size_t large = 1000;  // the sizes of the loop above
    while (large * 10 <= maxNodes) large *= 10;
    const std::size_t small = large / 10;
    std::vector<double> ratios[2];
    std::size_t smallNodes = 0, largeNodes = 0;
    for (int r = 0; r < std::max(repeat, 5); ++r)
      for (bool cold : {false, true}) {
        const CompileRun a = compileOnce(small, cold), b = compileOnce(large, cold);
        smallNodes = a.profile.nodesBefore;
        largeNodes = b.profile.nodesBefore;
        ratios[cold].push_back(b.seconds / a.seconds);
      }
    std::printf(
        "scaling, paired (median of %zu rounds, each a %zu-node then a %zu-node compile):\n",
        ratios[0].size(), smallNodes, largeNodes);
    std::printf(
        "  (a dependent load at random in 8 MB: %.0f ns, in 128 MB: %.0f ns; Note [Hot and cold "
        "scaling])\n",
        tscope::bench::dependentLoadNs(std::size_t{8} << 20),
        tscope::bench::dependentLoadNs(std::size_t{128} << 20));
    for (bool cold : {false, true}) {
      auto& v = ratios[cold];
      std::sort(v.begin(), v.end());
      std::printf("  %-4s ratio %.2f (range %.2f-%.2f)\n", cold ? "cold" : "hot", v[v.size() / 2],
                  v.front(), v.back());
    }
  }
  return 0;
}
