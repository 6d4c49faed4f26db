#pragma once
// NanGuard: an ExecutionObserver that checks every value an execution computes for NaN, +Inf,
// -Inf and "big" (max|x| > threshold) values, names the node that created the first bad value
// (Note [Root-cause chain] in nan_report.h), and raises, warns or pauses.
//
//   auto guard = std::make_shared<debug::NanGuard>(debug::NanGuardOptions{
//       .allow = {debug::AllowRule::parse("scope:attention/mask:-inf")}});
//   Function f = compile({x}, {loss}, updates, {.mode = Mode::FastRun, .observers = {guard}});
//   guard->watch(f);                       // name fused nodes as the graph that was built
//   try { f({x0}); } catch (const debug::NanGuardError& e) { std::cerr << e.report().toText(); }
//
// Note [What NanGuard checks]: the graph's inputs and shared values at onStart (before any node),
// every node output in afterNode, inner frames included (OpFromGraph bodies: the report carries
// the frame path), and therefore every update before Function writes it (an update is a graph
// output: its report says "update of W"). Integer and bool values are never NaN or infinite and
// get "big" only with bigForIntegers (random integer ops draw large values on purpose). A node
// that produced a bad value from finite inputs is recorded at once with the input elements it
// read (a value summary per variable is kept for the rest of the call, never the values), so the
// chain is complete even when the bad value is allowed or its check is off and only turns into a
// reported NaN later.
//
// Note [NanGuard actions]: Raise throws NanGuardError from the callback, which fails the
// execution; Function's Note [Parameters stay whole] leaves every shared variable as it was
// before the call (inplace updates included). Warn collects every event (up to maxEvents) and
// lets the call go on. Pause keeps the report (takePauseReport) and asks the VM to pause after
// the node (VM::requestPause), so a DebugSession tells a NanGuard pause from others; once per
// call: the values the bad one flows into after a resume are recorded as events, not paused on.
//
// Threads: the callbacks run on the VM's thread; events(), takePauseReport() and the counters
// may be read from any thread. setOptions and watch must not race with a running call.

#include "engine/debug/lineage.h"
#include "engine/debug/nan_report.h"
#include "engine/tensor/dtype.h"
#include "engine/tensor/tensor.h"
#include "engine/vm/observer.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace tscope::engine {
class Apply;
class Op;
class Function;
class FunctionGraph;
class Variable;
class Tensor;
}  // namespace tscope::engine

namespace tscope::engine::debug {

// An expected non-finite value: the checks it allows on the values a node (by id, in the graph
// that runs or the original one through the rewrite log), a variable (by name), an op (its name
// "Elemwise" or its str "Elemwise{log}") or a scope (the path and everything under it) produces.
struct AllowRule {
  enum class Kind { Node, Variable, Op, Scope };
  Kind kind = Kind::Scope;
  std::int64_t nodeId = -1;  // Kind::Node
  std::string target;        // the name, op or scope path
  NanChecks checks = 0;
  // "[node:|var:|op:|scope:]TARGET:CHECKS" (scope when no kind is given), CHECKS as
  // parseChecks: "scope:attention/mask:-inf", "node:42:nan,inf", "op:Elemwise{log}:all".
  // Throws std::invalid_argument naming the spec and what is wrong.
  static AllowRule parse(std::string_view spec);
  std::string str() const;
  bool matchesScope(std::string_view scope) const;
};

enum class NanAction { Raise, Warn, Pause };
std::string_view actionName(NanAction action);
// "raise", "warn", "pause"; throws std::invalid_argument otherwise.
NanAction parseAction(std::string_view text);

struct NanGuardOptions {
  NanChecks checks = kAllNanChecks;
  // "big": max|x| > the threshold of the value's dtype: bigThresholds[dtype] when given, else
  // 1e4 for float16 (its largest finite value is 65504), else bigThreshold.
  double bigThreshold = 1e10;
  std::map<DType, double> bigThresholds;
  bool bigForIntegers = false;
  NanAction action = NanAction::Raise;
  std::vector<AllowRule> allow;
  bool checkInputs = true;       // the graph inputs and shared values at the call's start
  std::size_t maxEvents = 1000;  // Warn: events kept beyond this are counted, not stored
  // Note [Inplace inputs]: copy the inputs an elementwise node (Elemwise, Composite) overwrites
  // in place before it runs, so the creator's report shows what it read and a fused creator is
  // named; off saves one copy per inplace elementwise node and call.
  bool explainInplace = true;
  // Note [Provably clean outputs] (value_bounds.h): an output whose bound, from its inputs' max |x|
  // and its op, proves it finite and not big is not scanned (and its inplace inputs not copied).
  bool proveClean = true;
  // When set, the first event of a call writes a replayable .tsg there (engine/debug/failure.h):
  // the graph with the inputs and shared values of the call's start as test values.
  std::string saveFailure;
  // Throws std::invalid_argument for a threshold <= 0 or NaN, or an allow rule without checks.
  void validate() const;
  double thresholdFor(DType dtype) const;
};

class NanGuardError : public std::runtime_error {
 public:
  explicit NanGuardError(NanReport report);
  const NanReport& report() const { return m_report; }

