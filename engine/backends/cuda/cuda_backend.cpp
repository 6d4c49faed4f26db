// The CUDA backend's registration (DESIGN.md "Backends"; explicit, one function, Note [Ops and
// backends]): device memory, the kernels and the rules that say which nodes they take.
#include "engine/backends/cuda/cuda_backend.h"

#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/compile/kernel.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/reduce/careduce.h"
#include "engine/rewrite/rules/gpu_placement.h"
#include "engine/tensor/device_memory.h"

#include <cuda_runtime.h>
#include <mutex>

namespace tscope::engine::cuda {

// Views and transfers: what perform does is right on the device (metadata only, or a copy through
// the registered DeviceMemory); run under the node's scope for messages.
void performKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  op.perform(node, inputs, outputs);
}

namespace {
bool allValues(const Apply& node, bool (*ok)(const TensorType&)) {
  for (const VarPtr& in : node.inputs())
    if (!ok(in->type())) return false;
  for (int o = 0; o < node.nOutputs(); ++o)
    if (!ok(node.outputRef(o).type())) return false;
  return true;
}

bool elementwiseValue(const TensorType& t) {
  return hasCudaType(t.dtype()) && t.ndim() <= kMaxRank;
}
bool float32Value(const TensorType& t) {
  return t.dtype() == DType::Float32;
}

// Note [CUDA placement rules]: what the kernels take; every other node stays on the CPU.
// Shape arithmetic stays on the host: an Elemwise or Composite whose every value is a 0-d
// integer or bool and none of whose inputs a device node computes (sizes from Shape, ShapeI and
// constants, on their way into Reshape, Alloc or MakeVector) would otherwise cross to the device
// and back for one number each way.
bool shapeArithmetic(const Apply& node) {
  auto scalarInt = [](const TensorType& t) {
    return t.ndim() == 0 && (isInteger(t.dtype()) || t.dtype() == DType::Bool);
  };
  for (const VarPtr& in : node.inputs())
    if (!scalarInt(in->type()) || isDeviceValue(*in)) return false;
  for (int o = 0; o < node.nOutputs(); ++o)
    if (!scalarInt(node.outputRef(o).type())) return false;
  return true;
}
bool elemwiseRule(const Apply& node) {
  // The kernel gives every output the broadcast shape of all inputs: a multi-output Composite
  // whose outputs depend on differently shaped inputs stays on the CPU.
  for (int o = 1; o < node.nOutputs(); ++o)
    if (node.outputRef(o).type().shape() != node.outputRef(0).type().shape()) return false;
  return allValues(node, &elementwiseValue) && !shapeArithmetic(node);
}
bool reduceRule(const Apply& node) {
  const auto& op = static_cast<const CAReduce&>(node.op());
  const ScalarOp s = op.scalarOp();
  const DType in = node.input(0)->type().dtype();
  if (!allValues(node, &elementwiseValue)) return false;
  // all/any: a bool accumulator folded as an int (Note [Reduction kernels]).
  if (s == ScalarOp::And || s == ScalarOp::Or) return true;
  if (s != ScalarOp::Add && s != ScalarOp::Mul && s != ScalarOp::Maximum && s != ScalarOp::Minimum)
    return false;
  const DType acc = op.accDType(in);
  return acc != DType::Bool && dtypeSize(acc) >= 4;
}
bool float16Value(const TensorType& t) {
  return t.dtype() == DType::Float16;
}
// float32, or float16 through cublasGemmEx (Note [Half products] in blas_kernel.cpp).
bool dotRule(const Apply& node) {
  if (!allValues(node, &float32Value) && !allValues(node, &float16Value)) return false;
  const int a = node.input(0)->type().ndim(), b = node.input(1)->type().ndim();
  return (a <= 2 && b <= 2) || (a >= 2 && b >= 2);
}
bool blasRule(const Apply& node) {
  return allValues(node, &float32Value);
}

std::mutex g_mutex;
bool g_registered = false;
}  // namespace

CudaStatus cudaStatus() {
  CudaStatus s;
  s.built = true;
  const cudaError_t e = cudaGetDeviceCount(&s.deviceCount);
  if (e != cudaSuccess) {
    s.error = cudaGetErrorString(e);
    s.deviceCount = 0;
    return s;
  }
  if (s.deviceCount == 0) {
    s.error = "no device found";
    return s;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    s.deviceName = prop.name;
    s.arch = prop.major * 10 + prop.minor;
  }
  s.deviceFound = true;
  return s;
}

void registerCudaKernels(KernelRegistry& kernels, DeviceSupport& rules) {
  const Device d = Device::Cuda;
  kernels.add("Elemwise", d, &elemwiseKernel, "cuda-nvrtc");
  rules.add("Elemwise", d, &elemwiseRule);
  kernels.add("Composite", d, &elemwiseKernel, "cuda-nvrtc");
  rules.add("Composite", d, &elemwiseRule);
  kernels.add("CAReduce", d, &reduceKernel, "cuda-nvrtc");
  rules.add("CAReduce", d, &reduceRule);
  kernels.add("Dot", d, &dotKernel, "cublas");
  rules.add("Dot", d, &dotRule);
  kernels.add("Gemm", d, &gemmKernel, "cublas");
  rules.add("Gemm", d, &blasRule);
  kernels.add("Gemv", d, &gemvKernel, "cublas");
  rules.add("Gemv", d, &blasRule);
#ifdef TSCOPE_HAVE_CUDNN
  registerCudnnKernels(kernels, rules);
#endif
  registerOpKernels(kernels, rules);
  kernels.add("DimShuffle", d, &performKernel, "cuda-view");
  kernels.add("GpuFromHost", d, &performKernel, "cuda-copy");
  kernels.add("HostFromGpu", d, &performKernel, "cuda-copy");
}

void registerCudaBackend() {
  std::lock_guard lock(g_mutex);
  if (g_registered) return;
  CudaRuntime& runtime = CudaRuntime::instance();  // throws CudaUnavailable without a device
  setDeviceMemory(Device::Cuda, &runtime);
  registerCudaKernels(defaultKernelRegistry(), defaultDeviceSupport());
  g_registered = true;
}

void cudaSynchronize() {
  if (!CudaRuntime::started()) return;
  TSCOPE_CUDA_CHECK(
      cudaStreamSynchronize(static_cast<cudaStream_t>(CudaRuntime::instance().stream())));
}

DeviceMemoryStats cudaMemoryStats() {
  return CudaRuntime::started() ? CudaRuntime::instance().allocator().stats() : DeviceMemoryStats{};
}

void cudaEmptyCache() {
  if (CudaRuntime::started()) CudaRuntime::instance().allocator().emptyCache();
}

CudaTransferStats cudaTransferStats() {
  return CudaRuntime::started() ? CudaRuntime::instance().transferStats() : CudaTransferStats{};
}

}  // namespace tscope::engine::cuda
