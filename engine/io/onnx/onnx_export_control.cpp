// Control flow as ONNX: IfElse (engine/ops/control/ifelse.h) -> If, Scan (scan.h) -> Scan.
//
// Note [IfElse as If]: ONNX's If takes one bool element and two subgraphs that read the enclosing
// graph's values by name; each branch body of the IfElse is written as one subgraph (Note
// [Exported subgraphs] in onnx_export.cpp), its input k reading the node's input k (the condition
// and the branch inputs), so the body's nodes keep their scopes and sites in names and doc
// strings. The engine's condition is any 0-d tensor (nonzero takes the then branch); a non-bool
// one is Cast to bool, which maps nonzero to true. The importer (Note [ONNX If] in
// onnx_import_if.cpp) maps the If back onto an IfElse, so a model round-trips.
#include "engine/io/onnx/onnx_export_emit.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/shape/assert_type.h"

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
  for (int b = 0; b < 2; ++b) {
    n.emitSubgraph(*bodies[b], inputs, n.newValue(b == 0 ? "If_then" : "If_else"), branches[b]);
    // Note [IfElse branches of another rank]: a branch that asserts another rank than its value
    // has is an Identity in ONNX, whose branch output then has the value's rank: left undeclared.
    for (std::size_t k = 0; k < bodies[b]->outputs().size(); ++k) {
      const Apply* last = bodies[b]->outputs()[k]->owner();
      if (last && dynamic_cast<const AssertType*>(&last->op()) &&
          last->input(0)->type().ndim() != last->outputRef(0).type().ndim())
        branches[b]
            .mutable_output(static_cast<int>(k))
            ->mutable_type()
            ->mutable_tensor_type()
            ->clear_shape();
    }
  }
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

void valueInfo(onnx::ValueInfoProto& info, const std::string& name, const TensorType& type) {
  info.set_name(name);
  auto* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx_import::dtypeToOnnx(type.dtype()));
  auto* shape = t->mutable_shape();
  for (std::int64_t d : type.shape()) {
    auto* dim = shape->add_dim();
    if (d != kUnknownDim) dim->set_dim_value(d);
  }
}

// Note [Scan as Scan]: ONNX's Scan (opset 9+) carries states and slices its scan inputs along
// axis 0; its body takes [states, slices] and gives [new states, scan outputs], and the node gives
// [final states, stacked scan outputs]. A Scan whose sequences have taps {0}, whose recurrent
// outputs have taps {-1} and whose steps come from the sequences maps onto it: the engine body is
// written as the subgraph (its non-sequences read the enclosing values by name), a recurrent output
// that is stacked is also a scan output (an Identity of the new state), one that keeps its last
// state is the final state. Other layouts are refused, named. The importer (Note [ONNX loops])
// maps the Scan back.
void emitScan(NodeExport& n) {
  const auto& op = n.op<Scan>();
  if (op.nSequences() == 0)
    n.unsupported("a Scan without sequences (nSteps alone) has no ONNX Scan form");
  for (const auto& taps : op.layout().seqTaps)
    if (taps != std::vector<int>{0})
      n.unsupported("ONNX Scan slices each scan input at the current step only; sequence taps " +
                    std::string("other than {0} have no ONNX form"));
  for (int o = 0; o < op.nOutputs(); ++o)
    if (op.isRecurrent(o) && !op.initIsState(o))
      n.unsupported("ONNX Scan carries one state per output; output " + std::to_string(o) +
                    " has several taps");
  const std::optional<double> steps = n.constantScalar(0);
  if (!steps || *steps != -1)
    n.unsupported(
        "ONNX Scan runs over its scan inputs' whole length; nSteps must come from the "
        "sequences");
  const FunctionGraph& body = op.body();
  const std::string base = n.newValue("Scan_body");
  std::vector<std::string> inner, states, slices;
  for (int i = 0; i < op.nSequences(); ++i) {
    slices.push_back(base + "_slice_" + std::to_string(i));
    inner.push_back(slices.back());
  }
  for (int o = 0; o < op.nOutputs(); ++o)
    if (op.isRecurrent(o)) {
      states.push_back(base + "_state_" + std::to_string(o));
      inner.push_back(states.back());
    }
  for (int k = 0; k < op.layout().nNonSeqs; ++k) inner.push_back(n.input(op.nonSeqInput(k)));
  onnx::GraphProto g;
  n.emitSubgraph(body, inner, base, g);
  const std::vector<onnx::ValueInfoProto> outs(g.output().begin(), g.output().end());
  g.clear_output();
  // Formal inputs: the states, then the slices.
  std::size_t p = 0;
  std::vector<onnx::ValueInfoProto> sliceInfo;
  for (int i = 0; i < op.nSequences(); ++i) {
    onnx::ValueInfoProto info;
    valueInfo(info, slices[static_cast<std::size_t>(i)], body.inputs()[p++]->type());
    sliceInfo.push_back(info);
  }
  for (const std::string& s : states) valueInfo(*g.add_input(), s, body.inputs()[p++]->type());
  for (const auto& info : sliceInfo) *g.add_input() = info;
  // Outputs: the new states, then the scan outputs.
  std::vector<std::string> nodeInputs, nodeOutputs, scanOutputs;
  for (int o = 0; o < op.nOutputs(); ++o)
    if (op.isRecurrent(o)) {
      *g.add_output() = outs[static_cast<std::size_t>(o)];
      nodeInputs.push_back(n.input(op.initInput(o)));
      nodeOutputs.push_back(op.layout().outStore[static_cast<std::size_t>(o)] == Scan::Store::Last
                                ? n.output(o)
                                : n.newValue("Scan_final"));
    }
  for (int i = 0; i < op.nSequences(); ++i) nodeInputs.push_back(n.input(1 + i));
  for (int o = 0; o < op.nOutputs(); ++o) {
    const auto so = static_cast<std::size_t>(o);
    if (op.isRecurrent(o) && op.layout().outStore[so] == Scan::Store::Last) continue;
    if (op.isRecurrent(o)) {
      const std::string copy = base + "_stacked_" + std::to_string(o);
      onnx::NodeProto* id = g.add_node();
      id->set_op_type("Identity");
      id->set_name(copy);
      id->add_input(outs[so].name());
      id->add_output(copy);
      onnx::ValueInfoProto info = outs[so];
      info.set_name(copy);
      *g.add_output() = info;
    } else {
      *g.add_output() = outs[so];
    }
    nodeOutputs.push_back(n.output(o));
  }
  onnx::NodeProto& node = n.add("Scan", nodeInputs, nodeOutputs);
  attrInt(node, "num_scan_inputs", op.nSequences());
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->Swap(&g);
}

}  // namespace

void registerControlEmitters(EmitterTable& table) {
  table.add("IfElse", &emitIfElse);
  table.add("Scan", &emitScan);
}

}  // namespace tscope::engine::io::onnx_export
