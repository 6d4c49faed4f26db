#include "profiling/profile.h"

#include <algorithm>
#include <cmath>

namespace tscope::prof {

TimeStats TimeStats::of(std::vector<double> samples) {
  TimeStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const auto n = static_cast<std::int64_t>(samples.size());
  s.count = n;
  for (double v : samples) s.total += v;
  s.mean = s.total / static_cast<double>(n);
  s.min = samples.front();
  s.max = samples.back();
  // Nearest rank: the ceil(p n)-th smallest, 1-based.
  auto rank = [&](double p) {
    auto r = static_cast<std::int64_t>(std::ceil(p * static_cast<double>(n)));
    return samples[static_cast<std::size_t>(std::clamp<std::int64_t>(r, 1, n) - 1)];
  };
  s.median = rank(0.5);
  s.p95 = rank(0.95);
  return s;
}

std::string_view outputKindName(OutputKind kind) {
  switch (kind) {
    case OutputKind::Created:
      return "created";
    case OutputKind::Inplace:
      return "inplace";
    case OutputKind::View:
      return "view";
  }
  return "created";
}

std::string_view gpuEventKindName(GpuEventRecord::Kind kind) {
  switch (kind) {
    case GpuEventRecord::Kind::Kernel:
      return "kernel";
    case GpuEventRecord::Kind::Memcpy:
      return "memcpy";
    case GpuEventRecord::Kind::Memset:
      return "memset";
  }
  return "kernel";
}

std::int64_t Profile::find(const std::vector<std::int64_t>& framePath, std::int64_t id) const {
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].id == id && nodes[i].framePath == framePath) return static_cast<std::int64_t>(i);
  return -1;
}

}  // namespace tscope::prof
