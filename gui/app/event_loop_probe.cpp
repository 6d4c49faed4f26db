#include "gui/app/event_loop_probe.h"

#include <algorithm>
#include <time.h>

namespace tscope::gui {

namespace {

// The calling thread's CPU time in ms, or -1 where the clock is not available.
double threadCpuMs() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0)
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
#endif
  return -1;
}

}  // namespace

EventLoopProbe::EventLoopProbe(QObject* parent, int intervalMs, double thresholdMs)
    : QObject(parent), m_intervalMs(std::max(1, intervalMs)), m_thresholdMs(thresholdMs) {
  // A coarse timer may fire up to 5% late on purpose; a precise one is late only when the loop is.
  m_timer.setTimerType(Qt::PreciseTimer);
  m_timer.setInterval(m_intervalMs);
  connect(&m_timer, &QTimer::timeout, this, &EventLoopProbe::tick);
}

void EventLoopProbe::start() {
  reset();
  m_timer.start();
}

void EventLoopProbe::stop() {
  if (m_timer.isActive()) tick();  // a stall still in progress counts up to now
  m_timer.stop();
}

bool EventLoopProbe::isRunning() const {
  return m_timer.isActive();
}

void EventLoopProbe::reset() {
  m_clock.start();
  m_lastTickMs = 0;
  m_maxStallMs = 0;
  m_lastCpuMs = threadCpuMs();
  m_maxBusyStallMs = 0;
  m_ticks = 0;
  m_stalls.clear();
  m_delays.clear();
  m_histogram.fill(0);
}

void EventLoopProbe::tick() {
  double now = static_cast<double>(m_clock.nsecsElapsed()) / 1e6;
  double delay = std::max(0.0, now - m_lastTickMs - m_intervalMs);
  m_lastTickMs = now;
  const double cpu = threadCpuMs();
  const double busy = cpu >= 0 && m_lastCpuMs >= 0 ? std::min(delay, cpu - m_lastCpuMs) : delay;
  m_lastCpuMs = cpu;
  ++m_ticks;
  m_maxStallMs = std::max(m_maxStallMs, delay);
  m_maxBusyStallMs = std::max(m_maxBusyStallMs, busy);
  if (delay > m_thresholdMs) m_stalls.push_back({now - delay, delay});
  m_delays.push_back(static_cast<float>(delay));
  auto bucket =
      std::lower_bound(kBucketBounds.begin(), kBucketBounds.end(), delay) - kBucketBounds.begin();
  ++m_histogram[static_cast<std::size_t>(bucket)];
}

int EventLoopProbe::stallCount(double overMs) const {
  return static_cast<int>(
      std::count_if(m_delays.begin(), m_delays.end(), [overMs](float d) { return d > overMs; }));
}

QString EventLoopProbe::summary() const {
  QString text = QStringLiteral("max %1 ms (busy %2 ms), %3 stalls > %4 ms, %5 ticks; delays")
                     .arg(m_maxStallMs, 0, 'f', 1)
                     .arg(m_maxBusyStallMs, 0, 'f', 1)
                     .arg(m_stalls.size())
                     .arg(m_thresholdMs)
                     .arg(m_ticks);
  for (std::size_t i = 0; i < m_histogram.size(); ++i) {
    if (m_histogram[i] == 0) continue;
    QString bound = i < kBucketBounds.size() ? QStringLiteral("<=%1").arg(kBucketBounds[i])
                                             : QStringLiteral(">%1").arg(kBucketBounds.back());
    text += QStringLiteral(" %1: %2").arg(bound).arg(m_histogram[i]);
  }
  return text;
}

}  // namespace tscope::gui
