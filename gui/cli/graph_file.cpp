#include "gui/cli/graph_file.h"

#include <stdexcept>

namespace tscope::gui {

engine::io::TsgDocument openGraphFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw std::runtime_error(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(path.string() + ": is a directory, expected a graph file");
  std::string ext = path.extension().string();
  if (ext == ".tsg") return engine::io::loadTsg(path);
  throw std::runtime_error(path.string() + ": expected a .tsg file, found the extension '" + ext +
                           "' (this build reads .tsg graphs)");
}

}  // namespace tscope::gui
