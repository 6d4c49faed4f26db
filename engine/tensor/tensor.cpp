#include "engine/tensor/tensor.h"

#include "engine/tensor/alloc_hook.h"
#include "engine/tensor/big_block_cache.h"
#include "engine/tensor/device_memory.h"
#include "engine/tensor/tensor_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tscope::engine {

namespace {

constexpr std::size_t kStorageAlignment = 64;

// Note [Huge pages for big tensors]: a fresh buffer costs a page fault per 4 KiB page on its first
// write (a 40 MB output: 10,000 faults, about two thirds of an elementwise op on it). Buffers of
// 4 MiB and more are aligned to 2 MiB, rounded up to whole 2 MiB pages and marked for transparent
// huge pages (MADV_HUGEPAGE, honoured where THP is "madvise" or "always"), so the kernel maps
// them 2 MiB at a time. The rounding wastes at most a third of such a buffer; elsewhere, or when
// the advice is refused, they are ordinary pages.
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kHugeThreshold = std::size_t{4} << 20;

// n rounded up to a multiple of `alignment`, and never zero (aligned_alloc needs both).
std::size_t roundUp(std::size_t n, std::size_t alignment) {
  return std::max(alignment, (n + alignment - 1) / alignment * alignment);
}

std::byte* allocateStorage(std::size_t nbytes) {
  if (nbytes > std::numeric_limits<std::size_t>::max() - kHugePage) throw std::bad_alloc();
  const bool huge = nbytes >= kHugeThreshold;
  const std::size_t alignment = huge ? kHugePage : kStorageAlignment;
  const std::size_t rounded = roundUp(nbytes, alignment);
  if (huge)  // Note [Big block cache]: a block of this size freed recently, its pages still mapped
    if (std::byte* reused = BigBlockCache::process().take(rounded)) return reused;
  auto* data = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
  if (data == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge)
    (void)::madvise(data, rounded, MADV_HUGEPAGE);  // advice only: ignored where unsupported
#endif
  return data;
}

// Gives back what allocateStorage(nbytes) returned: big blocks to the cache that allocateStorage
// takes them from.
void releaseStorage(std::byte* data, std::size_t nbytes) {
  if (nbytes >= kHugeThreshold)
    BigBlockCache::process().give(data, roundUp(nbytes, kHugePage));
  else
    std::free(data);
}

// ---------------------------------------------------------------------------------------------
// Element types and conversions

template <class T>
constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return DType::Int8;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return DType::Int16;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::Int64;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return DType::UInt8;
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return DType::UInt16;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return DType::UInt32;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return DType::UInt64;
  else if constexpr (std::is_same_v<T, Half>)
    return DType::Float16;
  else if constexpr (std::is_same_v<T, float>)
    return DType::Float32;
  else {
    static_assert(std::is_same_v<T, double>, "not an element type of Tensor");
    return DType::Float64;
  }
}

// The numpy-astype conversions live in tensor_internal.h; tensor_print.cpp uses them too.
using detail::convertValue;
using detail::fromDouble;
using detail::toDouble;

// ---------------------------------------------------------------------------------------------
// Strided walking

