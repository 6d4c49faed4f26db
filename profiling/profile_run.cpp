#include "profiling/profile_run.h"

#include "engine/backends/cpu/gemm.h"
#include "engine/vm/vm.h"
#include "profiling/calibration.h"
#include "profiling/gpu_source.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <thread>

namespace tscope::prof {

namespace {

// Detaches the profiler and restores the VM's timing flag, also when a call throws.
struct Attached {
  engine::VM& vm;
  std::shared_ptr<Profiler> profiler;
  bool timing;
  Attached(engine::VM& v, std::shared_ptr<Profiler> p)
      : vm(v), profiler(std::move(p)), timing(v.timing()) {
    vm.addObserver(profiler);
  }
  ~Attached() {
    vm.removeObserver(*profiler);
    vm.setTiming(timing);
  }
};

// Installs a GPU source's correlation sink and starts it; stops it and restores the VM's sink,
// also when a call throws.
struct GpuAttached {
  engine::VM& vm;
  GpuSource* gpu;
  std::shared_ptr<engine::CorrelationSink> previous;
  GpuAttached(engine::VM& v, GpuSource* g) : vm(v), gpu(g) {
    if (!gpu) return;
    previous = vm.correlationSink();
    gpu->start();
    vm.setCorrelationSink(gpu->correlationSink());
  }
  ~GpuAttached() {
    if (!gpu) return;
    vm.setCorrelationSink(previous);
    try {
      gpu->stop();
    } catch (...) {
      // The records are taken already; a failing stop loses nothing of the profile.
    }
  }
};

// Note [GPU records of a profile]: one measured run's records, attributed and added to p.
void addGpuRun(Profile& p, std::int32_t run, const GpuActivity& activity,
               const NodeKeyTable& keys) {
  const GpuAttribution at = correlate(activity, keys);
  addGpuTimes(p, at);
  GpuSummary& g = *p.gpu;
  g.kernels += static_cast<std::int64_t>(activity.kernels().size());
  g.memcpys += static_cast<std::int64_t>(activity.memcpys().size());
  g.memsets += static_cast<std::int64_t>(activity.memsets().size());
  g.unattributed += at.unattributed.records();
  g.unattributedSeconds += static_cast<double>(at.unattributed.gpuNs()) * 1e-9;
  g.dropped += activity.counts().droppedBySource + activity.counts().droppedByBudget;
  g.invalidTimestamps += activity.counts().invalidTimestamps;
  const auto& kernels = activity.kernels();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const KernelRecord& r = kernels[k];
    if (!r.timed()) continue;
    GpuEventRecord e;
    e.kind = GpuEventRecord::Kind::Kernel;
    e.run = run;
    const std::int64_t n = k < at.kernelNode.size() ? at.kernelNode[k] : -1;
    if (n >= 0) {
      const NodeKey& key = at.nodes[static_cast<std::size_t>(n)].node;
      e.node = static_cast<std::int32_t>(p.find(key.framePath, key.id));
    }
    e.name = r.name;
    e.device = static_cast<std::int32_t>(r.device);
    e.stream = static_cast<std::int32_t>(r.stream);
    e.startNs = r.startNs - p.originNs;
    e.endNs = r.endNs - p.originNs;
    p.gpuEvents.push_back(std::move(e));
  }
  auto copyName = [](MemcpyKind kind) { return "memcpy " + std::string(memcpyKindName(kind)); };
  for (const MemcpyRecord& r : activity.memcpys()) {
    if (!r.timed()) continue;
    p.gpuEvents.push_back({GpuEventRecord::Kind::Memcpy, run, -1, copyName(r.kind),
                           static_cast<std::int32_t>(r.device), static_cast<std::int32_t>(r.stream),
                           r.startNs - p.originNs, r.endNs - p.originNs,
                           static_cast<std::int64_t>(r.bytes)});
  }
  for (const MemsetRecord& r : activity.memsets()) {
    if (!r.timed()) continue;
    p.gpuEvents.push_back({GpuEventRecord::Kind::Memset, run, -1, "memset",
                           static_cast<std::int32_t>(r.device), static_cast<std::int32_t>(r.stream),
                           r.startNs - p.originNs, r.endNs - p.originNs,
                           static_cast<std::int64_t>(r.bytes)});
  }
}

}  // namespace

Profile profileFunction(engine::Function& f, const std::vector<engine::Tensor>& args,
                        const ProfileRunOptions& options) {
  if (options.warmup < 0 || options.runs <= 0)
    throw std::invalid_argument(
        "profileFunction: expected warmup >= 0 and runs >= 1, found warmup " +
        std::to_string(options.warmup) + " and runs " + std::to_string(options.runs));
  auto profiler = std::make_shared<Profiler>(options.profiler);
  const std::int64_t total = options.warmup + options.runs;
  GpuSource* gpu = options.gpu;
  std::vector<GpuActivity> gpuRuns;
  {
    Attached attached(f.vm(), profiler);
    GpuAttached gpuAttached(f.vm(), gpu);
    std::int64_t done = 0;
    profiler->setMeasuring(false);
    for (std::int64_t i = 0; i < options.warmup; ++i) {
      f(args);
      if (options.progress) options.progress(++done, total);
    }
    if (gpu) {
      gpu->flush();
      (void)gpu->takeActivity();  // the warm-up's records
    }
    profiler->setMeasuring(true);
    for (std::int64_t i = 0; i < options.runs; ++i) {
      const std::int64_t start = profiler->now();
      f(args);
      const std::int64_t end = profiler->now();
      profiler->recordCallSpan(start, end);
      if (gpu) {
        gpu->flush();
        gpuRuns.push_back(gpu->takeActivity());
      }
      if (options.progress) options.progress(++done, total);
    }
    profiler->setMeasuring(false);
  }
  Profile p = profiler->snapshot(f);
  if (gpu) {
    p.gpu = GpuSummary{std::string(gpu->name())};
    for (std::size_t r = 0; r < gpuRuns.size(); ++r)
      addGpuRun(p, static_cast<std::int32_t>(r), gpuRuns[r], gpu->nodeKeys());
    std::stable_sort(
        p.gpuEvents.begin(), p.gpuEvents.end(),
        [](const GpuEventRecord& a, const GpuEventRecord& b) { return a.startNs < b.startNs; });
  }
  p.function.threads = engine::cpu::gemmThreads();
  p.machine = thisMachine();
  p.date = utcNow();
  return p;
}

MachineInfo thisMachine() {
  MachineInfo m;
  m.host = hostName();
  m.cpu = cpuModelName();
  m.threads = static_cast<std::int64_t>(std::thread::hardware_concurrency());
  return m;
}

std::string utcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace tscope::prof
