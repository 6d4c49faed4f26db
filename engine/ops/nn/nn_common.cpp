#include "engine/ops/nn/nn_common.h"

#include "engine/ops/basic.h"
#include "engine/ops/reduce/careduce.h"
#include "engine/ops/shape/dimshuffle.h"

#include <algorithm>
#include <cmath>

namespace tscope::engine::nn_detail {

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
}  // namespace

std::int64_t readInt(const nlohmann::json& props, const std::string& op, const std::string& key,
                     std::int64_t lo, std::int64_t hi, std::optional<std::int64_t> fallback) {
  if (!props.is_object())
    throw std::invalid_argument(op + ": props must be a JSON object, found " + props.dump());
  if (!props.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(op + ": props need \"" + key + "\" (an integer " +
                                rangeStr(lo, hi) + ")");
  }
  return checkedInt(props[key], op, key, lo, hi, "an integer " + rangeStr(lo, hi));
}

std::array<std::int64_t, 2> readPair(const nlohmann::json& props, const std::string& op,
                                     const std::string& key, std::int64_t lo, std::int64_t hi,
                                     std::optional<std::array<std::int64_t, 2>> fallback) {
  if (!props.is_object())
    throw std::invalid_argument(op + ": props must be a JSON object, found " + props.dump());
  const std::string expected = "an integer or a pair of integers " + rangeStr(lo, hi);
  if (!props.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(op + ": props need \"" + key + "\" (" + expected + ")");
  }
  const auto& v = props[key];
  if (v.is_number_integer()) {
    const std::int64_t n = checkedInt(v, op, key, lo, hi, expected);
    return {n, n};
  }
  if (!v.is_array() || v.size() != 2) badProp(op, key, expected, v);
  return {checkedInt(v[0], op, key, lo, hi, expected), checkedInt(v[1], op, key, lo, hi, expected)};
}

bool readBool(const nlohmann::json& props, const std::string& op, const std::string& key,
              std::optional<bool> fallback) {
  if (!props.is_object())
    throw std::invalid_argument(op + ": props must be a JSON object, found " + props.dump());
  if (!props.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(op + ": props need \"" + key + "\" (true or false)");
  }
  if (!props[key].is_boolean()) badProp(op, key, "true or false", props[key]);
  return props[key].get<bool>();
}

double readDouble(const nlohmann::json& props, const std::string& op, const std::string& key,
                  double lo, double hi, std::optional<double> fallback) {
  if (!props.is_object())
    throw std::invalid_argument(op + ": props must be a JSON object, found " + props.dump());
  const std::string expected =
      "a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!props.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(op + ": props need \"" + key + "\" (" + expected + ")");
  }
  const auto& v = props[key];
  if (!v.is_number()) badProp(op, key, expected, v);
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi)) badProp(op, key, expected, v);
  return d;
}

DType readDType(const nlohmann::json& props, const std::string& op, const std::string& key) {
  if (!props.is_object())
    throw std::invalid_argument(op + ": props must be a JSON object, found " + props.dump());
  if (!props.contains(key) || !props[key].is_string())
    throw std::invalid_argument(op + ": props need \"" + key +
                                "\" (a dtype name such as \"float32\")");
  auto d = dtypeFromName(props[key].get<std::string>());
  if (!d) badProp(op, key, "a dtype name such as \"float32\"", props[key]);
  return *d;
}

std::string pairStr(const std::array<std::int64_t, 2>& p) {
  return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")";
}

// --- Shape arithmetic ----------------------------------------------------------------------------

VarPtr shapeAdd(const VarPtr& a, std::int64_t b) {
  if (b == 0) return a;
  if (auto av = constantIntValue(a)) return constantInt(*av + b);
  return add(a, constantInt(b));
}

VarPtr shapeAdd(const VarPtr& a, const VarPtr& b) {
  auto av = constantIntValue(a), bv = constantIntValue(b);
  if (av && bv) return constantInt(*av + *bv);
  if (av == 0) return b;
  if (bv == 0) return a;
  return add(a, b);
}

VarPtr shapeSub(const VarPtr& a, const VarPtr& b) {
  auto av = constantIntValue(a), bv = constantIntValue(b);
  if (av && bv) return constantInt(*av - *bv);
  if (bv == 0) return a;
  return sub(a, b);
}

VarPtr shapeMul(const VarPtr& a, std::int64_t b) {
  if (b == 1) return a;
  if (auto av = constantIntValue(a)) return constantInt(*av * b);
  return mul(a, constantInt(b));
}

VarPtr shapeMul(const VarPtr& a, const VarPtr& b) {
  auto av = constantIntValue(a), bv = constantIntValue(b);
  if (av && bv) return constantInt(*av * *bv);
  if (av == 1) return b;
  if (bv == 1) return a;
  return mul(a, b);
}

VarPtr shapeFloorDiv(const VarPtr& a, std::int64_t b) {
  if (b == 1) return a;
  if (auto av = constantIntValue(a)) {
    std::int64_t q = *av / b;
    if ((*av % b != 0) && ((*av < 0) != (b < 0))) --q;  // floor, as intDiv does
    return constantInt(q);
  }
  return intDiv(a, constantInt(b));
}

VarPtr shapeMax(const VarPtr& a, std::int64_t lo) {
  if (auto av = constantIntValue(a)) return constantInt(std::max(*av, lo));
  return maximum(a, constantInt(lo));
}

// --- Gradient helpers ----------------------------------------------------------------------------

namespace {
std::vector<int> normalizedAxes(const std::vector<int>& axes, int ndim) {
  std::vector<int> sorted;
  for (int a : axes) sorted.push_back(a < 0 ? a + ndim : a);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  return sorted;
}
}  // namespace

VarPtr sumAxes(const VarPtr& x, const std::vector<int>& axes, std::source_location site) {
  const std::vector<int> sorted = normalizedAxes(axes, x->type().ndim());
  if (sorted.empty()) return x;
  return std::make_shared<CAReduce>(ScalarOp::Add, sorted)->operator()({x}, site);
}

VarPtr sumKeepAxes(const VarPtr& x, const std::vector<int>& axes, std::source_location site) {
  const int ndim = x->type().ndim();
  const std::vector<int> sorted = normalizedAxes(axes, ndim);
  if (sorted.empty()) return x;
  auto reduced = std::make_shared<CAReduce>(ScalarOp::Add, sorted)->operator()({x}, site);
  // Put size-1 axes back where the reduced ones were.
  std::vector<int> order;
  int kept = 0;
  for (int axis = 0; axis < ndim; ++axis) {
    if (std::binary_search(sorted.begin(), sorted.end(), axis))
      order.push_back(DimShuffle::kNewAxis);
    else
      order.push_back(kept++);
  }
  return dimshuffle(reduced, order, site);
}

VarPtr sumKeepAxis(const VarPtr& x, int axis, std::source_location site) {
  return sumKeepAxes(x, {axis}, site);
}

}  // namespace tscope::engine::nn_detail
