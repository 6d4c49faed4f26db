#pragma once
// The importer's state while it converts one model (internal to engine/io/onnx): the value table
// (ONNX value name -> variable), ONNX's inferred types, and the cache of constant values that
// NodeContext::constantInput folds on demand. Note [ONNX import] in onnx_import.h.
#include "engine/io/onnx/onnx_convert.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace tscope::engine::io::onnx_import {

class Importer {
 public:
  Importer(std::string source, std::string baseDir, OnnxImportOptions options);
  OnnxImportResult run(onnx::ModelProto& model);

  int opset() const { return m_opset; }
  const std::string& source() const { return m_source; }
  // "graph.node[7] '/conv1/Conv' (Conv)".
  static std::string nodeWhere(const onnx::NodeProto& node, int index);
  [[noreturn]] void fail(const std::string& where, const std::string& message) const;
  std::optional<TensorType> inferredType(const std::string& valueName) const;
  // The value of v when it is a constant or a small computation over constants.
  std::optional<Tensor> constantValue(const VarPtr& v);

 private:
  void readOpsets(const onnx::ModelProto& model);
  void checkAndInfer(onnx::ModelProto& model);
  void precheckConvLike(const onnx::GraphProto& graph) const;
  void readInitializers(const onnx::GraphProto& graph);
  void readInputs(const onnx::GraphProto& graph);
  std::vector<int> nodeOrder(const onnx::GraphProto& graph) const;
  void convertNode(const onnx::NodeProto& node, int index);
  // ONNX If onto IfElse (onnx_import_if.cpp): both subgraphs converted on the outer values they
  // name, then cut into the IfElse's branches.
  std::vector<VarPtr> convertIf(const onnx::NodeProto& node, int index,
                                const std::vector<VarPtr>& inputs);
  // ONNX Scan and Loop onto Scan (onnx_import_loop.cpp, Note [ONNX loops]); convertBody converts
  // a body graph with its inputs bound to `bound` and returns its outputs.
  std::vector<VarPtr> convertScan(const onnx::NodeProto& node, int index,
                                  const std::vector<VarPtr>& inputs);
  // The opset-9 Scan of `inputs` (states, then sequences); convertScan unrolls Scan-8's batch.
  std::vector<VarPtr> scanBody(const onnx::NodeProto& node, int index,
                               const std::vector<VarPtr>& inputs);
  std::vector<VarPtr> convertLoop(const onnx::NodeProto& node, int index,
                                  const std::vector<VarPtr>& inputs);
  std::vector<VarPtr> convertBody(const onnx::GraphProto& g, const std::string& where,
                                  const std::vector<VarPtr>& bound);
  // A node whose converter threw OnnxRuntimeValue, as an OnnxRuntimeNode (onnx_runtime_node.h);
  // rethrows `why` when the node's output types cannot be told.
  std::vector<VarPtr> convertDeferred(const onnx::NodeProto& node, int index,
                                      const std::vector<VarPtr>& inputs,
                                      const OnnxRuntimeValue& why);
  std::vector<VarPtr> convertOpaque(const onnx::NodeProto& node, int index,
                                    const std::vector<VarPtr>& inputs, const std::string& why);
  void adoptNewNodes(const std::vector<VarPtr>& outputs, const onnx::NodeProto& node, int index);
  void checkOutputType(const VarPtr& out, const std::string& name, const onnx::NodeProto& node,
                       int index) const;

  std::string m_source;
  std::string m_baseDir;
  OnnxImportOptions m_options;
  int m_opset = 0;
  // The model imports the default domain (false for a model of training optimizers alone, Note
  // [Models without the default domain]); the ai.onnx.preview.training opset, 0 when not imported.
  bool m_importsDefaultDomain = true;
  int m_trainingOpset = 0;
  OnnxImportResult m_result;
  std::unordered_map<std::string, VarPtr> m_values;
  std::unordered_map<std::string, onnx::TypeProto> m_inferred;
  std::vector<VarPtr> m_graphInputs;
  std::vector<VarPtr> m_shared;
  std::unordered_set<const Apply*> m_known;  // nodes that belong to an already converted ONNX node
  std::unordered_set<const Variable*> m_existing;  // variables present before the current node
  std::unordered_map<const Variable*, std::optional<Tensor>> m_folded;
};

// Parses and imports; `baseDir` resolves external data ("" for models read from memory).
OnnxImportResult readOnnxFrom(std::string_view bytes, const std::string& source,
                              const std::string& baseDir, const OnnxImportOptions& options);

}  // namespace tscope::engine::io::onnx_import
