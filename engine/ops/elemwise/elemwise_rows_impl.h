// The row functions of the elementwise kernels, compiled once per instruction set.
//
// Note [Kernel instruction sets]: this file is included by three translation units,
// elemwise_rows.cpp (the baseline: x86-64 or any other target), elemwise_rows_avx2.cpp (x86-64
// with -mavx2 -mfma) and elemwise_rows_avx512.cpp (x86-64 with AVX-512 F/DQ/VL/BW), each inside
// its own namespace (TSCOPE_ROWS_NS), and elemwiseRowKernel picks the table of the widest set the
// CPU has at run time. All three are the same source, so every caller (Elemwise, the Composite
// block interpreter, DebugMode) gets the same kernel on a given machine and fused and unfused
// results stay equal bit for bit. The AVX units rename Eigen's namespace (their Eigen::internal
// instantiations would otherwise be merged by the linker with the baseline unit's, one of them
// then running on the wrong CPU) and are compiled with -ffp-contract=off, so the arithmetic rows
// round exactly as the baseline's do; Eigen's transcendental packets use FMA there and may differ
// from the baseline's in the last bit.

#ifndef TSCOPE_ROWS_NS
#error "elemwise_rows_impl.h is included by the elemwise_rows*.cpp units only"
#endif

#include "engine/ops/elemwise/elemwise_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

// Note [Blocked loops vectorize at -O2]: GCC 12 at -O2 uses the "very-cheap" vectorizer cost
// model, which vectorizes a loop only when its trip count is a known multiple of the vector width
// and it needs no runtime alias check. So the contiguous rows run in blocks of kBlock elements
// (a constant trip count) and the block loop carries ivdep: an output that aliases an input is
// always exactly that input (in place), which leaves no loop-carried dependency.
#if defined(__clang__)
#define TSCOPE_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TSCOPE_IVDEP _Pragma("GCC ivdep")
#else
#define TSCOPE_IVDEP
#endif

#include <Eigen/Core>

namespace tscope::engine::TSCOPE_ROWS_NS {

namespace {

constexpr std::int64_t kBlock = 16;

template <class Body>
inline void blockedLoop(std::int64_t n, Body&& body) {
  std::int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    TSCOPE_IVDEP
    for (std::int64_t j = 0; j < kBlock; ++j) body(i + j);
  }
  for (; i < n; ++i) body(i);
}

// --- Scalar functions ------------------------------------------------------------------------
// Integer arithmetic wraps like numpy's (two's complement), computed in unsigned types so that
// overflow is defined; narrow types compute in uint32 so that no operand promotes to int.
template <class T>
using Wide = std::conditional_t<(sizeof(T) < 4), std::uint32_t, std::make_unsigned_t<T>>;

template <class T>
constexpr bool kFloat = std::is_floating_point_v<T>;
template <class T>
constexpr bool kBool = std::is_same_v<T, bool>;
template <class T>
constexpr bool kSignedInt = std::is_integral_v<T>&& std::is_signed_v<T>;

template <class T>
inline bool isNan(T a) {
  if constexpr (kFloat<T>)
    return a != a;  // not std::isnan: a comparison vectorizes
  else
    return false;
}

template <class T>
inline T wrapAdd(T a, T b) {
  if constexpr (kBool<T>)
    return a || b;
  else if constexpr (kFloat<T>)
    return a + b;
  else
    return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
}
template <class T>
inline T wrapSub(T a, T b) {
  if constexpr (kBool<T>)
    return a != b;  // numpy refuses bool - bool; we give xor
  else if constexpr (kFloat<T>)
    return a - b;
  else
    return static_cast<T>(static_cast<Wide<T>>(a) - static_cast<Wide<T>>(b));
}
template <class T>
inline T wrapMul(T a, T b) {
  if constexpr (kBool<T>)
    return a && b;
  else if constexpr (kFloat<T>)
    return a * b;
  else
    return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
}
template <class T>
inline T wrapNeg(T a) {
  if constexpr (kBool<T>)
    return a;  // -True is nonzero
  else if constexpr (kFloat<T>)
    return -a;
  else
    return static_cast<T>(Wide<T>(0) - static_cast<Wide<T>>(a));
}

// numpy's floor_divide and remainder on floats (npy_divmod): the quotient rounds toward -inf, the
// remainder takes the divisor's sign; a zero divisor gives a / b and NaN.
template <class T>
inline T floatFloorDiv(T a, T b) {
  if (b == 0) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += 1;
  return floordiv;
}
template <class T>
inline T floatMod(T a, T b) {
  T mod = std::fmod(a, b);
  if (b == 0) return mod;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(T(0), b);
  }
  return mod;
}

