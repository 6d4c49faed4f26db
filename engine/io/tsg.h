#pragma once
// The .tsg file (docs/tsg-format.md): a small binary header, one JSON document holding the
// original and the optimized graph, the rewrite log and profiles, and a binary section with every
// distinct tensor once (version 2; version-1 files, JSON with base64 tensors, still load). Loading
// memory-maps the file and checks everything, then returns a whole document whose tensors are
// read from the map when first used, or throws TsgError naming the file, the JSON path and what
// was expected; saving writes a temporary file next to the target and renames it over the target.
//
//   io::saveTsg(doc, "model.tsg");
//   io::TsgDocument back = io::loadTsg("model.tsg");
//   back.tensorStats.sharedBytes;   // bytes the file saved by storing shared tensors once

#include "engine/graph/function_graph.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/ops/register_ops.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::io {

inline constexpr std::string_view kTsgFormat = "tensorscope-graph";
inline constexpr int kTsgVersion = 2;  // written; 1 and 2 are read

class TsgError : public std::runtime_error {
 public:
  // what(): "<source>: <path>: <message>" (the path is a JSON pointer, "/graphs/original/...").
  TsgError(std::string source, std::string path, std::string message);
  const std::string& source() const { return m_source; }
  const std::string& path() const { return m_path; }
  const std::string& message() const { return m_message; }

 private:
  std::string m_source, m_path, m_message;
};

// What a loaded file holds in tensors (filled by the reader; zero for a document built in memory).
struct TsgTensorStats {
  int version = 0;                        // the file's format version (0: not read from a file)
  std::uint64_t tensors = 0;              // distinct non-empty tensors stored in the file
  std::uint64_t tensorBytes = 0;          // their bytes, each once
  std::uint64_t references = 0;           // values and test values that refer to them
  std::uint64_t sharedBytes = 0;          // bytes saved by sharing: referenced bytes - tensorBytes
  std::uint64_t sharedTensors = 0;        // stored tensors referred to more than once
  std::uint64_t sharedBetweenGraphs = 0;  // stored tensors that both graphs refer to
};
// {"format_version", "tensors", "tensor_bytes", "references", "shared_bytes", "shared_tensors",
//  "shared_between_graphs"}
nlohmann::json tensorStatsToJson(const TsgTensorStats& stats);

struct TsgDocument {
  std::unique_ptr<FunctionGraph> original;   // always present in a loaded document
  std::unique_ptr<FunctionGraph> optimized;  // null when the file has none
  std::vector<RewriteRecord> rewrites;
  nlohmann::json profiles =
      nlohmann::json::array();  // kept as written until the profiler reads them
  nlohmann::json producer = nlohmann::json::object();  // {"name": ..., "version": ...}
  TsgTensorStats tensorStats;                          // set by readTsg / loadTsg
};

// Serialises to the bytes of a version-2 .tsg file (binary: header, JSON, tensor section).
std::string writeTsg(const TsgDocument& doc);
// Writes atomically (temporary file + rename); throws std::runtime_error naming the path on I/O
// errors.
void saveTsg(const TsgDocument& doc, const std::filesystem::path& path);

// Parses the bytes of a .tsg file (version 2, or version-1 JSON text); `source` names it in
// errors. Ops the registry lacks load as OpaqueOps. The document's tensors refer to a copy of the
// bytes that the document owns.
TsgDocument readTsg(std::string_view bytes, std::string_view source = "<memory>",
                    const OpRegistry& registry = defaultOpRegistry());
// Memory-maps the file (reads it when it cannot be mapped, e.g. a pipe); tensors stay in the map
// until first used.
TsgDocument loadTsg(const std::filesystem::path& path,
                    const OpRegistry& registry = defaultOpRegistry());

// The JSON document of a .tsg file's bytes (a version-1 file is all JSON); throws TsgError when
// the header is broken. withTsgJson: the same file with its JSON document replaced (for tools and
// tests that edit the JSON of a version-2 file).
std::string_view tsgJson(std::string_view bytes, std::string_view source = "<memory>");
std::string withTsgJson(std::string_view bytes, std::string_view json);

// Tensors as {"dtype", "shape", "data": little-endian base64} (version 1, and graphs kept in op
// props).
nlohmann::json tensorToJson(const Tensor& t);

}  // namespace tscope::engine::io
