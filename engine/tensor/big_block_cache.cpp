// Note [Big block cache] (big_block_cache.h).
#include "engine/tensor/big_block_cache.h"

#include <algorithm>
#include <cstdlib>

namespace tscope::engine {

BigBlockCache::BigBlockCache(std::size_t budgetBytes, Clock::duration maxAge)
    : m_budget(budgetBytes), m_maxAge(maxAge) {}

BigBlockCache::~BigBlockCache() {
  clear();
}

std::vector<std::byte*> BigBlockCache::evictLocked(Clock::time_point now, std::size_t incoming) {
  std::vector<std::byte*> freed;
  std::size_t keepFrom = 0;
  // Oldest first: expired blocks, then as many more as the budget needs.
  while (keepFrom < m_blocks.size()) {
    const Block& b = m_blocks[keepFrom];
    const bool expired = now - b.freedAt >= m_maxAge;
    const bool overBudget = m_bytes + incoming > m_budget;
    if (!expired && !overBudget) break;
    freed.push_back(b.data);
    m_bytes -= b.bytes;
    ++keepFrom;
  }
  m_blocks.erase(m_blocks.begin(), m_blocks.begin() + static_cast<std::ptrdiff_t>(keepFrom));
  return freed;
}

std::byte* BigBlockCache::take(std::size_t bytes) {
  std::byte* found = nullptr;
  std::vector<std::byte*> freed;
  {
    std::lock_guard lock(m_mutex);
    freed = evictLocked(Clock::now(), 0);
    // The most recently freed block of that size: its pages are the likeliest still in cache.
    for (auto it = m_blocks.rbegin(); it != m_blocks.rend(); ++it) {
      if (it->bytes != bytes) continue;
      found = it->data;
      m_bytes -= it->bytes;
      m_blocks.erase(std::next(it).base());
      break;
    }
  }
  for (std::byte* p : freed) std::free(p);
  return found;
}

void BigBlockCache::give(std::byte* block, std::size_t bytes) {
  if (block == nullptr) return;
  if (bytes > m_budget) {
    std::free(block);
    return;
  }
  std::vector<std::byte*> freed;
  {
    std::lock_guard lock(m_mutex);
    const auto now = Clock::now();
    freed = evictLocked(now, bytes);
    m_blocks.push_back(Block{block, bytes, now});
    m_bytes += bytes;
  }
  for (std::byte* p : freed) std::free(p);
}

void BigBlockCache::clear() {
  std::vector<Block> blocks;
  {
    std::lock_guard lock(m_mutex);
    blocks.swap(m_blocks);
    m_bytes = 0;
  }
  for (const Block& b : blocks) std::free(b.data);
}

std::size_t BigBlockCache::cachedBytes() const {
  std::lock_guard lock(m_mutex);
  return m_bytes;
}

std::size_t BigBlockCache::cachedBlocks() const {
  std::lock_guard lock(m_mutex);
  return m_blocks.size();
}

BigBlockCache& BigBlockCache::process() {
  static BigBlockCache* cache = new BigBlockCache(std::size_t{256} << 20, std::chrono::seconds(10));
  return *cache;
}

}  // namespace tscope::engine
