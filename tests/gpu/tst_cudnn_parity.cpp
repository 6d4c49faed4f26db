// The cuDNN kernels against the CPU reference on a real GPU (issue 22; label `gpu`, no Qt): Conv2d
// (groups, strides, dilation, padding, odd sizes) under each algorithm mode, FusedConv2d (bias,
// relu, relu6, residual), the two convolution gradients, max and average pooling and their
// gradients, softmax and log-softmax along several axes and their gradients, the workspace limit,
// the choice record, batch norm (training, inference, the gradient graph, m = 1), and float64 left
// on the CPU. Skips (77) without a device. Ends with
// "N passed, N failed" (one per section).
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cudnn_options.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/grad/grad.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "gpu_check.h"
#include "gpu_device.h"
#include "gpu_values.h"

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace tscope::engine;
namespace cuda = tscope::engine::cuda;

namespace {
using tscope::gputest::random;
using tscope::gputest::section;

VarPtr var(DType d, Shape shape, const char* name) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

// Compiles outputs for the CPU and for the GPU (mode None: the graph as built), runs both on args
// (each list in calls), compares; *cudnnNodes: the GPU program's nodes run by cuDNN kernels.
bool sameOnBoth(const std::vector<VarPtr>& in, const std::vector<VarPtr>& out,
                const std::vector<std::vector<Tensor>>& calls, double rtol, double atol,
                int* cudnnNodes = nullptr) {
  CompileOptions cpuOptions;
  cpuOptions.mode = Mode::None;
  CompileOptions gpuOptions = cpuOptions;
  gpuOptions.device = Device::Cuda;
  Function cpu = compile(in, out, {}, cpuOptions);
  Function gpu = compile(in, out, {}, gpuOptions);
  if (cudnnNodes) {
    *cudnnNodes = 0;
    for (const LinkedNode& n : gpu.program().nodes())
      *cudnnNodes += n.kernel.device == Device::Cuda && n.kernel.source == "cudnn";
  }
  bool ok = true;
  for (const std::vector<Tensor>& args : calls) {
    const std::vector<Tensor> a = cpu(args), b = gpu(args);
    ok = ok && a.size() == b.size();
    for (std::size_t i = 0; ok && i < a.size(); ++i) {
      const bool close = b[i].device() == Device::Cpu && b[i].shape() == a[i].shape() &&
                         b[i].allClose(a[i], rtol, atol);
      if (!close)
        std::fprintf(stderr, "output %zu differs (shapes %s, %s):\ncpu %s\ngpu %s\n", i,
                     shapeToString(a[i].shape()).c_str(), shapeToString(b[i].shape()).c_str(),
                     a[i].toString().c_str(), b[i].toString().c_str());
      ok = ok && close;
    }
  }
  return ok;
}

struct ConvCase {
  const char* name;
  Shape x, w;
  Conv2dParams p;
};

Conv2dParams geo(std::int64_t s0, std::int64_t s1, std::int64_t p0, std::int64_t p1,
                 std::int64_t d0, std::int64_t d1, std::int64_t groups) {
  Conv2dParams p;
  p.stride = {s0, s1};
  p.padding = {p0, p1};
  p.dilation = {d0, d1};
  p.groups = groups;
  return p;
}

const std::vector<ConvCase>& convCases() {
  static const std::vector<ConvCase> cases = {
      {"plain 3x3", {2, 3, 8, 8}, {4, 3, 3, 3}, geo(1, 1, 0, 0, 1, 1, 1)},
      {"same padding odd", {1, 3, 7, 9}, {5, 3, 3, 3}, geo(1, 1, 1, 1, 1, 1, 1)},
      {"stride 2 odd", {2, 4, 11, 13}, {6, 4, 3, 3}, geo(2, 2, 1, 1, 1, 1, 1)},
      {"stride 3x2 pad 2x0", {1, 2, 10, 9}, {3, 2, 4, 2}, geo(3, 2, 2, 0, 1, 1, 1)},
      {"dilation 2", {1, 3, 12, 12}, {2, 3, 3, 3}, geo(1, 1, 2, 2, 2, 2, 1)},
      {"groups 2", {2, 6, 9, 9}, {4, 3, 3, 3}, geo(1, 1, 1, 1, 1, 1, 2)},
      {"depthwise s2", {1, 8, 10, 7}, {8, 1, 3, 3}, geo(2, 2, 1, 1, 1, 1, 8)},
      {"1x1", {3, 5, 4, 6}, {7, 5, 1, 1}, geo(1, 1, 0, 0, 1, 1, 1)},
      {"resnet-ish 7x7 s2", {2, 3, 32, 32}, {16, 3, 7, 7}, geo(2, 2, 3, 3, 1, 1, 1)},
  };
  return cases;
}

// Conv2d forward and both gradients for every case, under the current algorithm mode.
void convolutions() {
  unsigned seed = 1;
  for (const ConvCase& c : convCases()) {
    const VarPtr x = var(DType::Float32, c.x, "x"), w = var(DType::Float32, c.w, "w");
    const VarPtr y = conv2d(x, w, c.p);
    const Shape ys = y->type().shape();
    const VarPtr gy = var(DType::Float32, ys, "gy");
    const VarPtr gx = conv2dGradInputs(w, gy, constantInt(c.x[2]), constantInt(c.x[3]), c.p);
    const VarPtr gw = conv2dGradWeights(x, gy, constantInt(c.w[2]), constantInt(c.w[3]), c.p);
    int onDevice = 0;
    const bool ok =
        sameOnBoth({x, w, gy}, {y, gx, gw},
                   {{random(DType::Float32, c.x, seed), random(DType::Float32, c.w, seed + 1),
                     random(DType::Float32, ys, seed + 2)}},
                   2e-3, 2e-3, &onDevice);
    seed += 3;
    if (!ok || onDevice != 3)
      std::fprintf(stderr, "  %s (%d cuDNN nodes), last choice: %s\n", c.name, onDevice,
                   cuda::cudnnConvAlgoChoices().empty()
                       ? "none"
                       : cuda::cudnnConvAlgoChoices().back().algorithm.c_str());
    CHECK(ok);
    CHECK(onDevice == 3);
  }
}

void algorithmModes() {
  for (cuda::ConvAlgoMode mode :
       {cuda::ConvAlgoMode::GuessOnce, cuda::ConvAlgoMode::GuessOnShapeChange,
        cuda::ConvAlgoMode::TimeOnce, cuda::ConvAlgoMode::TimeOnShapeChange}) {
    cuda::setCudnnOptions({mode, std::size_t(256) << 20});
    cuda::forgetConvAlgoChoices();
    const int before = tscope::gputest::failures();
    convolutions();
    // Every case chose once per direction, in this mode; a timed mode reports a time.
    const std::vector<cuda::ConvAlgoChoice> choices = cuda::cudnnConvAlgoChoices();
    CHECK(choices.size() == 3 * convCases().size());
    for (const cuda::ConvAlgoChoice& c : choices) {
      CHECK(c.mode == mode);
      CHECK(!c.algorithm.empty());
      const bool timed =
          mode == cuda::ConvAlgoMode::TimeOnce || mode == cuda::ConvAlgoMode::TimeOnShapeChange;
      CHECK(timed == (c.timeMs >= 0));
    }
    std::printf("  %s: %s\n", std::string(cuda::convAlgoModeName(mode)).c_str(),
                tscope::gputest::failures() == before ? "ok" : "FAILED");
  }
  cuda::setCudnnOptions({});
}

// One node seeing two shapes (unknown static dims): *_on_shape_change choose again, *_once not.
void shapeChange() {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {-1, 3, -1, -1}), "x");
  const VarPtr w = var(DType::Float32, {4, 3, 3, 3}, "w");
  const VarPtr y = conv2d(x, w, geo(1, 1, 1, 1, 1, 1, 1));
  const std::vector<std::vector<Tensor>> calls = {
      {random(DType::Float32, {2, 3, 8, 8}, 40), random(DType::Float32, {4, 3, 3, 3}, 41)},
      {random(DType::Float32, {2, 3, 8, 8}, 42), random(DType::Float32, {4, 3, 3, 3}, 43)},
      {random(DType::Float32, {3, 3, 13, 11}, 44), random(DType::Float32, {4, 3, 3, 3}, 45)}};
  for (auto [mode, expected] :
       {std::pair{cuda::ConvAlgoMode::GuessOnShapeChange, 2},
        std::pair{cuda::ConvAlgoMode::TimeOnShapeChange, 2},
        std::pair{cuda::ConvAlgoMode::GuessOnce, 1}, std::pair{cuda::ConvAlgoMode::TimeOnce, 1}}) {
    cuda::setCudnnOptions({mode, std::size_t(256) << 20});
    cuda::forgetConvAlgoChoices();
    int onDevice = 0;
    CHECK(sameOnBoth({x, w}, {y}, calls, 2e-3, 2e-3, &onDevice));
    CHECK(onDevice == 1);
    const std::size_t made = cuda::cudnnConvAlgoChoices().size();
    if (made != static_cast<std::size_t>(expected))
      std::fprintf(stderr, "  %s: %zu choices, expected %d\n",
                   std::string(cuda::convAlgoModeName(mode)).c_str(), made, expected);
    CHECK(made == static_cast<std::size_t>(expected));
  }
  cuda::setCudnnOptions({});
}

