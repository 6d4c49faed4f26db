// Figures of the CUDA backend on a GPU machine (issue 22's benchmarks): the fused 5-op elementwise
// chain on 10M float32 elements as achieved bandwidth, sgemm and float16 tensor-core gemm
// throughput through the Dot kernel, the MLP 784-500-10 SGD step at batch 128 and 1024 (host
// arguments, device-resident parameters: the bytes crossing PCIe per step are printed), a
// ResNet-18-shaped network's inference at batch 1 and 32 (built here with the engine's builder
// API: the device machine has no ONNX), a small CNN's training step, CUPTI's overhead (the MLP step
// and ResNet-18 profiled with and without the CUPTI source, target < 5 %), and NVRTC compile vs
// cache hit. Prints one line per figure; run_on_device.sh keeps them in its summary. Not a test.
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/grad/grad.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "engine/tensor/device_memory.h"
#ifdef TSCOPE_BENCH_CUPTI
#include "profiling/cupti_source.h"
#include "profiling/profile_run.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::cuda;
#ifdef TSCOPE_BENCH_CUPTI
namespace prof = tscope::prof;
#endif

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

// Deterministic small weights (He-like scale) for a parameter of this shape.
Tensor weights(Shape shape, double scale, unsigned seed) {
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  std::uint32_t x = 2463534242u ^ seed;
  for (double& e : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    e = scale * ((x % 2001) / 1000.0 - 1.0);
  }
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

std::shared_ptr<SharedVariable> param(Shape shape, double scale, unsigned seed, std::string name) {
  return SharedVariable::create(weights(std::move(shape), scale, seed), std::move(name));
}

bool g_graphsOnCpu = false;  // --graphs-on-cpu

CompileOptions onDevice() {
  CompileOptions o;
  o.mode = Mode::FastRun;
  o.device = g_graphsOnCpu ? Device::Cpu : Device::Cuda;
  return o;
}

// The MLP 784-500-10 SGD step (squared error, tanh hidden layer).
struct MlpStep {
  std::shared_ptr<SharedVariable> W1, W2;
  Function step;
  std::vector<Tensor> args;
  explicit MlpStep(std::int64_t batch) : step(make(batch)) {
    args = {Tensor::full(DType::Float32, {batch, 784}, 0.1),
            Tensor::full(DType::Float32, {batch, 10}, 0.0)};
  }
  Function make(std::int64_t batch) {
    W1 = SharedVariable::create(Tensor::full(DType::Float32, {784, 500}, 0.01), "W1");
    W2 = SharedVariable::create(Tensor::full(DType::Float32, {500, 10}, 0.01), "W2");
    const VarPtr x = Variable::create(TensorType(DType::Float32, {batch, 784}), "x");
    const VarPtr t = Variable::create(TensorType(DType::Float32, {batch, 10}), "t");
    const VarPtr h = tanh(dot(x, W1));
    const VarPtr e = dot(h, W2) - t;
    const VarPtr gW2 = dot(transpose(h), e);
    const VarPtr gH = dot(e, transpose(W2)) * (1.0 - h * h);
    const VarPtr gW1 = dot(transpose(x), gH);
    return compile({x, t}, {sum(e * e)}, {{W1, W1 - gW1 * 0.01}, {W2, W2 - gW2 * 0.01}},
                   onDevice());
  }
};

// A ResNet-18-shaped network for inference, as the ONNX fixture's optimized graph is: every
// convolution a FusedConv2d (bias, relu; the second of each basic block with the residual), a
// 3x3/2 max pool after the stem, global average pooling, a 512x1000 classifier. 11.7M parameters
// (shared, so device-resident), 1.8 GFLOP per image.
struct ResNet18 {
  VarPtr x;
  VarPtr logits;
  unsigned seed = 1;
  ConvActivationSpec relu{cpu::ConvActivation::Relu, 0, 0};
  ConvActivationSpec none{cpu::ConvActivation::None, 0, 0};

  VarPtr conv(const VarPtr& in, std::int64_t cin, std::int64_t cout, std::int64_t k,
              std::int64_t stride, bool activate, const VarPtr& residual = nullptr) {
    Conv2dParams p;
    p.stride = {stride, stride};
    p.padding = {k / 2, k / 2};
    const double scale = std::sqrt(2.0 / static_cast<double>(cin * k * k));
    const unsigned id = seed;
    seed += 2;
    const auto w = param({cout, cin, k, k}, scale, id, "w" + std::to_string(id));
    const auto b = param({cout}, 0.01, id + 1, "b" + std::to_string(id));
    if (residual) return fusedConv2dResidual(in, w, b, residual, p, activate ? relu : none);
    return fusedConv2d(in, w, b, p, activate ? relu : none);
  }
  VarPtr block(const VarPtr& in, std::int64_t cin, std::int64_t cout, std::int64_t stride) {
    const VarPtr h = conv(in, cin, cout, 3, stride, true);
    const VarPtr shortcut = stride != 1 || cin != cout ? conv(in, cin, cout, 1, stride, false) : in;
    return conv(h, cout, cout, 3, 1, true, shortcut);
  }
  explicit ResNet18(std::int64_t batch) {
    x = Variable::create(TensorType(DType::Float32, {batch, 3, 224, 224}), "x");
    VarPtr h = conv(x, 3, 64, 7, 2, true);
    Pool2dParams pool;
    pool.kernel = {3, 3};
    pool.stride = {2, 2};
    pool.padding = {1, 1};
    h = maxPool2d(h, pool);
    std::int64_t c = 64;
    for (std::int64_t out : {64, 128, 256, 512}) {
      h = block(h, c, out, out == 64 ? 1 : 2);
      h = block(h, out, out, 1);
      c = out;
    }
    const VarPtr pooled = mean(h, {2, 3});
    const auto fc = param({512, 1000}, 0.04, seed++, "fc");
    const auto fcb = param({1000}, 0.01, seed++, "fcb");
    logits = dot(pooled, fc) + fcb;
  }
};

// A small CNN's SGD step: 3x32x32 -> conv 3x3 (16) relu pool -> conv 3x3 (32) relu pool ->
// flatten (2048) -> dot (10) -> softmax cross-entropy (the loss runs on the CPU).
Function cnnStep(std::int64_t batch) {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {batch, 3, 32, 32}), "x");
  const VarPtr t = Variable::create(TensorType(DType::Float32, {batch, 10}), "t");
  const auto c1 = param({16, 3, 3, 3}, 0.27, 101, "c1");
  const auto c2 = param({32, 16, 3, 3}, 0.12, 102, "c2");
  const auto fc = param({2048, 10}, 0.03, 103, "fc");
  Conv2dParams same;
  same.padding = {1, 1};
  VarPtr h = maxPool2d(relu(conv2d(x, c1, same)), Pool2dParams::window(2, 2));
  h = maxPool2d(relu(conv2d(h, c2, same)), Pool2dParams::window(2, 2));
  const VarPtr loss = mean(softmaxCrossEntropyWithLogits(dot(flatten(h, 2), fc), t));
  const std::vector<VarPtr> params{c1, c2, fc};
  const std::vector<VarPtr> g = grad(loss, params);
  std::vector<Update> updates;
  for (std::size_t i = 0; i < params.size(); ++i)
    updates.push_back({params[i], params[i] - g[i] * 0.05});
  return compile({x, t}, {loss}, updates, onDevice());
}