// Integer division by zero gives 0 (numpy gives 0 and warns); INT_MIN // -1 wraps to INT_MIN.
template <class T>
inline T intFloorDiv(T a, T b) {
  if constexpr (kBool<T>) {
    return a && b;
  } else if constexpr (!std::is_signed_v<T>) {
    return b == 0 ? T(0) : static_cast<T>(a / b);
  } else {
    if (b == 0) return 0;
    if (b == -1) return wrapNeg(a);
    T q = static_cast<T>(a / b);
    if (static_cast<T>(a % b) != 0 && ((a < 0) != (b < 0))) --q;
    return q;
  }
}
template <class T>
inline T intMod(T a, T b) {
  if constexpr (kBool<T>) {
    return false;
  } else if constexpr (!std::is_signed_v<T>) {
    return b == 0 ? T(0) : static_cast<T>(a % b);
  } else {
    if (b == 0 || b == -1) return 0;
    T r = static_cast<T>(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  }
}

// Integer powers by squaring, wrapping. A negative exponent (numpy raises) gives the integer part
// of 1 / a^|b|: 1 for a == 1, +-1 for a == -1, else 0.
template <class T>
inline T intPow(T a, T b) {
  if constexpr (kBool<T>) {
    return a || !b;
  } else {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b % 2 == 0) ? T(1) : T(-1);
        return 0;
      }
    }
    Wide<T> result = 1;
    Wide<T> base = static_cast<Wide<T>>(a);
    auto e = static_cast<std::make_unsigned_t<T>>(b);
    while (e != 0) {
      if (e & 1u) result = static_cast<Wide<T>>(result * base);
      base = static_cast<Wide<T>>(base * base);
      e = static_cast<decltype(e)>(e >> 1);
    }
    return static_cast<T>(result);
  }
}

struct FnBase {
  static constexpr bool kFloatOnly = false;  // only float and double kernels
  static constexpr bool kBoolOut = false;    // the output is bool (comparisons, logic)
  static constexpr bool kCondFirst = false;  // ternary whose first operand is a bool condition
};
struct FloatFn : FnBase {
  static constexpr bool kFloatOnly = true;
};
struct BoolFn : FnBase {
  static constexpr bool kBoolOut = true;
};

#define TSCOPE_FN2(Name, Base, expr) \
  struct Name : Base {               \
    static constexpr int kArity = 2; \
    template <class T>               \
    static auto f(T a, T b) {        \
      return expr;                   \
    }                                \
  };
#define TSCOPE_FN1(Name, Base, expr) \
  struct Name : Base {               \
    static constexpr int kArity = 1; \
    template <class T>               \
    static auto f(T a) {             \
      return expr;                   \
    }                                \
  };

TSCOPE_FN2(FnAdd, FnBase, wrapAdd(a, b))
TSCOPE_FN2(FnSub, FnBase, wrapSub(a, b))
TSCOPE_FN2(FnMul, FnBase, wrapMul(a, b))
TSCOPE_FN2(FnTrueDiv, FloatFn, a / b)
TSCOPE_FN2(FnIntDiv, FnBase, [&] {
  if constexpr (kFloat<T>)
    return floatFloorDiv(a, b);
  else
    return intFloorDiv(a, b);
}())
TSCOPE_FN2(FnMod, FnBase, [&] {
  if constexpr (kFloat<T>)
    return floatMod(a, b);
  else
    return intMod(a, b);
}())
TSCOPE_FN2(FnPow, FnBase, [&] {
  if constexpr (kFloat<T>)
    return T(std::pow(a, b));
  else
    return intPow(a, b);
}())
// numpy's minimum/maximum propagate NaN: a NaN operand wins.
TSCOPE_FN2(FnMinimum, FnBase, (a <= b || isNan(a)) ? a : b)
TSCOPE_FN2(FnMaximum, FnBase, (a >= b || isNan(a)) ? a : b)
TSCOPE_FN1(FnNeg, FnBase, wrapNeg(a))
TSCOPE_FN1(FnAbs, FnBase, [&] {
  if constexpr (kFloat<T>)
    return T(std::abs(a));
  else if constexpr (kSignedInt<T>)
    return a < 0 ? wrapNeg(a) : a;
  else
    return a;
}())
TSCOPE_FN1(FnSign, FnBase, [&] {
  if constexpr (kFloat<T>)
    return a > 0 ? T(1) : (a < 0 ? T(-1) : a);  // keeps 0 and NaN
  else if constexpr (kSignedInt<T>)
    return static_cast<T>((a > 0) - (a < 0));
  else
    return static_cast<T>(a != 0);
}())
TSCOPE_FN1(FnSqr, FnBase, wrapMul(a, a))
TSCOPE_FN1(FnExp, FloatFn, T(std::exp(a)))
TSCOPE_FN1(FnExpm1, FloatFn, T(std::expm1(a)))
TSCOPE_FN1(FnLog, FloatFn, T(std::log(a)))
TSCOPE_FN1(FnLog1p, FloatFn, T(std::log1p(a)))
TSCOPE_FN1(FnLog2, FloatFn, T(std::log2(a)))
TSCOPE_FN1(FnLog10, FloatFn, T(std::log10(a)))
TSCOPE_FN1(FnSqrt, FloatFn, T(std::sqrt(a)))
TSCOPE_FN1(FnTanh, FloatFn, T(std::tanh(a)))
// Both sigmoid and softplus evaluate exp only of a non-positive argument: no overflow anywhere.
TSCOPE_FN1(FnSigmoid, FloatFn, [&] {
  if (a >= 0) return T(1) / (T(1) + T(std::exp(-a)));
  const T e = std::exp(a);
  return e / (T(1) + e);
}())
TSCOPE_FN1(FnSoftplus, FloatFn,
           a > 0 ? T(a + std::log1p(std::exp(-a))) : T(std::log1p(std::exp(a))))
