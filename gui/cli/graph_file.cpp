#include "gui/cli/graph_file.h"

#ifdef TSCOPE_HAVE_ONNX
#include "engine/io/onnx/onnx_import.h"
#endif

#include <fstream>
#include <stdexcept>

namespace tscope::gui {

namespace {

engine::io::TsgDocument openOnnx(const std::filesystem::path& path, GraphFileInfo* info) {
#ifdef TSCOPE_HAVE_ONNX
  engine::io::OnnxImportResult result = engine::io::loadOnnx(path);
  if (info) {
    info->format = "onnx";
    info->onnxOpset = result.opset;
    info->warnings = std::move(result.warnings);
    info->opaqueOps = std::move(result.opaqueOps);
  }
  return std::move(result.document);
#else
  (void)info;
  throw std::runtime_error(path.string() + ": this build of Tensorscope has no ONNX support "
                           "(configure with libonnx-dev and libprotobuf-dev installed)");
#endif
}

// The first non-blank byte: '{' for JSON, anything else is taken for a protobuf.
bool startsLikeJson(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c))
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return c == '{';
  return false;
}

}  // namespace

engine::io::TsgDocument openGraphFile(const std::filesystem::path& path, GraphFileInfo* info) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw std::runtime_error(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(path.string() + ": is a directory, expected a graph file (.tsg or .onnx)");
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".onnx") return openOnnx(path, info);
  if (ext == ".tsg" || startsLikeJson(path)) {
    if (info) info->format = "tsg";
    return engine::io::loadTsg(path);
  }
  if (ext.empty() || ext == ".pb" || ext == ".model") return openOnnx(path, info);
  throw std::runtime_error(path.string() + ": expected a .tsg or .onnx file, found the extension '" + ext + "'");
}

}  // namespace tscope::gui
