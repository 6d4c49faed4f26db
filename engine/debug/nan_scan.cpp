#include "engine/debug/nan_scan.h"

#include "engine/tensor/device_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string_view>
#include <utility>

namespace tscope::engine::debug {

namespace {

// Note [One pass per value]: four independent vectors per step (GCC vector extensions, so it
// vectorises on any instruction set); |x| clears the sign bit, and NaN never wins the max (a > m
// is false), the x * 0 sum catches it. Note [Scan widths]: the same loop is compiled three times,
// with 16-byte vectors for the baseline (SSE2), 32-byte ones under AVX2 and 64-byte ones under
// AVX-512, and quickScan picks the widest the processor runs (__builtin_cpu_supports, once). On
// values that sit in the cache (most outputs of a step, read right after their node wrote them)
// the scan is bound by instructions, so the wider forms cut its cost by two to four; on values
// streamed from memory all three run at memory speed.
template <int Bytes, class T, class I>
[[gnu::always_inline]] inline QuickScan scanFloatsWith(const T* p, std::int64_t n, bool wantMax) {
  constexpr int L = static_cast<int>(Bytes / sizeof(T));
  typedef T V __attribute__((vector_size(Bytes)));
  typedef I IV __attribute__((vector_size(Bytes)));
  const IV noSign = ~IV{} >> 1;  // all bits but the sign (logical shift of an unsigned type)
  V z0{}, z1{}, z2{}, z3{}, m0{}, m1{}, m2{}, m3{};
  const V zero{};
  std::int64_t i = 0;
#define TSCOPE_SCAN_LOAD(k)               \
  ({                                      \
    V v_;                                 \
    std::memcpy(&v_, p + (k), sizeof(V)); \
    v_;                                   \
  })
#define TSCOPE_SCAN_ABS(v) reinterpret_cast<V>(reinterpret_cast<IV>(v) & noSign)
  if (wantMax) {
    for (; i + 4 * L <= n; i += 4 * L) {
      const V a0 = TSCOPE_SCAN_LOAD(i), a1 = TSCOPE_SCAN_LOAD(i + L);
      const V a2 = TSCOPE_SCAN_LOAD(i + 2 * L), a3 = TSCOPE_SCAN_LOAD(i + 3 * L);
      z0 += a0 * zero;
      z1 += a1 * zero;
      z2 += a2 * zero;
      z3 += a3 * zero;
      const V b0 = TSCOPE_SCAN_ABS(a0), b1 = TSCOPE_SCAN_ABS(a1);
      const V b2 = TSCOPE_SCAN_ABS(a2), b3 = TSCOPE_SCAN_ABS(a3);
      m0 = b0 > m0 ? b0 : m0;
      m1 = b1 > m1 ? b1 : m1;
      m2 = b2 > m2 ? b2 : m2;
      m3 = b3 > m3 ? b3 : m3;
    }
  } else {
    for (; i + 4 * L <= n; i += 4 * L) {
      z0 += TSCOPE_SCAN_LOAD(i) * zero;
      z1 += TSCOPE_SCAN_LOAD(i + L) * zero;
      z2 += TSCOPE_SCAN_LOAD(i + 2 * L) * zero;
      z3 += TSCOPE_SCAN_LOAD(i + 3 * L) * zero;
    }
  }
#undef TSCOPE_SCAN_LOAD
#undef TSCOPE_SCAN_ABS
  T z = 0, mx = 0;
  for (; i < n; ++i) {
    z += p[i] * T(0);
    const T a = p[i] < 0 ? -p[i] : p[i];
    mx = a > mx ? a : mx;
  }
  const V zs = z0 + z1 + z2 + z3;
  const V m01 = m0 > m1 ? m0 : m1, m23 = m2 > m3 ? m2 : m3;
  const V ms = m01 > m23 ? m01 : m23;
  for (int j = 0; j < L; ++j) {
    z += zs[j];
    mx = ms[j] > mx ? ms[j] : mx;
  }
  QuickScan out;
  out.nonFinite = z != z;
  out.maxAbs = static_cast<double>(mx);
  return out;
}

template <class T, class I>
QuickScan scanBase(const T* p, std::int64_t n, bool wantMax) {
  return scanFloatsWith<16, T, I>(p, n, wantMax);
}
template <class T, class I>
__attribute__((target("avx2"))) QuickScan scanAvx2(const T* p, std::int64_t n, bool wantMax) {
  return scanFloatsWith<32, T, I>(p, n, wantMax);
}
template <class T, class I>
__attribute__((target("avx512f"))) QuickScan scanAvx512(const T* p, std::int64_t n, bool wantMax) {
  return scanFloatsWith<64, T, I>(p, n, wantMax);
}

// The widest scan this processor runs (Note [Scan widths]); TSCOPE_NAN_SCAN=sse2|avx2|avx512
// narrows it (benchmarks compare the forms).
int scanWidth() {
  static const int width = [] {
    __builtin_cpu_init();
    int w = __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
    if (const char* env = std::getenv("TSCOPE_NAN_SCAN")) {
      const std::string_view e(env);
      if (e == "sse2") w = 16;
      if (e == "avx2" && w >= 32) w = 32;
    }
    return w;
  }();
  return width;
}

template <class T, class I>
QuickScan scanFloats(const T* p, std::int64_t n, bool wantMax) {
  switch (scanWidth()) {
    case 64:
      return scanAvx512<T, I>(p, n, wantMax);
    case 32:
      return scanAvx2<T, I>(p, n, wantMax);
    default:
      return scanBase<T, I>(p, n, wantMax);
  }
}

template <class T>
double maxAbsInts(const T* p, std::int64_t n) {
  double m = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(p[i])));
  return m;
}

