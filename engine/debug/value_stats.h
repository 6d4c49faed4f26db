#pragma once
// TensorStats: what a debugger shows of a value without printing it: shape, dtype, min, max,
// mean, L2 norm over the finite elements, and the counts of NaN, +Inf and -Inf elements.
//
//   TensorStats s = statsOf(t);
//   if (s.nan > 0) ...;                       // integer and bool tensors never hold NaN
//   std::string line = toString(s);           // "float32 (64, 10) min -1.2 max 3.4 mean ... "
//
// Note [Stats over finite elements]: min, max, mean and norm skip NaN and infinite elements, so
// one NaN does not hide the range of the rest; a tensor with no finite element has min = max =
// mean = norm = NaN (size 0 as well). The counts say what was skipped.

#include "engine/tensor/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tscope::engine::debug {

struct TensorStats {
  std::vector<std::int64_t> shape;
  DType dtype = DType::Float32;
  std::int64_t size = 0;  // number of elements
  double min = 0, max = 0, mean = 0, norm = 0;
  std::int64_t nan = 0, posInf = 0, negInf = 0;
  std::int64_t finite() const { return size - nan - posInf - negInf; }
};

// Statistics of a defined tensor of any dtype and layout (strided views included).
TensorStats statsOf(const Tensor& value);
// One line: dtype, shape, min, max, mean, norm, and the non-finite counts when there are any.
std::string toString(const TensorStats& stats);

// The largest |a - b| over the elements (same shape required). A NaN or an infinity on one side
// where the other differs counts as +Inf; NaN against NaN is no difference. For "changed since
// the last run by more than k" breakpoint conditions.
double maxAbsDifference(const Tensor& a, const Tensor& b);

}  // namespace tscope::engine::debug
