#include "engine/debug/value_stats.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace tscope::engine::debug {

namespace {

template <class T>
double asDouble(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return static_cast<double>(halfToFloat(v));
  else
    return static_cast<double>(v);
}

template <class T>
void accumulate(const T* p, std::int64_t n, TensorStats& s) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, sq = 0;
  std::int64_t finite = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = asDouble(p[i]);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half>) {
      if (std::isnan(v)) {
        ++s.nan;
        continue;
      }
      if (std::isinf(v)) {
        ++(v > 0 ? s.posInf : s.negInf);
        continue;
      }
    }
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
    sq += v * v;
    ++finite;
  }
  if (finite == 0) {
    s.min = s.max = s.mean = s.norm = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  s.min = lo;
  s.max = hi;
  s.mean = sum / static_cast<double>(finite);
  s.norm = std::sqrt(sq);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

TensorStats statsOf(const Tensor& value) {
  if (!value.defined()) throw std::invalid_argument("statsOf: the tensor is undefined");
  TensorStats s;
  s.shape.assign(value.shape().begin(), value.shape().end());
  s.dtype = value.dtype();
  s.size = value.numel();
  const Tensor c = value.contiguous();
  dispatchDType(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    accumulate(static_cast<const T*>(c.rawData()), s.size, s);
  });
  return s;
}

std::string toString(const TensorStats& s) {
  std::string out(dtypeName(s.dtype));
  out += " (";
  for (std::size_t i = 0; i < s.shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s.shape[i]);
  }
  if (s.shape.size() == 1) out += ",";
  out += ")";
  out += " min " + number(s.min) + " max " + number(s.max) + " mean " + number(s.mean) + " norm " +
         number(s.norm);
  if (s.nan) out += " nan " + std::to_string(s.nan);
  if (s.posInf) out += " +inf " + std::to_string(s.posInf);
  if (s.negInf) out += " -inf " + std::to_string(s.negInf);
  return out;
}

double maxAbsDifference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument("maxAbsDifference: shapes " + shapeToString(a.shape()) + " and " +
                                shapeToString(b.shape()) + " differ");
  const std::vector<double> x = a.toDoubles(), y = b.toDoubles();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i]) continue;  // equal values, equal infinities
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    const double d = std::abs(x[i] - y[i]);  // NaN or +Inf when one side is not finite
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = d > worst ? d : worst;
  }
  return worst;
}

}  // namespace tscope::engine::debug