// Note [Dense views]: a tensor whose elements fill numel() consecutive slots from its first
// element, in some order (a contiguous tensor, or a permutation of one: FusedConv2d's and
// pooling's channels-last outputs, a transpose of a whole buffer), is scanned in storage order:
// NaN, Inf and max |x| do not depend on the order, so it needs no contiguous copy (which cost
// ResNet-18's guard a strided copy and an allocation per convolution). Positive strides only:
// the first element is then the lowest slot.
bool denseInStorageOrder(const Tensor& t) {
  std::pair<std::int64_t, std::int64_t> axes[16];  // (stride, size) of the axes longer than 1
  std::size_t k = 0;
  const Shape& shape = t.shape();
  const Strides& strides = t.strides();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;  // its stride is never used
    if (strides[i] <= 0 || k == std::size(axes)) return false;
    axes[k++] = {strides[i], shape[i]};
  }
  std::sort(axes, axes + k);
  std::int64_t expected = 1;
  for (std::size_t i = 0; i < k; ++i) {
    if (axes[i].first != expected) return false;
    expected *= axes[i].second;
  }
  return true;
}

}  // namespace

QuickScan quickScan(const Tensor& value, bool wantMaxAbs) {
  if (!value.defined() || value.numel() == 0) return {};
  const DType d = value.dtype();
  if (!isFloat(d) && !wantMaxAbs) return {};
  // Note [Device scans] (nan_scan.h): on the device where it can, else from a host copy (Note
  // [Reading device values] in engine/tensor/device_memory.h).
  if (value.device() != Device::Cpu) {
    DeviceMemory::Scan scan;
    if (isFloat(d)) {
      DeviceMemory* memory = deviceMemory(value.device());
      if (memory != nullptr && memory->scan(value, scan)) return {scan.nonFinite, scan.maxAbs};
    }
    return quickScan(toHost(value), wantMaxAbs);
  }
  // A broadcast or strided view is scanned from a contiguous copy (rare); a dense one in storage
  // order (Note [Dense views]).
  Tensor copy;
  if (!value.isContiguous() && !denseInStorageOrder(value)) copy = value.contiguous();
  const Tensor& c = copy.defined() ? copy : value;
  const std::int64_t n = c.numel();
  switch (d) {
    case DType::Float32:
      return scanFloats<float, std::uint32_t>(static_cast<const float*>(c.rawData()), n,
                                              wantMaxAbs);
    case DType::Float64:
      return scanFloats<double, std::uint64_t>(static_cast<const double*>(c.rawData()), n,
                                               wantMaxAbs);
    case DType::Float16: {
      const Half* p = static_cast<const Half*>(c.rawData());
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
  if (value.device() != Device::Cpu) return countBad(toHost(value), big, bigThreshold);
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
