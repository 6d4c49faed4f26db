#pragma once
// Ops whose inner graph runs once per iteration (a Scan), and the protocol the VM and the op's
// reference perform drive them with (Note [Loop frames] in engine/vm/vm.h).
//
//   std::unique_ptr<LoopState> s = loop.loopBegin(node, inputs);   // checks, allocates once
//   for (std::int64_t k = 0; k < s->steps; ++k) {
//     loop.loopInputs(*s, k, innerInputs);     // views of the sequences and the earlier outputs
//     ... run the body ...
//     loop.loopCollect(*s, k, innerOutputs);   // into the buffers loopBegin made
//   }
//   loop.loopFinish(*s, outputs);              // the node's outputs
//
// Note [Loop protocol]: the inner graph (Op::innerGraph()) takes the inner inputs of one
// iteration and gives that iteration's outputs. The state holds everything that lives across
// iterations; the op itself stays immutable, so any number of VMs may run it at once. An
// exception from any call is the node's failure (the VM names the node and the iteration).

#include <cstdint>
#include <memory>
#include <span>

namespace tscope::engine {

class Apply;
class Tensor;

struct LoopState {
  virtual ~LoopState() = default;
  std::int64_t steps = 0;  // the number of iterations, fixed by loopBegin
};

class LoopBody {
 public:
  virtual ~LoopBody() = default;
  // Checks the node's input values and prepares the loop's buffers.
  virtual std::unique_ptr<LoopState> loopBegin(const Apply& node,
                                               std::span<const Tensor* const> inputs) const = 0;
  // The inner inputs of iteration k (one per inner graph input); views, never copies.
  virtual void loopInputs(LoopState& state, std::int64_t k,
                          std::span<Tensor* const> innerInputs) const = 0;
  // Iteration k's inner outputs (one per inner graph output), kept for the next iterations and
  // the node's outputs; the caller may release them afterwards.
  virtual void loopCollect(LoopState& state, std::int64_t k,
                           std::span<const Tensor* const> innerOutputs) const = 0;
  // The node's outputs, after the last iteration (also after zero iterations).
  virtual void loopFinish(LoopState& state, std::span<Tensor* const> outputs) const = 0;
};

}  // namespace tscope::engine
