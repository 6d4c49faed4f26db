#pragma once
// VM: executes a schedule of Apply nodes one at a time over a storage map (DESIGN.md "Execution").
//
// Note [VM storage]: every variable of the graph has one slot holding a Tensor. Constants are
// loaded once; shared variables and inputs at start(); each node reads its input slots and writes
// its output slots through pointers fixed at construction, so dispatching a node is one virtual
// call with no lookups or allocation. An intermediate is freed after its last reader ran unless
// keepBuffers is set, in which case the op may reuse the previous call's buffer
// (reuseOrAllocate). Outputs of the graph are never freed during a run.

#include "engine/graph/function_graph.h"
#include "engine/tensor/tensor.h"
#include "engine/vm/observer.h"

#include <atomic>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

namespace tscope::engine {

// A node failed while running: names the op, the node id, its creation site and input shapes.
class ExecutionError : public std::runtime_error {
 public:
  ExecutionError(const std::string& message, std::int64_t nodeId)
      : std::runtime_error(message), m_nodeId(nodeId) {}
  std::int64_t nodeId() const { return m_nodeId; }

 private:
  std::int64_t m_nodeId;
};

struct VMOptions {
  bool keepBuffers = false;
};

class VM {
 public:
  enum class Status { Idle, Paused, Finished };

  // graph must outlive the VM; schedule: every node of graph in an executable order.
  VM(const FunctionGraph& graph, std::vector<Apply*> schedule, VMOptions options = {});
  ~VM();
  VM(const VM&) = delete;
  VM& operator=(const VM&) = delete;

  // Begins an execution: inputValues[i] is the value of graph.inputs()[i] (already checked by the
  // caller; shared variables may be given here or are read from their current value when the
  // value is undefined). Resets the program counter.
  void start(std::span<const Tensor> inputValues);
  // Runs the next node; returns false when the schedule is finished (or was never started).
  bool step();
  // Runs until the end or until a pause is requested; returns Finished or Paused.
  Status run();
  // Asks run() to stop after the node now running (thread-safe).
  void requestPause() { m_pauseRequested.store(true, std::memory_order_relaxed); }
  Status status() const { return m_status; }

  const FunctionGraph& graph() const { return m_graph; }
  const std::vector<Apply*>& schedule() const { return m_schedule; }
  // Index of the next node to run.
  std::size_t pc() const { return m_pc; }

  // The current value of a variable of the graph, or null when it is not computed yet or was
  // freed after its last use.
  const Tensor* value(const Variable& var) const;
  // Replaces a value (a monitored value at a pause); filtered against the variable's type.
  void setValue(const Variable& var, const Tensor& value);
  // Note [Update double buffering]: after a finished run with keepBuffers, Function hands the
  // buffer a shared variable held before its update back to the node that computes the update, so
  // the next call writes the new value into it instead of allocating (reuseOrAllocate still checks
  // that nothing else holds the buffer). `input` is the shared variable's graph input, whose slot
  // lets go of the buffer; `computed` is the update's value.
  void recycleBuffer(const Variable& input, const Variable& computed, Tensor buffer);
  // The graph outputs' values after a finished run (moved out of the storage unless keepBuffers).
  std::vector<Tensor> outputValues();

  void addObserver(std::shared_ptr<ExecutionObserver> observer);
  void removeObserver(const ExecutionObserver& observer);
  const std::vector<std::shared_ptr<ExecutionObserver>>& observers() const { return m_observers; }

 private:
  struct Thunk {
    const Op* op;
    const Apply* node;
    std::uint32_t inBegin, nIn, outBegin, nOut;
    std::uint32_t freeBegin, nFree;  // slots freed after this node (none with keepBuffers)
  };
  std::size_t slotOf(const Variable& var) const;
  [[noreturn]] void rethrowWithContext(const Thunk& t, const std::exception& e) const;
  void runNode(const Thunk& t);

  const FunctionGraph& m_graph;
  std::vector<Apply*> m_schedule;
  VMOptions m_options;
  FlatHashMap<const Variable*, std::uint32_t> m_slots;
  std::vector<Tensor> m_storage;
  std::vector<Thunk> m_thunks;
  std::vector<const Tensor*> m_inPtrs;
  std::vector<Tensor*> m_outPtrs;
  std::vector<std::uint32_t> m_freeSlots;
  std::vector<std::uint32_t> m_inputSlots;
  std::vector<std::uint32_t> m_outputSlots;
  // Graph inputs (positions) a node of the schedule overwrites, directly or through views
  // (Note [Overwritten inputs]).
  std::vector<std::size_t> m_overwrittenInputs;
  std::vector<std::shared_ptr<ExecutionObserver>> m_observers;
  std::size_t m_pc = 0;
  Status m_status = Status::Idle;
  std::atomic<bool> m_pauseRequested{false};
};

}  // namespace tscope::engine
