#pragma once
// Roofline: where a node's measured time stands against this machine's bound for its cost.
// A node that moves B bytes and computes F flops cannot take less than
//   max(F / peak flop rate, B / peak bandwidth)
// seconds (Williams, Waterman, Patterson 2009); the fraction of that bound it reaches says whether
// a slow node is slow because it must be (fraction near 1) or because its kernel is poor (near 0).
//
//   RooflinePoint p = roofline(node.cost, node.time.mean / calls, machine);
//   if (p.known) std::printf("%.1f GFLOP/s, %.0f%% of the %s roof", p.gflops, 100 * p.fraction,
//                            rooflineLimitName(p.limit).data());

#include "engine/graph/op_cost.h"
#include "profiling/calibration.h"

#include <string_view>

namespace tscope::prof {

struct RooflinePoint {
  bool known = false;  // false when the cost is unknown or seconds <= 0 or no calibration
  double gflops = 0, gbps = 0, intensity = 0;  // achieved; intensity = flops / bytes
  double boundSeconds = 0;                     // max(flops / peak flops, bytes / peak bandwidth)
  double fraction = 0;                         // boundSeconds / seconds (1 = at the roofline)
  enum class Limit { Compute, Memory } limit = Limit::Memory;
  bool operator==(const RooflinePoint&) const = default;
};

// "compute" or "memory".
std::string_view rooflineLimitName(RooflinePoint::Limit limit);

// The point of one call that took `seconds` (Note [Roofline conventions] in roofline.cpp).
// allThreads: compare with the all-threads peaks (true) or the one-thread peaks. "No
// calibration" is a peak that is not positive: known stays false.
RooflinePoint roofline(const engine::OpCost& cost, double seconds, const Calibration& machine,
                       bool allThreads = true);

// The ridge point: the intensity (flops per byte) where the two bounds meet; 0 without figures.
double ridgeIntensity(const Calibration& machine, bool allThreads = true);

}  // namespace tscope::prof
