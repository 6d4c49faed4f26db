// The loops behind CAReduce::perform (see reduceKernel in careduce.h).
//
// Note [Reduction loop]: the input's axes become a list of (size, input stride, output stride)
// triples; axes of size 1 drop out, the rest are ordered by decreasing input stride (so the
// innermost loop walks memory in order whatever view the input is) and neighbours of the same
// kind (both reduced or both kept) that are laid out back to back merge into one. Then only the
// innermost axis matters for speed:
//   reduced  (sum over trailing axes, or a whole contiguous tensor): fold a run into one value
//            with 8 independent accumulators, in blocks, so the compiler vectorizes it and the
//            rounding error grows with the block count rather than the run length;
//   kept     (sum over leading axes): out[j] = op(out[j], x[i, j]) over a contiguous row, which
//            vectorizes directly;
// and an odometer walks the outer axes. Strided views take the same loops with their strides.

#include "engine/ops/reduce/careduce.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace tscope::engine {

namespace {

// Arithmetic type of an element: float for half, else the type itself.
template <class T>
struct Widen {
  using type = T;
};
template <>
struct Widen<Half> {
  using type = float;
};

template <class A, class T>
inline A load(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return static_cast<A>(halfToFloat(v));  // to bool: NaN and nonzero are true
  } else if constexpr (std::is_same_v<A, bool>) {
    return v != T(0);
  } else {
    return static_cast<A>(v);
  }
}

template <class A>
struct AddF {
  static A identity() { return A(0); }
  static A apply(A a, A x) {
    if constexpr (std::is_integral_v<A>) {
      // Integer sums wrap as numpy's do; unsigned arithmetic keeps that defined behaviour.
      using U = std::make_unsigned_t<A>;
      return static_cast<A>(static_cast<U>(a) + static_cast<U>(x));
    } else {
      return a + x;
    }
  }
};
template <class A>
struct MulF {
  static A identity() { return A(1); }
  static A apply(A a, A x) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::make_unsigned_t<A>;
      return static_cast<A>(static_cast<U>(a) * static_cast<U>(x));
    } else {
      return a * x;
    }
  }
};
// NaN wins: once the accumulator is NaN no comparison replaces it, and a NaN operand replaces it.
template <class A>
struct MaxF {
  static A identity() {
    if constexpr (std::numeric_limits<A>::has_infinity)
      return -std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::lowest();
  }
  static A apply(A a, A x) {
    // Branch-free (| not ||) so the lanes vectorize into compares and a blend.
    if constexpr (std::is_floating_point_v<A>)
      return ((x > a) | (x != x)) ? x : a;
    else
      return x > a ? x : a;
  }
};
template <class A>
struct MinF {
  static A identity() {
    if constexpr (std::numeric_limits<A>::has_infinity)
      return std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::max();
  }
  static A apply(A a, A x) {
    if constexpr (std::is_floating_point_v<A>)
      return ((x < a) | (x != x)) ? x : a;
    else
      return x < a ? x : a;
  }
};
struct AndF {
  static bool identity() { return true; }
  static bool apply(bool a, bool x) { return a & x; }
};
struct OrF {
  static bool identity() { return false; }
  static bool apply(bool a, bool x) { return a | x; }
};

constexpr int kLanes = 8;
constexpr std::int64_t kBlock = 2048;

template <class F, class A, class T>
A foldRun(const T* __restrict p, std::int64_t n, std::int64_t stride) {
  A r = F::identity();
  if (stride != 1) {
    for (std::int64_t j = 0; j < n; ++j) r = F::apply(r, load<A>(p[j * stride]));
    return r;
  }
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t len = std::min(kBlock, n - start);
    const T* q = p + start;
    A lanes[kLanes];
    for (A& l : lanes) l = F::identity();
    std::int64_t j = 0;
    for (; j + kLanes <= len; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] = F::apply(lanes[l], load<A>(q[j + l]));
    A block = F::identity();
    for (int l = 0; l < kLanes; ++l) block = F::apply(block, lanes[l]);
    for (; j < len; ++j) block = F::apply(block, load<A>(q[j]));
    r = F::apply(r, block);
  }
  return r;
}

template <class F, class A, class T>
void accumulateRun(A* __restrict o, std::int64_t outStride, const T* __restrict p,
                   std::int64_t inStride, std::int64_t n) {
  if (outStride == 1 && inStride == 1) {
    // Fixed-length blocks: GCC's -O2 cost model vectorizes these without a runtime trip count.
    std::int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) o[j + l] = F::apply(o[j + l], load<A>(p[j + l]));
    for (; j < n; ++j) o[j] = F::apply(o[j], load<A>(p[j]));
  } else {
    for (std::int64_t j = 0; j < n; ++j)
      o[j * outStride] = F::apply(o[j * outStride], load<A>(p[j * inStride]));
  }
}

struct Dim {
  std::int64_t size;
  std::int64_t in;   // input stride (elements)
  std::int64_t out;  // output stride (elements); 0 for a reduced axis
  bool reduced;
};

// Note [Reduction loop].
std::vector<Dim> loopDims(const Tensor& x, const std::vector<bool>& reduced) {
  const int nd = x.ndim();
  std::vector<std::int64_t> outStride(static_cast<std::size_t>(nd), 0);
  std::int64_t running = 1;
  for (int a = nd - 1; a >= 0; --a) {
    if (reduced[static_cast<std::size_t>(a)]) continue;
    outStride[static_cast<std::size_t>(a)] = running;
    running *= x.shape()[static_cast<std::size_t>(a)];
  }
  std::vector<Dim> dims;
  for (int a = 0; a < nd; ++a) {
    const auto i = static_cast<std::size_t>(a);
    if (x.shape()[i] == 1) continue;
    dims.push_back({x.shape()[i], x.strides()[i], outStride[i], static_cast<bool>(reduced[i])});
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dim& a, const Dim& b) { return std::llabs(a.in) > std::llabs(b.in); });
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& prev = merged.back();
      if (prev.reduced == d.reduced && prev.in == d.in * d.size && prev.out == d.out * d.size) {
        prev = {prev.size * d.size, d.in, d.out, d.reduced};
        continue;
      }
    }
    merged.push_back(d);
  }
  return merged;
}

