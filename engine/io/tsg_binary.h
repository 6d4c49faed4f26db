#pragma once
// The binary parts of a version-2 .tsg file (docs/tsg-format.md, "Version 2"): the fixed header,
// the bytes of a file (memory-mapped, or a copy), the tensor section's writer (each distinct
// tensor stored once) and its reader (every descriptor checked, tensors made over the file's
// bytes without reading them). Used by tsg_reader.cpp and tsg_writer.cpp.
//
//   TensorSectionWriter section;
//   json ref = section.add(tensor);            // {"dtype", "shape", "offset", "length"}
//   std::string file = assembleTsg(jsonText, section.bytes());
//
//   auto bytes = TsgBytes::map(path);           // or TsgBytes::copy(text)
//   TsgHeader h = parseTsgHeader(bytes->view(), source);

#include "engine/io/tsg.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tscope::engine::io {

class JsonCursor;

inline constexpr std::size_t kTsgAlignment = 64;
inline constexpr std::size_t kTsgHeaderSize = 32;
// 0x89 "TSG" CR LF 0x1a LF: not text (0x89), and CR LF / LF / 0x1a show a text-mode transfer.
inline constexpr char kTsgMagic[8] = {'\x89', 'T', 'S', 'G', '\r', '\n', '\x1a', '\n'};

inline std::uint64_t alignTsg(std::uint64_t n) {
  return (n + kTsgAlignment - 1) / kTsgAlignment * kTsgAlignment;
}

// True when `bytes` starts like a version-2 file (its first byte is the magic's 0x89).
bool looksLikeBinaryTsg(std::string_view bytes);

struct TsgHeader {
  std::uint32_t version = 0;
  std::uint64_t jsonOffset = kTsgHeaderSize, jsonLength = 0;
  std::uint64_t sectionOffset = 0, sectionLength = 0;  // from the start of the file
};

// Checks the header against the file's size; throws TsgError (path "/header") on bad magic, an
// unknown version, a JSON length past the end, a section that does not end the file exactly, ...
TsgHeader parseTsgHeader(std::string_view file, const std::string& source);

// The header + JSON + zero padding + tensor section.
std::string assembleTsg(std::string_view jsonText, std::string_view section);

// The bytes of a file being read: a private memory map (MAP_PRIVATE, PROT_READ|PROT_WRITE, so an
// update in place gets copy-on-write pages and never reaches the file), or an owned copy aligned to
// 64 and zero-padded to a multiple of 64.
class TsgBytes {
 public:
  // Maps `path`; falls back to reading it when it cannot be mapped (a pipe, an empty file). Throws
  // TsgError naming the file when it cannot be opened or read.
  static std::shared_ptr<TsgBytes> map(const std::filesystem::path& path);
  static std::shared_ptr<TsgBytes> copy(std::string_view bytes);
  ~TsgBytes();
  TsgBytes(const TsgBytes&) = delete;
  TsgBytes& operator=(const TsgBytes&) = delete;

  std::byte* data() const { return m_data; }
  std::size_t size() const { return m_size; }
  std::string_view view() const { return {reinterpret_cast<const char*>(m_data), m_size}; }
  bool mapped() const { return m_mapped; }
  // A writable view of [offset, offset + length) of its own: a separate private map of the file's
  // pages (so in-place updates of one shared variable never show in another that holds the same
  // bytes); null when the bytes are not from a mapped file or the map fails.
  std::shared_ptr<Storage> privateStorage(std::uint64_t offset, std::uint64_t length) const;
  // Closes the file (the maps stay valid); privateStorage returns null afterwards.
  void closeFile();

 private:
  TsgBytes() = default;
  std::byte* m_data = nullptr;
  std::size_t m_size = 0;
  std::size_t m_mapLength = 0;
  bool m_mapped = false;
  int m_fd = -1;
};

// Writes each distinct tensor once: equal bytes (a hash, then a byte compare) share one range.
class TensorSectionWriter {
 public:
  // The tensor's descriptor {"dtype", "shape", "offset", "length"}; its logical (contiguous,
  // little-endian) bytes are appended unless equal bytes are already stored.
  nlohmann::json add(const Tensor& t);
  const std::string& bytes() const { return m_bytes; }

 private:
  std::unordered_multimap<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> m_byHash;
  std::string m_bytes;
};

// Reads descriptors against one tensor section and counts what is shared.
class TensorSectionReader {
 public:
  TensorSectionReader(std::shared_ptr<TsgBytes> bytes, const TsgHeader& header);

  enum class Use { Constant, Shared, TestValue };
  // Checks the descriptor at `c` (dtype, shape, offset, length, alignment, bounds, overlap) and
  // returns a tensor over the file's bytes (not read); `graph` is 0 for the original, 1 for the
  // optimized graph. For Use::Shared the tensor is a private view (its own map), or a copy when
  // no map could be made.
  Tensor read(const JsonCursor& c, DType dtype, Shape shape, std::int64_t numel, Use use, int graph,
              const std::string& what);
  TsgTensorStats stats() const;

 private:
  struct Range {
    std::uint64_t length;
    std::uint64_t references = 0;
    unsigned graphs = 0;  // bit 0: original, bit 1: optimized
  };
  std::shared_ptr<TsgBytes> m_bytes;
  std::byte* m_section;
  std::uint64_t m_sectionOffset, m_sectionLength;
  std::map<std::uint64_t, Range> m_ranges;  // by offset; empty tensors are not recorded
  std::uint64_t m_referencedBytes = 0;
  std::uint64_t m_references = 0;
};

}  // namespace tscope::engine::io
