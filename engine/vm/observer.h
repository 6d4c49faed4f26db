#pragma once
// ExecutionObserver: called before and after each node a VM runs. The profiler, NanGuard, the
// debugger and tests observe executions this way (Chainer's function hooks, PyTorch's forward
// hooks). An observer may ask the VM to pause (VM::requestPause) from any callback; the VM stops
// after the current node with every computed value still inspectable.

#include <cstddef>

namespace tscope::engine {

class Apply;
class VM;

class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // A new execution starts (inputs are set, nothing has run).
  virtual void onStart(VM&) {}
  // position: the node's index in vm.schedule(). Its inputs are available through vm.value().
  virtual void beforeNode(VM&, const Apply&, std::size_t /*position*/) {}
  // The node's outputs are available through vm.value().
  virtual void afterNode(VM&, const Apply&, std::size_t /*position*/) {}
  // The last node ran.
  virtual void onFinish(VM&) {}
};

}  // namespace tscope::engine
