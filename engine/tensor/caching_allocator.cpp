#include "engine/tensor/caching_allocator.h"

#include <algorithm>

namespace tscope::engine {

namespace {
std::size_t roundUp(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}
std::string mib(std::size_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + "." +
         std::to_string(bytes % (1024 * 1024) * 10 / (1024 * 1024)) + " MiB";
}
}  // namespace

std::size_t CachingDeviceAllocator::roundSize(std::size_t nbytes) {
  return std::max(kRoundBytes, roundUp(nbytes, kRoundBytes));
}

CachingDeviceAllocator::~CachingDeviceAllocator() {
  for (Block* first : m_segments) {
    m_raw.free(reinterpret_cast<void*>(first->address));
    for (Block* b = first; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

CachingDeviceAllocator::FreeList& CachingDeviceAllocator::freeList(StreamId stream, bool small) {
  return m_free[{stream, small}];
}

CachingDeviceAllocator::Block* CachingDeviceAllocator::takeFree(std::size_t size, StreamId stream,
                                                                bool small) {
  FreeList& list = freeList(stream, small);
  Block key;
  key.size = size;
  auto it = list.lower_bound(&key);  // best fit: the smallest block that holds size
  if (it == list.end()) return nullptr;
  Block* block = *it;
  list.erase(it);
  return block;
}

CachingDeviceAllocator::Block* CachingDeviceAllocator::newSegment(std::size_t size, StreamId stream,
                                                                  bool small) {
  const std::size_t bytes = small ? kSegmentBytes : roundUp(size, kSegmentBytes);
  void* ptr = m_raw.allocate(bytes);
  if (ptr == nullptr) {
    // Note [Caching allocator]: what the cache holds may be what the device lacks.
    releaseFreeSegments();
    ptr = m_raw.allocate(bytes);
  }
  if (ptr == nullptr) return nullptr;
  auto* block = new Block;
  block->address = reinterpret_cast<std::uintptr_t>(ptr);
  block->size = bytes;
  block->stream = stream;
  block->small = small;
  m_segments.insert(block);
  ++m_stats.rawAllocations;
  noteCached(bytes);
  return block;
}

void CachingDeviceAllocator::noteCached(std::size_t bytes) {
  m_stats.cachedBytes += bytes;
  m_stats.peakCachedBytes = std::max(m_stats.peakCachedBytes, m_stats.cachedBytes);
}

void CachingDeviceAllocator::split(Block* block, std::size_t size) {
  const std::size_t rest = block->size - size;
  const bool worth = block->small ? rest >= kRoundBytes : rest > kSmallLimit;
  if (!worth) return;
  auto* tail = new Block;
  tail->address = block->address + size;
  tail->size = rest;
  tail->stream = block->stream;
  tail->small = block->small;
  tail->prev = block;
  tail->next = block->next;
  if (block->next) block->next->prev = tail;
  block->next = tail;
  block->size = size;
  freeList(tail->stream, tail->small).insert(tail);
}

void* CachingDeviceAllocator::allocate(std::size_t nbytes, StreamId stream) {
  const std::size_t size = roundSize(nbytes);
  const bool small = size <= kSmallLimit;
  std::lock_guard lock(m_mutex);
  Block* block = takeFree(size, stream, small);
  if (block != nullptr) {
    ++m_stats.cacheHits;
  } else {
    block = newSegment(size, stream, small);
    if (block == nullptr)
      throw DeviceOutOfMemory("CUDA out of memory: expected room for a block of " +
                              std::to_string(size) + " bytes (" + std::to_string(nbytes) +
                              " requested), found none after emptying the "
                              "cache (allocated " +
                              mib(m_stats.allocatedBytes) + ", cached " + mib(m_stats.cachedBytes) +
                              ", peak " + mib(m_stats.peakAllocatedBytes) + ")");
  }
  split(block, size);
  block->inUse = true;
  block->requested = nbytes;
  m_inUse.emplace(block->address, block);
  ++m_stats.allocations;
  m_stats.allocatedBytes += block->size;
  m_stats.requestedBytes += nbytes;
  m_stats.peakAllocatedBytes = std::max(m_stats.peakAllocatedBytes, m_stats.allocatedBytes);
  return reinterpret_cast<void*>(block->address);
}

void CachingDeviceAllocator::free(void* ptr) {
  std::lock_guard lock(m_mutex);
  auto it = m_inUse.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == m_inUse.end())
    throw std::invalid_argument(
        "CachingDeviceAllocator::free: expected a block this allocator handed out, found an "
        "unknown or already freed pointer");
  Block* block = it->second;
  m_inUse.erase(it);
  ++m_stats.frees;
  m_stats.allocatedBytes -= block->size;
  m_stats.requestedBytes -= block->requested;
  block->inUse = false;
  block->requested = 0;
  FreeList& list = freeList(block->stream, block->small);
  // Merge with free neighbours: the segment's free space stays in as few blocks as it can.
  if (Block* next = block->next; next != nullptr && !next->inUse) {
    list.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    delete next;
  }
  if (Block* prev = block->prev; prev != nullptr && !prev->inUse) {
    list.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next) block->next->prev = prev;
    delete block;
    block = prev;
  }
  list.insert(block);
}

void CachingDeviceAllocator::releaseFreeSegments() {
  for (auto it = m_segments.begin(); it != m_segments.end();) {
    Block* first = *it;
    if (first->inUse || first->next != nullptr) {  // something of it is in use
      ++it;
      continue;
    }
    freeList(first->stream, first->small).erase(first);
    m_raw.free(reinterpret_cast<void*>(first->address));
    m_stats.cachedBytes -= first->size;
    ++m_stats.rawFrees;
    delete first;
    it = m_segments.erase(it);
  }
}

void CachingDeviceAllocator::emptyCache() {
  std::lock_guard lock(m_mutex);
  releaseFreeSegments();
}

DeviceMemoryStats CachingDeviceAllocator::stats() const {
  std::lock_guard lock(m_mutex);
  return m_stats;
}

void CachingDeviceAllocator::resetPeak() {
  std::lock_guard lock(m_mutex);
  m_stats.peakAllocatedBytes = m_stats.allocatedBytes;
  m_stats.peakCachedBytes = m_stats.cachedBytes;
}

}  // namespace tscope::engine