// Calls body(a, b) for every index of shape in row-major order, where a and b are the element
// offsets of that index under strides sa and sb. The innermost axis is a plain loop, so the body
// inlines into it; there is no per-element indirection.
template <class Body>
void walk2(const Shape& shape, const Strides& sa, const Strides& sb, Body&& body) {
  const int nd = static_cast<int>(shape.size());
  if (nd == 0) {
    body(std::int64_t{0}, std::int64_t{0});
    return;
  }
  for (std::int64_t d : shape)
    if (d == 0) return;
  const std::int64_t inner = shape[nd - 1], ia = sa[nd - 1], ib = sb[nd - 1];
  std::vector<std::int64_t> counter(nd - 1, 0);
  std::int64_t a = 0, b = 0;
  while (true) {
    for (std::int64_t i = 0; i < inner; ++i) body(a + i * ia, b + i * ib);
    int d = nd - 2;
    for (; d >= 0; --d) {
      if (++counter[d] < shape[d]) {
        a += sa[d];
        b += sb[d];
        break;
      }
      a -= sa[d] * (shape[d] - 1);
      b -= sb[d] * (shape[d] - 1);
      counter[d] = 0;
    }
    if (d < 0) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Messages

std::string describe(const Tensor& t) {
  return std::string(dtypeName(t.dtype())) + " " + shapeToString(t.shape());
}

void requireDefined(const Tensor& t, const char* where) {
  if (!t.defined())
    throw std::invalid_argument(std::string(where) +
                                ": expected a defined tensor, found an undefined (default) one");
}

// Note [Device tensors] (device_memory.h): the host may not dereference device addresses.
void requireHost(const Tensor& t, const char* where) {
  requireDefined(t, where);
  if (t.device() != Device::Cpu)
    throw std::logic_error(std::string(where) + ": expected a CPU tensor, found one on " +
                           std::string(deviceName(t.device())) +
                           " (copy it to the host first: toHost in engine/tensor/device_memory.h)");
}

int normalizeAxis(int axis, int ndim, const Shape& shape, const char* where) {
  if (axis < -ndim || axis >= ndim)
    throw std::out_of_range(std::string(where) + ": axis " + std::to_string(axis) +
                            " is out of range for shape " + shapeToString(shape) + " (expected " +
                            std::to_string(-ndim) + ".." + std::to_string(ndim - 1) + ")");
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace

// =============================================================================================
// Storage

Storage::Storage(std::size_t nbytes, Device device) : m_nbytes(nbytes), m_device(device) {
  if (device != Device::Cpu) {
    // Note [Device tensors] (device_memory.h): the backend's block, held by m_owner; its bytes
    // are not zero-filled (a device kernel writes them) and the host hook does not count them.
    DeviceMemory* memory = deviceMemory(device);
    if (memory == nullptr)
      throw std::runtime_error("Storage: expected a CPU allocation, found a request for " +
                               std::string(deviceName(device)) +
                               " memory with no device memory registered; the CUDA backend "
                               "allocates device storage (registerCudaBackend)");
    std::shared_ptr<void> block = memory->allocate(nbytes);
    m_data = static_cast<std::byte*>(block.get());
    m_owner = std::move(block);
    return;
  }
  m_data = allocateStorage(nbytes);
  // Zeroed up to the alignment, as kernels that read whole vectors may look past the end.
  std::memset(m_data, 0, roundUp(nbytes, kStorageAlignment));
  noteAllocated(nbytes);  // Note [What the hook counts] in alloc_hook.h
}

Storage::~Storage() {
  if (m_owner) return;  // External: the owner frees the bytes
  releaseStorage(m_data, m_nbytes);
  noteFreed(m_nbytes);
}

// =============================================================================================
// Shapes

std::int64_t shapeNumel(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0)
      throw std::invalid_argument("shapeNumel: expected non-negative dims, found " +
                                  shapeToString(shape));
    if (__builtin_mul_overflow(n, d, &n))
      throw std::invalid_argument("shapeNumel: the element count of " + shapeToString(shape) +
                                  " overflows int64");
  }
  return n;
}

Strides contiguousStrides(std::span<const std::int64_t> shape) {
  Strides strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    // Saturate: the product only overflows when another axis has size 0 (the tensor is empty and
    // its strides are never followed) or when shapeNumel refuses the shape anyway.
    if (__builtin_mul_overflow(stride, std::max<std::int64_t>(shape[i], 1), &stride))
      stride = std::numeric_limits<std::int64_t>::max();
  }
  return strides;
}

std::string shapeToString(std::span<const std::int64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";  // numpy's one-tuple; "(3,)" is unambiguous in messages
  return s + ")";
}

// =============================================================================================
// Construction

Storage::Storage(std::size_t nbytes, Uninitialized) : m_nbytes(nbytes), m_device(Device::Cpu) {
  m_data = allocateStorage(nbytes);
  noteAllocated(nbytes);
}

