#pragma once
// Helpers shared by the shape and indexing ops (internal to engine/ops/shape/): reading integer
// tensors, validating props from files, shape arithmetic that folds constants, strided kernels.

#include "engine/graph/op.h"
#include "engine/tensor/tensor.h"
#include "engine/tensor/tensor_internal.h"

#include <cstdint>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tscope::engine::shape_detail {

using Site = std::source_location;

// --- Runtime values ------------------------------------------------------------------------------
// The value of a one-element integer (or bool) tensor; `what` names it in the error.
std::int64_t readIndex(const Tensor& t, const std::string& what);
// The values of a 1-d integer tensor.
std::vector<std::int64_t> readIndices(const Tensor& t, const std::string& what);

// The length numpy gives x[start:stop:step] on an axis of size n (Python's slice.indices());
// absent bounds are nullopt; step != 0.
std::int64_t sliceLength(std::int64_t n, std::optional<std::int64_t> start,
                         std::optional<std::int64_t> stop, std::int64_t step);

// "(2, ?, 4)": a static shape with '?' for unknown dimensions.
std::string staticShapeStr(std::span<const std::int64_t> shape);

// --- Props from files (untrusted): std::invalid_argument naming the op and the key ---------------
std::int64_t propInt(const nlohmann::json& props, const std::string& op, const std::string& key,
                     std::int64_t lo, std::int64_t hi,
                     std::optional<std::int64_t> fallback = std::nullopt);
bool propBool(const nlohmann::json& props, const std::string& op, const std::string& key,
              std::optional<bool> fallback = std::nullopt);
std::vector<std::int64_t> propIntList(const nlohmann::json& props, const std::string& op,
                                      const std::string& key, std::int64_t lo, std::int64_t hi,
                                      std::size_t maxSize);
DType propDType(const nlohmann::json& props, const std::string& op, const std::string& key);
// Throws when props holds a key outside `allowed` (a typo in a file should not pass silently).
void propKeys(const nlohmann::json& props, const std::string& op,
              std::initializer_list<const char*> allowed);

// --- Shape arithmetic on 0-d int64 variables ----------------------------------------------------
// Each folds to a constant when its operands are constants, so static shapes stay static.
VarPtr toInt64(const VarPtr& v, Site site = Site::current());
VarPtr intAdd(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr intSub(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr intMul(const VarPtr& a, const VarPtr& b, Site site = Site::current());
// Floor division (b != 0).
VarPtr intFloorDiv(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr intMin(const VarPtr& a, const VarPtr& b, Site site = Site::current());
VarPtr intMax(const VarPtr& a, const VarPtr& b, Site site = Site::current());
// cond ? a : b, with cond a 0-d bool variable (folded when cond is a constant).
VarPtr intWhere(const VarPtr& cond, const VarPtr& a, const VarPtr& b, Site site = Site::current());
// The product of the entries (1 for none).
VarPtr intProduct(std::span<const VarPtr> dims, Site site = Site::current());

// --- Broadcasting an operand (y of IncSubtensor, the value of Alloc) -----------------------------
// Note [Operand broadcasting]: an operand broadcasts to a target shape by numpy's rules (aligned
// on the right; a size of 1 stretches, also when its type left the size unknown). The gradient
// sums back with sumToShape (engine/ops/elemwise/sum_to_shape.h), which reads the operand's
// runtime shape, so a broadcast that only happens at run time is summed correctly too.
// Static check: nullopt when `from` can broadcast to `to`, else the reason.
std::optional<std::string> staticBroadcastError(std::span<const std::int64_t> from,
                                                std::span<const std::int64_t> to);
// The value as a (stride-0) view of the target shape; throws std::invalid_argument starting with
// `what` when it does not broadcast.
Tensor broadcastOperand(const Tensor& value, std::span<const std::int64_t> target,
                        const std::string& what);

// --- Kernels -------------------------------------------------------------------------------------
// dst += src elementwise (equal shapes; src converted to dst's dtype; any strides).
void addElements(Tensor& dst, const Tensor& src);

// One block of elements: dst[i] = src[i] (Add: dst[i] += src[i]) over `shape`, with strides in
// elements; src converted to D as numpy's astype does. An odometer over the outer axes and a
// tight loop over the last one; no per-element indirection.
template <bool Add, class D, class S>
void copyBlock(D* dst, std::span<const std::int64_t> ds, const S* src,
               std::span<const std::int64_t> ss, std::span<const std::int64_t> shape) {
  auto one = [](D& to, S from) {
    if constexpr (!Add) {
      to = detail::convertValue<D>(from);
    } else if constexpr (std::is_same_v<D, Half>) {
      to = floatToHalf(halfToFloat(to) + detail::convertValue<float>(from));
    } else if constexpr (std::is_same_v<D, bool>) {
      to = to || detail::convertValue<bool>(from);
    } else {
      to = static_cast<D>(to + detail::convertValue<D>(from));
    }
  };
  const std::size_t nd = shape.size();
  if (nd == 0) {
    one(*dst, *src);
    return;
  }
  for (std::int64_t d : shape)
    if (d == 0) return;
  const std::int64_t inner = shape[nd - 1], di = ds[nd - 1], si = ss[nd - 1];
  std::vector<std::int64_t> counter(nd - 1, 0);
  std::int64_t a = 0, b = 0;
  while (true) {
    if (di == 1 && si == 1) {  // unit strides: a loop the compiler vectorizes
      D* d = dst + a;
      const S* s = src + b;
      for (std::int64_t i = 0; i < inner; ++i) one(d[i], s[i]);
    } else {
      for (std::int64_t i = 0; i < inner; ++i) one(dst[a + i * di], src[b + i * si]);
    }
    std::size_t k = nd - 1;
    while (k-- > 0) {
      if (++counter[k] < shape[k]) {
        a += ds[k];
        b += ss[k];
        break;
      }
      a -= ds[k] * (shape[k] - 1);
      b -= ss[k] * (shape[k] - 1);
      counter[k] = 0;
    }
    if (k == static_cast<std::size_t>(-1)) return;
  }
}

// --- Gradients -----------------------------------------------------------------------------------
// g summed to the runtime shape of `like` (Note [Operand broadcasting]) and cast to like's dtype.
VarPtr sumToShapeOf(const VarPtr& g, const VarPtr& like, Site site = Site::current());

// The inc/set-subtensor family: what input y must be to go into x's region of shape `region`
// (regionText names it in the message), or nullopt when it fits.
std::optional<std::string> incValueMismatch(const TensorType& x, const TensorType& y,
                                            std::span<const std::int64_t> region,
                                            const std::string& regionText);
// The output of an inc/set-subtensor op before the region is written: x itself when the op
// destroys x (inplace), else a copy of x in the reused or a new buffer.
Tensor& prepareIncOutput(const Tensor& x, Tensor* out, bool inplace);

}  // namespace tscope::engine::shape_detail
