// Importer::convertDeferred: nodes converted at run time (Note [Run-time ONNX values] in
// onnx_runtime_node.h).
#include "engine/io/onnx/onnx_importer.h"
#include "engine/io/onnx/onnx_runtime_node.h"

#include <algorithm>
#include <set>

namespace tscope::engine::io::onnx_import {

namespace {

// Ops whose outputs have the rank of input 0 (and its dtype, but TopK's indices).
const std::set<std::string, std::less<>> kSameRank = {"Slice", "Resize", "Upsample", "Tile", "TopK",
                                                      "Pad",   "CumSum", "Dropout",  "Split"};

// The static length of a 1-d input (the entry count of axes, shape), or -1.
std::int64_t vectorLength(const VarPtr& v) {
  if (!v || v->type().ndim() != 1 || !v->type().isDimKnown(0)) return -1;
  return v->type().shape()[0];
}

}  // namespace

std::vector<VarPtr> Importer::convertDeferred(const onnx::NodeProto& node, int index,
                                              const std::vector<VarPtr>& inputs,
                                              const OnnxRuntimeValue& why) {
  const std::string& op = node.op_type();
  const VarPtr x = inputs.empty() ? nullptr : inputs[0];
  // Note [Deferred output types]: ONNX's inference where it gives a rank (it does for most of
  // these ops when only values are unknown); otherwise the rank the op implies, every dimension
  // unknown; otherwise the node is refused with the converter's own message.
  auto fallbackRank = [&](int k) -> std::optional<TensorType> {
    if (!x) return std::nullopt;
    const TensorType& t = x->type();
    const std::int64_t n = inputs.size() > 1 ? vectorLength(inputs[1]) : -1;
    DType dtype = t.dtype();
    if (op == "TopK" && k == 1) dtype = DType::Int64;
    if (kSameRank.count(op)) return TensorType::ofRank(dtype, t.ndim());
    if (op.rfind("Reduce", 0) == 0) {
      bool keep = true;
      for (const auto& a : node.attribute())
        if (a.name() == "keepdims") keep = a.i() != 0;
      if (keep) return TensorType::ofRank(dtype, t.ndim());
      if (n > 0 && n <= t.ndim()) return TensorType::ofRank(dtype, t.ndim() - static_cast<int>(n));
      return std::nullopt;
    }
    if (n < 0) return std::nullopt;
    if (op == "Unsqueeze") return TensorType::ofRank(dtype, t.ndim() + static_cast<int>(n));
    if (op == "Squeeze" && n <= t.ndim())
      return TensorType::ofRank(dtype, t.ndim() - static_cast<int>(n));
    if (op == "Reshape") return TensorType::ofRank(dtype, static_cast<int>(n));
    if (op == "Expand") return TensorType::ofRank(dtype, std::max(t.ndim(), static_cast<int>(n)));
    return std::nullopt;
  };
  std::vector<TensorType> types;
  for (int k = 0; k < node.output_size(); ++k) {
    std::optional<TensorType> t;
    if (!node.output(k).empty()) {
      t = inferredType(node.output(k));
      if (!t) t = fallbackRank(k);
      if (!t) throw why;
    } else {
      t = fallbackRank(k);
      if (!t) t = TensorType::ofRank(DType::Float32, 0);
    }
    types.push_back(*t);
  }
  std::vector<bool> present;
  std::vector<VarPtr> given;
  for (const VarPtr& in : inputs) {
    present.push_back(in != nullptr);
    if (in) given.push_back(in);
  }
  std::vector<int> values = runtimeValueInputs(op);
  // A listed op whose converter wants another input as a constant: every input is a value.
  if (std::find(values.begin(), values.end(), why.input) == values.end()) values.clear();
  auto deferred = std::make_shared<OnnxRuntimeNode>(
      safeText(op), safeText(node.name()), node.SerializeAsString(), m_opset, std::move(present),
      std::move(values), std::move(types));
  m_result.warnings.push_back(nodeWhere(node, index) + ": " + why.message() +
                              ", so the node is converted when it runs (OnnxRuntimeNode)");
  return deferred->makeNode(std::move(given))->outputs();
}

}  // namespace tscope::engine::io::onnx_import