Storage::Storage(std::byte* data, std::size_t nbytes, std::shared_ptr<const void> owner, External)
    : m_owner(std::move(owner)), m_data(data), m_nbytes(nbytes), m_device(Device::Cpu) {
  if (!m_owner)
    throw std::invalid_argument("Storage: expected an owner for external bytes, found none");
  if (reinterpret_cast<std::uintptr_t>(data) % kStorageAlignment != 0)
    throw std::invalid_argument(
        "Storage: expected external bytes aligned to " + std::to_string(kStorageAlignment) +
        ", found an address " +
        std::to_string(reinterpret_cast<std::uintptr_t>(data) % kStorageAlignment) +
        " bytes past a boundary");
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  const std::int64_t n = shapeNumel(shape);
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<std::int64_t>(dtypeSize(dtype)), &bytes))
    throw std::invalid_argument("Tensor: the byte size of a " + std::string(dtypeName(dtype)) +
                                " tensor of shape " + shapeToString(shape) + " overflows int64");
  auto storage =
      std::make_shared<Storage>(static_cast<std::size_t>(bytes), Storage::Uninitialized{});
  Strides strides = contiguousStrides(shape);
  Tensor t;
  t.m_storage = std::move(storage);
  t.m_dtype = dtype;
  t.m_shape = std::move(shape);
  t.m_strides = std::move(strides);
  return t;
}

Tensor& reuseOrAllocate(Tensor* out, DType dtype, std::span<const std::int64_t> shape) {
  if (out->defined() && out->dtype() == dtype && out->offset() == 0 &&
      out->storage().use_count() == 1 &&
      std::equal(out->shape().begin(), out->shape().end(), shape.begin(), shape.end()) &&
      out->isContiguous() && out->device() == Device::Cpu)
    return *out;
  *out = Tensor::empty(dtype, Shape(shape.begin(), shape.end()));
  return *out;
}

Tensor::Tensor(DType dtype, Shape shape)
    : m_dtype(dtype), m_shape(std::move(shape)), m_strides(contiguousStrides(m_shape)) {
  const std::int64_t n = shapeNumel(m_shape);
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<std::int64_t>(dtypeSize(dtype)), &bytes))
    throw std::invalid_argument("Tensor: the byte size of a " + std::string(dtypeName(dtype)) +
                                " tensor of shape " + shapeToString(m_shape) + " overflows int64");
  m_storage = std::make_shared<Storage>(static_cast<std::size_t>(bytes));
}

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Strides strides,
               std::int64_t offset)
    : m_storage(std::move(storage)),
      m_dtype(dtype),
      m_shape(std::move(shape)),
      m_strides(std::move(strides)),
      m_offset(offset) {
  if (m_storage == nullptr) throw std::invalid_argument("Tensor: expected a storage, found null");
  if (m_strides.size() != m_shape.size())
    throw std::invalid_argument("Tensor: expected " + std::to_string(m_shape.size()) +
                                " strides for shape " + shapeToString(m_shape) + ", found " +
                                shapeToString(m_strides));
  const std::int64_t n = shapeNumel(m_shape);
  if (m_offset < 0)
    throw std::out_of_range("Tensor: expected a non-negative offset, found " +
                            std::to_string(m_offset));
  if (n == 0) return;
  // The lowest and highest element offsets the view reaches must lie inside the storage.
  std::int64_t lo = m_offset, hi = m_offset;
  bool overflow = false;
  for (std::size_t i = 0; i < m_shape.size(); ++i) {
    std::int64_t reach = 0;
    overflow |= __builtin_mul_overflow(m_shape[i] - 1, m_strides[i], &reach);
    overflow |= __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi);
  }
  const auto elements = static_cast<std::int64_t>(m_storage->nbytes() / dtypeSize(dtype));
  if (overflow || lo < 0 || hi >= elements)
    throw std::out_of_range("Tensor: a view of shape " + shapeToString(m_shape) + ", strides " +
                            shapeToString(m_strides) + " and offset " + std::to_string(m_offset) +
                            " reaches elements " + std::to_string(lo) + ".." + std::to_string(hi) +
                            " but the storage holds " + std::to_string(elements) + " " +
                            std::string(dtypeName(dtype)) + " elements");
}

