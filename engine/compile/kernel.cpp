#include "engine/compile/kernel.h"

#include "engine/graph/op.h"

namespace tscope::engine {

std::string KernelRegistry::key(std::string_view opName, Device device) {
  std::string k(opName);
  k += '@';
  k += deviceName(device);
  return k;
}

void KernelRegistry::add(std::string opName, Device device, KernelFn fn, std::string_view source) {
  Kernel kernel;
  kernel.fn = fn;
  kernel.device = device;
  kernel.source = source;
  m_kernels[key(opName, device)] = kernel;
}

Kernel KernelRegistry::choose(const Op& op, Device device) const {
  if (!m_kernels.empty()) {
    if (auto it = m_kernels.find(key(op.name(), device)); it != m_kernels.end()) return it->second;
  }
  return Kernel{};
}

bool KernelRegistry::has(std::string_view opName, Device device) const {
  return m_kernels.count(key(opName, device)) > 0;
}

KernelRegistry& defaultKernelRegistry() {
  static KernelRegistry registry;
  return registry;
}

}  // namespace tscope::engine
