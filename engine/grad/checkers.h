#pragma once
// The user-facing numerical checkers Theano offers: verifyGrad (finite differences), the
// infer-shape checker and the R-op/L-op checker. Each throws CheckError with a message that names
// the input, the worst element and the errors found; none of them is test-only.

#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

namespace tscope::engine {

class CheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds the outputs from symbolic inputs (one per point, typed like the point).
using GraphBuilder = std::function<std::vector<VarPtr>(const std::vector<VarPtr>& inputs)>;

struct VerifyGradOptions {
  int nTests = 1;  // random projections tried
  std::uint64_t seed = 42;
  double eps = 0;     // finite-difference step; 0: per dtype (REFERENCE.md)
  double absTol = 0;  // 0: per dtype
  double relTol = 0;  // 0: per dtype
  // Inputs (by index) not differentiated (integer indices, targets).
  std::vector<int> constantInputs;
};

// Compares grad() with one-sided finite differences of sum(outputs * random weights in
// [0.5, 1.5)) at the points; fails only where both the absolute and the relative error exceed the
// tolerance. Points of integer dtype are held constant automatically.
void verifyGrad(const GraphBuilder& build, const std::vector<Tensor>& points,
                VerifyGradOptions options = {});
// The per-dtype step and tolerance of REFERENCE.md.
double defaultGradStep(DType dtype);
double defaultGradTolerance(DType dtype);

struct InferShapeOptions {
  // Warn (through warn()) when an input has two equal dimensions, which can hide a transposed
  // shape; default on, as Theano's checker does.
  bool warnOnSquareInputs = true;
};
// Compiles each output's inferShape() graph (without computing the output) and compares it with
// the shape of the computed output.
void checkInferShape(const GraphBuilder& build, const std::vector<Tensor>& points,
                     InferShapeOptions options = {});

// Checks Rop (J v) against the Jacobian built column by column from grad, and Lop (u^T J) against
// it, at the points with random directions.
void checkRopLop(const GraphBuilder& build, const std::vector<Tensor>& points,
                 std::uint64_t seed = 7, double tolerance = 0);

// The output shapes of the graph between inputs and outputs, from inferShape alone (symbolic).
std::vector<ShapeExpr> inferShapes(const std::vector<VarPtr>& outputs);

}  // namespace tscope::engine
