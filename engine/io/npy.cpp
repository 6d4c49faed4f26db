// .npy reading and writing (npy.h). The header is a Python dict literal; a small flat scanner reads
// it here (Note [The npy header is a flat literal]), so loading needs neither Python nor recursion.
#include "engine/io/npy.h"

#include "engine/io/atomic_file.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tscope::engine::io {

// Tensor bytes are little-endian (Tensor::fromBytes, toBytes), and a descr's '=' means this
// machine's order; swapping only '>' data is right on a little-endian host alone.
static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian host");

NpyError::NpyError(std::string source, std::string message)
    : std::runtime_error(source + ": " + message),
      m_source(std::move(source)),
      m_message(std::move(message)) {}

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kVersionEnd = 8;                // the magic and the two version bytes
constexpr std::size_t kAlign = 64;                    // numpy's ARRAY_ALIGN: where the data starts
constexpr std::size_t kGrowthAxisMaxDigits = 21;      // numpy's GROWTH_AXIS_MAX_DIGITS
constexpr std::uint64_t kVersion1MaxHeader = 0xffff;  // the 2-byte header length of version 1.0
constexpr std::string_view kSpaces = " \t\n\r\f\v";   // Python's whitespace between tokens
constexpr std::string_view kByteOrders = "<>|=";

// A descr is a byte order ('<', '>', '|' or '=') followed by one of these codes.
struct DescrCode {
  std::string_view code;
  DType dtype;
};
constexpr std::array kDescrCodes{
    DescrCode{"b1", DType::Bool},    DescrCode{"i1", DType::Int8},
    DescrCode{"i2", DType::Int16},   DescrCode{"i4", DType::Int32},
    DescrCode{"i8", DType::Int64},   DescrCode{"u1", DType::UInt8},
    DescrCode{"u2", DType::UInt16},  DescrCode{"u4", DType::UInt32},
    DescrCode{"u8", DType::UInt64},  DescrCode{"f2", DType::Float16},
    DescrCode{"f4", DType::Float32}, DescrCode{"f8", DType::Float64},
};
static_assert(std::size(kDescrCodes) == kDTypeCount);

// The descr numpy writes: '|' for one-byte types (no byte order), '<' otherwise.
std::string descrOf(DType dtype) {
  for (const DescrCode& d : kDescrCodes)
    if (d.dtype == dtype) return (dtypeSize(dtype) == 1 ? "|" : "<") + std::string(d.code);
  throw std::invalid_argument("writeNpy: no descr for dtype " + std::string(dtypeName(dtype)));
}

// Why a descr the reader refuses has no tensor dtype, keyed by numpy's kind letter.
std::string_view kindHint(char kind) {
  switch (kind) {
    case 'c':
      return " (complex numbers are not supported)";
    case 'O':
      return " (Python objects are not supported)";
    case 'U':
      return " (unicode strings are not supported)";
    case 'S':
    case 'a':
      return " (byte strings are not supported)";
    case 'V':
      return " (raw records are not supported)";
    case 'M':
      return " (datetime64 is not supported)";
    case 'm':
      return " (timedelta64 is not supported)";
    case 'u':
      return " (the unsigned integers are uint8, uint16, uint32 and uint64)";
    case 'f':
      return " (of the floats only float16, float32 and float64 are supported)";
    default:
      return "";
  }
}

// Printable ASCII as is, everything else escaped, so that messages stay UTF-8 whatever a file
// holds.
std::string escaped(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

// At most `limit` bytes of text, quoted and escaped; "..." marks a cut.
std::string quoted(std::string_view text, std::size_t limit = 24) {
  return "\"" + escaped(text.substr(0, limit)) + (text.size() > limit ? "...\"" : "\"");
}

// "1 byte", "24 bytes".
std::string byteCount(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " byte" : " bytes");
}

