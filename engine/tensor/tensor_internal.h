#pragma once
// Element conversions with numpy's astype semantics, shared by tensor.cpp (element access, copies)
// and tensor_print.cpp (text). Internal to engine/tensor/; not part of the Tensor API.

#include "engine/tensor/dtype.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tscope::engine::detail {

// Float -> integer as numpy's astype: truncation toward zero. NaN and values beyond int64 have no
// result numpy defines; like numpy on x86 they become int64's minimum. Narrower integers then
// wrap like an integer cast (200.0 -> int8 gives -56, -1.0 -> uint8 gives 255, as numpy does).
// uint64 takes [2^63, 2^64) exactly, as numpy does, rather than through int64.
template <class To>
To floatToInteger(double x) {
  const double t = std::trunc(x);
  if constexpr (std::is_same_v<To, std::uint64_t>)
    if (t >= 9223372036854775808.0 && t < 18446744073709551616.0) return static_cast<To>(t);
  std::int64_t wide = std::numeric_limits<std::int64_t>::min();
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) wide = static_cast<std::int64_t>(t);
  return static_cast<To>(wide);
}

// One element of type From as type To, with numpy's astype semantics.
template <class To, class From>
To convertValue(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convertValue<To>(halfToFloat(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From{0};
  } else if constexpr (std::is_same_v<To, Half>) {
    return floatToHalf(static_cast<float>(x));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return floatToInteger<To>(static_cast<double>(x));
  } else {
    return static_cast<To>(x);  // integer -> integer wraps (C++20), anything -> float rounds
  }
}

template <class T>
double toDouble(T x) {
  return convertValue<double>(x);
}
template <class T>
T fromDouble(double x) {
  return convertValue<T>(x);
}

}  // namespace tscope::engine::detail
