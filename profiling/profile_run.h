#pragma once
// profileFunction: profiles a compiled Function over warm-up and measured calls and returns the
// Profile (what `tensorscope profile` runs).
//
//   engine::Function f = engine::compile({x}, {y}, {}, {.mode = engine::Mode::FastRun});
//   prof::Profile p = prof::profileFunction(f, {xValue}, {.warmup = 2, .runs = 50});
//   prof::writeChromeTrace(p, "trace.json");

#include "engine/compile/function.h"
#include "profiling/profile.h"
#include "profiling/profiler.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tscope::prof {

class GpuSource;

struct ProfileRunOptions {
  std::int64_t warmup = 1, runs = 10;
  ProfilerOptions profiler;
  std::function<void(std::int64_t done, std::int64_t total)> progress;  // may be empty
  // Note [GPU records of a profile]: with a GPU source (profiling/gpu_source.h), its correlation
  // sink is installed on f's VM, the source is started before the first call and stopped after
  // the last, flushed after every call (warm-up records are dropped), and each measured run's
  // records are attributed to the nodes that launched them: NodeProfile::gpuSeconds and
  // gpuKernels, Profile::gpu and Profile::gpuEvents (the trace's GPU tracks). start() throws
  // GpuSourceError before any call is made.
  GpuSource* gpu = nullptr;
  // Where profileGraph compiles the nodes to run (CompileOptions::device).
  engine::Device device = engine::Device::Cpu;
};

// Attaches a Profiler to f's VM, makes `warmup` calls then `runs` measured calls of f(args),
// detaches it, and returns the profile (name/date/machine filled; name is left empty for the
// caller). A failing call propagates its exception with nothing half-applied (Function guarantees
// updates are all-or-nothing) and the profiler detached. Throws std::invalid_argument for
// negative counts or runs == 0.
Profile profileFunction(engine::Function& f, const std::vector<engine::Tensor>& args,
                        const ProfileRunOptions& options = {});

// This machine: host name, CPU model (/proc/cpuinfo), hardware threads.
MachineInfo thisMachine();
// The current time as ISO 8601 UTC ("2026-12-02T03:24:50Z").
std::string utcNow();

}  // namespace tscope::prof
