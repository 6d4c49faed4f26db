#pragma once
// OpFromGraph: a subgraph used as one op (Theano's OpFromGraph, REFERENCE.md). The op owns a clone
// of the graph between its inner inputs and outputs; applying it to outer variables builds one
// node whose outputs are the inner outputs computed on the outer values.
//
//   auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 8}), "x");
//   auto gelu = opFromGraph({x}, {x * sigmoid(x * 1.702)}, "gelu_block");
//   VarPtr h1 = (*gelu)({a});                 // one node OpFromGraph{gelu_block}(a)
//   std::vector<VarPtr> outs = gelu->apply({a, b});  // every output of a multi-output op
//
// - Inner inputs must be free variables (Variable::create); constants inside are part of the op;
//   shared variables inside are refused (pass them as inputs).
// - compile links the body into a child program, rewritten with the outer mode, and the VM runs
//   it as a frame (Note [Frames] in engine/vm/vm.h), so observers see its nodes. perform is the
//   reference: it evaluates the body node by node with each inner op's perform (Note [OpFromGraph
//   reference]); DebugMode and test values use it. The op holds no execution state.
// - inferShape and the gradient come from the inner graph rebuilt on the outer variables (expand).
// - An inline op is replaced by its inner graph in the canonicalize phase
//   (engine/rewrite/rules/inline_op_from_graph.cpp); a non-inline one stays one node through
//   fast_run, which is what the viewer draws as a collapsible group.
// - gradOverride / ropOverride: Note [OpFromGraph overrides] below.
// - props: {"label", "inline", "graph": the inner graph in the .tsg GRAPH schema
//   (engine/io/graph_json.h)}, so .tsg files round-trip it exactly. Equal props, equal ops.

#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"

#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine {

class OpRegistry;
class OpFromGraph;

// Note [OpFromGraph overrides] (Theano's grad_overrides / rop_overrides): the gradient or the R-op
// of an OpFromGraph given instead of derived from the body.
// - grad: called with the node's inputs and the gradients of its outputs; returns one gradient
//   per input (null: disconnected). gradGraph: an OpFromGraph taking (inputs..., output grads...)
//   and giving one gradient per input.
// - rop: called with the node's inputs and one tangent per input (zeros where an input is held
//   fixed); returns one tangent per output. ropGraph: an OpFromGraph taking (inputs...,
//   tangents...) and giving one tangent per output.
// A graph override is part of the props (and of .tsg files); a callable is not: the props carry
// a per-callable id (two ops with different callables are different ops) and "not_saveable", so
// saving the graph fails naming the node (Note [Unsaveable props] in tsg_writer.cpp). Set either
// the callable or the graph of each, not both.
using GradOverrideFn = std::function<std::vector<VarPtr>(std::span<const VarPtr> inputs,
                                                         std::span<const VarPtr> outputGrads)>;
using RopOverrideFn = std::function<std::vector<VarPtr>(std::span<const VarPtr> inputs,
                                                        std::span<const VarPtr> tangents)>;
struct OpFromGraphOverrides {
  GradOverrideFn grad;
  std::shared_ptr<const OpFromGraph> gradGraph;
  RopOverrideFn rop;
  std::shared_ptr<const OpFromGraph> ropGraph;
};

class OpFromGraph final : public Op {
 public:
  // Clones the graph between `inputs` and `outputs`. Throws GraphError naming the label when an
  // input is not a free variable (or is listed twice), when an output depends on a free variable
  // that is not an input, or on a shared variable.
  OpFromGraph(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
              std::string label, bool isInline = false, OpFromGraphOverrides overrides = {});
  // Takes a graph already built (the registry, from props); the same checks.
  OpFromGraph(std::shared_ptr<const FunctionGraph> graph, std::string label, bool isInline,
              OpFromGraphOverrides overrides = {});
  ~OpFromGraph() override;

