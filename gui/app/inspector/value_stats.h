#pragma once
// Statistics of one tensor value for the inspector: counts, min/max/mean/std over the finite
// elements, NaN and Inf counts, and a histogram of the finite elements. A pure function of the
// tensor (no Qt), run on a worker for big values.

#include "engine/tensor/tensor.h"

#include <cstdint>
#include <vector>

namespace tscope::gui {

inline constexpr int kHistogramBins = 32;

struct ValueStats {
  engine::DType dtype = engine::DType::Float32;
  engine::Shape shape;
  std::int64_t count = 0;        // elements
  std::int64_t finiteCount = 0;  // elements that are neither NaN nor ±Inf
  std::int64_t nanCount = 0;
  std::int64_t posInfCount = 0;
  std::int64_t negInfCount = 0;
  // Over the finite elements; NaN when there is none. std is the population deviation (numpy's
  // default, ddof = 0). Bool counts as 0/1.
  double min = 0, max = 0, mean = 0, std = 0;
  // Equal-width bins over [min, max] of the finite elements (the last bin includes max); when
  // min == max every finite element is in bin 0. Empty when the tensor has no finite element.
  std::vector<std::int64_t> histogram;
  double histogramLow = 0, histogramHigh = 0;
};

// The statistics of `value` (any dtype, any layout, views included). `bins` >= 1.
ValueStats computeValueStats(const engine::Tensor& value, int bins = kHistogramBins);

// The bin of a finite `x` in `bins` equal bins over [low, high] (high included in the last).
int histogramBin(double x, double low, double high, int bins);

}  // namespace tscope::gui
