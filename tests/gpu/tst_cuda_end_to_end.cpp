// Whole programs on a real GPU against the CPU (issue 22; label `gpu`, no Qt):
//   - an SGD MLP trained for several steps with its parameters device-resident (Note
//     [Device-resident shared variables] in engine/rewrite/rules/gpu_placement.h): the same
//     parameters as the CPU run, and no parameter byte crossing PCIe per step after warm-up
//     (cudaTransferStats);
//   - the gradients of an MLP and of a small CNN (conv, relu, max pool, flatten, dot, softmax
//     cross-entropy; nodes without a device kernel run on the CPU);
//   - NanGuard on a GPU graph: a NaN born in a device node is found and named as on the CPU, and
//     a raise leaves the device-resident parameters whole;
//   - a DebugSession on a GPU graph: a breakpoint pauses, the paused values (device tensors) read
//     as host copies, the run finishes and its updates land.
// Skips (77) without a device. Ends with "N passed, N failed" (one per section).
// TSCOPE_GPU_TEST_ON_CPU=1 runs every section with the "device" side compiled for the CPU and the
// device-only checks (placement, transfers) left out: how the graphs and the test's own logic are
// checked on a machine without a GPU.
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/debug/breakpoints.h"
#include "engine/debug/debug_session.h"
#include "engine/debug/nan_guard.h"
#include "engine/grad/grad.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "engine/tensor/device_memory.h"
#include "gpu_check.h"
#include "gpu_device.h"
#include "gpu_values.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

using namespace tscope::engine;
namespace dbg = tscope::engine::debug;

