// A small AlexNet-shaped CNN built from nn modules: five convolutions (the first strided) with
// ReLU and three overlapping 3x3/2 max-pools in `features`, then dropout and three Linear layers
// in `classifier`, on 64x64 RGB images (AlexNet's 224x224 at a quarter of its width). It trains a
// few SGD steps on synthetic images (each class a random prototype plus noise), prints the loss,
// and saves the training graph with test values (the first batch) as .tsg; the nodes are scoped by
// module ("alexnet/features/0", "alexnet/classifier/4").
//   example_alexnet_like [OUT.tsg [STEPS]]   (defaults: examples/graphs/alexnet_like.tsg, 10)

#include "../common/training.h"
#include "engine/grad/grad.h"
#include "engine/nn/containers.h"
#include "engine/nn/conv_layers.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/reshape.h"

#include <chrono>

using namespace tscope::engine;
using namespace tscope::examples;

namespace {

constexpr std::int64_t kBatch = 16, kClasses = 10, kSide = 64;

template <class M, class... Args>
nn::ModulePtr make(Args&&... args) {
  return std::make_shared<M>(std::forward<Args>(args)...);
}

class AlexNetLike final : public nn::Module {
 public:
  AlexNetLike() : Module("AlexNetLike") {
    const nn::Pair k3{3, 3}, s2{2, 2};
    features = registerModule(
        "features",
        std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
            make<nn::Conv2d>(3, 16, 5, nn::Conv2dOptions{.stride = {2, 2}, .padding = {2, 2}}),
            make<nn::ReLU>(), make<nn::MaxPool2d>(k3, s2),
            make<nn::Conv2d>(16, 48, 5, nn::Conv2dOptions{.padding = {2, 2}}), make<nn::ReLU>(),
            make<nn::MaxPool2d>(k3, s2),
            make<nn::Conv2d>(48, 96, 3, nn::Conv2dOptions{.padding = {1, 1}}), make<nn::ReLU>(),
            make<nn::Conv2d>(96, 64, 3, nn::Conv2dOptions{.padding = {1, 1}}), make<nn::ReLU>(),
            make<nn::Conv2d>(64, 64, 3, nn::Conv2dOptions{.padding = {1, 1}}), make<nn::ReLU>(),
            make<nn::MaxPool2d>(k3, s2)}));
    classifier = registerModule(
        "classifier", std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
                          make<nn::Dropout>(0.5), make<nn::Linear>(64 * 3 * 3, 256),
                          make<nn::ReLU>(), make<nn::Dropout>(0.5), make<nn::Linear>(256, 256),
                          make<nn::ReLU>(), make<nn::Linear>(256, kClasses)}));
  }
  std::shared_ptr<nn::Sequential> features, classifier;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& in) override {
    return {(*classifier)(flatten((*features)(in[0]), 2))};
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/graphs/alexnet_like.tsg";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  nn::manualSeed(20261207);
  const DataSet data = syntheticClasses(kBatch * 4, 3 * kSide * kSide, kClasses, 0.5f, 11);
  auto batch = [&](std::int64_t b) {
    const std::int64_t first = (b % 4) * kBatch;
    return std::pair{rows(data.x, first, kBatch).reshape({kBatch, 3, kSide, kSide}),
                     rows(data.y, first, kBatch)};
  };

  auto model = std::make_shared<AlexNetLike>();
  model->setName("alexnet");
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3, kSide, kSide}), "images");
  auto y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "labels");
  x->setTestValue(batch(0).first);
  y->setTestValue(batch(0).second);
  VarPtr logits = (*model)(x), loss;
  {
    NameScope scope("loss");
    loss = mean(softmaxCrossEntropyWithLogits(logits, y));
  }
  loss->setName("loss");
  const auto params = model->parameters();
  std::vector<VarPtr> grads;
  {
    NameScope scope("grad");
    grads = grad(loss, std::vector<VarPtr>(params.begin(), params.end()));
  }
  std::vector<Update> updates;
  {
    NameScope scope("sgd");
    updates = sgdUpdates(loss, params, 0.01, grads);
  }
  for (const Update& u : model->updates()) updates.push_back(u);  // the dropout generators
  try {
    CompileOptions options;
    options.mode = Mode::FastRun;
    options.keepBuffers = true;
    Function train = compile({x, y}, {loss}, updates, options);
    double first = 0, last = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
      auto [bx, by] = batch(step);
      last = train({bx, by})[0].item();
      if (step == 0) first = last;
      std::printf("step %d: loss %.4f\n", step + 1, last);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%d SGD steps of batch %lld, %.1f ms per step; %zu parameters tensors\n", steps,
                static_cast<long long>(kBatch), steps ? ms / steps : 0.0, params.size());
    saveTrainingGraph({x, y}, {loss}, updates, path, "", "example_alexnet_like");
    std::printf("wrote %s (loss %.4f -> %.4f)\n", path.c_str(), first, last);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_alexnet_like: %s\n", e.what());
    return 1;
  }
  return 0;
}
