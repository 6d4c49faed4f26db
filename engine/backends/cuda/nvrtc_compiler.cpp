#include "engine/backends/cuda/nvrtc_compiler.h"

#include "engine/backends/cuda/cuda_error.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <nvrtc.h>
#include <sstream>
#include <unistd.h>
#include <vector>

namespace tscope::engine::cuda {

namespace {
constexpr const char* kMagic = "TSCOPE-NVRTC-1";

std::string hex(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

// The source lines around those NVRTC's log names ("name(12): error: ..."), numbered.
std::string quoteLines(const std::string& source, const std::string& name, const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  const std::string needle = name + "(";
  for (std::size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) {
    const std::size_t n = std::strtoul(log.c_str() + at + needle.size(), nullptr, 10);
    if (n >= 1 && n <= lines.size()) out += "\n  " + std::to_string(n) + " | " + lines[n - 1];
  }
  return out;
}
}  // namespace

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = seed;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  TSCOPE_NVRTC_CHECK(::nvrtcVersion(&major, &minor));
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtcArchitectures() {
  int n = 0;
  TSCOPE_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&n));
  std::vector<int> archs(static_cast<std::size_t>(n));
  if (n > 0) TSCOPE_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  return archs;
}

std::filesystem::path cudaIncludeDirectory() {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto has = [&](const fs::path& dir) {
    return !dir.empty() && fs::exists(dir / "cuda_fp16.h", ec);
  };
  if (const char* d = std::getenv("TSCOPE_CUDA_INCLUDE_DIR"); d && *d) return d;
#ifdef TSCOPE_CUDA_INCLUDE_DIR
  if (has(TSCOPE_CUDA_INCLUDE_DIR)) return TSCOPE_CUDA_INCLUDE_DIR;
#endif
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* d = std::getenv(var); d && *d && has(fs::path(d) / "include"))
      return fs::path(d) / "include";
  if (has("/usr/local/cuda/include")) return "/usr/local/cuda/include";
  return {};
}

CompiledImage compileCuda(const std::string& source, const std::string& name, int arch,
                          bool cubin) {
  nvrtcProgram program = nullptr;
  TSCOPE_NVRTC_CHECK(
      nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr));
  struct Destroy {
    nvrtcProgram* p;
    ~Destroy() { nvrtcDestroyProgram(p); }
  } destroy{&program};
  // sm_XX makes SASS (a CUBIN); compute_XX makes PTX the driver compiles for newer devices.
  const std::string archOption =
      std::string("--gpu-architecture=") + (cubin ? "sm_" : "compute_") + std::to_string(arch);
  std::vector<const char*> options = {archOption.c_str(), "--std=c++17", "-default-device"};
  // Note [Half registers]: cuda_fp16.h comes from the toolkit's include folder.
  const std::string includeOption = "-I" + cudaIncludeDirectory().string();
  if (source.find("#include <cuda_") != std::string::npos && includeOption.size() > 2)
    options.push_back(includeOption.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  CompiledImage image;
  image.arch = arch;
  image.cubin = cubin;
  std::size_t logSize = 0;
  TSCOPE_NVRTC_CHECK(nvrtcGetProgramLogSize(program, &logSize));
  if (logSize > 1) {
    image.log.resize(logSize);
    TSCOPE_NVRTC_CHECK(nvrtcGetProgramLog(program, image.log.data()));
    image.log.resize(logSize - 1);
  }
  if (compiled != NVRTC_SUCCESS)
    throw CudaError(errorMessage("nvrtcCompileProgram(" + name + ", " + archOption + ")",
                                 nvrtcGetErrorString(compiled), "", static_cast<int>(compiled),
                                 NodeScope::current()) +
                        "\n" + image.log + quoteLines(source, name, image.log),
                    "NVRTC", static_cast<int>(compiled));
  std::size_t size = 0;
  if (cubin) {
    TSCOPE_NVRTC_CHECK(nvrtcGetCUBINSize(program, &size));
    image.bytes.resize(size);
    TSCOPE_NVRTC_CHECK(nvrtcGetCUBIN(program, image.bytes.data()));
  } else {
    TSCOPE_NVRTC_CHECK(nvrtcGetPTXSize(program, &size));
    image.bytes.resize(size);
    TSCOPE_NVRTC_CHECK(nvrtcGetPTX(program, image.bytes.data()));
  }
  return image;
}

