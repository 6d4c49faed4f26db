#pragma once
// CUDA source for the cross-entropy family (engine/ops/nn/crossentropy.h) and the transforms of
// the random ops (random_kernel.cpp). Pure text generation, like elemwise_codegen.h
// (tests/engine/cuda/tst_cuda_codegen.cpp compiles every kernel with NVRTC).
//
// Note [Cross-entropy kernels]: predictions (N, K) are contiguous float32 or float64 rows (the
// launcher makes them so); class targets are a contiguous vector of any integer dtype, read as
// int64. Row-wise reductions run one block per row (grid-stride over the rows), with the block
// folding in warp shuffles and shared memory; the rest is one thread per element.
//   SoftmaxCrossEntropyWithLogits   per row: m = the row maximum (a NaN is skipped, as the CPU's
//       std::max(m, z) does), s = sum exp(z - m), softmax = exp(z - m) * (1 / s), lse = m + log s,
//       loss = lse - z[t] (classes) or sum q (lse - z) (distributions): the CPU's formulas in the
//       same order, in the predictions' dtype;
//   SoftmaxCrossEntropyGrad         classes: g * sm, minus g at the target (per element);
//       distributions: g (sm * sum q - q) (per row);
//   CategoricalCrossEntropy         -log p[t] (per row), -sum q log p (per row);
//   OneHot                          1 at [i, t_i], 0 elsewhere, in the op's dtype.
// Every source with class targets has a <name>_check(n, k, t, bad) kernel that records the first
// row whose index is outside [0, k) in an error word (ErrorWord, kernels.h): the launcher reads it
// after the main kernel (one synchronisation) and raises the CPU's message.

#include "engine/backends/cuda/elemwise_codegen.h"

#include <optional>

namespace tscope::engine::cuda {

// Block-wide sum and maximum the row kernels share (after the scalar prelude).
const std::string& nnPrelude();

// classIndex: the targets' dtype for class targets, nullopt for distributions (of dtype t).
// Kernels: <name>(rows, k, z, t|q, loss, softmax[, bad]) and <name>_check.
GeneratedSource generateSoftmaxCrossEntropy(DType t, std::optional<DType> classIndex);
// <name>(rows, k, g, softmax, t|q, dz) and <name>_check.
GeneratedSource generateSoftmaxCrossEntropyGrad(DType t, std::optional<DType> classIndex);
// <name>(rows, k, p, t|q, loss) and <name>_check.
GeneratedSource generateCategoricalCrossEntropy(DType t, std::optional<DType> classIndex);
// <name>(rows, depth, t, out) and <name>_check.
GeneratedSource generateOneHot(DType out, DType index);

// Note [Device random numbers] in random_kernel.cpp: the transforms from cuRAND's raw draws to
// the CPU op's distributions, in place or from a word buffer.
//   uniform:  <name>(n, u, low, high): u in (0, 1] from cuRAND -> low + (high - low) (1 - u),
//             moved below high when rounding lands on it (the interval is half-open, as on
//             the CPU);
//   integers: <name>(n, words, low, range, out): 64 bits from two words, Lemire's multiply-shift
//             into [low, low + range) (as the CPU op).
GeneratedSource generateUniformTransform(DType dtype);
GeneratedSource generateIntegersTransform(DType dtype);

}  // namespace tscope::engine::cuda
