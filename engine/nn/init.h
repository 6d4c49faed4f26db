#pragma once
// Parameter initialization for the nn layers: one generator per thread, seeded with manualSeed
// (torch.manual_seed), so a model built after the same seed has the same weights.

#include "engine/tensor/tensor.h"

#include <cstdint>
#include <random>

namespace tscope::engine::nn {

// Reseeds the calling thread's generator.
void manualSeed(std::uint64_t seed);
// The calling thread's generator (seeded with 0 until manualSeed).
std::mt19937_64& generator();
// A float32 tensor of U(-bound, bound) values (PyTorch's default for Linear, Conv2d, LSTM, GRU:
// bound = 1 / sqrt(fan_in)).
Tensor uniformTensor(const Shape& shape, double bound);
// A float32 tensor of N(0, 1) values (Embedding's default).
Tensor normalTensor(const Shape& shape);

}  // namespace tscope::engine::nn
