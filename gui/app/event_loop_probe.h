#pragma once
// EventLoopProbe: measures how long the GUI thread's event loop stops turning. A precise timer on
// the probe's thread ticks every `interval` ms; a tick that arrives late means the loop was busy
// (handling one event, laying out, painting) for the delay. The probe keeps the longest stall, the
// stalls above a threshold (with when they began) and a histogram of all delays. Tests assert
// "no stall over 100 ms while loading"; benchmarks print the figures.
//
// It keeps every tick's delay (4 bytes per tick, 200 ticks a second): it is meant for measured
// runs (tests, benchmarks, a diagnostics toggle), not to be left running for days.
// It measures only while the event loop runs: code that blocks the loop (a synchronous wait, a
// long computation) shows up as a stall, which is the point.
//
// Note [Busy stalls]: a late tick also happens when the operating system runs other processes
// instead of the GUI thread (a shared 2-core machine running builds and tests in parallel), which
// says nothing about the application. So the probe also reads the GUI thread's own CPU time at each
// tick: a tick's busy time is the part of its delay the thread spent computing (the smaller of the
// delay and the thread's CPU time since the previous tick). maxBusyStallMs() is what the
// application costs the loop when it computes on the GUI thread; maxStallMs() adds blocking waits
// and the machine's load. Where the thread's CPU clock is not available, busy equals the delay.

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include <array>
#include <vector>

namespace tscope::gui {

class EventLoopProbe : public QObject {
  Q_OBJECT
 public:
  struct Stall {
    double startMs = 0;     // since start()
    double durationMs = 0;  // how much later than expected the tick came
  };
  // Upper bounds (ms) of the histogram's buckets; the last bucket holds everything above.
  static constexpr std::array<double, 8> kBucketBounds{1, 2, 5, 10, 20, 50, 100, 200};

  explicit EventLoopProbe(QObject* parent = nullptr, int intervalMs = 5, double thresholdMs = 50);

  void start();  // clears the figures and starts measuring
  void stop();
  bool isRunning() const;
  void reset();  // clears the figures, keeps running

  double maxStallMs() const { return m_maxStallMs; }
  // The longest delay spent computing on the probe's thread (Note [Busy stalls]).
  double maxBusyStallMs() const { return m_maxBusyStallMs; }
  // The stalls longer than the threshold, in order.
  const std::vector<Stall>& stalls() const { return m_stalls; }
  int stallCount(double overMs)
      const;  // delays longer than `overMs` (any value; from the histogram's raw data)
  std::uint64_t ticks() const { return m_ticks; }
  double thresholdMs() const { return m_thresholdMs; }
  // Delay counts per bucket: [0] <= 1 ms, ..., [7] <= 200 ms, [8] > 200 ms.
  const std::array<std::uint64_t, kBucketBounds.size() + 1>& histogram() const {
    return m_histogram;
  }
  // "max 12.3 ms (busy 11.9 ms), 2 stalls > 50 ms, 4012 ticks; delays <=1: 3900 <=2: 80 ..."
  QString summary() const;

 private:
  void tick();

  QTimer m_timer;
  QElapsedTimer m_clock;
  int m_intervalMs;
  double m_thresholdMs;
  double m_lastTickMs = 0;
  double m_maxStallMs = 0;
  double m_lastCpuMs = 0;  // the thread's CPU time at the previous tick
  double m_maxBusyStallMs = 0;
  std::uint64_t m_ticks = 0;
  std::vector<Stall> m_stalls;
  std::vector<float> m_delays;  // every tick's delay, for stallCount(overMs)
  std::array<std::uint64_t, kBucketBounds.size() + 1> m_histogram{};
};

}  // namespace tscope::gui
