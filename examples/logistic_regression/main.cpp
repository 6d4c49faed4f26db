// Trains a logistic regression (Theano's tutorial model: p = sigmoid(x.w + b), cross-entropy with
// an L2 penalty) with SGD on synthetic two-class data, prints the loss falling, and saves the
// training graph with test values and the values it computes on them.
//   example_logistic_regression [OUT.tsg [EXPECTED_DIR [EPOCHS]]]
//   (defaults: examples/graphs/logistic_regression.tsg,
//   examples/graphs/logistic_regression.expected, 20)

#include "../common/training.h"
#include "engine/grad/grad.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"

using namespace tscope::engine;
using namespace tscope::examples;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/graphs/logistic_regression.tsg";
  const std::string expected = argc > 2 ? argv[2] : "examples/graphs/logistic_regression.expected";
  const int epochs = argc > 3 ? std::atoi(argv[3]) : 20;
  constexpr std::int64_t kFeatures = 100, kSamples = 400, kBatch = 100;

  const DataSet data = syntheticClasses(kSamples, kFeatures, 2, 1.0f, 11);
  Tensor labels = data.y.astype(DType::Float32);

  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kFeatures}), "x");
  auto y = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "y");
  x->setTestValue(rows(data.x, 0, 8));
  y->setTestValue(rows(labels, 0, 8));
  auto w = SharedVariable::create(Tensor::zeros(DType::Float32, {kFeatures}), "w");
  auto b = SharedVariable::create(Tensor::scalar(DType::Float32, 0), "b");

  VarPtr p1, xent, cost, prediction;
  {
    NameScope scope("model");
    p1 = sigmoid(dot(x, w) + b);  // probability of class 1
    prediction = gt(p1, constant(0.5, DType::Float32));
    prediction->setName("prediction");
  }
  {
    NameScope scope("loss");
    xent = -y * log(p1) - (1.0 - y) * log(1.0 - p1);
    cost = mean(xent) + 0.01 * sum(w * w);
  }
  cost->setName("cost");
  std::vector<VarPtr> grads;
  {
    NameScope scope("grad");
    grads = grad(cost, std::vector<VarPtr>{w, b});
  }
  std::vector<Update> updates;
  {
    NameScope scope("sgd");
    updates = sgdUpdates(cost, {w, b}, 0.1, grads);
  }
  Function train = compile({x, y}, {cost, prediction}, updates);

  double first = 0, last = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double total = 0;
    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < kSamples / kBatch; ++i) {
      auto out = train({rows(data.x, i * kBatch, kBatch), rows(labels, i * kBatch, kBatch)});
      total += out[0].item();
      const auto pred = out[1].toDoubles();
      const auto truth = rows(labels, i * kBatch, kBatch).toDoubles();
      for (std::size_t k = 0; k < pred.size(); ++k) correct += pred[k] == truth[k];
    }
    const double avg = total / static_cast<double>(kSamples / kBatch);
    if (epoch == 0) first = avg;
    last = avg;
    if (epoch % 5 == 4 || epoch == 0)
      std::printf("epoch %d: cost %.4f, accuracy %.3f\n", epoch + 1, avg,
                  static_cast<double>(correct) / kSamples);
  }
  std::printf("cost %.4f -> %.4f\n", first, last);
  try {
    saveTrainingGraph({x, y}, {cost, prediction}, updates, path, expected,
                      "example_logistic_regression");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_logistic_regression: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s and %s/\n", path.c_str(), expected.c_str());
  return last < first ? 0 : 1;
}
