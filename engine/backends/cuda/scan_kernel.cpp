// Note [Device scans] (engine/debug/nan_scan.h): NanGuard's quick pass over a device value, on
// the device. One kernel per float dtype (elemwise_codegen.cpp's generateScan), a 16-byte result
// from the caching allocator zeroed on the stream, and a 16-byte copy back (which synchronises the
// stream: Note [One stream]).
#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/backends/cuda/kernels.h"

#include <cstring>
#include <cuda_runtime.h>
#include <map>
#include <mutex>

namespace tscope::engine::cuda {

namespace {
const GeneratedSource& scanSource(DType dtype) {
  static std::mutex mutex;
  static std::map<DType, GeneratedSource> sources;
  std::lock_guard lock(mutex);
  auto it = sources.find(dtype);
  if (it == sources.end()) it = sources.emplace(dtype, generateScan(dtype)).first;
  return it->second;
}
}  // namespace

bool CudaRuntime::scan(const Tensor& t, Scan& out) {
  const DType d = t.dtype();
  if (t.device() != Device::Cuda ||
      (d != DType::Float16 && d != DType::Float32 && d != DType::Float64))
    return false;
  out = Scan{};
  if (t.numel() == 0) return true;
  Tensor c;
  try {
    c = deviceContiguous(t);
  } catch (const std::invalid_argument&) {
    return false;  // no device copy kernel for this view: the caller reads a host copy
  }
  const GeneratedSource& g = scanSource(d);
  const LoadedKernel k = kernel(g.source, g.name);
  const std::shared_ptr<void> result = allocate(16);
  void* r = result.get();
  TSCOPE_CUDA_CHECK(cudaMemsetAsync(r, 0, 16, static_cast<cudaStream_t>(stream())));
  long long n = c.numel();
  const void* p = c.rawData();
  void* args[] = {&n, &p, &r};
  launch(k, n, args);
  unsigned char bytes[16];
  copy(bytes, r, sizeof bytes, Copy::DeviceToHost);
  if (d == DType::Float64) {
    unsigned long long flag = 0, bits = 0;
    std::memcpy(&flag, bytes, 8);
    std::memcpy(&bits, bytes + 8, 8);
    double m = 0;
    std::memcpy(&m, &bits, 8);
    out.nonFinite = flag != 0;
    out.maxAbs = m;
  } else {
    unsigned int flag = 0, bits = 0;
    std::memcpy(&flag, bytes, 4);
    std::memcpy(&bits, bytes + 4, 4);
    float m = 0;
    std::memcpy(&m, &bits, 4);
    out.nonFinite = flag != 0;
    out.maxAbs = m;
  }
  return true;
}

}  // namespace tscope::engine::cuda
