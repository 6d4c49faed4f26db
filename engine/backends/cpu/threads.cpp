#include "engine/backends/cpu/threads.h"

#include "engine/backends/cpu/gemm.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#include <thread>

namespace tscope::engine::cpu {

namespace {

std::atomic<int> g_threads{0};  // 0: not yet read from the environment

int fromEnvironment() {
  if (const char* env = std::getenv("TSCOPE_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 4096) return static_cast<int>(n);
  }
  return availableCpus();
}

}  // namespace

int availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n >= 1) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw >= 1 ? static_cast<int>(hw) : 1;
}

int intraOpThreads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n >= 1) return n;
  static std::once_flag once;
  std::call_once(once, [] {
    int expected = 0;
    const int initial = fromEnvironment();
    if (g_threads.compare_exchange_strong(expected, initial)) setGemmThreads(initial);
  });
  return g_threads.load(std::memory_order_relaxed);
}

void setIntraOpThreads(int n) {
  if (n < 1) n = 1;
  g_threads.store(n, std::memory_order_relaxed);
  setGemmThreads(n);
}

}  // namespace tscope::engine::cpu
