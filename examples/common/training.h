#pragma once
// What the training examples share: a synthetic classification data set, the SGD updates, and
// saving the trained graph with the values it computes on its test values (so `tensorscope run`
// can be checked against them).

#include "engine/compile/function.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/traversal.h"
#include "engine/io/npy.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace tscope::examples {

using namespace tscope::engine;

// n samples of `features` floats in `classes` classes: each class has a random prototype in
// [0, 1)^features; a sample is its prototype plus Gaussian noise. Labels are int64.
struct DataSet {
  Tensor x;  // float32 (n, features)
  Tensor y;  // int64 (n,)
};

inline DataSet syntheticClasses(std::int64_t n, std::int64_t features, std::int64_t classes,
                                float noise, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::normal_distribution<float> gauss(0.0f, noise);
  std::vector<float> prototypes(static_cast<std::size_t>(classes * features));
  for (float& p : prototypes) p = unit(rng);
  DataSet d{Tensor::empty(DType::Float32, {n, features}), Tensor::empty(DType::Int64, {n})};
  float* x = d.x.data<float>();
  std::int64_t* y = d.y.data<std::int64_t>();
  std::uniform_int_distribution<std::int64_t> pick(0, classes - 1);
  for (std::int64_t i = 0; i < n; ++i) {
    y[i] = pick(rng);
    for (std::int64_t f = 0; f < features; ++f)
      x[i * features + f] = prototypes[static_cast<std::size_t>(y[i] * features + f)] + gauss(rng);
  }
  return d;
}

// Rows [begin, begin + count) as a contiguous copy.
inline Tensor rows(const Tensor& t, std::int64_t begin, std::int64_t count) {
  return t.slice(0, begin, begin + count).clone();
}

// Glorot-uniform float32 weights.
inline Tensor glorot(std::mt19937& rng, std::int64_t in, std::int64_t out) {
  const float limit = std::sqrt(6.0f / static_cast<float>(in + out));
  std::uniform_real_distribution<float> dist(-limit, limit);
  Tensor w = Tensor::empty(DType::Float32, {in, out});
  float* p = w.data<float>();
  for (std::int64_t i = 0; i < in * out; ++i) p[i] = dist(rng);
  return w;
}

// p <- p - lr * d cost / d p for every parameter.
inline std::vector<Update> sgdUpdates(const VarPtr& cost,
                                      const std::vector<std::shared_ptr<SharedVariable>>& params,
                                      double lr, const std::vector<VarPtr>& grads) {
  std::vector<Update> updates;
  for (std::size_t i = 0; i < params.size(); ++i)
    updates.push_back({params[i], params[i] - grads[i] * lr});
  (void)cost;
  return updates;
}

// Saves the training graph (inputs -> outputs with the updates recorded) as a .tsg, and the
// values its outputs take on the inputs' test values (computed without applying the updates) as
// <expectedDir>/output_<i>.npy.
inline void saveTrainingGraph(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                              const std::vector<Update>& updates, const std::string& tsgPath,
                              const std::string& expectedDir, const std::string& producer) {
  std::vector<VarPtr> graphOutputs = outputs;
  for (const Update& u : updates) graphOutputs.push_back(u.value);
  std::vector<VarPtr> graphIns = inputs;
  for (const VarPtr& v : graphInputs(graphOutputs))
    if (std::find(graphIns.begin(), graphIns.end(), v) == graphIns.end()) graphIns.push_back(v);
  io::TsgDocument doc;
  CloneMap map;
  doc.original = std::make_unique<FunctionGraph>(graphIns, graphOutputs,
                                                 FunctionGraph::Ownership::Clone, &map);
  for (std::size_t u = 0; u < updates.size(); ++u) {
    const VarPtr target = map[updates[u].shared.get()];
    const auto& gin = doc.original->inputs();
    doc.original->setUpdate(
        outputs.size() + u,
        static_cast<std::size_t>(std::find(gin.begin(), gin.end(), target) - gin.begin()));
  }
  doc.producer = {{"name", producer}};
  io::saveTsg(doc, tsgPath);
  if (expectedDir.empty()) return;
  std::vector<Tensor> args;
  for (const VarPtr& in : inputs) args.push_back(*in->testValue());
  Function f = compile(inputs, graphOutputs);
  std::vector<Tensor> values = f(args);
  std::filesystem::create_directories(expectedDir);
  for (std::size_t i = 0; i < values.size(); ++i)
    io::saveNpy(values[i],
                std::filesystem::path(expectedDir) / ("output_" + std::to_string(i) + ".npy"));
}

}  // namespace tscope::examples
