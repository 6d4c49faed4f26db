#pragma once
// The VM's per-frame state (internal to engine/vm): vm.cpp runs it, vm_state.cpp reads it.
#include "engine/graph/loop_body.h"
#include "engine/graph/op.h"
#include "engine/vm/vm.h"

#include <memory>

namespace tscope::engine {

// Note [Recycled buffers] (vm_helpers.h): the layout of a slot's value on the previous call.
struct OutputLayout {
  DType dtype = DType::Float32;
  Shape shape;
  Strides strides;
  std::size_t bytes = 0;  // 0: nothing to seed the slot with
};

struct VM::Hot {
  const Op* op;
  const Apply* node;
  KernelFn fn;
  std::uint32_t in, nIn, out, nOut;      // into Frame::ptrs
  std::uint32_t freeBegin, nFree;        // into the plan's freeSlots
  std::uint32_t recycleBegin, nRecycle;  // into the plan's recycleSlots (Note [Recycled buffers])
  bool seed;  // outputs get a pooled buffer before the kernel runs (Note [Recycled buffers])
  std::uint32_t destroyBegin, nDestroy;  // into the plan's overwrites
  std::int32_t child;
  std::uint32_t nChildren;
  bool breakOp;
  const LoopBody* loop;  // Note [Loop frames]: the op, when it is a loop
};

struct VM::Frame {
  const Program* program = nullptr;
  std::vector<Tensor> storage;
  std::vector<Tensor*> ptrs;
  std::vector<Hot> hot;
  std::size_t pc = 0;
  Frame* caller = nullptr;  // non-null while the frame is on the stack (frames above 0)
  std::int64_t callerNodeId = -1;
  std::size_t callerPosition = 0;
  std::int64_t t0 = 0;  // when the caller node entered this frame (timing)
  NodeTiming* timing = nullptr;
  // Note [Recycled buffers] (vm_helpers.h): buffers whose slots' last reader ran, kept for the
  // outputs of later nodes (most recently recycled last), and per slot the layout of the value
  // its node made on the previous call.
  std::vector<Tensor> pool;
  std::vector<OutputLayout> layouts;
  // Note [Overwrite spares] in vm.cpp: one per StoragePlan::overwrittenInputs entry.
  std::vector<Tensor> overwriteSpares;
  // Note [Loop frames]: while a loop runs in this frame, its state and the iteration; the inner
  // input and output slots handed to the op.
  std::unique_ptr<LoopState> loop;
  std::int64_t iteration = -1;
  std::vector<Tensor*> loopIn;
  std::vector<const Tensor*> loopOut;

  explicit Frame(const Program& p) : program(&p) {
    storage = p.constants();
    const auto operands = p.operandSlots();
    ptrs.resize(operands.size());
    for (std::size_t k = 0; k < operands.size(); ++k) ptrs[k] = &storage[operands[k]];
    for (std::uint32_t slot : p.inputSlots()) loopIn.push_back(&storage[slot]);
    for (std::uint32_t slot : p.outputSlots()) loopOut.push_back(&storage[slot]);
    const StoragePlan& plan = p.plan();
    if (plan.keepBuffers) layouts.resize(storage.size());
    hot.reserve(p.nodes().size());
    std::uint32_t d = 0;
    for (std::size_t pos = 0; pos < p.nodes().size(); ++pos) {
      const LinkedNode& n = p.nodes()[pos];
      Hot h{};
      h.op = n.op;
      h.node = n.node;
      h.fn = n.kernel.fn;
      h.in = n.inBegin;
      h.nIn = n.nIn;
      h.out = n.outBegin;
      h.nOut = n.nOut;
      h.freeBegin = plan.freeBegin[pos];
      h.nFree = plan.freeBegin[pos + 1] - plan.freeBegin[pos];
      h.recycleBegin = plan.recycleBegin[pos];
      h.nRecycle = plan.recycleBegin[pos + 1] - plan.recycleBegin[pos];
      // Views and in-place outputs are their input's buffer, and a node with an inner graph
      // hands its outputs over from the inner frame: none of them allocates.
      h.seed =
          plan.keepBuffers && n.child < 0 && n.op->viewMap().empty() && n.op->destroyMap().empty();
      while (d < plan.overwrites.size() && plan.overwrites[d].position < pos) ++d;
      h.destroyBegin = d;
      while (d < plan.overwrites.size() && plan.overwrites[d].position == pos) ++d;
      h.nDestroy = d - h.destroyBegin;
      h.child = n.child;
      h.nChildren = n.nChildren;
      h.breakOp = n.breakOp;
      h.loop = n.child >= 0 ? dynamic_cast<const LoopBody*>(n.op) : nullptr;
      hot.push_back(h);
    }
  }
  std::span<const Tensor* const> inputs(const Hot& t) const { return {ptrs.data() + t.in, t.nIn}; }
  std::span<Tensor* const> outputs(const Hot& t) const { return {ptrs.data() + t.out, t.nOut}; }
};

}  // namespace tscope::engine
