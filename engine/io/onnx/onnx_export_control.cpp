// Control flow as ONNX: IfElse (engine/ops/control/ifelse.h) -> If.
//
// Note [IfElse as If]: ONNX's If takes one bool element and two subgraphs that read the enclosing
// graph's values by name; each branch body of the IfElse is written as one subgraph (Note
// [Exported subgraphs] in onnx_export.cpp), its input k reading the node's input k (the condition
// and the branch inputs), so the body's nodes keep their scopes and sites in names and doc
// strings. The engine's condition is any 0-d tensor (nonzero takes the then branch); a non-bool
// one is Cast to bool, which maps nonzero to true. The importer (Note [ONNX If] in
// onnx_import_if.cpp) maps the If back onto an IfElse, so a model round-trips.
#include "engine/io/onnx/onnx_export_emit.h"
#include "engine/ops/control/ifelse.h"

namespace tscope::engine::io::onnx_export {

namespace {

void emitIfElse(NodeExport& n) {
  const auto& op = n.op<IfElse>();
  const DType condType = n.inType(0).dtype();
  const std::string cond = condType == DType::Bool ? n.input(0) : n.input(0, DType::Bool);
  std::vector<std::string> inputs;
  for (int i = 0; i < n.nInputs(); ++i) inputs.push_back(n.input(i));
  onnx::GraphProto branches[2];
  const char* const kAttr[2] = {"then_branch", "else_branch"};
  const FunctionGraph* bodies[2] = {&op.thenGraph(), &op.elseGraph()};
  for (int b = 0; b < 2; ++b)
    n.emitSubgraph(*bodies[b], inputs, n.newValue(b == 0 ? "If_then" : "If_else"), branches[b]);
  std::vector<std::string> outputs;
  for (int k = 0; k < n.nOutputs(); ++k) outputs.push_back(n.output(k));
  onnx::NodeProto& node = n.add("If", {cond}, outputs);
  for (int b = 0; b < 2; ++b) {
    onnx::AttributeProto* a = node.add_attribute();
    a->set_name(kAttr[b]);
    a->set_type(onnx::AttributeProto::GRAPH);
    a->mutable_g()->Swap(&branches[b]);
  }
}

}  // namespace

void registerControlEmitters(EmitterTable& table) {
  table.add("IfElse", &emitIfElse);
}

}  // namespace tscope::engine::io::onnx_export
