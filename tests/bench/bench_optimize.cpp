// Compile time of fast_run on synthetic graphs (issue 4): stacked MLP layers with elementwise tails
// and many shared constants, at about 1k, 10k and 100k nodes. Prints the time of each size, the
// ratio time(100k)/time(10k) (linear would be 10; the target is under 12) and the time per phase.
//
//   bench_optimize [--max-nodes N] [--repeat R]
// Each size runs at least R times and, below the largest size, until about one second of compiles
// has been measured (capped at 15 runs): this shared machine's noise moves single 10k compiles by
// half, and a median of more runs settles where they are cheap. Every run compiles twice, each time
// on a freshly built graph: "hot" right after building it (a 10k-node graph is still in the caches,
// a 100k-node one mostly not) and "cold" after evicting every cache level (Note [Hot and cold
// scaling], evict_caches.h), whose ratio is the compiler's own scaling.
#include "engine/compile/function.h"
#include "engine/io/optimize_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
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
    auto W = SharedVariable::create(Tensor::full(DType::Float32, {16, 16}, 0.01), "W" + std::to_string(layer));
    auto b = SharedVariable::create(Tensor::full(DType::Float32, {16}, 0.0), "b" + std::to_string(layer));
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

double secondsOf(auto&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t maxNodes = 100000;
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--max-nodes")) maxNodes = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat")) repeat = std::stoi(argv[i + 1]);
  }
  std::printf("fast_run compile of synthetic MLP stacks (median of at least %d runs)\n", repeat);
  std::printf("%10s %10s %10s %12s %12s %12s %12s %6s\n", "nodes", "after", "build s", "compile s", "cold s",
              "rewrite s", "us/node", "runs");
  std::vector<std::pair<std::size_t, double>> results, coldResults;
  for (std::size_t n = 1000; n <= maxNodes; n *= 10) {
    std::vector<double> times, coldTimes;
    RewriteProfile last;
    std::size_t after = 0;
    double buildSeconds = 0;
    for (int r = 0; r < repeat || (n < maxNodes && r < 15 && std::accumulate(times.begin(), times.end(), 0.0) < 1.0); ++r) {
      for (bool cold : {false, true}) {
        Synthetic s;
        buildSeconds = secondsOf([&] { s = build(n); });
        if (cold) tscope::bench::evictCaches();
        CompileOptions o;
        o.mode = Mode::FastRun;
        o.keepBuffers = true;
        std::optional<Function> f;
        (cold ? coldTimes : times).push_back(secondsOf([&] { f.emplace(compile({s.x}, {s.out}, {}, o)); }));
        last = f->rewriteProfile();
        after = f->graph().nodeCount();
      }
    }
    auto medianOf = [](std::vector<double>& v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double median = medianOf(times), coldMedian = medianOf(coldTimes);
    std::printf("%10zu %10zu %10.3f %12.3f %12.3f %12.3f %12.2f %6zu\n", last.nodesBefore, after, buildSeconds, median,
                coldMedian, last.seconds, 1e6 * median / static_cast<double>(last.nodesBefore), times.size());
    results.emplace_back(last.nodesBefore, median);
    coldResults.emplace_back(last.nodesBefore, coldMedian);
    if (n == maxNodes || n * 10 > maxNodes) std::printf("\nprofile of the largest graph:\n%s", io::rewriteProfileText(last, 20).c_str());
  }
  for (std::size_t i = 1; i < results.size(); ++i)
    std::printf("time(%zu)/time(%zu) = %.2f hot, %.2f cold (linear: %.1f)\n", results[i].first, results[i - 1].first,
                results[i].second / results[i - 1].second, coldResults[i].second / coldResults[i - 1].second,
                static_cast<double>(results[i].first) / static_cast<double>(results[i - 1].first));
  return 0;
}
