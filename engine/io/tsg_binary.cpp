// The binary parts of a version-2 .tsg file: header, file bytes (mmap or copy), tensor section.

#include "engine/io/tsg_binary.h"

#include "engine/io/json_cursor.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <span>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tscope::engine::io {

using nlohmann::json;

namespace {

constexpr std::int64_t kMaxOffset = (std::int64_t{1} << 53) - 1;

std::uint32_t readU32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);  // little-endian: the writer's static_assert
  return v;
}

std::uint64_t readU64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void putU32(std::string& out, std::uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void putU64(std::string& out, std::uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string hexBytes(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

long pageSize() {
  static const long size = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  return size;
}

}  // namespace

bool looksLikeBinaryTsg(std::string_view bytes) {
  return !bytes.empty() && bytes[0] == kTsgMagic[0];
}

TsgHeader parseTsgHeader(std::string_view file, const std::string& source) {
  auto fail = [&](const std::string& message) { throw TsgError(source, "/header", message); };
  const std::string_view magic(kTsgMagic, sizeof kTsgMagic);
  if (file.size() < magic.size() || file.substr(0, magic.size()) != magic)
    fail("expected the magic bytes " + hexBytes(magic) + " of a version-2 .tsg file, found " +
         hexBytes(file.substr(0, magic.size())));
  if (file.size() < kTsgHeaderSize)
    fail("expected a header of " + std::to_string(kTsgHeaderSize) +
         " bytes, found a file of only " + std::to_string(file.size()) + " bytes (truncated)");
  TsgHeader h;
  h.version = readU32(file.data() + 8);
  if (h.version != 2)
    fail("expected format version 2 in the header, found " + std::to_string(h.version) +
         (h.version > 2 ? " (a newer Tensorscope wrote it)" : ""));
  if (std::uint32_t reserved = readU32(file.data() + 12); reserved != 0)
    fail("expected 0 in the header's reserved field, found " + std::to_string(reserved));
  h.jsonLength = readU64(file.data() + 16);
  h.sectionLength = readU64(file.data() + 24);
  const std::uint64_t size = file.size();
  if (h.jsonLength > size - kTsgHeaderSize)
    fail("the JSON document's length (" + std::to_string(h.jsonLength) +
         " bytes) runs past the end of the file (" + std::to_string(size) + " bytes)");
  h.sectionOffset = alignTsg(kTsgHeaderSize + h.jsonLength);
  if (h.sectionLength % kTsgAlignment != 0)
    fail("expected a tensor section length that is a multiple of " + std::to_string(kTsgAlignment) +
         ", found " + std::to_string(h.sectionLength));
  if (h.sectionLength > kMaxOffset || h.sectionOffset + h.sectionLength != size)
    fail("expected the file to end with the tensor section of " + std::to_string(h.sectionLength) +
         " bytes at byte " + std::to_string(h.sectionOffset) + " (" +
         std::to_string(h.sectionOffset + h.sectionLength) + " bytes), found " +
         std::to_string(size) + " bytes" +
         (h.sectionOffset + h.sectionLength > size ? " (truncated)" : " (trailing bytes)"));
  for (std::uint64_t i = kTsgHeaderSize + h.jsonLength; i < h.sectionOffset; ++i)
    if (file[i] != '\0')
      fail("expected zero padding between the JSON document and the tensor section, found byte " +
           std::to_string(static_cast<unsigned char>(file[i])) + " at " + std::to_string(i));
  return h;
}

std::string assembleTsg(std::string_view jsonText, std::string_view section) {
  std::string out(kTsgMagic, sizeof kTsgMagic);
  putU32(out, 2);
  putU32(out, 0);
  putU64(out, jsonText.size());
  putU64(out, section.size());
  out.reserve(alignTsg(out.size() + jsonText.size()) + section.size());
  out += jsonText;
  out.resize(alignTsg(out.size()), '\0');
  out += section;
  return out;
}

// ---- TsgBytes

std::shared_ptr<TsgBytes> TsgBytes::copy(std::string_view bytes) {
  std::shared_ptr<TsgBytes> b(new TsgBytes());
  const std::size_t padded = alignTsg(bytes.size()) + kTsgAlignment;
  b->m_data = static_cast<std::byte*>(std::aligned_alloc(kTsgAlignment, padded));
  if (!b->m_data) throw std::bad_alloc();
  if (!bytes.empty()) std::memcpy(b->m_data, bytes.data(), bytes.size());
  std::memset(b->m_data + bytes.size(), 0, padded - bytes.size());
  b->m_size = bytes.size();
  return b;
}

std::shared_ptr<TsgBytes> TsgBytes::map(const std::filesystem::path& path) {
  const std::string name = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw TsgError(name, "/",
                   std::string("cannot open the file for reading (") + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      std::shared_ptr<TsgBytes> b(new TsgBytes());
      b->m_data = static_cast<std::byte*>(p);
      b->m_size = size;
      b->m_mapLength = size;
      b->m_mapped = true;
      b->m_fd = fd;
      return b;
    }
  }
  // Note [Reading fallback]: a pipe, a special file or a failed map is read into a copy.
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw TsgError(name, "/",
                     std::string("reading the file failed (") + std::strerror(err) + ")");
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return copy(bytes);
}

TsgBytes::~TsgBytes() {
  if (m_mapped)
    ::munmap(m_data, m_mapLength);
  else
    std::free(m_data);
  if (m_fd >= 0) ::close(m_fd);
}

void TsgBytes::closeFile() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

std::shared_ptr<Storage> TsgBytes::privateStorage(std::uint64_t offset,
                                                  std::uint64_t length) const {
  if (!m_mapped || m_fd < 0 || length == 0) return nullptr;
  const auto page = static_cast<std::uint64_t>(pageSize());
  const std::uint64_t start = offset / page * page;
  // Readable up to the length rounded up to 64 (the section is padded); the map ends in the file.
  const std::uint64_t end = std::min<std::uint64_t>(offset + alignTsg(length), m_size);
  const std::size_t mapLength = end - start;
  void* p = ::mmap(nullptr, mapLength, PROT_READ | PROT_WRITE, MAP_PRIVATE, m_fd,
                   static_cast<off_t>(start));
  if (p == MAP_FAILED) return nullptr;
  std::shared_ptr<void> owner(p, [mapLength](void* q) { ::munmap(q, mapLength); });
  return std::make_shared<Storage>(static_cast<std::byte*>(p) + (offset - start), length,
                                   std::move(owner), Storage::External{});
}

// ---- TensorSectionWriter

json TensorSectionWriter::add(const Tensor& t) {
  std::vector<std::byte> copy;
  std::span<const std::byte> bytes;
  if (t.isContiguous() && t.device() == Device::Cpu) {
    bytes = {static_cast<const std::byte*>(t.rawData()), t.nbytes()};
  } else {
    copy = t.toBytes();
    bytes = copy;
  }
  json out = {{"dtype", dtypeName(t.dtype())}, {"shape", t.shape()}};
  const std::string_view view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (bytes.empty()) {
    out["offset"] = 0;
    out["length"] = 0;
    return out;
  }
  // Note [Stored once]: equal bytes share one range whatever the dtype and shape that read them;
  // the hash finds candidates, the byte compare makes sharing exact.
  const std::uint64_t hash = std::hash<std::string_view>{}(view);
  auto [begin, end] = m_byHash.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    const auto [offset, length] = it->second;
    if (length == bytes.size() && std::memcmp(m_bytes.data() + offset, view.data(), length) == 0) {
      out["offset"] = offset;
      out["length"] = length;
      return out;
    }
  }
  const std::uint64_t offset = m_bytes.size();
  m_bytes += view;
  m_bytes.resize(alignTsg(m_bytes.size()), '\0');
  m_byHash.emplace(hash, std::make_pair(offset, std::uint64_t{bytes.size()}));
  out["offset"] = offset;
  out["length"] = bytes.size();
  return out;
}