Tensor oneHot(std::int64_t rows, std::int64_t classes) {
  std::vector<double> v(static_cast<std::size_t>(rows * classes), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    v[static_cast<std::size_t>(r * classes + r % classes)] = 1;
  return Tensor::fromDoubles(DType::Float32, {rows, classes}, v);
}

// Median of `rounds` timings of `reps` calls each (ms per call): steadier than one mean.
double medianMs(const std::function<void()>& f, int reps, int rounds = 5) {
  std::vector<double> t;
  f();
  for (int r = 0; r < rounds; ++r) t.push_back(hostMs(f, reps));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

#ifdef TSCOPE_BENCH_CUPTI
// CUPTI's overhead on a function's calls: the wall time per call of profileFunction with the
// CUPTI source against the same Profiler without it, and against plain calls. Median of rounds.
void cuptiOverhead(const char* what, Function& f, const std::vector<Tensor>& args, int reps) {
  std::unique_ptr<prof::GpuSource> gpu;
  try {
    prof::CuptiOptions options;
    options.synchronize = [] {
      Event done;
      done.record(CudaRuntime::instance().stream());
      done.synchronize();
    };
    gpu = prof::makeCuptiSource(options);
  } catch (const std::exception& e) {
    std::printf("CUPTI overhead, %s: no CUPTI source (%s)\n", what, e.what());
    return;
  }
  auto profiled = [&](prof::GpuSource* source) {
    prof::ProfileRunOptions o;
    o.warmup = 1;
    o.runs = reps;
    o.gpu = source;
    o.device = Device::Cuda;
    const auto t0 = std::chrono::steady_clock::now();
    prof::profileFunction(f, args, o);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
               .count() /
           static_cast<double>(reps + 1);
  };
  std::vector<double> plain, host, cupti;
  for (int round = 0; round < 5; ++round) {
    plain.push_back(hostMs([&] { f(args); }, reps));
    host.push_back(profiled(nullptr));
    try {
      cupti.push_back(profiled(gpu.get()));
    } catch (const std::exception& e) {
      std::printf("CUPTI overhead, %s: the CUPTI source failed (%s)\n", what, e.what());
      return;
    }
  }
  for (auto* v : {&plain, &host, &cupti}) std::sort(v->begin(), v->end());
  const double p = plain[2], h = host[2], c = cupti[2];
  std::printf(
      "CUPTI overhead, %s: %.3f ms plain, %.3f ms profiled, %.3f ms profiled with CUPTI: "
      "+%.1f %% for CUPTI over the profiler, +%.1f %% over plain calls (target < 5 %%)\n",
      what, p, h, c, 100.0 * (c - h) / h, 100.0 * (c - p) / p);
}
#endif
// --graphs-on-cpu: the benchmarks' graphs built, compiled for the CPU and run once each, with
// their outputs' shapes: how they are checked on a machine without a GPU.
int graphsOnCpu() {
  g_graphsOnCpu = true;
  MlpStep mlp(128);
  std::printf("MLP step: cost %s\n", mlp.step(mlp.args)[0].toString().c_str());
  ResNet18 net(1);
  Function f = compile({net.x}, {net.logits}, {}, onDevice());
  int convs = 0;
  // On the CPU the convolutions of a chain run blocked (Note [Channel blocks]).
  for (const LinkedNode& n : f.program().nodes())
    convs += n.op->name() == "FusedConv2d" || n.op->name() == "BlockedConv2d";
  const Tensor logits = f({weights({1, 3, 224, 224}, 1.0, 7)})[0];
  std::printf("ResNet-18: %d FusedConv2d, %zu nodes, logits %s\n", convs,
              f.program().nodes().size(), shapeToString(logits.shape()).c_str());
  Function step = cnnStep(8);
  std::printf("CNN step: loss %s\n",
              step({weights({8, 3, 32, 32}, 1.0, 9), oneHot(8, 10)})[0].toString().c_str());
  return convs == 20 && logits.shape() == Shape{1, 1000} ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--graphs-on-cpu") return graphsOnCpu();
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
  // sgemm's float16 counterpart: cublasGemmEx on the tensor cores, float32 accumulation.
  {
    const std::int64_t m = 8192;
    const VarPtr a = Variable::create(TensorType(DType::Float16, {m, m}), "a");
    const VarPtr y = dot(a, a);
    Tensor A = toDevice(Tensor::full(DType::Float16, {m, m}, 0.001), Device::Cuda), out;
    const Tensor* inPtrs[] = {&A, &A};
    Tensor* outPtrs[] = {&out};
    const double ms =
        deviceMs([&] { dotKernel(y->owner()->op(), *y->owner(), inPtrs, outPtrs); }, 10);
    std::printf("hgemm 8192^3 (tensor cores, fp32 accumulate): %.3f ms, %.1f TFLOP/s\n", ms,
                2.0 * m * m * m / (ms * 1e-3) / 1e12);
  }
  // MLP 784-500-10 SGD step: the parameters stay on the device between calls.
  for (std::int64_t batch : {128, 1024}) {
    MlpStep mlp(batch);
    const double ms = medianMs([&] { mlp.step(mlp.args); }, 20);
    const CudaTransferStats before = cudaTransferStats();
    mlp.step(mlp.args);
    const CudaTransferStats after = cudaTransferStats();
    std::printf(
        "MLP 784-500-10 SGD step, batch %lld: %.3f ms (%.1f kB to the device, %.1f kB back per "
        "step; parameters device-resident)\n",
        static_cast<long long>(batch), ms,
        (after.hostToDeviceBytes - before.hostToDeviceBytes) / 1e3,
        (after.deviceToHostBytes - before.deviceToHostBytes) / 1e3);
  }
  // ResNet-18 inference (weights device-resident; the input image goes up each call).
  for (std::int64_t batch : {1, 32}) {
    ResNet18 net(batch);
    Function f = compile({net.x}, {net.logits}, {}, onDevice());
    int onGpu = 0;
    for (const LinkedNode& n : f.program().nodes()) onGpu += n.kernel.device == Device::Cuda;
    const std::vector<Tensor> args{weights({batch, 3, 224, 224}, 1.0, 7)};
    const double ms = medianMs([&] { f(args); }, batch == 1 ? 20 : 10);
    std::printf(
        "ResNet-18 inference, batch %lld: %.3f ms, %.0f images/s, %.1f TFLOP/s (%d of %zu nodes on "
        "the device)\n",
        static_cast<long long>(batch), ms, batch / (ms * 1e-3),
        1.82e9 * static_cast<double>(batch) / (ms * 1e-3) / 1e12, onGpu,
        f.program().nodes().size());
#ifdef TSCOPE_BENCH_CUPTI
    if (batch == 32) cuptiOverhead("ResNet-18 batch 32", f, args, 10);
#endif
  }
  // A small CNN's training step.
  {
    const std::int64_t batch = 64;
    Function step = cnnStep(batch);
    const std::vector<Tensor> args{weights({batch, 3, 32, 32}, 1.0, 9), oneHot(batch, 10)};
    const double ms = medianMs([&] { step(args); }, 20);
    std::printf("small CNN SGD step (2 conv, 2 pool, dense, softmax CE), batch %lld: %.3f ms\n",
                static_cast<long long>(batch), ms);
  }
#ifdef TSCOPE_BENCH_CUPTI
  {
    MlpStep mlp(128);
    cuptiOverhead("MLP SGD step batch 128", mlp.step, mlp.args, 50);
  }
#endif
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
