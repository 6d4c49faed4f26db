#pragma once
// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel Random
// Numbers: As Easy as 1, 2, 3" (SC 2011), as in their Random123 library: a 128-bit counter and a
// 64-bit key map to 128 random bits through 10 rounds of multiply-xor with a Weyl-sequence key
// schedule. Being a pure function of (counter, key), any block can be computed independently, so
// the random ops' whole state is two integers: the key (the seed) and the next block's counter.
// Checked against Random123's known-answer vectors (tests/engine/ops/tst_random.cpp).

#include <array>
#include <cstdint>

namespace tscope::engine::philox {

using Counter = std::array<std::uint32_t, 4>;
using Key = std::array<std::uint32_t, 2>;

inline constexpr std::uint32_t kMul0 = 0xD2511F53u;
inline constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
inline constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

constexpr Counter round(const Counter& c, const Key& k) {
  const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c[0];
  const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c[2];
  const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
  const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

// The 10-round Philox4x32 bijection: the key is bumped between rounds.
constexpr Counter philox4x32_10(Counter c, Key k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    c = round(c, k);
  }
  return c;
}

// Block `index` of the stream with this 64-bit key: counter (index low, index high, 0, 0).
constexpr Counter block(std::uint64_t key, std::uint64_t index) {
  return philox4x32_10(
      {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), 0u, 0u},
      {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)});
}

// SplitMix64's finalizer: spreads a seed (and a stream number) over all 64 key bits.
constexpr std::uint64_t mixSeed(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace tscope::engine::philox