Tensor Tensor::full(DType dtype, Shape shape, double value) {
  Tensor t(dtype, std::move(shape));
  dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(t.data<T>(), t.numel(), fromDouble<T>(value));
  });
  return t;
}

Tensor Tensor::fromDoubles(DType dtype, Shape shape, std::span<const double> values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    throw std::invalid_argument("Tensor::fromDoubles: shape " + shapeToString(t.shape()) +
                                " needs " + std::to_string(t.numel()) + " values, found " +
                                std::to_string(values.size()));
  dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = fromDouble<T>(values[i]);
  });
  return t;
}

Tensor Tensor::fromDoubles(DType dtype, Shape shape, std::initializer_list<double> values) {
  return fromDoubles(dtype, std::move(shape), std::span(values.begin(), values.size()));
}

Tensor Tensor::scalar(DType dtype, double value) {
  return full(dtype, {}, value);
}

Tensor Tensor::fromBytes(DType dtype, Shape shape, std::span<const std::byte> bytes) {
  Tensor t(dtype, std::move(shape));
  if (bytes.size() != t.nbytes())
    throw std::invalid_argument("Tensor::fromBytes: " + describe(t) + " needs " +
                                std::to_string(t.nbytes()) + " bytes, found " +
                                std::to_string(bytes.size()));
  if (!bytes.empty()) std::memcpy(t.rawData(), bytes.data(), bytes.size());
  return t;
}

// =============================================================================================
// Properties and element access

std::int64_t Tensor::numel() const {
  return defined() ? shapeNumel(m_shape) : 0;
}

Device Tensor::device() const {
  return m_storage ? m_storage->device() : Device::Cpu;
}

bool Tensor::isContiguous() const {
  if (numel() == 0) return true;
  std::int64_t expected = 1;
  for (std::size_t i = m_shape.size(); i-- > 0;) {
    if (m_shape[i] == 1) continue;  // the stride of a size-1 axis is never used
    if (m_strides[i] != expected) return false;
    expected *= m_shape[i];
  }
  return true;
}

bool Tensor::sharesStorageWith(const Tensor& other) const {
  return defined() && m_storage == other.m_storage;
}

void* Tensor::rawData() {
  requireDefined(*this, "Tensor::rawData");
  return m_storage->data() + m_offset * static_cast<std::int64_t>(itemSize());
}

const void* Tensor::rawData() const {
  requireDefined(*this, "Tensor::rawData");
  return m_storage->data() + m_offset * static_cast<std::int64_t>(itemSize());
}

template <class T>
T* Tensor::data() {
  return const_cast<T*>(std::as_const(*this).data<T>());
}

template <class T>
const T* Tensor::data() const {
  requireDefined(*this, "Tensor::data");
  if (m_dtype != dtypeOf<T>())
    throw std::invalid_argument("Tensor::data: expected the element type " +
                                std::string(dtypeName(dtypeOf<T>())) + ", found a " +
                                describe(*this) + " tensor");
  return static_cast<const T*>(rawData());
}

#define TSCOPE_INSTANTIATE_DATA(T) \
  template T* Tensor::data<T>();   \
  template const T* Tensor::data<T>() const;
TSCOPE_INSTANTIATE_DATA(bool)
TSCOPE_INSTANTIATE_DATA(std::int8_t)
TSCOPE_INSTANTIATE_DATA(std::int16_t)
TSCOPE_INSTANTIATE_DATA(std::int32_t)
TSCOPE_INSTANTIATE_DATA(std::int64_t)
TSCOPE_INSTANTIATE_DATA(std::uint8_t)
TSCOPE_INSTANTIATE_DATA(std::uint16_t)
TSCOPE_INSTANTIATE_DATA(std::uint32_t)
TSCOPE_INSTANTIATE_DATA(std::uint64_t)
TSCOPE_INSTANTIATE_DATA(Half)
TSCOPE_INSTANTIATE_DATA(float)
TSCOPE_INSTANTIATE_DATA(double)
#undef TSCOPE_INSTANTIATE_DATA

