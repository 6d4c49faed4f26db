#pragma once
// Scan: a loop over sequences with recurrent outputs (Theano's scan), executed as VM frames.
//
//   // h[t] = tanh(x[t] W + h[t-1] U), over every row of x:
//   std::vector<VarPtr> h = scan(
//       [&](const std::vector<VarPtr>& a) {      // a = {x[t], h[t-1], W, U}
//         return std::vector<VarPtr>{tanh(dot(a[0], a[2]) + dot(a[1], a[3]))};
//       },
//       {x}, {h0}, {W, U});
//   // Fibonacci, 10 steps, two taps (the initial value holds the two leading rows):
//   VarPtr fib = scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[0] + a[1]};
//   },
//                     {}, {ScanOutputInfo{f01, {-2, -1}}}, {}, 10)[0];
//
// Note [Scan layout] (Theano's conventions):
// - The body gets, in order: for each sequence, one slice per tap (tap d at step t is row
//   t + d - min(taps, 0) of the sequence: taps {-1, +1} give x[t-1], x[t+1] with t counted from
//   the first step that has both); for each recurrent output, one state per tap (tap -2 is the
//   output two steps back); then the non-sequences, whole. It returns one value per outputsInfo
//   entry. An output with taps {-1} starts from an initial value shaped like one step's output;
//   with other taps the initial value holds -min(taps) leading rows (the oldest first). An
//   output without an initial value (ScanOutputInfo::none()) is not fed back.
// - The number of steps: nSteps when given (a constant or a 0-d integer variable; the sequences
//   may be longer, never shorter), else the shortest sequence's (rows - span of its taps).
// - Each output is every step's value stacked on a new leading axis ([steps, ...]); the initial
//   rows are not part of it. Store::Last (internal, the gradient's accumulators) keeps only the
//   final state instead.
// - strict: every outer variable the body uses must be given as a sequence, an initial value or a
//   non-sequence (GraphError naming the variable). Without strict, the free and shared variables
//   the body uses become non-sequences after the given ones. Constants stay inside the body.
// - Bad input is refused naming the scan and the argument: a body output whose type differs
//   from its initial value (TypeError at construction), wrong taps (empty, repeated, a
//   non-negative output tap), a sequence shorter than the steps, an initial value with the wrong
//   number of rows (at run time, the node's failure).
//
// Note [Scan execution]: the op is a LoopBody (engine/graph/loop_body.h): compile links the
// body into a child program and the VM runs it once per step in one frame whose FrameInfo and
// NodeEvents carry the iteration (Note [Loop frames] in engine/vm/vm.h), so the debugger steps
// into iteration k, breakpoints filter on it, NanGuard names it and the profiler times each one.
// loopBegin allocates every stacked output once ([steps + initial rows, ...]); each step's body
// inputs are views into the sequences and into those buffers, and its outputs are copied into
// their row, so no stacked output is allocated per step. perform, the reference, runs the same
// protocol with evaluateGraph.
//
// Note [Scan gradient]: backpropagation through time is another Scan over the reversed sequences
// (the forward inputs, the forward outputs with their initial rows, and the output gradients),
// whose body is the gradient of the forward body; the gradients of the initial values and of the
// non-sequences are recurrent accumulators of that Scan, and the sequences' gradients its stacked
// outputs, put back in time order. truncateGradient = k > 0 runs it over the last k steps only
// (the initial values then get a gradient only when the loop has at most k steps). The R-op is a
// Scan that carries the tangents next to the forward values.
//
// props: {"label", "body": GRAPH, "seq_taps": [[int]], "out_taps": [[int] | null],
//         "out_last": [bool], "n_nonseqs": int, "truncate_gradient": int}.
// The node's inputs: nSteps (0-d int64; -1: from the sequences), the sequences, the initial values
// of the recurrent outputs (in output order), the non-sequences.

#include "engine/graph/function_graph.h"
#include "engine/graph/loop_body.h"
#include "engine/graph/op.h"

#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace tscope::engine {

class OpRegistry;

struct ScanSequence {
  VarPtr input;
  std::vector<int> taps{0};
  ScanSequence(VarPtr x) : input(std::move(x)) {}  // NOLINT: implicit by design
  ScanSequence(VarPtr x, std::vector<int> t) : input(std::move(x)), taps(std::move(t)) {}
};

struct ScanOutputInfo {
  VarPtr initial;  // null: the output is not fed back (taps unused)
  std::vector<int> taps{-1};
  ScanOutputInfo(VarPtr init) : initial(std::move(init)) {}  // NOLINT: implicit by design
  ScanOutputInfo(VarPtr init, std::vector<int> t) : initial(std::move(init)), taps(std::move(t)) {}
  static ScanOutputInfo none() { return ScanOutputInfo(nullptr, {}); }
};