 private:
  NanReport m_report;
};

class NanGuard : public ExecutionObserver {
 public:
  explicit NanGuard(NanGuardOptions options = {});
  ~NanGuard() override;

  // Names nodes as the user built them: rewritten and fused nodes through f's rewrite log
  // (NodeLineage), and, when the original graph is given (ids as compile's clone kept them: a
  // loaded .tsg's graph, or a FunctionGraph adopting the user's nodes), with the original node's
  // op, scope, site and gradient origin. Both must outlive the guard's use with f. Also the graph
  // a replay file saves (NanGuardOptions::saveFailure). Calls of other functions are checked
  // without these names.
  void watch(const Function& f, const FunctionGraph* original = nullptr);
  void setOptions(NanGuardOptions options);
  const NanGuardOptions& options() const { return m_options; }
  // Off: every callback returns at once.
  void setEnabled(bool on) { m_enabled.store(on, std::memory_order_relaxed); }
  bool enabled() const { return m_enabled.load(std::memory_order_relaxed); }

  // Every event since construction or reset() (Warn stores all, Raise and Pause theirs too).
  std::vector<NanReport> events() const;
  std::size_t eventCount() const;  // including events beyond maxEvents
  // The report of the last Pause, once; nullopt when the guard asked for no pause since.
  std::optional<NanReport> takePauseReport();
  bool hasPauseReport() const;
  void reset();
  // Executions started and values scanned (for tests and the benchmark).
  std::uint64_t calls() const { return m_calls.load(std::memory_order_relaxed); }
  std::uint64_t valuesChecked() const { return m_checked.load(std::memory_order_relaxed); }
  // Of those, the values proven clean without a scan (Note [Provably clean outputs]).
  std::uint64_t valuesProven() const { return m_proven.load(std::memory_order_relaxed); }
  // The path the last replay file was written to (empty when none).
  std::string lastFailureFile() const;

  void onStart(VM& vm) override;
  void beforeNode(VM& vm, const NodeEvent& event) override;
  void afterNode(VM& vm, const NodeEvent& event) override;
  void onFinish(VM& vm) override;
  // Note [Guarded updates]: with the Raise action the guard keeps the parameters whole itself (a
  // raise puts back what an in-place update overwrote), so a plain call need not copy them; Pause
  // hands the stop to whoever drives the VM, which needs Function's copies.
  bool mayInterrupt() const override { return m_options.action == NanAction::Pause; }
  // Shared values the guard copied before an in-place update (Note [Guarded updates]).
  std::uint64_t parameterCopies() const { return m_guardCopies.load(std::memory_order_relaxed); }

