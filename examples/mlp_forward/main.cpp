// Builds the forward graph of a small multi-layer perceptron (64-32-10, tanh) with random weights
// and a test value on its input, and saves it as a .tsg file.
//   example_mlp_forward [OUT.tsg]      (default: examples/graphs/mlp_forward.tsg)

#include "engine/graph/function_graph.h"
#include "engine/graph/traversal.h"
#include "engine/io/tsg.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/dimshuffle.h"

#include <cmath>
#include <cstdio>
#include <random>

using namespace tscope::engine;

namespace {

Tensor randomMatrix(std::mt19937& rng, std::int64_t rows, std::int64_t cols, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<double> values(static_cast<std::size_t>(rows * cols));
  for (auto& v : values) v = normal(rng);
  return Tensor::fromDoubles(DType::Float32, {rows, cols}, values);
}

VarPtr denseLayer(const VarPtr& x, std::int64_t in, std::int64_t out, std::mt19937& rng,
                  bool activate) {
  auto W = SharedVariable::create(randomMatrix(rng, in, out, 1.0f / std::sqrt(float(in))), "W");
  auto b = SharedVariable::create(Tensor::zeros(DType::Float32, {out}), "b");
  VarPtr h = elemwise(ScalarOp::Add, {dot(x, W), b});
  return activate ? elemwise(ScalarOp::Tanh, {h}) : h;
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "examples/graphs/mlp_forward.tsg";
  std::mt19937 rng(1234);

  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 64}), "x");
  x->setTestValue(randomMatrix(rng, 4, 64, 1.0f));
  VarPtr h, logits;
  {
    NameScope scope("layer1");
    h = denseLayer(x, 64, 32, rng, true);
  }
  {
    NameScope scope("layer2");
    logits = denseLayer(h, 32, 10, rng, false);
  }
  logits->setName("logits");
  // A scaled, transposed copy of the logits: a constant, a broadcast and a view.
  auto half = Constant::create(Tensor::scalar(DType::Float32, 0.5));
  VarPtr scaled = elemwise(ScalarOp::Mul, {logits, half});
  VarPtr scores = transpose(scaled);
  scores->setName("scores_t");

  // The graph's inputs: the data first, then every shared variable it reads.
  std::vector<VarPtr> outputs{logits, scores};
  std::vector<VarPtr> inputs = graphInputs(outputs);
  io::TsgDocument doc;
  doc.original = std::make_unique<FunctionGraph>(inputs, outputs);
  try {
    io::saveTsg(doc, path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_mlp_forward: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s: %zu applies, %zu variables\n", path, doc.original->nodeCount(),
              doc.original->variables().size());
  return 0;
}
