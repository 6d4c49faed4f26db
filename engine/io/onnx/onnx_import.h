#pragma once
// Reading ONNX models (opsets 6 to 18) into a Tensorscope document. The public side has no
// protobuf type; the converters of ONNX nodes live behind onnx_convert.h.
//
// Note [ONNX import]: the model is parsed, checked with ONNX's checker and annotated by ONNX's
// shape inference (both skipped with a warning for opsets newer than the library knows), then its
// nodes are converted in topological order, one Tensorscope node per ONNX node where a direct op
// exists (compositions otherwise, e.g. Gelu, LayerNormalization, LSTM). Graph inputs keep their
// names and shapes (symbolic dims become unknown dims); float initializers become shared
// variables (the model's parameters), other initializers constants; node names such as PyTorch's
// "/layer1/layer1.0/conv1/Conv" become scope paths ("layer1/layer1.0/conv1") and each node's
// creation site names the file and the node. A node with no converter loads as an OpaqueOp that
// carries the ONNX attributes and the types ONNX's shape inference gave, so the graph still opens;
// running it fails naming the op and the node.
#include "engine/io/tsg.h"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::io {

// A model the importer refuses. what(): "<source>: <where>: <message>", where `where` locates the
// problem in the model ("graph.node[12] '/conv1/Conv' (Conv)", "graph.initializer 'fc.weight'").
class OnnxError : public std::runtime_error {
 public:
  OnnxError(std::string source, std::string where, std::string message);
  const std::string& source() const { return m_source; }
  const std::string& where() const { return m_where; }
  const std::string& message() const { return m_message; }

 private:
  std::string m_source, m_where, m_message;
};

struct OnnxImportOptions {
  bool runChecker = true;   // onnx::checker::check_model
  bool inferShapes = true;  // onnx::shape_inference::InferShapes (types of opaque nodes, checks)
  bool allowOpaque = true;  // false: an unsupported op is an error instead of an OpaqueOp
  // A node whose converter needs as a constant a value the model computes (Unsqueeze's axes,
  // TopK's k) is converted when it runs (Note [Run-time ONNX values] in onnx_runtime_node.h);
  // false: such a node is an error, as before.
  bool deferRuntimeValues = true;
};

struct OnnxImportResult {
  TsgDocument document;  // document.original is the model's graph
  std::vector<std::string>
      warnings;   // checker/shape-inference problems that did not stop the import
  int opset = 0;  // the default domain's opset version
  std::vector<std::string> opaqueOps;  // distinct op types loaded as OpaqueOps
};

// The lowest and highest default-domain opset the importer accepts.
inline constexpr int kOnnxMinOpset = 6;
inline constexpr int kOnnxMaxOpset = 18;

// Parses serialized ModelProto bytes; `source` names the model in errors.
OnnxImportResult readOnnx(std::string_view bytes, std::string_view source = "<memory>",
                          const OnnxImportOptions& options = {});
// Reads a .onnx file (external data files are resolved next to it).
OnnxImportResult loadOnnx(const std::filesystem::path& path, const OnnxImportOptions& options = {});

// True when the bytes start like a serialized ModelProto rather than JSON (used to sniff files).
bool looksLikeOnnx(std::string_view bytes);

}  // namespace tscope::engine::io
