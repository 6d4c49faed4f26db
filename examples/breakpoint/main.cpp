// A BreakPoint on a loss spike: a small MLP (20-16-3, tanh, softmax cross-entropy) trains with SGD
// on synthetic data; the loss passes through BreakPoint{loss_spike}(loss > 2.5, loss, W1), and at
// step 12 a corrupted batch (inputs scaled by 40, labels rotated) makes the loss jump. The
// training VM runs with breakOps on (VM::setBreakOps), so that step pauses right after the
// BreakPoint: the example prints the monitored loss and the norm of W1, then continues. Every
// other step runs as if the BreakPoint were not there (a view). It saves the training graph with
// the corrupted batch as test values, so `tensorscope debug` on the file stops at the spike.
//   example_breakpoint [OUT.tsg [EXPECTED_DIR]]
//   (defaults: examples/graphs/breakpoint.tsg, examples/graphs/breakpoint.expected)
// Exit status 0 when the pause happened exactly once, at the corrupted step.

#include "../common/training.h"
#include "engine/grad/grad.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"

#include <algorithm>
#include <chrono>
#include <cmath>

using namespace tscope::engine;
using namespace tscope::examples;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/graphs/breakpoint.tsg";
  const std::string expected = argc > 2 ? argv[2] : "examples/graphs/breakpoint.expected";
  constexpr std::int64_t kIn = 20, kHidden = 16, kOut = 3, kBatch = 32, kSamples = 640;
  constexpr int kSteps = 20, kSpikeStep = 12;
  constexpr double kThreshold = 2.5;  // clean batches stay below 1.7

  std::mt19937 rng(20261202);
  const DataSet data = syntheticClasses(kSamples, kIn, kOut, 0.3f, 11);
  // The corrupted batch: inputs scaled by 40, labels rotated by one class.
  Tensor badX = rows(data.x, 0, kBatch);
  Tensor badY = rows(data.y, 0, kBatch);
  for (std::int64_t i = 0; i < badX.numel(); ++i) badX.data<float>()[i] *= 40.0f;
  for (std::int64_t i = 0; i < badY.numel(); ++i)
    badY.data<std::int64_t>()[i] = (badY.data<std::int64_t>()[i] + 1) % kOut;

  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kIn}), "x");
  auto y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "y");
  x->setTestValue(badX);
  y->setTestValue(badY);
  auto W1 = SharedVariable::create(glorot(rng, kIn, kHidden), "W1");
  auto b1 = SharedVariable::create(Tensor::zeros(DType::Float32, {kHidden}), "b1");
  auto W2 = SharedVariable::create(glorot(rng, kHidden, kOut), "W2");
  auto b2 = SharedVariable::create(Tensor::zeros(DType::Float32, {kOut}), "b2");

  VarPtr loss, watched;
  {
    NameScope scope("model");
    VarPtr h = tanh(dot(x, W1) + b1);
    loss = mean(softmaxCrossEntropyWithLogits(dot(h, W2) + b2, y));
  }
  {
    NameScope scope("watch");
    const std::vector<VarPtr> seen =
        breakpoint("loss_spike", gt(loss, constant(kThreshold, DType::Float32)), {loss, W1});
    watched = seen[0];
  }
  watched->setName("loss");
  std::vector<std::shared_ptr<SharedVariable>> params{W1, b1, W2, b2};
  const std::vector<VarPtr> grads = grad(watched, std::vector<VarPtr>{W1, b1, W2, b2});
  const std::vector<Update> updates = sgdUpdates(watched, params, 0.2, grads);
  CompileOptions options;
  options.mode = Mode::FastRun;
  Function train = compile({x, y}, {watched}, updates, options);
  train.vm().setBreakOps(true);

  int pauses = 0, pausedAt = -1;
  for (int step = 0; step < kSteps; ++step) {
    const std::int64_t b = step % (kSamples / kBatch);
    const bool spike = step == kSpikeStep;
    Execution e = train.begin({spike ? badX : rows(data.x, b * kBatch, kBatch),
                               spike ? badY : rows(data.y, b * kBatch, kBatch)});
    while (e.run() == VM::Status::Paused) {
      VM& vm = e.vm();
      if (vm.pauseReason() != VM::PauseReason::BreakPointOp) continue;
      const Apply& node = *vm.breakOpNode();
      const auto& op = static_cast<const BreakPointOp&>(node.op());
      const Tensor* l = vm.value(node.outputRef(0));
      const Tensor* w = vm.value(node.outputRef(1));
      double norm = 0;
      for (double v : w->toDoubles()) norm += v * v;
      std::printf("step %d: paused at BreakPoint{%s} (node %lld): loss %.4f, |W1| %.4f\n", step,
                  op.label().c_str(), static_cast<long long>(node.id()), l->item(),
                  std::sqrt(norm));
      ++pauses;
      pausedAt = step;
    }
    const double value = e.finish()[0].item();
    std::printf("step %d: loss %.4f%s\n", step, value, spike ? "  (corrupted batch)" : "");
  }
  // What the BreakPoint costs when its condition does not hold: the same clean steps with
  // breakOps on (the VM reads the condition after the node) and off (a plain view).
  auto timeSteps = [&](bool on) {
    train.vm().setBreakOps(on);
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < 200; ++step) {
      const std::int64_t b = step % (kSamples / kBatch);
      Execution e =
          train.begin({rows(data.x, b * kBatch, kBatch), rows(data.y, b * kBatch, kBatch)});
      while (e.run() == VM::Status::Paused) {
      }
      e.finish();
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           200.0;
  };
  timeSteps(false);  // warm-up
  double off = 1e30, on = 1e30;
  for (int round = 0; round < 3; ++round) {
    off = std::min(off, timeSteps(false));
    on = std::min(on, timeSteps(true));
  }
  std::printf("clean SGD step: %.1f us with breakOps off, %.1f us with breakOps on\n", off, on);
  try {
    saveTrainingGraph({x, y}, {watched}, updates, path, expected, "example_breakpoint");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_breakpoint: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s and %s/\n", path.c_str(), expected.c_str());
  return pauses == 1 && pausedAt == kSpikeStep ? 0 : 1;
}
