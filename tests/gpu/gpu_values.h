#pragma once
// Random inputs for the GPU parity suites: values uniform in [lo, hi) from a seed; integer dtypes
// get whole numbers (ten times the draw, floored), booleans the draw's sign.
#include "engine/tensor/tensor.h"

#include <cmath>
#include <random>
#include <vector>

namespace tscope::gputest {
inline engine::Tensor random(engine::DType d, engine::Shape shape, unsigned seed, double lo = -2,
                             double hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(engine::shapeNumel(shape)));
  for (double& x : v) x = engine::isFloat(d) ? u(rng) : std::floor(u(rng) * 10);
  if (d == engine::DType::Bool)
    for (double& x : v) x = x > 0 ? 1 : 0;
  return engine::Tensor::fromDoubles(d, std::move(shape), v);
}
}  // namespace tscope::gputest
