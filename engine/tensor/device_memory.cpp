#include "engine/tensor/device_memory.h"

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>

namespace tscope::engine {

namespace {
// One slot per Device enumerator; Cpu's stays null (host memory needs no backend).
std::array<std::atomic<DeviceMemory*>, 2> g_memory{};

std::size_t slot(Device device) {
  return static_cast<std::size_t>(device);
}

// A view's elements lie in [offset + low, offset + high] of its storage, in elements (low <= 0
// with negative strides).
struct ElementRange {
  std::int64_t low = 0, high = -1;
};
ElementRange elementRange(const Tensor& t) {
  ElementRange r;
  if (t.numel() == 0) return r;
  r.high = 0;
  for (int i = 0; i < t.ndim(); ++i) {
    const std::int64_t reach = (t.shape()[i] - 1) * t.strides()[i];
    (reach < 0 ? r.low : r.high) += reach;
  }
  return r;
}
}  // namespace

void setDeviceMemory(Device device, DeviceMemory* memory) {
  g_memory[slot(device)].store(memory, std::memory_order_release);
}

DeviceMemory* deviceMemory(Device device) {
  return g_memory[slot(device)].load(std::memory_order_acquire);
}

DeviceMemory& requireDeviceMemory(Device device, std::string_view what) {
  DeviceMemory* memory = deviceMemory(device);
  if (memory == nullptr)
    throw std::runtime_error(std::string(what) + ": no memory is registered for " +
                             std::string(deviceName(device)) +
                             " (the backend is not built into this program, or it found no "
                             "device; see registerCudaBackend in engine/backends/cuda)");
  return *memory;
}

Tensor emptyOn(Device device, DType dtype, Shape shape) {
  if (device == Device::Cpu) return Tensor::empty(dtype, std::move(shape));
  const std::size_t nbytes = static_cast<std::size_t>(shapeNumel(shape)) * dtypeSize(dtype);
  requireDeviceMemory(device, "emptyOn");
  auto storage = std::make_shared<Storage>(nbytes, device);
  Strides strides = contiguousStrides(shape);
  return Tensor(std::move(storage), dtype, std::move(shape), std::move(strides), 0);
}

Tensor toDevice(const Tensor& t, Device device) {
  if (!t.defined())
    throw std::invalid_argument("toDevice: expected a defined tensor, found an undefined one");
  const Device from = t.device();
  if (from == device && t.isContiguous()) return t;
  if (from == Device::Cpu) {
    const Tensor host = t.contiguous();
    Tensor out = emptyOn(device, t.dtype(), t.shape());
    if (out.nbytes() > 0)
      requireDeviceMemory(device, "toDevice")
          .copy(out.rawData(), host.rawData(), out.nbytes(), DeviceMemory::Copy::HostToDevice);
    return out;
  }
  // From a device: bring the bytes the view covers to the host, then lay them out there.
  DeviceMemory& memory = requireDeviceMemory(from, "toHost");
  const ElementRange range = elementRange(t);
  const std::int64_t span = range.high - range.low + 1;
  Tensor block = Tensor::empty(t.dtype(), {span});
  if (span > 0)
    memory.copy(block.rawData(),
                static_cast<const std::byte*>(t.rawData()) + range.low * std::int64_t(t.itemSize()),
                static_cast<std::size_t>(span) * t.itemSize(), DeviceMemory::Copy::DeviceToHost);
  Tensor host = block.view(t.shape(), t.strides(), -range.low).contiguous();
  return device == Device::Cpu ? host : toDevice(host, device);
}

Tensor toHost(const Tensor& t) {
  return toDevice(t, Device::Cpu);
}

Tensor hostCopy(const Tensor& t) {
  if (!t.defined()) return Tensor();
  if (t.device() == Device::Cpu) return t.clone();
  return toHost(t);  // a new host tensor
}

Tensor cloneOnDevice(const Tensor& t) {
  if (!t.defined()) return Tensor();
  if (t.device() == Device::Cpu) return t.clone();
  if (!t.isContiguous()) return toDevice(toHost(t), t.device());
  Tensor out = emptyOn(t.device(), t.dtype(), t.shape());
  if (out.nbytes() > 0)
    requireDeviceMemory(t.device(), "cloneOnDevice")
        .copy(out.rawData(), t.rawData(), out.nbytes(), DeviceMemory::Copy::DeviceToDevice);
  return out;
}

void copyInto(Tensor& dst, const Tensor& src) {
  if (dst.device() == Device::Cpu && src.device() == Device::Cpu) {
    dst.copyFrom(src);
    return;
  }
  if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
    throw std::invalid_argument("copyInto: expected the same dtype and shape, found " +
                                dst.toString() + " and " + src.toString());
  if (!dst.isContiguous()) {
    if (dst.device() != Device::Cpu)
      throw std::invalid_argument("copyInto: the destination " + dst.toString() +
                                  " is a strided device view");
    dst.copyFrom(toHost(src));
    return;
  }
  const Tensor from = src.isContiguous()            ? src
                      : src.device() == Device::Cpu ? src.contiguous()
                                                    : cloneOnDevice(src);
  if (dst.nbytes() == 0) return;
  const DeviceMemory::Copy kind = from.device() == Device::Cpu ? DeviceMemory::Copy::HostToDevice
                                  : dst.device() == Device::Cpu
                                      ? DeviceMemory::Copy::DeviceToHost
                                      : DeviceMemory::Copy::DeviceToDevice;
  const Device device = from.device() == Device::Cpu ? dst.device() : from.device();
  requireDeviceMemory(device, "copyInto").copy(dst.rawData(), from.rawData(), dst.nbytes(), kind);
}

}  // namespace tscope::engine