// Python's repr of a tuple of ints: "()", "(5,)", "(2, 3)". Written here rather than borrowed from
// shapeToString, whose text is for messages, because the bytes must stay numpy's.
std::string pythonTuple(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

struct NpyHeader {
  std::string descr;  // as written, for messages
  DType dtype = DType::Float32;
  bool bigEndian = false;
  bool fortranOrder = false;
  Shape shape;
};

// Note [The npy header is a flat literal]: the header is a dict with the keys 'descr',
// 'fortran_order' and 'shape' whose values are a string, True/False and a tuple of ints. The
// scanner reads exactly that in one pass without recursion; anything nested (a structured dtype's
// list, a tuple inside the shape) is refused at its opening bracket, so no input can make it
// recurse or read past the header.
class HeaderScanner {
 public:
  HeaderScanner(std::string_view text, const std::string& source)
      : m_text(text), m_source(source) {}

  NpyHeader scan() {
    NpyHeader h;
    if (!eat('{')) fail("expected the header to be a Python dict literal starting with '{'");
    bool seen[3] = {false, false, false};
    constexpr std::string_view kKeys[3] = {"descr", "fortran_order", "shape"};
    while (!eat('}')) {
      skipSpace();
      const std::size_t keyPos = m_pos;
      const std::string key = string("a quoted key or '}' in the header dict");
      const auto found = std::find(std::begin(kKeys), std::end(kKeys), key);
      if (found == std::end(kKeys)) {
        m_pos = keyPos;
        fail("expected only the keys 'descr', 'fortran_order' and 'shape' in the header dict");
      }
      const auto index = static_cast<std::size_t>(found - std::begin(kKeys));
      if (seen[index])
        throw NpyError(m_source, "expected each key once in the header dict, found '" + key +
                                     "' a second time");
      seen[index] = true;
      if (!eat(':')) fail("expected ':' after the key '" + key + "'");
      if (index == 0) descr(h);
      if (index == 1) h.fortranOrder = boolean();
      if (index == 2) h.shape = shape();
      if (eat(',')) continue;  // a trailing comma before '}' is fine, as in Python
      if (!eat('}')) fail("expected ',' or '}' after the value of '" + key + "'");
      break;
    }
    skipSpace();
    if (m_pos != m_text.size()) fail("expected nothing but spaces after the header dict");
    std::string missing;
    for (std::size_t i = 0; i < 3; ++i)
      if (!seen[i]) missing += (missing.empty() ? "'" : " and '") + std::string(kKeys[i]) + "'";
    if (!missing.empty())
      throw NpyError(m_source,
                     "expected the header dict to have the keys 'descr', 'fortran_order' and "
                     "'shape', found it without " +
                         missing);
    return h;
  }

 private:
  // Throws "<expected>, found <the header text from here>", without the padding at its end.
  [[noreturn]] void fail(const std::string& expected) const {
    std::string_view rest = m_text.substr(std::min(m_pos, m_text.size()));
    const std::size_t last = rest.find_last_not_of(kSpaces);
    rest = rest.substr(0, last == std::string_view::npos ? 0 : last + 1);
    throw NpyError(m_source,
                   expected + ", found " +
                       (rest.empty() ? std::string("the end of the header") : quoted(rest)));
  }

  void skipSpace() {
    while (m_pos < m_text.size() && kSpaces.find(m_text[m_pos]) != std::string_view::npos) ++m_pos;
  }

  bool eat(char c) {
    skipSpace();
    if (m_pos >= m_text.size() || m_text[m_pos] != c) return false;
    ++m_pos;
    return true;
  }

  char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }

  // A quoted string without escapes (no key or descr numpy reads needs one).
  std::string string(const std::string& what) {
    skipSpace();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected " + what);
    const std::size_t start = ++m_pos;
    while (m_pos < m_text.size() && m_text[m_pos] != quote) {
      if (m_text[m_pos] == '\\') fail("expected a string without escapes");
      if (m_text[m_pos] == '\n') break;  // Python's strings end at the line, unclosed
      ++m_pos;
    }
    if (m_pos >= m_text.size() || m_text[m_pos] != quote)
      fail("expected the closing " + std::string(1, quote) + " of a string");
    return std::string(m_text.substr(start, m_pos++ - start));
  }

  void descr(NpyHeader& h) {
    skipSpace();
    if (peek() == '[' || peek() == '{')
      fail(
          "expected the 'descr' to be a string naming a plain dtype (structured dtypes are not "
          "supported)");
    h.descr = string("the 'descr' to be a string such as '<f4'");
    const bool hasOrder =
        !h.descr.empty() && kByteOrders.find(h.descr[0]) != std::string_view::npos;
    if (hasOrder && h.descr.size() == 3) {
      for (const DescrCode& d : kDescrCodes) {
        if (d.code == std::string_view(h.descr).substr(1)) {
          h.dtype = d.dtype;
          // '|' ("not applicable") and '=' (native) both read as this little-endian host's order.
          h.bigEndian = h.descr[0] == '>';
          return;
        }
      }
    }
    const std::size_t kindAt = hasOrder ? 1 : 0;
    const char kind = kindAt < h.descr.size() ? h.descr[kindAt] : '\0';
    throw NpyError(m_source,
                   "expected the 'descr' of a bool, int8..int64, uint8..uint64 or float16/32/64 "
                   "array ('|b1', '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', '<f2', "
                   "'<f4', '<f8', or with '>' "
                   "for big-endian), found '" +
                       escaped(h.descr) + "'" + std::string(kindHint(kind)));
  }

  bool boolean() {
    skipSpace();
    const std::size_t start = m_pos;
    while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_') ++m_pos;
    const std::string_view word = m_text.substr(start, m_pos - start);
    if (word == "True") return true;
    if (word == "False") return false;
    m_pos = start;
    fail("expected True or False for 'fortran_order'");
  }

  Shape shape() {
    skipSpace();
    const std::size_t start = m_pos;
    if (!eat('(')) fail("expected the 'shape' to be a tuple of integers such as (2, 3)");
    Shape shape;
    if (eat(')')) return shape;
    for (;;) {
      shape.push_back(dim());
      if (eat(',')) {
        if (eat(')')) return shape;
        continue;
      }
      if (!eat(')')) fail("expected ',' or ')' after a dimension of the 'shape'");
      if (shape.size() > 1) return shape;
      m_pos = start;  // (5) is the number 5 in Python, not a tuple
      fail("expected the 'shape' to be a tuple (a one-element tuple needs a comma: (5,))");
    }
  }

  std::int64_t dim() {
    skipSpace();
    const std::size_t start = m_pos;
    const bool negative = peek() == '-';
    if (peek() == '-' || peek() == '+') ++m_pos;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) {
      m_pos = start;
      fail("expected an integer dimension in the 'shape'");
    }
    std::int64_t value = 0;
    bool overflow = false;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      overflow |= __builtin_mul_overflow(value, 10, &value);
      overflow |= __builtin_add_overflow(value, peek() - '0', &value);
      ++m_pos;
    }
    if (peek() == 'L' || peek() == 'l') ++m_pos;  // Python 2's long literal, in old numpy files
    if (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '.' || peek() == '_') {
      m_pos = start;
      fail("expected an integer dimension in the 'shape'");
    }
    if (negative && (value != 0 || overflow)) {
      m_pos = start;
      fail("expected a non-negative dimension in the 'shape'");
    }
    if (overflow) {
      m_pos = start;
      fail("expected a dimension below 2^63 in the 'shape'");
    }
    return value;
  }

  std::string_view m_text;
  const std::string& m_source;
  std::size_t m_pos = 0;
};