namespace {

// The storage element offset of index in t; negative indices count from the end as in numpy.
std::int64_t elementOffset(const Tensor& t, std::span<const std::int64_t> index,
                           const char* where) {
  requireHost(t, where);
  if (static_cast<int>(index.size()) != t.ndim())
    throw std::out_of_range(std::string(where) + ": expected " + std::to_string(t.ndim()) +
                            " indices for shape " + shapeToString(t.shape()) + ", found " +
                            shapeToString(index));
  std::int64_t offset = t.offset();
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::int64_t n = t.shape()[i];
    const std::int64_t k = index[i] < 0 ? index[i] + n : index[i];
    if (k < 0 || k >= n)
      throw std::out_of_range(std::string(where) + ": index " + shapeToString(index) +
                              " is out of range for shape " + shapeToString(t.shape()));
    offset += k * t.strides()[i];
  }
  return offset;
}

}  // namespace

double Tensor::at(std::span<const std::int64_t> index) const {
  const std::int64_t offset = elementOffset(*this, index, "Tensor::at");
  return dispatchDType(m_dtype, [&](auto tag) {
    using T = decltype(tag);
    return toDouble(reinterpret_cast<const T*>(m_storage->data())[offset]);
  });
}

void Tensor::set(std::span<const std::int64_t> index, double value) {
  const std::int64_t offset = elementOffset(*this, index, "Tensor::set");
  dispatchDType(m_dtype, [&](auto tag) {
    using T = decltype(tag);
    reinterpret_cast<T*>(m_storage->data())[offset] = fromDouble<T>(value);
  });
}

std::vector<double> Tensor::toDoubles() const {
  requireHost(*this, "Tensor::toDoubles");
  std::vector<double> out(static_cast<std::size_t>(numel()));
  const Strides rowMajor = contiguousStrides(m_shape);
  dispatchDType(m_dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* base = reinterpret_cast<const T*>(m_storage->data());
    walk2(m_shape, m_strides, rowMajor,
          [&](std::int64_t a, std::int64_t b) { out[b] = toDouble(base[m_offset + a]); });
  });
  return out;
}

double Tensor::item() const {
  requireDefined(*this, "Tensor::item");
  if (numel() != 1)
    throw std::invalid_argument("Tensor::item: expected exactly one element, found shape " +
                                shapeToString(m_shape) + " (" + std::to_string(numel()) +
                                " elements)");
  const std::vector<std::int64_t> zeros(m_shape.size(), 0);
  return at(zeros);
}

// =============================================================================================
// Views

Tensor Tensor::view(Shape shape, Strides strides, std::int64_t offset) const {
  requireDefined(*this, "Tensor::view");
  return Tensor(m_storage, m_dtype, std::move(shape), std::move(strides), offset);
}

Tensor Tensor::transpose(std::span<const int> perm) const {
  requireDefined(*this, "Tensor::transpose");
  const int nd = ndim();
  std::vector<bool> seen(nd, false);
  bool valid = static_cast<int>(perm.size()) == nd;
  for (std::size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && perm[i] < nd && !seen[perm[i]];
    if (valid) seen[perm[i]] = true;
  }
  if (!valid) {
    const Shape permShape(perm.begin(), perm.end());
    throw std::invalid_argument("Tensor::transpose: expected a permutation of 0.." +
                                std::to_string(nd - 1) + " for shape " + shapeToString(m_shape) +
                                ", found " + shapeToString(permShape));
  }
  Shape shape(nd);
  Strides strides(nd);
  for (int i = 0; i < nd; ++i) {
    shape[i] = m_shape[perm[i]];
    strides[i] = m_strides[perm[i]];
  }
  return Tensor(m_storage, m_dtype, std::move(shape), std::move(strides), m_offset);
}

Tensor Tensor::transpose() const {
  std::vector<int> perm(ndim());
  for (int i = 0; i < ndim(); ++i) perm[i] = ndim() - 1 - i;
  return transpose(perm);
}