TSCOPE_FN1(FnSin, FloatFn, T(std::sin(a)))
TSCOPE_FN1(FnCos, FloatFn, T(std::cos(a)))
TSCOPE_FN1(FnErf, FloatFn, T(std::erf(a)))
TSCOPE_FN1(FnFloor, FnBase, [&] {
  if constexpr (kFloat<T>)
    return T(std::floor(a));
  else
    return a;
}())
TSCOPE_FN1(FnCeil, FnBase, [&] {
  if constexpr (kFloat<T>)
    return T(std::ceil(a));
  else
    return a;
}())
// nearbyint in the default rounding mode rounds half to even, as numpy.round does.
TSCOPE_FN1(FnRound, FnBase, [&] {
  if constexpr (kFloat<T>)
    return T(std::nearbyint(a));
  else
    return a;
}())
// relu keeps NaN (NaN < 0 is false).
TSCOPE_FN1(FnRelu, FnBase, [&] {
  if constexpr (kFloat<T> || kSignedInt<T>)
    return a < 0 ? T(0) : a;
  else
    return a;
}())
TSCOPE_FN2(FnEq, BoolFn, a == b)
TSCOPE_FN2(FnNeq, BoolFn, a != b)
TSCOPE_FN2(FnLt, BoolFn, a < b)
TSCOPE_FN2(FnLe, BoolFn, a <= b)
TSCOPE_FN2(FnGt, BoolFn, a > b)
TSCOPE_FN2(FnGe, BoolFn, a >= b)
TSCOPE_FN2(FnAnd, BoolFn, (a != T(0)) && (b != T(0)))
TSCOPE_FN2(FnOr, BoolFn, (a != T(0)) || (b != T(0)))
TSCOPE_FN2(FnXor, BoolFn, (a != T(0)) != (b != T(0)))
TSCOPE_FN1(FnNot, BoolFn, a == T(0))
TSCOPE_FN1(FnIdentity, FnBase, a)
#undef TSCOPE_FN1
#undef TSCOPE_FN2

// clip(x, lo, hi) == minimum(maximum(x, lo), hi), as numpy: a NaN x stays NaN, lo > hi gives hi.
struct FnClip : FnBase {
  static constexpr int kArity = 3;
  template <class T>
  static T f(T x, T lo, T hi) {
    const T t = x < lo ? lo : x;
    return t > hi ? hi : t;
  }
};
struct FnSwitch : FnBase {
  static constexpr int kArity = 3;
  static constexpr bool kCondFirst = true;
  template <class T>
  static T f(bool c, T a, T b) {
    return c ? a : b;
  }
};

// --- Row functions ---------------------------------------------------------------------------

template <class F, class T>
using OutOf = std::conditional_t<F::kBoolOut, bool, T>;

