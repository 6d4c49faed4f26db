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
// Some device kernels read an input or write an output on the host (Note [Host values of device
// nodes]): those values keep their CPU type and get no transfer.
// Each placed node is one fg.replaceAll(its outputs -> HostFromGpu(twin outputs), "gpu_placement");
// the transfers a later device node makes redundant are pruned as it is placed. The linker then
// runs a node on the device exactly when one of its values is device-typed (Note [Placed nodes]
// in engine/compile/program.cpp).

#include "engine/compile/kernel.h"
#include "engine/graph/function_graph.h"

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace tscope::engine {

class Apply;

// Whether a device kernel handles this node (its dtypes, ranks, props).
using NodeSupportFn = bool (*)(const Apply& node);

// Note [Host values of device nodes]: a device kernel may read some inputs on the host (sizes,
// indices it reads as numbers: Reshape's shape vector, Subtensor's symbolic bounds, a random op's
// generator state and parameters) and write some outputs there (Shape's vector, a random op's new
// state). Placement leaves those values on the CPU: a host input is read as it is (no
// GpuFromHost), a host output keeps its CPU type (no HostFromGpu), and the node still runs its
// device kernel, which gets host tensors in those positions (the linker runs a node on the device
// when any of its values is device-typed, Note [Placed nodes] in engine/compile/program.cpp).
// Positions are input and output indices of the node; the function sees the node before it is
// placed.
struct HostValues {
  std::vector<int> inputs;
  std::vector<int> outputs;
};
using HostValuesFn = HostValues (*)(const Apply& node);

// Whether v is a value some device node computes, as placement sees it while it places a graph:
// the output of a HostFromGpu (the host copy of a placed node's output). Rules use it to claim a
// node only where its input is already on the device (Shape, ShapeI: reading a shape must not
// copy a tensor).
bool isDeviceValue(const Variable& v);

// The backend's rules, next to its kernels: an op with a kernel and no rule handles every node.
class DeviceSupport {
 public:
  // A second rule for the same (op, device) replaces the first.
  void add(std::string opName, Device device, NodeSupportFn supports);
  // The op's host values on device (Note [Host values of device nodes]); a second call replaces.
  void addHostValues(std::string opName, Device device, HostValuesFn hostValues);
  // kernels has a kernel for node's op on device, and the rule for it (if any) accepts node.
  bool supports(const KernelRegistry& kernels, const Apply& node, Device device) const;
  // The node's host values on device (none when the op registered no function).
  HostValues hostValues(const Apply& node, Device device) const;

 private:
  std::unordered_map<std::string, NodeSupportFn> m_rules;
  std::unordered_map<std::string, HostValuesFn> m_hostValues;
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
