#pragma once
// Shared pieces of the neural-network ops (engine/ops/nn): dtype dispatch for float kernels, props
// readers for untrusted JSON, shape arithmetic that folds constants, and the few reductions their
// gradients need.

#include "engine/graph/op.h"
#include "engine/tensor/tensor.h"

#include <array>
#include <cstdint>
#include <source_location>
#include <stdexcept>
#include <string>

namespace tscope::engine::nn_detail {

// Calls f(float{}) or f(double{}); the nn kernels exist for these two dtypes only.
template <class F>
decltype(auto) dispatchFloat(DType dtype, F&& f) {
  if (dtype == DType::Float32) return f(float{});
  if (dtype == DType::Float64) return f(double{});
  throw std::invalid_argument("expected a float32 or float64 tensor, found " +
                              std::string(dtypeName(dtype)));
}

// A handle to output i of a node seen through a const reference (pullback/pushforward get one).
inline VarPtr outputOf(const Apply& node, int i) {
  return const_cast<Apply&>(node).output(i);
}

inline bool isKernelFloat(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64;
}

// --- Props readers (files can name ops: every value is checked) --------------------------------
// props[key] as an integer in [lo, hi]; `fallback` when absent (nullopt: the key is required).
std::int64_t readInt(const nlohmann::json& props, const std::string& op, const std::string& key,
                     std::int64_t lo, std::int64_t hi,
                     std::optional<std::int64_t> fallback = std::nullopt);
// props[key] as [a, b] (an integer n reads as [n, n]), each in [lo, hi].
std::array<std::int64_t, 2> readPair(
    const nlohmann::json& props, const std::string& op, const std::string& key, std::int64_t lo,
    std::int64_t hi, std::optional<std::array<std::int64_t, 2>> fallback = std::nullopt);
bool readBool(const nlohmann::json& props, const std::string& op, const std::string& key,
              std::optional<bool> fallback);
double readDouble(const nlohmann::json& props, const std::string& op, const std::string& key,
                  double lo, double hi, std::optional<double> fallback = std::nullopt);
DType readDType(const nlohmann::json& props, const std::string& op, const std::string& key);

// "(2, 3)" from a pair, for str() and error messages.
std::string pairStr(const std::array<std::int64_t, 2>& p);

// --- Shape arithmetic on 0-d int64 variables ---------------------------------------------------
// Each folds to a constant when both operands are constants, so static shapes stay static.
VarPtr shapeAdd(const VarPtr& a, std::int64_t b);
VarPtr shapeAdd(const VarPtr& a, const VarPtr& b);
VarPtr shapeSub(const VarPtr& a, const VarPtr& b);
VarPtr shapeMul(const VarPtr& a, std::int64_t b);
VarPtr shapeMul(const VarPtr& a, const VarPtr& b);
VarPtr shapeFloorDiv(const VarPtr& a, std::int64_t b);
// max(a, lo).
VarPtr shapeMax(const VarPtr& a, std::int64_t lo);

// --- Gradient helpers -------------------------------------------------------------------------
// The sum of x over `axis`, keeping the axis with size 1 (for broadcasting back against x).
VarPtr sumKeepAxis(const VarPtr& x, int axis,
                   std::source_location site = std::source_location::current());
// The sum of x over several axes, keeping them with size 1.
VarPtr sumKeepAxes(const VarPtr& x, const std::vector<int>& axes,
                   std::source_location site = std::source_location::current());
// The sum of x over axes, dropping them.
VarPtr sumAxes(const VarPtr& x, const std::vector<int>& axes,
               std::source_location site = std::source_location::current());

}  // namespace tscope::engine::nn_detail
