// The CUDA backend in a build without the toolkit (DESIGN.md: "a build without CUDA compiles it
// out with one definition"): says so, registers nothing.
#include "engine/backends/cuda/cuda_backend.h"

namespace tscope::engine::cuda {

namespace {
const char* const kNotBuilt =
    "this build has no CUDA backend (the CUDA toolkit was not found at configure time, or "
    "TSCOPE_ENABLE_CUDA was OFF)";
}

CudaStatus cudaStatus() {
  CudaStatus s;
  s.error = kNotBuilt;
  return s;
}

void registerCudaKernels(KernelRegistry&, DeviceSupport&) {}

void registerCudaBackend() {
  throw CudaUnavailable(kNotBuilt, false);
}

void cudaSynchronize() {}

DeviceMemoryStats cudaMemoryStats() {
  return {};
}

void cudaEmptyCache() {}

CudaTransferStats cudaTransferStats() {
  return {};
}

}  // namespace tscope::engine::cuda
