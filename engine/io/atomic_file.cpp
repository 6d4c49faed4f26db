#include "engine/io/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>
#include <unistd.h>

namespace tscope::engine::io {

std::optional<std::string> writeFileAtomically(const std::filesystem::path& path,
                                               std::span<const std::byte> bytes) {
  // Process id and a counter: concurrent saves of one path never share a temporary file.
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::error_code ignored;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      return "opening the temporary file " + tmp.string() + " failed (" + std::strerror(errno) +
             ")";
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ignored);
      return "writing " + tmp.string() + " failed (disk full?)";
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ignored);
    return "replacing the file failed: " + ec.message();
  }
  return std::nullopt;
}

}  // namespace tscope::engine::io
