// The shape and indexing kernels (Note [Shape kernels] in shape_codegen.h): Reshape (a view when
// strides allow, else a copy), IncSubtensor, AdvancedSubtensor1 and AdvancedIncSubtensor1, Join,
// Alloc; the device copies, fills and error words the other kernels of this folder share.
#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/backends/cuda/shape_codegen.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/tensor/device_memory.h"
#include "engine/tensor/reshape_strides.h"

#include <cstring>
#include <cuda_runtime.h>
#include <map>
#include <mutex>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
cudaStream_t stream() {
  return static_cast<cudaStream_t>(CudaRuntime::instance().stream());
}

// Generated sources by key, generated once per process.
template <class Make>
const GeneratedSource& cached(const std::string& key, Make make) {
  static std::mutex mutex;
  static std::map<std::string, GeneratedSource> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make()).first;
  return it->second;
}

std::string dt(DType d) {
  return std::string(dtypeName(d));
}

// The index struct of a strided kernel: ndim, size[kMaxRank], stride[operands][kMaxRank].
std::vector<long long> indexStruct(const StridedOperands& s, const char* what) {
  if (s.shape.size() > static_cast<std::size_t>(kMaxRank))
    throw std::invalid_argument(std::string(what) + ": expected at most " +
                                std::to_string(kMaxRank) +
                                " dimensions after merging, found shape " + shapeToString(s.shape));
  std::vector<long long> ix(1 + kMaxRank + s.strides.size() * kMaxRank, 0);
  ix[0] = static_cast<long long>(s.shape.size());
  for (std::size_t d = 0; d < s.shape.size(); ++d) {
    ix[1 + d] = s.shape[d];
    for (std::size_t k = 0; k < s.strides.size(); ++k)
      ix[1 + kMaxRank + k * kMaxRank + d] = s.strides[k][d];
  }
  return ix;
}

void requireDevice(const Tensor& t, const char* what) {
  if (t.device() != Device::Cuda)
    throw std::logic_error(std::string(what) + ": expected a device tensor, found one on " +
                           std::string(deviceName(t.device())));
}

// A copy of x the kernel may overwrite: x itself for an in-place op, else a contiguous copy.
Tensor incOutput(const Tensor& x, bool inplace) {
  return inplace ? x : contiguousCopy(x, x.dtype());
}

long long readElementAsInt(const Tensor& deviceVector, long long k) {
  const Tensor one = toHost(deviceVector.slice(0, k, k + 1)).astype(DType::Int64);
  return one.data<std::int64_t>()[0];
}
}  // namespace

// --- Shared device helpers -----------------------------------------------------------------------

void copyOnDevice(Tensor dst, const Tensor& src, bool add) {
  requireDevice(dst, "CUDA copy");
  requireDevice(src, "CUDA copy");
  if (dst.shape() != src.shape())
    throw std::invalid_argument("CUDA copy: shapes differ, " + shapeToString(dst.shape()) +
                                " and " + shapeToString(src.shape()));
  long long n = dst.numel();
  if (n == 0) return;
  const StridedOperands s = coalesceAxes(dst.shape(), {dst.strides(), src.strides()});
  std::vector<long long> ix = indexStruct(s, "CUDA copy");
  const GeneratedSource& g =
      cached("copy " + dt(dst.dtype()) + " " + dt(src.dtype()) + (add ? " add" : ""),
             [&] { return generateCopy(dst.dtype(), src.dtype(), add); });
  CudaRuntime& rt = CudaRuntime::instance();
  void* d = dst.rawData();
  const void* p = src.rawData();
  void* args[] = {&n, ix.data(), &d, &p};
  rt.launch(rt.kernel(g.source, g.name), n, args);
}

Tensor contiguousCopy(const Tensor& t, DType dtype) {
  Tensor out = emptyOn(Device::Cuda, dtype, t.shape());
  if (t.isContiguous() && t.dtype() == dtype) {
    if (out.nbytes() > 0)
      CudaRuntime::instance().copy(out.rawData(), t.rawData(), out.nbytes(),
                                   DeviceMemory::Copy::DeviceToDevice);
    return out;
  }
  copyOnDevice(out, t);
  return out;
}

void fillOnDevice(Tensor dst, const Tensor& value) {
  requireDevice(dst, "CUDA fill");
  if (value.device() != Device::Cpu || value.numel() != 1)
    throw std::logic_error("CUDA fill: expected a one-element host value, found " +
                           value.toString());
  long long n = dst.numel();
  if (n == 0) return;
  const StridedOperands s = coalesceAxes(dst.shape(), {dst.strides()});
  std::vector<long long> ix = indexStruct(s, "CUDA fill");
  const GeneratedSource& g =
      cached("fill " + dt(dst.dtype()), [&] { return generateFill(dst.dtype()); });
  // The value converted on the host as astype does, passed by value (8 bytes hold any dtype).
  const Tensor v = value.astype(dst.dtype()).contiguous();
  alignas(8) unsigned char bytes[8] = {};
  std::memcpy(bytes, v.rawData(), v.itemSize());
  CudaRuntime& rt = CudaRuntime::instance();
  void* d = dst.rawData();
  void* args[] = {&n, ix.data(), &d, bytes};
  rt.launch(rt.kernel(g.source, g.name), n, args);
}

