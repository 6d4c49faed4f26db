// reshapeStrides: numpy's no-copy reshape (Note [Reshape views] in engine/ops/shape/reshape.cpp).
#include "engine/tensor/reshape_strides.h"

#include <vector>

namespace tscope::engine {

std::optional<Strides> reshapeStrides(std::span<const std::int64_t> from,
                                      std::span<const std::int64_t> fromStrides,
                                      std::span<const std::int64_t> to) {
  // The non-unit axes of `from`; an empty tensor is contiguous whatever its strides say.
  std::vector<std::int64_t> os, ost;
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i] == 0) return contiguousStrides(to);
    if (from[i] != 1) {
      os.push_back(from[i]);
      ost.push_back(fromStrides[i]);
    }
  }
  Strides out(to.size(), 0);
  std::size_t oi = 0, ni = 0;
  // Skips unit axes of `to`; their stride is set below.
  auto nextNew = [&](std::size_t j) {
    while (j < to.size() && to[j] == 1) ++j;
    return j;
  };
  ni = nextNew(0);
  while (oi < os.size() && ni < to.size()) {
    // Grow one run of old axes [oi, oj) and one of new axes [ni, nj) until their sizes agree.
    std::size_t oj = oi + 1, nj = ni + 1;
    std::int64_t op = os[oi], np = to[ni];
    while (op != np) {
      if (op < np) {
        if (oj >= os.size()) return std::nullopt;
        op *= os[oj++];
      } else {
        nj = nextNew(nj);
        if (nj >= to.size()) return std::nullopt;
        np *= to[nj++];
      }
    }
    // The old run must step uniformly: each axis's stride is the next one's times its size.
    for (std::size_t k = oi; k + 1 < oj; ++k)
      if (ost[k] != ost[k + 1] * os[k + 1]) return std::nullopt;
    // The new run's strides from the run's innermost old stride.
    std::int64_t stride = ost[oj - 1];
    for (std::size_t k = nj; k-- > ni;) {
      if (to[k] == 1) continue;
      out[k] = stride;
      stride *= to[k];
    }
    oi = oj;
    ni = nextNew(nj);
  }
  if (oi != os.size() || nextNew(ni) != to.size()) return std::nullopt;
  // Unit axes: any stride reads the same element; give them the contiguous one beside them.
  for (std::size_t k = to.size(); k-- > 0;)
    if (to[k] == 1) out[k] = k + 1 < to.size() ? out[k + 1] * to[k + 1] : 1;
  return out;
}

}  // namespace tscope::engine