// Note [Vectorized transcendentals]: std::tanh, std::exp and std::log are scalar library calls
// (tanh about 20 ns an element), so contiguous float rows of the hot activations go through
// Eigen's packet implementations instead (SIMD polynomial/rational approximations within a few
// ulp; exp and log within 1 ulp). Strided rows and the other dtypes keep the scalar path.
template <class F, class T>
struct VectorMath {
  static bool apply(const T*, T*, std::int64_t) { return false; }
};
template <class T>
using EigenIn = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using EigenOut = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
#define TSCOPE_VECTOR_MATH(Fn, T, expr)                     \
  template <>                                               \
  struct VectorMath<Fn, T> {                                \
    static bool apply(const T* a, T* o, std::int64_t n) {   \
      EigenOut<T>(o, static_cast<Eigen::Index>(n)) =        \
          EigenIn<T>(a, static_cast<Eigen::Index>(n)).expr; \
      return true;                                          \
    }                                                       \
  };
TSCOPE_VECTOR_MATH(FnTanh, float, tanh())
TSCOPE_VECTOR_MATH(FnExp, float, exp())
TSCOPE_VECTOR_MATH(FnExp, double, exp())
TSCOPE_VECTOR_MATH(FnLog, float, log())
TSCOPE_VECTOR_MATH(FnLog, double, log())
#undef TSCOPE_VECTOR_MATH

template <class F, class T>
void unaryRow(char* out, std::int64_t os, const char* const* in, const std::int64_t* is,
              std::int64_t n) {
  using O = OutOf<F, T>;
  O* o = reinterpret_cast<O*>(out);
  const T* a = reinterpret_cast<const T*>(in[0]);
  const std::int64_t sa = is[0];
  if constexpr (std::is_same_v<O, T>) {
    if (os == 1 && sa == 1 && n >= 16 && VectorMath<F, T>::apply(a, o, n)) return;
  }
  if (os == 1 && sa == 1) {
    blockedLoop(n, [&](std::int64_t i) { o[i] = static_cast<O>(F::f(a[i])); });
  } else if (os == 1 && sa == 0) {
    const O v = static_cast<O>(F::f(a[0]));
    for (std::int64_t i = 0; i < n; ++i) o[i] = v;
  } else {
    for (std::int64_t i = 0; i < n; ++i) o[i * os] = static_cast<O>(F::f(a[i * sa]));
  }
}

template <class F, class T>
void binaryRow(char* out, std::int64_t os, const char* const* in, const std::int64_t* is,
               std::int64_t n) {
  using O = OutOf<F, T>;
  O* o = reinterpret_cast<O*>(out);
  const T* a = reinterpret_cast<const T*>(in[0]);
  const T* b = reinterpret_cast<const T*>(in[1]);
  const std::int64_t sa = is[0], sb = is[1];
  if (os == 1 && sa == 1 && sb == 1) {
    blockedLoop(n, [&](std::int64_t i) { o[i] = static_cast<O>(F::f(a[i], b[i])); });
  } else if (os == 1 && sa == 1 && sb == 0) {
    const T bv = b[0];
    blockedLoop(n, [&](std::int64_t i) { o[i] = static_cast<O>(F::f(a[i], bv)); });
  } else if (os == 1 && sa == 0 && sb == 1) {
    const T av = a[0];
    blockedLoop(n, [&](std::int64_t i) { o[i] = static_cast<O>(F::f(av, b[i])); });
  } else {
    for (std::int64_t i = 0; i < n; ++i) o[i * os] = static_cast<O>(F::f(a[i * sa], b[i * sb]));
  }
}

template <class F, class T>
void ternaryRow(char* out, std::int64_t os, const char* const* in, const std::int64_t* is,
                std::int64_t n) {
  using A = std::conditional_t<F::kCondFirst, bool, T>;
  T* o = reinterpret_cast<T*>(out);
  const A* a = reinterpret_cast<const A*>(in[0]);
  const T* b = reinterpret_cast<const T*>(in[1]);
  const T* c = reinterpret_cast<const T*>(in[2]);
  const std::int64_t sa = is[0], sb = is[1], sc = is[2];
  if (os == 1 && sa == 1 && sb == 1 && sc == 1) {
    blockedLoop(n, [&](std::int64_t i) { o[i] = F::f(a[i], b[i], c[i]); });
  } else if (os == 1 && sa == 1 && sb == 0 && sc == 0) {  // clip(x, lo, hi) with scalar bounds
    const T bv = b[0], cv = c[0];
    blockedLoop(n, [&](std::int64_t i) { o[i] = F::f(a[i], bv, cv); });
  } else {
    for (std::int64_t i = 0; i < n; ++i) o[i * os] = F::f(a[i * sa], b[i * sb], c[i * sc]);
  }
}

