#pragma once
// The value scans of NanGuard (engine/debug/nan_guard.h): a quick pass over a value that only says
// whether anything is bad, and a detailed pass, run only then, for the counts and first indices.
//
// Note [One pass per value]: the quick pass reads each element once with independent lanes the
// compiler vectorises: sum(x * 0) is NaN exactly when some x is NaN or infinite, and max|x| over
// the same lanes decides "big". Only a value that fails it is read again (countBad).

#include "engine/debug/nan_report.h"
#include "engine/tensor/tensor.h"

#include <array>
#include <cstdint>

namespace tscope::engine::debug {

struct QuickScan {
  bool nonFinite = false;
  double maxAbs = 0;  // of the elements, when asked for and everything is finite
};
// Integer and bool values are never non-finite (maxAbs is computed for them only when asked).
QuickScan quickScan(const Tensor& value, bool wantMaxAbs);

struct BadDetail {
  BadCounts counts;
  // Per kind (NaN, +inf, -inf, big in that order): the first flat (row-major) index, -1 if none,
  // and its value.
  std::array<std::int64_t, 4> first{-1, -1, -1, -1};
  std::array<double, 4> firstValue{0, 0, 0, 0};
  // The first flat index among the kinds in `kinds`, -1 if none.
  std::int64_t firstOf(NanChecks kinds, NanCheck* kind = nullptr) const;
};
// big: count |x| > bigThreshold for finite x.
BadDetail countBad(const Tensor& value, bool big, double bigThreshold);

// The row-major multi-index of a flat index in a shape.
std::vector<std::int64_t> unflatten(std::int64_t flat, const std::vector<std::int64_t>& shape);
// The element of `input` that an elementwise op with broadcasting reads for output element
// `outIndex` (numpy rules: leading dims missing, size-1 dims read index 0); nullopt when the
// input's shape does not broadcast to the output's.
std::optional<std::vector<std::int64_t>> broadcastIndex(const std::vector<std::int64_t>& outIndex,
                                                        const std::vector<std::int64_t>& inShape);

}  // namespace tscope::engine::debug
