#include "profiling/profiler.h"

#include "engine/compile/kernel_notes.h"
#include "engine/compile/program.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/vm/clock.h"
#include "engine/vm/vm.h"
#include "profiling/memory_plan.h"

#include <algorithm>
#include <span>
#include <stdexcept>

namespace tscope::prof {

using engine::Apply;
using engine::NodeEvent;
using engine::Program;
using engine::VM;

// One node of the profiled program under the caller node it runs for (Note [Profiler hot path]).
struct Profiler::Slot {
  const Apply* node = nullptr;
  const Program* program = nullptr;  // the program whose schedule holds it
  std::size_t position = 0;
  std::int32_t parent = -1;  // the caller node's slot, -1 at the top level
  std::int32_t body = 0;
  std::vector<std::int64_t> framePath;
  // Per inner graph of this node: its child program and the slot of that program's first node.
  std::vector<std::pair<const Program*, std::int32_t>> bodies;
  std::vector<OutputKind> kinds;

  // Committed over the measured runs.
  std::int64_t calls = 0;
  std::vector<double> samples;  // seconds per run it ran in
  std::int64_t allocated = 0, freed = 0;
  // As last measured.
  std::vector<engine::Shape> inputShapes;
  std::vector<engine::Shape> outputShapes;
  std::vector<engine::DType> outputDtypes;
  std::vector<std::int64_t> outputBytes;
  // A loop node (Note [Loop frames] in engine/vm/vm.h): per iteration, its body's time in the
  // current run, and summed over the measured runs with the number of runs that reached it.
  std::vector<std::int64_t> runIterationNs;
  std::vector<double> iterationSum;
  std::vector<std::int64_t> iterationRuns;
};

// The per-run part of a slot, what every node call touches: one cache line per node, in an array
// of its own (the cold Slot data lives elsewhere, Note [Profiler hot path]).
struct Profiler::Hot {
  const Apply* node = nullptr;
  std::int64_t runNs = 0, runCalls = 0, runAllocated = 0, runFreed = 0;
  // Note [Shape signature]: a hash of the dtypes and shapes of the node's inputs and outputs at
  // its last recorded call (0: none yet). A call whose signature matches leaves the slot's shape
  // vectors alone, so a steady run never touches them; a call whose shapes changed records them.
  std::uint64_t signature = 0;
};

struct Profiler::Open {
  std::int32_t slot = -1;  // -1: an event the profiler could not place (ignored)
  std::int64_t t0 = 0;
  std::int64_t allocated0 = 0, freed0 = 0;
};

// Note [Capture budget]: the node events of the measured runs go to a ring of at most maxEvents
// records, stored in chunks allocated as the ring grows (never more than the budget, and no
// allocation per event: one per 4,096). When it is full the oldest record is overwritten and
// counted as dropped. The tables (per-node times, calls, memory) are kept apart and never lose
// anything: only the timeline is bounded.
struct Profiler::Ring {
  static constexpr std::int64_t kChunk = 4096;
  std::int64_t capacity = 0;
  std::int64_t written = 0;  // records ever written (index of the next one)
  std::int64_t oldest = 0;   // index of the oldest record kept
  std::int64_t dropped = 0;
  std::vector<std::unique_ptr<NodeEventRecord[]>> chunks;

  explicit Ring(std::int64_t cap) : capacity(std::max<std::int64_t>(cap, 0)) {}
  NodeEventRecord& at(std::int64_t index) {
    const std::int64_t k = index % capacity;
    return chunks[static_cast<std::size_t>(k / kChunk)][static_cast<std::size_t>(k % kChunk)];
  }
  const NodeEventRecord& at(std::int64_t index) const {
    const std::int64_t k = index % capacity;
    return chunks[static_cast<std::size_t>(k / kChunk)][static_cast<std::size_t>(k % kChunk)];
  }
  std::int64_t head = 0;  // written % capacity, kept without a division per record

