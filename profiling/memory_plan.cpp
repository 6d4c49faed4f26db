#include "profiling/memory_plan.h"

#include "engine/graph/apply.h"
#include "engine/graph/op.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tscope::prof {

PlanGraph planGraphOf(const engine::Program& program, std::span<const std::int64_t> slotBytes) {
  if (slotBytes.size() != program.slotCount())
    throw std::invalid_argument("planGraphOf: expected " + std::to_string(program.slotCount()) +
                                " slot sizes (one per slot of the program), found " +
                                std::to_string(slotBytes.size()));
  PlanGraph g;
  g.slotBytes.assign(slotBytes.begin(), slotBytes.end());
  const auto operands = program.operandSlots();
  const engine::StoragePlan& plan = program.plan();
  for (std::size_t pos = 0; pos < program.nodes().size(); ++pos) {
    const engine::LinkedNode& ln = program.nodes()[pos];
    PlanGraph::Node n;
    for (std::uint32_t i = 0; i < ln.nIn; ++i) n.inputs.push_back(operands[ln.inBegin + i]);
    const engine::ViewMap views = ln.op->viewMap();
    const engine::DestroyMap destroys = ln.op->destroyMap();
    for (std::uint32_t o = 0; o < ln.nOut; ++o) {
      PlanGraph::Output out;
      out.slot = operands[ln.outBegin + o];
      const int key = static_cast<int>(o);
      if (auto d = destroys.find(key); d != destroys.end() && !d->second.empty()) {
        out.aliasInput = d->second.front();
        out.inplace = true;
      } else if (auto v = views.find(key); v != views.end() && !v->second.empty()) {
        out.aliasInput = v->second.front();
      }
      if (out.aliasInput >= static_cast<int>(ln.nIn)) out.aliasInput = -1;
      n.outputs.push_back(out);
    }
    // Note [Recycled buffers] (engine/vm/vm_helpers.h): with keepBuffers a slot's buffer goes
    // back to the frame's pool where it would be freed, for the next value to take.
    const auto freed = plan.keepBuffers ? plan.recycledAfter(pos) : plan.freedAfter(pos);
    n.freedAfter.assign(freed.begin(), freed.end());
    g.nodes.push_back(std::move(n));
  }
  return g;
}

namespace {

// One walk of the schedule (Note [Plan memory]).
std::int64_t peakOf(const PlanGraph& g, bool inplace, bool freeing) {
  const std::size_t nSlots = g.slotBytes.size();
  std::vector<std::int64_t> bufferOf(nSlots, -1);  // -1: held by the caller (not counted)
  std::vector<std::int64_t> bytes, refs;
  std::int64_t live = 0, peak = 0;
  auto check = [&](std::uint32_t slot, std::size_t node) {
    if (slot >= nSlots)
      throw std::invalid_argument("planMemory: node " + std::to_string(node) + " names slot " +
                                  std::to_string(slot) + ", but the plan has " +
                                  std::to_string(nSlots) + " slots");
  };
  for (std::size_t p = 0; p < g.nodes.size(); ++p) {
    const PlanGraph::Node& n = g.nodes[p];
    for (std::uint32_t s : n.inputs) check(s, p);
    for (const PlanGraph::Output& out : n.outputs) {
      check(out.slot, p);
      const bool shares = out.aliasInput >= 0 &&
                          out.aliasInput < static_cast<int>(n.inputs.size()) &&
                          (!out.inplace || inplace);
      if (shares) {
        const std::int64_t b = bufferOf[n.inputs[static_cast<std::size_t>(out.aliasInput)]];
        bufferOf[out.slot] = b;
        if (b >= 0) ++refs[static_cast<std::size_t>(b)];
      } else {
        bufferOf[out.slot] = static_cast<std::int64_t>(bytes.size());
        bytes.push_back(g.slotBytes[out.slot]);
        refs.push_back(1);
        live += g.slotBytes[out.slot];
      }
    }
    peak = std::max(peak, live);
    if (!freeing) continue;
    for (std::uint32_t s : n.freedAfter) {
      check(s, p);
      const std::int64_t b = bufferOf[s];
      bufferOf[s] = -1;
      if (b < 0) continue;
      if (--refs[static_cast<std::size_t>(b)] == 0) live -= bytes[static_cast<std::size_t>(b)];
    }
  }
  return peak;
}

}  // namespace

PlanMemory planMemory(const PlanGraph& graph) {
  PlanMemory m;
  m.planPeak = peakOf(graph, true, true);
  m.withoutInplace = peakOf(graph, false, true);
  m.withoutFreeing = peakOf(graph, true, false);
  return m;
}

}  // namespace tscope::prof
