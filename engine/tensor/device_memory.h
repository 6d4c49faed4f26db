#pragma once
// Device memory for tensors: what a device backend (engine/backends/cuda) lends the tensor layer,
// so that a Tensor on the GPU is the same Tensor with another device tag, and copies between
// host and device are explicit calls.
//
//   Tensor x = Tensor::fromDoubles(DType::Float32, {2, 3}, {...});  // on the CPU
//   Tensor d = toDevice(x, Device::Cuda);   // a copy in device memory (throws without a backend)
//   Tensor h = toHost(d);                   // and back
//
// Note [Device tensors]: a device Storage (Storage(nbytes, Device::Cuda)) holds a device address
// from the registered DeviceMemory, and the handle that hands the block back to the backend's
// allocator when the Storage dies. The host never
// dereferences it: Tensor's element access, printing, comparisons and host copies throw for a
// device tensor, views (transpose, slice, broadcast, reshape of contiguous data) work as on the
// CPU, and every transfer goes through the DeviceMemory the backend registered, on the stream the
// backend runs kernels on. No CUDA type appears here: the backend implements the interface.

#include "engine/tensor/tensor.h"
// Tensor::device() says where the elements live. Element access, printing, comparisons and host
// copies (at, set, toDoubles, astype, clone, copyFrom, bitwiseEqual, toBytes) need the CPU and
// throw std::logic_error for a device tensor; toString prints "<(2, 3) float32 on cuda>".

#include <cstddef>
#include <memory>
#include <string_view>

namespace tscope::engine {

class DeviceMemory {
 public:
  enum class Copy { HostToDevice, DeviceToHost, DeviceToDevice };
  virtual ~DeviceMemory() = default;
  // nbytes of uninitialised device memory: get() is the device address; the deleter frees it.
  virtual std::shared_ptr<void> allocate(std::size_t nbytes) = 0;
  // Copies nbytes; returns when the bytes are at dst (a copy to the host is complete on return).
  virtual void copy(void* dst, const void* src, std::size_t nbytes, Copy kind) = 0;
  // Note [Device scans] (engine/debug/nan_scan.h): whether t, a tensor on this device, holds a NaN
  // or an infinity, and the largest |x| of its finite elements, computed where t lives so that
  // only the answer crosses to the host. False when this device cannot scan t (its dtype, no
  // kernel): the caller scans a host copy instead.
  struct Scan {
    bool nonFinite = false;
    double maxAbs = 0;
  };
  virtual bool scan(const Tensor& t, Scan& out) { return false; }
};

// Registers the memory of a device (null: none); the backend's registration function calls it.
// The caller keeps `memory` alive while it is registered.
void setDeviceMemory(Device device, DeviceMemory* memory);
// The registered memory of device, or null.
DeviceMemory* deviceMemory(Device device);
// The same, throwing std::runtime_error "<what>: no memory is registered for <device> (...)".
DeviceMemory& requireDeviceMemory(Device device, std::string_view what);

// A contiguous tensor of uninitialised elements on device (Device::Cpu: Tensor::empty).
Tensor emptyOn(Device device, DType dtype, Shape shape);
// A contiguous copy of t on device (t itself when it is already there and contiguous).
Tensor toDevice(const Tensor& t, Device device);
// toDevice(t, Device::Cpu).
Tensor toHost(const Tensor& t);
// Note [Reading device values]: a host tensor that owns its elements, whatever t's device: a
// clone of a host tensor, a transfer of a device one (what a debugger, a guard or a snapshot
// keeps of a value the run may overwrite or free).
Tensor hostCopy(const Tensor& t);
// A contiguous copy of t on t's own device (Tensor::clone on the CPU; a device-to-device copy on
// a device).
Tensor cloneOnDevice(const Tensor& t);
// Copies src's elements into dst (same dtype and shape; dst contiguous when it is on a device),
// wherever each lives: Tensor::copyFrom when both are on the CPU, else one transfer through the
// registered DeviceMemory into dst's own buffer (no allocation but src's contiguous copy where
// src is a strided view). What keeps a buffer that is reused call after call (a private copy of
// a parameter, the host copy of a device-resident shared variable).
void copyInto(Tensor& dst, const Tensor& src);

}  // namespace tscope::engine