// ---- TensorSectionReader

TensorSectionReader::TensorSectionReader(std::shared_ptr<TsgBytes> bytes, const TsgHeader& header)
    : m_bytes(std::move(bytes)),
      m_section(m_bytes->data() + header.sectionOffset),
      m_sectionOffset(header.sectionOffset),
      m_sectionLength(header.sectionLength) {}

Tensor TensorSectionReader::read(const JsonCursor& c, DType dtype, Shape shape, std::int64_t numel,
                                 Use use, int graph, const std::string& what) {
  JsonCursor offsetCursor = c.at("offset");
  JsonCursor lengthCursor = c.at("length");
  const auto offset = static_cast<std::uint64_t>(offsetCursor.integer(0, kMaxOffset));
  const auto length = static_cast<std::uint64_t>(lengthCursor.integer(0, kMaxOffset));
  const std::uint64_t expected = static_cast<std::uint64_t>(numel) * dtypeSize(dtype);
  if (length != expected)
    lengthCursor.fail(what + ": expected " + std::to_string(expected) + " bytes for " +
                      std::string(dtypeName(dtype)) + " " + shapeToString(shape) + ", found " +
                      std::to_string(length));
  if (offset % kTsgAlignment != 0)
    offsetCursor.fail(what + ": expected an offset that is a multiple of " +
                      std::to_string(kTsgAlignment) + ", found " + std::to_string(offset));
  if (offset > m_sectionLength || length > m_sectionLength - offset)
    offsetCursor.fail(what + ": the bytes [" + std::to_string(offset) + ", " +
                      std::to_string(offset + length) + ") lie outside the tensor section of " +
                      std::to_string(m_sectionLength) +
                      " bytes (the file is truncated or the offset is wrong)");
  if (length == 0) return Tensor(dtype, std::move(shape));
  // Note [Overlap]: ranges are either the same range (a shared tensor) or disjoint.
  auto next = m_ranges.lower_bound(offset);
  if (next != m_ranges.end() && next->first == offset) {
    if (next->second.length != length)
      offsetCursor.fail(what + ": the bytes [" + std::to_string(offset) + ", " +
                        std::to_string(offset + length) + ") overlap another tensor's [" +
                        std::to_string(offset) + ", " +
                        std::to_string(offset + next->second.length) +
                        "); expected the same range or a disjoint one");
  } else {
    if (next != m_ranges.end() && next->first < offset + length)
      offsetCursor.fail(what + ": the bytes [" + std::to_string(offset) + ", " +
                        std::to_string(offset + length) + ") overlap another tensor's [" +
                        std::to_string(next->first) + ", " +
                        std::to_string(next->first + next->second.length) + ")");
    if (next != m_ranges.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second.length > offset)
        offsetCursor.fail(what + ": the bytes [" + std::to_string(offset) + ", " +
                          std::to_string(offset + length) + ") overlap another tensor's [" +
                          std::to_string(prev->first) + ", " +
                          std::to_string(prev->first + prev->second.length) + ")");
    }
    next = m_ranges.emplace_hint(next, offset, Range{length});
  }
  Range& range = next->second;
  ++range.references;
  range.graphs |= 1u << graph;
  ++m_references;
  m_referencedBytes += length;
  std::byte* data = m_section + offset;
  if (dtype == DType::Bool)  // Note [Bool bytes]: the only tensors read at load (few and small)
    for (std::uint64_t i = 0; i < length; ++i)
      if (std::to_integer<unsigned>(data[i]) > 1)
        offsetCursor.fail(what + ": expected bool data bytes 0 or 1, found " +
                          std::to_string(std::to_integer<unsigned>(data[i])) + " at byte " +
                          std::to_string(i));
  std::shared_ptr<Storage> storage;
  if (use == Use::Shared) {
    // Note [Private shared values]: a shared variable may be updated in place, and the file stores
    // equal bytes once, so each shared value gets a map of its own; without one the caller copies.
    storage = m_bytes->privateStorage(m_sectionOffset + offset, length);
    if (!storage) return Tensor::fromBytes(dtype, std::move(shape), std::span(data, length));
  } else {
    storage = std::make_shared<Storage>(data, length, m_bytes, Storage::External{});
  }
  Strides strides = contiguousStrides(shape);
  return Tensor(std::move(storage), dtype, std::move(shape), std::move(strides), 0);
}

TsgTensorStats TensorSectionReader::stats() const {
  TsgTensorStats s;
  s.version = 2;
  for (const auto& [offset, range] : m_ranges) {
    ++s.tensors;
    s.tensorBytes += range.length;
    if (range.references > 1) ++s.sharedTensors;
    if (range.graphs == 3) ++s.sharedBetweenGraphs;
  }
  s.references = m_references;
  s.sharedBytes = m_referencedBytes - s.tensorBytes;
  return s;
}

}  // namespace tscope::engine::io