ErrorWord::ErrorWord() : m_memory(CudaRuntime::instance().allocate(8)) {
  TSCOPE_CUDA_CHECK(cudaMemsetAsync(m_memory.get(), 0xFF, 8, stream()));
}

long long ErrorWord::read() const {
  unsigned long long v = 0;
  CudaRuntime::instance().copy(&v, m_memory.get(), 8, DeviceMemory::Copy::DeviceToHost);
  return v == ~0ull ? -1 : static_cast<long long>(v);
}

// --- Reshape -------------------------------------------------------------------------------------

void reshapeKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const Tensor& x = *inputs[0];
  Shape shape = static_cast<const Reshape&>(op).outputShape(x.shape(), *inputs[1]);
  // Note [Reshape views] in reshape.cpp, as on the CPU: a view whenever strides allow.
  if (std::optional<Strides> strides = reshapeStrides(x.shape(), x.strides(), shape)) {
    *outputs[0] = x.view(std::move(shape), std::move(*strides), x.offset());
    return;
  }
  const Tensor copy = contiguousCopy(x, x.dtype());
  *outputs[0] = copy.view(shape, contiguousStrides(shape), copy.offset());
}

// --- IncSubtensor --------------------------------------------------------------------------------

void incSubtensorKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& inc = static_cast<const IncSubtensor&>(op);
  Tensor out = incOutput(*inputs[0], inc.inplace());
  Tensor region = inc.indices().apply(out, inputs.subspan(2), inc.str());
  copyOnDevice(region,
               shape_detail::broadcastOperand(*inputs[1], region.shape(), inc.str() + ": y"),
               !inc.setInsteadOfInc());
  *outputs[0] = out;
}

// --- AdvancedSubtensor1 --------------------------------------------------------------------------

void advancedSubtensor1Kernel(const Op& op, const Apply& node,
                              std::span<const Tensor* const> inputs,
                              std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const Tensor x = deviceContiguous(*inputs[0]);
  const Tensor idx = deviceContiguous(*inputs[1]);
  if (idx.ndim() != 1)
    throw std::invalid_argument(op.str() + ": idx: expected a 1-d tensor, found shape " +
                                shapeToString(idx.shape()));
  long long nRows = x.shape()[0], nIdx = idx.shape()[0];
  long long rowLen = 1;
  for (std::size_t d = 1; d < x.shape().size(); ++d) rowLen *= x.shape()[d];
  Shape shape = x.shape();
  shape[0] = nIdx;
  Tensor out = emptyOn(Device::Cuda, x.dtype(), shape);
  if (nIdx > 0) {
    ErrorWord bad;
    const GeneratedSource& g = cached("gather " + dt(x.dtype()) + " " + dt(idx.dtype()),
                                      [&] { return generateGather(x.dtype(), idx.dtype()); });
    CudaRuntime& rt = CudaRuntime::instance();
    const void* pi = idx.rawData();
    const void* px = x.rawData();
    void* po = out.rawData();
    void* pb = bad.device();
    void* args[] = {&nIdx, &rowLen, &nRows, &pi, &px, &po, &pb};
    rt.launch(rt.kernel(g.source, g.name), nIdx * std::max(rowLen, 1LL), args);
    // Note [Shape kernels]: the CPU's error for the first index out of range (a synchronisation).
    if (const long long k = bad.read(); k >= 0)
      throw std::out_of_range(op.str() + ": index " + std::to_string(readElementAsInt(idx, k)) +
                              " is out of bounds for axis 0 with size " + std::to_string(nRows));
  }
  *outputs[0] = out;
}

// --- AdvancedIncSubtensor1 -----------------------------------------------------------------------

