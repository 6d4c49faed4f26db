#pragma once
// The .tsg file: one JSON document holding the original and the optimized graph, the rewrite log
// and profiles (schema: docs/tsg-format.md). Loading checks everything and either returns a whole
// document or throws TsgError naming the file, the JSON path and what was expected; saving writes
// a temporary file next to the target and renames it over the target.

#include "engine/graph/function_graph.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/ops/register_ops.h"

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::io {

inline constexpr std::string_view kTsgFormat = "tensorscope-graph";
inline constexpr int kTsgVersion = 1;

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

struct TsgDocument {
  std::unique_ptr<FunctionGraph> original;   // always present in a loaded document
  std::unique_ptr<FunctionGraph> optimized;  // null when the file has none
  std::vector<RewriteRecord> rewrites;
  nlohmann::json profiles =
      nlohmann::json::array();  // kept as written until the profiler reads them
  nlohmann::json producer = nlohmann::json::object();  // {"name": ..., "version": ...}
};

// Serialises to the text of a .tsg file.
std::string writeTsg(const TsgDocument& doc);
// Writes atomically (temporary file + rename); throws std::runtime_error naming the path on I/O
// errors.
void saveTsg(const TsgDocument& doc, const std::filesystem::path& path);

// Parses a .tsg text; `source` names it in errors. Ops the registry lacks load as OpaqueOps.
TsgDocument readTsg(std::string_view text, std::string_view source = "<memory>",
                    const OpRegistry& registry = defaultOpRegistry());
TsgDocument loadTsg(const std::filesystem::path& path,
                    const OpRegistry& registry = defaultOpRegistry());

// Tensors as {"dtype", "shape", "data": little-endian base64}.
nlohmann::json tensorToJson(const Tensor& t);

}  // namespace tscope::engine::io
