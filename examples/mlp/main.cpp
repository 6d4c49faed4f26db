// Trains a multi-layer perceptron 784-500-10 (tanh hidden layer, softmax cross-entropy) with SGD
// on synthetic data at batch 128, prints the loss falling, and saves the training graph with test
// values and the values it computes on them.
//   example_mlp [OUT.tsg [EXPECTED_DIR [EPOCHS]]]
//   (defaults: examples/graphs/mlp.tsg, examples/graphs/mlp.expected, 5)

#include "../common/training.h"
#include "engine/grad/grad.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"

#include <chrono>

using namespace tscope::engine;
using namespace tscope::examples;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/graphs/mlp.tsg";
  const std::string expected = argc > 2 ? argv[2] : "examples/graphs/mlp.expected";
  const int epochs = argc > 3 ? std::atoi(argv[3]) : 5;
  constexpr std::int64_t kIn = 784, kHidden = 500, kOut = 10, kBatch = 128, kSamples = 2048;
  const double lr = 0.1;

  std::mt19937 rng(20261129);
  const DataSet data = syntheticClasses(kSamples, kIn, kOut, 0.5f, 7);

  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kIn}), "x");
  auto y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "y");
  // Test values: a small batch, saved with the graph.
  x->setTestValue(rows(data.x, 0, 16));
  y->setTestValue(rows(data.y, 0, 16));

  auto W1 = SharedVariable::create(glorot(rng, kIn, kHidden), "W1");
  auto b1 = SharedVariable::create(Tensor::zeros(DType::Float32, {kHidden}), "b1");
  auto W2 = SharedVariable::create(glorot(rng, kHidden, kOut), "W2");
  auto b2 = SharedVariable::create(Tensor::zeros(DType::Float32, {kOut}), "b2");

  VarPtr h, logits, loss;
  {
    NameScope scope("hidden");
    h = tanh(dot(x, W1) + b1);
  }
  {
    NameScope scope("output");
    logits = dot(h, W2) + b2;
  }
  {
    NameScope scope("loss");
    loss = mean(softmaxCrossEntropyWithLogits(logits, y));
  }
  loss->setName("loss");
  std::vector<std::shared_ptr<SharedVariable>> params{W1, b1, W2, b2};
  std::vector<VarPtr> grads;
  {
    NameScope scope("grad");
    grads = grad(loss, std::vector<VarPtr>{W1, b1, W2, b2});
  }
  std::vector<Update> updates;
  {
    NameScope scope("sgd");
    updates = sgdUpdates(loss, params, lr, grads);
  }
  CompileOptions options;
  options.keepBuffers = true;
  Function train = compile({x, y}, {loss}, updates, options);

  double first = 0, last = 0;
  const auto start = std::chrono::steady_clock::now();
  int steps = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double total = 0;
    for (std::int64_t b = 0; b < kSamples / kBatch; ++b) {
      total +=
          train({rows(data.x, b * kBatch, kBatch), rows(data.y, b * kBatch, kBatch)})[0].item();
      ++steps;
    }
    const double avg = total / static_cast<double>(kSamples / kBatch);
    if (epoch == 0) first = avg;
    last = avg;
    std::printf("epoch %d: loss %.4f\n", epoch + 1, avg);
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d SGD steps, %.2f ms per step; loss %.4f -> %.4f\n", steps,
              steps ? ms / steps : 0.0, first, last);
  try {
    saveTrainingGraph({x, y}, {loss}, updates, path, expected, "example_mlp");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_mlp: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s and %s/\n", path.c_str(), expected.c_str());
  return last < first ? 0 : 1;
}
