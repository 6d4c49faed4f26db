#include "engine/io/npz.h"

#include "engine/io/atomic_file.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tscope::engine::io {

namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50,
                        kEndOfCentral = 0x06054b50, kZip64End = 0x06064b50,
                        kZip64Locator = 0x07064b50;
constexpr std::uint32_t kMax32 = 0xffffffffu;

// Little-endian reads with bounds checks: every read names what it was reading.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, std::string source)
      : m_bytes(bytes), m_source(std::move(source)) {}
  std::uint64_t read(std::uint64_t offset, int size, const std::string& what) const {
    need(offset, static_cast<std::uint64_t>(size), what);
    std::uint64_t v = 0;
    for (int i = size - 1; i >= 0; --i)
      v = (v << 8) | static_cast<std::uint8_t>(m_bytes[offset + static_cast<std::uint64_t>(i)]);
    return v;
  }
  void need(std::uint64_t offset, std::uint64_t length, const std::string& what) const {
    if (offset > m_bytes.size() || length > m_bytes.size() - offset)
      fail("expected " + what + " at byte " + std::to_string(offset) + " (" +
           std::to_string(length) + " bytes), found a file of " + std::to_string(m_bytes.size()) +
           " bytes");
  }
  std::span<const std::byte> span(std::uint64_t offset, std::uint64_t length,
                                  const std::string& what) const {
    need(offset, length, what);
    return m_bytes.subspan(offset, length);
  }
  [[noreturn]] void fail(const std::string& message) const { throw NpyError(m_source, message); }
  std::size_t size() const { return m_bytes.size(); }
  const std::string& source() const { return m_source; }

 private:
  std::span<const std::byte> m_bytes;
  std::string m_source;
};

struct Member {
  std::string name;
  std::uint16_t method = 0;
  std::uint64_t compressedSize = 0, size = 0, localOffset = 0;
};

// The ZIP64 extended information extra field (id 1) holds, in this order, the values whose 32-bit
// fields are 0xffffffff: uncompressed size, compressed size, local header offset.
void readZip64Extra(const Reader& r, std::uint64_t extra, std::uint64_t length, Member& m) {
  std::uint64_t p = extra;
  while (p + 4 <= extra + length) {
    const auto id = r.read(p, 2, "an extra field id");
    const auto len = r.read(p + 2, 2, "an extra field length");
    if (id == 1) {
      std::uint64_t q = p + 4;
      for (std::uint64_t* v : {&m.size, &m.compressedSize, &m.localOffset})
        if (*v == kMax32) {
          *v = r.read(q, 8, "a ZIP64 size or offset of '" + m.name + "'");
          q += 8;
        }
      return;
    }
    p += 4 + len;
  }
}

std::vector<Member> centralDirectory(const Reader& r) {
  if (r.size() < 22)
    r.fail("expected a ZIP archive (np.savez), found " + std::to_string(r.size()) + " bytes");
  // The end record is the last 22 bytes plus a comment of up to 65535 bytes.
  std::uint64_t end = r.size() - 22;
  const std::uint64_t stop = r.size() > 22 + 65535 ? r.size() - 22 - 65535 : 0;
  while (r.read(end, 4, "the end of central directory") != kEndOfCentral) {
    if (end == stop) r.fail("expected a ZIP archive (np.savez), found no end of central directory");
    --end;
  }
  std::uint64_t count = r.read(end + 10, 2, "the member count");
  std::uint64_t offset = r.read(end + 16, 4, "the central directory offset");
  if ((count == 0xffff || offset == kMax32) && end >= 20 &&
      r.read(end - 20, 4, "the ZIP64 locator") == kZip64Locator) {
    const std::uint64_t z = r.read(end - 12, 8, "the ZIP64 end record offset");
    if (r.read(z, 4, "the ZIP64 end record") != kZip64End)
      r.fail("expected the ZIP64 end of central directory at byte " + std::to_string(z));
    count = r.read(z + 32, 8, "the ZIP64 member count");
    offset = r.read(z + 48, 8, "the ZIP64 central directory offset");
  }
  std::vector<Member> members;
  std::uint64_t p = offset;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (r.read(p, 4, "a central directory entry") != kCentralHeader)
      r.fail("expected central directory entry " + std::to_string(i) + " at byte " +
             std::to_string(p));
    Member m;
    m.method = static_cast<std::uint16_t>(r.read(p + 10, 2, "a compression method"));
    m.compressedSize = r.read(p + 20, 4, "a compressed size");
    m.size = r.read(p + 24, 4, "a size");
    const auto nameLen = r.read(p + 28, 2, "a name length");
    const auto extraLen = r.read(p + 30, 2, "an extra length");
    const auto commentLen = r.read(p + 32, 2, "a comment length");
    m.localOffset = r.read(p + 42, 4, "a local header offset");
    const auto name = r.span(p + 46, nameLen, "a member name");
    m.name.assign(reinterpret_cast<const char*>(name.data()), name.size());
    readZip64Extra(r, p + 46 + nameLen, extraLen, m);
    members.push_back(std::move(m));
    p += 46 + nameLen + extraLen + commentLen;
  }
  return members;
}

