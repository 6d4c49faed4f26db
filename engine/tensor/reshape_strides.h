#pragma once
// Strides for a reshape without a copy (numpy's no-copy reshape): Note [Reshape views] in
// engine/ops/shape/reshape.cpp. Kept out of tensor.h, which every file includes, because only the
// Reshape op and its tests need it.

#include "engine/tensor/tensor.h"

#include <cstdint>
#include <optional>
#include <span>

namespace tscope::engine {

// The strides under which a tensor of shape `from` with strides `fromStrides` reads as shape `to`
// (same element count) in row-major order without a copy, or nullopt when no strides can: each
// run of axes that merges or splits must step uniformly. Axes of size 1 are free.
std::optional<Strides> reshapeStrides(std::span<const std::int64_t> from,
                                      std::span<const std::int64_t> fromStrides,
                                      std::span<const std::int64_t> to);

}  // namespace tscope::engine
