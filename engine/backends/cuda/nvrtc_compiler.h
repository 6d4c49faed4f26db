#pragma once
// NVRTC: CUDA C++ source to PTX or CUBIN for a given architecture, no device needed, and the
// cache of compiled images in memory and on disk (DESIGN.md "Backends").
//
//   KernelCache cache(KernelCache::defaultDirectory());
//   auto image = cache.get(source, 90, /*cubin=*/true);   // compiles once, then memory or disk
//
// Note [Kernel cache]: the key is a 64-bit FNV-1a hash of (source, architecture, image kind,
// NVRTC version), as hex; an entry is <dir>/<key>.cubin (or .ptx): a header line with the
// format, the full key text's hash and the image size, the image, and a trailing checksum of the
// image. An entry whose header, size or checksum does not match is corrupt: it is compiled again
// and rewritten. Every write goes to a temporary file in the same folder, then rename(), so a
// reader (another process) sees the old entry, no entry or the whole new one. The folder is
// $TSCOPE_CACHE_DIR/cuda, else $XDG_CACHE_HOME/tensorscope/cuda, else ~/.cache/tensorscope/cuda;
// an empty directory keeps the cache in memory only.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tscope::engine::cuda {

struct CompiledImage {
  int arch = 0;       // 90 for sm_90
  bool cubin = true;  // else PTX (text, NUL-terminated)
  std::vector<char> bytes;
  std::string log;  // NVRTC's log (warnings)
};

// "13.0".
std::string nvrtcVersion();
// The architectures NVRTC can compile for, ascending (75, 80, ..., 120).
std::vector<int> nvrtcArchitectures();

// The CUDA toolkit's include folder, where NVRTC finds cuda_fp16.h for sources that include it:
// $TSCOPE_CUDA_INCLUDE_DIR, else the folder CMake found at configure time, else $CUDA_HOME/include,
// $CUDA_PATH/include or /usr/local/cuda/include when it holds cuda_fp16.h; empty when none does
// (a float16 kernel then fails with NVRTC's "could not open source file").
std::filesystem::path cudaIncludeDirectory();

// Compiles source (name is the program's file name in messages). Throws CudaError naming the
// call, with NVRTC's log and the numbered source lines it points at when compilation fails.
CompiledImage compileCuda(const std::string& source, const std::string& name, int arch, bool cubin);

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t seed = 1469598103934665603ull);

class KernelCache {
 public:
  struct Stats {
    std::int64_t memoryHits = 0;
    std::int64_t diskHits = 0;
    std::int64_t compiles = 0;
    std::int64_t corrupt = 0;  // disk entries found corrupt and rebuilt
  };

  explicit KernelCache(std::filesystem::path directory);
  static std::filesystem::path defaultDirectory();

  std::shared_ptr<const CompiledImage> get(const std::string& source, int arch, bool cubin);
  // The hex key and the entry's path for these arguments.
  std::string key(const std::string& source, int arch, bool cubin) const;
  std::filesystem::path entryPath(const std::string& source, int arch, bool cubin) const;
  Stats stats() const;
  const std::filesystem::path& directory() const { return m_directory; }

 private:
  std::shared_ptr<const CompiledImage> readEntry(const std::filesystem::path& path, int arch,
                                                 bool cubin, const std::string& key);
  void writeEntry(const std::filesystem::path& path, const CompiledImage& image,
                  const std::string& key);

  std::filesystem::path m_directory;
  mutable std::mutex m_mutex;
  std::unordered_map<std::string, std::shared_ptr<const CompiledImage>> m_memory;
  Stats m_stats;
};

}  // namespace tscope::engine::cuda
