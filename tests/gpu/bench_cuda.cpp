// Figures of the CUDA backend on a GPU machine (issue 22's benchmarks, the part this backend can
// run): the fused 5-op elementwise chain on 10M float32 elements as achieved bandwidth, sgemm
// throughput through the Dot kernel, an MLP 784-500-10 SGD step (host arguments, parameters
// copied each call: shared variables are not yet device-resident), and NVRTC compile vs cache
// hit. Prints one line per figure; run_on_device.sh keeps them in its summary. Not a test.
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/compile/function.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/tensor/device_memory.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::cuda;

namespace {
// Milliseconds per call of f on the backend's stream, after warm-up.
template <class F>
double deviceMs(F f, int reps) {
  CudaRuntime& rt = CudaRuntime::instance();
  f();
  Event start, stop;
  start.record(rt.stream());
  for (int i = 0; i < reps; ++i) f();
  stop.record(rt.stream());
  stop.synchronize();
  return stop.elapsedSince(start) / reps;
}

double hostMs(const std::function<void()>& f, int reps) {
  f();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         reps;
}

Tensor filled(Shape shape, double v) {
  return toDevice(Tensor::full(DType::Float32, std::move(shape), v), Device::Cuda);
}
}  // namespace

int main() {
  const CudaStatus status = cudaStatus();
  if (!status.deviceFound) {
    std::printf("no CUDA device: %s\n", status.error.c_str());
    return 77;
  }
  registerCudaBackend();
  std::printf("device: %s (sm_%d)\n", status.deviceName.c_str(), status.arch);

  // tanh(x * a + b) * c - x on 10M elements: 4 reads and 1 write of 4 bytes per element.
  {
    const std::int64_t n = 10'000'000;
    using S = ScalarOp;
    const DType f = DType::Float32;
    auto op = std::make_shared<Composite>(std::vector<DType>{f, f, f, f},
                                          std::vector<CompositeInstruction>{{S::Mul, {0, 1}, f},
                                                                            {S::Add, {4, 2}, f},
                                                                            {S::Tanh, {5}, f},
                                                                            {S::Mul, {6, 3}, f},
                                                                            {S::Sub, {7, 0}, f}},
                                          std::vector<int>{8});
    std::vector<VarPtr> vars;
    for (int i = 0; i < 4; ++i) vars.push_back(Variable::create(TensorType(f, {n}), "v"));
    const ApplyPtr node = op->makeNode(vars);
    std::vector<Tensor> in{filled({n}, 0.5), filled({n}, 1.5), filled({n}, -0.25), filled({n}, 2)};
    Tensor out;
    const Tensor* inPtrs[] = {&in[0], &in[1], &in[2], &in[3]};
    Tensor* outPtrs[] = {&out};
    const double ms = deviceMs([&] { elemwiseKernel(*op, *node, inPtrs, outPtrs); }, 20);
    std::printf("fused 5-op chain, 10M float32: %.3f ms, %.0f GB/s achieved\n", ms,
                5.0 * 4 * n / (ms * 1e-3) / 1e9);
  }
  // sgemm 4096^3 through the Dot kernel (cuBLAS).
  {
    const std::int64_t m = 4096;
    const VarPtr a = Variable::create(TensorType(DType::Float32, {m, m}), "a");
    const VarPtr y = dot(a, a);
    Tensor A = filled({m, m}, 0.001), out;
    const Tensor* inPtrs[] = {&A, &A};
    Tensor* outPtrs[] = {&out};
    const double ms =
        deviceMs([&] { dotKernel(y->owner()->op(), *y->owner(), inPtrs, outPtrs); }, 10);
    std::printf("sgemm 4096^3: %.3f ms, %.1f TFLOP/s\n", ms, 2.0 * m * m * m / (ms * 1e-3) / 1e12);
  }
  // MLP 784-500-10 SGD step.
  for (std::int64_t batch : {128, 1024}) {
    auto W1 = SharedVariable::create(Tensor::full(DType::Float32, {784, 500}, 0.01), "W1");
    auto W2 = SharedVariable::create(Tensor::full(DType::Float32, {500, 10}, 0.01), "W2");
    const VarPtr x = Variable::create(TensorType(DType::Float32, {batch, 784}), "x");
    const VarPtr t = Variable::create(TensorType(DType::Float32, {batch, 10}), "t");
    const VarPtr h = tanh(dot(x, W1));
    const VarPtr e = dot(h, W2) - t;
    const VarPtr gW2 = dot(transpose(h), e);
    const VarPtr gH = dot(e, transpose(W2)) * (1.0 - h * h);
    const VarPtr gW1 = dot(transpose(x), gH);
    CompileOptions o;
    o.mode = Mode::FastRun;
    o.device = Device::Cuda;
    Function step =
        compile({x, t}, {sum(e * e)}, {{W1, W1 - gW1 * 0.01}, {W2, W2 - gW2 * 0.01}}, o);
    const std::vector<Tensor> args{Tensor::full(DType::Float32, {batch, 784}, 0.1),
                                   Tensor::full(DType::Float32, {batch, 10}, 0.0)};
    const double ms = hostMs([&] { step(args); }, 20);
    std::printf("MLP 784-500-10 SGD step, batch %lld: %.3f ms (parameters copied each call)\n",
                static_cast<long long>(batch), ms);
  }
  // NVRTC: a miss (compile) against a memory hit.
  {
    ScalarProgram p;
    p.registers = {DType::Float32, DType::Float32, DType::Float32};
    p.nInputs = 2;
    p.program = {CompositeInstruction{ScalarOp::Pow, {0, 1}, DType::Float32}};
    p.outputs = {2};
    const GeneratedSource g = generateElemwise(p);
    KernelCache cache({});
    const double miss = hostMs(
        [&] {
          KernelCache fresh({});
          fresh.get(g.source, status.arch, true);
        },
        3);
    cache.get(g.source, status.arch, true);
    const double hit = hostMs([&] { cache.get(g.source, status.arch, true); }, 100);
    std::printf("NVRTC elementwise kernel: compile %.1f ms, cache hit %.4f ms\n", miss, hit);
  }
  const DeviceMemoryStats s = cudaMemoryStats();
  std::printf("allocator: %lld allocations, %lld cudaMalloc, peak %.1f MiB\n",
              static_cast<long long>(s.allocations), static_cast<long long>(s.rawAllocations),
              s.peakAllocatedBytes / 1048576.0);
  return 0;
}