  std::string name() const override { return "OpFromGraph"; }
  nlohmann::json props() const override { return m_props; }
  // "OpFromGraph{gelu_block}".
  std::string str() const override;

  // Checks the outer inputs against the inner inputs: same count, dtype and rank, no known
  // dimension that disagrees. The output types are the inner outputs' types.
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  // False when an inner op cannot run (an opaque op from a file).
  bool isExecutable() const override { return m_executable; }

  // The body (Note [Frames] in engine/vm/vm.h: compile links it into a child program).
  const FunctionGraph* innerGraph() const override { return m_graph.get(); }
  const FunctionGraph& body() const { return *m_graph; }
  const std::shared_ptr<const FunctionGraph>& innerGraphPtr() const { return m_graph; }
  // The user's name for the subgraph ("gelu_block").
  const std::string& label() const { return m_label; }
  bool isInline() const { return m_inline; }
  const OpFromGraphOverrides& overrides() const { return m_overrides; }

  // Every output of the node applied to `inputs`.
  std::vector<VarPtr> apply(std::vector<VarPtr> inputs,
                            std::source_location site = std::source_location::current()) const;

  // The inner graph rebuilt on outer variables (one per inner input): a new node per inner node,
  // with its op, names and creation site, scoped `scope` + '/' + the inner node's scope. Returns
  // one variable per inner output. With testValues, nodes are built through makeNode (which
  // computes test values when they are on); without, no value is computed (shape inference).
  std::vector<VarPtr> expand(std::span<const VarPtr> inputs, const std::string& scope,
                             bool testValues = true) const;

  // The registry factory: props {"label": string, "inline": bool, "graph": GRAPH}. Inner ops are
  // looked up in defaultOpRegistry(). Throws std::invalid_argument naming the bad prop.
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  void init();
  // The inner outer-input slots for expand(): a variable used at two inputs gets an identity
  // node at the second, so each input's gradient and tangent stays its own.
  static std::vector<VarPtr> distinctSlots(const Apply& node);

  void checkOverrides();

  std::shared_ptr<const FunctionGraph> m_graph;
  OpFromGraphOverrides m_overrides;
  std::string m_label;
  bool m_inline = false;
  bool m_executable = true;
  nlohmann::json m_props;                       // built once: equality and hash read it often
  std::vector<std::vector<bool>> m_connection;  // [input][output]
  std::vector<const Apply*> m_order;            // the body in topological order (perform)
};

// std::make_shared<const OpFromGraph>(...): ops are held by shared_ptr to build nodes.
std::shared_ptr<const OpFromGraph> opFromGraph(const std::vector<VarPtr>& inputs,
                                               const std::vector<VarPtr>& outputs,
                                               std::string label, bool isInline = false);
// With a gradient and/or R-op override (Note [OpFromGraph overrides]).
std::shared_ptr<const OpFromGraph> opFromGraph(const std::vector<VarPtr>& inputs,
                                               const std::vector<VarPtr>& outputs,
                                               std::string label, OpFromGraphOverrides overrides,
                                               bool isInline = false);

// Evaluates a graph node by node with each op's perform (Note [OpFromGraph reference]), the
// reference of every op with an inner graph (OpFromGraph, IfElse's branches); `what` prefixes a
// failure. inputs[i] is the value of graph.inputs()[i].
void evaluateGraph(const FunctionGraph& graph, std::span<const Apply* const> order,
                   std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
                   const std::string& what);

// [input][output] of a graph: does the output depend on the input, through each inner op's own
// connectionPattern; `order` is the graph's nodes in topological order. The connection pattern of
// every op with an inner graph.
std::vector<std::vector<bool>> innerConnectionPattern(const FunctionGraph& graph,
                                                      std::span<const Apply* const> order);

// "a/b" from "a" and "b"; either may be empty.
std::string joinScope(std::string_view outer, std::string_view inner);

void registerGraphOps(OpRegistry& registry);

}  // namespace tscope::engine
