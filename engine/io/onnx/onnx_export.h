#pragma once
// Writing a Tensorscope graph as an ONNX model (a serialized ModelProto), for graphs whose ops all
// have ONNX forms: what `tensorscope export FILE -o OUT.onnx` does. The public side has no protobuf
// type; the per-op emitters live behind onnx_export_emit.h.
//
// Note [ONNX export]: the graph's nodes are visited in topological order and each becomes one ONNX
// node where a direct form exists (Conv2d -> Conv, Softmax -> Softmax), a few ONNX nodes otherwise
// (DimShuffle -> Squeeze + Transpose + Unsqueeze, Gemm with symbolic alpha -> MatMul + Mul + Add).
// Optimized graphs export too: an in-place op is written as its out-of-place form
// (Op::outOfPlace()) and a fused Composite as the Elemwise chain it stands for
// (expandComposite). Inputs are converted to the dtype the engine computes in (numpy promotion,
// Note [Elemwise kernel dtypes]) with Cast nodes, and where ONNX's type constraints lack a dtype
// (Add on int8 at opset 13) the node computes in a wider one and casts back, which wraps as the
// engine does.
//   - non-shared graph inputs become graph inputs with their names (made unique; "input_<k>"
//     when empty) and static shapes, an unknown dimension written as the symbol "N" on axis 0 and
//     "d<axis>" elsewhere;
//   - shared variables become initializers that keep their names; integer and bool constants
//     initializers too, float constants Constant nodes (Note [Constants in the exported model]);
//   - ONNX node names are the scope path and the ONNX op type ("/layer1/conv1/Conv", "/Tanh_1"), so
//     re-importing restores the scopes; each node's doc_string names the engine op and its site;
//   - graph outputs keep their variables' names ("output_<i>" when empty, "W_update" for an
//     unnamed update of shared variable W: ONNX has no updates, so they are plain outputs);
//   - a few compositions are one ONNX node (the engine's sum / count is ReduceMean, Note [Export
//     patterns] in onnx_export_emit.h).
// The model must pass ONNX's checker and its strict shape inference (whose output types are
// checked against the engine's); a failure there is an exporter bug and throws OnnxExportError.

#include "engine/graph/function_graph.h"

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace tscope::engine::io {

// The lowest and highest default-domain opset the exporter writes.
inline constexpr int kOnnxExportMinOpset = 13;
inline constexpr int kOnnxExportMaxOpset = 17;

struct OnnxExportOptions {
  int opset = 17;  // kOnnxExportMinOpset..kOnnxExportMaxOpset
  std::string producerName = "tensorscope";
  std::string producerVersion = "0.1.0";
  std::string graphName = "tensorscope";
};

// A graph the exporter cannot write. For a node without an ONNX form, what() reads
// "cannot export node 12 Elemwise{log2}(x) (scope 'layer1', created at mlp.cpp:42 (build)) to
// ONNX: <why>" and nodeId() is the node's id; -1 for errors not tied to a node (the checker).
class OnnxExportError : public std::runtime_error {
 public:
  OnnxExportError(const std::string& message, std::int64_t nodeId = -1)
      : std::runtime_error(message), m_nodeId(nodeId) {}
  std::int64_t nodeId() const { return m_nodeId; }

 private:
  std::int64_t m_nodeId;
};

// The serialized ModelProto. Throws std::invalid_argument for an opset out of range and
// OnnxExportError for a node without an ONNX form or a model ONNX's checker refuses.
std::string writeOnnx(const FunctionGraph& graph, const OnnxExportOptions& options = {});
// writeOnnx, then writes the bytes atomically (engine/io/atomic_file.h): on any error nothing is
// written and an existing file is left as it was. I/O errors throw std::runtime_error naming the
// path.
void saveOnnx(const FunctionGraph& graph, const std::filesystem::path& path,
              const OnnxExportOptions& options = {});

}  // namespace tscope::engine::io
