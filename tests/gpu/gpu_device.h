#pragma once
// The GPU suites' start (gpu_check.h's SKIP): the device's name, or CTest's "skipped" without one,
// and the CUDA backend registered. startDeviceOrDryRun also honours TSCOPE_GPU_TEST_ON_CPU: set
// (and not "0"), the suite is a dry run whose "device" side runs on the CPU, and it returns true.
#include "engine/backends/cuda/cuda_backend.h"
#include "gpu_check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tscope::gputest {
inline void startDevice() {
  const engine::cuda::CudaStatus status = engine::cuda::cudaStatus();
  if (!status.deviceFound) SKIP(("no CUDA device: " + status.error).c_str());
  std::printf("device: %s (sm_%d)\n", status.deviceName.c_str(), status.arch);
  engine::cuda::registerCudaBackend();
}

inline bool startDeviceOrDryRun() {
  const char* dry = std::getenv("TSCOPE_GPU_TEST_ON_CPU");
  if (dry != nullptr && *dry != '\0' && std::string(dry) != "0") {
    std::printf("dry run: the device side compiled for the CPU\n");
    return true;
  }
  startDevice();
  return false;
}
}  // namespace tscope::gputest
