#include "engine/debug/nan_scan.h"

#include <cmath>

namespace tscope::engine::debug {

namespace {

constexpr int kLanes = 16;

// Note [One pass per value].
template <class T>
QuickScan scanFloats(const T* p, std::int64_t n, bool wantMax) {
  T zero[kLanes] = {};
  T m[kLanes] = {};
  std::int64_t i = 0;
  if (wantMax) {
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        const T x = p[i + j];
        zero[j] += x * T(0);
        const T a = x < T(0) ? -x : x;
        m[j] = a > m[j] ? a : m[j];
      }
  } else {
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) zero[j] += p[i + j] * T(0);
  }
  T z = 0, mx = 0;
  for (; i < n; ++i) {
    z += p[i] * T(0);
    const T a = std::fabs(p[i]);
    mx = a > mx ? a : mx;
  }
  for (int j = 0; j < kLanes; ++j) {
    z += zero[j];
    mx = m[j] > mx ? m[j] : mx;
  }
  QuickScan out;
  out.nonFinite = z != z;
  out.maxAbs = static_cast<double>(mx);
  return out;
}

template <class T>
double maxAbsInts(const T* p, std::int64_t n) {
  double m = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(p[i])));
  return m;
}

}  // namespace

QuickScan quickScan(const Tensor& value, bool wantMaxAbs) {
  if (!value.defined() || value.numel() == 0) return {};
  const DType d = value.dtype();
  if (!isFloat(d) && !wantMaxAbs) return {};
  // A broadcast or strided view is scanned from a contiguous copy (rare: most outputs are
  // contiguous buffers).
  Tensor copy;
  if (!value.isContiguous()) copy = value.contiguous();
  const Tensor& c = copy.defined() ? copy : value;
  const std::int64_t n = c.numel();
  switch (d) {
    case DType::Float32:
      return scanFloats(c.data<float>(), n, wantMaxAbs);
    case DType::Float64:
      return scanFloats(c.data<double>(), n, wantMaxAbs);
    case DType::Float16: {
      const Half* p = c.data<Half>();
      QuickScan out;
      float z = 0, m = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const float x = halfToFloat(p[i]);
        z += x * 0.0f;
        m = std::max(m, std::fabs(x));
      }
      out.nonFinite = z != z;
      out.maxAbs = m;
      return out;
    }
    default:
      break;
  }
  QuickScan out;
  dispatchDType(d, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      out.maxAbs = maxAbsInts(reinterpret_cast<const std::uint8_t*>(c.data<bool>()), n);
    } else if constexpr (std::is_integral_v<T>) {
      out.maxAbs = maxAbsInts(c.data<T>(), n);
    }
  });
  return out;
}

std::int64_t BadDetail::firstOf(NanChecks kinds, NanCheck* kind) const {
  std::int64_t best = -1;
  const NanCheck order[4] = {NanCheck::NaN, NanCheck::PosInf, NanCheck::NegInf, NanCheck::Big};
  for (int k = 0; k < 4; ++k) {
    if (!(kinds & bit(order[k])) || first[k] < 0) continue;
    if (best < 0 || first[k] < best) {
      best = first[k];
      if (kind) *kind = order[k];
    }
  }
  return best;
}

BadDetail countBad(const Tensor& value, bool big, double bigThreshold) {
  BadDetail out;
  if (!value.defined()) return out;
  out.counts.numel = value.numel();
  if (out.counts.numel == 0) return out;
  const Tensor c = value.isContiguous() ? value : value.contiguous();
  auto note = [&](int k, std::int64_t i, double v) {
    if (out.first[k] < 0) {
      out.first[k] = i;
      out.firstValue[k] = v;
    }
  };
  auto visit = [&](std::int64_t i, double x) {
    if (std::isnan(x)) {
      ++out.counts.nan;
      note(0, i, x);
    } else if (std::isinf(x)) {
      if (x > 0) {
        ++out.counts.posInf;
        note(1, i, x);
      } else {
        ++out.counts.negInf;
        note(2, i, x);
      }
    } else if (big && std::fabs(x) > bigThreshold) {
      ++out.counts.big;
      note(3, i, x);
    }
  };
  const std::int64_t n = c.numel();
  dispatchDType(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = c.data<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, Half>)
        visit(i, static_cast<double>(halfToFloat(p[i])));
      else
        visit(i, static_cast<double>(p[i]));
    }
  });
  return out;
}

std::vector<std::int64_t> unflatten(std::int64_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::size_t k = shape.size(); k-- > 0;) {
    const std::int64_t d = shape[k] > 0 ? shape[k] : 1;
    index[k] = flat % d;
    flat /= d;
  }
  return index;
}

std::optional<std::vector<std::int64_t>> broadcastIndex(const std::vector<std::int64_t>& outIndex,
                                                        const std::vector<std::int64_t>& inShape) {
  if (inShape.size() > outIndex.size()) return std::nullopt;
  const std::size_t lead = outIndex.size() - inShape.size();
  std::vector<std::int64_t> out(inShape.size());
  for (std::size_t k = 0; k < inShape.size(); ++k) {
    const std::int64_t i = outIndex[lead + k];
    if (inShape[k] == 1)
      out[k] = 0;
    else if (i < inShape[k])
      out[k] = i;
    else
      return std::nullopt;
  }
  return out;
}

}  // namespace tscope::engine::debug
