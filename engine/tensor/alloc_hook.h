#pragma once
// The allocation hook: per-thread byte counters that every tensor Storage updates when it is
// allocated and when it is freed, for the profiler's memory figures (profiling/profiler.h).
//
//   engine::AllocationCounters counters;
//   {
//     engine::ScopedAllocationCounters hook(&counters);  // this thread only
//     f(args);
//   }
//   counters.peakLive;  // most bytes held at once, relative to when the hook was installed
//
// Note [Allocation hook cost]: with no counters installed, Storage pays one thread_local pointer
// load and a branch per allocation and per free: no lock, no atomic, no call. With counters
// installed it adds a few plain integer updates on the thread that allocates or frees (the
// counters are not shared between threads, so nothing needs to be atomic).
//
// Note [What the hook counts]: the bytes a Storage holds (Storage::nbytes), counted when it is
// built and when it is destroyed, on the thread that does either. A Storage freed on another
// thread (a tensor handed to the GUI) is counted on that thread's counters, if any. Big blocks are
// recycled by engine/tensor/big_block_cache: the hook counts what Storage objects hold, not what
// the process maps, so a block the cache keeps after its Storage died counts as freed and a block
// it hands out again counts as allocated. Storage that existed before the counters were installed
// and is freed while they are shows as freed bytes, so `live` may go below zero; the profiler
// reads differences (bytes a node allocated and freed, live bytes relative to a run's start).

#include <cstddef>
#include <cstdint>

namespace tscope::engine {

struct AllocationCounters {
  std::int64_t allocatedBytes = 0;  // since installed (or reset)
  std::int64_t freedBytes = 0;
  std::int64_t allocations = 0;
  std::int64_t frees = 0;
  std::int64_t live = 0;      // allocatedBytes - freedBytes
  std::int64_t peakLive = 0;  // the largest `live` since installed or since resetPeak()

  void resetPeak() { peakLive = live; }
};

namespace detail {
extern thread_local AllocationCounters* t_allocationCounters;
}

// Counters that live as long as this thread (zero at its start): what the profiler installs, so
// that a profiler destroyed while its run is paused leaves no dangling pointer behind.
AllocationCounters& threadAllocationCounters();
// The counters installed for this thread (null when none are).
inline AllocationCounters* allocationCounters() {
  return detail::t_allocationCounters;
}
// Installs `counters` (null: none) for this thread; returns the previous ones.
AllocationCounters* setAllocationCounters(AllocationCounters* counters);

// Called by Storage (engine/tensor/tensor.cpp).
inline void noteAllocated(std::size_t bytes) {
  if (AllocationCounters* c = detail::t_allocationCounters) {
    const auto n = static_cast<std::int64_t>(bytes);
    c->allocatedBytes += n;
    ++c->allocations;
    c->live += n;
    if (c->live > c->peakLive) c->peakLive = c->live;
  }
}
inline void noteFreed(std::size_t bytes) {
  if (AllocationCounters* c = detail::t_allocationCounters) {
    const auto n = static_cast<std::int64_t>(bytes);
    c->freedBytes += n;
    ++c->frees;
    c->live -= n;
  }
}

// Installs counters for this thread for its lifetime, restoring the previous ones after.
class ScopedAllocationCounters {
 public:
  explicit ScopedAllocationCounters(AllocationCounters* counters)
      : m_previous(setAllocationCounters(counters)) {}
  ~ScopedAllocationCounters() { setAllocationCounters(m_previous); }
  ScopedAllocationCounters(const ScopedAllocationCounters&) = delete;
  ScopedAllocationCounters& operator=(const ScopedAllocationCounters&) = delete;

 private:
  AllocationCounters* m_previous;
};

}  // namespace tscope::engine
