#pragma once
// DebugMode's checks (DESIGN.md "From graph to Function"; REFERENCE.md "DebugMode checks"): an
// ExecutionObserver that checks every node as the VM runs it. Before a node runs it snapshots the
// node's inputs; after it ran it checks the VM's outputs (types, aliasing, inputs left unchanged,
// NaN/Inf) and re-runs the op's perform on copies of the inputs (fresh outputs, garbage-filled
// outputs, non-contiguous inputs), comparing each re-run with the VM's result. Mode::Debug is
// fast_run with this observer attached; any caller can attach one through
// CompileOptions::observers.
//
//   auto checks = std::make_shared<DebugModeObserver>();
//   Function f = compile({x}, {y}, {}, {.observers = {checks}});
//   f({value});  // throws DebugModeError naming the first broken node, check and values
//
// Note [DebugMode never touches the VM's storage]: every re-run works on clones of the snapshot
// taken in beforeNode, never on the VM's tensors: an op that destroys an input has overwritten it
// by the time afterNode runs, and an op that reuses output buffers must find them as the VM left
// them. The observer holds handles to the node's live inputs only between beforeNode and
// afterNode (to see whether the node changed them; no op decides anything from the reference
// count of an input) and none to any output after afterNode, so reuseOrAllocate's "nobody else
// holds the buffer" test sees what it would see without the observer, and a debug run computes
// exactly what a normal run computes.

#include "engine/graph/apply.h"
#include "engine/tensor/tensor.h"
#include "engine/vm/observer.h"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine {

struct DebugModeOptions {
  // Re-run perform on copies of the inputs with fresh (undefined) outputs and compare with the
  // VM's result. For an op that destroys an input, this compares the in-place run with a run of
  // the same op on the inputs as they were before the VM's run.
  bool checkPerformAgain = true;
  // Re-run with output buffers pre-filled with garbage of the right dtype and shape (NaN for
  // floats, 0xCD bytes for integers, true for bools), which perform may reuse: catches an op that
  // reads its output buffer instead of overwriting it.
  bool checkGarbageOutputs = true;
  // Re-run with non-contiguous copies of the inputs (same values): every other element of a larger
  // garbage-filled buffer at an offset, and, for inputs of rank >= 2, the axes laid out in reverse
  // order (a transposed buffer). Catches ops that read raw memory ignoring strides and offset.
  bool checkStrides = true;
  // An input changed although destroyMap() does not declare it.
  bool checkInputsUnchanged = true;
  // An output shares storage with an input that neither viewMap() nor destroyMap() declares for
  // it, or two outputs that view no input share storage.
  bool checkAliasing = true;
  // Each output fits its variable's TensorType (dtype exactly, rank, static dims, device).
  bool checkTypes = true;
  // NaN/Inf in a float output while every float input was finite.
  bool checkNanInf = true;
  // Note [DebugMode tolerances]: re-runs of a deterministic op may still take another code path
  // (a vectorised kernel for contiguous data, a scalar loop for strided data; another summation
  // order in a GEMM), so floats compare with |vm - rerun| <= atol + rtol * |vm| per dtype; NaNs in
  // the same positions are equal, infinities must match exactly. float64 uses rtol/atol (numpy's
  // allclose defaults). float32 is looser: its epsilon is 1.2e-7 and a reordered sum of k terms
  // drifts by about sqrt(k) epsilons of the terms' magnitude, so 1e-4 relative and 1e-5 absolute
  // (Theano's float32 atol). float16 (epsilon 9.8e-4) gets 1e-2 and 1e-3. Integers and bools
  // compare exactly.
  double rtol = 1e-5, atol = 1e-8;
  double float32Rtol = 1e-4, float32Atol = 1e-5;
  double float16Rtol = 1e-2, float16Atol = 1e-3;
  // Throw DebugModeError for the first finding of a node (after recording every finding of that
  // node); when false the run goes on and findings() collects them (a viewer, a report).
  bool raise = true;
};

enum class DebugCheck : std::uint8_t {
  PerformAgain,
  GarbageOutputs,
  Strides,
  InputsUnchanged,
  Aliasing,
  Types,
  NanInf,
};
inline constexpr std::size_t kDebugCheckCount = 7;
// "perform_again", "garbage_outputs", "strides", "inputs_unchanged", "aliasing", "types",
// "nan_inf".
std::string_view debugCheckName(DebugCheck check);

