// NanGuard on two classic failures (engine/debug/nan_guard.h), each saved as a replayable .tsg:
//   1. an MLP trained by SGD whose learning rate explodes (x10 per step): the guard stops the
//      first step where a value grows past the "big" threshold (or overflows), the weights stay
//      as they were before it, and the report names the node that created the bad value;
//   2. a model that takes the log of a negative value in layer3/fc: the guard names the log,
//      even though fast_run fused it into a Composite, with the input element it read.
// Each failure is written with the inputs and weights of the failed call's start as test values;
// `tensorscope run FILE.tsg --nan-guard` reproduces the same event.
//   example_nan_hunt [OUT_DIR]   (default: examples/graphs/nan_hunt)

#include "engine/compile/function.h"
#include "engine/debug/nan_guard.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"

#include <cstdio>
#include <filesystem>
#include <random>

// Options are written as designated initializers naming only what a case sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;
namespace fs = std::filesystem;

namespace {

Tensor uniform(std::mt19937& rng, Shape shape, float limit) {
  std::uniform_real_distribution<float> d(-limit, limit);
  Tensor t = Tensor::empty(DType::Float32, shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// 1. The MLP whose learning rate explodes. Returns whether the guard caught it.
bool explodingLearningRate(const fs::path& out) {
  std::mt19937 rng(5);
  const std::int64_t kIn = 32, kHidden = 24, kOut = 4, kBatch = 16;
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kIn}), "x");
  auto y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "y");
  auto lr = Variable::create(TensorType(DType::Float32, {}), "lr");
  auto W1 = SharedVariable::create(uniform(rng, {kIn, kHidden}, 0.2f), "W1");
  auto b1 = SharedVariable::create(Tensor::zeros(DType::Float32, {kHidden}), "b1");
  auto W2 = SharedVariable::create(uniform(rng, {kHidden, kOut}, 0.2f), "W2");
  auto b2 = SharedVariable::create(Tensor::zeros(DType::Float32, {kOut}), "b2");
  VarPtr h, loss;
  {
    NameScope s("hidden");
    h = tanh(dot(x, W1) + b1);
  }
  {
    NameScope s("classifier");
    loss = mean(softmaxCrossEntropyWithLogits(dot(h, W2) + b2, y));
  }
  auto g = grad(loss, std::vector<VarPtr>{W1, b1, W2, b2});
  std::vector<Update> updates{
      {W1, W1 - g[0] * lr}, {b1, b1 - g[1] * lr}, {W2, W2 - g[2] * lr}, {b2, b2 - g[3] * lr}};
  // The original graph (mode none keeps the ids compile's clone gives), to name nodes by it.
  Function plain = compile({x, y, lr}, {loss}, updates);
  auto guard = std::make_shared<debug::NanGuard>(
      debug::NanGuardOptions{.saveFailure = (out / "mlp_lr_explodes.tsg").string()});
  Function step = compile({x, y, lr}, {loss}, updates,
                          {.mode = Mode::FastRun, .keepBuffers = true, .observers = {guard}});
  guard->watch(step, &plain.graph());
  Tensor xb = uniform(rng, {kBatch, kIn}, 1.0f);
  Tensor yb = Tensor::empty(DType::Int64, {kBatch});
  for (std::int64_t i = 0; i < kBatch; ++i) yb.data<std::int64_t>()[i] = i % kOut;
  double rate = 0.05;
  for (int s = 0; s < 40; ++s, rate *= 10) {
    const Tensor before = W1->value().clone();
    try {
      const double l = step({xb, yb, Tensor::scalar(DType::Float32, rate)})[0].item();
      std::printf("step %2d  lr %-8.3g loss %.4f\n", s, rate, l);
    } catch (const debug::NanGuardError& e) {
      std::printf("step %2d  lr %-8.3g stopped by NanGuard\n%s", s, rate,
                  e.report().toText().c_str());
      std::printf("W1 unchanged by the stopped step: %s\n",
                  W1->value().bitwiseEqual(before) ? "yes" : "NO");
      std::printf("saved %s\n", guard->lastFailureFile().c_str());
      return W1->value().bitwiseEqual(before);
    }
  }
  return false;
}

// 2. log of a negative value inside a fused elementwise chain.
bool logOfNegative(const fs::path& out) {
  std::mt19937 rng(9);
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 6}), "x");
  auto W = SharedVariable::create(uniform(rng, {6, 5}, 0.5f), "W");
  VarPtr y;
  {
    NameScope s("layer3");
    NameScope fc("fc");
    y = tanh(log(dot(x, W) + 1.0) * 0.5);
  }
  VarPtr score = sum(y);
  Function plain = compile({x}, {score});
  auto guard = std::make_shared<debug::NanGuard>(
      debug::NanGuardOptions{.saveFailure = (out / "log_negative.tsg").string()});
  Function f = compile({x}, {score}, {}, {.mode = Mode::FastRun, .observers = {guard}});
  guard->watch(f, &plain.graph());
  try {
    f({uniform(rng, {4, 6}, 2.0f)});
  } catch (const debug::NanGuardError& e) {
    std::printf("%s", e.report().toText().c_str());
    std::printf("saved %s\n", guard->lastFailureFile().c_str());
    return e.report().creator() != nullptr;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path out = argc > 1 ? fs::path(argv[1]) : fs::path("examples/graphs/nan_hunt");
  try {
    fs::create_directories(out);
    const bool a = explodingLearningRate(out);
    std::printf("\n");
    const bool b = logOfNegative(out);
    if (!a || !b) {
      std::fprintf(stderr, "example_nan_hunt: NanGuard did not catch %s\n",
                   !a ? "the exploding learning rate" : "the log of a negative value");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_nan_hunt: %s\n", e.what());
    return 1;
  }
  return 0;
}
