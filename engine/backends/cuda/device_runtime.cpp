#include "engine/backends/cuda/device_runtime.h"

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_error.h"

#include <algorithm>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace tscope::engine::cuda {

namespace {
cudaStream_t asStream(void* s) {
  return static_cast<cudaStream_t>(s);
}
std::once_flag g_once;
CudaRuntime* g_runtime = nullptr;
}  // namespace

Stream::Stream() {
  cudaStream_t s = nullptr;
  TSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  m_stream = s;
}
Stream::~Stream() {
  if (m_stream) cudaStreamDestroy(asStream(m_stream));
}
void Stream::synchronize() const {
  TSCOPE_CUDA_CHECK(cudaStreamSynchronize(asStream(m_stream)));
}

Event::Event() {
  cudaEvent_t e = nullptr;
  TSCOPE_CUDA_CHECK(cudaEventCreate(&e));
  m_event = e;
}
Event::~Event() {
  if (m_event) cudaEventDestroy(static_cast<cudaEvent_t>(m_event));
}
void Event::record(void* stream) {
  TSCOPE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(m_event), asStream(stream)));
}
void Event::synchronize() const {
  TSCOPE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(m_event)));
}
float Event::elapsedSince(const Event& start) const {
  float ms = 0;
  TSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.m_event),
                                         static_cast<cudaEvent_t>(m_event)));
  return ms;
}

// cudaMalloc/cudaFree under the caching allocator: null when the device is full.
class CudaRuntime::RawAllocator final : public RawDeviceAllocator {
 public:
  void* allocate(std::size_t nbytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, nbytes);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-free error state
      return nullptr;
    }
    TSCOPE_CUDA_CHECK(e);
    return p;
  }
  void free(void* ptr) override { TSCOPE_CUDA_CHECK(cudaFree(ptr)); }
};

CudaRuntime::CudaRuntime() : m_cache(KernelCache::defaultDirectory()) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    throw CudaUnavailable(std::string("no CUDA device: ") +
                              (e != cudaSuccess ? cudaGetErrorString(e) : "no device found"),
                          true);
  TSCOPE_CUDA_CHECK(cudaSetDevice(m_device));
  int major = 0, minor = 0;
  TSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m_device));
  TSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, m_device));
  TSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&m_smCount, cudaDevAttrMultiProcessorCount, m_device));
  m_arch = major * 10 + minor;
  m_stream = std::make_unique<Stream>();
  m_raw = std::make_unique<RawAllocator>();
  m_allocator = std::make_unique<CachingDeviceAllocator>(*m_raw);
}

CudaRuntime& CudaRuntime::instance() {
  std::call_once(g_once, [] { g_runtime = new CudaRuntime(); });  // lives to the process's end
  return *g_runtime;
}

bool CudaRuntime::started() {
  return g_runtime != nullptr;
}

void* CudaRuntime::cublas() {
  std::lock_guard lock(m_mutex);
  if (m_cublas == nullptr) {
    cublasHandle_t h = nullptr;
    TSCOPE_CUBLAS_CHECK(cublasCreate(&h));
    TSCOPE_CUBLAS_CHECK(cublasSetStream(h, asStream(stream())));
    m_cublas = h;
  }
  return m_cublas;
}

LoadedKernel CudaRuntime::kernel(const std::string& source, const std::string& name) {
  std::lock_guard lock(m_mutex);
  if (auto it = m_kernels.find(name); it != m_kernels.end()) return it->second;
  // A CUBIN for the device's architecture when NVRTC knows it, else PTX for the newest it knows
  // (the driver compiles that for the device).
  const std::vector<int> archs = nvrtcArchitectures();
  const bool known = std::find(archs.begin(), archs.end(), m_arch) != archs.end();
  const int arch = known ? m_arch : archs.back();
  const std::string key = m_cache.key(source, arch, known);
  void*& library = m_libraries[key];
  if (library == nullptr) {
    std::shared_ptr<const CompiledImage> image = m_cache.get(source, arch, known);
    cudaLibrary_t lib = nullptr;
    TSCOPE_CUDA_CHECK(
        cudaLibraryLoadData(&lib, image->bytes.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    library = lib;
  }
  cudaKernel_t k = nullptr;
  TSCOPE_CUDA_CHECK(cudaLibraryGetKernel(&k, static_cast<cudaLibrary_t>(library), name.c_str()));
  LoadedKernel loaded{reinterpret_cast<const void*>(k)};
  m_kernels.emplace(name, loaded);
  return loaded;
}

void CudaRuntime::launch(const LoadedKernel& k, long long n, void** args, int blockSize) {
  if (n <= 0) return;
  const long long blocks = (n + blockSize - 1) / blockSize;
  const long long cap = static_cast<long long>(std::max(m_smCount, 1)) * 32;
  launchGrid(k, static_cast<unsigned>(std::min(blocks, cap)), static_cast<unsigned>(blockSize),
             args);
}

void CudaRuntime::launchGrid(const LoadedKernel& k, unsigned grid, unsigned block, void** args) {
  TSCOPE_CUDA_CHECK(
      cudaLaunchKernel(k.function, dim3(grid), dim3(block), args, 0, asStream(stream())));
}

std::shared_ptr<void> CudaRuntime::allocate(std::size_t nbytes) {
  CachingDeviceAllocator* cache = m_allocator.get();
  void* p = cache->allocate(nbytes, reinterpret_cast<CachingDeviceAllocator::StreamId>(stream()));
  return std::shared_ptr<void>(p, [cache](void* q) { cache->free(q); });
}

void CudaRuntime::copy(void* dst, const void* src, std::size_t nbytes, Copy kind) {
  const cudaMemcpyKind k = kind == Copy::HostToDevice   ? cudaMemcpyHostToDevice
                           : kind == Copy::DeviceToHost ? cudaMemcpyDeviceToHost
                                                        : cudaMemcpyDeviceToDevice;
  m_copies[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
  m_copyBytes[static_cast<int>(kind)].fetch_add(static_cast<std::int64_t>(nbytes),
                                                std::memory_order_relaxed);
  TSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, k, asStream(stream())));
  // Note [One stream]: the host's bytes may be reused (or read) as soon as this returns.
  if (kind != Copy::DeviceToDevice) m_stream->synchronize();
}

CudaTransferStats CudaRuntime::transferStats() const {
  auto n = [&](Copy k) { return m_copies[static_cast<int>(k)].load(std::memory_order_relaxed); };
  auto b = [&](Copy k) { return m_copyBytes[static_cast<int>(k)].load(std::memory_order_relaxed); };
  CudaTransferStats s;
  s.hostToDevice = n(Copy::HostToDevice);
  s.deviceToHost = n(Copy::DeviceToHost);
  s.deviceToDevice = n(Copy::DeviceToDevice);
  s.hostToDeviceBytes = b(Copy::HostToDevice);
  s.deviceToHostBytes = b(Copy::DeviceToHost);
  s.deviceToDeviceBytes = b(Copy::DeviceToDevice);
  return s;
}

}  // namespace tscope::engine::cuda