// One finding: which check failed on which node, for which output or input, and the values.
struct DebugModeFinding {
  DebugCheck check = DebugCheck::PerformAgain;
  std::int64_t nodeId = -1;
  std::string op;     // the op's str(): "Elemwise{add,inplace}"
  std::string site;   // the node's creation site, "" when unknown
  std::string scope;  // the node's scope path, "" at the top level
  int output = -1;    // the output concerned, -1 when none
  int input = -1;     // the input concerned, -1 when none
  // What was expected and what was found: shapes, dtypes, the first differing elements with their
  // index and both values.
  std::string detail;

  // "DebugMode check 'aliasing' failed on Foo (node 7), created at x.cpp:12 (f), in scope 'layer1':
  //  output 0 ..."
  std::string message() const;
};

class DebugModeError : public std::runtime_error {
 public:
  explicit DebugModeError(DebugModeFinding finding);
  DebugCheck check() const { return m_finding.check; }
  std::int64_t nodeId() const { return m_finding.nodeId; }
  int output() const { return m_finding.output; }
  int input() const { return m_finding.input; }
  const DebugModeFinding& finding() const { return m_finding; }

 private:
  DebugModeFinding m_finding;
};

// One observer checks one VM run at a time (the VM calls it from the thread that runs it).
class DebugModeObserver final : public ExecutionObserver {
 public:
  explicit DebugModeObserver(DebugModeOptions options = {});

  void onStart(VM& vm) override;
  void beforeNode(VM& vm, const NodeEvent& event) override;
  void afterNode(VM& vm, const NodeEvent& event) override;
  void onFinish(VM& vm) override;

  const DebugModeOptions& options() const { return m_options; }
  // Every finding since construction or the last clearFindings(), in the order found.
  const std::vector<DebugModeFinding>& findings() const { return m_findings; }
  void clearFindings() { m_findings.clear(); }
  // How many nodes were checked, and how many times perform was re-run (the cost of the mode).
  std::size_t nodesChecked() const { return m_nodesChecked; }
  std::size_t reruns() const { return m_reruns; }

 private:
  void reset();
  void checkNode(const Apply& node, std::span<const Tensor> vmOutputs);
  void checkOutputStructure(const Apply& node, int o, std::span<const Tensor> inputs,
                            std::span<const Tensor> outputs);
  void checkOutputPairs(const Apply& node, std::span<const Tensor> inputs,
                        std::span<const Tensor> outputs);
  void checkInputsUnchanged(const Apply& node);
  // Runs perform on `inputs` with `outputs` as the prior output storage; returns the outputs, or
  // records a finding under `check` and returns an empty vector when perform throws.
  // `op` runs instead of the node's own op when given (the out-of-place reference).
  std::vector<Tensor> rerun(const Apply& node, DebugCheck check, const std::string& what,
                            std::span<const Tensor> inputs, std::vector<Tensor> outputs,
                            const Op* op = nullptr);
  void compareWithReference(const Apply& node, DebugCheck check, const std::string& what,
                            std::span<const Tensor> reference, std::span<const Tensor> outputs);
  void addFinding(const Apply& node, DebugCheck check, int output, int input, std::string detail);

  DebugModeOptions m_options;
  // Between beforeNode and afterNode of one node: handles to its live inputs and deep copies.
  const Apply* m_node = nullptr;
  std::vector<Tensor> m_live;
  std::vector<Tensor> m_snapshot;
  bool m_skipNode = false;
  bool m_inputsFinite = true;  // every float input of the node held only finite values
  std::size_t m_firstFindingOfNode = 0;
  // Nodes with an inner graph whose frame is running: their state waits here (Note [Node events]).
  struct Pending {
    const Apply* node;
    std::vector<Tensor> live, snapshot;
    bool skip;
  };
  std::vector<Pending> m_outer;
  std::vector<DebugModeFinding> m_findings;
  std::size_t m_nodesChecked = 0;
  std::size_t m_reruns = 0;
};

}  // namespace tscope::engine
