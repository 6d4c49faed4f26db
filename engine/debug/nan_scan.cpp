#include "engine/debug/nan_scan.h"

#include <cmath>
#include <cstring>

namespace tscope::engine::debug {

namespace {

// Note [One pass per value]: four independent 16-byte vectors per step (GCC vector extensions,
// so it vectorises at -O2 on the baseline instruction set); |x| clears the sign bit, and NaN
// never wins the max (a > m is false), the x * 0 sum catches it.
template <class T, class I>
QuickScan scanFloats(const T* p, std::int64_t n, bool wantMax) {
  constexpr int L = static_cast<int>(16 / sizeof(T));
  typedef T V __attribute__((vector_size(16)));
  typedef I IV __attribute__((vector_size(16)));
  const IV noSign = ~IV{} >> 1;  // all bits but the sign (logical shift of an unsigned type)
  V z0{}, z1{}, z2{}, z3{}, m0{}, m1{}, m2{}, m3{};
  const V zero{};
  std::int64_t i = 0;
  auto load = [&](std::int64_t k) {
    V v;
    std::memcpy(&v, p + k, sizeof(V));
    return v;
  };
  auto absOf = [&](V v) { return reinterpret_cast<V>(reinterpret_cast<IV>(v) & noSign); };
  if (wantMax) {
    for (; i + 4 * L <= n; i += 4 * L) {
      const V a0 = load(i), a1 = load(i + L), a2 = load(i + 2 * L), a3 = load(i + 3 * L);
      z0 += a0 * zero;
      z1 += a1 * zero;
      z2 += a2 * zero;
      z3 += a3 * zero;
      const V b0 = absOf(a0), b1 = absOf(a1), b2 = absOf(a2), b3 = absOf(a3);
      m0 = b0 > m0 ? b0 : m0;
      m1 = b1 > m1 ? b1 : m1;
      m2 = b2 > m2 ? b2 : m2;
      m3 = b3 > m3 ? b3 : m3;
    }
  } else {
    for (; i + 4 * L <= n; i += 4 * L) {
      z0 += load(i) * zero;
      z1 += load(i + L) * zero;
      z2 += load(i + 2 * L) * zero;
      z3 += load(i + 3 * L) * zero;
    }
  }
  T z = 0, mx = 0;
  for (; i < n; ++i) {
    z += p[i] * T(0);
    const T a = std::fabs(p[i]);
    mx = a > mx ? a : mx;
  }
  const V zs = z0 + z1 + z2 + z3;
  for (int j = 0; j < L; ++j) {
    z += zs[j];
    for (const V* m : {&m0, &m1, &m2, &m3}) mx = (*m)[j] > mx ? (*m)[j] : mx;
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
      return scanFloats<float, std::uint32_t>(c.data<float>(), n, wantMaxAbs);
    case DType::Float64:
      return scanFloats<double, std::uint64_t>(c.data<double>(), n, wantMaxAbs);
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