void workspaceLimit() {
  cuda::setCudnnOptions({cuda::ConvAlgoMode::TimeOnce, 0});
  cuda::forgetConvAlgoChoices();
  convolutions();
  for (const cuda::ConvAlgoChoice& c : cuda::cudnnConvAlgoChoices()) CHECK(c.workspaceBytes == 0);
  cuda::setCudnnOptions({});
}

void fusedConvolutions() {
  const Shape xs{2, 4, 9, 9}, ws{6, 2, 3, 3}, bs{6};
  const Conv2dParams p = geo(1, 1, 1, 1, 1, 1, 2);
  const VarPtr x = var(DType::Float32, xs, "x"), w = var(DType::Float32, ws, "w");
  const VarPtr b = var(DType::Float32, bs, "b");
  const VarPtr r = var(DType::Float32, {2, 6, 9, 9}, "r");
  const std::vector<VarPtr> outs = {
      fusedConv2d(x, w, b, p, {}),
      fusedConv2d(x, w, b, p, {cpu::ConvActivation::Relu, 0, 0}),
      fusedConv2d(x, w, b, p, {cpu::ConvActivation::Clip, 0.0, 1.5}),
      fusedConv2dResidual(x, w, b, r, p, {cpu::ConvActivation::Relu, 0, 0}),
  };
  int onDevice = 0;
  CHECK(sameOnBoth({x, w, b, r}, outs,
                   {{random(DType::Float32, xs, 50), random(DType::Float32, ws, 51),
                     random(DType::Float32, bs, 52), random(DType::Float32, {2, 6, 9, 9}, 53)}},
                   2e-3, 2e-3, &onDevice));
  CHECK(onDevice == 4);
}