void advancedIncSubtensor1Kernel(const Op& op, const Apply& node,
                                 std::span<const Tensor* const> inputs,
                                 std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& inc = static_cast<const AdvancedIncSubtensor1&>(op);
  const Tensor& x = *inputs[0];
  const Tensor idx = deviceContiguous(*inputs[2]);
  if (idx.ndim() != 1)
    throw std::invalid_argument(op.str() + ": idx: expected a 1-d tensor, found shape " +
                                shapeToString(idx.shape()));
  long long nRows = x.shape()[0], nIdx = idx.shape()[0];
  long long rowLen = 1;
  for (std::size_t d = 1; d < x.shape().size(); ++d) rowLen *= x.shape()[d];
  Shape region = x.shape();
  region[0] = nIdx;
  const Tensor yb = shape_detail::broadcastOperand(*inputs[1], region, op.str() + ": y");
  // The kernel writes rows of a contiguous buffer: x itself (in place, when contiguous), else a
  // contiguous copy (copied back into x afterwards when in place).
  const bool inplace = inc.inplace();
  Tensor out = inplace && x.isContiguous() ? x : contiguousCopy(x, x.dtype());
  if (nIdx > 0) {
    const Tensor y =
        yb.isContiguous() && yb.dtype() == x.dtype() ? yb : contiguousCopy(yb, x.dtype());
    const bool set = inc.setInsteadOfInc();
    const GeneratedSource& g =
        cached("scatter " + dt(x.dtype()) + " " + dt(idx.dtype()) + (set ? " set" : " inc"),
               [&] { return generateScatter(x.dtype(), idx.dtype(), set); });
    CudaRuntime& rt = CudaRuntime::instance();
    const void* pi = idx.rawData();
    {
      // Every index is checked before anything is written, as on the CPU.
      ErrorWord bad;
      void* pb = bad.device();
      void* args[] = {&nIdx, &nRows, &pi, &pb};
      rt.launch(rt.kernel(g.source, g.name + "_check"), nIdx, args);
      if (const long long k = bad.read(); k >= 0)
        throw std::out_of_range(op.str() + ": index " + std::to_string(readElementAsInt(idx, k)) +
                                " is out of bounds for axis 0 with size " + std::to_string(nRows));
    }
    Tensor winner;
    const void* pw = nullptr;
    if (set) {
      winner = emptyOn(Device::Cuda, DType::Int64, {nRows});
      if (nRows > 0)
        TSCOPE_CUDA_CHECK(cudaMemsetAsync(winner.rawData(), 0xFF, winner.nbytes(), stream()));
      pw = winner.rawData();
      void* args[] = {&nIdx, &nRows, &pi, &pw};
      rt.launch(rt.kernel(g.source, g.name + "_winner"), nIdx, args);
    }
    long long n = nIdx * rowLen;
    const void* py = y.rawData();
    void* po = out.rawData();
    void* args[] = {&n, &rowLen, &nRows, &pi, &pw, &py, &po};
    rt.launch(rt.kernel(g.source, g.name + "_write"), n, args);
  }
  if (inplace && !out.sharesStorageWith(x)) {
    copyOnDevice(x, out);
    out = x;
  }
  *outputs[0] = out;
}

// --- Join ----------------------------------------------------------------------------------------

void joinKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& join = static_cast<const Join&>(op);
  const auto [shape, dtype] = join.outputShapeAndDType(inputs);
  const auto axis = static_cast<std::size_t>(join.axis());
  Tensor out = emptyOn(Device::Cuda, dtype, shape);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < axis; ++a) outer *= shape[a];
  for (std::size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
  const std::size_t item = dtypeSize(dtype);
  std::int64_t offset = 0;
  for (const Tensor* t : inputs) {
    const std::int64_t n = t->shape()[axis];
    if (n > 0 && outer > 0 && inner > 0) {
      // Each of the `outer` rows of t is one chunk of n * inner elements: one 2-d copy (pitches
      // above 2^31 - 1 bytes, cudaDevAttrMaxPitch, go through the copy kernel).
      const std::size_t width = static_cast<std::size_t>(n * inner) * item;
      const std::size_t pitch = static_cast<std::size_t>(shape[axis] * inner) * item;
      if (t->isContiguous() && t->dtype() == dtype && pitch <= 2147483647u) {
        auto* dst = static_cast<std::byte*>(out.rawData()) +
                    static_cast<std::size_t>(offset * inner) * item;
        TSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(dst, pitch, t->rawData(), width, width,
                                            static_cast<std::size_t>(outer),
                                            cudaMemcpyDeviceToDevice, stream()));
      } else {
        copyOnDevice(out.slice(join.axis(), offset, offset + n), *t);
      }
    }
    offset += n;
  }
  *outputs[0] = out;
}

// --- Alloc ---------------------------------------------------------------------------------------

void allocKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                 std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  Shape shape;
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const std::int64_t d =
        shape_detail::readIndex(*inputs[i], op.str() + ": size of axis " + std::to_string(i - 1));
    if (d < 0)
      throw std::invalid_argument(op.str() + ": the size of axis " + std::to_string(i - 1) +
                                  " is " + std::to_string(d) + "; sizes must be >= 0");
    shape.push_back(d);
  }
  const Tensor& value = *inputs[0];
  const Tensor v = shape_detail::broadcastOperand(value, shape, op.str() + ": value");
  Tensor out = emptyOn(Device::Cuda, value.dtype(), shape);
  copyOnDevice(out, v);  // a broadcast value reads with stride 0
  *outputs[0] = out;
}

}  // namespace tscope::engine::cuda
