// The VM's loop frames (Note [Loop frames] in vm.h): the start of each iteration and the end of
// the loop. Entering the loop and collecting each iteration are in vm.cpp (enterFrame,
// returnFromFrame).
#include "engine/graph/loop_body.h"
#include "engine/vm/clock.h"
#include "engine/vm/correlation.h"
#include "engine/vm/vm.h"
#include "engine/vm/vm_helpers.h"
#include "engine/vm/vm_internal.h"

namespace tscope::engine {

using vmclock::nowNs;
using namespace vm_detail;

void VM::beginIteration(Frame& f, Frame& c) {
  const Hot& t = f.hot[c.callerPosition];
  try {
    const CorrelationScope correlation(
        m_correlation.get(), std::span<const std::int64_t>(m_path).first(m_path.size() - 1),
        t.node->id());
    t.loop->loopInputs(*c.loop, c.iteration, c.loopIn);
  } catch (const std::exception& e) {
    const std::int64_t k = c.iteration;
    clearFrame(c);
    m_stack.pop_back();
    m_path.pop_back();
    m_iterations.pop_back();
    try {
      rethrowWithContext(f, t, loopFailure(e, k));
    } catch (...) {
      fail(f, std::current_exception(), false);
      throw;
    }
  }
}

void VM::finishLoop(Frame& f, Frame& c) {
  const std::size_t pos = c.callerPosition;
  const Hot& t = f.hot[pos];
  try {
    const CorrelationScope correlation(m_correlation.get(), m_path, t.node->id());
    t.loop->loopFinish(*c.loop, f.outputs(t));
  } catch (const std::exception& e) {
    clearFrame(c);
    try {
      rethrowWithContext(f, t, e);
    } catch (...) {
      fail(f, std::current_exception(), false);
      throw;
    }
  }
  const std::int64_t t0 = c.t0;
  clearFrame(c);
  NodeEvent event = eventFor(f, pos);
  if (m_options.timing) {
    event.t0 = t0;
    event.t1 = nowNs();
    addTiming(f.timing, pos, event.t1 - event.t0);
  }
  ++f.pc;
  if (!m_observers.empty()) {
    notifyObservers(
        m_observers, m_inCallbacks, true, [&](ExecutionObserver& o) { o.afterNode(*this, event); },
        [&](std::exception_ptr e) { fail(f, e, true); });
  }
  if (m_options.retain != Retain::All) freeAfter(f, t, f.program->plan());
}

}  // namespace tscope::engine
