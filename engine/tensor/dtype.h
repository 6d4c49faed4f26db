#pragma once
// Element types of tensors, their names, sizes and the promotion rules of elementwise ops.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tscope::engine {

enum class DType : std::uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  Float32,
  Float64,
};
inline constexpr int kDTypeCount = 12;

enum class Device : std::uint8_t { Cpu, Cuda };

// "bool", "int8", ..., "uint64", ..., "float64" (numpy's names).
std::string_view dtypeName(DType dtype);
// The inverse of dtypeName; nullopt for an unknown name.
std::optional<DType> dtypeFromName(std::string_view name);
std::size_t dtypeSize(DType dtype);
bool isFloat(DType dtype);
bool isInteger(DType dtype);  // signed or unsigned integers, not bool
bool isSigned(DType dtype);   // signed integers and floats
// The letter d3viz and Theano use in short type names: b w i l (int8..int64), f d (float32/64),
// h (float16), B H I L (uint8..uint64, numpy's letters), ? (bool).
char dtypeLetter(DType dtype);
// numpy's type promotion for two array operands (bool < integers < floats; mixing a signed and an
// unsigned integer widens to a signed type holding both: int64 with uint8 stays int64, int32 with
// uint32 gives int64, any signed integer with uint64 gives float64; float16 with int16 goes to
// float32, with int32 or int64 to float64).
DType promoteTypes(DType a, DType b);

std::string_view deviceName(Device device);

// A 16-bit IEEE half as its raw bits; converted through Eigen::half in the implementation.
struct Half {
  std::uint16_t bits = 0;
};
float halfToFloat(Half h);
Half floatToHalf(float f);

}  // namespace tscope::engine
