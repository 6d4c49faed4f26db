#pragma once
// Helpers for the ops' cost methods (Op::cost; the struct and the counting conventions are in
// engine/graph/op_cost.h): element and byte counts of concrete shapes, the output shapes of a node
// for given input shapes without running it, and the common cost shapes (a view, a copy).
//
//   OpCost MyOp::cost(const Apply& node, std::span<const Shape> in) const {
//     auto out = cost::outputShapes(node, in);
//     if (!out) return {};                       // unknown: the output size depends on values
//     return cost::movement(node, in, *out, /*flopsPerOutputElement=*/1);
//   }

#include "engine/graph/op.h"
#include "engine/ops/elemwise/scalar_op.h"

#include <optional>
#include <span>
#include <vector>

namespace tscope::engine::cost {

double elements(const Shape& shape);
double bytes(const Shape& shape, DType dtype);

// Known, 0 flops, 0 bytes: a view or a shape query moves no tensor data.
OpCost view();

// True when there is one shape per input and each has its input's rank (a caller that passes
// anything else gets an unknown cost, never a crash).
bool fits(const Apply& node, std::span<const Shape> inputShapes);

// The bytes of input i at its own shape; of every input.
double inputBytes(const Apply& node, std::span<const Shape> inputShapes, int i);
double allInputBytes(const Apply& node, std::span<const Shape> inputShapes);
// The bytes of every output, output o having shape outputShapes[o] and its variable's dtype.
double allOutputBytes(const Apply& node, std::span<const Shape> outputShapes);

// Note [Cost output shapes]: the output shapes of node for these input shapes, found without
// running the kernel: the op's inferShape on constant input shapes, whose shape arithmetic folds
// to constants (the inputs that are values, such as Alloc's dims, fold when they are constants),
// then, for what did not fold, the output type's static dims. nullopt when some output dimension
// stays unknown (it depends on the value of a non-constant input).
std::optional<std::vector<Shape>> outputShapes(const Apply& node,
                                               std::span<const Shape> inputShapes);

// The same, leaving kUnknownDim where a dimension did not fold (nullopt only when the shapes do
// not fit the node).
std::optional<std::vector<Shape>> partialOutputShapes(const Apply& node,
                                                      std::span<const Shape> inputShapes);

// Every input read once, every output written once, `flopsPerOutputElement` flops per element of
// output 0 (0 for a copy).
OpCost movement(const Apply& node, std::span<const Shape> inputShapes,
                std::span<const Shape> outputShapes, double flopsPerOutputElement = 0);

// Flops of one application of a scalar op to `arity` operands (Note [Scalar op flops] in
// cost_common.cpp): an n-ary add/mul/min/max is n - 1; cast, identity and second are 0; clip 2;
// every other op, transcendental ones included, 1.
double scalarFlops(ScalarOp op, int arity);

// numpy broadcasting of concrete shapes; nullopt when two sizes other than 1 disagree.
std::optional<Shape> broadcast(std::span<const Shape> shapes);

}  // namespace tscope::engine::cost
