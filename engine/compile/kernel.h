#pragma once
// Kernels: a backend's implementation of an op on a device (DESIGN.md "Execution",
// docs/backends.md).
//
// Note [Ops and backends]: an op's perform() is the CPU reference implementation, and it is what
// runs when no backend registered anything better. A backend registers kernels by op name and
// device in a KernelRegistry; the linker (engine/compile/program.h) chooses one Kernel per node
// when it links a program, so neither the VM nor the observer API changes when a backend arrives:
// the VM only calls what the linker chose.
//
//   KernelRegistry kernels;
//   kernels.add("Elemwise", Device::Cuda, &cudaElemwise);   // a backend's registration function
//   const Kernel k = kernels.choose(node.op(), Device::Cuda);  // falls back to perform on the CPU

#include "engine/tensor/dtype.h"

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tscope::engine {

class Apply;
class Op;
class Tensor;

// Same contract as Op::perform (engine/graph/op.h): inputs hold the node's input values, outputs
// the previous contents of its output slots.
using KernelFn = void (*)(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                          std::span<Tensor* const> outputs);

struct Kernel {
  // Null: the op's own perform (the CPU reference), called without the extra indirection.
  KernelFn fn = nullptr;
  Device device = Device::Cpu;
  // Who provided it: "perform" for the reference, else the name given at registration.
  std::string_view source = "perform";

  bool isReference() const { return fn == nullptr; }
};

class KernelRegistry {
 public:
  // Registers fn for every op whose name() is opName, on device. A second registration for the
  // same (op, device) replaces the first (a test's stand-in, a tuned kernel).
  void add(std::string opName, Device device, KernelFn fn, std::string_view source);
  // The kernel registered for op on device; for the CPU without a registration, the reference
  // (perform). For another device without a registration, the CPU reference as well: the node
  // then runs on the CPU (the GPU placement phase decides where transfers go).
  Kernel choose(const Op& op, Device device) const;
  bool has(std::string_view opName, Device device) const;
  std::size_t size() const { return m_kernels.size(); }

 private:
  static std::string key(std::string_view opName, Device device);
  std::unordered_map<std::string, Kernel> m_kernels;
};

// The registry compile() links with: every backend built into this binary registers here once
// (explicitly, Note [Ops and backends]); the CPU backend needs no entry, perform is its kernel.
KernelRegistry& defaultKernelRegistry();

}  // namespace tscope::engine
