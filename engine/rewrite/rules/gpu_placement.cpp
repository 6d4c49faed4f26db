#include "engine/rewrite/rules/gpu_placement.h"

#include "engine/graph/apply.h"
#include "engine/graph/destroy_handler.h"
#include "engine/graph/errors.h"
#include "engine/graph/inner_graphs.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/ops/transfer/transfer.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tscope::engine {

namespace {
TensorType on(const TensorType& t, Device device) {
  return TensorType(t.dtype(), t.shape(), device);
}

// Builds a transfer node directly with its output type, stamped with the reader's scope.
VarPtr transfer(const VarPtr& v, Device to, const Apply& near) {
  static const auto toDevice = std::make_shared<GpuFromHost>();
  static const auto toHost = std::make_shared<HostFromGpu>();
  OpPtr op = to == Device::Cpu ? OpPtr(toHost) : OpPtr(toDevice);
  ApplyPtr node = Apply::create(std::move(op), {v}, {on(v->type(), to)}, near.site());
  node->setScope(near.scope());
  return node->output(0);
}

bool placeable(const Apply& node, const KernelRegistry& kernels, Device device,
               const DeviceSupport& rules) {
  if (isTransfer(node.op()) || !innerGraphsOf(node.op()).empty()) return false;
  for (const VarPtr& in : node.inputs())
    if (in->type().device() != Device::Cpu) return false;  // already placed
  return rules.supports(kernels, node, device);
}

std::string ruleKey(std::string_view opName, Device device) {
  return std::string(opName) + "@" + std::string(deviceName(device));
}
}  // namespace

void DeviceSupport::add(std::string opName, Device device, NodeSupportFn supports) {
  m_rules[ruleKey(opName, device)] = supports;
}

void DeviceSupport::addHostValues(std::string opName, Device device, HostValuesFn hostValues) {
  m_hostValues[ruleKey(opName, device)] = hostValues;
}

HostValues DeviceSupport::hostValues(const Apply& node, Device device) const {
  auto it = m_hostValues.find(ruleKey(node.op().name(), device));
  if (it == m_hostValues.end() || it->second == nullptr) return {};
  return it->second(node);
}

bool isDeviceValue(const Variable& v) {
  return v.owner() != nullptr && dynamic_cast<const HostFromGpu*>(&v.owner()->op()) != nullptr;
}

bool DeviceSupport::supports(const KernelRegistry& kernels, const Apply& node,
                             Device device) const {
  const std::string name = node.op().name();
  if (!kernels.has(name, device)) return false;
  auto it = m_rules.find(ruleKey(name, device));
  return it == m_rules.end() || it->second == nullptr || it->second(node);
}

DeviceSupport& defaultDeviceSupport() {
  static DeviceSupport rules;
  return rules;
}

PlacementSummary placeOnDevice(FunctionGraph& fg, const KernelRegistry& kernels, Device device,
                               const DeviceSupport* rules) {
  const DeviceSupport& support = rules ? *rules : defaultDeviceSupport();
  PlacementSummary summary;
  std::vector<ApplyPtr> order;
  for (Apply* node : fg.toposort()) order.push_back(node->shared_from_this());
  // A host value -> its device twin: a GpuFromHost made for it, or the placed node's output that
  // the host value is the HostFromGpu of. Per entry: (the host value, the twin); the keys are
  // kept alive here (a pruned HostFromGpu's address
  // must not come back as another variable's).
  std::unordered_map<const Variable*, std::pair<VarPtr, VarPtr>> twin;
  for (const ApplyPtr& node : order) {
    if (!placeable(*node, kernels, device, support)) continue;
    // Note [Host values of device nodes]: these inputs are read as they are, these outputs stay.
    const HostValues onHost = support.hostValues(*node, device);
    auto listed = [](const std::vector<int>& positions, int i) {
      return std::find(positions.begin(), positions.end(), i) != positions.end();
    };
    std::vector<VarPtr> inputs;
    for (int i = 0; i < node->nInputs(); ++i) {
      const VarPtr& in = node->inputs()[static_cast<std::size_t>(i)];
      if (listed(onHost.inputs, i)) {
        inputs.push_back(in);
        continue;
      }
      auto it = twin.find(in.get());
      if (it == twin.end())
        it = twin.emplace(in.get(), std::pair{in, transfer(in, device, *node)}).first;
      inputs.push_back(it->second.second);
    }
    std::vector<TensorType> types;
    for (int o = 0; o < node->nOutputs(); ++o)
      types.push_back(
          on(node->outputRef(o).type(), listed(onHost.outputs, o) ? Device::Cpu : device));
    ApplyPtr placed =
        Apply::create(node->opPtr(), std::move(inputs), std::move(types), node->site());
    placed->setScope(node->scope());
    placed->setGradientOf(node->gradientOf());
    std::vector<std::pair<VarPtr, VarPtr>> pairs;
    for (int o = 0; o < node->nOutputs(); ++o) {
      VarPtr out = placed->output(o);
      // The device value is the user's value: it keeps the name (the debugger, NanGuard's chains
      // and the viewer name it), as does its host copy when one stays (a graph output); lookups
      // by name prefer the one a transfer did not make (Note [Names across transfers] in
      // engine/debug/session_values.cpp).
      out->setName(node->outputRef(o).name());
      if (listed(onHost.outputs, o)) {
        pairs.emplace_back(node->output(o), out);
        continue;
      }
      VarPtr host = transfer(out, Device::Cpu, *node);
      host->setName(node->outputRef(o).name());
      twin.emplace(host.get(), std::pair{host, out});
      pairs.emplace_back(node->output(o), host);
    }
    fg.replaceAll(pairs, "gpu_placement");
    ++summary.deviceNodes;
  }
  for (const Apply* node : fg.nodes()) {
    if (dynamic_cast<const GpuFromHost*>(&node->op())) ++summary.toDevice;
    if (dynamic_cast<const HostFromGpu*>(&node->op())) ++summary.toHost;
  }
  return summary;
}