Tensor Tensor::slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  requireDefined(*this, "Tensor::slice");
  axis = normalizeAxis(axis, ndim(), m_shape, "Tensor::slice");
  if (step == 0) throw std::invalid_argument("Tensor::slice: expected a non-zero step, found 0");
  // Python's slice.indices(): numpy's [::-1] is slice(axis, INT64_MAX, INT64_MIN, -1).
  const std::int64_t n = m_shape[axis];
  auto clamp = [&](std::int64_t i) {
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  start = clamp(start);
  stop = clamp(stop);
  std::int64_t count = 0;
  if (step > 0 && start < stop) count = (stop - start - 1) / step + 1;
  if (step < 0 && stop < start) count = (start - stop - 1) / -step + 1;
  Shape shape = m_shape;
  Strides strides = m_strides;
  shape[axis] = count;
  strides[axis] = m_strides[axis] * step;
  const std::int64_t offset = count > 0 ? m_offset + start * m_strides[axis] : m_offset;
  return Tensor(m_storage, m_dtype, std::move(shape), std::move(strides), offset);
}

Tensor Tensor::select(int axis, std::int64_t index) const {
  requireDefined(*this, "Tensor::select");
  axis = normalizeAxis(axis, ndim(), m_shape, "Tensor::select");
  const std::int64_t n = m_shape[axis];
  const std::int64_t k = index < 0 ? index + n : index;
  if (k < 0 || k >= n)
    throw std::out_of_range("Tensor::select: index " + std::to_string(index) +
                            " is out of range for axis " + std::to_string(axis) + " of shape " +
                            shapeToString(m_shape));
  Shape shape = m_shape;
  Strides strides = m_strides;
  shape.erase(shape.begin() + axis);
  strides.erase(strides.begin() + axis);
  return Tensor(m_storage, m_dtype, std::move(shape), std::move(strides),
                m_offset + k * m_strides[axis]);
}

Tensor Tensor::broadcastTo(const Shape& shape) const {
  requireDefined(*this, "Tensor::broadcastTo");
  auto fail = [&] {
    return std::invalid_argument("Tensor::broadcastTo: cannot broadcast " + shapeToString(m_shape) +
                                 " to " + shapeToString(shape));
  };
  const int nd = static_cast<int>(shape.size());
  if (nd < ndim()) throw fail();
  shapeNumel(shape);  // rejects negative dims
  Strides strides(nd, 0);
  const int lead = nd - ndim();
  for (int i = 0; i < ndim(); ++i) {
    if (m_shape[i] == shape[lead + i])
      strides[lead + i] = m_strides[i];
    else if (m_shape[i] != 1)
      throw fail();
  }
  return Tensor(m_storage, m_dtype, shape, std::move(strides), m_offset);
}

Tensor Tensor::expandDims(int axis) const {
  requireDefined(*this, "Tensor::expandDims");
  axis = normalizeAxis(axis, ndim() + 1, m_shape, "Tensor::expandDims");
  Shape shape = m_shape;
  Strides strides = m_strides;
  // The stride of a size-1 axis is never used; this one keeps contiguous data's strides C-order.
  const std::int64_t stride = axis < ndim() ? m_strides[axis] * m_shape[axis] : 1;
  shape.insert(shape.begin() + axis, 1);
  strides.insert(strides.begin() + axis, stride);
  return Tensor(m_storage, m_dtype, std::move(shape), std::move(strides), m_offset);
}

Tensor Tensor::squeeze(int axis) const {
  requireDefined(*this, "Tensor::squeeze");
  axis = normalizeAxis(axis, ndim(), m_shape, "Tensor::squeeze");
  if (m_shape[axis] != 1)
    throw std::invalid_argument("Tensor::squeeze: expected axis " + std::to_string(axis) +
                                " of shape " + shapeToString(m_shape) + " to have size 1, found " +
                                std::to_string(m_shape[axis]));
  Shape shape = m_shape;
  Strides strides = m_strides;
  shape.erase(shape.begin() + axis);
  strides.erase(strides.begin() + axis);
  return Tensor(m_storage, m_dtype, std::move(shape), std::move(strides), m_offset);
}

