#pragma once
// Cancellation inside long kernels: VM::requestStop() (any thread) asks the VM to stop; the VM
// checks the request between nodes, and a long CPU kernel checks it in its outer loop:
//
//   for (std::int64_t block = 0; block < blocks; ++block) {
//     throwIfCancelled();  // a relaxed load of one flag, when the VM runs on this thread
//     ...one block of work...
//   }
//
// Note [Cancellation seam]: while the VM drives kernels on a thread (VM::run, the steps), a
// CancellationScope makes that thread's cancellation flag the VM's stop flag. A kernel that sees
// it set throws ExecutionCancelled; the VM then stops (VM::Status::Stopped): the node's outputs
// are discarded, a node that overwrites an input in place has written into a copy or into a
// buffer only this execution holds (Note [Parameters stay whole] in function.cpp), and no update
// is ever applied. Outside a VM (a kernel called directly, a worker thread of a thread pool) the
// flag is null and the checks never fire. Only loops whose every iteration does far more work
// than one load check (a GEMM block of millions of multiply-adds, one image of a convolution).

#include <atomic>
#include <stdexcept>

namespace tscope::engine {

// Thrown by a kernel that saw a stop request; the VM turns it into Status::Stopped.
class ExecutionCancelled : public std::runtime_error {
 public:
  ExecutionCancelled() : std::runtime_error("the execution was stopped (VM::requestStop)") {}
};

namespace detail {
inline thread_local const std::atomic<bool>* t_cancelFlag = nullptr;
}

// True when the VM that runs on this thread was asked to stop.
inline bool cancellationRequested() noexcept {
  const std::atomic<bool>* flag = detail::t_cancelFlag;
  return flag != nullptr && flag->load(std::memory_order_relaxed);
}

inline void throwIfCancelled() {
  if (cancellationRequested()) throw ExecutionCancelled();
}

// Makes `flag` this thread's cancellation flag for its lifetime (nests: restores the previous).
class CancellationScope {
 public:
  explicit CancellationScope(const std::atomic<bool>* flag) noexcept
      : m_previous(detail::t_cancelFlag) {
    detail::t_cancelFlag = flag;
  }
  ~CancellationScope() { detail::t_cancelFlag = m_previous; }
  CancellationScope(const CancellationScope&) = delete;
  CancellationScope& operator=(const CancellationScope&) = delete;

 private:
  const std::atomic<bool>* m_previous;
};

}  // namespace tscope::engine
