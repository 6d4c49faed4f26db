#pragma once
// Writing a file so that readers see the old content or the new, never half of it: the bytes go to
// a temporary file next to the target, which is then renamed over it.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace tscope::engine::io {

// nullopt when the file was written; else why not ("opening the temporary file ... failed (...)"),
// for the caller to put in its own error. A failure leaves the target untouched and no temporary.
std::optional<std::string> writeFileAtomically(const std::filesystem::path& path,
                                               std::span<const std::byte> bytes);

}  // namespace tscope::engine::io
