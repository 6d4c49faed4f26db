// The costs of the BLAS family (Op::cost): Dot (numpy matmul, batched), Gemm, Gemv and Ger.

#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/cost_common.h"

namespace tscope::engine {

// Note [Matrix product cost]: C = A B with A (m, k) and B (k, n) is 2 m n k flops (one multiply
// and one add per term) over a batch of b products, the broadcast of the leading dimensions; a
// vector operand is a matrix with m = 1 (on the left) or n = 1 (on the right). A and B are read
// once and C written once, whatever the kernel's blocking re-reads from cache.
OpCost Dot::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  if (!cost::fits(node, inputShapes)) return {};
  const Shape& a = inputShapes[0];
  const Shape& b = inputShapes[1];
  if (a.empty() || b.empty()) return {};
  const bool aVector = a.size() == 1, bVector = b.size() == 1;
  const std::int64_t m = aVector ? 1 : a[a.size() - 2];
  const std::int64_t k = a.back();
  const std::int64_t n = bVector ? 1 : b.back();
  const std::int64_t kb = bVector ? b[0] : b[b.size() - 2];
  if (k != kb) return {};
  const Shape aBatch(a.begin(), a.end() - (aVector ? 1 : 2));
  const Shape bBatch(b.begin(), b.end() - (bVector ? 1 : 2));
  const Shape batches[] = {aBatch, bBatch};
  const std::optional<Shape> batch = cost::broadcast(batches);
  if (!batch) return {};
  const double products = cost::elements(*batch);
  OpCost c;
  c.known = true;
  c.flops =
      2.0 * products * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  c.bytesRead = cost::allInputBytes(node, inputShapes);
  c.bytesWritten = products * static_cast<double>(m) * static_cast<double>(n) *
                   static_cast<double>(dtypeSize(node.outputRef(0).type().dtype()));
  return c;
}

// Gemm (Z, alpha, X, Y, beta) -> beta Z + alpha X Y: 2 m n k for the product, then per element of
// the result alpha's multiply, beta's multiply and the add (3 m n). Every input is read (alpha
// and beta are scalars), the result written once (in place or not: Note [Elementwise cost]).
OpCost Gemm::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  if (!cost::fits(node, inputShapes)) return {};
  const Shape& z = inputShapes[0];
  const Shape& x = inputShapes[2];
  const Shape& y = inputShapes[3];
  if (x[1] != y[0] || z[0] != x[0] || z[1] != y[1]) return {};
  const double m = static_cast<double>(x[0]), k = static_cast<double>(x[1]),
               n = static_cast<double>(y[1]);
  OpCost c;
  c.known = true;
  c.flops = 2 * m * n * k + 3 * m * n;
  c.bytesRead = cost::allInputBytes(node, inputShapes);
  c.bytesWritten = cost::bytes(z, node.outputRef(0).type().dtype());
  return c;
}

// Gemv (y, alpha, A, x, beta) -> beta y + alpha A x with A (m, n): 2 m n + 3 m.
OpCost Gemv::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  if (!cost::fits(node, inputShapes)) return {};
  const Shape& y = inputShapes[0];
  const Shape& a = inputShapes[2];
  const Shape& x = inputShapes[3];
  if (a[1] != x[0] || a[0] != y[0]) return {};
  const double m = static_cast<double>(a[0]), n = static_cast<double>(a[1]);
  OpCost c;
  c.known = true;
  c.flops = 2 * m * n + 3 * m;
  c.bytesRead = cost::allInputBytes(node, inputShapes);
  c.bytesWritten = cost::bytes(y, node.outputRef(0).type().dtype());
  return c;
}

// Ger (A, alpha, x, y) -> A + alpha outer(x, y) with A (m, n): alpha scales x once (m), then one
// multiply-add per element (2 m n).
OpCost Ger::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  if (!cost::fits(node, inputShapes)) return {};
  const Shape& a = inputShapes[0];
  if (a[0] != inputShapes[2][0] || a[1] != inputShapes[3][0]) return {};
  const double m = static_cast<double>(a[0]), n = static_cast<double>(a[1]);
  OpCost c;
  c.known = true;
  c.flops = 2 * m * n + m;
  c.bytesRead = cost::allInputBytes(node, inputShapes);
  c.bytesWritten = cost::bytes(a, node.outputRef(0).type().dtype());
  return c;
}

}  // namespace tscope::engine
