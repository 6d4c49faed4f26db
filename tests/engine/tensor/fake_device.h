#pragma once
// A stand-in for the CUDA backend's device memory in tests that run without a GPU: host memory
// whose tensors carry the device tag Device::Cuda, and copies that are memcpy and are counted.
// While a FakeDeviceMemory lives it is the registered memory of Device::Cuda.
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/tensor/device_memory.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

namespace tscope::test {

class FakeDeviceMemory final : public engine::DeviceMemory {
 public:
  FakeDeviceMemory() : m_previous(engine::deviceMemory(engine::Device::Cuda)) {
    engine::setDeviceMemory(engine::Device::Cuda, this);
  }
  ~FakeDeviceMemory() override { engine::setDeviceMemory(engine::Device::Cuda, m_previous); }

  std::shared_ptr<void> allocate(std::size_t nbytes) override {
    ++allocations;
    return std::shared_ptr<void>(std::aligned_alloc(256, (nbytes + 255) / 256 * 256 + 256),
                                 [](void* q) { std::free(q); });
  }
  void copy(void* dst, const void* src, std::size_t nbytes, Copy kind) override {
    ++copies[static_cast<int>(kind)];
    bytes[static_cast<int>(kind)] += static_cast<std::int64_t>(nbytes);
    sizes[static_cast<int>(kind)].push_back(nbytes);
    std::memcpy(dst, src, nbytes);
  }
  // How many copies of kind moved exactly nbytes (a parameter's size picks out its transfers).
  int copiesOf(Copy kind, std::size_t nbytes) const {
    int n = 0;
    for (std::size_t s : sizes[static_cast<int>(kind)]) n += s == nbytes ? 1 : 0;
    return n;
  }
  void resetCounts() {
    for (int k = 0; k < 3; ++k) {
      copies[k] = 0;
      bytes[k] = 0;
      sizes[k].clear();
    }
  }

  int allocations = 0;
  int copies[3] = {0, 0, 0};  // by Copy kind
  std::int64_t bytes[3] = {0, 0, 0};
  std::vector<std::size_t> sizes[3];  // each copy's size, by kind

 private:
  engine::DeviceMemory* m_previous;
};

// The host tensor over the same bytes as a fake device tensor (what a fake kernel computes on).
inline engine::Tensor hostAlias(const engine::Tensor& t) {
  auto storage = std::make_shared<engine::Storage>(
      const_cast<std::byte*>(t.storage()->data()), t.storage()->nbytes(),
      std::shared_ptr<const void>(t.storage()), engine::Storage::External{});
  return engine::Tensor(std::move(storage), t.dtype(), t.shape(), t.strides(), t.offset());
}

// How many times fakeDeviceKernel ran (tests reset it).
inline int& fakeKernelLaunches() {
  static int launches = 0;
  return launches;
}

// A "device kernel" for a KernelRegistry entry on Device::Cuda: checks its operands live where
// the node's types say (device tensors, and host tensors in the positions a backend keeps on the
// host, Note [Host values of device nodes]), computes with the op's perform on host aliases of
// their bytes, and hands back tensors on the devices the output types name, as a real kernel
// would: device outputs written in device memory directly (no transfer counted), and an output
// perform wrote into a device input (an inplace op) stays that input's buffer.
inline void fakeDeviceKernel(const engine::Op& op, const engine::Apply& node,
                             std::span<const engine::Tensor* const> inputs,
                             std::span<engine::Tensor* const> outputs) {
  ++fakeKernelLaunches();
  std::vector<engine::Tensor> in, out(outputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const engine::Tensor* t = inputs[i];
    const engine::Device want = node.inputs()[i]->type().device();
    if (t->device() != want)
      throw std::logic_error((want == engine::Device::Cuda ? "a device kernel got a host tensor"
                                                           : "a host input came on the device") +
                             std::string(" (input ") + std::to_string(i) + ", " + t->toString() +
                             ")");
    in.push_back(t->device() == engine::Device::Cuda ? hostAlias(*t) : *t);
  }
  std::vector<const engine::Tensor*> inPtrs;
  for (const engine::Tensor& t : in) inPtrs.push_back(&t);
  std::vector<engine::Tensor*> outPtrs;
  for (engine::Tensor& t : out) outPtrs.push_back(&t);
  op.perform(node, inPtrs, outPtrs);
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const engine::Tensor& h = out[o];
    if (node.outputRef(static_cast<int>(o)).type().device() != engine::Device::Cuda) {
      *outputs[o] = h;
      continue;
    }
    bool inPlace = false;
    for (std::size_t k = 0; k < in.size() && !inPlace; ++k)
      if (inputs[k]->device() == engine::Device::Cuda && h.sharesStorageWith(in[k])) {
        *outputs[o] =
            engine::Tensor(inputs[k]->storage(), h.dtype(), h.shape(), h.strides(), h.offset());
        inPlace = true;
      }
    if (inPlace) continue;
    engine::Tensor d = engine::emptyOn(engine::Device::Cuda, h.dtype(), h.shape());
    hostAlias(d).copyFrom(h);
    *outputs[o] = std::move(d);
  }
}

}  // namespace tscope::test
