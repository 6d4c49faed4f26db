#pragma once
// Tensor: a runtime n-d array. dtype, shape, strides (in elements), an offset (in elements) into a
// shared Storage. Views (transpose, slice, reshape of contiguous data, broadcast) share storage;
// clone() and astype() copy.

#include "engine/tensor/dtype.h"

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tscope::engine {

using Shape = std::vector<std::int64_t>;
using Strides = std::vector<std::int64_t>;

// Note [Storage is raw bytes]: a Storage holds bytes on one device; tensors interpret them through
// their dtype, shape, strides and offset. Several tensors may share one Storage (views).
class Storage {
 public:
  Storage(std::size_t nbytes, Device device = Device::Cpu);  // zero-filled on the CPU
  // Uninitialised memory, for outputs a kernel overwrites completely.
  struct Uninitialized {};
  Storage(std::size_t nbytes, Uninitialized);
  // Bytes owned elsewhere, such as a private memory map of a .tsg file's tensor section: `owner`
  // keeps them valid for this Storage's life and nothing is freed here. The bytes must stay
  // readable up to nbytes rounded up to kStorageAlignment (64), as vector kernels read whole lanes.
  struct External {};
  Storage(std::byte* data, std::size_t nbytes, std::shared_ptr<const void> owner, External);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::byte* data() { return m_data; }
  const std::byte* data() const { return m_data; }
  std::size_t nbytes() const { return m_nbytes; }
  Device device() const { return m_device; }
  // True for bytes owned elsewhere (the External constructor).
  bool external() const { return m_owner != nullptr; }

 private:
  std::shared_ptr<const void> m_owner;
  std::byte* m_data = nullptr;
  std::size_t m_nbytes = 0;
  Device m_device = Device::Cpu;
};

// Number of elements of a shape; throws std::invalid_argument on a negative dim or on overflow.
std::int64_t shapeNumel(std::span<const std::int64_t> shape);
// Row-major (C order) strides in elements.
Strides contiguousStrides(std::span<const std::int64_t> shape);
// "(2, 3)"; "()" for a scalar.
std::string shapeToString(std::span<const std::int64_t> shape);

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  // A contiguous zero-filled tensor.
  Tensor(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape) { return Tensor(dtype, std::move(shape)); }
  // A contiguous tensor whose elements are uninitialised (the caller writes every one).
  static Tensor empty(DType dtype, Shape shape);
  static Tensor full(DType dtype, Shape shape, double value);
  // From host values converted to dtype; values.size() must equal the shape's element count.
  static Tensor fromDoubles(DType dtype, Shape shape, std::span<const double> values);
  static Tensor fromDoubles(DType dtype, Shape shape, std::initializer_list<double> values);
  static Tensor scalar(DType dtype, double value);
  // Wraps raw little-endian bytes in a new contiguous tensor (copies them). Throws when the byte
  // count does not match dtype and shape.
  static Tensor fromBytes(DType dtype, Shape shape, std::span<const std::byte> bytes);
  // A tensor over existing storage (no copy); checks that every element lies inside the storage.
  Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Strides strides,
         std::int64_t offset);

  bool defined() const { return m_storage != nullptr; }
  DType dtype() const { return m_dtype; }
  const Shape& shape() const { return m_shape; }
  const Strides& strides() const { return m_strides; }
  std::int64_t offset() const { return m_offset; }
  int ndim() const { return static_cast<int>(m_shape.size()); }
  std::int64_t numel() const;
  std::size_t itemSize() const { return dtypeSize(m_dtype); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * itemSize(); }
  Device device() const;
  bool isContiguous() const;
  const std::shared_ptr<Storage>& storage() const { return m_storage; }
  bool sharesStorageWith(const Tensor& other) const;

  // Pointer to the first element (storage + offset).
  void* rawData();
  const void* rawData() const;
  // Typed pointer to the first element; throws when T does not match dtype
  // (bool <-> bool, std::int8_t.., std::uint8_t.., Half, float, double).
  template <class T>
  T* data();
  template <class T>
  const T* data() const;

  // Element access converting to/from double (for tests, printing, statistics; not hot paths).
  double at(std::span<const std::int64_t> index) const;
  double at(std::initializer_list<std::int64_t> index) const {
    return at(std::span(index.begin(), index.size()));
  }
  void set(std::span<const std::int64_t> index, double value);
  void set(std::initializer_list<std::int64_t> index, double value) {
    set(std::span(index.begin(), index.size()), value);
  }
  // All elements in row-major order, converted to double.
  std::vector<double> toDoubles() const;
  // The single element of a tensor with numel() == 1.
  double item() const;

  // Views: share storage, no copy.
  Tensor view(Shape shape, Strides strides, std::int64_t offset) const;  // bounds-checked
  Tensor transpose(std::span<const int> perm) const;                     // perm of 0..ndim-1
  Tensor transpose() const;                                              // reverse the axes
  Tensor slice(int axis, std::int64_t start, std::int64_t stop,
               std::int64_t step = 1) const;          // numpy semantics, negative indices allowed
  Tensor select(int axis, std::int64_t index) const;  // drops the axis
  Tensor broadcastTo(const Shape& shape) const;       // numpy rules; stride 0 on broadcast dims
  Tensor expandDims(int axis) const;
  Tensor squeeze(int axis) const;  // the axis must have size 1
  // A view when the data is contiguous, else a contiguous copy. One dim may be -1.
  Tensor reshape(Shape shape) const;

  // Copies.
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;       // always a new contiguous storage
  Tensor astype(DType dtype) const;
  // Copies src into *this elementwise (shapes must be equal; dtypes may differ and are converted).
  void copyFrom(const Tensor& src);

  // Same dtype, same shape and the same bytes for every element (NaN payloads included).
  bool bitwiseEqual(const Tensor& other) const;
  // Same shape; |a-b| <= atol + rtol*|b| elementwise; NaN equals NaN.
  bool allClose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8) const;

  // The row-major bytes of the elements (contiguous copy, little-endian on this platform).
  std::vector<std::byte> toBytes() const;

  // numpy-like text: "[[1, 2],\n [3, 4]]" with at most maxElements shown per axis end ("...").
  std::string toString(int edgeItems = 3) const;

 private:
  std::shared_ptr<Storage> m_storage;
  DType m_dtype = DType::Float32;
  Shape m_shape;
  Strides m_strides;
  std::int64_t m_offset = 0;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// For kernels: makes *out a contiguous tensor of this dtype and shape whose elements the caller
// will overwrite. Keeps the buffer *out already holds when it fits (same dtype and shape,
// contiguous from its storage's start, and no other tensor shares the storage); otherwise
// allocates. Returns *out.
Tensor& reuseOrAllocate(Tensor* out, DType dtype, std::span<const std::int64_t> shape);

// Calls f with a value of the C++ element type of dtype, as a type tag: f(float{}) for Float32,
// f(Half{}) for Float16, f(bool{}) for Bool, ...
template <class F>
decltype(auto) dispatchDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Bool:
      return f(bool{});
    case DType::Int8:
      return f(std::int8_t{});
    case DType::Int16:
      return f(std::int16_t{});
    case DType::Int32:
      return f(std::int32_t{});
    case DType::Int64:
      return f(std::int64_t{});
    case DType::UInt8:
      return f(std::uint8_t{});
    case DType::UInt16:
      return f(std::uint16_t{});
    case DType::UInt32:
      return f(std::uint32_t{});
    case DType::UInt64:
      return f(std::uint64_t{});
    case DType::Float16:
      return f(Half{});
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      break;
  }
  return f(double{});
}

}  // namespace tscope::engine
