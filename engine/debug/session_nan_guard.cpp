// DebugSession and NanGuard (engine/debug/nan_guard.h).
//
// Note [NanGuard seam]: a NanGuard with action Pause asks the VM to pause after the offending
// node and keeps its report (NanGuard::takePauseReport); the session classifies such a pause as
// PauseKind::NanGuard with the report in SessionState::nan. The guard is attached with the
// session's other observers (syncObservers). NanGuard comes from branch h-nanguard: until it is
// merged, this file compiles to the "no NanGuard" seam (no pause is a NanGuard pause) and
// DebugSession::setNanGuard is not defined; with nan_guard.h present nothing here changes.
#include "engine/debug/debug_session_impl.h"

#if __has_include("engine/debug/nan_guard.h")
#include "engine/debug/nan_guard.h"
#define TSCOPE_SESSION_HAS_NAN_GUARD 1
#endif

namespace tscope::engine::debug {

#ifdef TSCOPE_SESSION_HAS_NAN_GUARD

std::shared_ptr<const NanReport> DebugSession::Impl::takeNanReport() {
  if (!nanGuard) return nullptr;
  std::optional<NanReport> report = nanGuard->takePauseReport();
  if (!report) return nullptr;
  return std::make_shared<const NanReport>(std::move(*report));
}

std::string DebugSession::Impl::nanSummary(const NanReport& report) {
  return report.summary();
}

std::future<void> DebugSession::setNanGuard(std::optional<NanGuardOptions> options) {
  Impl& s = *m_impl;
  return s.submit<void>([&s, options = std::move(options)] {
    if (s.phase == SessionPhase::Running) refuseInPhase("setNanGuard", s.phase, "no run");
    std::shared_ptr<NanGuard> guard;
    if (options) {
      NanGuardOptions o = *options;
      o.action = NanAction::Pause;
      o.validate();  // std::invalid_argument: nothing changes
      guard = std::make_shared<NanGuard>(std::move(o));
      guard->watch(s.function);
    }
    if (s.nanGuardObserver) s.vm.removeObserver(*s.nanGuardObserver);
    s.nanGuard = guard;
    s.nanGuardObserver = guard;
    if (guard && s.observersAttached) s.vm.addObserver(guard);
  });
}

#else

std::shared_ptr<const NanReport> DebugSession::Impl::takeNanReport() {
  return nullptr;
}

std::string DebugSession::Impl::nanSummary(const NanReport&) {
  return {};
}

#endif

}  // namespace tscope::engine::debug
