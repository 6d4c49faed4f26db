#include "bench/synthetic_graphs.h"

#include "engine/graph/source_site.h"
#include "engine/graph/variable.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/elemwise.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace tscope::synthetic {

using namespace tscope::engine;

namespace {

constexpr std::int64_t kWidth = 16;

// The scope names of leaf `leaf` from the outermost level down ("stage0", "block3", "unit1").
std::vector<std::string> scopeOfLeaf(int leaf, const GraphShape& shape) {
  static const char* const kLevelNames[] = {"stage", "block", "unit"};
  std::vector<std::string> names(static_cast<std::size_t>(shape.levels));
  int rest = leaf;
  for (int level = shape.levels - 1; level >= 0; --level) {
    int index = level == 0 ? rest : rest % shape.fanOut;
    rest = level == 0 ? 0 : rest / shape.fanOut;
    names[static_cast<std::size_t>(level)] =
        kLevelNames[level + 3 - shape.levels] + std::to_string(index);
  }
  return names;
}

}  // namespace

std::shared_ptr<const FunctionGraph> makeGraph(const GraphShape& shape) {
  if (shape.levels < 0 || shape.levels > 3 || shape.leafSize < 1 || shape.fanOut < 1 ||
      shape.applies < 1 || shape.chains < 1)
    throw std::invalid_argument(
        "synthetic::makeGraph: expected applies >= 1, levels in 0..3, leafSize, fanOut "
        "and chains >= 1");
  std::mt19937 rng(shape.seed);
  std::vector<VarPtr> inputs;
  for (int i = 0; i < 4; ++i)
    inputs.push_back(Variable::create(TensorType(DType::Float32, {kUnknownDim, kWidth}),
                                      "x" + std::to_string(i)));
  std::vector<std::vector<VarPtr>> chains(static_cast<std::size_t>(shape.chains), inputs);
  static const ScalarOp kBinary[] = {ScalarOp::Add, ScalarOp::Mul, ScalarOp::Sub,
                                     ScalarOp::Maximum};
  static const ScalarOp kUnary[] = {ScalarOp::Tanh, ScalarOp::Exp, ScalarOp::Neg,
                                    ScalarOp::Sigmoid};

  const int leafSize = shape.leafSize;  // flat graphs too: a weight per leaf, no hub of edges
  std::vector<VarPtr> weights;  // shared variables are graph inputs (FunctionGraph requires it)
  for (int i = 0, leaf = 0; i < shape.applies; ++leaf) {
    // Guards pop in reverse order (NameScope restores the enclosing path when it dies).
    std::vector<std::unique_ptr<NameScope>> guards;
    if (shape.levels > 0)
      for (const std::string& name : scopeOfLeaf(leaf, shape))
        guards.push_back(std::make_unique<NameScope>(name));
    // One weight and one constant per leaf, created at their first use: no input is left
    // unconnected and no box becomes a hub with edges across the whole graph.
    VarPtr weight, half;
    std::vector<VarPtr>& values = chains[static_cast<std::size_t>(leaf % shape.chains)];
    for (int k = 0; k < leafSize && i < shape.applies; ++k, ++i) {
      const VarPtr& previous = values.back();
      std::size_t back = 2 + rng() % std::min<std::size_t>(values.size() - 1, 12);
      const VarPtr& skip = values[values.size() - std::min(back, values.size())];
      VarPtr v;
      if (i % 8 == 0) {
        if (!weight) {
          weight = SharedVariable::create(Tensor::zeros(DType::Float32, {kWidth, kWidth}),
                                          "W" + std::to_string(leaf));
          weights.push_back(weight);
        }
        v = dot(previous, weight);
      } else if (i % 16 == 4) {
        if (!half) half = Constant::create(Tensor::scalar(DType::Float32, 0.5), "half");
        v = elemwise(ScalarOp::Mul, {previous, half});
      } else if (rng() % 3 == 0) {
        v = elemwise(kUnary[rng() % 4], {previous});
      } else {
        v = elemwise(kBinary[rng() % 4], {previous, skip});
      }
      values.push_back(std::move(v));
    }
    while (!guards.empty()) guards.pop_back();
  }
  std::vector<VarPtr> outputs;
  for (const std::vector<VarPtr>& values : chains)
    if (values.size() > inputs.size()) outputs.push_back(values.back());
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  return std::make_shared<const FunctionGraph>(inputs, outputs, FunctionGraph::Ownership::Adopt);
}

}  // namespace tscope::synthetic
