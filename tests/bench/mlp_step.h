#pragma once
// The training step the VM, debugger and session benchmarks time (bench_vm, bench_debug,
// bench_session): an MLP 784-500-10 (tanh hidden layer, softmax cross-entropy) with SGD updates
// of W1, b1, W2, b2 at learning rate `lr`, and a batch of 128 synthetic examples in `args`.
//
//   tscope::bench::MlpStep mlp(0.01);
//   Function step = mlp.compile({.mode = Mode::FastRun, .keepBuffers = true});
//   step(mlp.args);

#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"

#include <random>
#include <vector>

namespace tscope::bench {

inline engine::Tensor uniform(std::mt19937& rng, engine::Shape shape, float limit) {
  std::uniform_real_distribution<float> d(-limit, limit);
  engine::Tensor t = engine::Tensor::empty(engine::DType::Float32, shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

struct MlpStep {
  static constexpr std::int64_t kIn = 784, kHidden = 500, kOut = 10, kBatch = 128;
  engine::VarPtr x, y, loss;
  std::shared_ptr<engine::SharedVariable> W1, b1, W2, b2;
  std::vector<engine::Update> updates;
  std::vector<engine::Tensor> args;  // x: uniform in [-1, 1), y: i % 10

  explicit MlpStep(double lr) {
    using namespace engine;
    std::mt19937 rng(1);
    x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kIn}), "x");
    y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "y");
    W1 = SharedVariable::create(uniform(rng, {kIn, kHidden}, 0.07f), "W1");
    b1 = SharedVariable::create(Tensor::zeros(DType::Float32, {kHidden}), "b1");
    W2 = SharedVariable::create(uniform(rng, {kHidden, kOut}, 0.1f), "W2");
    b2 = SharedVariable::create(Tensor::zeros(DType::Float32, {kOut}), "b2");
    auto h = tanh(dot(x, W1) + b1);
    loss = mean(softmaxCrossEntropyWithLogits(dot(h, W2) + b2, y));
    loss->setName("loss");
    auto g = grad(loss, std::vector<VarPtr>{W1, b1, W2, b2});
    updates = {
        {W1, W1 - g[0] * lr}, {b1, b1 - g[1] * lr}, {W2, W2 - g[2] * lr}, {b2, b2 - g[3] * lr}};
    Tensor yb = Tensor::empty(DType::Int64, {kBatch});
    for (std::int64_t i = 0; i < kBatch; ++i) yb.data<std::int64_t>()[i] = i % kOut;
    args = {uniform(rng, {kBatch, kIn}, 1.0f), yb};
  }

  engine::Function compile(engine::CompileOptions options) const {
    return engine::compile({x, y}, {loss}, updates, std::move(options));
  }
};

}  // namespace tscope::bench