Tensor Tensor::reshape(Shape shape) const {
  requireDefined(*this, "Tensor::reshape");
  const std::int64_t n = numel();
  const Shape requested = shape;
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("Tensor::reshape: cannot reshape " + shapeToString(m_shape) +
                                 " (" + std::to_string(n) + " elements) into " +
                                 shapeToString(requested) + why);
  };
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) throw fail(": at most one dim may be -1");
      inferred = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw fail(": dims must be non-negative or -1");
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      throw fail(": the element count overflows int64");
    }
  }
  if (inferred >= 0) {
    if (known == 0 || n % known != 0)
      throw fail(": " + std::to_string(n) + " elements do not divide into dims of " +
                 std::to_string(known) + " elements");
    shape[inferred] = n / known;
    known = n;
  }
  if (known != n) throw fail(" (" + std::to_string(known) + " elements)");
  if (!isContiguous()) return contiguous().reshape(std::move(shape));
  Strides strides = contiguousStrides(shape);
  return Tensor(m_storage, m_dtype, std::move(shape), std::move(strides), m_offset);
}

// =============================================================================================
// Copies

Tensor Tensor::contiguous() const {
  requireDefined(*this, "Tensor::contiguous");
  return isContiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  return astype(m_dtype);
}

Tensor Tensor::astype(DType dtype) const {
  requireHost(*this, "Tensor::astype");
  // copyFrom writes every element: no zero fill first (a clone is one pass over memory).
  Tensor out = Tensor::empty(dtype, m_shape);
  out.copyFrom(*this);
  return out;
}

void Tensor::copyFrom(const Tensor& src) {
  requireHost(*this, "Tensor::copyFrom (destination)");
  requireHost(src, "Tensor::copyFrom (source)");
  if (src.m_shape != m_shape)
    throw std::invalid_argument("Tensor::copyFrom: expected a source of shape " +
                                shapeToString(m_shape) + ", found " + shapeToString(src.m_shape));
  if (src.m_dtype == m_dtype && isContiguous() && src.isContiguous()) {
    if (nbytes() > 0) std::memmove(rawData(), src.rawData(), nbytes());
    return;
  }
  dispatchDType(m_dtype, [&](auto dstTag) {
    using D = decltype(dstTag);
    dispatchDType(src.m_dtype, [&](auto srcTag) {
      using S = decltype(srcTag);
      D* dst = reinterpret_cast<D*>(m_storage->data()) + m_offset;
      const S* from = reinterpret_cast<const S*>(src.m_storage->data()) + src.m_offset;
      walk2(m_shape, m_strides, src.m_strides,
            [&](std::int64_t a, std::int64_t b) { dst[a] = convertValue<D>(from[b]); });
    });
  });
}

bool Tensor::bitwiseEqual(const Tensor& other) const {
  if (!defined() || !other.defined()) return defined() == other.defined();
  if (m_dtype != other.m_dtype || m_shape != other.m_shape) return false;
  requireHost(*this, "Tensor::bitwiseEqual");
  requireHost(other, "Tensor::bitwiseEqual");
  bool equal = true;
  dispatchDType(m_dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* a = reinterpret_cast<const T*>(m_storage->data()) + m_offset;
    const T* b = reinterpret_cast<const T*>(other.m_storage->data()) + other.m_offset;
    walk2(m_shape, m_strides, other.m_strides, [&](std::int64_t i, std::int64_t j) {
      equal = equal && std::memcmp(a + i, b + j, sizeof(T)) == 0;
    });
  });
  return equal;
}

bool Tensor::allClose(const Tensor& other, double rtol, double atol) const {
  if (!defined() || !other.defined()) return defined() == other.defined();
  if (m_shape != other.m_shape) return false;
  const std::vector<double> a = toDoubles(), b = other.toDoubles();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return false;
    } else if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return false;
    } else if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]))) {
      return false;
    }
  }
  return true;
}

std::vector<std::byte> Tensor::toBytes() const {
  requireHost(*this, "Tensor::toBytes");
  const Tensor c = contiguous();
  const auto* begin = static_cast<const std::byte*>(c.rawData());
  return std::vector<std::byte>(begin, begin + c.nbytes());
}

}  // namespace tscope::engine