KernelCache::KernelCache(std::filesystem::path directory) : m_directory(std::move(directory)) {}

std::filesystem::path KernelCache::defaultDirectory() {
  if (const char* d = std::getenv("TSCOPE_CACHE_DIR"); d && *d)
    return std::filesystem::path(d) / "cuda";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "tensorscope" / "cuda";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "tensorscope" / "cuda";
  return {};
}

std::string KernelCache::key(const std::string& source, int arch, bool cubin) const {
  const std::string text = std::to_string(arch) + (cubin ? " cubin " : " ptx ") + nvrtcVersion();
  return hex(fnv1a(source.data(), source.size(), fnv1a(text.data(), text.size())));
}

std::filesystem::path KernelCache::entryPath(const std::string& source, int arch,
                                             bool cubin) const {
  return m_directory / (key(source, arch, cubin) + (cubin ? ".cubin" : ".ptx"));
}

std::shared_ptr<const CompiledImage> KernelCache::readEntry(const std::filesystem::path& path,
                                                            int arch, bool cubin,
                                                            const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::string magic, entryKey;
  std::size_t size = 0;
  int entryArch = 0;
  in >> magic >> entryKey >> entryArch >> size;
  if (!in || magic != kMagic || entryKey != key || entryArch != arch || in.get() != '\n' ||
      size > (std::size_t(1) << 30)) {
    ++m_stats.corrupt;
    return nullptr;
  }
  auto image = std::make_shared<CompiledImage>();
  image->arch = arch;
  image->cubin = cubin;
  image->bytes.resize(size);
  in.read(image->bytes.data(), static_cast<std::streamsize>(size));
  std::string checksum;
  if (static_cast<std::size_t>(in.gcount()) == size) in >> checksum;
  if (checksum != hex(fnv1a(image->bytes.data(), image->bytes.size()))) {
    ++m_stats.corrupt;
    return nullptr;
  }
  return image;
}

void KernelCache::writeEntry(const std::filesystem::path& path, const CompiledImage& image,
                             const std::string& key) {
  std::error_code ec;
  std::filesystem::create_directories(m_directory, ec);
  if (ec) return;  // a cache that cannot be written is only slower
  static std::atomic<int> counter{0};
  std::filesystem::path temp = path;
  temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << kMagic << ' ' << key << ' ' << image.arch << ' ' << image.bytes.size() << '\n';
    out.write(image.bytes.data(), static_cast<std::streamsize>(image.bytes.size()));
    out << hex(fnv1a(image.bytes.data(), image.bytes.size())) << '\n';
    if (!out) {
      out.close();
      std::filesystem::remove(temp, ec);
      return;
    }
  }
  std::filesystem::rename(temp, path, ec);  // Note [Kernel cache]: atomic on POSIX
  if (ec) std::filesystem::remove(temp, ec);
}

std::shared_ptr<const CompiledImage> KernelCache::get(const std::string& source, int arch,
                                                      bool cubin) {
  const std::string k = key(source, arch, cubin);
  std::lock_guard lock(m_mutex);
  if (auto it = m_memory.find(k); it != m_memory.end()) {
    ++m_stats.memoryHits;
    return it->second;
  }
  std::shared_ptr<const CompiledImage> image;
  const std::filesystem::path path =
      m_directory.empty() ? std::filesystem::path() : entryPath(source, arch, cubin);
  if (!path.empty()) {
    image = readEntry(path, arch, cubin, k);
    if (image) ++m_stats.diskHits;
  }
  if (!image) {
    image =
        std::make_shared<CompiledImage>(compileCuda(source, "tscope_" + k + ".cu", arch, cubin));
    ++m_stats.compiles;
    if (!path.empty()) writeEntry(path, *image, k);
  }
  m_memory.emplace(k, image);
  return image;
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard lock(m_mutex);
  return m_stats;
}

}  // namespace tscope::engine::cuda
