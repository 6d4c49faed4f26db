#include "engine/ops/shape/shape_common.h"

#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "engine/ops/shape/dimshuffle.h"

#include <algorithm>
#include <limits>

namespace tscope::engine::shape_detail {

// --- Runtime values ------------------------------------------------------------------------------

std::int64_t readIndex(const Tensor& t, const std::string& what) {
  if (!isInteger(t.dtype()) && t.dtype() != DType::Bool)
    throw std::invalid_argument(what + ": expected an integer, found a " +
                                std::string(dtypeName(t.dtype())) + " value");
  if (t.numel() != 1)
    throw std::invalid_argument(what + ": expected one integer, found shape " +
                                shapeToString(t.shape()));
  return dispatchDType(t.dtype(), [&](auto tag) -> std::int64_t {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half> || std::is_floating_point_v<T>) {
      return 0;  // excluded above
    } else {
      return static_cast<std::int64_t>(*t.data<T>());
    }
  });
}

std::vector<std::int64_t> readIndices(const Tensor& t, const std::string& what) {
  if (!isInteger(t.dtype()) && t.dtype() != DType::Bool)
    throw std::invalid_argument(what + ": expected integers, found a " +
                                std::string(dtypeName(t.dtype())) + " tensor");
  if (t.ndim() != 1)
    throw std::invalid_argument(what + ": expected a 1-d tensor, found shape " +
                                shapeToString(t.shape()));
  std::vector<std::int64_t> out(static_cast<std::size_t>(t.numel()));
  dispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, Half> && !std::is_floating_point_v<T>) {
      const T* p = t.data<T>();
      const std::int64_t stride = t.strides()[0];
      for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::int64_t>(p[static_cast<std::int64_t>(i) * stride]);
    }
  });
  return out;
}

std::int64_t sliceLength(std::int64_t n, std::optional<std::int64_t> start,
                         std::optional<std::int64_t> stop, std::int64_t step) {
  auto clamp = [&](std::int64_t i) {
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const std::int64_t s = start ? clamp(*start) : (step > 0 ? 0 : n - 1);
  const std::int64_t e = stop ? clamp(*stop) : (step > 0 ? n : -1);
  if (step > 0 && s < e) return (e - s - 1) / step + 1;
  if (step < 0 && e < s) return (s - e - 1) / -step + 1;
  return 0;
}

std::string staticShapeStr(std::span<const std::int64_t> shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i] == kUnknownDim ? "?" : std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

// --- Props ---------------------------------------------------------------------------------------

namespace {
[[noreturn]] void badProp(const std::string& op, const std::string& key,
                          const std::string& expected, const nlohmann::json& found) {
  throw std::invalid_argument(op + ": props \"" + key + "\" must be " + expected + ", found " +
                              found.dump());
}

std::int64_t checkedInt(const nlohmann::json& v, const std::string& op, const std::string& key,
                        std::int64_t lo, std::int64_t hi, const std::string& expected) {
  if (!v.is_number_integer()) badProp(op, key, expected, v);
  // Unsigned JSON numbers beyond int64 would wrap in get<int64_t>().
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    badProp(op, key, expected, v);
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi) badProp(op, key, expected, v);
  return n;
}

std::string rangeStr(std::int64_t lo, std::int64_t hi) {
  return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

void requireObject(const nlohmann::json& props, const std::string& op) {
  if (!props.is_object())
    throw std::invalid_argument(op + ": props must be a JSON object, found " + props.dump());
}
}  // namespace

std::int64_t propInt(const nlohmann::json& props, const std::string& op, const std::string& key,
                     std::int64_t lo, std::int64_t hi, std::optional<std::int64_t> fallback) {
  requireObject(props, op);
  if (!props.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(op + ": props need \"" + key + "\" (an integer " +
                                rangeStr(lo, hi) + ")");
  }
  return checkedInt(props[key], op, key, lo, hi, "an integer " + rangeStr(lo, hi));
}

bool propBool(const nlohmann::json& props, const std::string& op, const std::string& key,
              std::optional<bool> fallback) {
  requireObject(props, op);
  if (!props.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(op + ": props need \"" + key + "\" (true or false)");
  }
  if (!props[key].is_boolean()) badProp(op, key, "true or false", props[key]);
  return props[key].get<bool>();
}

std::vector<std::int64_t> propIntList(const nlohmann::json& props, const std::string& op,
                                      const std::string& key, std::int64_t lo, std::int64_t hi,
                                      std::size_t maxSize) {
  requireObject(props, op);
  const std::string expected =
      "an array of at most " + std::to_string(maxSize) + " integers " + rangeStr(lo, hi);
  if (!props.contains(key))
    throw std::invalid_argument(op + ": props need \"" + key + "\" (" + expected + ")");
  const auto& v = props[key];
  if (!v.is_array() || v.size() > maxSize) badProp(op, key, expected, v);
  std::vector<std::int64_t> out;
  for (const auto& e : v) out.push_back(checkedInt(e, op, key, lo, hi, expected));
  return out;
}

DType propDType(const nlohmann::json& props, const std::string& op, const std::string& key) {
  requireObject(props, op);
  if (!props.contains(key) || !props[key].is_string())
    throw std::invalid_argument(op + ": props need \"" + key +
                                "\" (a dtype name such as \"float32\")");
  auto d = dtypeFromName(props[key].get<std::string>());
  if (!d) badProp(op, key, "a dtype name such as \"float32\"", props[key]);
  return *d;
}

void propKeys(const nlohmann::json& props, const std::string& op,
              std::initializer_list<const char*> allowed) {
  requireObject(props, op);
  for (const auto& item : props.items()) {
    const std::string& key = item.key();  // a named reference: clang 14 cannot capture bindings
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* k) { return key == k; })) {
      std::string names;
      for (const char* k : allowed)
        names += (names.empty() ? "\"" : ", \"") + std::string(k) + "\"";
      throw std::invalid_argument(op + ": unknown prop \"" + key + "\" (expected " +
                                  (names.empty() ? std::string("no props") : names) + ")");
    }
  }
}

