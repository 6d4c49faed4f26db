#pragma once
// BigBlockCache: freed tensor storage of 4 MiB and more, kept for reuse by the next storage of the
// same size (engine-internal; Storage uses the process-wide one).
//
// Note [Big block cache]: each such block is a separate mapping from the system (mimalloc 2.0,
// like glibc, unmaps blocks that large when they are freed), so every fresh 40 MB output of a
// Function call had the kernel fault in and zero 40 MB (bench_fusion, fused tanh chain with fresh
// buffers: 14-16 ms against 7.7 ms with kept buffers; the unfused chain of five ops 41-55 ms).
// An elementwise chain, a training step or a repeated call frees and allocates blocks of the same
// few sizes, so a freed block is kept and handed to the next allocation of exactly its size, its
// pages still mapped (fused 8.6-8.9 ms, unfused 22 ms). The cache is bounded in bytes (256 MiB
// for the process; the oldest blocks go first) and in time: a block unused for 10 s goes back to
// the system, like mimalloc's small blocks (Note [Allocator]). Expiry is checked whenever a block
// is given or taken, so an idle process keeps at most the budget until its next large allocation
// or free; clear() gives everything back at once.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <vector>

namespace tscope::engine {

class BigBlockCache {
 public:
  using Clock = std::chrono::steady_clock;

  BigBlockCache(std::size_t budgetBytes, Clock::duration maxAge);
  ~BigBlockCache();  // frees the blocks it holds
  BigBlockCache(const BigBlockCache&) = delete;
  BigBlockCache& operator=(const BigBlockCache&) = delete;

  // A cached block of exactly `bytes` (the most recently freed one), or null.
  std::byte* take(std::size_t bytes);
  // Keeps the block (from std::aligned_alloc or std::malloc) for reuse, or frees it when it alone
  // is larger than the budget.
  void give(std::byte* block, std::size_t bytes);
  // Frees every block (a trim, e.g. when a large document closes).
  void clear();

  std::size_t cachedBytes() const;
  std::size_t cachedBlocks() const;

  // The process-wide cache Storage uses: 256 MiB, 10 s. Never destroyed, so storage freed during
  // static destruction still finds it.
  static BigBlockCache& process();

 private:
  struct Block {
    std::byte* data;
    std::size_t bytes;
    Clock::time_point freedAt;
  };
  // Removes expired blocks and, oldest first, blocks beyond the budget once `incoming` more bytes
  // are added; returns them for freeing outside the lock.
  std::vector<std::byte*> evictLocked(Clock::time_point now, std::size_t incoming);

  const std::size_t m_budget;
  const Clock::duration m_maxAge;
  mutable std::mutex m_mutex;
  std::vector<Block> m_blocks;  // oldest first
  std::size_t m_bytes = 0;
};

}  // namespace tscope::engine
