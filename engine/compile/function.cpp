#include "engine/compile/function.h"

#include "engine/compile/inner_log.h"
#include "engine/compile/program.h"
#include "engine/graph/config.h"
#include "engine/graph/destroy_handler.h"
#include "engine/graph/errors.h"
#include "engine/graph/op.h"
#include "engine/graph/traversal.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/rewrite/rules/gpu_placement.h"
#include "engine/tensor/device_memory.h"
#include "engine/vm/vm.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tscope::engine {

std::string_view modeName(Mode mode) {
  switch (mode) {
    case Mode::None:
      return "none";
    case Mode::FastCompile:
      return "fast_compile";
    case Mode::FastRun:
      return "fast_run";
    case Mode::Debug:
      break;
  }
  return "debug";
}

struct Function::Impl {
  std::unique_ptr<FunctionGraph> graph;
  std::shared_ptr<const Program> program;
  std::unique_ptr<VM> vm;
  // Bumped by every begin() and finish(): an Execution is current while its generation matches.
  std::uint64_t generation = 0;
  // Set by operator() for the begin() it makes (Note [Parameters stay whole]).
  bool plainCall = false;
  std::size_t nUserInputs = 0;
  std::size_t nUserOutputs = 0;
  std::vector<VarPtr> userInputs;   // graph inputs given by the caller
  std::vector<VarPtr> userOutputs;  // graph outputs asked for by the caller
  // (graph output index, shared variable in the graph) per update
  std::vector<std::pair<std::size_t, SharedVariable*>> updates;
  std::vector<Tensor> args;  // reused between calls
  std::vector<RewriteRecord> rewriteLog;
  RewriteProfile rewriteProfile;
  double linkSeconds = 0;
  Mode mode = Mode::None;
};