std::uint32_t crc32(std::span<const std::byte> bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xffffffffu;
  for (std::byte b : bytes) c = table[(c ^ static_cast<std::uint8_t>(b)) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

void put(std::vector<std::byte>& out, std::uint64_t v, int size) {
  for (int i = 0; i < size; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

}  // namespace

NpzArrays readNpz(std::span<const std::byte> bytes, std::string_view source) {
  const Reader r(bytes, std::string(source));
  NpzArrays arrays;
  for (const Member& m : centralDirectory(r)) {
    const std::string where = "member '" + m.name + "'";
    if (m.method != 0)
      r.fail(where + ": expected a stored member (np.savez), found compression method " +
             std::to_string(m.method) + (m.method == 8 ? " (deflate, np.savez_compressed)" : ""));
    if (r.read(m.localOffset, 4, "the local header of " + where) != kLocalHeader)
      r.fail(where + ": expected a local file header at byte " + std::to_string(m.localOffset));
    const auto nameLen = r.read(m.localOffset + 26, 2, "a name length");
    const auto extraLen = r.read(m.localOffset + 28, 2, "an extra length");
    const auto data =
        r.span(m.localOffset + 30 + nameLen + extraLen, m.compressedSize, "the data of " + where);
    std::string key = m.name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    if (arrays.count(key))
      r.fail(where + ": expected one member per key, found '" + key + "' twice");
    arrays[key] = readNpy(data, r.source() + ":" + m.name);
  }
  return arrays;
}

NpzArrays loadNpz(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f || std::filesystem::is_directory(path))
    throw NpyError(path.string(), "expected a readable .npz file, found none that opens (" +
                                      std::string(std::strerror(errno)) + ")");
  std::ostringstream text;
  text << f.rdbuf();
  const std::string s = std::move(text).str();
  return readNpz(std::as_bytes(std::span(s.data(), s.size())), path.string());
}

std::vector<std::byte> writeNpz(const NpzArrays& arrays) {
  std::vector<std::byte> out, central;
  for (const auto& [key, value] : arrays) {
    const std::string name = key + ".npy";
    const std::vector<std::byte> data = writeNpy(value);
    if (data.size() >= kMax32 || out.size() >= kMax32)
      throw NpyError(name, "expected an archive under 4 GiB (ZIP64 is not written)");
    const std::uint32_t crc = crc32(data);
    const std::uint64_t local = out.size();
    // Version 2.0, no flags, stored, DOS time and date 0 (1980-01-01).
    for (auto* buf : {&out, &central}) {
      put(*buf, buf == &out ? kLocalHeader : kCentralHeader, 4);
      if (buf == &central) put(*buf, 20, 2);  // version made by
      put(*buf, 20, 2);
      put(*buf, 0, 2);
      put(*buf, 0, 2);
      put(*buf, 0, 4);
      put(*buf, crc, 4);
      put(*buf, data.size(), 4);
      put(*buf, data.size(), 4);
      put(*buf, name.size(), 2);
      put(*buf, 0, 2);
      if (buf == &central) {
        put(*buf, 0, 2);  // comment
        put(*buf, 0, 2);  // disk
        put(*buf, 0, 2);  // internal attributes
        put(*buf, 0, 4);  // external attributes
        put(*buf, local, 4);
      }
      for (char c : name) buf->push_back(static_cast<std::byte>(c));
    }
    out.insert(out.end(), data.begin(), data.end());
  }
  const std::uint64_t centralOffset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  put(out, kEndOfCentral, 4);
  put(out, 0, 4);  // disk numbers
  put(out, arrays.size(), 2);
  put(out, arrays.size(), 2);
  put(out, central.size(), 4);
  put(out, centralOffset, 4);
  put(out, 0, 2);
  return out;
}

void saveNpz(const NpzArrays& arrays, const std::filesystem::path& path) {
  const std::vector<std::byte> bytes = writeNpz(arrays);
  if (auto error = writeFileAtomically(path, bytes)) throw NpyError(path.string(), *error);
}

}  // namespace tscope::engine::io
