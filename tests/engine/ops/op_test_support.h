#pragma once
// Shared helpers for op tests: random inputs, running a graph on values, and the four checks
// every op gets (value, inferShape, gradient, R-op/L-op).

#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/tensor/tensor.h"

#include <QTest>

#include <random>
#include <string>
#include <vector>

namespace tscope::test {

using namespace tscope::engine;

// Uniform values in [lo, hi) (integers: rounded down), deterministic for a seed.
inline Tensor randomTensor(DType dtype, Shape shape, std::uint64_t seed, double lo = -1.0,
                           double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(static_cast<std::size_t>(shapeNumel(shape)));
  for (double& v : values) {
    v = dist(rng);
    if (!isFloat(dtype)) v = std::floor(v);
  }
  return Tensor::fromDoubles(dtype, std::move(shape), values);
}

// Symbolic inputs typed like the values (dims unknown so shapes are exercised symbolically).
inline std::vector<VarPtr> inputsLike(const std::vector<Tensor>& points,
                                      bool staticShapes = false) {
  std::vector<VarPtr> inputs;
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<std::int64_t> shape = points[i].shape();
    if (!staticShapes)
      for (auto& d : shape) d = kUnknownDim;
    inputs.push_back(
        Variable::create(TensorType(points[i].dtype(), shape), "x" + std::to_string(i)));
  }
  return inputs;
}

// Builds the graph on symbolic inputs, compiles it (mode none) and runs it on the points.
inline std::vector<Tensor> evaluate(const GraphBuilder& build, const std::vector<Tensor>& points,
                                    bool staticShapes = false) {
  std::vector<VarPtr> inputs = inputsLike(points, staticShapes);
  Function f = compile(inputs, build(inputs));
  return f(points);
}

inline std::vector<Tensor> evaluate(const std::vector<VarPtr>& inputs,
                                    const std::vector<VarPtr>& outputs,
                                    const std::vector<Tensor>& values) {
  Function f = compile(inputs, outputs);
  return f(values);
}

// QVERIFY-friendly comparison with a readable message.
inline bool closeTo(const Tensor& actual, const Tensor& expected, double rtol = 1e-5,
                    double atol = 1e-6) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape() ||
      !actual.allClose(expected, rtol, atol)) {
    qWarning("expected %s %s:\n%s\nfound %s %s:\n%s",
             std::string(dtypeName(expected.dtype())).c_str(),
             shapeToString(expected.shape()).c_str(), expected.toString().c_str(),
             std::string(dtypeName(actual.dtype())).c_str(), shapeToString(actual.shape()).c_str(),
             actual.toString().c_str());
    return false;
  }
  return true;
}

// Runs a checker and turns its CheckError into a test failure with the checker's message.
#define TSCOPE_CHECK(expr)                                                         \
  do {                                                                             \
    try {                                                                          \
      expr;                                                                        \
    } catch (const std::exception& e) {                                            \
      QFAIL(qPrintable(QStringLiteral("%1 failed: %2").arg(#expr).arg(e.what()))); \
    }                                                                              \
  } while (0)

}  // namespace tscope::test
