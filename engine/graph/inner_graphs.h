#pragma once
// Ops with several inner graphs (IfElse: then and else), and the one query every user of inner
// graphs calls.
//
//   for (const FunctionGraph* body : innerGraphsOf(node.op())) draw(*body);
//
// Note [Several inner graphs]: Op::innerGraph() gives an op's one body (an OpFromGraph). An op
// with alternative bodies also derives from AlternativeBodies: innerGraphs() lists them all
// (innerGraph() is the first), each taking the node's inputs and giving its outputs, and
// selectInnerGraph picks the one to run from the node's input values (the taken branch). compile
// links one child program per body; the VM enters only the selected one as a frame.

#include "engine/graph/op.h"

#include <span>
#include <vector>

namespace tscope::engine {

class Tensor;

class AlternativeBodies {
 public:
  virtual ~AlternativeBodies() = default;
  virtual std::vector<const FunctionGraph*> innerGraphs() const = 0;
  // The index into innerGraphs() of the body to run for these input values.
  virtual std::size_t selectInnerGraph(std::span<const Tensor* const> inputs) const = 0;
};

// Every inner graph of the op: AlternativeBodies::innerGraphs(), else innerGraph() alone, else
// none.
inline std::vector<const FunctionGraph*> innerGraphsOf(const Op& op) {
  if (const auto* alt = dynamic_cast<const AlternativeBodies*>(&op)) return alt->innerGraphs();
  if (const FunctionGraph* g = op.innerGraph()) return {g};
  return {};
}

}  // namespace tscope::engine