void pooling() {
  struct Case {
    bool average, includePad;
    Shape x;
    Pool2dParams p;
  };
  auto pp = [](std::int64_t k0, std::int64_t k1, std::int64_t s0, std::int64_t s1, std::int64_t p0,
               std::int64_t p1, bool includePad) {
    Pool2dParams p;
    p.kernel = {k0, k1};
    p.stride = {s0, s1};
    p.padding = {p0, p1};
    p.includePad = includePad;
    return p;
  };
  const std::vector<Case> cases = {
      {false, true, {2, 3, 8, 8}, pp(2, 2, 2, 2, 0, 0, true)},
      {false, true, {1, 4, 11, 9}, pp(3, 3, 2, 2, 1, 1, true)},
      {false, true, {1, 2, 7, 5}, pp(3, 2, 1, 1, 0, 1, true)},
      {true, true, {2, 3, 9, 9}, pp(3, 3, 2, 2, 1, 1, true)},
      {true, false, {2, 3, 9, 10}, pp(3, 3, 2, 3, 1, 1, false)},
      {true, true, {2, 5, 7, 7}, pp(7, 7, 7, 7, 0, 0, true)},
  };
  unsigned seed = 60;
  for (const Case& c : cases) {
    const VarPtr x = var(DType::Float32, c.x, "x");
    const VarPtr y = c.average ? avgPool2d(x, c.p) : maxPool2d(x, c.p);
    const Shape ys = y->type().shape();
    const VarPtr gy = var(DType::Float32, ys, "gy");
    const VarPtr gx = c.average ? avgPool2dGrad(gy, constantInt(c.x[2]), constantInt(c.x[3]), c.p)
                                : maxPool2dGrad(x, gy, c.p);
    int onDevice = 0;
    const bool ok =
        sameOnBoth({x, gy}, {y, gx},
                   {{random(DType::Float32, c.x, seed), random(DType::Float32, ys, seed + 1)}},
                   1e-5, 1e-5, &onDevice);
    seed += 2;
    if (!ok) std::fprintf(stderr, "  pooling case x %s\n", shapeToString(c.x).c_str());
    CHECK(ok);
    CHECK(onDevice == 2);
  }
}

void softmaxes() {
  struct Case {
    Shape x;
    int axis;
  };
  const std::vector<Case> cases = {
      {{7, 10}, -1}, {{7, 10}, 0}, {{2, 3, 5, 7}, 1}, {{2, 3, 5, 7}, -1}, {{33}, 0}};
  unsigned seed = 80;
  for (const Case& c : cases) {
    const VarPtr x = var(DType::Float32, c.x, "x"), g = var(DType::Float32, c.x, "g");
    const VarPtr s = softmax(x, c.axis), ls = logSoftmax(x, c.axis);
    const VarPtr gs = softmaxGrad(g, s, c.axis), gls = logSoftmaxGrad(g, ls, c.axis);
    int onDevice = 0;
    const bool ok = sameOnBoth(
        {x, g}, {s, ls, gs, gls},
        {{random(DType::Float32, c.x, seed, -5, 5), random(DType::Float32, c.x, seed + 1)}}, 1e-5,
        1e-5, &onDevice);
    seed += 2;
    if (!ok) std::fprintf(stderr, "  softmax %s axis %d\n", shapeToString(c.x).c_str(), c.axis);
    CHECK(ok);
    CHECK(onDevice == 4);
  }
}

