#pragma once
// NumPy's .npy file (format versions 1.0, 2.0 and 3.0) for single tensors, so that arrays move
// between Tensorscope and Python with np.save / np.load.
//
// Reading checks every length before it reads and either returns a whole tensor or throws
// NpyError. It takes the dtypes a Tensor has (bool, int8..int64, uint8, float16/32/64) in either
// byte order ('>' data is byte-swapped) and C or Fortran order (a Fortran-order file loads as the
// equivalent C-contiguous tensor). It refuses what a Tensor cannot hold (complex, objects,
// strings, structured dtypes, uint16..uint64) and any file whose data is shorter or longer than its
// header declares.
//
// Writing produces what np.save produces, byte for byte: version 1.0 (2.0 only when the header
// would exceed 65535 bytes), little-endian, C order, the header padded with spaces and a final
// '\n' so that the data starts at a multiple of 64 bytes.

#include "engine/tensor/tensor.h"

#include <cstddef>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::io {

class NpyError : public std::runtime_error {
 public:
  // what(): "<source>: <message>", the message saying what was expected and what was found:
  // "x.npy: expected format version 1.0, 2.0 or 3.0, found 4.0".
  NpyError(std::string source, std::string message);
  const std::string& source() const { return m_source; }
  const std::string& message() const { return m_message; }

 private:
  std::string m_source, m_message;
};

// Parses the bytes of a .npy file into a new C-contiguous tensor; `source` names them in errors.
Tensor readNpy(std::span<const std::byte> bytes, std::string_view source = "<memory>");
// Reads the file and parses it; errors name the path.
Tensor loadNpy(const std::filesystem::path& path);

// The bytes of a .npy file holding t's logical elements in C order (views included: a transposed
// view writes the transpose). Throws std::invalid_argument for an undefined tensor.
std::vector<std::byte> writeNpy(const Tensor& t);
// Writes atomically: the bytes go to a temporary file next to the target, which is then renamed
// over it; on any error the target is untouched and the temporary file removed. I/O errors throw
// NpyError naming the path.
void saveNpy(const Tensor& t, const std::filesystem::path& path);

}  // namespace tscope::engine::io