std::uint8_t byteAt(std::string_view text, std::size_t i) {
  return static_cast<std::uint8_t>(text[i]);
}

}  // namespace

Tensor readNpy(std::span<const std::byte> bytes, std::string_view sourceName) {
  const std::string source(sourceName);
  const std::string_view file(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!file.starts_with(kMagic))
    throw NpyError(
        source,
        "expected the magic \\x93NUMPY, found " + quoted(file.substr(0, kMagic.size())) +
            (file.size() < kMagic.size() ? " (the file has " + byteCount(file.size()) + ")" : ""));
  if (file.size() < kVersionEnd)
    throw NpyError(source, "expected a format version after the magic, found the end of the file");
  const int major = byteAt(file, 6), minor = byteAt(file, 7);
  if (major < 1 || major > 3 || minor != 0)
    throw NpyError(source, "expected format version 1.0, 2.0 or 3.0, found " +
                               std::to_string(major) + "." + std::to_string(minor));

  // Version 1.0 gives the header length in 2 little-endian bytes, 2.0 and 3.0 in 4.
  const std::size_t lengthBytes = major == 1 ? 2 : 4;
  const std::size_t headerStart = kVersionEnd + lengthBytes;
  if (file.size() < headerStart)
    throw NpyError(source, "expected a " + std::to_string(lengthBytes) +
                               "-byte header length after the version, found " +
                               byteCount(file.size() - kVersionEnd));
  std::uint64_t headerLength = 0;
  for (std::size_t i = lengthBytes; i-- > 0;)
    headerLength = headerLength << 8 | byteAt(file, kVersionEnd + i);
  const std::size_t afterLength = file.size() - headerStart;
  if (headerLength > afterLength)
    throw NpyError(source, "expected a header of " + byteCount(headerLength) +
                               " (as its length field says), found " + byteCount(afterLength));

  // Version 3.0 headers are UTF-8, older ones latin-1; both are ASCII wherever the scanner accepts.
  const NpyHeader h = HeaderScanner(file.substr(headerStart, headerLength), source).scan();

  // The same order of multiplication as shapeNumel, so that every shape accepted here constructs.
  const auto itemSize = static_cast<std::int64_t>(dtypeSize(h.dtype));
  std::int64_t count = 1, dataBytes = 0;
  bool overflow = false;
  for (std::int64_t d : h.shape) overflow = overflow || __builtin_mul_overflow(count, d, &count);
  overflow = overflow || __builtin_mul_overflow(count, itemSize, &dataBytes);
  if (overflow)
    throw NpyError(source, "expected a shape whose size in bytes fits in 64 bits, found " +
                               shapeToString(h.shape) + " of " + h.descr);
  const std::size_t dataStart = headerStart + static_cast<std::size_t>(headerLength);
  const std::span<const std::byte> data = bytes.subspan(dataStart);
  if (static_cast<std::uint64_t>(dataBytes) != data.size())
    throw NpyError(source, "the header declares shape " + shapeToString(h.shape) + " of " +
                               h.descr + " (" + byteCount(static_cast<std::uint64_t>(dataBytes)) +
                               ") but the file has " + byteCount(data.size()) + " of data");
  if (h.dtype == DType::Bool) {
    for (std::size_t i = 0; i < data.size(); ++i) {
      const auto b = static_cast<unsigned>(data[i]);
      if (b > 1) {
        char buf[5];
        std::snprintf(buf, sizeof buf, "0x%02x", b);
        throw NpyError(source, "expected bool bytes of 0 or 1, found " + std::string(buf) +
                                   " at data byte " + std::to_string(i));
      }
    }
  }

  // A Fortran-order file holds the C-order bytes of the transpose (the axes reversed).
  Shape stored = h.shape;
  if (h.fortranOrder) std::reverse(stored.begin(), stored.end());
  Tensor t = Tensor::fromBytes(h.dtype, std::move(stored), data);
  if (h.bigEndian && itemSize > 1) {
    auto* p = static_cast<std::byte*>(t.rawData());
    for (std::int64_t i = 0; i < count; ++i) std::reverse(p + i * itemSize, p + (i + 1) * itemSize);
  }
  if (h.fortranOrder && t.ndim() > 1) t = t.transpose().contiguous();
  return t;
}

