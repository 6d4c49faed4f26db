#pragma once
// compile(): turns a graph into a callable Function (DESIGN.md "From graph to Function").

#include "engine/compile/debug_mode.h"
#include "engine/compile/kernel.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/graph/variable.h"
#include "engine/rewrite/rewriter.h"
#include "engine/tensor/tensor.h"
#include "engine/vm/vm.h"

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tscope::engine {

class VM;
class ExecutionObserver;
class DeviceSupport;
class Program;
class Function;

// An argument to a Function does not fit its input (count, dtype, rank, static dimension).
class ArgumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// shared <- value after each call (all values are computed before any shared variable changes).
struct Update {
  VarPtr shared;  // a SharedVariable
  VarPtr value;   // of the shared variable's type
};

enum class Mode { None, FastCompile, FastRun, Debug };
std::string_view modeName(Mode mode);

struct CompileOptions {
  Mode mode = Mode::None;
  // Rewrite tags or names to add to / remove from the mode's selection (Note [Rewrite selection]
  // in engine/rewrite/rewrite_db.h): exclude {"fusion"} keeps elementwise chains unfused.
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  // Mode::Debug: the checks each node gets at run time (a DebugModeObserver with these options is
  // attached to the VM). The graph is also rewritten twice; different results are an error.
  DebugModeOptions debug;
  // Keep intermediate buffers between calls (reused when shapes repeat) instead of freeing each
  // after its last use.
  bool keepBuffers = false;
  // Observers attached to every call's VM (profiler, NanGuard, debugger, tests).
  std::vector<std::shared_ptr<ExecutionObserver>> observers;
  // Where the nodes run: the linker chooses each node's kernel for this device from `kernels`
  // (null: defaultKernelRegistry()), falling back to the CPU reference (Note [Ops and backends]).
  Device device = Device::Cpu;
  const KernelRegistry* kernels = nullptr;
  // The placement rules and host values for `device` (null: defaultDeviceSupport(); Note [GPU
  // placement] in engine/rewrite/rules/gpu_placement.h).
  const DeviceSupport* deviceRules = nullptr;
};

// One execution of a Function, driven by the caller (DESIGN.md "Execution"): Function::begin
// checks the arguments and readies the VM; the caller runs or steps it (vm() gives every control:
// breaks, observers, values); finish() applies the updates and returns the outputs.
//
//   Execution e = f.begin({x});
//   e.vm().setBreakBefore(*node);
//   while (e.run() == VM::Status::Paused) inspect(e.vm());
//   std::vector<Tensor> outputs = e.finish();
//
// An execution that is destroyed, superseded by a later begin(), or failed before finish()
// applies no update: every shared variable keeps its value.
class Execution {
 public:
  Execution(Execution&& other) noexcept;
  Execution& operator=(Execution&& other) noexcept;
  ~Execution();

  VM& vm();
  // vm().run() / vm().step(); failures are rethrown.
  VM::Status run();
  bool step();
  VM::Status status() const;
  // Whether this execution is still the function's current one (not finished, not superseded).
  bool active() const;
  // Requires a finished run (throws std::logic_error naming the status otherwise). Applies the
  // updates (every value was computed before any shared variable changes) and returns one tensor
  // per output the caller asked for; they never alias the function's internal buffers.
  std::vector<Tensor> finish();

 private:
  friend class Function;
  Execution(Function& function, std::uint64_t generation);
  void check(const char* what) const;
  Function* m_function = nullptr;
  std::uint64_t m_generation = 0;
};

class Function {
 public:
  Function(Function&&) noexcept;
  Function& operator=(Function&&) noexcept;
  ~Function();

  // Runs the graph on args (one per input, checked against the input types; values of another
  // dtype are converted only when the conversion is lossless) and applies the updates. Returns
  // one tensor per output; outputs never alias the function's internal buffers.
  // begin + run + finish.
  std::vector<Tensor> operator()(const std::vector<Tensor>& args);
  // Checks the arguments (ArgumentError) and starts the VM on them; nothing runs yet.
  Execution begin(const std::vector<Tensor>& args);
  // runToEnd: the caller runs this execution to its end and finishes it, as operator() does
  // (DebugSession::call). It then asks the VM for a committed run (Note [Committed runs] in
  // vm.h): when granted, in-place updates write straight into the shared variables, with no
  // private copy per call, and a stop that arrives after the first of them waits for the end of
  // the run, so the parameters are never half-updated.
  struct BeginOptions {
    bool runToEnd = false;
  };
  Execution begin(const std::vector<Tensor>& args, BeginOptions options);

  const FunctionGraph& graph() const;
  const std::vector<VarPtr>& inputs() const;   // the graph's inputs (clones of the given ones)
  const std::vector<VarPtr>& outputs() const;  // the graph's outputs
  // What the optimizer did: every change in order, and the time per phase and per rewrite.
  const std::vector<RewriteRecord>& rewriteLog() const;
  const RewriteProfile& rewriteProfile() const;
  // Seconds compile spent linking (storage plan, kernels, inner programs): the profiler's "link"
  // phase after the optimizer's phases.
  double linkSeconds() const;
  // The mode it was compiled with.
  Mode mode() const;
  // The VM of this function: step()/run() control, storage inspection, observers.
  VM& vm();
  // The linked program: schedule, StoragePlan, kernels, child programs of inner graphs.
  const Program& program() const;
  const std::shared_ptr<const Program>& programPtr() const;

 private:
  friend class Execution;
  friend Function compile(const std::vector<VarPtr>&, const std::vector<VarPtr>&,
                          const std::vector<Update>&, CompileOptions);
  struct Impl;
  explicit Function(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

// inputs: free variables (SharedVariables and Constants need not be listed). Throws GraphError
// when an output depends on a free variable that is not an input, TypeError when an update does
// not fit its shared variable.
Function compile(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                 const std::vector<Update>& updates = {}, CompileOptions options = {});

}  // namespace tscope::engine
