#pragma once
// Opening the graph files the CLI and the window accept: .tsg documents and ONNX models.

#include "engine/io/tsg.h"

#include <filesystem>
#include <string>
#include <vector>

namespace tscope::gui {

struct GraphFileInfo {
  std::string format;                  // "tsg" or "onnx"
  int onnxOpset = 0;                   // the model's default-domain opset (ONNX only)
  std::vector<std::string> warnings;   // problems that did not stop loading (ONNX checker, ...)
  std::vector<std::string> opaqueOps;  // ONNX op types loaded as opaque nodes
};

// .tsg files load with engine::io::loadTsg, .onnx files with engine::io::loadOnnx; a file with
// another extension is sniffed (JSON -> .tsg, protobuf -> ONNX). Throws std::runtime_error
// (TsgError, OnnxError) with a message naming the file; `info` (optional) receives the format,
// warnings and opaque ops.
engine::io::TsgDocument openGraphFile(const std::filesystem::path& path, GraphFileInfo* info = nullptr);

}  // namespace tscope::gui