Function::Function(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Function::Function(Function&&) noexcept = default;
Function& Function::operator=(Function&&) noexcept = default;
Function::~Function() = default;

const FunctionGraph& Function::graph() const {
  return *m_impl->graph;
}
const std::vector<VarPtr>& Function::inputs() const {
  return m_impl->userInputs;
}
const std::vector<VarPtr>& Function::outputs() const {
  return m_impl->userOutputs;
}
VM& Function::vm() {
  return *m_impl->vm;
}
const Program& Function::program() const {
  return *m_impl->program;
}
const std::shared_ptr<const Program>& Function::programPtr() const {
  return m_impl->program;
}
const std::vector<RewriteRecord>& Function::rewriteLog() const {
  return m_impl->rewriteLog;
}
const RewriteProfile& Function::rewriteProfile() const {
  return m_impl->rewriteProfile;
}
double Function::linkSeconds() const {
  return m_impl->linkSeconds;
}
Mode Function::mode() const {
  return m_impl->mode;
}

namespace {
// The structure of a graph independent of ids and addresses: per node in topological order, its
// op and where each input comes from (an earlier node's output, a graph input, a constant).
std::vector<std::string> structureOf(const FunctionGraph& fg) {
  std::unordered_map<const Variable*, std::string> names;
  for (std::size_t i = 0; i < fg.inputs().size(); ++i)
    names[fg.inputs()[i].get()] = "in" + std::to_string(i);
  std::vector<std::string> lines;
  for (const Apply* node : fg.toposort()) {
    std::string line = node->op().str() + "(";
    for (const VarPtr& in : node->inputs()) {
      auto it = names.find(in.get());
      line += (it != names.end() ? it->second
               : in->kind() == Variable::Kind::Constant
                   ? "const " + static_cast<const Constant&>(*in).value().toString(2)
                   : "?") +
              ",";
    }
    line += ")";
    for (int o = 0; o < node->nOutputs(); ++o)
      names[&node->outputRef(o)] = "n" + std::to_string(lines.size()) + "." + std::to_string(o);
    lines.push_back(std::move(line));
  }
  std::string outs = "outputs(";
  for (const VarPtr& out : fg.outputs()) {
    auto it = names.find(out.get());
    outs += (it != names.end() ? it->second : std::string("const")) + ",";
  }
  lines.push_back(outs + ")");
  return lines;
}

// Note [Inputs a call may overwrite]: a graph that already holds inplace nodes (an optimized graph
// loaded from a .tsg) gets the DestroyHandler before it is rewritten or scheduled; toposort() needs
// its orderings to run every reader of a buffer before the node that overwrites it. Only the
// shared variables this compile updates may be overwritten: a node that overwrites any other
// input, a constant or a buffer a graph output views (Gemm{inplace} on W in a graph run without
// its updates, as `tensorscope run` does) runs out of place instead, so the caller's values and
// the file's shared values never change. A graph the handler still refuses (a hand-built inplace
// node without an out-of-place form) keeps the plain schedule: DebugMode reports such nodes.
void prepareDestroyers(FunctionGraph& fg, const std::vector<VarPtr>& mutableInputs) {
  if (fg.feature<DestroyHandler>()) return;
  std::vector<ApplyPtr> destroyers;
  for (Apply* node : fg.nodes())
    if (!node->op().destroyMap().empty()) destroyers.push_back(node->shared_from_this());
  if (destroyers.empty()) return;
  auto handler = std::make_shared<DestroyHandler>();
  handler->setMutableInputs(mutableInputs);
  fg.attachFeature(handler);
  for (const ApplyPtr& node : destroyers) {
    bool protectedInput = false;
    for (const auto& [output, inputs] : node->op().destroyMap())
      for (int i : inputs)
        protectedInput =
            protectedInput || (i < node->nInputs() && handler->isProtected(*node->input(i)));
    const OpPtr outOfPlace = protectedInput ? node->op().outOfPlace() : nullptr;
    if (!outOfPlace) continue;
    const ApplyPtr twin = outOfPlace->makeNode(node->inputs());
    Replacements pairs;
    for (int o = 0; o < node->nOutputs(); ++o) pairs.emplace_back(node->output(o), twin->output(o));
    fg.replaceAll(pairs, "out_of_place_for_caller_inputs");
  }
  try {
    handler->validate(fg);
  } catch (const InconsistencyError&) {
    fg.detachFeature(*handler);
  }
}

std::string argumentName(std::size_t i, const Variable& v) {
  std::string s = "argument " + std::to_string(i);
  if (!v.name().empty()) s += " ('" + v.name() + "')";
  return s;
}
}  // namespace

Execution Function::begin(const std::vector<Tensor>& args) {
  return begin(args, BeginOptions{});
}

Execution Function::begin(const std::vector<Tensor>& args, BeginOptions options) {
  Impl& impl = *m_impl;
  if (args.size() != impl.nUserInputs)
    throw ArgumentError("Function: expected " + std::to_string(impl.nUserInputs) + " argument" +
                        (impl.nUserInputs == 1 ? "" : "s") + ", found " +
                        std::to_string(args.size()));
  const auto& graphInputs = impl.graph->inputs();
  impl.args.resize(graphInputs.size());
  for (std::size_t i = 0; i < impl.nUserInputs; ++i) {
    const Variable& in = *graphInputs[i];
    if (!args[i].defined())
      throw ArgumentError("Function: " + argumentName(i, in) + " is an undefined tensor");
    try {
      impl.args[i] = in.type().filter(args[i], argumentName(i, in));
    } catch (const TypeError& e) {
      throw ArgumentError(std::string("Function: ") + e.what());
    }
  }
  for (std::size_t i = impl.nUserInputs; i < graphInputs.size(); ++i)
    impl.args[i] = Tensor();  // shared: current value
  // Note [Parameters stay whole]: a node that updates a shared variable in place (Gemm{inplace}
  // on W) writes into the buffer the VM was handed. An execution the caller drives (begin()),
  // or one that observers may stop or fail (NanGuard, DebugMode), can end before finish(): it
  // then hands the VM the shared value itself, which start() copies (Note [Overwritten inputs]),
  // so the update lands in the copy and a stopped or failed run leaves every parameter as it
  // was. With Retain::All the VM's copy-on-destroy does the same. A plain call without observers
  // keeps the in-place update (no copy per step): it is a committed run (Note [Committed runs] in
  // vm.h), which a stop cannot end between two updates; it can fail only on a kernel's error.
  // A run to the end is committed when the VM can grant it (Note [Committed runs] in vm.h): a
  // stop can then no longer come between two updates, so none needs a copy.
  const bool plain = std::exchange(impl.plainCall, false);
  VM& vm = *impl.vm;
  const bool committed = (plain || options.runToEnd) && vm.commitNextRun();
  // Note [Passive observers] in observer.h: a profiler cannot end the call early.
  const bool interruptible = std::any_of(vm.observers().begin(), vm.observers().end(),
                                         [](const auto& o) { return o->mayInterrupt(); });
  if (!committed && (!plain || interruptible) && vm.retain() != Retain::All)
    for (std::size_t i : impl.program->plan().overwrittenInputs)
      if (i >= impl.nUserInputs && graphInputs[i]->kind() == Variable::Kind::Shared)
        impl.args[i] = static_cast<const SharedVariable&>(*graphInputs[i]).placedValue();
  vm.start(impl.args);
  for (std::size_t i = 0; i < graphInputs.size(); ++i)
    impl.args[i] = Tensor();  // do not keep the caller's buffers
  return Execution(*this, ++impl.generation);
}

std::vector<Tensor> Function::operator()(const std::vector<Tensor>& args) {
  m_impl->plainCall = true;
  Execution execution = begin(args);
  // A call runs to the end: a pause an observer asks for is the business of whoever drives the
  // VM step by step (a debug session), not of a plain call.
  while (execution.run() == VM::Status::Paused) {
  }
  return execution.finish();
}

Execution::Execution(Function& function, std::uint64_t generation)
    : m_function(&function), m_generation(generation) {}
Execution::Execution(Execution&& other) noexcept
    : m_function(std::exchange(other.m_function, nullptr)), m_generation(other.m_generation) {}
Execution& Execution::operator=(Execution&& other) noexcept {
  m_function = std::exchange(other.m_function, nullptr);
  m_generation = other.m_generation;
  return *this;
}
Execution::~Execution() = default;

bool Execution::active() const {
  return m_function != nullptr && m_function->m_impl &&
         m_function->m_impl->generation == m_generation;
}

void Execution::check(const char* what) const {
  if (!active())
    throw std::logic_error(std::string("Execution::") + what +
                           ": this execution is over (finished, or superseded by a later begin())");
}

VM& Execution::vm() {
  check("vm");
  return *m_function->m_impl->vm;
}

VM::Status Execution::run() {
  check("run");
  VM& vm = *m_function->m_impl->vm;
  const VM::Status status = vm.run();
  if (status == VM::Status::Failed && vm.error()) std::rethrow_exception(vm.error());
  return status;
}

bool Execution::step() {
  check("step");
  VM& vm = *m_function->m_impl->vm;
  if (vm.status() == VM::Status::Failed && vm.error()) std::rethrow_exception(vm.error());
  return vm.step();
}

VM::Status Execution::status() const {
  check("status");
  return m_function->m_impl->vm->status();
}

std::vector<Tensor> Execution::finish() {
  check("finish");
  Function::Impl& impl = *m_function->m_impl;
  VM& vm = *impl.vm;
  if (vm.status() != VM::Status::Finished)
    throw std::logic_error("Execution::finish: the run is " + std::string(statusName(vm.status())) +
                           " (" + std::to_string(vm.pc()) + " of " +
                           std::to_string(vm.schedule().size()) +
                           " nodes ran); run it to the end first");
  std::vector<Tensor> values = vm.outputValues();
  ++impl.generation;
  // Every value is computed before any shared variable changes.
  for (std::size_t u = 0; u < impl.updates.size(); ++u) {
    const auto& [outputIndex, shared] = impl.updates[u];
    Tensor previous = shared->placedValue();
    shared->setValueBorrowed(std::move(values[outputIndex]));
    // An update computed in place (Gemm{inplace} on W) already lives in the old buffer.
    if (!previous.sharesStorageWith(shared->placedValue()))
      vm.recycleBuffer(*shared, *impl.graph->outputs()[outputIndex], std::move(previous));
  }
  values.resize(impl.nUserOutputs);
  return values;
}

namespace {

// The rewrite selection of a mode with the caller's includes and excludes.
RewriteQuery queryFor(const CompileOptions& options) {
  RewriteQuery query = RewriteQuery::forMode(modeName(options.mode));
  query.include.insert(options.include.begin(), options.include.end());
  query.exclude.insert(options.exclude.begin(), options.exclude.end());
  // Note [Channel blocks]: the blocked layout is the CPU's; a GPU's kernels take plain tensors.
  if (options.device != Device::Cpu) query.exclude.insert("channel_blocks");
  return query;
}

// A graph that already holds inplace nodes (an optimized graph loaded from a .tsg, compiled with
// mode none) needs the DestroyHandler's orderings too: without them the schedule may run a node
// that overwrites a buffer before another reader of that buffer. A graph the handler refuses
// (a hand-built inplace node on a graph input, as DebugMode's tests build) keeps the plain
// schedule: its orderings would not hold anyway, and DebugMode is what reports such nodes.
void ensureDestroyOrderings(FunctionGraph& fg) {
  if (fg.feature<DestroyHandler>()) return;
  bool destroys = false;
  for (const Apply* node : fg.nodes()) destroys = destroys || !node->op().destroyMap().empty();
  if (!destroys) return;
  auto handler = std::make_shared<DestroyHandler>();
  fg.attachFeature(handler);
  try {
    handler->validate(fg);
  } catch (const InconsistencyError&) {
    fg.detachFeature(*handler);
  }
}

// Note [Inner programs]: the body of a node with an inner graph (an OpFromGraph) is cloned,
// rewritten with the outer mode (unless the op asks to run it as written; mode debug rewrites it
// as fast_run, and the outer DebugMode observer checks its nodes as the VM runs them), scheduled
// and linked into a child program once per compile and op. Its inputs stand for the node's
// inputs, which the body must not overwrite: none of them is a mutable input. Test values are off
// on this thread meanwhile: the body's inputs carry none, and the rewrites build nodes.
LinkOptions linkOptionsFor(const CompileOptions& options, bool keepBuffers);

std::shared_ptr<const Program> linkInnerGraph(const Apply& node, const FunctionGraph& inner,
                                              const CompileOptions& options) {
  std::shared_ptr<FunctionGraph> fg = inner.clone();
  prepareDestroyers(*fg, {});
  std::vector<RewriteRecord> log;
  if (options.mode != Mode::None && node.op().optimizeInnerGraph()) {
    TestValuesSuspended noTestValues;
    CompileOptions innerOptions = options;
    if (innerOptions.mode == Mode::Debug) innerOptions.mode = Mode::FastRun;
    // Note [Inner rewrite logs] (engine/compile/inner_log.h): the body's log is kept.
    auto recorder = std::make_shared<RewriteRecorder>();
    fg->attachFeature(recorder);
    optimize(*fg, queryFor(innerOptions), RewriteDb::standard(), OptimizeOptions{});
    log = recorder->takeRecords();
    fg->detachFeature(*recorder);
  }
  // The body as built stays alive with the op that owns it.
  fg->attachFeature(std::make_shared<InnerRewriteLog>(
      std::shared_ptr<const FunctionGraph>(node.opPtr(), &inner), std::move(log)));
  ensureDestroyOrderings(*fg);
  std::vector<Apply*> schedule = fg->toposort();
  return linkProgram(std::shared_ptr<const FunctionGraph>(fg), std::move(schedule),
                     linkOptionsFor(options, false));
}

// The `gpu` phase (Note [GPU placement] in engine/rewrite/rules/gpu_placement.h), after every
// rewrite: the nodes the device has kernels for move there, with transfers where values cross.
// Its changes join the rewrite log as the phase "gpu".
void placeForDevice(FunctionGraph& fg, const CompileOptions& options, std::size_t nUserInputs,
                    std::vector<RewriteRecord>& log) {
  // A device without a backend would silently run everything on the CPU: say so instead.
  requireDeviceMemory(options.device, "compile for " + std::string(deviceName(options.device)));
  const KernelRegistry& kernels = options.kernels ? *options.kernels : defaultKernelRegistry();
  auto recorder = std::make_shared<RewriteRecorder>();
  recorder->setPhase("gpu");
  fg.attachFeature(recorder);
  placeOnDevice(fg, kernels, options.device, options.deviceRules);
  // Note [Device-resident shared variables] (gpu_placement.h): parameters stay on the device.
  keepSharedOnDevice(fg, nUserInputs, options.device);
  fg.detachFeature(*recorder);
  for (RewriteRecord& record : recorder->takeRecords()) {
    record.order = log.size();
    log.push_back(std::move(record));
  }
}

LinkOptions linkOptionsFor(const CompileOptions& options, bool keepBuffers) {
  LinkOptions link;
  link.keepBuffers = keepBuffers;
  link.device = options.device;
  link.kernels = options.kernels;
  // Copies of the options the inner links need (not the observers: they attach to the VM).
  CompileOptions inner;
  inner.mode = options.mode;
  inner.include = options.include;
  inner.exclude = options.exclude;
  inner.device = options.device;
  inner.kernels = options.kernels;
  link.linkInner = [inner](const Apply& node, const FunctionGraph& body) {
    return linkInnerGraph(node, body, inner);
  };
  return link;
}

}  // namespace

Function compile(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                 const std::vector<Update>& updates, CompileOptions options) {
  // Each input's position among the graph's inputs: the given ones first, then the shared variables
  // (below). An update target's position finds its copy in the cloned graph, whose inputs keep that
  // order (no clone map: at 100k nodes that map held a quarter million entries only to look up a
  // few targets).
  std::unordered_map<const Variable*, std::size_t> position;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const VarPtr& in = inputs[i];
    if (!in) throw GraphError("compile: input " + std::to_string(i) + " is null");
    if (in->owner() != nullptr)
      throw GraphError("compile: input " + std::to_string(i) + " (" + in->displayName() +
                       ") is computed by " + in->owner()->op().str() +
                       "; inputs must be free variables (Variable::create)");
    if (in->kind() == Variable::Kind::Constant)
      throw GraphError("compile: input " + std::to_string(i) + " (" + in->displayName() +
                       ") is a constant; constants are part of the graph, not arguments");
    if (!position.emplace(in.get(), i).second)
      throw GraphError("compile: input " + std::to_string(i) + " (" + in->displayName() +
                       ") is listed twice");
  }
  std::vector<VarPtr> graphOutputs = outputs;
  std::vector<VarPtr> updateTargets;
  std::unordered_set<const Variable*> updated;
  for (std::size_t u = 0; u < updates.size(); ++u) {
    const Update& up = updates[u];
    if (!up.shared || up.shared->kind() != Variable::Kind::Shared)
      throw TypeError("compile: update " + std::to_string(u) + " targets " +
                      (up.shared ? up.shared->displayName() : std::string("a null variable")) +
                      ", expected a SharedVariable");
    if (!up.value)
      throw TypeError("compile: update " + std::to_string(u) + " of '" + up.shared->name() +
                      "' has a null value");
    if (!up.value->type().isSubtypeOf(up.shared->type()) &&
        !(up.value->type().dtype() == up.shared->type().dtype() &&
          up.value->type().isCompatibleWith(up.shared->type())))
      throw TypeError("compile: update " + std::to_string(u) + " of shared variable '" +
                      up.shared->name() + "': expected a value of type " + up.shared->type().str() +
                      ", found " + up.value->type().str() +
                      (up.value->site().empty() ? std::string()
                                                : " (built at " + up.value->site().str() + ")"));
    if (!updated.insert(up.shared.get()).second)
      throw GraphError("compile: shared variable '" + up.shared->name() + "' is updated twice");
    graphOutputs.push_back(up.value);
    updateTargets.push_back(up.shared);
  }
  for (std::size_t o = 0; o < outputs.size(); ++o)
    if (!outputs[o]) throw GraphError("compile: output " + std::to_string(o) + " is null");

  // Shared variables are implicit inputs after the given ones.
  std::vector<VarPtr> allInputs = inputs;
  auto list = [&](const VarPtr& v) {
    if (position.emplace(v.get(), allInputs.size()).second) allInputs.push_back(v);
  };
  for (const VarPtr& v : graphInputs(graphOutputs))
    if (v->kind() == Variable::Kind::Shared) list(v);
  for (const VarPtr& t : updateTargets) list(t);

  auto impl = std::make_unique<Function::Impl>();
  impl->graph =
      std::make_unique<FunctionGraph>(allInputs, graphOutputs, FunctionGraph::Ownership::Clone);
  impl->nUserInputs = inputs.size();
  impl->nUserOutputs = outputs.size();
  FunctionGraph& fg = *impl->graph;
  std::vector<VarPtr> clonedTargets;
  // The updates are known to the graph before it is rewritten: the inplace pass may overwrite an
  // updated shared variable's buffer (Note [Inplace candidates]).
  for (std::size_t u = 0; u < updateTargets.size(); ++u) {
    const std::size_t outIndex = outputs.size() + u;
    const std::size_t inIndex = position.at(updateTargets[u].get());
    const VarPtr& target = fg.inputs()[inIndex];
    clonedTargets.push_back(target);
    fg.setUpdate(outIndex, inIndex);
    impl->updates.emplace_back(outIndex, static_cast<SharedVariable*>(target.get()));
  }
  prepareDestroyers(fg, clonedTargets);
  if (options.mode != Mode::None) {
    RewriteQuery query = queryFor(options);
    const bool debug = options.mode == Mode::Debug;
    // Debug: rewrite a second copy too; the rewrites must not depend on ids, addresses or hash
    // order.
    std::unique_ptr<FunctionGraph> second = debug ? fg.clone() : nullptr;
    auto recorder = std::make_shared<RewriteRecorder>();
    fg.attachFeature(recorder);
    OptimizeOptions optimizeOptions;
    optimizeOptions.checkEachChange = debug;
    impl->rewriteProfile = optimize(fg, query, RewriteDb::standard(), optimizeOptions);
    impl->rewriteLog = recorder->takeRecords();
    fg.detachFeature(*recorder);
    if (second) {
      optimize(*second, query, RewriteDb::standard(), optimizeOptions);
      const auto a = structureOf(fg), b = structureOf(*second);
      if (a != b) {
        std::size_t k = 0;
        while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
        throw GraphError(
            "DebugMode: rewriting the same graph twice gave different graphs (a rewrite depends on "
            "something other than the graph); first difference at node " +
            std::to_string(k) + ": '" + (k < a.size() ? a[k] : std::string("<end>")) + "' vs '" +
            (k < b.size() ? b[k] : std::string("<end>")) + "'");
      }
    }
  }
  if (options.device != Device::Cpu) {
    placeForDevice(fg, options, inputs.size(), impl->rewriteLog);
    // A device-resident shared variable is updated through its device twin, now the graph's
    // input (Note [Device-resident shared variables]).
    impl->updates.clear();
    for (const auto& [out, in] : fg.updateMapping())
      impl->updates.emplace_back(out, static_cast<SharedVariable*>(fg.inputs()[in].get()));
  }
  ensureDestroyOrderings(fg);
  const auto& gIn = fg.inputs();
  impl->userInputs.assign(gIn.begin(), gIn.begin() + static_cast<std::ptrdiff_t>(inputs.size()));
  const auto& gOut = fg.outputs();
  impl->userOutputs.assign(gOut.begin(),
                           gOut.begin() + static_cast<std::ptrdiff_t>(outputs.size()));
  impl->mode = options.mode;
  const auto linkStart = std::chrono::steady_clock::now();
  impl->program = linkProgram(*impl->graph, impl->graph->toposort(),
                              linkOptionsFor(options, options.keepBuffers));
  impl->linkSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - linkStart).count();
  impl->vm = std::make_unique<VM>(impl->program);
  if (options.mode == Mode::Debug)
    impl->vm->addObserver(std::make_shared<DebugModeObserver>(options.debug));
  for (auto& obs : options.observers) impl->vm->addObserver(obs);
  return Function(std::move(impl));
}

}  // namespace tscope::engine
