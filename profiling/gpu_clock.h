#pragma once
// HostClockMap: GPU timestamps (CUPTI's clock, CLOCK_REALTIME-based by default) onto the host
// steady clock the CPU source uses (engine/vm/clock.h, steady_clock nanoseconds).
//
//   HostClockMap clock;
//   clock.addSample(steadyBefore, cuptiTimestamp, steadyAfter);  // at start, and at each flush
//   activity.toHostClock(clock);
//
// Note [GPU clock]: we keep offsets measured by reading both clocks, rather than installing
// CUPTI's timestamp callback (cuptiActivityRegisterTimestampCallback), because a sample is plain
// arithmetic that the CPU tests check, works with every CUPTI the loader accepts, and keeps the
// decoder free of a callback on CUPTI's hot path. A sample brackets one GPU clock reading between
// two host readings; its offset is midpoint(host) - gpu, its uncertainty half the bracket. The
// source takes a few readings at a time and keeps the narrowest (CuptiSource::syncClocks);
// readings closer than kMergeNs on the GPU clock are one sample (the narrower bracket wins).
// With several samples over a capture (one per flush), a timestamp between two samples gets the
// offset interpolated linearly between them, so a slow drift between the clocks (NTP slewing
// CLOCK_REALTIME) is followed; before the first or after the last sample the nearest offset is
// used. A step of the realtime clock between two samples is spread over the interval: its error
// is bounded by the step, and the next sample ends it.

#include <cstdint>
#include <vector>

namespace tscope::prof {

class HostClockMap {
 public:
  static constexpr std::int64_t kMergeNs = 1'000'000;

  struct Sample {
    std::int64_t gpuNs = 0;
    std::int64_t offsetNs = 0;       // host = gpu + offset
    std::int64_t uncertaintyNs = 0;  // half the host bracket
    bool operator==(const Sample&) const = default;
  };

  // hostBeforeNs <= hostAfterNs, read around the GPU reading gpuNs (> 0). A zero GPU reading
  // (CUPTI without a driver) or a reversed bracket is ignored: returns false.
  bool addSample(std::int64_t hostBeforeNs, std::int64_t gpuNs, std::int64_t hostAfterNs);
  bool empty() const { return m_samples.empty(); }
  const std::vector<Sample>& samples() const { return m_samples; }  // by gpuNs
  // gpuNs on the host clock; 0 (an invalid timestamp) stays 0, and with no sample the value is
  // returned unchanged.
  std::int64_t toHost(std::int64_t gpuNs) const;

 private:
  std::vector<Sample> m_samples;
};

}  // namespace tscope::prof
