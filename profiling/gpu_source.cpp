#include "profiling/cupti_source.h"

namespace tscope::prof {

std::string_view gpuSourceErrorKindName(GpuSourceError::Kind kind) {
  static constexpr std::string_view kNames[] = {"not-built", "cannot-load",   "profiler-conflict",
                                                "no-gpu",    "no-permission", "failed"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(GpuSourceError::Kind::Failed) + 1);
  return kNames[static_cast<std::size_t>(kind)];
}

std::unique_ptr<GpuSource> gpuSourceFor(engine::Device device, CuptiOptions options,
                                        std::string& why) {
  why.clear();
  if (device == engine::Device::Cpu) return nullptr;
  try {
    return makeCuptiSource(std::move(options));
  } catch (const GpuSourceError& e) {
    why = std::string("GPU kernel times are not recorded: ") + e.what();
    return nullptr;
  }
}

#ifndef TSCOPE_HAVE_CUPTI
bool cuptiBuilt() {
  return false;
}

std::unique_ptr<GpuSource> makeCuptiSource(CuptiOptions) {
  throw GpuSourceError(GpuSourceError::Kind::NotBuilt,
                       "GPU profiling is not available: this build has no CUPTI (configure with "
                       "the CUDA toolkit's CUPTI to enable it)");
}
#endif

}  // namespace tscope::prof