ResidencySummary keepSharedOnDevice(FunctionGraph& fg, std::size_t firstShared, Device device) {
  ResidencySummary summary;
  // The handler's state is per variable: rebuilt after the inputs change (below).
  DestroyHandler* handler = fg.feature<DestroyHandler>();
  std::vector<VarPtr> mutableInputs;
  std::shared_ptr<Feature> keptHandler;
  auto detachHandler = [&] {
    if (handler == nullptr || keptHandler) return;
    mutableInputs = handler->mutableInputs();
    for (const auto& f : fg.features())
      if (f.get() == handler) keptHandler = f;
    fg.detachFeature(*handler);
  };
  // Input index -> output index of its update.
  std::unordered_map<std::size_t, std::size_t> updateOf;
  for (const auto& [out, in] : fg.updateMapping()) updateOf[in] = out;
  std::vector<VarPtr> candidates(
      fg.inputs().begin() + static_cast<std::ptrdiff_t>(std::min(firstShared, fg.inputs().size())),
      fg.inputs().end());
  for (const VarPtr& W : candidates) {
    if (W->kind() != Variable::Kind::Shared || W->type().device() != Device::Cpu) continue;
    const std::vector<Client> clients = fg.clients(*W);
    if (clients.empty()) continue;
    std::vector<VarPtr> reads;  // the GpuFromHost outputs
    bool allDevice = true;
    for (const Client& c : clients) {
      const bool toDevice = c.node && dynamic_cast<const GpuFromHost*>(&c.node->op()) &&
                            c.node->outputRef(0).type().device() == device;
      allDevice = allDevice && toDevice;
      if (toDevice) reads.push_back(c.node->output(0));
    }
    if (!allDevice) continue;
    const auto position = static_cast<std::size_t>(
        std::find(fg.inputs().begin(), fg.inputs().end(), W) - fg.inputs().begin());
    VarPtr updateValue;  // the device value the update keeps
    auto up = updateOf.find(position);
    if (up != updateOf.end()) {
      const VarPtr& u = fg.outputs()[up->second];
      const Apply* owner = u->owner();
      if (!owner || !dynamic_cast<const HostFromGpu*>(&owner->op()) ||
          owner->input(0)->type().device() != device)
        continue;
      updateValue = owner->input(0);
      // W <- W (through the device and back): nothing to keep.
      if (std::find(reads.begin(), reads.end(), updateValue) != reads.end()) continue;
    }
    detachHandler();
    const std::shared_ptr<SharedVariable> twin =
        static_cast<const SharedVariable&>(*W).onDevice(device);
    fg.addInput(twin);
    const std::size_t twinIndex = fg.inputs().size() - 1;
    std::vector<std::pair<VarPtr, VarPtr>> pairs;
    for (const VarPtr& r : reads) pairs.emplace_back(r, twin);
    fg.replaceAll(pairs, "gpu_resident_shared");
    if (updateValue) {
      fg.replaceOutput(up->second, updateValue, "gpu_resident_shared");
      fg.setUpdate(up->second, twinIndex);
      ++summary.updated;
    }
    fg.removeInput(position);
    // Indices after `position` moved up one place.
    std::unordered_map<std::size_t, std::size_t> moved;
    for (const auto& [in, out] : updateOf)
      if (in != position) moved[in > position ? in - 1 : in] = out;
    if (updateValue) moved[twinIndex - 1] = up->second;
    updateOf = std::move(moved);
    for (VarPtr& m : mutableInputs)
      if (m == W) m = twin;
    ++summary.resident;
  }
  if (keptHandler) {
    auto fresh = std::make_shared<DestroyHandler>();
    fresh->setMutableInputs(mutableInputs);
    fg.attachFeature(fresh);
    try {
      fresh->validate(fg);
    } catch (const InconsistencyError&) {
      fg.detachFeature(*fresh);  // as ensureDestroyOrderings does for a graph it refuses
    }
  }
  return summary;
}

}  // namespace tscope::engine