template <class F, class T>
constexpr ElemwiseRowFn rowFor() {
  if constexpr (F::kFloatOnly && !kFloat<T>)
    return nullptr;
  else if constexpr (F::kArity == 1)
    return &unaryRow<F, T>;
  else if constexpr (F::kArity == 2)
    return &binaryRow<F, T>;
  else
    return &ternaryRow<F, T>;
}

template <class F>
ElemwiseRowFn rowForDType(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return rowFor<F, bool>();
    case DType::Int8:
      return rowFor<F, std::int8_t>();
    case DType::Int16:
      return rowFor<F, std::int16_t>();
    case DType::Int32:
      return rowFor<F, std::int32_t>();
    case DType::Int64:
      return rowFor<F, std::int64_t>();
    case DType::UInt8:
      return rowFor<F, std::uint8_t>();
    case DType::UInt16:
      return rowFor<F, std::uint16_t>();
    case DType::UInt32:
      return rowFor<F, std::uint32_t>();
    case DType::UInt64:
      return rowFor<F, std::uint64_t>();
    case DType::Float16:
      return nullptr;
    case DType::Float32:
      return rowFor<F, float>();
    case DType::Float64:
      return rowFor<F, double>();
  }
  return nullptr;
}

}  // namespace

ElemwiseRowFn rowKernel(ScalarOp op, DType dtype) {
  using S = ScalarOp;
  switch (op) {
    case S::Add:
      return rowForDType<FnAdd>(dtype);
    case S::Sub:
      return rowForDType<FnSub>(dtype);
    case S::Mul:
      return rowForDType<FnMul>(dtype);
    case S::TrueDiv:
      return rowForDType<FnTrueDiv>(dtype);
    case S::IntDiv:
      return rowForDType<FnIntDiv>(dtype);
    case S::Mod:
      return rowForDType<FnMod>(dtype);
    case S::Pow:
      return rowForDType<FnPow>(dtype);
    case S::Minimum:
      return rowForDType<FnMinimum>(dtype);
    case S::Maximum:
      return rowForDType<FnMaximum>(dtype);
    case S::Neg:
      return rowForDType<FnNeg>(dtype);
    case S::Abs:
      return rowForDType<FnAbs>(dtype);
    case S::Sign:
      return rowForDType<FnSign>(dtype);
    case S::Sqr:
      return rowForDType<FnSqr>(dtype);
    case S::Exp:
      return rowForDType<FnExp>(dtype);
    case S::Expm1:
      return rowForDType<FnExpm1>(dtype);
    case S::Log:
      return rowForDType<FnLog>(dtype);
    case S::Log1p:
      return rowForDType<FnLog1p>(dtype);
    case S::Log2:
      return rowForDType<FnLog2>(dtype);
    case S::Log10:
      return rowForDType<FnLog10>(dtype);
    case S::Sqrt:
      return rowForDType<FnSqrt>(dtype);
    case S::Tanh:
      return rowForDType<FnTanh>(dtype);
    case S::Sigmoid:
      return rowForDType<FnSigmoid>(dtype);
    case S::Softplus:
      return rowForDType<FnSoftplus>(dtype);
    case S::Sin:
      return rowForDType<FnSin>(dtype);
    case S::Cos:
      return rowForDType<FnCos>(dtype);
    case S::Erf:
      return rowForDType<FnErf>(dtype);
    case S::Floor:
      return rowForDType<FnFloor>(dtype);
    case S::Ceil:
      return rowForDType<FnCeil>(dtype);
    case S::Round:
      return rowForDType<FnRound>(dtype);
    case S::Relu:
      return rowForDType<FnRelu>(dtype);
    case S::Clip:
      return rowForDType<FnClip>(dtype);
    case S::Eq:
      return rowForDType<FnEq>(dtype);
    case S::Neq:
      return rowForDType<FnNeq>(dtype);
    case S::Lt:
      return rowForDType<FnLt>(dtype);
    case S::Le:
      return rowForDType<FnLe>(dtype);
    case S::Gt:
      return rowForDType<FnGt>(dtype);
    case S::Ge:
      return rowForDType<FnGe>(dtype);
    case S::And:
      return rowForDType<FnAnd>(dtype);
    case S::Or:
      return rowForDType<FnOr>(dtype);
    case S::Xor:
      return rowForDType<FnXor>(dtype);
    case S::Not:
      return rowForDType<FnNot>(dtype);
    case S::Switch:
      return rowForDType<FnSwitch>(dtype);
    case S::Cast:
      return nullptr;
    case S::Identity:
    case S::Second:
      return rowForDType<FnIdentity>(dtype);
  }
  return nullptr;
}

}  // namespace tscope::engine::TSCOPE_ROWS_NS
