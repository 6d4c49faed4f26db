#pragma once
// Note [Hot and cold scaling] (bench_graph.cpp, bench_optimize.cpp): a benchmark that repeats a
// step back to back keeps a small graph in the caches between runs and a large one not, so its
// time(100k) / time(10k) also measures the cache hierarchy. evictCaches() writes one byte per cache
// line of a buffer twice the size of the largest cache the CPU reports (at least 64 MiB, at most
// 2 GiB), which leaves none of the graph in any cache level: runs after it start where a graph
// just built or loaded elsewhere starts, and the ratio of those runs is the algorithm's scaling.

#include <algorithm>
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tscope::bench {

// Seconds that f() takes.
template <class F>
double secondsOf(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline void evictCaches() {
  static std::vector<char> buffer = [] {
    std::size_t largest = 0;
    for (const auto& cache : benchmark::CPUInfo::Get().caches)
      largest = std::max(largest, static_cast<std::size_t>(cache.size));
    return std::vector<char>(
        std::clamp<std::size_t>(2 * largest, std::size_t{64} << 20, std::size_t{2} << 30));
  }();
  for (std::size_t i = 0; i < buffer.size(); i += 64) buffer[i] = static_cast<char>(buffer[i] + 1);
  benchmark::ClobberMemory();
}

// Nanoseconds per load of a chain of dependent loads at random places in a `bytes` buffer: the
// latency a graph walk pays per cache miss once the graph is that large. bench_graph and
// bench_optimize print it for a 10k-node graph's size and a 100k-node graph's size, since the gap
// between the two is what their hot ratios add to the algorithm's scaling (on this project's test
// machine: about 38 ns up to 8 MB, 130-150 ns from 16 MB on, so its last-level cache holds about
// 10 MB, not the 300 MB the CPU reports).
inline double dependentLoadNs(std::size_t bytes) {
  struct alignas(64) Line {
    std::size_t next;
  };
  const std::size_t n = std::max<std::size_t>(bytes / sizeof(Line), 2);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::uint64_t state = 0x9e3779b97f4a7c15ull;  // a fixed shuffle (xorshift), the same every run
  for (std::size_t i = n - 1; i > 0; --i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::swap(order[i], order[state % (i + 1)]);
  }
  std::vector<Line> lines(n);
  for (std::size_t i = 0; i < n; ++i) lines[order[i]].next = order[(i + 1) % n];
  std::size_t p = order[0];
  for (std::size_t i = 0; i < n; ++i)
    p = lines[p].next;  // once around: the buffer is mapped and cached
  constexpr std::size_t kSteps = 2'000'000;
  const double seconds = secondsOf([&] {
    for (std::size_t i = 0; i < kSteps; ++i) p = lines[p].next;
  });
  benchmark::DoNotOptimize(p);
  return 1e9 * seconds / static_cast<double>(kSteps);
}

}  // namespace tscope::bench
