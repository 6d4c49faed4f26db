#pragma once
// Base64 (RFC 4648, standard alphabet, '=' padding) for tensor bytes embedded in JSON.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::io {

// "Zm9vYg==" for "foob"; the empty string for no bytes.
std::string base64Encode(std::span<const std::byte> bytes);

// The bytes of padded base64 text; nullopt when the length is not a multiple of 4, a character is
// outside the alphabet (whitespace included), the padding is malformed or the bits the padding
// drops are not zero (so every byte string has exactly one accepted encoding).
std::optional<std::vector<std::byte>> base64Decode(std::string_view text);

// The number of bytes text decodes to, checking only its length and the padding of its last
// group; nullopt when those are malformed. base64Decode may still reject the characters.
std::optional<std::size_t> base64DecodedSize(std::string_view text);

}  // namespace tscope::engine::io
