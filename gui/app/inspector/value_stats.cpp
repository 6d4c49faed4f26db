#include "gui/app/inspector/value_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace tscope::gui {

namespace {

template <class T>
double toDouble(T v) {
  if constexpr (std::is_same_v<T, engine::Half>)
    return engine::halfToFloat(v);
  else
    return static_cast<double>(v);
}

// Calls f(double) for every element of a contiguous tensor.
template <class F>
void forEachElement(const engine::Tensor& t, F&& f) {
  engine::dispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = t.data<T>();
    const std::int64_t n = t.numel();
    for (std::int64_t i = 0; i < n; ++i) f(toDouble(data[i]));
  });
}

}  // namespace

int histogramBin(double x, double low, double high, int bins) {
  if (!(high > low)) return 0;
  const int bin = static_cast<int>((x - low) / (high - low) * bins);
  return std::clamp(bin, 0, bins - 1);
}

ValueStats computeValueStats(const engine::Tensor& value, int bins) {
  if (bins < 1)
    throw std::invalid_argument("computeValueStats: expected at least 1 bin, got " +
                                std::to_string(bins));
  if (!value.defined()) throw std::invalid_argument("computeValueStats: the tensor is undefined");
  ValueStats s;
  s.dtype = value.dtype();
  s.shape = value.shape();
  s.count = value.numel();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.min = s.max = s.mean = s.std = nan;
  if (s.count == 0) return s;
  const engine::Tensor t = value.contiguous();
  // Pass 1: counts, extremes and the mean/variance by Welford's update (stable on large values).
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, mean = 0, m2 = 0;
  std::int64_t n = 0;
  forEachElement(t, [&](double x) {
    if (std::isnan(x)) {
      ++s.nanCount;
    } else if (std::isinf(x)) {
      ++(x > 0 ? s.posInfCount : s.negInfCount);
    } else {
      ++n;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      const double d = x - mean;
      mean += d / static_cast<double>(n);
      m2 += d * (x - mean);
    }
  });
  s.finiteCount = n;
  if (n == 0) return s;
  s.min = lo;
  s.max = hi;
  s.mean = mean;
  s.std = std::sqrt(m2 / static_cast<double>(n));
  // Pass 2: the histogram over [min, max].
  s.histogram.assign(static_cast<std::size_t>(bins), 0);
  s.histogramLow = lo;
  s.histogramHigh = hi;
  forEachElement(t, [&](double x) {
    if (std::isfinite(x)) ++s.histogram[static_cast<std::size_t>(histogramBin(x, lo, hi, bins))];
  });
  return s;
}

}  // namespace tscope::gui
