#pragma once
// The VM's dispatch helpers (internal to engine/vm): vm.cpp runs nodes with them, vm_loop.cpp
// loop frames. Templates over the VM's private Frame and Hot, which they deduce.
#include "engine/vm/cancel.h"
#include "engine/vm/vm.h"

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

namespace tscope::engine::vm_detail {

// Runs the observers' callbacks with the VM marked as inside them, so addObserver/removeObserver
// from a callback are deferred (Note [VM states], "Threads").
struct CallbackScope {
  explicit CallbackScope(bool& flag) : m_flag(flag), m_previous(flag) { flag = true; }
  ~CallbackScope() { m_flag = m_previous; }
  bool& m_flag;
  bool m_previous;
};

// The kernel the linker chose for a node (its op's perform when none), with a failure turned
// into an ExecutionError by `contextualize` (VM::rethrowWithContext). Templates over the VM's
// private Frame and Hot, which they deduce.
template <class Frame, class Hot, class Contextualize>
inline void invokeKernel(const Frame& f, const Hot& t, Contextualize&& contextualize) {
  try {
    if (t.fn)
      t.fn(*t.op, *t.node, f.inputs(t), f.outputs(t));
    else
      t.op->perform(*t.node, f.inputs(t), f.outputs(t));
  } catch (const ExecutionError&) {
    throw;
  } catch (const ExecutionCancelled&) {
    throw;
  } catch (const std::exception& e) {
    contextualize(e);
  }
}

// One more call of the node at `position` that took `ns` (VM::timings()).
template <class Timing>
inline void addTiming(Timing* timings, std::size_t position, std::int64_t ns) {
  if (!timings) return;
  Timing& t = timings[position];
  t.lastNs = ns;
  t.totalNs += ns;
  ++t.calls;
}

// Calls `call(observer)` for every observer, first to last (beforeNode) or last to first
// (afterNode, Note [Node events]), marked as inside the callbacks; `onThrow` fails the run before
// the exception goes on.
template <class Observers, class Call, class OnThrow>
inline void notifyObservers(const Observers& observers, bool& inCallbacks, bool reverse,
                            Call&& call, OnThrow&& onThrow) {
  CallbackScope scope(inCallbacks);
  try {
    if (reverse)
      for (std::size_t k = observers.size(); k-- > 0;) call(*observers[k]);
    else
      for (std::size_t k = 0; k < observers.size(); ++k) call(*observers[k]);
  } catch (...) {
    onThrow(std::current_exception());
    throw;
  }
}

// The slots the plan frees after a node (Note [Storage plan]).
template <class Frame, class Hot>
inline void freeAfter(Frame& f, const Hot& t, const std::uint32_t* freeSlots) {
  for (std::uint32_t k = 0; k < t.nFree; ++k) f.storage[freeSlots[t.freeBegin + k]] = Tensor();
}

// A loop op's failure, with the iteration it happened in (Note [Loop frames]).
inline std::runtime_error loopFailure(const std::exception& e, std::int64_t iteration) {
  return std::runtime_error(std::string(e.what()) + " (in iteration " + std::to_string(iteration) +
                            ")");
}

}  // namespace tscope::engine::vm_detail
