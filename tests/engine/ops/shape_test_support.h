#pragma once
// Helpers for the shape and indexing op tests: numbered tensors, running one node's perform
// directly (so a test sees exactly which outputs are views), and exception messages.

#include "op_test_support.h"

#include <functional>
#include <string>
#include <vector>

namespace tscope::test {

// offset, offset + step, offset + 2 step, ... in row-major order: every element distinct, so a
// value test catches any element in the wrong place.
inline Tensor iota(DType dtype, Shape shape, double step = 1.0, double offset = 0.0) {
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = offset + step * static_cast<double>(i);
  return Tensor::fromDoubles(dtype, std::move(shape), v);
}

inline VarPtr symbol(DType dtype, std::vector<std::int64_t> shape, std::string name = {}) {
  return Variable::create(TensorType(dtype, std::move(shape)), std::move(name));
}

// The message of what f throws; "(no exception)" when it returns.
inline std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// Runs perform of the node that computes `out`; values[i] is the value of its input i, or an
// undefined tensor for a Constant input (its own value is used). Returns every output.
inline std::vector<Tensor> performNode(const VarPtr& out, const std::vector<Tensor>& values) {
  const Apply& node = *out->owner();
  std::vector<const Tensor*> ins;
  for (int i = 0; i < node.nInputs(); ++i) {
    const Tensor& given = values.at(static_cast<std::size_t>(i));
    ins.push_back(given.defined() ? &given : valueOf(*node.input(i)));
  }
  std::vector<Tensor> outs(static_cast<std::size_t>(node.nOutputs()));
  std::vector<Tensor*> ptrs;
  for (Tensor& t : outs) ptrs.push_back(&t);
  node.op().perform(node, ins, ptrs);
  return outs;
}

// One-output graph builders for the checkers.
inline GraphBuilder unary(std::function<VarPtr(const VarPtr&)> f) {
  return [f](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{f(in[0])}; };
}

// The expected values as a tensor of dtype.
inline Tensor values(DType dtype, Shape shape, std::vector<double> v) {
  return Tensor::fromDoubles(dtype, std::move(shape), v);
}

}  // namespace tscope::test
