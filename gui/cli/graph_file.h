#pragma once
// Opening the graph files the CLI and the window accept, by extension.

#include "engine/io/tsg.h"

#include <filesystem>

namespace tscope::gui {

// .tsg files load with engine::io::loadTsg. Throws std::runtime_error (TsgError for a bad .tsg)
// with a message naming the file.
engine::io::TsgDocument openGraphFile(const std::filesystem::path& path);

}  // namespace tscope::gui
