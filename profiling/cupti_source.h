#pragma once
// The CUPTI source: CUPTI's activity API as a GpuSource (profiling/gpu_source.h). No CUDA types:
// everything that includes cupti.h is in profiling/cupti/.
//
//   try {
//     auto gpu = makeCuptiSource();   // loads libcupti at run time (Note [CUPTI at run time])
//     gpu->start();
//   } catch (const GpuSourceError& e) {
//     std::cerr << e.what() << "\n";  // "no GPU: ...", "another profiler holds CUPTI ...", ...
//   }
//
// Note [CUPTI at run time]: libcupti is opened with dlopen and its functions called through a
// table, so the tensorscope binary starts, and profiles on the CPU, on machines without CUPTI or
// without a GPU; the build needs only CUPTI's headers. makeCuptiSource tries
// CuptiOptions::library when set (only that file), else the toolkit's soname, the unversioned
// name, and the file the build found; the error names every file tried.

#include "engine/tensor/dtype.h"
#include "profiling/gpu_source.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace tscope::prof {

struct CuptiOptions {
  std::string library;                 // a path to libcupti; empty: the default search
  std::size_t bufferBytes = 4u << 20;  // each activity buffer handed to CUPTI
  std::int64_t maxRecords = GpuActivity::kDefaultMaxRecords;  // the capture budget
  std::function<void()> synchronize;  // called by flush() first (the device's synchronize)
};

// Whether this build has the CUPTI source (TSCOPE_HAVE_CUPTI).
bool cuptiBuilt();
// A stopped CUPTI source; throws GpuSourceError: NotBuilt without CUPTI in the build, CannotLoad
// when libcupti cannot be opened. One CUPTI source records at a time in a process (CUPTI has one
// set of activity callbacks, Note [CUPTI buffers]): starting a second while one records is
// refused (ProfilerConflict).
std::unique_ptr<GpuSource> makeCuptiSource(CuptiOptions options = {});

// The GPU source of a profile of nodes placed on `device` (`tensorscope profile --device cuda`,
// the window's profile on the GPU): null for the CPU; for a GPU, a CUPTI source made with
// `options` (give it the device's synchronize), or null with `why` set ("GPU kernel times are
// not recorded: ...") when CUPTI cannot be made here, so the profile still measures host time
// and the caller shows why the GPU columns are empty.
std::unique_ptr<GpuSource> gpuSourceFor(engine::Device device, CuptiOptions options,
                                        std::string& why);

}  // namespace tscope::prof