// The number of steps: absent (from the sequences), a constant, or a 0-d integer variable.
struct ScanSteps {
  std::optional<std::int64_t> value;
  VarPtr var;
  ScanSteps() = default;
  ScanSteps(std::int64_t n) : value(n) {}     // NOLINT: implicit by design
  ScanSteps(int n) : value(n) {}              // NOLINT
  ScanSteps(VarPtr v) : var(std::move(v)) {}  // NOLINT
};

struct ScanOptions {
  std::string label = "scan";
  bool strict = false;  // Note [Scan layout]
};

// The body: the inner inputs of one step in the order of Note [Scan layout], one result per
// outputsInfo entry.
using ScanFn = std::function<std::vector<VarPtr>(const std::vector<VarPtr>& args)>;

// One Scan node; returns one stacked output per outputsInfo entry. Throws TypeError/GraphError
// naming the scan and the argument (Note [Scan layout]).
std::vector<VarPtr> scan(const ScanFn& fn, const std::vector<ScanSequence>& sequences,
                         const std::vector<ScanOutputInfo>& outputsInfo,
                         const std::vector<VarPtr>& nonSequences = {}, ScanSteps nSteps = {},
                         int truncateGradient = -1, const ScanOptions& options = {},
                         std::source_location site = std::source_location::current());

class Scan final : public Op, public LoopBody {
 public:
  enum class Store { All, Last };
  struct Layout {
    std::vector<std::vector<int>> seqTaps;  // per sequence
    std::vector<std::vector<int>> outTaps;  // per output; empty: not recurrent
    std::vector<Store> outStore;            // per output
    int nNonSeqs = 0;
    int truncateGradient = -1;
  };
  // Throws GraphError/TypeError naming the label: taps, input or output counts, or types that do
  // not fit the body.
  Scan(std::shared_ptr<const FunctionGraph> body, Layout layout, std::string label = "scan");
  ~Scan() override;

  std::string name() const override { return "Scan"; }
  nlohmann::json props() const override { return m_props; }
  std::string str() const override;  // "Scan{label}"
  const std::string& label() const { return m_label; }
  const Layout& layout() const { return m_layout; }
  const FunctionGraph& body() const { return *m_body; }
  const std::shared_ptr<const FunctionGraph>& bodyPtr() const { return m_body; }
  const FunctionGraph* innerGraph() const override { return m_body.get(); }

  // Counts and positions (Note [Scan layout]).
  int nSequences() const { return static_cast<int>(m_layout.seqTaps.size()); }
  int nOutputs() const { return static_cast<int>(m_layout.outTaps.size()); }
  bool isRecurrent(int o) const { return !m_layout.outTaps[static_cast<std::size_t>(o)].empty(); }
  // The node input of output o's initial value (-1: not recurrent); of non-sequence k.
  int initInput(int o) const { return m_initInput[static_cast<std::size_t>(o)]; }
  int nonSeqInput(int k) const { return 1 + nSequences() + m_nRecurrent + k; }
  int nRecurrent() const { return m_nRecurrent; }
  // The node input an inner input stands for (a sequence for its taps, an initial value for its
  // output's states, a non-sequence); the body has no input for nSteps (node input 0).
  int nodeInputOfInner(std::size_t inner) const;
  // -min(taps): the initial rows a recurrent output needs (1 for taps {-1}, given unstacked).
  int initRows(int o) const;
  // Whether the initial value is one state (taps {-1}) rather than stacked leading rows.
  bool initIsState(int o) const;

  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  bool isExecutable() const override { return m_executable; }
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;

  std::unique_ptr<LoopState> loopBegin(const Apply& node,
                                       std::span<const Tensor* const> inputs) const override;
  void loopInputs(LoopState& state, std::int64_t k,
                  std::span<Tensor* const> innerInputs) const override;
  void loopCollect(LoopState& state, std::int64_t k,
                   std::span<const Tensor* const> innerOutputs) const override;
  void loopFinish(LoopState& state, std::span<Tensor* const> outputs) const override;

  // The same loop with another body and layout, the label kept (the rewrites).
  std::shared_ptr<const Scan> with(std::shared_ptr<const FunctionGraph> body, Layout layout) const;

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  // The body's output shapes from the node's input shapes (inferShape), null where unknown.
  std::vector<ShapeExpr> innerOutputShapes(std::span<const ShapeExpr> inputShapes) const;

  std::shared_ptr<const FunctionGraph> m_body;
  Layout m_layout;
  std::string m_label;
  bool m_executable = true;
  int m_nRecurrent = 0;
  std::vector<int> m_initInput;                 // per output
  std::vector<int> m_seqInner, m_outInner;      // first inner input of each sequence, output
  std::vector<const Apply*> m_order;            // the body, topologically (perform)
  std::vector<std::vector<bool>> m_connection;  // [node input][output]
  nlohmann::json m_props;
};

void registerScanOps(OpRegistry& registry);

}  // namespace tscope::engine