  void push(const NodeEventRecord& record) {
    if (capacity == 0) {
      ++dropped;
      return;
    }
    if (written - oldest == capacity) {
      ++oldest;
      ++dropped;
    }
    const auto chunk = static_cast<std::size_t>(head / kChunk);  // kChunk: a power of two
    if (chunk >= chunks.size())
      chunks.push_back(std::make_unique<NodeEventRecord[]>(
          static_cast<std::size_t>(std::min(kChunk, capacity - head))));
    chunks[chunk][static_cast<std::size_t>(head % kChunk)] = record;
    ++written;
    if (++head == capacity) head = 0;
  }
  // Takes back the records from `index` on (a run that did not finish).
  void rewind(std::int64_t index) {
    if (index >= written) return;
    written = index;
    if (oldest > written) oldest = written;
    head = capacity > 0 ? written % capacity : 0;
  }
  std::int64_t kept() const { return written - oldest; }
};

namespace {

std::vector<OutputKind> outputKinds(const Apply& node) {
  std::vector<OutputKind> kinds(static_cast<std::size_t>(node.nOutputs()), OutputKind::Created);
  for (const auto& [o, inputs] : node.op().viewMap())
    if (o >= 0 && o < node.nOutputs() && !inputs.empty())
      kinds[static_cast<std::size_t>(o)] = OutputKind::View;
  for (const auto& [o, inputs] : node.op().destroyMap())
    if (o >= 0 && o < node.nOutputs() && !inputs.empty())
      kinds[static_cast<std::size_t>(o)] = OutputKind::Inplace;
  return kinds;
}

inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  return (h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdULL;
}

// Note [Shape signature].
std::uint64_t signatureOf(std::span<const engine::Tensor* const> inputs,
                          std::span<const engine::Tensor* const> outputs) {
  std::uint64_t h = mix(inputs.size(), outputs.size());
  for (auto list : {inputs, outputs})
    for (const engine::Tensor* t : list) {
      if (!t || !t->defined()) {
        h = mix(h, ~0ULL);
        continue;
      }
      const engine::Shape& shape = t->shape();
      h = mix(h, (static_cast<std::uint64_t>(t->dtype()) << 8) | shape.size());
      for (std::int64_t d : shape) h = mix(h, static_cast<std::uint64_t>(d));
    }
  return h == 0 ? 1 : h;
}

}  // namespace

Profiler::Profiler(ProfilerOptions options)
    : m_options(std::move(options)), m_ring(std::make_unique<Ring>(m_options.maxEvents)) {
  m_open.reserve(16);
}

Profiler::~Profiler() {
  // The counters are the thread's own (alloc_hook.h), so nothing dangles if this runs elsewhere.
  if (m_installed && engine::allocationCounters() == m_counters)
    engine::setAllocationCounters(m_previousCounters);
}

std::int64_t Profiler::now() const {
  return m_options.clock ? m_options.clock() : engine::vmclock::nowNs();
}

void Profiler::addSlots(const Program& program, std::int32_t parent, std::int32_t body,
                        const std::vector<std::int64_t>& framePath) {
  const auto first = static_cast<std::int32_t>(m_slots.size());
  const auto& nodes = program.nodes();
  for (std::size_t pos = 0; pos < nodes.size(); ++pos) {
    Slot s;
    s.node = nodes[pos].node;
    s.program = &program;
    s.position = pos;
    s.parent = parent;
    s.body = body;
    s.framePath = framePath;
    s.kinds = outputKinds(*s.node);
    m_slots.push_back(std::move(s));
  }
  // Each frame's nodes after its caller's frame (Profile::nodes order): pre-order, so a caller's
  // block of inner slots follows the whole block of its own frame.
  for (std::size_t pos = 0; pos < nodes.size(); ++pos) {
    const engine::LinkedNode& n = nodes[pos];
    if (n.child < 0) continue;
    const auto self = first + static_cast<std::int32_t>(pos);
    std::vector<std::int64_t> inner = framePath;
    inner.push_back(n.node->id());
    for (std::uint32_t b = 0; b < std::max<std::uint32_t>(n.nChildren, 1); ++b) {
      const Program& child = *program.children()[static_cast<std::size_t>(n.child) + b];
      m_slots[static_cast<std::size_t>(self)].bodies.emplace_back(
          &child, static_cast<std::int32_t>(m_slots.size()));
      addSlots(child, self, static_cast<std::int32_t>(b), inner);
    }
  }
}

void Profiler::build(std::shared_ptr<const Program> program) {
  m_program = std::move(program);
  m_slots.clear();
  m_slots.reserve(m_program->totalNodeCount());
  addSlots(*m_program, -1, 0, {});
  m_hot.assign(m_slots.size(), Hot{});
  for (std::size_t k = 0; k < m_slots.size(); ++k) m_hot[k].node = m_slots[k].node;
  m_touched.clear();
  m_touched.reserve(m_slots.size());
  const std::int64_t warmup = m_warmupRuns;  // runs before the first measured one count
  reset();
  m_warmupRuns = warmup;
}

void Profiler::reset() {
  if (m_inRun) endRun();  // a run in progress is dropped, and the hook taken off
  for (Slot& s : m_slots) {
    s.calls = s.allocated = s.freed = 0;
    s.samples.clear();
    s.runIterationNs.clear();
    s.iterationSum.clear();
    s.iterationRuns.clear();
  }
  for (Hot& h : m_hot) {
    h.runNs = h.runCalls = h.runAllocated = h.runFreed = 0;
    h.signature = 0;
  }
  m_touched.clear();
  m_open.clear();
  m_ring = std::make_unique<Ring>(m_options.maxEvents);
  m_inRun = false;
  m_runs.clear();
  m_inNodes.clear();
  m_peakLive = 0;
  m_warmupRuns = 0;
  m_haveOrigin = false;
  m_originNs = 0;
  m_trailSlot = -1;
  m_lostRuns = 0;
}

void Profiler::onStartImpl(VM& vm) {
  if (m_inRun) abandonRun();
  if (!m_measuring) {
    ++m_warmupRuns;
    return;
  }
  if (m_program.get() != &vm.program()) build(vm.programPtr());
  if (!m_options.clock) vm.setTiming(true);  // Note [Profiler hot path]
  m_inRun = true;
  m_open.clear();
  m_trailSlot = -1;
  m_runFirstEvent = m_ring->written;
  if (m_options.memory) {
    m_counters = &engine::threadAllocationCounters();
    m_previousCounters = engine::setAllocationCounters(m_counters);
    m_installed = true;
    m_runLive0 = m_counters->live;
    m_counters->resetPeak();
  }
  m_runStart = now();
  if (!m_haveOrigin) {
    m_originNs = m_runStart;
    m_haveOrigin = true;
  }
}

std::int32_t Profiler::slotOf(const VM& vm, const NodeEvent& event) const {
  if (event.framePath.empty()) {
    if (event.position >= m_program->nodes().size()) return -1;
    return static_cast<std::int32_t>(event.position);
  }
  // The caller node is the innermost open node (its beforeNode came, its afterNode not yet).
  if (m_open.empty() || m_open.back().slot < 0) return -1;
  const Slot& caller = m_slots[static_cast<std::size_t>(m_open.back().slot)];
  const Program* program = vm.frame(vm.depth()).program;
  for (const auto& [child, base] : caller.bodies)
    if (child == program) {
      if (event.position >= child->nodes().size()) return -1;
      return base + static_cast<std::int32_t>(event.position);
    }
  return -1;
}

void Profiler::settleTrailingFrees() {
  // Note [Trailing frees]: the plan frees a node's dead inputs right after its observers ran, so
  // the bytes freed between a node's afterNode and the next callback are that node's.
  if (m_trailSlot < 0) return;
  m_hot[static_cast<std::size_t>(m_trailSlot)].runFreed += m_counters->freedBytes - m_trailFreed;
  m_trailSlot = -1;
}

void Profiler::beforeNodeImpl(VM& vm, const NodeEvent& event) {
  if (!m_inRun) return;
  Open open;
  open.slot = slotOf(vm, event);
  if (m_installed) {
    settleTrailingFrees();
    open.allocated0 = m_counters->allocatedBytes;
    open.freed0 = m_counters->freedBytes;
  }
  if (m_options.clock) open.t0 = m_options.clock();
  m_open.push_back(open);
}

void Profiler::afterNodeImpl(VM&, const NodeEvent& event) {
  if (!m_inRun || m_open.empty()) return;
  std::int64_t t0 = 0, t1 = 0;
  if (m_options.clock) {
    t1 = m_options.clock();
    t0 = m_open.back().t0;
  } else if (event.t1 != 0) {
    t0 = event.t0;
    t1 = event.t1;
  } else {
    t0 = t1 = engine::vmclock::nowNs();  // timing was off: no time rather than a wrong one
  }
  const Open open = m_open.back();
  m_open.pop_back();
  if (open.slot < 0) return;
  Hot& h = m_hot[static_cast<std::size_t>(open.slot)];
  if (h.node != &event.node) return;  // unbalanced events (attached mid-run): ignored
  // A node of a loop's body: its time goes to the loop's iteration too (the caller node is the
  // innermost open one).
  if (!event.iterations.empty() && event.iterations.back() >= 0 && !m_open.empty() &&
      m_open.back().slot >= 0) {
    Slot& loop = m_slots[static_cast<std::size_t>(m_open.back().slot)];
    const auto k = static_cast<std::size_t>(event.iterations.back());
    if (loop.runIterationNs.size() <= k) loop.runIterationNs.resize(k + 1, 0);
    loop.runIterationNs[k] += t1 - t0;
  }
  if (h.runCalls++ == 0) m_touched.push_back(open.slot);
  h.runNs += t1 - t0;
  std::int64_t live = 0;
  if (m_installed) {
    settleTrailingFrees();
    h.runAllocated += m_counters->allocatedBytes - open.allocated0;
    h.runFreed += m_counters->freedBytes - open.freed0;
    m_trailSlot = open.slot;
    m_trailFreed = m_counters->freedBytes;
    live = m_counters->live - m_runLive0;
  }
  // Shapes as last measured, written only when they changed (Note [Shape signature]).
  const std::uint64_t signature = signatureOf(event.inputs, event.outputs);
  if (signature != h.signature) {
    h.signature = signature;
    recordShapes(m_slots[static_cast<std::size_t>(open.slot)], event);
  }
  if (m_options.events) {
    NodeEventRecord r;
    r.run = static_cast<std::int32_t>(m_runs.size());
    r.node = open.slot;
    r.thread = 0;
    r.startNs = t0 - m_originNs;
    r.endNs = t1 - m_originNs;
    r.liveBytes = live;
    m_ring->push(r);
  }
}

void Profiler::recordShapes(Slot& s, const NodeEvent& event) {
  s.inputShapes.resize(event.inputs.size());
  for (std::size_t i = 0; i < event.inputs.size(); ++i) {
    const engine::Tensor* in = event.inputs[i];
    if (in && in->defined()) s.inputShapes[i] = in->shape();
  }
  s.outputShapes.resize(event.outputs.size());
  s.outputDtypes.resize(event.outputs.size(), engine::DType::Float32);
  s.outputBytes.resize(event.outputs.size(), 0);
  for (std::size_t o = 0; o < event.outputs.size(); ++o) {
    const engine::Tensor* out = event.outputs[o];
    if (!out || !out->defined()) continue;
    s.outputShapes[o] = out->shape();
    s.outputDtypes[o] = out->dtype();
    s.outputBytes[o] = out->numel() * static_cast<std::int64_t>(engine::dtypeSize(out->dtype()));
  }
}

void Profiler::abandonRun() {
  for (std::int32_t k : m_touched) {
    Hot& h = m_hot[static_cast<std::size_t>(k)];
    h.runNs = h.runCalls = h.runAllocated = h.runFreed = 0;
  }
  m_touched.clear();
  m_open.clear();
  m_trailSlot = -1;
  m_ring->rewind(m_runFirstEvent);
  endRun();
}

void Profiler::endRun() {
  m_inRun = false;
  if (m_installed) {
    if (engine::allocationCounters() == m_counters)
      engine::setAllocationCounters(m_previousCounters);
    m_installed = false;
  }
}

// Note [Profiler failures]: the callbacks never throw (Note [Passive observers]): a failure of
// the profiler's own (an allocation that fails while the tables or the ring grow) abandons the
// run it happened in, as a failed run is (Note [Runs that do not finish]), and is counted in
// lostRuns(); the execution goes on unharmed.
template <class Body>
void Profiler::guarded(Body&& body) noexcept {
  try {
    body();
  } catch (...) {
    ++m_lostRuns;
    if (m_inRun) abandonRun();
  }
}

void Profiler::onStart(VM& vm) {
  guarded([&] { onStartImpl(vm); });
}
void Profiler::beforeNode(VM& vm, const NodeEvent& event) {
  guarded([&] { beforeNodeImpl(vm, event); });
}
void Profiler::afterNode(VM& vm, const NodeEvent& event) {
  guarded([&] { afterNodeImpl(vm, event); });
}
void Profiler::onFinish(VM& vm) {
  guarded([&] { onFinishImpl(vm); });
}

void Profiler::onError(VM&, const NodeEvent&, const std::exception_ptr&) {
  if (m_inRun) abandonRun();
}

void Profiler::onFinishImpl(VM&) {
  if (!m_inRun) return;
  const std::int64_t end = now();
  if (m_installed) {
    settleTrailingFrees();
    m_peakLive = std::max(m_peakLive, m_counters->peakLive - m_runLive0);
  }
  double inNodes = 0;
  for (std::int32_t k : m_touched) {
    Slot& s = m_slots[static_cast<std::size_t>(k)];
    Hot& h = m_hot[static_cast<std::size_t>(k)];
    const double seconds = static_cast<double>(h.runNs) * 1e-9;
    if (s.parent < 0) inNodes += seconds;
    s.samples.push_back(seconds);
    s.calls += h.runCalls;
    s.allocated += h.runAllocated;
    s.freed += h.runFreed;
    h.runNs = h.runCalls = h.runAllocated = h.runFreed = 0;
    if (!s.runIterationNs.empty()) {
      const std::size_t n = s.runIterationNs.size();
      if (s.iterationSum.size() < n) {
        s.iterationSum.resize(n, 0);
        s.iterationRuns.resize(n, 0);
      }
      for (std::size_t i = 0; i < n; ++i) {
        s.iterationSum[i] += static_cast<double>(s.runIterationNs[i]) * 1e-9;
        ++s.iterationRuns[i];
      }
      s.runIterationNs.clear();
    }
  }
  m_touched.clear();
  m_runs.push_back(
      {static_cast<std::int32_t>(m_runs.size()), m_runStart - m_originNs, end - m_originNs});
  m_inNodes.push_back(inNodes);
  endRun();
}

void Profiler::recordCallSpan(std::int64_t startNs, std::int64_t endNs) {
  if (m_runs.empty()) return;
  RunSpan& r = m_runs.back();
  r.startNs = std::min(r.startNs, startNs - m_originNs);
  r.endNs = std::max(r.endNs, endNs - m_originNs);
}

// The op's declared cost of one call at the last measured input shapes (Op::cost); a cost the op
// cannot give for these shapes (it throws) is unknown, never a failed profile.
void fillCost(NodeProfile& profile, const Apply& node) {
  profile.cost = engine::OpCost{};
  if (profile.inputShapes.size() != node.inputs().size()) return;
  try {
    profile.cost = node.op().cost(node, profile.inputShapes);
  } catch (const std::exception&) {
    profile.cost = engine::OpCost{};
  }
}

Profile Profiler::snapshot(const Program& program) const {
  if (m_program && m_program.get() != &program && !m_runs.empty())
    throw std::invalid_argument("Profiler::snapshot: the profiler measured another program (" +
                                std::to_string(m_program->nodes().size()) +
                                " top-level nodes) than the one asked for (" +
                                std::to_string(program.nodes().size()) + ")");
  return snapshotOf(program);
}

Profile Profiler::snapshot(const engine::Function& function) const {
  Profile p = snapshot(function.program());
  FunctionSummary& f = p.function;
  f.mode = std::string(engine::modeName(function.mode()));
  const engine::RewriteProfile& rp = function.rewriteProfile();
  for (const engine::PhaseStats& ph : rp.phases) {
    f.compilePhases.push_back({ph.name, ph.seconds});
    p.rewritePhases.push_back({ph.name, ph.seconds, static_cast<std::int64_t>(ph.nodesBefore),
                               static_cast<std::int64_t>(ph.nodesAfter),
                               static_cast<std::int64_t>(ph.changes)});
  }
  f.compilePhases.push_back({"link", function.linkSeconds()});
  f.compileSeconds = rp.seconds + function.linkSeconds();
  for (const engine::RewriterStats& r : rp.rewriters)
    p.rewriters.push_back({r.name, r.phase, static_cast<std::int64_t>(r.tried),
                           static_cast<std::int64_t>(r.applied),
                           static_cast<std::int64_t>(r.refused), r.seconds});
  return p;
}

Profile Profiler::snapshotOf(const Program& program) const {
  // The tables of a profiler that never measured are built for `program` here (no samples).
  Profiler fresh;
  const Profiler* self = this;
  if (m_program.get() != &program) {
    fresh.m_program = nullptr;
    fresh.build(std::shared_ptr<const Program>(std::shared_ptr<const Program>(), &program));
    self = &fresh;
  }
  const auto& slots = self->m_slots;
  Profile p;
  p.function.device = "cpu";
  p.function.warmupRuns = m_warmupRuns;
  p.function.measuredRuns = static_cast<std::int64_t>(m_runs.size());
  std::vector<double> call, overhead;
  for (std::size_t r = 0; r < m_runs.size(); ++r) {
    const double c = static_cast<double>(m_runs[r].endNs - m_runs[r].startNs) * 1e-9;
    call.push_back(c);
    overhead.push_back(std::max(0.0, c - m_inNodes[r]));
  }
  p.function.call = TimeStats::of(call);
  p.function.inNodes = TimeStats::of(m_inNodes);
  p.function.overhead = TimeStats::of(overhead);
  p.function.applyCount = static_cast<std::int64_t>(program.nodes().size());
  p.function.innerApplyCount = static_cast<std::int64_t>(slots.size() - program.nodes().size());
  p.nodes.reserve(slots.size());
  for (const Slot& s : slots) {
    NodeProfile n;
    n.framePath = s.framePath;
    n.id = s.node->id();
    n.body = s.body;
    n.position = static_cast<std::int64_t>(s.position);
    n.op = s.node->op().str();
    n.opClass = s.node->op().name();
    n.scope = s.node->scope();
    n.kernelNote = engine::kernelNote(*s.node);
    n.hasInnerGraph = !s.bodies.empty();
    n.inputShapes = s.inputShapes;
    const auto nOut = static_cast<std::size_t>(s.node->nOutputs());
    n.outputs.resize(nOut);
    for (std::size_t o = 0; o < nOut; ++o) {
      OutputInfo& out = n.outputs[o];
      out.kind = s.kinds[o];
      if (o < s.outputShapes.size()) {
        out.shape = s.outputShapes[o];
        out.dtype = std::string(engine::dtypeName(s.outputDtypes[o]));
        out.bytes = s.outputBytes[o];
      } else {
        out.dtype =
            std::string(engine::dtypeName(s.node->outputRef(static_cast<int>(o)).type().dtype()));
      }
    }
    n.calls = s.calls;
    n.time = TimeStats::of(s.samples);
    for (std::size_t i = 0; i < s.iterationSum.size(); ++i)
      n.iterationSeconds.push_back(s.iterationSum[i] / static_cast<double>(s.iterationRuns[i]));
    if (s.calls > 0) {
      n.allocatedBytes = s.allocated / s.calls;
      n.freedBytes = s.freed / s.calls;
    }
    fillCost(n, *s.node);
    p.nodes.push_back(std::move(n));
  }
  // Memory: measured peak, and the plan's figures from the measured sizes of the top-level values.
  p.memory.peakLiveBytes = m_peakLive;
  std::vector<std::int64_t> slotBytes(program.slotCount(), 0);
  const auto operands = program.operandSlots();
  for (std::size_t pos = 0; pos < program.nodes().size(); ++pos) {
    const engine::LinkedNode& ln = program.nodes()[pos];
    const NodeProfile& n = p.nodes[pos];
    for (std::uint32_t o = 0; o < ln.nOut && o < n.outputs.size(); ++o)
      slotBytes[operands[ln.outBegin + o]] = n.outputs[o].bytes;
  }
  const PlanMemory plan = planMemory(planGraphOf(program, slotBytes));
  p.memory.planPeakBytes = plan.planPeak;
  p.memory.peakWithoutInplace = plan.withoutInplace;
  p.memory.peakWithoutFreeing = plan.withoutFreeing;
  p.capture.maxEvents = m_options.maxEvents;
  p.capture.keptEvents = m_ring->kept();
  p.capture.droppedEvents = m_ring->dropped;
  p.originNs = m_originNs;
  p.runs = m_runs;
  p.events.reserve(static_cast<std::size_t>(m_ring->kept()));
  for (std::int64_t i = m_ring->oldest; i < m_ring->written; ++i) p.events.push_back(m_ring->at(i));
  // In time order (a frame node's record is written after its inner nodes').
  std::stable_sort(p.events.begin(), p.events.end(),
                   [](const NodeEventRecord& a, const NodeEventRecord& b) {
                     return a.startNs != b.startNs ? a.startNs < b.startNs : a.endNs > b.endNs;
                   });
  // The origin is the first run's start, which a call span (recordCallSpan) may move earlier:
  // nothing in the timeline is before it.
  std::int64_t earliest = 0;
  for (const RunSpan& r : p.runs) earliest = std::min(earliest, r.startNs);
  if (earliest < 0) {
    p.originNs += earliest;
    for (RunSpan& r : p.runs) {
      r.startNs -= earliest;
      r.endNs -= earliest;
    }
    for (NodeEventRecord& e : p.events) {
      e.startNs -= earliest;
      e.endNs -= earliest;
    }
  }
  return p;
}

}  // namespace tscope::prof
