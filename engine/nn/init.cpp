#include "engine/nn/init.h"

namespace tscope::engine::nn {

namespace {
thread_local std::mt19937_64 t_generator{0};
}

void manualSeed(std::uint64_t seed) {
  t_generator.seed(seed);
}

std::mt19937_64& generator() {
  return t_generator;
}

Tensor uniformTensor(const Shape& shape, double bound) {
  Tensor t = Tensor::empty(DType::Float32, shape);
  std::uniform_real_distribution<float> dist(static_cast<float>(-bound), static_cast<float>(bound));
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = dist(t_generator);
  return t;
}

Tensor normalTensor(const Shape& shape) {
  Tensor t = Tensor::empty(DType::Float32, shape);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = dist(t_generator);
  return t;
}

}  // namespace tscope::engine::nn
