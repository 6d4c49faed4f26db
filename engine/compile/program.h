#pragma once
// Program: a linked schedule, what compile hands the VM (DESIGN.md "Execution"). A Program is an
// immutable value once linked: the schedule, the StoragePlan (which slot is freed after which
// node, what is overwritten in place, which buffers persist between calls), one Kernel per node
// and, for every node whose op has an inner graph (Op::innerGraph), the child Program the VM runs
// as a frame (Note [Frames] in engine/vm/vm.h). Any number of VMs, on any threads, may run one
// Program: the per-run state (slots, program counters) lives in the VM's frames.
//
//   std::shared_ptr<const Program> p = linkProgram(fg, fg.toposort(), {});
//   p->plan().freedAfter(3);       // the slots whose last reader is node 3
//   p->kernel(3).isReference();    // true: node 3 runs its op's perform
//
// The profiler's memory view reads the plan; the debugger reads slotOf() and producer().

#include "engine/compile/kernel.h"
#include "engine/graph/flat_hash_map.h"
#include "engine/graph/function_graph.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tscope::engine {

// Note [Storage plan]: every variable of the graph has one slot (its index in graph.variables()).
// Constants are loaded once per frame; graph inputs at the start of a run; each node writes its
// outputs' slots. An intermediate's slot is freed right after its last reader ran (after the
// observers saw that node), unless the graph returns it or buffers are kept between calls
// (keepBuffers: the op may then reuse the previous call's buffer through reuseOrAllocate).
struct StoragePlan {
  // A node that overwrites an input in place (destroyMap).
  struct Overwrite {
    std::uint32_t position;   // the node's index in the schedule
    int input;                // which of its inputs
    std::uint32_t slot;       // that input's slot
    std::int64_t graphInput;  // the graph input whose buffer it is (through views), or -1
  };

  bool keepBuffers = false;
  // Per slot: the schedule position of the node that computes it (-1: an input or a constant),
  // and of its last reader (-1: never read; outputs of the graph count as read at the end).
  std::vector<std::int32_t> producer;
  std::vector<std::int32_t> lastUse;
  // Slots freed after node p: freeSlots[freeBegin[p] .. freeBegin[p + 1]). Empty with keepBuffers.
  std::vector<std::uint32_t> freeBegin;
  std::vector<std::uint32_t> freeSlots;
  // Note [Recycled buffers] (engine/vm/vm_helpers.h): with keepBuffers, the slots whose buffer
  // goes back to the frame's pool after node p, the same slots freeSlots would free without it:
  // recycleSlots[recycleBegin[p] .. recycleBegin[p + 1]). Empty without keepBuffers.
  std::vector<std::uint32_t> recycleBegin;
  std::vector<std::uint32_t> recycleSlots;
  std::vector<Overwrite> overwrites;
  // Graph inputs (positions in graph.inputs()) a node overwrites, directly or through views
  // (Note [Overwritten inputs] in vm.cpp).
  std::vector<std::size_t> overwrittenInputs;

  std::span<const std::uint32_t> freedAfter(std::size_t position) const {
    return {freeSlots.data() + freeBegin[position], freeBegin[position + 1] - freeBegin[position]};
  }
  std::span<const std::uint32_t> recycledAfter(std::size_t position) const {
    return {recycleSlots.data() + recycleBegin[position],
            recycleBegin[position + 1] - recycleBegin[position]};
  }
};

class Program;

// One linked node: where its operands live (slot indices into the frame's storage), its kernel,
// and, for a node with an inner graph, the child program.
struct LinkedNode {
  const Op* op = nullptr;
  const Apply* node = nullptr;
  Kernel kernel;
  std::uint32_t inBegin = 0, nIn = 0, outBegin = 0, nOut = 0;  // into Program::operandSlots()
  std::int32_t child = -1;  // index into Program::children(), -1 for an ordinary node
  // Note [Several inner graphs] (engine/graph/inner_graphs.h): the node's bodies are children
  // [child, child + nChildren).
  std::uint32_t nChildren = 0;
  // A BreakPoint node (Note [BreakPoint at run time] in engine/ops/debug/breakpoint.h).
  bool breakOp = false;
};

