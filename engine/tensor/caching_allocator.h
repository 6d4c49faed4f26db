#pragma once
// CachingDeviceAllocator: the bookkeeping of the CUDA backend's device memory, separate from
// cudaMalloc so that it is tested on any machine with a fake RawDeviceAllocator
// (tests/engine/tensor/tst_caching_allocator.cpp). The backend wraps cudaMalloc/cudaFree in a
// RawDeviceAllocator (engine/backends/cuda/device_runtime.cpp).
//
//   CachingDeviceAllocator cache(raw);
//   void* p = cache.allocate(1000, stream);   // rounded to 1024 bytes, carved from a 2 MiB segment
//   cache.free(p);                             // back to the stream's free list, not to cudaFree
//   void* q = cache.allocate(900, stream);     // the same block again: no raw allocation
//   cache.emptyCache();                        // segments with nothing in use go back to the raw
//
// Note [Caching allocator]: requests round up to a multiple of 512 bytes (kRoundBytes). Small
// requests (<= 1 MiB) are carved out of 2 MiB segments, large ones out of segments rounded up to
// 2 MiB; a free block is split when the rest is worth keeping (>= 512 bytes small, > 1 MiB large)
// and merged with its free neighbours in the segment when freed. Free blocks are kept per
// (stream, pool) and handed out best-fit, only to requests on the stream they were freed on: work
// queued on that stream that still reads the block runs before any new writer, with no event. A
// raw allocation that fails empties the cache and tries once more; then DeviceOutOfMemory.
// After warm-up a program whose shapes repeat makes no raw allocation (the parity test checks it
// on a device). Thread-safe (one mutex).

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace tscope::engine {

// What the caching allocator takes memory from: cudaMalloc/cudaFree in the backend, a counter of
// fake addresses in the tests.
class RawDeviceAllocator {
 public:
  virtual ~RawDeviceAllocator() = default;
  // nbytes of device memory, or null when the device has no more.
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void free(void* ptr) = 0;
};

class DeviceOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// For the profiler's memory view. Bytes are rounded block sizes unless named "requested".
struct DeviceMemoryStats {
  std::size_t allocatedBytes = 0;      // in blocks handed out and not freed
  std::size_t requestedBytes = 0;      // what those blocks were asked for
  std::size_t cachedBytes = 0;         // held from the raw allocator (in use and free)
  std::size_t peakAllocatedBytes = 0;  // since construction or resetPeak()
  std::size_t peakCachedBytes = 0;
  std::int64_t allocations = 0;     // allocate() calls
  std::int64_t frees = 0;           // free() calls
  std::int64_t rawAllocations = 0;  // segments taken from the raw allocator
  std::int64_t rawFrees = 0;        // segments given back
  std::int64_t cacheHits = 0;       // allocations served without a raw allocation
};

class CachingDeviceAllocator {
 public:
  // An opaque stream handle (a cudaStream_t's bits; 0 is the default stream).
  using StreamId = std::uintptr_t;
  static constexpr std::size_t kRoundBytes = 512;
  static constexpr std::size_t kSmallLimit = std::size_t(1) << 20;    // small pool: <= 1 MiB
  static constexpr std::size_t kSegmentBytes = std::size_t(2) << 20;  // 2 MiB

  explicit CachingDeviceAllocator(RawDeviceAllocator& raw) : m_raw(raw) {}
  // Every segment still held goes back to the raw allocator (blocks in use included).
  ~CachingDeviceAllocator();
  CachingDeviceAllocator(const CachingDeviceAllocator&) = delete;
  CachingDeviceAllocator& operator=(const CachingDeviceAllocator&) = delete;

  // A block of at least nbytes (0 gives a 512-byte block, so every pointer is distinct) for work
  // on stream. Throws DeviceOutOfMemory naming the request and the figures of stats().
  void* allocate(std::size_t nbytes, StreamId stream = 0);
  // Returns a block from allocate() to its stream's free list; throws std::invalid_argument for
  // a pointer this allocator did not hand out (or freed twice).
  void free(void* ptr);
  // Gives every segment with no block in use back to the raw allocator.
  void emptyCache();
  DeviceMemoryStats stats() const;
  void resetPeak();

  // The size a request of nbytes is served with.
  static std::size_t roundSize(std::size_t nbytes);

 private:
  struct Block {
    std::uintptr_t address = 0;
    std::size_t size = 0;
    std::size_t requested = 0;
    StreamId stream = 0;
    bool small = false;
    bool inUse = false;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->address < b->address;
    }
  };
  using FreeList = std::set<Block*, BySize>;

  FreeList& freeList(StreamId stream, bool small);
  Block* takeFree(std::size_t size, StreamId stream, bool small);
  Block* newSegment(std::size_t size, StreamId stream, bool small);
  void split(Block* block, std::size_t size);
  void releaseFreeSegments();
  void noteCached(std::size_t bytes);

  RawDeviceAllocator& m_raw;
  mutable std::mutex m_mutex;
  std::map<std::pair<StreamId, bool>, FreeList> m_free;
  std::unordered_map<std::uintptr_t, Block*> m_inUse;
  std::set<Block*> m_segments;  // the first block of each segment
  DeviceMemoryStats m_stats;
};

}  // namespace tscope::engine