// --- Shape arithmetic ----------------------------------------------------------------------------

namespace {
std::optional<std::int64_t> intValue(const VarPtr& v) {
  return constantIntValue(v);
}

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
}  // namespace

VarPtr toInt64(const VarPtr& v, Site site) {
  if (v->type().dtype() == DType::Int64) return v;
  if (auto c = intValue(v)) return constantInt(*c, site);
  return cast(v, DType::Int64, site);
}

VarPtr intAdd(const VarPtr& a, const VarPtr& b, Site site) {
  auto av = intValue(a), bv = intValue(b);
  if (av && bv) return constantInt(*av + *bv, site);
  if (av == 0) return b;
  if (bv == 0) return a;
  return add(a, b, site);
}

VarPtr intSub(const VarPtr& a, const VarPtr& b, Site site) {
  auto av = intValue(a), bv = intValue(b);
  if (av && bv) return constantInt(*av - *bv, site);
  if (bv == 0) return a;
  return sub(a, b, site);
}

VarPtr intMul(const VarPtr& a, const VarPtr& b, Site site) {
  auto av = intValue(a), bv = intValue(b);
  if (av && bv) return constantInt(*av * *bv, site);
  if (av == 1) return b;
  if (bv == 1) return a;
  return mul(a, b, site);
}

VarPtr intFloorDiv(const VarPtr& a, const VarPtr& b, Site site) {
  auto av = intValue(a), bv = intValue(b);
  if (av && bv && *bv != 0) return constantInt(floorDiv(*av, *bv), site);
  if (bv == 1) return a;
  return intDiv(a, b, site);
}

VarPtr intMin(const VarPtr& a, const VarPtr& b, Site site) {
  auto av = intValue(a), bv = intValue(b);
  if (av && bv) return constantInt(std::min(*av, *bv), site);
  return minimum(a, b, site);
}

VarPtr intMax(const VarPtr& a, const VarPtr& b, Site site) {
  auto av = intValue(a), bv = intValue(b);
  if (av && bv) return constantInt(std::max(*av, *bv), site);
  return maximum(a, b, site);
}

