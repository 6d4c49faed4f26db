#pragma once
// Opening a document of any supported format: .tsg documents and ONNX models (what the CLI and
// the window open). The ONNX part is compiled in when tscope_onnx exists (TSCOPE_HAVE_ONNX).

#include "engine/io/tsg.h"

#include <filesystem>
#include <string>
#include <vector>

namespace tscope::engine::session {

struct GraphFileInfo {
  std::string format;                  // "tsg" or "onnx"
  int onnxOpset = 0;                   // the model's default-domain opset (ONNX only)
  std::vector<std::string> warnings;   // problems that did not stop loading (ONNX checker, ...)
  std::vector<std::string> opaqueOps;  // ONNX op types loaded as opaque nodes
  io::TsgTensorStats tensors;          // .tsg only: the file's tensor bytes and sharing
};

// .tsg files load with io::loadTsg, .onnx files with io::loadOnnx; a file with
// another extension is sniffed (the version-2 magic or JSON -> .tsg, protobuf -> ONNX). Throws
// std::runtime_error (TsgError, OnnxError) with a message naming the file; `info` (optional)
// receives the format, warnings and opaque ops.
io::TsgDocument openGraphFile(const std::filesystem::path& path, GraphFileInfo* info = nullptr);

}  // namespace tscope::engine::session
