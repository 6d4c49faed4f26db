#pragma once
// Composite: a fused chain of elementwise ops. Its body is a small scalar program over its tensor
// inputs; the CPU kernel runs the program over the broadcast output in blocks of a few hundred
// elements (DESIGN.md "Backends"), so the chain reads its inputs and writes its outputs once and
// keeps every intermediate in a block-sized scratch buffer instead of a full-size temporary.
//
// Note [Composite programs]: registers 0..n-1 hold the n inputs; instruction j writes register
// n + j from earlier registers. Each register has the dtype the unfused Elemwise would give it
// (scalarOpOutputDType on its operands' dtypes) and each instruction computes in the kernel dtype
// the unfused Elemwise would use (Note [Elemwise kernel dtypes]), with the same row kernels, so
// a Composite computes what the chain of Elemwise nodes computes (Note [Composite results]).
// Outputs name registers; several outputs make a multi-output Composite (an intermediate that is
// also used outside the fused group).
//
//   x, y float32:  Composite{tanh(add(i0, i1))}
//   props: {"inputs": ["float32", "float32"],
//           "program": [{"op": "add", "args": [0, 1]}, {"op": "tanh", "args": [2]}],
//           "outputs": [3]}

#include "engine/graph/op.h"
#include "engine/ops/elemwise/scalar_op.h"

#include <map>
#include <memory>
#include <span>
#include <vector>

namespace tscope::engine {

struct CompositeInstruction {
  ScalarOp op = ScalarOp::Identity;
  std::vector<int> args;          // registers, each defined before this instruction
  DType target = DType::Float32;  // Cast's target dtype (ignored by the other ops)
  friend bool operator==(const CompositeInstruction&, const CompositeInstruction&) = default;
};

class Composite final : public Op {
 public:
  // Throws std::invalid_argument naming the props key ("program"[2]["args"][1], ...) when the
  // program is malformed: an unknown register, a wrong argument count, an output that is not an
  // instruction's register, an inplace pair that does not exist.
  // inplace: output index -> the input it overwrites (as Elemwise's inplace pattern).
  Composite(std::vector<DType> inputDTypes, std::vector<CompositeInstruction> program,
            std::vector<int> outputs, std::map<int, int> inplace = {});

  int nInputs() const { return static_cast<int>(m_inputDTypes.size()); }
  int nRegisters() const { return static_cast<int>(m_registerDTypes.size()); }
  const std::vector<DType>& inputDTypes() const { return m_inputDTypes; }
  const std::vector<CompositeInstruction>& program() const { return m_program; }
  const std::vector<int>& outputRegisters() const { return m_outputs; }
  const std::map<int, int>& inplacePattern() const { return m_inplace; }
  DType registerDType(int reg) const { return m_registerDTypes.at(static_cast<std::size_t>(reg)); }
  // The inputs output o depends on, ascending.
  const std::vector<int>& outputDependencies(int o) const {
    return m_outputDeps.at(static_cast<std::size_t>(o));
  }
  // The same program with another inplace pattern (the inplace phase switches Composites this way).
  std::shared_ptr<const Composite> withInplace(std::map<int, int> inplace) const;
  OpPtr outOfPlace() const override;

  std::string name() const override { return "Composite"; }
  // {"inputs": [dtype names], "program": [{"op", "args"[, "dtype"]}], "outputs": [registers]}
  // plus "inplace": {"<output>": input} when inplace.
  nlohmann::json props() const override;
  // "Composite{tanh(add(i0, i1))}", one expression per output, shortened with "..." past a
  // readable length; ",inplace" as Elemwise marks it.
  std::string str() const override;
  // Input i must have dtype inputDTypes()[i]; output o gets its register's dtype and the broadcast
  // of the static shapes of the inputs it depends on (what the unfused chain would give it).
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  // The block interpreter (composite_kernel.cpp). Note [Composite block interpreter].
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  // Each output: Elemwise's broadcast rule over the inputs it depends on.
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  // The gradient of the unfused chain: the program expanded into Elemwise nodes, differentiated by
  // their pullbacks (the same for pushforward).
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  DestroyMap destroyMap() const override;
  // Output o depends on the inputs its program reads (outputDependencies).
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  // The precomputed steps of the block interpreter (composite_kernel.cpp).
  struct Plan;
  static std::shared_ptr<const Plan> buildPlan(const Composite& op);
  // Runs the program one instruction at a time on whole tensors through the Elemwise ops: the
  // path for runtime shapes the block interpreter does not cover (Note [Composite block
  // interpreter]).
  void performUnfused(const Apply& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs) const;

  std::vector<DType> m_inputDTypes;
  std::vector<CompositeInstruction> m_program;
  std::vector<int> m_outputs;
  std::map<int, int> m_inplace;
  std::vector<DType> m_registerDTypes;
  std::vector<std::vector<int>> m_outputDeps;
  std::shared_ptr<const Plan> m_plan;
};

// The unfused chain of a Composite node rebuilt on its inputs: one Elemwise node per instruction,
// one variable per output of node (DebugMode and the ONNX exporter use it).
//   node = Composite{tanh(add(i0, i1))}(x, y)    ->    {tanh(add(x, y))}
std::vector<VarPtr> expandComposite(const Apply& node);
// The same for the program of op on the given inputs (one per op input).
std::vector<VarPtr> expandComposite(const Composite& op, std::span<const VarPtr> inputs);

}  // namespace tscope::engine