VarPtr intWhere(const VarPtr& cond, const VarPtr& a, const VarPtr& b, Site site) {
  if (cond->kind() == Variable::Kind::Constant)
    return static_cast<const Constant&>(*cond).value().item() != 0.0 ? a : b;
  if (a == b) return a;
  return where(cond, a, b, site);
}

VarPtr intProduct(std::span<const VarPtr> dims, Site site) {
  VarPtr out = constantInt(1, site);
  for (const VarPtr& d : dims) out = intMul(out, d, site);
  return out;
}

// --- Broadcasting an operand --------------------------------------------------------------------

std::optional<std::string> staticBroadcastError(std::span<const std::int64_t> from,
                                                std::span<const std::int64_t> to) {
  if (from.size() > to.size())
    return "a " + std::to_string(from.size()) + "-d operand cannot broadcast to " +
           std::to_string(to.size()) + " axes";
  const std::size_t lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) {
    const std::int64_t f = from[i], t = to[lead + i];
    if (f == 1 || f == kUnknownDim || t == kUnknownDim || f == t) continue;
    return "axis " + std::to_string(i) + " has size " + std::to_string(f) +
           " where the target has " + std::to_string(t);
  }
  return std::nullopt;
}

Tensor broadcastOperand(const Tensor& value, std::span<const std::int64_t> target,
                        const std::string& what) {
  const Shape& from = value.shape();
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(what + ": cannot broadcast a value of shape " +
                                 shapeToString(from) + " to " + shapeToString(target) + ": " + why);
  };
  if (from.size() > target.size()) throw fail("it has more axes");
  const std::size_t lead = target.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) {
    const std::int64_t f = from[i], t = target[lead + i];
    if (f != t && f != 1)
      throw fail("axis " + std::to_string(i) + " has size " + std::to_string(f) + ", expected " +
                 std::to_string(t) + " or 1");
  }
  return value.broadcastTo(Shape(target.begin(), target.end()));
}

// --- Kernels -------------------------------------------------------------------------------------

void addElements(Tensor& dst, const Tensor& src) {
  if (dst.shape() != src.shape())
    throw std::invalid_argument("addElements: expected a source of shape " +
                                shapeToString(dst.shape()) + ", found " +
                                shapeToString(src.shape()));
  if (dst.numel() == 0) return;
  dispatchDType(dst.dtype(), [&](auto dstTag) {
    using D = decltype(dstTag);
    dispatchDType(src.dtype(), [&](auto srcTag) {
      using S = decltype(srcTag);
      D* d = static_cast<D*>(dst.rawData());
      const S* s = static_cast<const S*>(src.rawData());
      if (dst.isContiguous() && src.isContiguous()) {
        const std::int64_t n = dst.numel(), one = 1;
        copyBlock<true>(d, std::span(&one, 1), s, std::span(&one, 1), std::span(&n, 1));
      } else {
        copyBlock<true>(d, dst.strides(), s, src.strides(), dst.shape());
      }
    });
  });
}

// --- Gradients -----------------------------------------------------------------------------------

VarPtr sumToShapeOf(const VarPtr& g, const VarPtr& like, Site site) {
  VarPtr out = sumToShape(g, like, site);
  if (out->type().dtype() != like->type().dtype()) out = cast(out, like->type().dtype(), site);
  return out;
}

std::optional<std::string> incValueMismatch(const TensorType& x, const TensorType& y,
                                            std::span<const std::int64_t> region,
                                            const std::string& regionText) {
  if (y.device() != x.device()) return "a tensor on " + std::string(deviceName(x.device()));
  if (promoteTypes(y.dtype(), x.dtype()) != x.dtype())
    return "a tensor whose dtype converts to x's " + std::string(dtypeName(x.dtype())) +
           " without loss";
  if (auto why = staticBroadcastError(y.shape(), region))
    return "a tensor that broadcasts to " + regionText + " of shape " + staticShapeStr(region) +
           " (" + *why + ")";
  return std::nullopt;
}

Tensor& prepareIncOutput(const Tensor& x, Tensor* out, bool inplace) {
  if (inplace) {
    *out = x;  // destroyMap: the output is x's buffer
  } else {
    reuseOrAllocate(out, x.dtype(), x.shape());
    out->copyFrom(x);
  }
  return *out;
}

}  // namespace tscope::engine::shape_detail
