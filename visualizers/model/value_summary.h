#pragma once
// The statistics line of a constant's or shared variable's value, for tooltips (a parameter
// badge's hover, Note [Parameters] in view_model.h):
//   QString text = vis::valueStatistics(var);  // "min -0.51  max 0.49  mean 0.0012  std 0.058"
// Computed when asked (the value may be a lazily mapped .tsg tensor: nothing is read before).

#include "engine/graph/variable.h"

#include <QString>

#include <cstdint>

namespace tscope::vis {

// Values with more elements than this are not summarised (the inspector computes those on a
// worker).
inline constexpr std::int64_t kMaxSummarisedElements = std::int64_t(1) << 24;

// "min … max … mean … std …" over the finite elements, plus NaN / Inf counts when there are any;
// a sentence saying why not for a regular variable, a device tensor or a value too big to
// summarise here. Never throws.
QString valueStatistics(const engine::Variable& var);

}  // namespace tscope::vis
