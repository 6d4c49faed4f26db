#pragma once
// The `gpu` phase: places a graph on a device (DESIGN.md "Backends"). compile() runs it after the
// rewrites when CompileOptions::device is not the CPU; a test runs it on any machine against a
// KernelRegistry that says which ops have device kernels (tests/engine/rewrite/
// tst_gpu_placement.cpp).
//
// Note [GPU placement]: every node whose op has a kernel on the device (KernelRegistry::has) that
// handles the node (the backend's rule in DeviceSupport, by dtype, rank or props) runs there; every
// other node stays on the CPU. A value crosses through one transfer node per value and direction
// (engine/ops/transfer/transfer.h):
//   before: h = relu(dot(x, W) + b); y = argsort(h)          (no device kernel for argsort)
//   after:  x' = GpuFromHost(x); W' = GpuFromHost(W); b' = GpuFromHost(b)
//           h' = relu(dot(x', W') + b')                        (device-typed values)
//           y = argsort(HostFromGpu(h'))
// Values a device node reads from the host get a GpuFromHost (shared by all its device readers);
// values a device node computes get a HostFromGpu only where a CPU node or a graph output reads
// them. Graph inputs and outputs stay on the CPU, so a Function's arguments and results do not
// change. Nodes with inner graphs (OpFromGraph, Scan, IfElse) and their bodies stay on the CPU.
// Each placed node is one fg.replaceAll(its outputs -> HostFromGpu(twin outputs), "gpu_placement");
// the transfers a later device node makes redundant are pruned as it is placed. The linker then
// runs a node on the device exactly when one of its values is device-typed (Note [Placed nodes]
// in engine/compile/program.cpp).

#include "engine/compile/kernel.h"
#include "engine/graph/function_graph.h"

#include <cstddef>
#include <string>
#include <unordered_map>

namespace tscope::engine {

class Apply;

// Whether a device kernel handles this node (its dtypes, ranks, props).
using NodeSupportFn = bool (*)(const Apply& node);

// The backend's rules, next to its kernels: an op with a kernel and no rule handles every node.
class DeviceSupport {
 public:
  // A second rule for the same (op, device) replaces the first.
  void add(std::string opName, Device device, NodeSupportFn supports);
  // kernels has a kernel for node's op on device, and the rule for it (if any) accepts node.
  bool supports(const KernelRegistry& kernels, const Apply& node, Device device) const;

 private:
  std::unordered_map<std::string, NodeSupportFn> m_rules;
};

// The rules compile() places with; the backends register theirs here once.
DeviceSupport& defaultDeviceSupport();

struct PlacementSummary {
  std::size_t deviceNodes = 0;  // nodes placed on the device (transfers not counted)
  std::size_t toDevice = 0;     // GpuFromHost nodes in the graph after placement
  std::size_t toHost = 0;       // HostFromGpu nodes in the graph after placement
};

// rules: null for defaultDeviceSupport().
PlacementSummary placeOnDevice(FunctionGraph& fg, const KernelRegistry& kernels,
                               Device device = Device::Cuda, const DeviceSupport* rules = nullptr);

// Note [Device-resident shared variables]: after placement a shared variable W that device nodes
// read comes in through GpuFromHost(W), and its update, computed on the device, goes back through
// HostFromGpu: every call would copy each parameter to the device and back. compile() (not
// `tensorscope optimize`, whose file keeps host values) then keeps such variables on the device:
//   before: W' = GpuFromHost(W); ... W_new' = W' - g'; output u = HostFromGpu(W_new'); W <- u
//   after:  Wd (a device-typed twin of W, SharedVariable::onDevice) is the graph input the
//           device nodes read; output u = W_new' (device-typed); Wd <- u; W leaves the inputs.
// A shared input (one the caller did not pass) qualifies when every reader of it is a GpuFromHost
// to this device, and, if it is updated, when its update is the HostFromGpu of a device value (an
// update computed on the host, or W <- W, keeps the host form). Read-only parameters (inference
// weights) qualify too. The twin shares W's value (engine/graph/variable.cpp): VM::start reads
// Wd.placedValue(), the device copy (uploaded on the first call, or the first after a setValue,
// and never again); Function::finish applies the update to the twin, so the device copy becomes
// the newest value and nothing crosses to the host. W.value() (the user's get value, a save, the
// inspector, a DebugSession) copies the device value back to the host once per update, lazily;
// W.setValue(host) drops the device copy, and the next call uploads the new value.
// Updates stay atomic on the device: Function::finish applies every update after the whole run,
// as on the host; a run that fails or is stopped before finish applies none, and a node that
// updates in place (Gemm{inplace} on Wd) writes into a private device copy unless the run is
// committed (Note [Parameters stay whole] in function.cpp; VM::start clones on the device with
// copyInto/cloneOnDevice), so every parameter keeps its old device value. The graph's
// DestroyHandler is rebuilt with the twins as the mutable inputs.
struct ResidencySummary {
  std::size_t resident = 0;  // shared variables made device-resident
  std::size_t updated = 0;   // ... of which an update keeps on the device
};
// Inputs before firstShared are the caller's arguments and stay as they are.
ResidencySummary keepSharedOnDevice(FunctionGraph& fg, std::size_t firstShared,
                                    Device device = Device::Cuda);

}  // namespace tscope::engine
