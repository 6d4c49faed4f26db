// Note [Allocator], compiled into every executable that links tscope_allocator (CMakeLists.txt):
// mimalloc keeps freed memory committed for 10 s instead of 25 ms (pages) and 500 ms (segments)
// before it hands it back to the system. Freeing a 100k-node graph releases about 65 MB of small
// objects; when that memory had gone back to the system, the next graph of that size (the next
// clone, compile or file load) took it again as fresh pages, and the kernel's page faults and page
// zeroing were a quarter of FunctionGraph construction (bench_graph, 100k nodes, cold caches:
// 87 -> 67 ms; 10k-node graphs did not change). Memory still goes back after 10 s. The
// MIMALLOC_DECOMMIT_DELAY and MIMALLOC_SEGMENT_DECOMMIT_DELAY environment variables still decide
// when they are set.
#include <mimalloc.h>

#include <cstdlib>

namespace {

void setUnlessInEnvironment(mi_option_t option, const char* variable, long value) {
  if (std::getenv(variable) == nullptr) mi_option_set(option, value);
}

[[maybe_unused]] const bool kOptionsSet = [] {
  constexpr long kKeepFreedMemoryMs = 10'000;
  setUnlessInEnvironment(mi_option_decommit_delay, "MIMALLOC_DECOMMIT_DELAY", kKeepFreedMemoryMs);
  setUnlessInEnvironment(mi_option_segment_decommit_delay, "MIMALLOC_SEGMENT_DECOMMIT_DELAY", kKeepFreedMemoryMs);
  return true;
}();

}  // namespace
