#pragma once
// Bounds that prove a node's output clean before it runs (NanGuard, Note [Provably clean outputs]).
//
//   std::vector<std::optional<double>> in = {2.0, 1.0};        // max |x| of each (good) input
//   auto out = provenBounds(node, inputs, in);                  // one per output
//   if (out[0] && *out[0] <= threshold) /* output 0 needs no scan */;
//
// Note [Provably clean outputs]: NanGuard knows, for every value it found clean, max |x| (the
// quick scan computes it in the same pass). For some ops that bound and the op alone bound the
// output: |beta Z + alpha X Y| <= |beta| max|Z| + |alpha| K max|X| max|Y| for Gemm (and Dot, Gemv,
// Ger), and for elementwise programs (Elemwise, Composite) interval rules per scalar op: a + b,
// a * b, tanh and sigmoid at most 1, exp(a), ... A bound below the dtype's largest finite value
// means no element can be NaN or infinite: NaN needs a NaN operand, inf - inf, 0 * inf or an op
// outside the rules (division, log, sqrt, pow are never bounded here), and infinities need a
// result beyond the bound. Each bound is widened for rounding (a relative 1e-3 per elementwise
// result, 2 K eps for a product of inner dimension K), and every intermediate register must stay
// finite in its own dtype. An op outside the rules, an input without a bound (a bad one, one never
// scanned) or a bound that is not finite gives no bound: the output is scanned as always.

#include "engine/graph/apply.h"
#include "engine/tensor/tensor.h"

#include <optional>
#include <span>
#include <vector>

namespace tscope::engine::debug {

// One bound per output of `node` (nullopt: not provable), from its inputs' values (for scalars
// such as alpha, beta and constants, read directly) and `inputBounds` (max |x| of each input,
// nullopt when unknown). Integer and bool inputs without a bound count as their dtype's range.
// An input not computed yet (a null tensor, when NanGuard looks ahead) is known by its bound and
// by sizeBounds[i], a bound on its element count (-1: unknown), which then stands for the inner
// dimension of a product and the number of terms of a sum.
// Whether provenBounds can bound any output of an op of this kind (the guard asks once per node
// and skips the proof, and its look-ups, for the others: convolutions, pooling, shape ops).
bool mayBound(const Op& op);
std::vector<std::optional<double>> provenBounds(const Apply& node,
                                                std::span<const Tensor* const> inputs,
                                                std::span<const std::optional<double>> inputBounds,
                                                std::span<const std::int64_t> sizeBounds = {});

// The largest finite value of a float dtype; of an integer dtype, its largest magnitude.
double dtypeMaxAbs(DType dtype);

}  // namespace tscope::engine::debug
