// ONNX If -> IfElse (engine/ops/control/ifelse.h).
//
// Note [ONNX If]: each branch is a GraphProto whose nodes may name any value of the enclosing
// scopes. The importer converts the branch's initializers and nodes like outer ones (so every
// converted node keeps its ONNX name as scope and site, which is what NanGuard and the viewer
// name), then restores the value table: the branch's names do not leak out. The branch inputs of
// the IfElse are the outer values the branches reach (the variables defined before the If);
// ifelse() clones what the branches compute into its then and else bodies, and the temporary
// nodes are left unused. A condition of shape [1] (what exporters write) is reshaped to 0-d.
// Branches whose outputs differ in rank: Note [IfElse branches of another rank].
#include "engine/graph/traversal.h"
#include "engine/io/onnx/onnx_import.h"
#include "engine/io/onnx/onnx_importer.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/shape/assert_type.h"
#include "engine/ops/shape/reshape.h"

#include <unordered_set>

namespace tscope::engine::io::onnx_import {

std::vector<VarPtr> Importer::convertIf(const onnx::NodeProto& node, int index,
                                        const std::vector<VarPtr>& inputs) {
  const std::string where = nodeWhere(node, index);
  if (inputs.size() != 1 || !inputs[0])
    fail(where, "If expects one input (the condition), found " + std::to_string(inputs.size()));
  VarPtr cond = inputs[0];
  if (cond->type().ndim() > 0) {
    for (std::int64_t d : cond->type().shape())
      if (d != 1 && d != kUnknownDim)
        fail(where, "the condition must hold one element, found " + cond->type().str());
    cond = reshape(cond, std::vector<std::int64_t>{});
  }
  const onnx::GraphProto* branches[2] = {nullptr, nullptr};
  for (const auto& a : node.attribute()) {
    if (a.name() == "then_branch" && a.has_g()) branches[0] = &a.g();
    if (a.name() == "else_branch" && a.has_g()) branches[1] = &a.g();
  }
  if (!branches[0] || !branches[1])
    fail(where, std::string("the attribute ") + (branches[0] ? "else_branch" : "then_branch") +
                    " (a graph) is missing");
  std::unordered_set<const Variable*> outer;
  for (const auto& [name, v] : m_values) outer.insert(v.get());
  std::vector<VarPtr> outs[2];
  for (int b = 0; b < 2; ++b) {
    const onnx::GraphProto& g = *branches[b];
    const auto saved = m_values;
    try {
      readInitializers(g);
      for (int k : nodeOrder(g)) convertNode(g.node(k), k);
    } catch (const OnnxError& e) {
      m_values = saved;
      fail(where, std::string(b == 0 ? "then_branch" : "else_branch") + ": " + e.what());
    }
    for (int o = 0; o < g.output_size(); ++o) {
      auto it = m_values.find(g.output(o).name());
      if (it == m_values.end())
        fail(where, std::string(b == 0 ? "then_branch" : "else_branch") + " output " +
                        std::to_string(o) + " '" + safeText(g.output(o).name()) +
                        "' is defined by no node of the branch or the enclosing graph");
      outs[b].push_back(it->second);
    }
    m_values = saved;
  }
  if (outs[0].size() != static_cast<std::size_t>(node.output_size()) ||
      outs[1].size() != outs[0].size())
    fail(where, "the branches give " + std::to_string(outs[0].size()) + " and " +
                    std::to_string(outs[1].size()) + " outputs; the node has " +
                    std::to_string(node.output_size()));
  // Note [IfElse branches of another rank] (engine/ops/shape/assert_type.h): an output whose
  // branches differ in rank takes the rank ONNX declares for it, else the rank of the branch the
  // condition takes when the importer can compute the condition (PyTorch's Squeeze of an axis
  // whose size the types know); the other branch asserts that rank when it runs.
  std::optional<bool> taken;  // true: then
  if (const std::optional<Tensor> c = constantValue(cond)) taken = c->toDoubles().at(0) != 0;
  for (std::size_t o = 0; o < outs[0].size(); ++o) {
    const TensorType& a = outs[0][o]->type();
    const TensorType& b = outs[1][o]->type();
    if (a.ndim() == b.ndim()) continue;
    const std::string& name = node.output(static_cast<int>(o));
    std::optional<TensorType> declared = name.empty() ? std::nullopt : inferredType(name);
    if (!declared && taken) declared = *taken ? a : b;
    if (!declared)
      fail(where, "output " + std::to_string(o) + " '" + safeText(name) + "' is " + a.str() +
                      " in then_branch and " + b.str() +
                      " in else_branch, and the condition is known only at run time; a "
                      "Tensorscope type has one rank, so such an output needs its type "
                      "(with a shape) in the model's value_info");
    for (int k = 0; k < 2; ++k) {
      VarPtr& out = outs[k][o];
      if (out->type().ndim() == declared->ndim()) continue;
      out = assertType(out, declared->shape());
      adoptNewNodes({out}, node, index);
    }
  }
  // The branch inputs: outer values (and the branches' own shared initializers) the branches read.
  std::vector<VarPtr> boundary;
  std::unordered_set<const Variable*> seen;
  std::vector<VarPtr> all(outs[0]);
  all.insert(all.end(), outs[1].begin(), outs[1].end());
  auto consider = [&](const VarPtr& v) {
    const bool free = !v->owner() && v->kind() != Variable::Kind::Constant;
    if ((outer.count(v.get()) || free) && v->kind() != Variable::Kind::Constant &&
        seen.insert(v.get()).second)
      boundary.push_back(v);
  };
  for (const VarPtr& v : all) consider(v);
  for (Apply* a : ancestorNodes(all, [&](const Variable& v) { return outer.count(&v) > 0; }))
    for (const VarPtr& in : a->inputs()) consider(in);
  const std::string label = node.name().empty() ? "If" : safeText(node.name());
  try {
    return ifelse(cond, outs[0], outs[1], boundary,
                  label.find('/') == std::string::npos ? label : "If");
  } catch (const std::exception& e) {
    fail(where, std::string("cannot convert: ") + e.what());
  }
}

}  // namespace tscope::engine::io::onnx_import
