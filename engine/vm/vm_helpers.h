#pragma once
// The VM's dispatch helpers (internal to engine/vm): vm.cpp runs nodes with them, vm_loop.cpp
// loop frames. Templates over the VM's private Frame and Hot, which they deduce.
#include "engine/compile/program.h"
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

// Note [Recycled buffers]: with keepBuffers each slot used to keep its own buffer between calls,
// so a call touched as many buffers as the graph has values (MobileNetV2: about 25 MB, beyond
// this class of machine's caches) where ONNX Runtime's planned arena reuses a few. Now a slot's
// buffer goes to its frame's pool once its last reader ran (the plan's recycleSlots, the slots
// that would be freed without keepBuffers) when nothing else holds it, and before a node runs,
// each output slot it leaves empty gets from the pool a buffer of the size the slot's value had
// on the previous call, laid out as it was (the op's reuseOrAllocate or channel-last output then
// keeps it). The pool hands out the most recently recycled fitting buffer, still warm in cache;
// from the second call on, every call takes and returns the same buffers in the same order, so
// nothing is allocated and the memory touched is the live set, not the sum. Views, in-place
// outputs and nodes with an inner graph are not seeded (they allocate nothing); a seeded buffer
// the kernel does not keep is simply dropped. Only host buffers are pooled (the device's have
// the caching allocator). On by default, TSCOPE_RECYCLE_BUFFERS=0 turns it off. Measured in pairs
// of adjacent calls of two compilations in one process (bench_onnx_resnet BENCH_AB_RECYCLE=1,
// one thread, 7 December 2026): recycled / one buffer per value 0.954 on MobileNetV2, 0.988-0.992
// on ResNet-18, 1.005 on the transformer (medians of 150-200 pairs; docs/cpu-speed.md). An
// earlier comparison of alternating runs, which showed ResNet-18 slower, was the host's drift.
template <class Frame, class Hot>
inline void seedOutputs(Frame& f, const Hot& t) {
  for (std::uint32_t k = 0; k < t.nOut; ++k) {
    Tensor* out = f.ptrs[t.out + k];
    const std::size_t slot = static_cast<std::size_t>(out - f.storage.data());
    const auto& layout = f.layouts[slot];
    if (out->defined() || layout.bytes == 0 || f.pool.empty()) continue;
    // The most recent buffer of exactly this size, else the smallest at most twice as large.
    std::size_t pick = f.pool.size();
    for (std::size_t i = f.pool.size(); i-- > 0;) {
      const std::size_t have = f.pool[i].storage()->nbytes();
      if (have == layout.bytes) {
        pick = i;
        break;
      }
      if (have > layout.bytes && have <= 2 * layout.bytes &&
          (pick == f.pool.size() || have < f.pool[pick].storage()->nbytes()))
        pick = i;
    }
    if (pick == f.pool.size()) continue;
    std::shared_ptr<Storage> buffer = f.pool[pick].storage();
    f.pool.erase(f.pool.begin() + static_cast<std::ptrdiff_t>(pick));
    *out = Tensor(std::move(buffer), layout.dtype, layout.shape, layout.strides, 0);
  }
}

// Remembers the layout of the node's outputs for the next call's seedOutputs.
template <class Frame, class Hot>
inline void recordLayouts(Frame& f, const Hot& t) {
  for (std::uint32_t k = 0; k < t.nOut; ++k) {
    const Tensor* out = f.ptrs[t.out + k];
    auto& layout = f.layouts[static_cast<std::size_t>(out - f.storage.data())];
    if (!out->defined() || out->offset() != 0 || out->device() != Device::Cpu ||
        out->storage()->external()) {
      layout.bytes = 0;
      continue;
    }
    layout.dtype = out->dtype();
    layout.shape = out->shape();
    layout.strides = out->strides();
    layout.bytes = out->storage()->nbytes();
  }
}

// The slots the plan frees after a node (Note [Storage plan]), or recycles.
template <class Frame, class Hot>
inline void freeAfter(Frame& f, const Hot& t, const StoragePlan& plan) {
  for (std::uint32_t k = 0; k < t.nFree; ++k) f.storage[plan.freeSlots[t.freeBegin + k]] = Tensor();
  for (std::uint32_t k = 0; k < t.nRecycle; ++k) {
    Tensor& slot = f.storage[plan.recycleSlots[t.recycleBegin + k]];
    if (slot.defined() && slot.device() == Device::Cpu && slot.storage().use_count() == 1 &&
        !slot.storage()->external())
      f.pool.push_back(std::move(slot));
    slot = Tensor();
  }
}

// A loop op's failure, with the iteration it happened in (Note [Loop frames]).
inline std::runtime_error loopFailure(const std::exception& e, std::int64_t iteration) {
  return std::runtime_error(std::string(e.what()) + " (in iteration " + std::to_string(iteration) +
                            ")");
}

}  // namespace tscope::engine::vm_detail
