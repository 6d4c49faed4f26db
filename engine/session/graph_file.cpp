#include "engine/session/graph_file.h"

#ifdef TSCOPE_HAVE_ONNX
#include "engine/io/onnx/onnx_import.h"
#endif

#include <fstream>
#include <stdexcept>

namespace tscope::engine::session {

namespace {

io::TsgDocument openOnnx(const std::filesystem::path& path, GraphFileInfo* info) {
#ifdef TSCOPE_HAVE_ONNX
  io::OnnxImportResult result = io::loadOnnx(path);
  if (info) {
    info->format = "onnx";
    info->onnxOpset = result.opset;
    info->warnings = std::move(result.warnings);
    info->opaqueOps = std::move(result.opaqueOps);
  }
  return std::move(result.document);
#else
  (void)info;
  throw std::runtime_error(path.string() +
                           ": this build of Tensorscope has no ONNX support "
                           "(configure with libonnx-dev and libprotobuf-dev installed)");
#endif
}

// The first bytes of the file, to tell a .tsg (the version-2 magic, or JSON) from an ONNX model
// (protobuf).
std::string head(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(64, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

bool startsLikeTsg(std::string_view bytes) {
  if (bytes.size() >= 4 && bytes.substr(0, 4) == "\x89TSG") return true;  // version 2
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && bytes[first] == '{';
}

}  // namespace

io::TsgDocument openGraphFile(const std::filesystem::path& path, GraphFileInfo* info) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw std::runtime_error(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(path.string() +
                             ": is a directory, expected a graph file (.tsg or .onnx)");
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".onnx") return openOnnx(path, info);
  const std::string start = ext == ".tsg" ? std::string() : head(path);
  if (ext == ".tsg" || startsLikeTsg(start)) {
    io::TsgDocument doc = io::loadTsg(path);
    if (info) {
      info->format = "tsg";
      info->tensors = doc.tensorStats;
    }
    return doc;
  }
#ifdef TSCOPE_HAVE_ONNX
  if (io::looksLikeOnnx(start)) return openOnnx(path, info);
#endif
  throw std::runtime_error(path.string() +
                           ": expected a .tsg or .onnx file, found the extension '" + ext +
                           "' and contents that are neither JSON nor an ONNX model");
}

}  // namespace tscope::engine::session