 private:
  struct Record;
  struct GraphInfo;
  void checkValue(VM& vm, const NodeEvent* event, const Variable& var, int output,
                  const Tensor& value, const std::string& where);
  NanReport buildReport(const Record& rec, NanCheck check, const std::string& where);
  void handle(VM& vm, NanReport report);
  NodeRef nodeRef(const Apply& node, std::span<const std::int64_t> frames) const;
  // The lineage of the graph node lies in and that graph as built (null, null when unknown).
  std::pair<const NodeLineage*, const FunctionGraph*> namingFor(const Apply& node) const;
  NanChecks allowedFor(const Apply* node, const Variable& var) const;

  NanGuardOptions m_options;
  std::atomic<bool> m_enabled{true};
  std::shared_ptr<NodeLineage> m_lineage;
  const FunctionGraph* m_watchedGraph = nullptr;
  const FunctionGraph* m_original = nullptr;
  // Per call: a summary of every bad value seen (Note [What NanGuard checks]).
  std::unordered_map<const Variable*, std::shared_ptr<Record>> m_records;
  // Per frame (its caller node id): the last bad record made inside it.
  std::unordered_map<std::int64_t, std::shared_ptr<Record>> m_lastInFrame;
  std::unique_ptr<GraphInfo> m_info;
  // Per node seen: for each output, the inputs it is a declared view of (Note [Views are not
  // scanned]); nodes stay alive while their program runs, and onStart of another graph clears it.
  struct NodeViews {
    const Op* op = nullptr;  // checked with the node: a node address reused by another program
    std::vector<std::vector<int>> of;
    std::vector<int> destroyed;   // inputs an elementwise node overwrites (Note [Inplace inputs])
    std::vector<int> overwrites;  // inputs any in-place node overwrites (Note [Guarded updates])
    bool provable = false;        // mayBound(op): worth a proof before it runs
  };
  std::unordered_map<const Apply*, NodeViews> m_views;
  const NodeViews& viewsOf(const Apply& node);
  // Note [Inplace inputs]: the inputs the running node overwrites, copied before it runs.
  const Apply* m_savedFor = nullptr;
  std::unordered_map<const Apply*, std::vector<Tensor>> m_saved;
  std::vector<Tensor> m_startInputs;  // saveFailure: the call's input values
  // Note [Provably clean outputs]: max |x| of every value found clean in this call, and the proof
  // beforeNode made for the running node (one bound per output, nullopt: scan it).
  std::unordered_map<const Variable*, double> m_bounds;
  const Apply* m_provenFor = nullptr;
  std::vector<std::optional<double>> m_proof;
  void prove(const NodeEvent& e, const NodeViews& views);
  // Note [Guarded updates]: the shared buffers an in-place node at the top level is about to
  // overwrite, copied unless nothing from here on can raise; put back before a raise.
  struct Guarded {
    Tensor shared;  // the shared variable's buffer (a handle on it)
    Tensor copy;    // what it held before the call overwrote it
  };
  std::vector<Guarded> m_guarded;
  std::unordered_map<const Variable*, Tensor> m_guardSpares;
  std::size_t m_tailProvenFrom = static_cast<std::size_t>(-1);
  void guardUpdates(VM& vm, const NodeEvent& e, const std::vector<int>& overwrites);
  bool tailProvable(const VM& vm, std::size_t from);
  void restoreGuarded();
  bool m_savedThisCall = false;
  bool m_reportedThisCall = false;
  bool m_lastCallClean = false;  // the last call finished with the guard on and no event

  mutable std::mutex m_mutex;  // guards what follows
  std::vector<NanReport> m_events;
  std::size_t m_eventCount = 0;
  std::optional<NanReport> m_pauseReport;
  std::string m_lastFailureFile;

  std::atomic<std::uint64_t> m_calls{0};
  std::atomic<std::uint64_t> m_checked{0};
  std::atomic<std::uint64_t> m_proven{0};
  std::atomic<std::uint64_t> m_guardCopies{0};
};

}  // namespace tscope::engine::debug