template <class F, class A, class T>
void reduceInto(const Tensor& x, const std::vector<bool>& reduced, A* acc, std::int64_t outN) {
  std::fill(acc, acc + outN, F::identity());
  if (x.numel() == 0) return;
  std::vector<Dim> dims = loopDims(x, reduced);
  const T* base = x.data<T>();
  if (dims.empty()) {
    acc[0] = F::apply(acc[0], load<A>(base[0]));
    return;
  }
  const Dim inner = dims.back();
  dims.pop_back();
  std::int64_t outer = 1;
  for (const Dim& d : dims) outer *= d.size;
  std::vector<std::int64_t> idx(dims.size(), 0);
  std::int64_t inOff = 0, outOff = 0;
  for (std::int64_t it = 0; it < outer; ++it) {
    if (inner.reduced)
      acc[outOff] = F::apply(acc[outOff], foldRun<F, A>(base + inOff, inner.size, inner.in));
    else
      accumulateRun<F>(acc + outOff, inner.out, base + inOff, inner.in, inner.size);
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      const Dim& dim = dims[static_cast<std::size_t>(d)];
      inOff += dim.in;
      outOff += dim.out;
      if (++idx[static_cast<std::size_t>(d)] < dim.size) break;
      inOff -= dim.in * dim.size;
      outOff -= dim.out * dim.size;
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
}

template <class T>
void dispatchReduce(ScalarOp scalar, const Tensor& x, const std::vector<bool>& reduced,
                    Tensor& acc) {
  const std::int64_t n = acc.numel();
  using W = typename Widen<T>::type;
  switch (scalar) {
    case ScalarOp::Add:
    case ScalarOp::Mul: {
      auto run = [&](auto accTag) {
        using A = decltype(accTag);
        if (scalar == ScalarOp::Add)
          reduceInto<AddF<A>, A, T>(x, reduced, acc.data<A>(), n);
        else
          reduceInto<MulF<A>, A, T>(x, reduced, acc.data<A>(), n);
      };
      switch (acc.dtype()) {
        case DType::Int64:
          run(std::int64_t{});
          return;
        case DType::Float32:
          run(float{});
          return;
        case DType::Float64:
          run(double{});
          return;
        default:
          break;
      }
      throw std::logic_error("reduceKernel: unsupported accumulator dtype " +
                             std::string(dtypeName(acc.dtype())));
    }
    case ScalarOp::Maximum:
      reduceInto<MaxF<W>, W, T>(x, reduced, acc.data<W>(), n);
      return;
    case ScalarOp::Minimum:
      reduceInto<MinF<W>, W, T>(x, reduced, acc.data<W>(), n);
      return;
    case ScalarOp::And:
      reduceInto<AndF, bool, T>(x, reduced, acc.data<bool>(), n);
      return;
    case ScalarOp::Or:
      reduceInto<OrF, bool, T>(x, reduced, acc.data<bool>(), n);
      return;
    default:
      break;
  }
  throw std::logic_error("reduceKernel: " + std::string(scalarOpInfo(scalar).name) +
                         " is not a reduction");
}

}  // namespace

void reduceKernel(ScalarOp scalar, const Tensor& x, const std::vector<bool>& reduced,
                  DType accDtype, DType outDtype, Tensor* out) {
  if (static_cast<int>(reduced.size()) != x.ndim())
    throw std::logic_error("reduceKernel: one flag per axis expected");
  Shape outShape;
  bool emptyReduction = false;
  for (int a = 0; a < x.ndim(); ++a) {
    const auto i = static_cast<std::size_t>(a);
    if (!reduced[i])
      outShape.push_back(x.shape()[i]);
    else if (x.shape()[i] == 0)
      emptyReduction = true;
  }
  // Max and min have no identity to return for an empty reduction (numpy raises the same way).
  if (emptyReduction && shapeNumel(outShape) > 0 &&
      (scalar == ScalarOp::Maximum || scalar == ScalarOp::Minimum))
    throw std::invalid_argument(std::string(scalar == ScalarOp::Maximum ? "max" : "min") +
                                ": zero-size reduction over an input of shape " +
                                shapeToString(x.shape()) + " has no identity");
  // Max/min accumulate in the input's own type (float for half); Note [Reduction dtypes].
  if (scalar == ScalarOp::Maximum || scalar == ScalarOp::Minimum)
    accDtype = x.dtype() == DType::Float16 ? DType::Float32 : x.dtype();
  if (scalar == ScalarOp::And || scalar == ScalarOp::Or) accDtype = DType::Bool;
  if (accDtype == outDtype) {
    Tensor& o = reuseOrAllocate(out, outDtype, outShape);
    dispatchDType(x.dtype(),
                  [&](auto tag) { dispatchReduce<decltype(tag)>(scalar, x, reduced, o); });
    return;
  }
  Tensor acc = Tensor::empty(accDtype, outShape);
  dispatchDType(x.dtype(),
                [&](auto tag) { dispatchReduce<decltype(tag)>(scalar, x, reduced, acc); });
  reuseOrAllocate(out, outDtype, outShape).copyFrom(acc);
}

}  // namespace tscope::engine
