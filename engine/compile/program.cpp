#include "engine/compile/program.h"

#include "engine/graph/errors.h"
#include "engine/graph/inner_graphs.h"
#include "engine/graph/loop_body.h"
#include "engine/graph/op.h"
#include "engine/ops/debug/breakpoint.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

namespace tscope::engine {

namespace {

// Note [Overwritten inputs] (vm.cpp): the graph input whose buffer input `i` of `node` is, up the
// chain of views; null when the buffer is an intermediate's.
const Variable* bufferOwner(const Apply& node, int i) {
  const Variable* v = node.input(i).get();
  while (const Apply* owner = v->owner()) {
    const ViewMap views = owner->op().viewMap();
    const auto it = views.find(v->index());
    if (it == views.end() || it->second.empty()) return v;
    v = owner->input(it->second.front()).get();
  }
  return v;
}

}  // namespace

std::size_t Program::totalNodeCount() const {
  std::size_t n = m_nodes.size();
  for (const auto& child : m_children) n += child->totalNodeCount();
  return n;
}

std::shared_ptr<const Program> linkProgram(std::shared_ptr<const FunctionGraph> graph,
                                           std::vector<Apply*> schedule,
                                           const LinkOptions& options) {
  if (!graph) throw GraphError("linkProgram: the graph is null");
  const FunctionGraph& g = *graph;
  auto program = std::const_pointer_cast<Program>(linkProgram(g, std::move(schedule), options));
  program->m_owned = std::move(graph);
  return program;
}

std::shared_ptr<const Program> linkProgram(const FunctionGraph& graph, std::vector<Apply*> schedule,
                                           const LinkOptions& options) {
  auto program = std::make_shared<Program>();
  Program& p = *program;
  p.m_graph = &graph;
  p.m_schedule = std::move(schedule);
  const auto& vars = graph.variables();
  const std::size_t nSlots = vars.size();
  p.m_slots.reserve(nSlots);
  p.m_constants.resize(nSlots);
  for (std::size_t i = 0; i < nSlots; ++i) {
    const Variable* v = vars[i];
    p.m_slots.set(v, static_cast<std::uint32_t>(i));
    if (v->kind() == Variable::Kind::Constant)
      p.m_constants[i] = static_cast<const Constant&>(*v).value();
  }
  auto slotOf = [&](const Variable& v) -> std::uint32_t {
    const std::uint32_t* s = p.m_slots.find(&v);
    if (s == nullptr)
      throw GraphError("linkProgram: the variable " + v.displayName() +
                       " is not in the graph being linked");
    return *s;
  };
  for (const VarPtr& in : graph.inputs()) p.m_inputSlots.push_back(slotOf(*in));
  for (const VarPtr& out : graph.outputs()) p.m_outputSlots.push_back(slotOf(*out));

  // Note [Storage plan]: producers, last readers and frees.
  StoragePlan& plan = p.m_plan;
  plan.keepBuffers = options.keepBuffers;
  plan.producer.assign(nSlots, -1);
  plan.lastUse.assign(nSlots, -1);
  const auto nNodes = static_cast<std::int32_t>(p.m_schedule.size());
  std::vector<bool> pinned(nSlots, false);
  for (std::uint32_t s : p.m_outputSlots) pinned[s] = true;
  for (std::int32_t pos = 0; pos < nNodes; ++pos) {
    const Apply* node = p.m_schedule[static_cast<std::size_t>(pos)];
    if (node->fgraph() != &graph)
      throw GraphError("linkProgram: the schedule holds " + node->str() +
                       ", which is not a node of this graph");
    for (const VarPtr& in : node->inputs()) plan.lastUse[slotOf(*in)] = pos;
    for (int o = 0; o < node->nOutputs(); ++o) {
      const std::uint32_t s = slotOf(node->outputRef(o));
      plan.producer[s] = pos;
      plan.lastUse[s] = std::max(plan.lastUse[s], pos);
    }
  }
  for (std::uint32_t s : p.m_outputSlots) plan.lastUse[s] = nNodes;
  // The slots whose last reader is node p: freed after it, or with keepBuffers recycled (Note
  // [Recycled buffers]; TSCOPE_RECYCLE_BUFFERS=0 turns that off). Read at each compile, so one
  // process can compare both (bench_onnx_resnet's BENCH_AB_RECYCLE).
  const bool recycle = [] {
    const char* v = std::getenv("TSCOPE_RECYCLE_BUFFERS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  auto lists = [&](bool keep, std::vector<std::uint32_t>& begin,
                   std::vector<std::uint32_t>& slots) {
    auto listed = [&](std::size_t s) {
      return options.keepBuffers == keep && (!keep || recycle) && !pinned[s] &&
             plan.producer[s] >= 0 && plan.lastUse[s] >= 0;
    };
    std::vector<std::uint32_t> count(p.m_schedule.size() + 1, 0);
    for (std::size_t s = 0; s < nSlots; ++s)
      if (listed(s)) ++count[static_cast<std::size_t>(plan.lastUse[s])];
    begin.assign(p.m_schedule.size() + 1, 0);
    for (std::size_t pos = 0; pos < p.m_schedule.size(); ++pos)
      begin[pos + 1] = begin[pos] + count[pos];
    slots.resize(begin.back());
    std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
    for (std::size_t s = 0; s < nSlots; ++s)
      if (listed(s))
        slots[fill[static_cast<std::size_t>(plan.lastUse[s])]++] = static_cast<std::uint32_t>(s);
  };
  lists(false, plan.freeBegin, plan.freeSlots);
  lists(true, plan.recycleBegin, plan.recycleSlots);

  // What is overwritten in place, and which graph inputs that reaches (Note [Overwritten inputs]).
  std::vector<bool> inputOverwritten(nSlots, false);
  for (std::int32_t pos = 0; pos < nNodes; ++pos) {
    const Apply* node = p.m_schedule[static_cast<std::size_t>(pos)];
    for (const auto& [output, destroyed] : node->op().destroyMap())
      for (int i : destroyed) {
        if (i < 0 || i >= node->nInputs()) continue;
        const Variable* owner = bufferOwner(*node, i);
        std::int64_t graphInput = -1;
        if (!owner->owner()) {
          inputOverwritten[slotOf(*owner)] = true;
          for (std::size_t k = 0; k < graph.inputs().size(); ++k)
            if (graph.inputs()[k].get() == owner) graphInput = static_cast<std::int64_t>(k);
        }
        plan.overwrites.push_back(
            {static_cast<std::uint32_t>(pos), i, slotOf(*node->input(i)), graphInput});
      }
  }
  for (std::size_t i = 0; i < p.m_inputSlots.size(); ++i)
    if (inputOverwritten[p.m_inputSlots[i]]) plan.overwrittenInputs.push_back(i);

  // Link: operands, the kernel per node, child programs for inner graphs.
  const KernelRegistry& kernels = options.kernels ? *options.kernels : defaultKernelRegistry();
  p.m_nodes.reserve(p.m_schedule.size());
  std::unordered_map<const Op*, std::int32_t> childOf;
  for (const Apply* node : p.m_schedule) {
    if (!node->op().isExecutable())
      throw GraphError("linkProgram: " + node->op().str() + " (node " + std::to_string(node->id()) +
                       ") cannot be executed: it is an opaque op loaded from a file");
    LinkedNode t;
    t.op = &node->op();
    t.node = node;
    t.inBegin = static_cast<std::uint32_t>(p.m_operandSlots.size());
    t.nIn = static_cast<std::uint32_t>(node->nInputs());
    for (const VarPtr& in : node->inputs()) p.m_operandSlots.push_back(slotOf(*in));
    t.outBegin = static_cast<std::uint32_t>(p.m_operandSlots.size());
    t.nOut = static_cast<std::uint32_t>(node->nOutputs());
    for (int o = 0; o < node->nOutputs(); ++o)
      p.m_operandSlots.push_back(slotOf(node->outputRef(o)));
    // Note [Placed nodes]: with a device other than the CPU, a node runs there only when the
    // placement phase put it there (a value of its is typed for that device: the transfers and
    // the nodes placed between them); every other node keeps the CPU reference.
    Device where = Device::Cpu;
    if (options.device != Device::Cpu) {
      for (const VarPtr& in : node->inputs())
        if (in->type().device() == options.device) where = options.device;
      for (int o = 0; o < node->nOutputs(); ++o)
        if (node->outputRef(o).type().device() == options.device) where = options.device;
    }
    t.kernel = kernels.choose(node->op(), where);
    t.breakOp = isDebugBarrier(node->op());
    p.m_hasBreakOps = p.m_hasBreakOps || t.breakOp;
    const std::vector<const FunctionGraph*> inners = innerGraphsOf(node->op());
    if (!inners.empty()) {
      // Nodes applying one op share its child programs (ops are values: equal bodies).
      auto [it, fresh] = childOf.emplace(t.op, -1);
      if (fresh) {
        it->second = static_cast<std::int32_t>(p.m_children.size());
        for (const FunctionGraph* inner : inners) {
          std::shared_ptr<const Program> child =
              options.linkInner ? options.linkInner(*node, *inner)
                                : linkProgram(*inner, inner->toposort(),
                                              LinkOptions{.keepBuffers = false,
                                                          .device = options.device,
                                                          .kernels = options.kernels,
                                                          .linkInner = {}});
          // Note [Loop frames]: a loop's body takes one step's inputs, not the node's.
          const bool loop = dynamic_cast<const LoopBody*>(&node->op()) != nullptr;
          const std::size_t wantIn = loop ? inner->inputs().size() : node->inputs().size();
          const std::size_t wantOut =
              loop ? inner->outputs().size() : static_cast<std::size_t>(node->nOutputs());
          if (child->inputSlots().size() != wantIn || child->outputSlots().size() != wantOut)
            throw GraphError("linkProgram: the inner graph of " + node->op().str() + " (node " +
                             std::to_string(node->id()) + ") has " +
                             std::to_string(child->inputSlots().size()) + " inputs and " +
                             std::to_string(child->outputSlots().size()) +
                             " outputs; the node has " + std::to_string(node->nInputs()) + " and " +
                             std::to_string(node->nOutputs()));
          p.m_children.push_back(std::move(child));
        }
      }
      t.child = it->second;
      t.nChildren = static_cast<std::uint32_t>(inners.size());
    }
    p.m_nodes.push_back(t);
  }
  return program;
}

}  // namespace tscope::engine
