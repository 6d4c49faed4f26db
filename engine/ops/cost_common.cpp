#include "engine/ops/cost_common.h"

#include "engine/graph/variable.h"
#include "engine/ops/basic.h"

#include <algorithm>
#include <exception>

namespace tscope::engine::cost {

double elements(const Shape& shape) {
  double n = 1;
  for (std::int64_t d : shape) n *= static_cast<double>(std::max<std::int64_t>(d, 0));
  return n;
}

double bytes(const Shape& shape, DType dtype) {
  return elements(shape) * static_cast<double>(dtypeSize(dtype));
}

OpCost view() {
  OpCost c;
  c.known = true;
  return c;
}

bool fits(const Apply& node, std::span<const Shape> inputShapes) {
  if (static_cast<int>(inputShapes.size()) != node.nInputs()) return false;
  for (int i = 0; i < node.nInputs(); ++i) {
    const Shape& s = inputShapes[static_cast<std::size_t>(i)];
    if (static_cast<int>(s.size()) != node.input(i)->type().ndim()) return false;
    for (std::int64_t d : s)
      if (d < 0) return false;
  }
  return true;
}

double inputBytes(const Apply& node, std::span<const Shape> inputShapes, int i) {
  return bytes(inputShapes[static_cast<std::size_t>(i)], node.input(i)->type().dtype());
}

double allInputBytes(const Apply& node, std::span<const Shape> inputShapes) {
  double total = 0;
  for (int i = 0; i < node.nInputs(); ++i) total += inputBytes(node, inputShapes, i);
  return total;
}

double allOutputBytes(const Apply& node, std::span<const Shape> outputShapes) {
  double total = 0;
  for (int o = 0; o < node.nOutputs() && o < static_cast<int>(outputShapes.size()); ++o)
    total += bytes(outputShapes[static_cast<std::size_t>(o)], node.outputRef(o).type().dtype());
  return total;
}

std::optional<std::vector<Shape>> partialOutputShapes(const Apply& node,
                                                      std::span<const Shape> inputShapes) {
  if (!fits(node, inputShapes)) return std::nullopt;
  std::vector<Shape> result;
  result.reserve(static_cast<std::size_t>(node.nOutputs()));
  std::vector<ShapeExpr> inferred;
  try {
    std::vector<ShapeExpr> exprs;
    exprs.reserve(inputShapes.size());
    for (const Shape& s : inputShapes) {
      ShapeExpr e;
      for (std::int64_t d : s) e.push_back(constantInt(d));
      exprs.push_back(std::move(e));
    }
    inferred = node.op().inferShape(node, exprs);
  } catch (const std::exception&) {
    inferred.clear();  // no inferShape, or it refused these shapes: the static type may still do
  }
  for (int o = 0; o < node.nOutputs(); ++o) {
    const TensorType& type = node.outputRef(o).type();
    Shape s = type.shape();
    if (static_cast<std::size_t>(o) < inferred.size() &&
        inferred[static_cast<std::size_t>(o)].size() == s.size()) {
      const Shape folded = staticShape(inferred[static_cast<std::size_t>(o)]);
      for (std::size_t a = 0; a < s.size(); ++a)
        if (folded[a] != kUnknownDim) s[a] = folded[a];
    }
    result.push_back(std::move(s));
  }
  return result;
}

std::optional<std::vector<Shape>> outputShapes(const Apply& node,
                                               std::span<const Shape> inputShapes) {
  auto shapes = partialOutputShapes(node, inputShapes);
  if (!shapes) return std::nullopt;
  for (const Shape& s : *shapes)
    if (std::any_of(s.begin(), s.end(), [](std::int64_t d) { return d < 0; })) return std::nullopt;
  return shapes;
}

OpCost movement(const Apply& node, std::span<const Shape> inputShapes,
                std::span<const Shape> outputShapes, double flopsPerOutputElement) {
  OpCost c;
  c.known = true;
  c.bytesRead = allInputBytes(node, inputShapes);
  c.bytesWritten = allOutputBytes(node, outputShapes);
  if (!outputShapes.empty()) c.flops = flopsPerOutputElement * elements(outputShapes[0]);
  return c;
}

// Note [Scalar op flops]: the op_cost.h conventions applied to one scalar op: arithmetic, a
// comparison, a logic op, a rounding op, a select (switch) and each transcendental function are
// one flop; an n-ary add/mul/minimum/maximum folds n operands with n - 1; clip is a max and a min
// (2); cast, identity and second move a value without computing (0).
double scalarFlops(ScalarOp op, int arity) {
  switch (op) {
    case ScalarOp::Cast:
    case ScalarOp::Identity:
    case ScalarOp::Second:
      return 0;
    case ScalarOp::Clip:
      return 2;
    case ScalarOp::Add:
    case ScalarOp::Mul:
    case ScalarOp::Minimum:
    case ScalarOp::Maximum:
    case ScalarOp::And:
    case ScalarOp::Or:
    case ScalarOp::Xor:
      return std::max(arity - 1, 1);
    default:
      return 1;
  }
}

std::optional<Shape> broadcast(std::span<const Shape> shapes) {
  std::size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    const std::size_t lead = rank - s.size();
    for (std::size_t a = 0; a < s.size(); ++a) {
      std::int64_t& o = out[lead + a];
      const std::int64_t d = s[a];
      if (d == 1) continue;
      if (o == 1) {
        o = d;
      } else if (o != d) {
        return std::nullopt;
      }
    }
  }
  return out;
}

}  // namespace tscope::engine::cost
