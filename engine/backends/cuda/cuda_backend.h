#pragma once
// The CUDA backend's public face (DESIGN.md "Backends"): no CUDA type here, so that anything may
// include it whether or not the toolkit was found. With CUDA the definitions are in tscope_cuda
// (this folder); without, cuda_backend_stub.cpp in tscope_engine says the backend is absent.
//
//   CudaStatus s = cudaStatus();          // built? a device? its name and architecture
//   registerCudaBackend();                // device memory, kernels and placement rules, once
//   compile(in, out, {}, {.mode = Mode::FastRun, .device = Device::Cuda});
//
// docs/gpu.md describes the backend: allocator, streams, NVRTC kernels, placement, tests.

#include "engine/tensor/caching_allocator.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tscope::engine {
class KernelRegistry;
class DeviceSupport;
}  // namespace tscope::engine

namespace tscope::engine::cuda {

struct CudaStatus {
  bool built = false;        // this program has the CUDA backend
  bool deviceFound = false;  // ... and the runtime found a device
  int deviceCount = 0;
  std::string error;       // why there is no device (cudaGetErrorString), or why not built
  std::string deviceName;  // of device 0
  int arch = 0;            // compute capability of device 0 as major*10+minor (90 for sm_90)
};

// Thrown when the backend is needed and cannot run: not built, or no device.
class CudaUnavailable : public std::runtime_error {
 public:
  CudaUnavailable(const std::string& what, bool built) : std::runtime_error(what), m_built(built) {}
  bool built() const { return m_built; }

 private:
  bool m_built;
};

// Asks the runtime; never throws.
CudaStatus cudaStatus();

// Registers the CUDA kernels into kernels and their placement rules into rules. Needs no device:
// a machine without a GPU can see where a graph would be placed.
void registerCudaKernels(KernelRegistry& kernels, DeviceSupport& rules);

// Starts the runtime on device 0 (its stream, the caching allocator, cuBLAS) and registers its
// memory for Device::Cuda (engine/tensor/device_memory.h), then the kernels into
// defaultKernelRegistry() and defaultDeviceSupport(). Once per process; later calls return.
// Throws CudaUnavailable "no CUDA device: <cudaGetErrorString>" without a device, and "this
// build has no CUDA backend" without the toolkit.
void registerCudaBackend();

// Waits until every launch on the backend's stream has finished (a GPU profiler flushes its
// records after it); nothing before registration or without the toolkit.
void cudaSynchronize();

// The caching allocator's figures and its emptyCache (zeros / nothing before registration).
DeviceMemoryStats cudaMemoryStats();
void cudaEmptyCache();

// The copies made through the backend's DeviceMemory since registration (the transfers, the
// lazy host copies of device-resident shared variables, device-to-device clones), by direction:
// the GPU suite counts what crosses PCIe per training step (Note [Device-resident shared
// variables] in engine/rewrite/rules/gpu_placement.h). Zeros before registration.
struct CudaTransferStats {
  std::int64_t hostToDevice = 0, deviceToHost = 0, deviceToDevice = 0;  // copies
  std::int64_t hostToDeviceBytes = 0, deviceToHostBytes = 0, deviceToDeviceBytes = 0;
};
CudaTransferStats cudaTransferStats();

}  // namespace tscope::engine::cuda
