#pragma once
// Note [Hot and cold scaling] (bench_graph.cpp, bench_optimize.cpp): a benchmark that repeats a
// step back to back keeps a small graph in the caches between runs and a large one not, so its
// time(100k) / time(10k) also measures the cache hierarchy. evictCaches() writes one byte per cache
// line of a buffer twice the size of the largest cache the CPU reports (at least 64 MiB, at most
// 2 GiB), which leaves none of the graph in any cache level: runs after it start where a graph
// just built or loaded elsewhere starts, and the ratio of those runs is the algorithm's scaling.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tscope::bench {

inline void evictCaches() {
  static std::vector<char> buffer = [] {
    std::size_t largest = 0;
    for (const auto& cache : benchmark::CPUInfo::Get().caches)
      largest = std::max(largest, static_cast<std::size_t>(cache.size));
    return std::vector<char>(std::clamp<std::size_t>(2 * largest, std::size_t{64} << 20, std::size_t{2} << 30));
  }();
  for (std::size_t i = 0; i < buffer.size(); i += 64) buffer[i] = static_cast<char>(buffer[i] + 1);
  benchmark::ClobberMemory();
}

}  // namespace tscope::bench
