#include "profiling/gpu_clock.h"

#include <algorithm>

namespace tscope::prof {

bool HostClockMap::addSample(std::int64_t hostBeforeNs, std::int64_t gpuNs,
                             std::int64_t hostAfterNs) {
  if (gpuNs <= 0 || hostAfterNs < hostBeforeNs) return false;
  // The midpoint without overflow: before + (after - before) / 2.
  const std::int64_t half = (hostAfterNs - hostBeforeNs) / 2;
  const Sample s{gpuNs, hostBeforeNs + half - gpuNs, half};
  auto at = std::lower_bound(m_samples.begin(), m_samples.end(), gpuNs,
                             [](const Sample& a, std::int64_t g) { return a.gpuNs < g; });
  // Note [GPU clock]: a reading next to an existing one replaces it when its bracket is narrower.
  for (auto near : {at, at == m_samples.begin() ? m_samples.end() : at - 1}) {
    if (near == m_samples.end()) continue;
    const std::int64_t distance = near->gpuNs > gpuNs ? near->gpuNs - gpuNs : gpuNs - near->gpuNs;
    if (distance < kMergeNs) {
      if (s.uncertaintyNs < near->uncertaintyNs) {
        m_samples.erase(near);
        at = std::lower_bound(m_samples.begin(), m_samples.end(), gpuNs,
                              [](const Sample& a, std::int64_t g) { return a.gpuNs < g; });
        m_samples.insert(at, s);
      }
      return true;
    }
  }
  m_samples.insert(at, s);
  return true;
}

std::int64_t HostClockMap::toHost(std::int64_t gpuNs) const {
  if (gpuNs == 0 || m_samples.empty()) return gpuNs;
  auto after = std::lower_bound(m_samples.begin(), m_samples.end(), gpuNs,
                                [](const Sample& a, std::int64_t g) { return a.gpuNs < g; });
  if (after == m_samples.begin()) return gpuNs + after->offsetNs;
  if (after == m_samples.end()) return gpuNs + m_samples.back().offsetNs;
  const Sample& a = *(after - 1);
  const Sample& b = *after;
  // Linear between the two offsets; long double keeps the product of two nanosecond spans exact
  // enough (each under 2^63, their ratio is what matters).
  const long double t =
      static_cast<long double>(gpuNs - a.gpuNs) / static_cast<long double>(b.gpuNs - a.gpuNs);
  const long double offset = a.offsetNs + t * static_cast<long double>(b.offsetNs - a.offsetNs);
  return gpuNs + static_cast<std::int64_t>(offset >= 0 ? offset + 0.5L : offset - 0.5L);
}

}  // namespace tscope::prof
