// The names of the VM's states and pause reasons (vm.h).
#include "engine/vm/vm.h"

namespace tscope::engine {

std::string_view statusName(VM::Status status) {
  switch (status) {
    case VM::Status::Idle:
      return "idle";
    case VM::Status::Ready:
      return "ready";
    case VM::Status::Running:
      return "running";
    case VM::Status::Paused:
      return "paused";
    case VM::Status::Finished:
      return "finished";
    case VM::Status::Failed:
      return "failed";
    case VM::Status::Stopped:
      break;
  }
  return "stopped";
}

std::string_view pauseReasonName(VM::PauseReason reason) {
  switch (reason) {
    case VM::PauseReason::None:
      return "none";
    case VM::PauseReason::Requested:
      return "requested";
    case VM::PauseReason::Breakpoint:
      return "breakpoint";
    case VM::PauseReason::Observer:
      return "observer";
    case VM::PauseReason::Step:
      return "step";
    case VM::PauseReason::BreakPointOp:
      break;
  }
  return "breakpoint-op";
}

}  // namespace tscope::engine
