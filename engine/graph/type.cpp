#include "engine/graph/type.h"

#include "engine/graph/errors.h"

#include <algorithm>

namespace tscope::engine {

TensorType::TensorType(DType dtype, std::vector<std::int64_t> shape, Device device)
    : m_dtype(dtype), m_shape(std::move(shape)), m_device(device) {
  for (std::size_t i = 0; i < m_shape.size(); ++i)
    if (m_shape[i] < kUnknownDim)
      throw TypeError("TensorType: dimension " + std::to_string(i) + " is " +
                      std::to_string(m_shape[i]) + "; expected a size >= 0 or -1 (unknown)");
}

TensorType TensorType::ofRank(DType dtype, int ndim, Device device) {
  if (ndim < 0)
    throw TypeError("TensorType::ofRank: the rank is " + std::to_string(ndim) +
                    "; expected 0 or more");
  return TensorType(dtype, std::vector<std::int64_t>(static_cast<std::size_t>(ndim), kUnknownDim),
                    device);
}

TensorType TensorType::ofValue(const Tensor& value) {
  return TensorType(value.dtype(), value.shape(), value.device());
}

bool TensorType::isFullyKnown() const {
  return std::none_of(m_shape.begin(), m_shape.end(),
                      [](std::int64_t d) { return d == kUnknownDim; });
}

std::string TensorType::str() const {
  std::string out = "TensorType(" + std::string(dtypeName(m_dtype)) + ", (";
  for (std::size_t i = 0; i < m_shape.size(); ++i) {
    if (i) out += ", ";
    out += m_shape[i] == kUnknownDim ? "?" : std::to_string(m_shape[i]);
  }
  if (m_shape.size() == 1) out += ",";
  out += ")";
  if (m_device != Device::Cpu) out += ", " + std::string(deviceName(m_device));
  return out + ")";
}

std::string TensorType::shortStr() const {
  std::string prefix(1, dtypeLetter(m_dtype));
  switch (m_shape.size()) {
    case 0:
      return prefix + "scalar";
    case 1:
      return prefix + "vector";
    case 2:
      if (m_shape[0] == 1 && m_shape[1] != 1) return prefix + "row";
      if (m_shape[1] == 1 && m_shape[0] != 1) return prefix + "col";
      return prefix + "matrix";
    default:
      return prefix + "tensor" + std::to_string(m_shape.size());
  }
}

bool TensorType::isSubtypeOf(const TensorType& other) const {
  if (m_dtype != other.m_dtype || m_device != other.m_device || ndim() != other.ndim())
    return false;
  for (std::size_t i = 0; i < m_shape.size(); ++i)
    if (other.m_shape[i] != kUnknownDim && m_shape[i] != other.m_shape[i]) return false;
  return true;
}

bool TensorType::isCompatibleWith(const TensorType& other) const {
  if (m_dtype != other.m_dtype || m_device != other.m_device || ndim() != other.ndim())
    return false;
  for (std::size_t i = 0; i < m_shape.size(); ++i)
    if (m_shape[i] != kUnknownDim && other.m_shape[i] != kUnknownDim &&
        m_shape[i] != other.m_shape[i])
      return false;
  return true;
}

Tensor TensorType::filter(const Tensor& value, const std::string& what, bool allowDowncast) const {
  auto fail = [&](const std::string& problem) -> TypeError {
    return TypeError(what + ": expected " + str() + ", found a value of dtype " +
                     std::string(dtypeName(value.dtype())) + " and shape " +
                     shapeToString(value.shape()) + " (" + problem + ")");
  };
  if (!value.defined()) throw TypeError(what + ": expected " + str() + ", found no value");
  if (value.ndim() != ndim())
    throw fail("expected " + std::to_string(ndim()) + " dimensions, found " +
               std::to_string(value.ndim()));
  for (int i = 0; i < ndim(); ++i)
    if (m_shape[i] != kUnknownDim && m_shape[i] != value.shape()[i])
      throw fail("dimension " + std::to_string(i) + " must be " + std::to_string(m_shape[i]));
  if (value.device() != m_device)
    throw fail("the value is on " + std::string(deviceName(value.device())));
  if (value.dtype() == m_dtype) return value;
  if (!allowDowncast && promoteTypes(value.dtype(), m_dtype) != m_dtype)
    throw fail("converting " + std::string(dtypeName(value.dtype())) + " to " +
               std::string(dtypeName(m_dtype)) + " could lose information");
  return value.astype(m_dtype);
}

}  // namespace tscope::engine