void batchNorms() {
  // Note [Batch norm semantics on cuDNN]: biased var out of training, inference with given
  // statistics, the gradient graph (elementwise ops and sums on the device) and the running
  // statistics; NCHW per channel, (N, F) per feature, NHWC, and one element per statistic.
  struct Case {
    Shape x;
    std::vector<int> axes;
  };
  const Case cases[] = {{{8, 3, 5, 7}, {0, 2, 3}},
                        {{32, 20}, {0}},
                        {{4, 6, 6, 3}, {0, 1, 2}},
                        {{1, 4, 1, 1}, {0, 2, 3}}};  // m = 1
  unsigned seed = 100;
  for (const Case& c : cases) {
    Shape stat = c.x;
    for (int a : c.axes) stat[static_cast<std::size_t>(a)] = 1;
    const VarPtr x = var(DType::Float32, c.x, "x"), g = var(DType::Float32, stat, "g"),
                 b = var(DType::Float32, stat, "b"), rm = var(DType::Float32, stat, "rm"),
                 rv = var(DType::Float32, stat, "rv"), gy = var(DType::Float32, c.x, "gy");
    const BatchNormTrainResult t = batchNormTrain(x, g, b, c.axes, 1e-5);
    const VarPtr inf = batchNormInference(x, g, b, rm, rv, c.axes, 1e-3);
    const BatchNormRunningStats running = batchNormRunningStats(x, t, rm, rv, c.axes, 0.1);
    const VarPtr cost = sum(t.y * gy) + sum(inf * gy);
    const std::vector<VarPtr> grads = grad(cost, {x, g, b});
    std::vector<VarPtr> outs{t.y, t.mean, t.var, inf};
    // The running variance divides by m - 1: not for m = 1.
    if (shapeNumel(c.x) / shapeNumel(stat) > 1) {
      outs.push_back(running.mean);
      outs.push_back(running.var);
    }
    outs.insert(outs.end(), grads.begin(), grads.end());
    int onDevice = 0;
    const bool ok = sameOnBoth(
        {x, g, b, rm, rv, gy}, outs,
        {{random(DType::Float32, c.x, seed, -3, 5), random(DType::Float32, stat, seed + 1, 0.5, 2),
          random(DType::Float32, stat, seed + 2), random(DType::Float32, stat, seed + 3),
          random(DType::Float32, stat, seed + 4, 0.1, 2), random(DType::Float32, c.x, seed + 5)}},
        2e-4, 2e-4, &onDevice);
    seed += 6;
    if (!ok) std::fprintf(stderr, "  batch norm %s\n", shapeToString(c.x).c_str());
    CHECK(ok);
    CHECK(onDevice == 2);  // BatchNormTrain, BatchNormInference
  }
  // float64 stays on the CPU.
  const VarPtr x64 = var(DType::Float64, {6, 4}, "x64"), g64 = var(DType::Float64, {1, 4}, "g64");
  int onDevice = -1;
  CHECK(sameOnBoth({x64, g64}, {batchNormTrain(x64, g64, g64, {0}).y},
                   {{random(DType::Float64, {6, 4}, 120), random(DType::Float64, {1, 4}, 121)}},
                   1e-12, 1e-12, &onDevice));
  CHECK(onDevice == 0);
}

void float64StaysOnCpu() {
  const VarPtr x = var(DType::Float64, {1, 2, 5, 5}, "x"),
               w = var(DType::Float64, {3, 2, 3, 3}, "w");
  int onDevice = -1;
  CHECK(sameOnBoth(
      {x, w}, {softmax(conv2d(x, w), 1)},
      {{random(DType::Float64, {1, 2, 5, 5}, 90), random(DType::Float64, {3, 2, 3, 3}, 91)}}, 1e-12,
      1e-12, &onDevice));
  CHECK(onDevice == 0);
}
}  // namespace

int main() {
  tscope::gputest::startDevice();
  section("conv2d and gradients", convolutions);
  section("conv algorithm modes", algorithmModes);
  section("conv shape change", shapeChange);
  section("conv workspace limit 0", workspaceLimit);
  section("fused conv2d", fusedConvolutions);
  section("pooling and gradients", pooling);
  section("softmax and gradients", softmaxes);
  section("batch norm", batchNorms);
  section("float64 stays on the cpu", float64StaysOnCpu);
  tscope::gputest::sectionSummary();
  return tscope::gputest::result();
}
