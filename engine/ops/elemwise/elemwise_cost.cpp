// The costs of the elementwise family (Op::cost): Elemwise, Composite and SumToShape.

#include "engine/ops/cost_common.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/sum_to_shape.h"

namespace tscope::engine {

// Note [Elementwise cost]: an Elemwise computes its scalar op once per element of the broadcast
// output; each input is read once at its own size (a broadcast input is not re-read per output
// element) and each output is written once, an inplace output too (it is written over its input).
// second(a, b) reads only b: a gives the shape, not values.
OpCost Elemwise::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  if (!cost::fits(node, inputShapes)) return {};
  const std::optional<Shape> out = cost::broadcast(inputShapes);
  if (!out) return {};
  OpCost c;
  c.known = true;
  c.flops = cost::scalarFlops(m_scalar, node.nInputs()) * cost::elements(*out);
  for (int i = 0; i < node.nInputs(); ++i) {
    if (m_scalar == ScalarOp::Second && i == 0) continue;
    c.bytesRead += cost::inputBytes(node, inputShapes, i);
  }
  for (int o = 0; o < node.nOutputs(); ++o)
    c.bytesWritten += cost::bytes(*out, node.outputRef(o).type().dtype());
  return c;
}

// A Composite counts each instruction of its scalar program over the broadcast shape of the
// registers it reads (an instruction on a broadcast input alone runs on fewer elements), reads
// each input once at its own size and writes each output at its register's shape and dtype; the
// intermediates live in block-sized scratch and cost no memory traffic (Note [Composite
// programs]).
OpCost Composite::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  if (!cost::fits(node, inputShapes) || node.nInputs() != nInputs()) return {};
  std::vector<Shape> registers(inputShapes.begin(), inputShapes.end());
  OpCost c;
  c.known = true;
  for (const CompositeInstruction& instruction : m_program) {
    std::vector<Shape> operands;
    for (int r : instruction.args) operands.push_back(registers.at(static_cast<std::size_t>(r)));
    const std::optional<Shape> shape = cost::broadcast(operands);
    if (!shape) return {};
    c.flops += cost::scalarFlops(instruction.op, static_cast<int>(instruction.args.size())) *
               cost::elements(*shape);
    registers.push_back(*shape);
  }
  c.bytesRead = cost::allInputBytes(node, inputShapes);
  for (std::size_t o = 0; o < m_outputs.size(); ++o) {
    const int reg = m_outputs[o];
    c.bytesWritten += cost::bytes(registers.at(static_cast<std::size_t>(reg)), registerDType(reg));
  }
  return c;
}

// SumToShape is a view when nothing is summed (the target is g's shape); otherwise one add per
// element of g, g read once and the reduced result written. Note [SumToShape target sizes]: the
// target sizes are input values; one that does not fold (a ShapeI of a tensor whose size the
// type leaves unknown) is taken as g's size on that axis, i.e. not stretched: a size the type
// does not know is rarely a runtime 1 (a batch dimension), and the usual case, where nothing is
// summed, then costs what it does, nothing.
OpCost SumToShape::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  auto out = cost::partialOutputShapes(node, inputShapes);
  if (!out || out->empty()) return {};
  const Shape& g = inputShapes[0];
  Shape& target = (*out)[0];
  if (target.size() > g.size()) return {};
  const std::size_t lead = g.size() - target.size();
  for (std::size_t a = 0; a < target.size(); ++a)
    if (target[a] < 0) target[a] = g[lead + a];
  if (target == g) return cost::view();
  OpCost c;
  c.known = true;
  c.flops = cost::elements(g);
  c.bytesRead = cost::inputBytes(node, inputShapes, 0);
  c.bytesWritten = cost::allOutputBytes(node, *out);
  return c;
}

}  // namespace tscope::engine
