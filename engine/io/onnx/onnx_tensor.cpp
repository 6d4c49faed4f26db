// ONNX element types, TensorProtos and TypeProtos <-> Tensorscope dtypes, tensors and types.
#include "engine/io/onnx/onnx_convert.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace tscope::engine::io::onnx_import {

namespace {

using TP = onnx::TensorProto;

std::size_t checkedNumel(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("a negative dimension " + std::to_string(d));
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / 16 / static_cast<std::size_t>(d))
      throw std::invalid_argument("the element count overflows");
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

// Note [External data]: a tensor stored outside the model names a file relative to the model's
// directory, an offset and a length. The file must stay inside that directory.
std::string readExternal(const TP& proto, const std::string& baseDir, std::size_t nbytes) {
  std::string location;
  std::int64_t offset = 0, length = -1;
  for (const auto& entry : proto.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception&) {
      throw std::invalid_argument("external data entry '" + entry.key() + "' is not a number: '" +
                                  entry.value() + "'");
    }
  }
  if (location.empty()) throw std::invalid_argument("external data without a location");
  namespace fs = std::filesystem;
  fs::path path(location);
  if (path.is_absolute() || location.find("..") != std::string::npos)
    throw std::invalid_argument("external data location '" + location +
                                "' leaves the model's directory");
  if (baseDir.empty())
    throw std::invalid_argument("the tensor's data is in the external file '" + location +
                                "', but the model was not read from a file");
  fs::path full = fs::path(baseDir) / path;
  std::ifstream in(full, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open the external data file " + full.string());
  if (length >= 0 && static_cast<std::size_t>(length) != nbytes)
    throw std::invalid_argument("external data length " + std::to_string(length) +
                                " does not match the " + std::to_string(nbytes) +
                                " bytes the shape needs");
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::int64_t>(in.tellg());
  if (offset < 0 || offset + static_cast<std::int64_t>(nbytes) > size)
    throw std::invalid_argument("external data file " + full.string() + " has " +
                                std::to_string(size) + " bytes, fewer than offset " +
                                std::to_string(offset) + " + " + std::to_string(nbytes));
  std::string bytes(nbytes, '\0');
  in.seekg(offset);
  in.read(bytes.data(), static_cast<std::streamsize>(nbytes));
  return bytes;
}

template <class Field>
void checkCount(const Field& field, std::size_t numel, const char* name) {
  if (static_cast<std::size_t>(field.size()) != numel)
    throw std::invalid_argument(std::string(name) + " holds " + std::to_string(field.size()) +
                                " values, the shape needs " + std::to_string(numel));
}

}  // namespace

