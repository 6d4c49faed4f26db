#pragma once
// The CUDA backend's runtime: the device, its stream, the caching allocator over cudaMalloc, the
// NVRTC kernel cache and the loaded kernels, cuBLAS. Handles are opaque pointers here (no CUDA
// type in this header); the .cpp files of this folder cast them back.
//
// Note [One stream]: every kernel, copy and cuBLAS call of the backend goes to one stream, in the
// order the VM runs the nodes, so no event orders them; a copy to the host synchronises that
// stream before it returns (DeviceMemory::copy's contract). The allocator's blocks belong to that
// stream (Note [Caching allocator]). Stream and Event wrap more for the profiler and tests.

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/nvrtc_compiler.h"
#include "engine/tensor/caching_allocator.h"
#include "engine/tensor/device_memory.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tscope::engine::cuda {

class Stream {
 public:
  Stream();  // a new non-blocking stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void* handle() const { return m_stream; }  // cudaStream_t
  void synchronize() const;

 private:
  void* m_stream = nullptr;
};

class Event {
 public:
  Event();  // with timing
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(void* stream);
  void synchronize() const;
  // Milliseconds from start to this event (both recorded and complete).
  float elapsedSince(const Event& start) const;

 private:
  void* m_event = nullptr;
};

// A kernel loaded from an NVRTC image (cudaLibrary_t / cudaKernel_t).
struct LoadedKernel {
  const void* function = nullptr;  // what cudaLaunchKernel takes
};

class CudaRuntime final : public DeviceMemory {
 public:
  // Throws CudaUnavailable without a device.
  static CudaRuntime& instance();
  static bool started();

  int arch() const { return m_arch; }  // 90 for sm_90
  int smCount() const { return m_smCount; }
  void* stream() const { return m_stream->handle(); }
  void* cublas();  // cublasHandle_t, created on first use, bound to stream()
  CachingDeviceAllocator& allocator() { return *m_allocator; }
  KernelCache& kernelCache() { return m_cache; }

  // Compiles (or finds) source and returns its kernel `name`, loaded once per process.
  LoadedKernel kernel(const std::string& source, const std::string& name);
  // Launches function with grid-stride blocks for n items on the stream.
  void launch(const LoadedKernel& k, long long n, void** args, int blockSize = 256);
  void launchGrid(const LoadedKernel& k, unsigned grid, unsigned block, void** args);

  // DeviceMemory.
  std::shared_ptr<void> allocate(std::size_t nbytes) override;
  void copy(void* dst, const void* src, std::size_t nbytes, Copy kind) override;
  // Note [Device scans]: NanGuard's quick pass on the device (scan_kernel.cpp).
  bool scan(const Tensor& t, Scan& out) override;
  // The copies copy() made, by direction (cuda_backend.h's cudaTransferStats).
  CudaTransferStats transferStats() const;

 private:
  CudaRuntime();
  class RawAllocator;
  int m_device = 0;
  int m_arch = 0;
  int m_smCount = 0;
  std::unique_ptr<Stream> m_stream;
  std::unique_ptr<RawAllocator> m_raw;
  std::unique_ptr<CachingDeviceAllocator> m_allocator;
  KernelCache m_cache;
  std::mutex m_mutex;
  std::unordered_map<std::string, LoadedKernel> m_kernels;
  std::unordered_map<std::string, void*> m_libraries;  // image key -> cudaLibrary_t
  void* m_cublas = nullptr;
  std::atomic<std::int64_t> m_copies[3] = {0, 0, 0};
  std::atomic<std::int64_t> m_copyBytes[3] = {0, 0, 0};
};

}  // namespace tscope::engine::cuda