struct LinkOptions {
  bool keepBuffers = false;
  Device device = Device::Cpu;
  const KernelRegistry* kernels = nullptr;  // null: defaultKernelRegistry()
  // Links the inner graph of a node (an OpFromGraph body) into a child program; compile passes
  // one that optimizes the body with the outer mode. Null: the inner graph is linked as it is.
  std::function<std::shared_ptr<const Program>(const Apply& node, const FunctionGraph& inner)>
      linkInner;
};

class Program {
 public:
  const FunctionGraph& graph() const { return *m_graph; }
  const std::vector<Apply*>& schedule() const { return m_schedule; }
  const StoragePlan& plan() const { return m_plan; }
  const std::vector<LinkedNode>& nodes() const { return m_nodes; }
  const Kernel& kernel(std::size_t position) const { return m_nodes[position].kernel; }
  std::span<const std::uint32_t> operandSlots() const { return m_operandSlots; }
  const std::vector<std::shared_ptr<const Program>>& children() const { return m_children; }
  std::size_t slotCount() const { return m_plan.producer.size(); }
  std::span<const std::uint32_t> inputSlots() const { return m_inputSlots; }
  std::span<const std::uint32_t> outputSlots() const { return m_outputSlots; }
  // The slot of a variable of graph(), or -1 when the variable is not in it.
  std::int64_t slotOf(const Variable& var) const {
    const std::uint32_t* s = m_slots.find(&var);
    return s ? static_cast<std::int64_t>(*s) : -1;
  }
  // Constants' values, by slot (undefined elsewhere).
  const std::vector<Tensor>& constants() const { return m_constants; }
  // The graph a child program was linked from keeps alive here (an optimized clone of the body).
  const std::shared_ptr<const FunctionGraph>& ownedGraph() const { return m_owned; }
  // Whether a node of this program (not its children) is a BreakPoint.
  bool hasBreakOps() const { return m_hasBreakOps; }
  // Nodes in this program and all its children (what a profiler sizes its tables by).
  std::size_t totalNodeCount() const;

 private:
  friend std::shared_ptr<const Program> linkProgram(const FunctionGraph&, std::vector<Apply*>,
                                                    const LinkOptions&);
  friend std::shared_ptr<const Program> linkProgram(std::shared_ptr<const FunctionGraph>,
                                                    std::vector<Apply*>, const LinkOptions&);
  const FunctionGraph* m_graph = nullptr;
  std::shared_ptr<const FunctionGraph> m_owned;
  std::vector<Apply*> m_schedule;
  StoragePlan m_plan;
  std::vector<LinkedNode> m_nodes;
  std::vector<std::uint32_t> m_operandSlots;
  std::vector<std::uint32_t> m_inputSlots, m_outputSlots;
  std::vector<Tensor> m_constants;
  FlatHashMap<const Variable*, std::uint32_t> m_slots;
  std::vector<std::shared_ptr<const Program>> m_children;
  bool m_hasBreakOps = false;
};

// Plans storage and links kernels for `schedule` (every node of graph, in an executable order).
// graph must outlive the program (the first form) or is kept alive by it (the second). Throws
// GraphError when a node is not in graph or its op cannot execute (an opaque op from a file).
std::shared_ptr<const Program> linkProgram(const FunctionGraph& graph, std::vector<Apply*> schedule,
                                           const LinkOptions& options = {});
std::shared_ptr<const Program> linkProgram(std::shared_ptr<const FunctionGraph> graph,
                                           std::vector<Apply*> schedule,
                                           const LinkOptions& options = {});

}  // namespace tscope::engine