Tensor loadNpy(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw NpyError(path.string(), "expected a .npy file, found a directory");
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw NpyError(path.string(), "expected a readable file, found none that opens (" +
                                      std::string(std::strerror(errno)) + ")");
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) throw NpyError(path.string(), "reading the file failed");
  const std::string s = std::move(text).str();
  return readNpy(std::as_bytes(std::span(s.data(), s.size())), path.string());
}

std::vector<std::byte> writeNpy(const Tensor& t) {
  if (!t.defined())
    throw std::invalid_argument("writeNpy: expected a defined tensor, found an undefined one");
  std::string dict = "{'descr': '" + descrOf(t.dtype()) +
                     "', 'fortran_order': False, 'shape': " + pythonTuple(t.shape()) + ", }";
  // numpy leaves room for the first axis to grow to 21 digits, so that appending rewrites the
  // header in place.
  if (!t.shape().empty()) {
    const std::size_t digits = std::to_string(t.shape()[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // The header ends in '\n' and is padded with spaces (at least one) so that the data starts at a
  // multiple of kAlign; numpy takes version 2.0 only when version 1.0's length field is too small.
  auto headerLength = [&](std::size_t headerStart) -> std::uint64_t {
    const std::size_t withNewline = dict.size() + 1;
    return withNewline + kAlign - (headerStart + withNewline) % kAlign;
  };
  int major = 1;
  std::uint64_t length = headerLength(kVersionEnd + 2);
  if (length > kVersion1MaxHeader) {
    major = 2;
    length = headerLength(kVersionEnd + 4);
    if (length > 0xffffffffULL)
      throw std::invalid_argument("writeNpy: expected a header below 4 GiB, found " +
                                  std::to_string(length) + " bytes for shape " +
                                  shapeToString(t.shape()));
  }
  const std::size_t lengthBytes = major == 1 ? 2 : 4;

  const std::vector<std::byte> data = t.toBytes();  // the logical elements in C order
  std::vector<std::byte> out;
  out.reserve(kVersionEnd + lengthBytes + length + data.size());
  auto put = [&](std::string_view s) {
    for (char c : s) out.push_back(static_cast<std::byte>(c));
  };
  put(kMagic);
  out.push_back(static_cast<std::byte>(major));
  out.push_back(std::byte{0});
  for (std::size_t i = 0; i < lengthBytes; ++i)
    out.push_back(static_cast<std::byte>(length >> (8 * i)));
  put(dict);
  out.insert(out.end(), length - dict.size() - 1, static_cast<std::byte>(' '));
  out.push_back(static_cast<std::byte>('\n'));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void saveNpy(const Tensor& t, const std::filesystem::path& path) {
  const std::vector<std::byte> bytes = writeNpy(t);  // first: a failure leaves the target untouched
  if (auto why = writeFileAtomically(path, bytes))
    throw NpyError(path.string(), "cannot write: " + *why);
}

}  // namespace tscope::engine::io
