#include "profiling/roofline.h"

#include <algorithm>
#include <cmath>

namespace tscope::prof {

std::string_view rooflineLimitName(RooflinePoint::Limit limit) {
  return limit == RooflinePoint::Limit::Compute ? "compute" : "memory";
}

double ridgeIntensity(const Calibration& machine, bool allThreads) {
  const double flops = allThreads ? machine.gemmGflopsAll : machine.gemmGflopsOne;
  const double bandwidth = allThreads ? machine.bandwidthGBsAll : machine.bandwidthGBsOne;
  return flops > 0 && bandwidth > 0 ? flops / bandwidth : 0;
}

// Note [Roofline conventions]: the peaks are the calibration's GFLOP/s and GB/s (1e9 each). The
// limit is the larger of the two bounds: compute when flops / peak flops >= bytes / peak
// bandwidth (at the ridge point both bounds are equal and it says compute), memory otherwise,
// so a node that moves nothing and computes nothing is "memory" with a bound of 0 and fraction 0.
// The fraction is not clamped: a node measured faster than its bound (a cost that over-counts,
// or data served from cache rather than DRAM) shows above 1, which is worth seeing, not hiding.
// Intensity is 0 when no bytes move.
RooflinePoint roofline(const engine::OpCost& cost, double seconds, const Calibration& machine,
                       bool allThreads) {
  RooflinePoint p;
  const double peakFlops = (allThreads ? machine.gemmGflopsAll : machine.gemmGflopsOne) * 1e9;
  const double peakBytes = (allThreads ? machine.bandwidthGBsAll : machine.bandwidthGBsOne) * 1e9;
  if (!cost.known || !(seconds > 0) || !std::isfinite(seconds) || !(peakFlops > 0) ||
      !(peakBytes > 0))
    return p;
  p.known = true;
  p.gflops = cost.flops / seconds / 1e9;
  p.gbps = cost.bytes() / seconds / 1e9;
  p.intensity = cost.intensity();
  const double computeSeconds = cost.flops / peakFlops;
  const double memorySeconds = cost.bytes() / peakBytes;
  p.limit = computeSeconds >= memorySeconds && computeSeconds > 0 ? RooflinePoint::Limit::Compute
                                                                  : RooflinePoint::Limit::Memory;
  p.boundSeconds = std::max(computeSeconds, memorySeconds);
  p.fraction = p.boundSeconds / seconds;
  return p;
}

}  // namespace tscope::prof
