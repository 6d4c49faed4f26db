// The device side of the scalar ops: the same semantics as the CPU row kernels
// (engine/ops/elemwise/elemwise_rows_impl.h), written once as CUDA source that every generated
// elementwise and reduction kernel starts with. Integer arithmetic wraps (computed unsigned),
// integer division by zero gives 0, floor division and remainder follow numpy (npy_divmod),
// minimum/maximum let a NaN win, round is half-to-even, sigmoid and softplus never overflow.
#include "engine/backends/cuda/elemwise_codegen.h"

namespace tscope::engine::cuda {

const std::string& scalarPrelude() {
  static const std::string source = R"CUDA(
typedef signed char ts_i8;
typedef short ts_i16;
typedef int ts_i32;
typedef long long ts_i64;
typedef unsigned char ts_u8;
typedef unsigned short ts_u16;
typedef unsigned int ts_u32;
typedef unsigned long long ts_u64;
template <class T> struct ts_tr { enum { is_float = 0, is_signed = 1, is_bool = 0 }; typedef unsigned int wide; };
template <> struct ts_tr<bool> { enum { is_float = 0, is_signed = 0, is_bool = 1 }; typedef unsigned int wide; };
template <> struct ts_tr<ts_u8> { enum { is_float = 0, is_signed = 0, is_bool = 0 }; typedef unsigned int wide; };
template <> struct ts_tr<ts_u16> { enum { is_float = 0, is_signed = 0, is_bool = 0 }; typedef unsigned int wide; };
template <> struct ts_tr<ts_u32> { enum { is_float = 0, is_signed = 0, is_bool = 0 }; typedef unsigned int wide; };
template <> struct ts_tr<ts_u64> { enum { is_float = 0, is_signed = 0, is_bool = 0 }; typedef unsigned long long wide; };
template <> struct ts_tr<ts_i64> { enum { is_float = 0, is_signed = 1, is_bool = 0 }; typedef unsigned long long wide; };
template <> struct ts_tr<float> { enum { is_float = 1, is_signed = 1, is_bool = 0 }; typedef float wide; };
template <> struct ts_tr<double> { enum { is_float = 1, is_signed = 1, is_bool = 0 }; typedef double wide; };
#define TS_D __device__ __forceinline__
template <class T> TS_D bool ts_isnan(T a) { if constexpr (ts_tr<T>::is_float) return a != a; else return false; }
template <class T> TS_D T ts_add(T a, T b) {
  if constexpr (ts_tr<T>::is_bool) return a || b;
  else if constexpr (ts_tr<T>::is_float) return a + b;
  else return (T)((typename ts_tr<T>::wide)a + (typename ts_tr<T>::wide)b);
}
template <class T> TS_D T ts_sub(T a, T b) {
  if constexpr (ts_tr<T>::is_bool) return a != b;
  else if constexpr (ts_tr<T>::is_float) return a - b;
  else return (T)((typename ts_tr<T>::wide)a - (typename ts_tr<T>::wide)b);
}
template <class T> TS_D T ts_mul(T a, T b) {
  if constexpr (ts_tr<T>::is_bool) return a && b;
  else if constexpr (ts_tr<T>::is_float) return a * b;
  else return (T)((typename ts_tr<T>::wide)a * (typename ts_tr<T>::wide)b);
}
template <class T> TS_D T ts_neg(T a) {
  if constexpr (ts_tr<T>::is_bool) return a;
  else if constexpr (ts_tr<T>::is_float) return -a;
  else return (T)((typename ts_tr<T>::wide)0 - (typename ts_tr<T>::wide)a);
}
TS_D float ts_fmod(float a, float b) { return fmodf(a, b); }
TS_D double ts_fmod(double a, double b) { return fmod(a, b); }
template <class T> TS_D T ts_int_div(T a, T b) {
  if constexpr (ts_tr<T>::is_float) {
    if (b == 0) return a / b;
    const T mod = ts_fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return copysign(T(0), a / b);
    T fl = floor(div);
    if (div - fl > T(0.5)) fl += 1;
    return fl;
  } else if constexpr (ts_tr<T>::is_bool) {
    return a && b;
  } else if constexpr (!ts_tr<T>::is_signed) {
    return b == 0 ? T(0) : (T)(a / b);
  } else {
    if (b == 0) return 0;
    if (b == -1) return ts_neg(a);
    T q = (T)(a / b);
    if ((T)(a % b) != 0 && ((a < 0) != (b < 0))) --q;
    return q;
  }
}
template <class T> TS_D T ts_mod(T a, T b) {
  if constexpr (ts_tr<T>::is_float) {
    T mod = ts_fmod(a, b);
    if (b == 0) return mod;
    if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; }
    else mod = copysign(T(0), b);
    return mod;
  } else if constexpr (ts_tr<T>::is_bool) {
    return false;
  } else if constexpr (!ts_tr<T>::is_signed) {
    return b == 0 ? T(0) : (T)(a % b);
  } else {
    if (b == 0 || b == -1) return 0;
    T r = (T)(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
    return r;
  }
}
template <class T> TS_D T ts_pow(T a, T b) {
  if constexpr (ts_tr<T>::is_float) {
    return pow(a, b);
  } else if constexpr (ts_tr<T>::is_bool) {
    return a || !b;
  } else {
    if constexpr (ts_tr<T>::is_signed) {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b % 2 == 0) ? T(1) : T(-1);
        return 0;
      }
    }
    typename ts_tr<T>::wide result = 1, base = (typename ts_tr<T>::wide)a;
    unsigned long long e = (unsigned long long)b;
    while (e != 0) {
      if (e & 1u) result = (typename ts_tr<T>::wide)(result * base);
      base = (typename ts_tr<T>::wide)(base * base);
      e >>= 1;
    }
    return (T)result;
  }
}
template <class T> TS_D T ts_minimum(T a, T b) { return (a <= b || ts_isnan(a)) ? a : b; }
template <class T> TS_D T ts_maximum(T a, T b) { return (a >= b || ts_isnan(a)) ? a : b; }
template <class T> TS_D T ts_abs(T a) {
  if constexpr (ts_tr<T>::is_float) return fabs(a);
  else if constexpr (ts_tr<T>::is_signed) return a < 0 ? ts_neg(a) : a;
  else return a;
}
template <class T> TS_D T ts_sign(T a) {
  if constexpr (ts_tr<T>::is_float) return a > 0 ? T(1) : (a < 0 ? T(-1) : a);
  else if constexpr (ts_tr<T>::is_signed) return (T)((a > 0) - (a < 0));
  else return (T)(a != 0);
}
template <class T> TS_D T ts_sqr(T a) { return ts_mul(a, a); }
template <class T> TS_D T ts_exp(T a) { return exp(a); }
template <class T> TS_D T ts_expm1(T a) { return expm1(a); }
template <class T> TS_D T ts_log(T a) { return log(a); }
template <class T> TS_D T ts_log1p(T a) { return log1p(a); }
template <class T> TS_D T ts_log2(T a) { return log2(a); }
template <class T> TS_D T ts_log10(T a) { return log10(a); }
template <class T> TS_D T ts_sqrt(T a) { return sqrt(a); }
template <class T> TS_D T ts_tanh(T a) { return tanh(a); }
template <class T> TS_D T ts_sin(T a) { return sin(a); }
template <class T> TS_D T ts_cos(T a) { return cos(a); }
template <class T> TS_D T ts_erf(T a) { return erf(a); }
template <class T> TS_D T ts_true_div(T a, T b) { return a / b; }
template <class T> TS_D T ts_sigmoid(T a) {
  if (a >= 0) return T(1) / (T(1) + exp(-a));
  const T e = exp(a);
  return e / (T(1) + e);
}
template <class T> TS_D T ts_softplus(T a) { return a > 0 ? T(a + log1p(exp(-a))) : T(log1p(exp(a))); }
template <class T> TS_D T ts_floor(T a) { if constexpr (ts_tr<T>::is_float) return floor(a); else return a; }
template <class T> TS_D T ts_ceil(T a) { if constexpr (ts_tr<T>::is_float) return ceil(a); else return a; }
template <class T> TS_D T ts_round(T a) { if constexpr (ts_tr<T>::is_float) return rint(a); else return a; }
template <class T> TS_D T ts_relu(T a) {
  if constexpr (ts_tr<T>::is_float || (ts_tr<T>::is_signed && !ts_tr<T>::is_bool)) return a < 0 ? T(0) : a;
  else return a;
}
template <class T> TS_D T ts_clip(T x, T lo, T hi) { const T t = x < lo ? lo : x; return t > hi ? hi : t; }
template <class T> TS_D bool ts_eq(T a, T b) { return a == b; }
template <class T> TS_D bool ts_neq(T a, T b) { return a != b; }
template <class T> TS_D bool ts_lt(T a, T b) { return a < b; }
template <class T> TS_D bool ts_le(T a, T b) { return a <= b; }
template <class T> TS_D bool ts_gt(T a, T b) { return a > b; }
template <class T> TS_D bool ts_ge(T a, T b) { return a >= b; }
template <class T> TS_D bool ts_and(T a, T b) { return (a != T(0)) && (b != T(0)); }
template <class T> TS_D bool ts_or(T a, T b) { return (a != T(0)) || (b != T(0)); }
template <class T> TS_D bool ts_xor(T a, T b) { return (a != T(0)) != (b != T(0)); }
template <class T> TS_D bool ts_not(T a) { return a == T(0); }
template <class T> TS_D T ts_switch(bool c, T a, T b) { return c ? a : b; }
template <class T> TS_D T ts_identity(T a) { return a; }
template <class T> TS_D T ts_lowest() { return (T)(1ull << (sizeof(T) * 8 - 1)) < 0 ? (T)(1ull << (sizeof(T) * 8 - 1)) : (T)0; }
template <class T> TS_D T ts_highest() { return (T)~ts_lowest<T>(); }
)CUDA";
  return source;
}

}  // namespace tscope::engine::cuda
