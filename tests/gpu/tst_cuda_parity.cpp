// The CUDA kernels against the CPU reference on a real GPU (issue 22; label `gpu`, no Qt): the
// same graph compiled for the CPU and for Device::Cuda on the same random inputs, per-op
// tolerances. Elementwise ops (broadcasting, non-contiguous inputs), the fused Composite,
// reductions, cuBLAS products (gemm, gemv, dot, batched and broadcast-batched matmul, an SGD step
// with Gemm in place), float16 (every elementwise op, the fused chain, reductions, every Dot shape
// on the tensor cores, a half SGD step; looser tolerances), transfers of every dtype, and
// the caching allocator making no cudaMalloc after warm-up. Skips (77) without a device. Ends with
// "N passed, N failed" (one per section).
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/tensor/device_memory.h"
#include "gpu_check.h"
#include "gpu_device.h"
#include "gpu_values.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace tscope::engine;

namespace {
using tscope::gputest::random;
using tscope::gputest::section;

// Compiles outputs for the CPU and for the GPU (same mode), runs both on args, compares.
bool sameOnBoth(const std::vector<VarPtr>& in, const std::vector<VarPtr>& out,
                const std::vector<Tensor>& args, double rtol, double atol,
                Mode mode = Mode::FastRun, int* deviceNodes = nullptr) {
  CompileOptions cpuOptions;
  cpuOptions.mode = mode;
  CompileOptions gpuOptions = cpuOptions;
  gpuOptions.device = Device::Cuda;
  Function cpu = compile(in, out, {}, cpuOptions);
  Function gpu = compile(in, out, {}, gpuOptions);
  if (deviceNodes) {
    *deviceNodes = 0;
    for (const LinkedNode& n : gpu.program().nodes())
      *deviceNodes += n.kernel.device == Device::Cuda;
  }
  const std::vector<Tensor> a = cpu(args), b = gpu(args);
  bool ok = a.size() == b.size();
  for (std::size_t i = 0; ok && i < a.size(); ++i) {
    const bool close = b[i].device() == Device::Cpu && b[i].allClose(a[i], rtol, atol);
    if (!close)
      std::fprintf(stderr, "output %zu differs:\ncpu %s\ngpu %s\n", i, a[i].toString().c_str(),
                   b[i].toString().c_str());
    ok = ok && close;
  }
  return ok;
}

VarPtr var(DType d, Shape shape, const char* name) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

// One scalar op as an unfused Elemwise (mode none) on `d` (bool for Switch's condition), with one
// broadcast operand (the strided kernel), against the CPU; false when the op refuses the dtypes.
bool scalarOpMatches(ScalarOp op, DType d, unsigned seedBase, double rtol, double atol) {
  const ScalarOpInfo& info = scalarOpInfo(op);
  const int arity = info.arity < 0 ? 2 : info.arity;
  std::vector<VarPtr> in;
  std::vector<Tensor> args;
  for (int i = 0; i < arity; ++i) {
    const DType di = op == ScalarOp::Switch && i == 0 ? DType::Bool : d;
    Shape shape = i == 1 ? Shape{1, 33} : Shape{17, 33};
    in.push_back(var(di, shape, "x"));
    args.push_back(random(di, shape, seedBase + static_cast<unsigned>(i),
                          op == ScalarOp::Log || op == ScalarOp::Sqrt ? 0.1 : -2));
  }
  VarPtr y;
  try {
    y = std::make_shared<Elemwise>(op, std::map<int, int>{}, DType::Float64)
            ->makeNode(in)
            ->output(0);
  } catch (const std::exception&) {
    return false;  // the op refuses these dtypes
  }
  int onDevice = 0;
  const bool ok = sameOnBoth(in, {y}, args, rtol, atol, Mode::None, &onDevice);
  if (!ok || onDevice == 0)
    std::fprintf(stderr, "  %s on %s (%d device nodes)\n", std::string(info.name).c_str(),
                 std::string(dtypeName(d)).c_str(), onDevice);
  CHECK(ok);
  CHECK(onDevice > 0);
  return true;
}

void elementwiseOps() {
  // Every scalar op on float32 (and the arithmetic on int32), unfused (mode none), with one
  // broadcast operand: the strided kernel.
  for (DType d : {DType::Float32, DType::Int32, DType::Float64})
    for (int s = 0; s < kScalarOpCount; ++s)
      scalarOpMatches(static_cast<ScalarOp>(s), d, static_cast<unsigned>(100 + s * 7), 1e-5, 1e-6);
}

void broadcastingAndStrides() {
  const VarPtr x = var(DType::Float32, {8, 5}, "x"), y = var(DType::Float32, {5, 8}, "y");
  const VarPtr b = var(DType::Float32, {5}, "b");
  // transpose(y): a non-contiguous operand; b broadcast over rows; a 0-d constant.
  const VarPtr out = tanh(x * transpose(y) + b) - 0.5;
  CHECK(sameOnBoth({x, y, b}, {out},
                   {random(DType::Float32, {8, 5}, 1), random(DType::Float32, {5, 8}, 2),
                    random(DType::Float32, {5}, 3)},
                   1e-5, 1e-6, Mode::None));
  // Contiguous, same shapes: the float4 kernel (4099 elements: a scalar tail).
  const VarPtr p = var(DType::Float32, {4099}, "p"), q = var(DType::Float32, {4099}, "q");
  CHECK(sameOnBoth({p, q}, {p * q + p},
                   {random(DType::Float32, {4099}, 4), random(DType::Float32, {4099}, 5)}, 1e-6,
                   1e-6, Mode::None));
}

void fusedComposite() {
  // tanh(x * a + b) * c - x: one Composite after fusion, on broadcast and strided inputs.
  const VarPtr x = var(DType::Float32, {300, 37}, "x"), a = var(DType::Float32, {37}, "a");
  const VarPtr c = var(DType::Float32, {37, 300}, "c"), b = var(DType::Float32, {}, "b");
  const VarPtr y = tanh(x * a + b) * transpose(c) - x;
  int onDevice = 0;
  CHECK(sameOnBoth({x, a, b, c}, {y},
                   {random(DType::Float32, {300, 37}, 6), random(DType::Float32, {37}, 7),
                    random(DType::Float32, {}, 8), random(DType::Float32, {37, 300}, 9)},
                   1e-5, 1e-6, Mode::FastRun, &onDevice));
  CHECK(onDevice >= 1);
}

void reductions() {
  const VarPtr x = var(DType::Float32, {6, 7, 300}, "x");
  const Tensor v = random(DType::Float32, {6, 7, 300}, 10);
  for (const Axes& axes : std::vector<Axes>{{}, {0}, {1}, {2}, {0, 2}}) {
    CHECK(sameOnBoth({x}, {sum(x, axes), max(x, axes), min(x, axes), mean(x, axes)}, {v}, 1e-4,
                     1e-4));
    // A non-contiguous input: the reduced axes read with strides.
    const VarPtr t = transpose(x, {2, 0, 1});
    CHECK(sameOnBoth({x}, {sum(t, axes), max(t, axes)}, {v}, 1e-4, 1e-4));
  }
  const VarPtr i = var(DType::Int32, {50, 40}, "i");
  CHECK(sameOnBoth({i}, {sum(i, {1}), max(i, {0})}, {random(DType::Int32, {50, 40}, 11)}, 0, 0));
}

void matrixProducts() {
  const VarPtr A = var(DType::Float32, {64, 32}, "A"), B = var(DType::Float32, {32, 16}, "B");
  const VarPtr u = var(DType::Float32, {32}, "u"), w = var(DType::Float32, {64}, "w");
  const std::vector<Tensor> args{
      random(DType::Float32, {64, 32}, 12), random(DType::Float32, {32, 16}, 13),
      random(DType::Float32, {32}, 14), random(DType::Float32, {64}, 15)};
  CHECK(sameOnBoth({A, B, u, w}, {dot(A, B), dot(A, u), dot(w, A), dot(u, u), dot(transpose(A), w)},
                   args, 1e-4, 1e-4, Mode::None));
  // Batched, and a batch against one matrix (stride 0).
  const VarPtr X = var(DType::Float32, {4, 8, 5}, "X"), Y = var(DType::Float32, {4, 5, 3}, "Y");
  const VarPtr M = var(DType::Float32, {5, 3}, "M");
  CHECK(sameOnBoth({X, Y, M}, {matmul(X, Y), matmul(X, M)},
                   {random(DType::Float32, {4, 8, 5}, 16), random(DType::Float32, {4, 5, 3}, 17),
                    random(DType::Float32, {5, 3}, 18)},
                   1e-4, 1e-4, Mode::None));
}

void sgdStep() {
  // W <- W - 0.01 * x^T (x W - t): fast_run makes Gemm{inplace} on the device twin of W.
  const Tensor w0 = random(DType::Float32, {20, 10}, 19);
  auto Wc = SharedVariable::create(w0, "Wc"), Wg = SharedVariable::create(w0, "Wg");
  const VarPtr x = var(DType::Float32, {32, 20}, "x"), t = var(DType::Float32, {32, 10}, "t");
  auto step = [&](const std::shared_ptr<SharedVariable>& W, Device device) {
    const VarPtr e = dot(x, W) - t;
    CompileOptions o;
    o.mode = Mode::FastRun;
    o.device = device;
    return compile({x, t}, {sum(e * e)}, {{W, W - dot(transpose(x), e) * 0.01}}, o);
  };
  Function cpu = step(Wc, Device::Cpu), gpu = step(Wg, Device::Cuda);
  const std::vector<Tensor> args{random(DType::Float32, {32, 20}, 20),
                                 random(DType::Float32, {32, 10}, 21)};
  for (int i = 0; i < 5; ++i) CHECK(gpu(args)[0].allClose(cpu(args)[0], 1e-4, 1e-3));
  CHECK(Wg->value().allClose(Wc->value(), 1e-4, 1e-4));
}

// float16 (Note [Half registers], Note [Half products]): each value is computed in float32 and
// rounded to half once on both sides, so the results differ by at most about one half ulp (2^-11
// relative) plus the float32 differences of CUDA's math functions and of summation order;
// the tolerances are loose accordingly.
void float16() {
  const DType h = DType::Float16;
  int checked = 0;
  for (int s = 0; s < kScalarOpCount; ++s)
    checked += scalarOpMatches(static_cast<ScalarOp>(s), h, static_cast<unsigned>(300 + s * 7),
                               4e-3, 4e-3);
  CHECK(checked >= 30);
  // The fused chain on half operands, broadcast and strided.
  const VarPtr x = var(h, {300, 37}, "x"), a = var(h, {37}, "a");
  const VarPtr c = var(h, {37, 300}, "c"), b = var(h, {}, "b");
  int onDevice = 0;
  CHECK(sameOnBoth({x, a, b, c}, {tanh(x * a + b) * transpose(c) - x},
                   {random(h, {300, 37}, 400), random(h, {37}, 401), random(h, {}, 402),
                    random(h, {37, 300}, 403)},
                   4e-3, 8e-3, Mode::FastRun, &onDevice));
  CHECK(onDevice >= 1);
  // Reductions accumulate in float32 and round once.
  const VarPtr r = var(h, {6, 7, 300}, "r");
  const Tensor rv = random(h, {6, 7, 300}, 404);
  for (const Axes& axes : std::vector<Axes>{{}, {0}, {2}, {0, 2}})
    CHECK(sameOnBoth({r}, {sum(r, axes), max(r, axes), min(r, axes), mean(r, axes)}, {rv}, 4e-3,
                     2e-2));
  // Products on the tensor cores (cublasGemmEx, float32 accumulation), every Dot shape.
  const VarPtr A = var(h, {64, 32}, "A"), B = var(h, {32, 16}, "B");
  const VarPtr u = var(h, {32}, "u"), w = var(h, {64}, "w");
  CHECK(sameOnBoth({A, B, u, w}, {dot(A, B), dot(A, u), dot(w, A), dot(u, u), dot(transpose(A), w)},
                   {random(h, {64, 32}, 405), random(h, {32, 16}, 406), random(h, {32}, 407),
                    random(h, {64}, 408)},
                   4e-3, 2e-2, Mode::None, &onDevice));
  CHECK(onDevice >= 5);
  const VarPtr X = var(h, {4, 8, 5}, "X"), Y = var(h, {4, 5, 3}, "Y"), M = var(h, {5, 3}, "M");
  CHECK(sameOnBoth({X, Y, M}, {matmul(X, Y), matmul(X, M)},
                   {random(h, {4, 8, 5}, 409), random(h, {4, 5, 3}, 410), random(h, {5, 3}, 411)},
                   4e-3, 1e-2, Mode::None));
  // A half SGD step: the products are Dots on the tensor cores (no float16 Gemm in the engine),
  // the parameter device-resident.
  const Tensor w0 = random(h, {20, 10}, 412, -0.5, 0.5);
  auto Wc = SharedVariable::create(w0, "Wc"), Wg = SharedVariable::create(w0, "Wg");
  const VarPtr hx = var(h, {32, 20}, "hx"), ht = var(h, {32, 10}, "ht");
  auto step = [&](const std::shared_ptr<SharedVariable>& W, Device device) {
    const VarPtr e = dot(hx, W) - ht;
    CompileOptions o;
    o.mode = Mode::FastRun;
    o.device = device;
    return compile({hx, ht}, {sum(e * e)}, {{W, W - dot(transpose(hx), e) * 0.01}}, o);
  };
  Function cpu = step(Wc, Device::Cpu), gpu = step(Wg, Device::Cuda);
  const std::vector<Tensor> hargs{random(h, {32, 20}, 413, -1, 1), random(h, {32, 10}, 414, -1, 1)};
  for (int i = 0; i < 3; ++i) CHECK(gpu(hargs)[0].allClose(cpu(hargs)[0], 1e-2, 5e-2));
  CHECK(Wg->value().allClose(Wc->value(), 1e-2, 1e-2));
}

void transfers() {
  for (DType d : {DType::Bool, DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8,
                  DType::Float16, DType::Float32, DType::Float64}) {
    const Tensor h = random(d, {7, 9}, 22);
    const Tensor dev = toDevice(h, Device::Cuda);
    CHECK(dev.device() == Device::Cuda);
    CHECK(toHost(dev).bitwiseEqual(h));
    CHECK(toHost(dev.transpose()).bitwiseEqual(h.transpose().contiguous()));
    CHECK(toHost(toDevice(h.slice(1, 8, 0, -3), Device::Cuda))
              .bitwiseEqual(h.slice(1, 8, 0, -3).contiguous()));
  }
}

void allocatorReuse() {
  const VarPtr x = var(DType::Float32, {256, 128}, "x"), W = var(DType::Float32, {128, 64}, "W");
  CompileOptions o;
  o.mode = Mode::FastRun;
  o.device = Device::Cuda;
  Function f = compile({x, W}, {sum(tanh(dot(x, W)), {1})}, {}, o);
  const std::vector<Tensor> args{random(DType::Float32, {256, 128}, 23),
                                 random(DType::Float32, {128, 64}, 24)};
  f(args);
  f(args);
  const DeviceMemoryStats warm = cuda::cudaMemoryStats();
  for (int i = 0; i < 20; ++i) f(args);
  const DeviceMemoryStats after = cuda::cudaMemoryStats();
  std::printf("  allocator: %lld raw allocations, %lld allocations, %zu bytes cached\n",
              static_cast<long long>(after.rawAllocations),
              static_cast<long long>(after.allocations), after.cachedBytes);
  CHECK(after.rawAllocations == warm.rawAllocations);
  CHECK(after.allocations > warm.allocations);
  CHECK(after.allocatedBytes == warm.allocatedBytes);
  cuda::cudaEmptyCache();
  CHECK(cuda::cudaMemoryStats().cachedBytes <= after.cachedBytes);
}
}  // namespace

int main() {
  tscope::gputest::startDevice();
  section("transfers", transfers);
  section("elementwise ops", elementwiseOps);
  section("broadcasting and strides", broadcastingAndStrides);
  section("fused composite", fusedComposite);
  section("reductions", reductions);
  section("matrix products", matrixProducts);
  section("sgd step (gemm inplace)", sgdStep);
  section("float16", float16);
  section("allocator reuse", allocatorReuse);
  tscope::gputest::sectionSummary();
  return tscope::gputest::result();
}
