#pragma once
// The VM's clock (Note [VM clock] in clock.cpp): steady-clock nanoseconds, read through the
// time-stamp counter where that is invariant. Internal to the VM.

#include <cstdint>

namespace tscope::engine::vmclock {

std::int64_t steadyNs();
// Steady-clock nanoseconds; cheaper than steadyNs() on CPUs with an invariant TSC.
std::int64_t nowNs();

}  // namespace tscope::engine::vmclock
