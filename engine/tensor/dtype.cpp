#include "engine/tensor/dtype.h"

#include <Eigen/Core>
#include <array>
#include <iterator>

namespace tscope::engine {

namespace {

constexpr int index(DType dtype) {
  return static_cast<int>(dtype);
}

constexpr std::string_view kNames[] = {
    "bool",   "int8",   "int16",  "int32",   "int64",   "uint8",
    "uint16", "uint32", "uint64", "float16", "float32", "float64",
};
static_assert(std::size(kNames) == kDTypeCount);

constexpr std::size_t kSizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8};
static_assert(std::size(kSizes) == kDTypeCount);

constexpr char kLetters[] = {'?', 'b', 'w', 'i', 'l', 'B', 'H', 'I', 'L', 'h', 'f', 'd'};
static_assert(std::size(kLetters) == kDTypeCount);

constexpr std::string_view kDeviceNames[] = {"cpu", "cuda"};
static_assert(std::size(kDeviceNames) == 2);

// numpy's np.result_type(a, b) for two array operands, row and column in DType order.
// The non-obvious entries: a signed and an unsigned integer widen to a signed type that holds
// both (int8 + uint8 -> int16, int32 + uint32 -> int64), and as no signed integer holds uint64,
// uint64 with a signed integer gives float64; a float holds an integer only when its mantissa
// covers the integer's range (float16 covers int8/uint8, float32 covers int16, float64 covers
// int32/int64), so float16 + int16 -> float32 and float32 + int32 -> float64.
constexpr DType B = DType::Bool;
constexpr DType I8 = DType::Int8;
constexpr DType I16 = DType::Int16;
constexpr DType I32 = DType::Int32;
constexpr DType I64 = DType::Int64;
constexpr DType U8 = DType::UInt8;
constexpr DType U16 = DType::UInt16;
constexpr DType U32 = DType::UInt32;
constexpr DType U64 = DType::UInt64;
constexpr DType F16 = DType::Float16;
constexpr DType F32 = DType::Float32;
constexpr DType F64 = DType::Float64;

// clang-format off
constexpr DType kPromotion[kDTypeCount][kDTypeCount] = {
    //           bool  int8  int16 int32 int64 uint8 u16   u32   u64   f16   f32   f64
    /* bool   */ {B,   I8,   I16,  I32,  I64,  U8,   U16,  U32,  U64,  F16,  F32,  F64},
    /* int8   */ {I8,  I8,   I16,  I32,  I64,  I16,  I32,  I64,  F64,  F16,  F32,  F64},
    /* int16  */ {I16, I16,  I16,  I32,  I64,  I16,  I32,  I64,  F64,  F32,  F32,  F64},
    /* int32  */ {I32, I32,  I32,  I32,  I64,  I32,  I32,  I64,  F64,  F64,  F64,  F64},
    /* int64  */ {I64, I64,  I64,  I64,  I64,  I64,  I64,  I64,  F64,  F64,  F64,  F64},
    /* uint8  */ {U8,  I16,  I16,  I32,  I64,  U8,   U16,  U32,  U64,  F16,  F32,  F64},
    /* uint16 */ {U16, I32,  I32,  I32,  I64,  U16,  U16,  U32,  U64,  F32,  F32,  F64},
    /* uint32 */ {U32, I64,  I64,  I64,  I64,  U32,  U32,  U32,  U64,  F64,  F64,  F64},
    /* uint64 */ {U64, F64,  F64,  F64,  F64,  U64,  U64,  U64,  U64,  F64,  F64,  F64},
    /* f16    */ {F16, F16,  F32,  F64,  F64,  F16,  F32,  F64,  F64,  F16,  F32,  F64},
    /* f32    */ {F32, F32,  F32,  F64,  F64,  F32,  F32,  F64,  F64,  F32,  F32,  F64},
    /* f64    */ {F64, F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64},
};
// clang-format on
static_assert(std::size(kPromotion) == kDTypeCount);

constexpr bool promotionIsSymmetric() {
  for (int i = 0; i < kDTypeCount; ++i)
    for (int j = 0; j < kDTypeCount; ++j)
      if (kPromotion[i][j] != kPromotion[j][i]) return false;
  return true;
}
static_assert(promotionIsSymmetric(), "type promotion must not depend on operand order");

}  // namespace

std::string_view dtypeName(DType dtype) {
  return kNames[index(dtype)];
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (int i = 0; i < kDTypeCount; ++i)
    if (kNames[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::size_t dtypeSize(DType dtype) {
  return kSizes[index(dtype)];
}

bool isFloat(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::Float32 || dtype == DType::Float64;
}

bool isInteger(DType dtype) {
  switch (dtype) {
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
      return true;
    default:
      return false;
  }
}

bool isSigned(DType dtype) {
  return isFloat(dtype) || dtype == DType::Int8 || dtype == DType::Int16 || dtype == DType::Int32 ||
         dtype == DType::Int64;
}

char dtypeLetter(DType dtype) {
  return kLetters[index(dtype)];
}

DType promoteTypes(DType a, DType b) {
  return kPromotion[index(a)][index(b)];
}

std::string_view deviceName(Device device) {
  return kDeviceNames[static_cast<int>(device)];
}

float halfToFloat(Half h) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h.bits));
}

Half floatToHalf(float f) {
  // Eigen rounds to nearest even and produces subnormals, infinities and NaN as IEEE does.
  return Half{Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f))};
}

}  // namespace tscope::engine
