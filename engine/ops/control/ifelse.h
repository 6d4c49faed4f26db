#pragma once
// IfElse: a lazy conditional with several outputs (Theano's ifelse), evaluated so that only the
// branch taken runs.
//
//   VarPtr c = gt(sum(x), constant(0.0, DType::Float32));
//   std::vector<VarPtr> y = ifelse(c, {exp(x), x * 2.0}, {zerosLike(x), x});
//   // or, with an explicit boundary (h is computed outside the branches, before the IfElse):
//   std::vector<VarPtr> z = ifelse(c, {log(h)}, {h}, /*inputs=*/{h});
//
// - Note [IfElse bodies]: the op holds two inner graphs, then and else, each taking the node's
//   inputs (cond first, then the branch inputs) and giving the node's outputs. The branch inputs
//   are the free and shared variables both branches use (or the `inputs` given: a branch then
//   starts at those variables, whatever computes them runs before the IfElse). compile links one
//   child program per body (optimized with the outer mode) and the VM enters only the taken one
//   as a frame (Note [Several inner graphs] in engine/graph/inner_graphs.h), so observers see the
//   branch's nodes with the frame path and stepInto enters it. perform, the reference, evaluates
//   the taken body node by node.
// - The branches' outputs must agree in dtype and rank (TypeError naming the output and both
//   types); a branch whose output may have another rank gives it through assertType(), checked
//   when that branch runs (Note [IfElse branches of another rank] in
//   engine/ops/shape/assert_type.h). The output type keeps the dimensions both know alike,
//   unknown elsewhere. inferShape
//   gives a dimension both branches agree on (a constant, or the same input's size), else the
//   output's own runtime size.
// - The gradient of an output with respect to a branch input is another IfElse on the same
//   condition, whose branches differentiate the then and the else bodies (zeros for a branch
//   that does not use the input); the condition is disconnected. The R-op follows from it.
// - props {"label", "then": GRAPH, "else": GRAPH} (the .tsg GRAPH schema, engine/io/graph_json.h).

#include "engine/graph/function_graph.h"
#include "engine/graph/inner_graphs.h"
#include "engine/graph/op.h"

#include <memory>
#include <source_location>
#include <string>
#include <vector>

namespace tscope::engine {

class OpRegistry;

class IfElse final : public Op, public AlternativeBodies {
 public:
  // Both graphs take [cond, inputs...] of the same types and give the same number of outputs.
  // Throws GraphError/TypeError naming the label and the output or input that disagrees.
  IfElse(std::shared_ptr<const FunctionGraph> thenGraph,
         std::shared_ptr<const FunctionGraph> elseGraph, std::string label = "ifelse");
  ~IfElse() override;

  std::string name() const override { return "IfElse"; }
  nlohmann::json props() const override { return m_props; }
  // "IfElse{label}".
  std::string str() const override;
  const std::string& label() const { return m_label; }

  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  bool isExecutable() const override { return m_executable; }

  // Note [Several inner graphs]: then is body 0 (and innerGraph()), else body 1.
  const FunctionGraph* innerGraph() const override { return m_then.get(); }
  std::vector<const FunctionGraph*> innerGraphs() const override {
    return {m_then.get(), m_else.get()};
  }
  std::size_t selectInnerGraph(std::span<const Tensor* const> inputs) const override;
  const FunctionGraph& thenGraph() const { return *m_then; }
  const FunctionGraph& elseGraph() const { return *m_else; }

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  std::shared_ptr<const FunctionGraph> m_then, m_else;
  std::string m_label;
  bool m_executable = true;
  std::vector<TensorType> m_types;              // the merged output types
  std::vector<std::vector<bool>> m_connection;  // [input][output]
  std::vector<const Apply*> m_thenOrder, m_elseOrder;
  nlohmann::json m_props;
};

// One IfElse node over `cond` (a 0-d tensor, nonzero: then); returns one output per branch
// output. The branch inputs are the free and shared variables the branches use. Throws TypeError
// when cond is not 0-d, the branches have different output counts, or an output's dtype or rank
// differs between them.
std::vector<VarPtr> ifelse(const VarPtr& cond, const std::vector<VarPtr>& thenOutputs,
                           const std::vector<VarPtr>& elseOutputs,
                           const std::string& label = "ifelse",
                           std::source_location site = std::source_location::current());
// With an explicit boundary: the branches start at `inputs` (any variables, computed ones
// included) and must not depend on another free variable (GraphError naming it).
std::vector<VarPtr> ifelse(const VarPtr& cond, const std::vector<VarPtr>& thenOutputs,
                           const std::vector<VarPtr>& elseOutputs,
                           const std::vector<VarPtr>& inputs, const std::string& label,
                           std::source_location site = std::source_location::current());
// One output.
VarPtr ifelse(const VarPtr& cond, const VarPtr& thenOutput, const VarPtr& elseOutput,
              std::source_location site = std::source_location::current());

void registerControlOps(OpRegistry& registry);

}  // namespace tscope::engine
