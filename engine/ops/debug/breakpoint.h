#pragma once
// BreakPoint: a conditional stop written into the graph (Theano's PdbBreakpoint).
//
//   VarPtr spike = gt(loss, constant(10.0, DType::Float32));
//   std::vector<VarPtr> seen = breakpoint("loss_spike", spike, {loss, W});
//   // use seen[0] / seen[1] downstream instead of loss / W
//
// - The condition is a 0-d tensor (bool or numeric; nonzero means it holds). The op has one
//   output per monitored variable, each a declared view of its input (viewMap), so it costs no
//   copy; inferShape passes shapes through; the gradient is disconnected for the condition and
//   the identity for each monitored value (R-op likewise).
// - Note [BreakPoint at run time]: perform never reads the condition; it only aliases. A VM with
//   breakOps on (VM::setBreakOps) reads the condition after the node ran and, when it holds,
//   pauses with PauseReason::BreakPointOp, pc already past the node, VM::breakOpNode() naming it
//   and its outputs (the monitored values) readable with VM::value(). The linker marks BreakPoint
//   nodes (LinkedNode::breakOp), so with breakOps off the VM's hot loop does not change.
// - Rewrites keep it (Note [Debug ops survive rewrites]): constant folding and merge skip it, it
//   is not elementwise so fusion never crosses it, and no rewrite names it; dead code removal
//   drops it only when no output is used.
// - props {"name", "monitored": count}; .tsg round-trips it; the ONNX writer emits one Identity per
// output with the
//   name in the doc string.

#include "engine/graph/op.h"

#include <source_location>
#include <string>
#include <vector>

namespace tscope::engine {

class OpRegistry;

class BreakPointOp final : public Op {
 public:
  // Throws GraphError when the name is empty or nMonitored < 1.
  BreakPointOp(std::string name, int nMonitored);

  std::string name() const override { return "BreakPoint"; }
  nlohmann::json props() const override { return {{"name", m_name}, {"monitored", m_n}}; }
  // "BreakPoint{loss_spike}".
  std::string str() const override;
  // The breakpoint's own name ("loss_spike").
  const std::string& label() const { return m_name; }
  int monitoredCount() const { return m_n; }

  // Input 0 is the condition (0-d, any dtype), inputs 1.. the monitored values; output o has the
  // type of input o + 1.
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  ViewMap viewMap() const override;

  // Whether the condition value holds (a nonzero element; false for an undefined tensor).
  static bool holds(const Tensor& condition);
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  std::string m_name;
  int m_n = 1;  // monitored values (viewMap is per op, so the op knows its output count)
};

// One node BreakPoint{name}(condition, monitored...); returns its outputs (one per monitored
// variable). Throws TypeError when the condition is not 0-d or nothing is monitored.
std::vector<VarPtr> breakpoint(const std::string& name, const VarPtr& condition,
                               const std::vector<VarPtr>& monitored,
                               std::source_location site = std::source_location::current());

// True for an op the rewrites must keep (Note [Debug ops survive rewrites]).
bool isDebugBarrier(const Op& op);

void registerDebugOps(OpRegistry& registry);

}  // namespace tscope::engine
