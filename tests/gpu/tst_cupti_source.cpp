// The CUPTI source on a real GPU (profiling/cupti_source.h): records of kernels, a copy and a set
// map to the node that pushed around their launch (top level and in a frame), launches without
// a push are unattributed, the kernel's grid and block are decoded, timestamps land on the host
// steady clock inside the host interval that launched and flushed them, the VM's correlation
// brackets reach CUPTI (an AsOp node whose kernel launches GPU work), and the source stops and
// starts again. Skips (77) without a GPU, or when another profiler holds CUPTI.
#include "engine/compile/function.h"
#include "engine/ops/as_op.h"
#include "engine/vm/clock.h"
#include "engine/vm/vm.h"
#include "gpu_check.h"
#include "profiling/cupti_source.h"

#include <cuda_runtime.h>
#include <string>
#include <vector>

int launchTouch(float* device, int n);

using namespace tscope;
using tscope::prof::GpuSourceError;

namespace {
constexpr int kN = 1000;  // 16 blocks of 64

void testRecordsMapToNodes(prof::GpuSource& gpu, float* device) {
  auto sink = gpu.correlationSink();
  std::vector<float> host(kN, 1.0f);
  const std::int64_t before = engine::vmclock::nowNs();
  sink->push({}, 5);
  CHECK(launchTouch(device, kN) == 0);
  CHECK(cudaMemset(device, 0, kN * sizeof(float)) == cudaSuccess);
  CHECK(cudaMemcpy(device, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  sink->pop();
  const std::vector<std::int64_t> path{5};
  sink->push(path, 2);
  CHECK(launchTouch(device, kN) == 0);
  CHECK(launchTouch(device, kN) == 0);
  sink->pop();
  CHECK(launchTouch(device, kN) == 0);  // no push: unattributed
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  gpu.flush();
  const std::int64_t after = engine::vmclock::nowNs();
  const prof::GpuActivity act = gpu.takeActivity();
  const prof::GpuAttribution at = prof::correlate(act, gpu.nodeKeys());
  std::printf("records %lld, kernels %zu, dropped %lld, buffers %lld\n",
              static_cast<long long>(act.records()), act.kernels().size(),
              static_cast<long long>(act.counts().droppedBySource),
              static_cast<long long>(act.counts().buffers));
  const prof::NodeGpuStats* top = at.find({}, 5);
  CHECK(top != nullptr);
  if (top) {
    CHECK(top->kernels == 1);
    CHECK(top->memsets == 1);
    CHECK(top->memcpys == 1);
    CHECK(top->memcpyBytes == kN * static_cast<std::int64_t>(sizeof(float)));
    CHECK(top->kernelNs > 0);
    const prof::KernelRecord& k = act.kernels()[top->kernelIndices.at(0)];
    CHECK(k.name.find("touchKernel") != std::string::npos);
    CHECK(k.grid.x == 16 && k.block.x == 64);
    // Note [GPU clock]: on the host clock, inside [before, after] (1 ms slack for the sample).
    CHECK(k.startNs >= before - 1'000'000 && k.endNs <= after + 1'000'000);
    CHECK(at.kernelLaunch[top->kernelIndices.at(0)] >= 0);
  }
  const prof::NodeGpuStats* inner = at.find(path, 2);
  CHECK(inner != nullptr && inner->kernels == 2);
  CHECK(at.unattributed.kernels >= 1);
  CHECK(act.counts().invalidTimestamps == 0);
}

void testVmBracketsReachCupti(prof::GpuSource& gpu, float* device) {
  using namespace engine;
  const TensorType t(DType::Float32, {kUnknownDim});
  auto op = asOp("GpuTouch", {t}, {t}, [device](std::span<const Tensor> in) -> std::vector<Tensor> {
    launchTouch(device, kN);
    return {in[0].clone()};
  });
  VarPtr x = Variable::create(t, "x");
  VarPtr y = (*op)({x});
  Function f = compile({x}, {y});
  const Apply* node = f.program().schedule().at(0);
  f.vm().setCorrelationSink(gpu.correlationSink());
  f({Tensor::fromDoubles(DType::Float32, {2}, {1, 2})});
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  gpu.flush();
  const prof::GpuActivity act = gpu.takeActivity();
  const prof::GpuAttribution at = prof::correlate(act, gpu.nodeKeys());
  const prof::NodeGpuStats* s = at.find({}, node->id());
  CHECK(s != nullptr && s->kernels == 1);
}
}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) SKIP("no GPU");
  std::unique_ptr<prof::GpuSource> gpu;
  try {
    gpu = prof::makeCuptiSource();
    gpu->start();
  } catch (const GpuSourceError& e) {
    if (e.kind() == GpuSourceError::Kind::ProfilerConflict) SKIP(e.what());
    std::fprintf(stderr, "the CUPTI source did not start: %s\n", e.what());
    return 1;
  }
  float* device = nullptr;
  CHECK(cudaMalloc(&device, kN * sizeof(float)) == cudaSuccess);
  testRecordsMapToNodes(*gpu, device);
  testVmBracketsReachCupti(*gpu, device);
  // Stop, start again, still recording.
  gpu->stop();
  gpu->start();
  testVmBracketsReachCupti(*gpu, device);
  gpu->stop();
  cudaFree(device);
  return tscope::gputest::result();
}
