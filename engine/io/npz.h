#pragma once
// NumPy's .npz archive (np.savez): a ZIP file of .npy members, one per named array. This is how
// state dicts travel between Tensorscope and Python (engine/nn, tests/data/nn/).
//
// Reading goes through the ZIP's central directory (ZIP64 included: np.savez writes ZIP64 extra
// fields), checks every offset and length before it reads, and accepts stored members only, which
// np.savez writes; a compressed member (np.savez_compressed) is refused with a message that says
// so. Each member is parsed by readNpy; the array's key is the member name without ".npy". Errors
// are NpyError naming the archive and the member.
//
// Writing produces stored (uncompressed) members with their CRC-32, which np.load reads.

#include "engine/io/npy.h"

#include <map>

namespace tscope::engine::io {

// Arrays by key (sorted).
using NpzArrays = std::map<std::string, Tensor>;

NpzArrays readNpz(std::span<const std::byte> bytes, std::string_view source = "<memory>");
NpzArrays loadNpz(const std::filesystem::path& path);

std::vector<std::byte> writeNpz(const NpzArrays& arrays);
// Atomically, as saveNpy.
void saveNpz(const NpzArrays& arrays, const std::filesystem::path& path);

}  // namespace tscope::engine::io
