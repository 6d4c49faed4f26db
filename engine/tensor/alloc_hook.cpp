#include "engine/tensor/alloc_hook.h"

namespace tscope::engine {

namespace detail {
thread_local AllocationCounters* t_allocationCounters = nullptr;
}

namespace {
thread_local AllocationCounters t_ownCounters;
}

AllocationCounters& threadAllocationCounters() {
  return t_ownCounters;
}

AllocationCounters* setAllocationCounters(AllocationCounters* counters) {
  AllocationCounters* previous = detail::t_allocationCounters;
  detail::t_allocationCounters = counters;
  return previous;
}

}  // namespace tscope::engine
