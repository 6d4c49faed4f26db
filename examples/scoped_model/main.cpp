// A small transformer-style token tagger built to show what the viewer does with structure: nested
// name scopes (encoder/block1/attention), an OpFromGraph "gelu_block" applied in both blocks (a
// group that expands into its inner graph), an inline OpFromGraph "layer_norm" (replaced by its
// inner graph in the canonicalize phase, visible in the rewrite history), view ops (DimShuffle,
// Subtensor, Reshape) and, after fast_run, inplace ops: the optimized graph has blue view edges and
// red destroy edges. It fine-tunes the top layers for a few SGD steps (gradients through both
// OpFromGraphs), then saves the training graph, its fast_run optimization and the rewrite log,
// with test values on the inputs, and the values the outputs take on them (before the updates).
//   example_scoped_model [OUT.tsg [EXPECTED_DIR]]
//   (defaults: examples/graphs/scoped_model.tsg, examples/graphs/scoped_model.expected)

#include "../common/training.h"
#include "engine/grad/grad.h"
#include "engine/graph/config.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/session/optimize_graph.h"

#include <cmath>
#include <set>

using namespace tscope::engine;
using namespace tscope::examples;

namespace {

constexpr std::int64_t kFeatures = 12, kModel = 16, kHidden = 32, kClasses = 5, kTokens = 6;
constexpr int kSteps = 20;

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh form of GELU.
std::shared_ptr<const OpFromGraph> makeGelu() {
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kHidden}), "x");
  VarPtr inner = (x + x * x * x * 0.044715) * std::sqrt(2.0 / M_PI);
  VarPtr y = x * (tanh(inner) + 1.0) * 0.5;
  y->setName("gelu");
  return opFromGraph({x}, {y}, "gelu_block");
}

// (h - mean) / sqrt(var + eps) * gamma + beta over the feature axis; inline, so fast_run fuses it
// with its neighbours.
std::shared_ptr<const OpFromGraph> makeLayerNorm() {
  auto h = Variable::create(TensorType(DType::Float32, {kUnknownDim, kModel}), "h");
  auto gamma = Variable::create(TensorType(DType::Float32, {kModel}), "gamma");
  auto beta = Variable::create(TensorType(DType::Float32, {kModel}), "beta");
  VarPtr centred = h - mean(h, {1}, true);
  VarPtr variance = mean(centred * centred, {1}, true);
  VarPtr y = centred / sqrt(variance + 1e-5) * gamma + beta;
  y->setName("normed");
  return opFromGraph({h, gamma, beta}, {y}, "layer_norm", true);
}

std::shared_ptr<SharedVariable> weight(std::mt19937& rng, std::int64_t in, std::int64_t out,
                                       const std::string& name) {
  return SharedVariable::create(glorot(rng, in, out), name);
}

std::shared_ptr<SharedVariable> filled(std::int64_t n, float value, const std::string& name) {
  Tensor t = Tensor::zeros(DType::Float32, {n});
  for (std::int64_t i = 0; i < n; ++i) t.data<float>()[i] = value;
  return SharedVariable::create(t, name);
}

struct Model {
  const OpFromGraph& gelu;
  const OpFromGraph& layerNorm;
  std::mt19937& rng;

  VarPtr attention(const VarPtr& h, const std::string& block) {
    NameScope scope("attention");
    auto wq = weight(rng, kModel, kModel, block + ".Wq"),
         wk = weight(rng, kModel, kModel, block + ".Wk");
    auto wv = weight(rng, kModel, kModel, block + ".Wv"),
         wo = weight(rng, kModel, kModel, block + ".Wo");
    VarPtr q = dot(h, wq), k = dot(h, wk), v = dot(h, wv);
    VarPtr scores = dot(q, transpose(k)) * (1.0 / std::sqrt(static_cast<double>(kModel)));
    VarPtr weights = softmax(scores, -1);
    weights->setName(block + ".attention_weights");
    return dot(dot(weights, v), wo);
  }

  VarPtr mlp(const VarPtr& h, const std::string& block) {
    NameScope scope("mlp");
    auto w1 = weight(rng, kModel, kHidden, block + ".W1"),
         w2 = weight(rng, kHidden, kModel, block + ".W2");
    auto b1 = filled(kHidden, 0.01f, block + ".b1"), b2 = filled(kModel, 0.0f, block + ".b2");
    VarPtr u = dot(h, w1) + b1;
    return dot(gelu({u}), w2) + b2;
  }

