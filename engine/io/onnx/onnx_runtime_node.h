#pragma once
// OnnxRuntimeNode: an ONNX node whose converter needs, as constants, values the model computes at
// run time (Unsqueeze's axes, Slice's starts, Resize's scales, TopK's k, Tile's repeats, Pad's
// pads...). Internal to engine/io/onnx; the importer builds it (Importer::convertDeferred):
//   ONNX Unsqueeze(x, axes) with axes a graph input  ->  OnnxRuntimeNode{Unsqueeze}(x, axes)
// and each run converts the node on the values it is given, then runs that conversion.
//
// Note [Run-time ONNX values]: the engine's ops take shape-deciding lists as props (a DimShuffle's
// order, a Subtensor's bounds, a CAReduce's axes), which is what keeps the graphs of constant
// values (nearly every exported model) and their rewrites as they are. When a converter asks for
// one of these as a constant and the model computes it, the importer does not refuse the node any
// more: it keeps the ONNX node (its serialized NodeProto and the opset) in this op, whose inputs
// are the node's inputs and whose output types are ONNX's inferred ones (unknown dimensions where
// inference could not tell; the rank from the op where inference gave none). When the node runs,
// perform() writes a one-node model whose "value" inputs (kValueInputs per op; every input for
// other ops) are initializers holding the run-time values and whose other inputs are graph inputs
// of the run-time shapes, imports it with the ordinary converters, compiles it and runs it. So the
// values are checked exactly as constant ones are at import: a bad value fails the run with the
// importer's message, naming the node and the value ("axes = [5, 0]: expected axes in [-4, 3]").
// The compiled conversions are cached by the values and the shapes (kCacheSize entries). Outputs
// are checked against the static types. The op has no gradient (Grad::undefined names it).
#include "engine/graph/op.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tscope::engine::io::onnx_import {

class OnnxRuntimeNode final : public Op {
 public:
  // `nodeBytes`: the serialized NodeProto; `present[k]`: whether ONNX input k is given (the op's
  // inputs are the present ones, in order); `valueInputs`: the ONNX input indices fed as
  // initializers at run time; `types`: one per ONNX output (unused ones included).
  OnnxRuntimeNode(std::string onnxOp, std::string nodeName, std::string nodeBytes, int opset,
                  std::vector<bool> present, std::vector<int> valueInputs,
                  std::vector<TensorType> types);
  ~OnnxRuntimeNode() override;

  std::string name() const override { return "OnnxRuntimeNode"; }
  nlohmann::json props() const override;
  // "OnnxRuntimeNode{Unsqueeze 'name'}": the node's bytes stay out of error messages.
  std::string str() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);

  static constexpr std::size_t kCacheSize = 8;

 private:
  struct Cache;
  std::string m_onnxOp, m_nodeName, m_nodeBytes;
  int m_opset;
  std::vector<bool> m_present;
  std::vector<int> m_valueInputs;
  std::vector<TensorType> m_types;
  std::shared_ptr<Cache> m_cache;
};

// The ONNX input indices an op's converter reads as constants (Note [Run-time ONNX values]);
// empty when the op is not listed (then every input is fed as a value).
std::vector<int> runtimeValueInputs(const std::string& onnxOp);

}  // namespace tscope::engine::io::onnx_import
