#pragma once
// TensorType: the symbolic type of a Variable: dtype, static shape (each dimension known or
// unknown), device. A known dimension of 1 is broadcastable.

#include "engine/tensor/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tscope::engine {

inline constexpr std::int64_t kUnknownDim = -1;

class TensorType {
 public:
  TensorType() = default;
  TensorType(DType dtype, std::vector<std::int64_t> shape, Device device = Device::Cpu);
  // All dimensions unknown.
  static TensorType ofRank(DType dtype, int ndim, Device device = Device::Cpu);

  DType dtype() const { return m_dtype; }
  Device device() const { return m_device; }
  const std::vector<std::int64_t>& shape() const { return m_shape; }
  int ndim() const { return static_cast<int>(m_shape.size()); }
  bool isDimKnown(int axis) const { return m_shape[axis] != kUnknownDim; }
  bool isBroadcastable(int axis) const { return m_shape[axis] == 1; }
  bool isFullyKnown() const;

  // "TensorType(float32, (?, 784))".
  std::string str() const;
  // d3viz's short names: "fmatrix", "dvector", "iscalar", "frow", "fcol", "ftensor3".
  std::string shortStr() const;

  // True when a value of this type is always a value of `other` too: same dtype, rank and device,
  // and every dimension `other` knows is known here with the same size.
  bool isSubtypeOf(const TensorType& other) const;
  // Same dtype, rank and device, and no known dimension disagrees.
  bool isCompatibleWith(const TensorType& other) const;

  // Checks a runtime value against this type and returns it (converted when allowed).
  // A dtype mismatch converts only when allowDowncast is true or the conversion is lossless
  // (promoteTypes(value, this) == this); rank, device and known dimensions must match.
  // Throws TypeError naming `what` (e.g. "input 'x'"), the expected and the found type.
  Tensor filter(const Tensor& value, const std::string& what = "value",
                bool allowDowncast = false) const;
  // The type of a concrete value (all dimensions known).
  static TensorType ofValue(const Tensor& value);

  friend bool operator==(const TensorType&, const TensorType&) = default;

 private:
  DType m_dtype = DType::Float32;
  std::vector<std::int64_t> m_shape;
  Device m_device = Device::Cpu;
};

}  // namespace tscope::engine