  // Each norm in a scope of its own, so its nodes stay a group of their own once inlined.
  VarPtr norm(const VarPtr& h, const std::string& scopeName, const std::string& prefix) {
    NameScope scope(scopeName);
    return layerNorm({h, filled(kModel, 1.0f, prefix + scopeName + ".gamma"),
                      filled(kModel, 0.0f, prefix + scopeName + ".beta")});
  }

  VarPtr block(const VarPtr& h, const std::string& name) {
    NameScope scope(name);
    VarPtr a = h + attention(norm(h, "ln1", name + "."), name);
    return a + mlp(norm(a, "ln2", name + "."), name);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/graphs/scoped_model.tsg";
  const std::string expected = argc > 2 ? argv[2] : "examples/graphs/scoped_model.expected";
  std::mt19937 rng(20261130);
  const DataSet data = syntheticClasses(kTokens, kFeatures, kClasses, 0.3f, 5);

  // The ops first: their inner inputs carry no test values, so they are built before test values
  // are switched on for the model.
  const auto gelu = makeGelu();
  const auto layerNorm = makeLayerNorm();
  TestValueModeGuard testValues(TestValueMode::Raise);

  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kFeatures}), "tokens");
  auto y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "tags");
  x->setTestValue(data.x);
  y->setTestValue(data.y);

  Model model{*gelu, *layerNorm, rng};
  VarPtr h, logits, loss, probs, summary;
  {
    NameScope encoder("encoder");
    {
      NameScope embed("embed");
      h = dot(x, weight(rng, kFeatures, kModel, "W_embed")) + filled(kModel, 0.0f, "b_embed");
    }
    h = model.block(h, "block1");
    h = model.block(h, "block2");
    h = model.norm(h, "final_ln", "");
  }
  {
    NameScope head("head");
    logits = dot(h, weight(rng, kModel, kClasses, "W_out")) + filled(kClasses, 0.0f, "b_out");
    probs = softmax(logits, -1);
    // The first two tokens' features as one vector: a slice (a view) reshaped (a view).
    summary = reshape(slice(h, 0, 0, 2), std::vector<std::int64_t>{2 * kModel});
  }
  {
    NameScope scope("loss");
    loss = mean(softmaxCrossEntropyWithLogits(logits, y));
  }
  loss->setName("loss");
  probs->setName("probs");
  summary->setName("summary");

  // Fine-tuning the top of the network keeps the graph a readable size; the gradients still flow
  // through both kinds of OpFromGraph (their pullback rebuilds the inner graph).
  const std::set<std::string> trained{"block2.W1",      "block2.b1",     "block2.W2", "block2.b2",
                                      "final_ln.gamma", "final_ln.beta", "W_out",     "b_out"};
  std::vector<std::shared_ptr<SharedVariable>> params;
  for (const VarPtr& v : graphInputs(std::vector<VarPtr>{loss}))
    if (v->kind() == Variable::Kind::Shared && trained.count(v->name()))
      params.push_back(std::static_pointer_cast<SharedVariable>(v));
  std::vector<VarPtr> grads;
  {
    NameScope scope("grad");
    grads = grad(loss, std::vector<VarPtr>(params.begin(), params.end()));
  }
  std::vector<Update> updates;
  {
    NameScope scope("sgd");
    updates = sgdUpdates(loss, params, 0.1, grads);
  }
  try {
    CompileOptions fastRun;
    fastRun.mode = Mode::FastRun;
    Function train = compile({x, y}, {loss}, updates, fastRun);
    double first = 0, last = 0;
    for (int step = 0; step < kSteps; ++step) {
      last = train({data.x, data.y})[0].item();
      if (step == 0) first = last;
    }
    std::printf("%d SGD steps on the test tokens: loss %.4f -> %.4f\n", kSteps, first, last);
    // The graph is saved with the trained weights; the expected values are computed on them.
    saveTrainingGraph({x, y}, {loss, probs, summary}, updates, path, expected,
                      "example_scoped_model");
    io::TsgDocument doc = io::loadTsg(path);
    const RewriteProfile profile =
        session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
    io::saveTsg(doc, path);
    std::printf("%s", session::rewriteProfileText(profile, 8).c_str());
    if (!(last < first)) {
      std::fprintf(stderr, "example_scoped_model: the loss did not fall (%.4f -> %.4f)\n", first,
                   last);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_scoped_model: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s and %s/\n", path.c_str(), expected.c_str());
  return 0;
}