namespace {
using tscope::gputest::random;
using tscope::gputest::section;

bool g_dry = false;  // TSCOPE_GPU_TEST_ON_CPU
// Where the "device" side runs: the GPU, or the CPU in a dry run.
Device target() {
  return g_dry ? Device::Cpu : Device::Cuda;
}

VarPtr var(DType d, Shape shape, const char* name) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

Function compileOn(Device device, const std::vector<VarPtr>& in, const std::vector<VarPtr>& out,
                   const std::vector<Update>& updates = {}, Mode mode = Mode::FastRun,
                   std::vector<std::shared_ptr<ExecutionObserver>> observers = {}) {
  CompileOptions o;
  o.mode = mode;
  o.device = device;
  o.observers = std::move(observers);
  return compile(in, out, updates, o);
}

int deviceNodes(const Function& f) {
  int n = 0;
  for (const LinkedNode& node : f.program().nodes()) n += node.kernel.device == Device::Cuda;
  return n;
}

bool closeTo(const Tensor& gpu, const Tensor& cpu, double rtol, double atol,
             const std::string& what) {
  const bool ok = gpu.device() == Device::Cpu && gpu.allClose(cpu, rtol, atol);
  if (!ok)
    std::fprintf(stderr, "%s differs:\ncpu %s\ngpu %s\n", what.c_str(), cpu.toString(6).c_str(),
                 gpu.toString(6).c_str());
  return ok;
}

// One-hot rows for labels i % classes.
Tensor oneHot(std::int64_t rows, std::int64_t classes) {
  std::vector<double> v(static_cast<std::size_t>(rows * classes), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    v[static_cast<std::size_t>(r * classes + (r * 7) % classes)] = 1;
  return Tensor::fromDoubles(DType::Float32, {rows, classes}, v);
}

template <class T>
T wait(std::future<T> f) {
  if (f.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
    throw std::runtime_error("a DebugSession command did not answer within 120 s");
  return f.get();
}

// A 784-128-64 MLP, tanh hidden layer, squared error, SGD: every node has a device kernel.
struct Mlp {
  static constexpr std::int64_t kBatch = 64;
  std::shared_ptr<SharedVariable> W1, b1, W2, b2;
  VarPtr x = var(DType::Float32, {kBatch, 784}, "x");
  VarPtr t = var(DType::Float32, {kBatch, 64}, "t");
  VarPtr cost;
  std::vector<Update> updates;
  explicit Mlp(unsigned seed) {
    W1 = SharedVariable::create(random(DType::Float32, {784, 128}, seed, -0.05, 0.05), "W1");
    b1 = SharedVariable::create(random(DType::Float32, {128}, seed + 1, -0.1, 0.1), "b1");
    W2 = SharedVariable::create(random(DType::Float32, {128, 64}, seed + 2, -0.1, 0.1), "W2");
    b2 = SharedVariable::create(random(DType::Float32, {64}, seed + 3, -0.1, 0.1), "b2");
    const VarPtr h = tanh(dot(x, W1) + b1);
    const VarPtr y = dot(h, W2) + b2;
    cost = sum(sqr(y - t)) * (1.0 / kBatch);
    const std::vector<VarPtr> params{W1, b1, W2, b2};
    const std::vector<VarPtr> g = grad(cost, params);
    for (std::size_t i = 0; i < params.size(); ++i)
      updates.push_back({params[i], params[i] - g[i] * 0.05});
  }
  std::vector<std::shared_ptr<SharedVariable>> params() const { return {W1, b1, W2, b2}; }
};

void sgdMlpResident() {
  Mlp cpuNet(31), gpuNet(31);
  Function cpu = compileOn(Device::Cpu, {cpuNet.x, cpuNet.t}, {cpuNet.cost}, cpuNet.updates);
  Function gpu = compileOn(target(), {gpuNet.x, gpuNet.t}, {gpuNet.cost}, gpuNet.updates);
  // The four parameters are device twins in the compiled graph.
  int twins = 0;
  for (const VarPtr& in : gpu.graph().inputs())
    twins += in->kind() == Variable::Kind::Shared && in->type().device() == Device::Cuda;
  CHECK(g_dry || twins == 4);
  const std::vector<Tensor> args{random(DType::Float32, {Mlp::kBatch, 784}, 40, 0, 1),
                                 random(DType::Float32, {Mlp::kBatch, 64}, 41, -1, 1)};
  const std::int64_t argBytes = static_cast<std::int64_t>(args[0].nbytes() + args[1].nbytes());
  std::int64_t smallestParameter = 1 << 30, parameterBytes = 0;
  for (const auto& p : gpuNet.params()) {
    const auto b = static_cast<std::int64_t>(shapeNumel(p->type().shape()) * 4);
    smallestParameter = std::min(smallestParameter, b);
    parameterBytes += b;
  }
  for (int step = 0; step < 8; ++step) {
    const cuda::CudaTransferStats before = cuda::cudaTransferStats();
    const Tensor a = cpu(args)[0];
    const Tensor b = gpu(args)[0];
    const cuda::CudaTransferStats after = cuda::cudaTransferStats();
    CHECK(closeTo(b, a, 1e-4, 1e-4, "cost at step " + std::to_string(step)));
    const std::int64_t up = after.hostToDeviceBytes - before.hostToDeviceBytes;
    const std::int64_t down = after.deviceToHostBytes - before.deviceToHostBytes;
    std::printf("  step %d: %lld copies / %lld bytes to the device, %lld / %lld back\n", step,
                static_cast<long long>(after.hostToDevice - before.hostToDevice),
                static_cast<long long>(up),
                static_cast<long long>(after.deviceToHost - before.deviceToHost),
                static_cast<long long>(down));
    if (g_dry) {
      // Nothing crosses on the CPU.
    } else if (step == 0) {
      CHECK(up >= argBytes + parameterBytes);  // the parameters went up once
    } else {
      // The arguments and a few scalar constants go up, the cost comes back: no parameter.
      CHECK(up >= argBytes && up - argBytes < smallestParameter);
      CHECK(down < smallestParameter);
    }
  }
  for (const auto& p : gpuNet.params()) CHECK(g_dry || p->newestOnDevice());
  const cuda::CudaTransferStats beforeRead = cuda::cudaTransferStats();
  const auto cpuParams = cpuNet.params(), gpuParams = gpuNet.params();
  for (std::size_t i = 0; i < gpuParams.size(); ++i)
    CHECK(closeTo(gpuParams[i]->value(), cpuParams[i]->value(), 1e-4, 1e-5, gpuParams[i]->name()));
  const cuda::CudaTransferStats afterRead = cuda::cudaTransferStats();
  CHECK(g_dry || afterRead.deviceToHostBytes - beforeRead.deviceToHostBytes == parameterBytes);
  CHECK(g_dry || afterRead.deviceToHost - beforeRead.deviceToHost == 4);
  // setValue replaces the device copy: the next step uploads that parameter once.
  const Tensor fresh = random(DType::Float32, {128, 64}, 50, -0.1, 0.1);
  cpuNet.W2->setValue(fresh);
  gpuNet.W2->setValue(fresh);
  const cuda::CudaTransferStats beforeSet = cuda::cudaTransferStats();
  CHECK(closeTo(gpu(args)[0], cpu(args)[0], 1e-4, 1e-4, "cost after setValue"));
  const std::int64_t up = cuda::cudaTransferStats().hostToDeviceBytes - beforeSet.hostToDeviceBytes;
  CHECK(g_dry ||
        (up - argBytes >= 128 * 64 * 4 && up - argBytes < 128 * 64 * 4 + smallestParameter));
  CHECK(closeTo(gpuNet.W2->value(), cpuNet.W2->value(), 1e-4, 1e-5, "W2 after setValue"));
}

void mlpGradients() {
  // 784-256-10 with softmax cross-entropy (the loss node runs on the CPU).
  const VarPtr x = var(DType::Float32, {32, 784}, "x"), t = var(DType::Float32, {32, 10}, "t");
  auto W1 = SharedVariable::create(random(DType::Float32, {784, 256}, 60, -0.05, 0.05), "W1");
  auto b1 = SharedVariable::create(random(DType::Float32, {256}, 61, -0.1, 0.1), "b1");
  auto W2 = SharedVariable::create(random(DType::Float32, {256, 10}, 62, -0.1, 0.1), "W2");
  auto b2 = SharedVariable::create(random(DType::Float32, {10}, 63, -0.1, 0.1), "b2");
  const VarPtr h = relu(dot(x, W1) + b1);
  const VarPtr logits = dot(h, W2) + b2;
  const VarPtr cost = mean(softmaxCrossEntropyWithLogits(logits, t));
  const std::vector<VarPtr> g = grad(cost, {W1, b1, W2, b2});
  std::vector<VarPtr> outs{cost};
  outs.insert(outs.end(), g.begin(), g.end());
  Function cpu = compileOn(Device::Cpu, {x, t}, outs), gpu = compileOn(target(), {x, t}, outs);
  std::printf("  %d of %zu nodes on the device\n", deviceNodes(gpu), gpu.program().nodes().size());
  CHECK(g_dry || deviceNodes(gpu) > 0);
  const std::vector<Tensor> args{random(DType::Float32, {32, 784}, 64, 0, 1), oneHot(32, 10)};
  const std::vector<Tensor> a = cpu(args), b = gpu(args);
  const char* names[] = {"cost", "dW1", "db1", "dW2", "db2"};
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(closeTo(b[i], a[i], 1e-3, 1e-5, names[i]));
}

void cnnGradients() {
  // x (8, 3, 16, 16) -> conv 3x3 pad 1 (8 filters) -> relu -> max pool 2 -> flatten (8, 512)
  // -> dot (512, 10) -> softmax cross-entropy. Gradients of the weights and of x.
  const VarPtr x = var(DType::Float32, {8, 3, 16, 16}, "x"), t = var(DType::Float32, {8, 10}, "t");
  auto Wc = SharedVariable::create(random(DType::Float32, {8, 3, 3, 3}, 70, -0.3, 0.3), "Wc");
  auto Wf = SharedVariable::create(random(DType::Float32, {512, 10}, 71, -0.1, 0.1), "Wf");
  auto bf = SharedVariable::create(random(DType::Float32, {10}, 72, -0.1, 0.1), "bf");
  Conv2dParams conv;
  conv.padding = {1, 1};
  const VarPtr c = relu(conv2d(x, Wc, conv));
  const VarPtr p = maxPool2d(c, Pool2dParams::window(2, 2));
  const VarPtr logits = dot(flatten(p, 2), Wf) + bf;
  const VarPtr cost = mean(softmaxCrossEntropyWithLogits(logits, t));
  const std::vector<VarPtr> g = grad(cost, {Wc, Wf, bf, x});
  std::vector<VarPtr> outs{cost};
  outs.insert(outs.end(), g.begin(), g.end());
  Function cpu = compileOn(Device::Cpu, {x, t}, outs), gpu = compileOn(target(), {x, t}, outs);
  std::printf("  %d of %zu nodes on the device\n", deviceNodes(gpu), gpu.program().nodes().size());
  CHECK(g_dry || deviceNodes(gpu) > 0);
  const std::vector<Tensor> args{random(DType::Float32, {8, 3, 16, 16}, 73), oneHot(8, 10)};
  const std::vector<Tensor> a = cpu(args), b = gpu(args);
  const char* names[] = {"cost", "dWc", "dWf", "dbf", "dx"};
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(closeTo(b[i], a[i], 1e-3, 1e-5, names[i]));
  // A training step of the same CNN: parameters device-resident, equal to the CPU's after 3 steps.
  auto step = [&](Device d, std::vector<std::shared_ptr<SharedVariable>>& ps) {
    ps = {SharedVariable::create(Wc->value(), "Wc"), SharedVariable::create(Wf->value(), "Wf"),
          SharedVariable::create(bf->value(), "bf")};
    const VarPtr cc = relu(conv2d(x, ps[0], conv));
    const VarPtr lg = dot(flatten(maxPool2d(cc, Pool2dParams::window(2, 2)), 2), ps[1]) + ps[2];
    const VarPtr loss = mean(softmaxCrossEntropyWithLogits(lg, t));
    const std::vector<VarPtr> gs = grad(loss, {ps[0], ps[1], ps[2]});
    std::vector<Update> ups;
    for (std::size_t i = 0; i < 3; ++i) ups.push_back({ps[i], ps[i] - gs[i] * 0.1});
    return compileOn(d, {x, t}, {loss}, ups);
  };
  std::vector<std::shared_ptr<SharedVariable>> pc, pg;
  Function trainCpu = step(Device::Cpu, pc), trainGpu = step(target(), pg);
  for (int i = 0; i < 3; ++i)
    CHECK(
        closeTo(trainGpu(args)[0], trainCpu(args)[0], 1e-3, 1e-5, "cnn loss " + std::to_string(i)));
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(closeTo(pg[i]->value(), pc[i]->value(), 1e-3, 1e-5, "cnn " + pg[i]->name()));
}

// The fields that name a NaN and its creator, equal on both devices.
bool sameReport(const dbg::NanReport& gpu, const dbg::NanReport& cpu) {
  bool ok = gpu.check == cpu.check && gpu.where == cpu.where && gpu.variable == cpu.variable &&
            gpu.firstIndex == cpu.firstIndex && gpu.counts.nan == cpu.counts.nan &&
            gpu.counts.posInf == cpu.counts.posInf && gpu.counts.negInf == cpu.counts.negInf &&
            gpu.node.op == cpu.node.op && gpu.updateOf == cpu.updateOf;
  const dbg::ChainLink* a = gpu.creator();
  const dbg::ChainLink* b = cpu.creator();
  ok = ok && (a != nullptr) == (b != nullptr);
  if (a && b)
    ok = ok && a->node.op == b->node.op && a->variable == b->variable &&
         a->node.scope == b->node.scope && a->node.site == b->node.site &&
         a->firstIndex == b->firstIndex && a->node.gradientOf == b->node.gradientOf;
  if (!ok)
    std::fprintf(stderr, "reports differ:\n--- cpu\n%s\n--- gpu\n%s\n", cpu.toText().c_str(),
                 gpu.toText().c_str());
  return ok;
}

void nanGuardOnDevice() {
  // z = log(x) * 3 + 1, fused into one Composite on the device (fast_run) and left apart (none):
  // log of a negative element is born on the device.
  const VarPtr x = var(DType::Float32, {4, 5}, "x");
  const VarPtr y = log(x);
  y->setName("y");
  const VarPtr z = y * 3.0 + 1.0;
  z->setName("z");
  std::vector<double> v(20, 2.0);
  v[7] = -1.0;
  v[13] = -3.0;
  const Tensor bad = Tensor::fromDoubles(DType::Float32, {4, 5}, v);
  for (Mode mode : {Mode::None, Mode::FastRun}) {
    dbg::NanGuardOptions options;
    options.action = dbg::NanAction::Warn;
    auto cpuGuard = std::make_shared<dbg::NanGuard>(options);
    auto gpuGuard = std::make_shared<dbg::NanGuard>(options);
    Function cpu = compileOn(Device::Cpu, {x}, {sum(z)}, {}, mode, {cpuGuard});
    Function gpu = compileOn(target(), {x}, {sum(z)}, {}, mode, {gpuGuard});
    cpuGuard->watch(cpu);
    gpuGuard->watch(gpu);
    CHECK(g_dry || deviceNodes(gpu) > 0);
    cpu({bad});
    gpu({bad});
    const auto a = cpuGuard->events(), b = gpuGuard->events();
    CHECK(!a.empty() && a.size() == b.size());
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) CHECK(sameReport(b[i], a[i]));
    if (!b.empty()) {
      CHECK(b.front().counts.nan == 2);
      CHECK(b.front().firstIndex == (std::vector<std::int64_t>{1, 2}));
      const dbg::ChainLink* creator = b.front().creator();
      CHECK(creator != nullptr && creator->node.op.find("log") != std::string::npos);
      std::printf("  %s: %s\n", mode == Mode::None ? "none" : "fast_run",
                  b.front().summary().c_str());
    }
  }
  // Raise during an SGD step whose update goes NaN: the device-resident parameters stay whole.
  Mlp net(80);
  // Raise; the inputs unchecked, so the NaN is found in the first device node that reads it.
  dbg::NanGuardOptions raise;
  raise.checkInputs = false;
  auto guard = std::make_shared<dbg::NanGuard>(raise);
  Function gpu =
      compileOn(target(), {net.x, net.t}, {net.cost}, net.updates, Mode::FastRun, {guard});
  guard->watch(gpu);
  const std::vector<Tensor> good{random(DType::Float32, {Mlp::kBatch, 784}, 81, 0, 1),
                                 random(DType::Float32, {Mlp::kBatch, 64}, 82, -1, 1)};
  gpu(good);
  std::vector<Tensor> before;
  for (const auto& p : net.params()) before.push_back(p->value().clone());
  Tensor poisoned = good[1].clone();
  poisoned.set({3, 5}, std::nan(""));
  bool raised = false;
  try {
    gpu({good[0], poisoned});
  } catch (const dbg::NanGuardError& e) {
    raised = true;
    std::printf("  raised: %s\n", e.report().summary().c_str());
  }
  CHECK(raised);
  for (std::size_t i = 0; i < before.size(); ++i)
    CHECK(net.params()[i]->value().bitwiseEqual(before[i]));
}

void debugSessionOnDevice() {
  Mlp cpuNet(90), gpuNet(90);
  Function cpu = compileOn(Device::Cpu, {cpuNet.x, cpuNet.t}, {cpuNet.cost}, cpuNet.updates);
  Function gpu = compileOn(target(), {gpuNet.x, gpuNet.t}, {gpuNet.cost}, gpuNet.updates);
  const std::vector<Tensor> args{random(DType::Float32, {Mlp::kBatch, 784}, 91, 0, 1),
                                 random(DType::Float32, {Mlp::kBatch, 64}, 92, -1, 1)};
  // The first Dot on the device: break after it, read what it computed.
  const Apply* firstDot = nullptr;
  for (const Apply* node : gpu.program().schedule())
    if (!firstDot && node->op().name() == "Dot" && node->outputRef(0).type().device() == target())
      firstDot = node;
  if (!firstDot)
    for (const Apply* node : gpu.program().schedule())
      if (!firstDot && node->outputRef(0).type().device() == target() &&
          node->op().name() != "GpuFromHost")
        firstDot = node;
  CHECK(firstDot != nullptr);
  if (!firstDot) return;
  dbg::DebugSession s(gpu);
  wait(s.addBreakpoint(dbg::parseBreakSpec("node:" + std::to_string(firstDot->id()))));
  dbg::SessionState st = wait(s.run(args));
  CHECK(st.phase == dbg::SessionPhase::Paused);
  // Every value of the frame reads as a host copy; the device-resident W1 equals the CPU's.
  const std::vector<dbg::ValueView> all = wait(s.values(0));
  CHECK(!all.empty());
  for (const dbg::ValueView& v : all) CHECK(!v.value.defined() || v.value.device() == Device::Cpu);
  const std::optional<dbg::ValueView> w1 = wait(s.value("W1"));
  CHECK(w1.has_value() && closeTo(w1->value, cpuNet.W1->value(), 0, 0, "paused W1"));
  const std::optional<dbg::ValueView> out =
      wait(s.value("#" + std::to_string(firstDot->outputRef(0).id())));
  CHECK(out.has_value() && out->value.device() == Device::Cpu &&
        out->value.shape() == firstDot->outputRef(0).type().shape());
  st = wait(s.run());
  CHECK(st.phase == dbg::SessionPhase::Finished);
  const std::vector<Tensor> result = wait(s.finish());
  CHECK(closeTo(result[0], cpu(args)[0], 1e-4, 1e-4, "session cost"));
  const auto cpuParams = cpuNet.params(), gpuParams = gpuNet.params();
  for (std::size_t i = 0; i < gpuParams.size(); ++i)
    CHECK(closeTo(gpuParams[i]->value(), cpuParams[i]->value(), 1e-4, 1e-5,
                  "after session " + gpuParams[i]->name()));
}
}  // namespace

int main() {
  g_dry = tscope::gputest::startDeviceOrDryRun();
  section("sgd mlp (resident params)", sgdMlpResident);
  section("mlp gradients", mlpGradients);
  section("cnn gradients and step", cnnGradients);
  section("nan guard on device", nanGuardOnDevice);
  section("debug session on device", debugSessionOnDevice);
  tscope::gputest::sectionSummary();
  return tscope::gputest::result();
}