std::optional<DType> dtypeFromOnnx(int onnxType) {
  switch (onnxType) {
    case TP::FLOAT:
      return DType::Float32;
    case TP::DOUBLE:
      return DType::Float64;
    case TP::FLOAT16:
      return DType::Float16;
    case TP::INT8:
      return DType::Int8;
    case TP::INT16:
      return DType::Int16;
    case TP::INT32:
      return DType::Int32;
    case TP::INT64:
      return DType::Int64;
    case TP::UINT8:
      return DType::UInt8;
    case TP::UINT16:
      return DType::UInt16;
    case TP::UINT32:
      return DType::UInt32;
    case TP::UINT64:
      return DType::UInt64;
    case TP::BOOL:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

int dtypeToOnnx(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return TP::FLOAT;
    case DType::Float64:
      return TP::DOUBLE;
    case DType::Float16:
      return TP::FLOAT16;
    case DType::Int8:
      return TP::INT8;
    case DType::Int16:
      return TP::INT16;
    case DType::Int32:
      return TP::INT32;
    case DType::Int64:
      return TP::INT64;
    case DType::UInt8:
      return TP::UINT8;
    case DType::UInt16:
      return TP::UINT16;
    case DType::UInt32:
      return TP::UINT32;
    case DType::UInt64:
      return TP::UINT64;
    case DType::Bool:
      return TP::BOOL;
  }
  return TP::UNDEFINED;
}

std::string onnxTypeName(int onnxType) {
  if (TP::DataType_IsValid(onnxType)) return TP::DataType_Name(static_cast<TP::DataType>(onnxType));
  return "element type " + std::to_string(onnxType);
}

Tensor tensorFromOnnx(const TP& proto, const std::string& baseDir) {
  std::optional<DType> dtype = dtypeFromOnnx(proto.data_type());
  if (!dtype)
    throw std::invalid_argument("element type " + onnxTypeName(proto.data_type()) +
                                " is not supported");
  if (proto.has_segment()) throw std::invalid_argument("segmented tensors are not supported");
  std::vector<std::int64_t> shape(proto.dims().begin(), proto.dims().end());
  const std::size_t numel = checkedNumel(shape);
  const std::size_t nbytes = numel * dtypeSize(*dtype);
  auto fromBytes = [&](const std::string& raw) {
    if (raw.size() != nbytes)
      throw std::invalid_argument("raw_data has " + std::to_string(raw.size()) +
                                  " bytes, the shape " + "and element type need " +
                                  std::to_string(nbytes));
    return Tensor::fromBytes(*dtype, shape,
                             std::span(reinterpret_cast<const std::byte*>(raw.data()), raw.size()));
  };
  if (proto.data_location() == TP::EXTERNAL) return fromBytes(readExternal(proto, baseDir, nbytes));
  if (proto.has_raw_data()) return fromBytes(proto.raw_data());
  // Count the typed values before allocating: a bogus shape must not allocate gigabytes.
  switch (proto.data_type()) {
    case TP::FLOAT:
      checkCount(proto.float_data(), numel, "float_data");
      break;
    case TP::DOUBLE:
      checkCount(proto.double_data(), numel, "double_data");
      break;
    case TP::INT64:
      checkCount(proto.int64_data(), numel, "int64_data");
      break;
    case TP::UINT32:  // ONNX keeps uint32 and uint64 values in uint64_data
    case TP::UINT64:
      checkCount(proto.uint64_data(), numel, "uint64_data");
      break;
    default:
      checkCount(proto.int32_data(), numel, "int32_data");
  }
  Tensor t(*dtype, shape);
  // An empty repeated field's data() is null, and memcpy from null is undefined even for 0 bytes.
  if (nbytes == 0) return t;
  switch (proto.data_type()) {
    case TP::FLOAT:
      std::memcpy(t.rawData(), proto.float_data().data(), nbytes);
      break;
    case TP::DOUBLE:
      std::memcpy(t.rawData(), proto.double_data().data(), nbytes);
      break;
    case TP::INT64:
      std::memcpy(t.rawData(), proto.int64_data().data(), nbytes);
      break;
    case TP::INT32:
      std::memcpy(t.rawData(), proto.int32_data().data(), nbytes);
      break;
    case TP::UINT64:
      std::memcpy(t.rawData(), proto.uint64_data().data(), nbytes);
      break;
    case TP::UINT32: {
      auto* out = static_cast<std::uint32_t*>(t.rawData());
      for (std::size_t i = 0; i < numel; ++i)
        out[i] = static_cast<std::uint32_t>(proto.uint64_data(static_cast<int>(i)));
      break;
    }
    default: {  // int8, int16, uint8, uint16, bool, float16 (its bits): one int32 per element
      auto* out = static_cast<std::byte*>(t.rawData());
      const std::size_t item = dtypeSize(*dtype);
      for (std::size_t i = 0; i < numel; ++i) {
        std::int32_t v = proto.int32_data(static_cast<int>(i));
        if (item == 1) {
          auto b = static_cast<std::uint8_t>(v);
          std::memcpy(out + i, &b, 1);
        } else {
          auto h = static_cast<std::uint16_t>(v);
          std::memcpy(out + 2 * i, &h, 2);
        }
      }
    }
  }
  return t;
}

std::optional<TensorType> typeFromOnnx(const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return std::nullopt;
  const auto& tensor = type.tensor_type();
  std::optional<DType> dtype = dtypeFromOnnx(tensor.elem_type());
  if (!dtype || !tensor.has_shape()) return std::nullopt;
  std::vector<std::int64_t> dims;
  for (const auto& d : tensor.shape().dim())
    dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : kUnknownDim);
  return TensorType(*dtype, std::move(dims));
}

}  // namespace tscope::engine::io::onnx_import
