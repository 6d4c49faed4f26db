// Builds a graph with the tutorial ops (DoubleOp, ProdOp, SumDiffOp), runs it, differentiates it
// and checks the gradient numerically with verifyGrad.
//   example_custom_op

#include "custom_ops.h"
#include "engine/compile/function.h"
#include "engine/grad/checkers.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"

#include <cstdio>

using namespace tscope::engine;
using namespace tscope::examples;

int main() {
  auto x = Variable::create(TensorType(DType::Float64, {kUnknownDim, kUnknownDim}), "x");
  auto y = Variable::create(TensorType(DType::Float64, {kUnknownDim, kUnknownDim}), "y");
  auto sd = sumDiffOp(doubleOp(x), y);
  auto z = prodOp(sd[0], sd[1]);  // (2x + y)(2x - y) = 4x^2 - y^2
  Function f = compile({x, y}, {z});
  Tensor xv = Tensor::fromDoubles(DType::Float64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor yv = Tensor::fromDoubles(DType::Float64, {2, 3}, {1, 1, 1, 2, 2, 2});
  std::printf("4x^2 - y^2 =\n%s\n", f({xv, yv})[0].toString().c_str());
  try {
    verifyGrad(
        [](const std::vector<VarPtr>& in) {
          auto s = sumDiffOp(doubleOp(in[0]), in[1]);
          return std::vector<VarPtr>{prodOp(s[0], s[1])};
        },
        {xv, yv});
    std::printf(
        "verifyGrad: the gradients of DoubleOp, ProdOp and SumDiffOp agree with finite "
        "differences\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_custom_op: %s\n", e.what());
    return 1;
  }
  return 0;
}
