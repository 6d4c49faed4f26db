#include "engine/io/base64.h"

#include <array>
#include <cstdint>

namespace tscope::engine::io {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static_assert(std::size(kAlphabet) == 64 + 1);

constexpr std::uint8_t kInvalid = 0xff;

constexpr std::array<std::uint8_t, 256> makeDecodeTable() {
  std::array<std::uint8_t, 256> table{};
  table.fill(kInvalid);
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
  return table;
}
constexpr std::array<std::uint8_t, 256> kDecode = makeDecodeTable();

std::uint8_t sextet(char c) {
  return kDecode[static_cast<unsigned char>(c)];
}

}  // namespace

std::string base64Encode(std::span<const std::byte> bytes) {
  const std::size_t n = bytes.size();
  std::string out((n + 2) / 3 * 4, '=');
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  char* o = out.data();
  std::size_t i = 0;
  for (; i + 3 <= n; i += 3, o += 4) {
    const std::uint32_t v =
        (std::uint32_t{in[i]} << 16) | (std::uint32_t{in[i + 1]} << 8) | in[i + 2];
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    o[2] = kAlphabet[(v >> 6) & 63];
    o[3] = kAlphabet[v & 63];
  }
  if (const std::size_t rest = n - i; rest > 0) {
    std::uint32_t v = std::uint32_t{in[i]} << 16;
    if (rest == 2) v |= std::uint32_t{in[i + 1]} << 8;
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    if (rest == 2) o[2] = kAlphabet[(v >> 6) & 63];
  }
  return out;
}

std::optional<std::size_t> base64DecodedSize(std::string_view text) {
  const std::size_t n = text.size();
  if (n % 4 != 0) return std::nullopt;
  if (n == 0) return 0;
  // The last group is "xxxx", "xxx=" or "xx=="; '=' nowhere else in it.
  const std::string_view last = text.substr(n - 4);
  const std::size_t padding = last[3] != '=' ? 0 : last[2] != '=' ? 1 : 2;
  for (std::size_t i = 0; i < 4 - padding; ++i)
    if (last[i] == '=') return std::nullopt;
  return n / 4 * 3 - padding;
}

std::optional<std::vector<std::byte>> base64Decode(std::string_view text) {
  const std::optional<std::size_t> size = base64DecodedSize(text);
  if (!size) return std::nullopt;
  std::vector<std::byte> out(*size);
  if (text.empty()) return out;
  const std::size_t fullGroups = text.size() / 4 - 1;  // the last group may carry padding
  std::byte* o = out.data();
  for (std::size_t g = 0; g < fullGroups; ++g, o += 3) {
    const char* c = text.data() + 4 * g;
    const std::uint8_t a = sextet(c[0]), b = sextet(c[1]), d = sextet(c[2]), e = sextet(c[3]);
    if (((a | b | d | e) & 0xc0) != 0) return std::nullopt;  // kInvalid has the top bits set
    const std::uint32_t v =
        (std::uint32_t{a} << 18) | (std::uint32_t{b} << 12) | (std::uint32_t{d} << 6) | e;
    o[0] = static_cast<std::byte>(v >> 16);
    o[1] = static_cast<std::byte>(v >> 8);
    o[2] = static_cast<std::byte>(v);
  }
  const char* c = text.data() + 4 * fullGroups;
  const std::size_t tail = *size - 3 * fullGroups;  // 1, 2 or 3 bytes
  const std::uint8_t a = sextet(c[0]), b = sextet(c[1]);
  const std::uint8_t d = tail >= 2 ? sextet(c[2]) : 0, e = tail == 3 ? sextet(c[3]) : 0;
  if (((a | b | d | e) & 0xc0) != 0) return std::nullopt;
  const std::uint32_t v =
      (std::uint32_t{a} << 18) | (std::uint32_t{b} << 12) | (std::uint32_t{d} << 6) | e;
  // The bits below the last byte the padding keeps must be zero (RFC 4648, section 3.5).
  if ((tail == 1 && (v & 0xffff) != 0) || (tail == 2 && (v & 0xff) != 0)) return std::nullopt;
  o[0] = static_cast<std::byte>(v >> 16);
  if (tail >= 2) o[1] = static_cast<std::byte>(v >> 8);
  if (tail == 3) o[2] = static_cast<std::byte>(v);
  return out;
}

}  // namespace tscope::engine::io
