// Note [Allocator], compiled into every executable that links tscope_allocator (CMakeLists.txt):
// mimalloc keeps freed memory committed for 10 s instead of 25 ms (pages) and 500 ms (segments)
// before it hands it back to the system. Freeing a 100k-node graph releases about 65 MB of small
// objects; when that memory had gone back to the system, the next graph of that size (the next
// clone, compile or file load) took it again as fresh pages, and the kernel's page faults and page
// zeroing were a quarter of FunctionGraph construction (bench_graph, 100k nodes, cold caches:
// 87 -> 67 ms; 10k-node graphs did not change). Memory still goes back after 10 s. The
// MIMALLOC_DECOMMIT_DELAY and MIMALLOC_SEGMENT_DECOMMIT_DELAY environment variables still decide
// when they are set.
//
// mimalloc also asks for transparent huge pages (2 MiB, madvise(MADV_HUGEPAGE)) for its segments.
// A walk over a graph of a million nodes (about 3 GB) misses the TLB on nearly every node with 4
// KiB pages, and the page tables themselves (6 MB) no longer fit in the cache: a dependent load at
// random costs about 220 ns in 572 MB against 146 ns in 57 MB. fast_run compile of the
// 1.19M-node synthetic graph (bench_optimize --max-nodes 1000000): 15.4-17.3 s -> 13.1-13.4 s;
// of the 119k-node one: 1.27-1.45 s -> 1.24-1.32 s, paired runs of the same binary. The cost:
// mimalloc does not decommit parts of a segment on huge pages, so memory goes back to the system
// a whole segment (32 MiB) at a time, when every object in it is freed. MIMALLOC_LARGE_OS_PAGES=0
// turns it off. Where the kernel has transparent huge pages disabled, nothing changes.
#include <cstdlib>
#include <mimalloc.h>

namespace {

void setUnlessInEnvironment(mi_option_t option, const char* variable, long value) {
  if (std::getenv(variable) == nullptr) mi_option_set(option, value);
}

[[maybe_unused]] const bool kOptionsSet = [] {
  constexpr long kKeepFreedMemoryMs = 10'000;
  setUnlessInEnvironment(mi_option_decommit_delay, "MIMALLOC_DECOMMIT_DELAY", kKeepFreedMemoryMs);
  setUnlessInEnvironment(mi_option_segment_decommit_delay, "MIMALLOC_SEGMENT_DECOMMIT_DELAY",
                         kKeepFreedMemoryMs);
  setUnlessInEnvironment(mi_option_large_os_pages, "MIMALLOC_LARGE_OS_PAGES", 1);
  return true;
}();

}  // namespace
