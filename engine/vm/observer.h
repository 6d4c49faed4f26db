#pragma once
// ExecutionObserver: called around each node a VM runs. The profiler, NanGuard, the debugger, and
// DebugMode observe executions this way (Chainer's function hooks, PyTorch's forward hooks).
//
// Note [Node events]: every call gets one NodeEvent, for outer nodes and for the nodes of inner
// frames alike (an OpFromGraph body: framePath names the outer nodes it runs inside).
// - beforeNode: the inputs hold the values the node will read; the outputs hold what their slots
//   held before (undefined, or the previous call's buffer with keepBuffers).
// - afterNode: the node ran; its inputs are still in their slots (an input the node destroyed
//   holds what the node wrote), every output is there, read or not. Slots the plan frees after
//   the node are freed only once every observer ran. afterNode callbacks run in the reverse order
//   of beforeNode, so an observer that brackets a node (a timer) nests around the others.
// - A node with an inner graph gets beforeNode when its frame is entered and afterNode when it
//   returns, its inner nodes' events in between.
// - t0 and t1 (steady-clock nanoseconds) are set around the kernel when the VM's timing flag is
//   on (VMOptions::timing), else 0; in beforeNode t1 is 0.
// - Pointers in an event are valid only during the call. A value kept beyond it is a snapshot
//   (Tensor::clone), never the slot's tensor: the VM may reuse or overwrite that buffer.
//
// An observer may call vm.requestPause() from any callback: the VM stops at the next node
// boundary. To stop *before* a node, pauseBefore returns true. An observer that throws fails the
// execution (VM::Status::Failed) with its exception.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>

namespace tscope::engine {

class Apply;
class Tensor;
class VM;

struct NodeEvent {
  // The outer node ids of the frames this node runs in, outermost first; empty at the top level.
  std::span<const std::int64_t> framePath;
  // The node's index in its frame's schedule (vm.schedule() at the top level).
  std::size_t position = 0;
  const Apply& node;
  std::span<const Tensor* const> inputs;   // one per node input
  std::span<const Tensor* const> outputs;  // one per node output
  std::int64_t t0 = 0, t1 = 0;             // Note [Node events]
  // One per framePath entry: the iteration of that frame when its caller is a loop (a Scan runs
  // its body once per step, Note [Loop frames] in engine/vm/vm.h), else -1. Empty at the top
  // level.
  std::span<const std::int64_t> iterations = {};

  // Nesting depth: 0 for the top level.
  std::size_t depth() const { return framePath.size(); }
  // The iteration of the innermost loop frame this node runs in, -1 when none.
  std::int64_t iteration() const {
    for (std::size_t k = iterations.size(); k-- > 0;)
      if (iterations[k] >= 0) return iterations[k];
    return -1;
  }
};

class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // A new execution starts (inputs are set, nothing has run).
  virtual void onStart(VM&) {}
  // Asked at the node boundary before beforeNode: true stops the VM before the node runs (a
  // breakpoint's verdict). When the VM resumes at that node, it does not ask again.
  virtual bool pauseBefore(const VM&, const NodeEvent&) { return false; }
  virtual void beforeNode(VM&, const NodeEvent&) {}
  virtual void afterNode(VM&, const NodeEvent&) {}
  // The node of `event` (or an observer's callback for it) threw; the VM is now Failed. Called
  // for every observer, in order; an exception from onError is ignored (the first one stands).
  virtual void onError(VM&, const NodeEvent&, const std::exception_ptr&) {}
  // The last node ran.
  virtual void onFinish(VM&) {}
  // Note [Passive observers]: false for an observer that only watches (the profiler): it never
  // pauses, stops or fails an execution (no requestPause/requestStop, pauseBefore always false,
  // no exception). A plain Function call with only passive observers keeps its in-place parameter
  // updates, as a call without observers does (Note [Parameters stay whole] in function.cpp).
  virtual bool mayInterrupt() const { return true; }
};

}  // namespace tscope::engine
