#pragma once
// The memory a program's StoragePlan needs, from the measured byte size of each value: the peak
// with the current plan (buffers freed after their last reader, inplace nodes writing into their
// input's buffer), the peak if every inplace output had its own buffer, and the peak if no
// intermediate were freed before the end of the run (Theano ProfileStats' memory profile).
//
//   PlanMemory m = planMemory(planGraphOf(f.program(), slotBytes));
//   m.planPeak;        // bytes of intermediates held at once at most
//
// Note [Plan memory]: only buffers the nodes create count: graph inputs, shared variables and
// constants are held by the caller whatever the plan does, so a value that views or overwrites
// one costs nothing (an inplace update of W is free; without inplace it costs a W-sized buffer).
// A view (viewMap) shares its input's buffer; an inplace output (destroyMap) takes its input's
// buffer over. A buffer is released when every slot that refers to it was freed. The walk covers
// the top-level schedule; an inner frame's values are counted in its caller node's measured
// allocations, not here.

#include "engine/compile/program.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tscope::prof {

struct PlanMemory {
  std::int64_t planPeak = 0;
  std::int64_t withoutInplace = 0;
  std::int64_t withoutFreeing = 0;
  bool operator==(const PlanMemory&) const = default;
};

// The plan as plain data: what planMemory reads (built from a Program, or by hand in tests).
struct PlanGraph {
  struct Output {
    std::uint32_t slot = 0;
    int aliasInput = -1;   // the input whose buffer it shares (index into Node::inputs), -1 none
    bool inplace = false;  // the alias overwrites that input (destroyMap) rather than views it
  };
  struct Node {
    std::vector<std::uint32_t> inputs;  // slots
    std::vector<Output> outputs;
    std::vector<std::uint32_t> freedAfter;  // slots the plan frees after the node
  };
  std::vector<Node> nodes;              // in schedule order
  std::vector<std::int64_t> slotBytes;  // per slot: measured bytes (0 when unknown)
};

// `slotBytes` has one entry per slot of `program` (Program::slotCount()); throws
// std::invalid_argument when it does not.
PlanGraph planGraphOf(const engine::Program& program, std::span<const std::int64_t> slotBytes);
// Throws std::invalid_argument naming the node and slot when a slot index is out of range.
PlanMemory planMemory(const PlanGraph& graph);

}  // namespace tscope::prof
