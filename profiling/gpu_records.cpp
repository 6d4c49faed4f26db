#include "profiling/gpu_records.h"

#include "engine/debug/lineage.h"
#include "profiling/gpu_clock.h"
#include "profiling/profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <memory>
#include <numeric>

namespace tscope::prof {

std::string_view memcpyKindName(MemcpyKind kind) {
  static constexpr std::string_view kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(MemcpyKind::PtoP) + 1);
  return kNames[static_cast<std::size_t>(kind)];
}

std::string_view syncKindName(SyncRecord::Kind kind) {
  static constexpr std::string_view kNames[] = {"unknown", "event synchronize", "stream wait event",
                                                "stream synchronize", "context synchronize"};
  static_assert(std::size(kNames) ==
                static_cast<std::size_t>(SyncRecord::Kind::ContextSynchronize) + 1);
  return kNames[static_cast<std::size_t>(kind)];
}

// ---- GpuActivity ----

std::int64_t GpuActivity::records() const {
  return static_cast<std::int64_t>(m_kernels.size() + m_memcpys.size() + m_memsets.size() +
                                   m_apis.size() + m_syncs.size() + m_overheads.size() +
                                   m_externals.size());
}

template <class R>
bool GpuActivity::keep(std::vector<R>& into, R&& r) {
  if (records() >= m_maxRecords) {
    ++m_counts.droppedByBudget;
    return false;
  }
  if constexpr (std::is_base_of_v<GpuSpan, R>) {
    if (!r.timed()) {
      ++m_counts.invalidTimestamps;
      r.startNs = r.endNs = 0;
    }
  }
  into.push_back(std::move(r));
  return true;
}

bool GpuActivity::add(KernelRecord r) {
  return keep(m_kernels, std::move(r));
}
bool GpuActivity::add(MemcpyRecord r) {
  return keep(m_memcpys, std::move(r));
}
bool GpuActivity::add(MemsetRecord r) {
  return keep(m_memsets, std::move(r));
}
bool GpuActivity::add(ApiRecord r) {
  return keep(m_apis, std::move(r));
}
bool GpuActivity::add(SyncRecord r) {
  return keep(m_syncs, std::move(r));
}
bool GpuActivity::add(OverheadRecord r) {
  return keep(m_overheads, std::move(r));
}
bool GpuActivity::add(ExternalCorrelationRecord r) {
  return keep(m_externals, std::move(r));
}

void GpuActivity::merge(GpuActivity&& other) {
  // Counted records were counted once already (invalid timestamps): only the budget applies.
  auto move = [&](auto& from, auto& into) {
    for (auto& r : from) {
      if (records() >= m_maxRecords) {
        ++m_counts.droppedByBudget;
        continue;
      }
      into.push_back(std::move(r));
    }
    from.clear();
  };
  move(other.m_externals, m_externals);  // the cheapest records, and what the others need
  move(other.m_apis, m_apis);
  move(other.m_kernels, m_kernels);
  move(other.m_memcpys, m_memcpys);
  move(other.m_memsets, m_memsets);
  move(other.m_syncs, m_syncs);
  move(other.m_overheads, m_overheads);
  m_counts.droppedBySource += other.m_counts.droppedBySource;
  m_counts.droppedByBudget += other.m_counts.droppedByBudget;
  m_counts.invalidTimestamps += other.m_counts.invalidTimestamps;
  m_counts.unknownRecords += other.m_counts.unknownRecords;
  m_counts.buffers += other.m_counts.buffers;
  other.m_counts = {};
}

void GpuActivity::toHostClock(const HostClockMap& clock) {
  auto map = [&](auto& records) {
    for (auto& r : records) {
      if (!r.timed()) continue;
      r.startNs = clock.toHost(r.startNs);
      r.endNs = clock.toHost(r.endNs);
    }
  };
  map(m_kernels);
  map(m_memcpys);
  map(m_memsets);
  map(m_apis);
  map(m_syncs);
  map(m_overheads);
}

void GpuActivity::clear() {
  const std::int64_t max = m_maxRecords;
  *this = GpuActivity(max);
}

// ---- NodeKeyTable ----

namespace {
std::string packKey(std::span<const std::int64_t> framePath, std::int64_t nodeId) {
  std::string s((framePath.size() + 1) * sizeof(std::int64_t), '\0');
  char* p = s.data();
  for (std::int64_t v : framePath) {
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
  }
  std::memcpy(p, &nodeId, sizeof nodeId);
  return s;
}
}  // namespace

std::uint64_t NodeKeyTable::idFor(std::span<const std::int64_t> framePath, std::int64_t nodeId) {
  const std::lock_guard lock(m_mutex);
  auto intern = [&](auto& map, auto&& k) {
    auto [it, fresh] = map.try_emplace(std::forward<decltype(k)>(k), m_keys.size() + 1);
    if (fresh) m_keys.push_back({{framePath.begin(), framePath.end()}, nodeId});
    return it->second;
  };
  if (framePath.empty()) return intern(m_top, nodeId);
  return intern(m_nested, packKey(framePath, nodeId));
}

std::optional<NodeKey> NodeKeyTable::keyOf(std::uint64_t externalId) const {
  const std::lock_guard lock(m_mutex);
  if (externalId == 0 || externalId > m_keys.size()) return std::nullopt;
  return m_keys[externalId - 1];
}

std::size_t NodeKeyTable::size() const {
  const std::lock_guard lock(m_mutex);
  return m_keys.size();
}

// ---- correlate ----

const NodeGpuStats* GpuAttribution::find(const std::vector<std::int64_t>& framePath,
                                         std::int64_t id) const {
  const NodeKey key{framePath, id};
  auto it = std::lower_bound(nodes.begin(), nodes.end(), key,
                             [](const NodeGpuStats& s, const NodeKey& k) { return s.node < k; });
  return it != nodes.end() && it->node == key ? &*it : nullptr;
}

GpuAttribution correlate(const GpuActivity& activity, const NodeKeyTable& table,
                         std::uint32_t externalKind) {
  GpuAttribution out;
  out.unattributed.node.id = -1;
  // correlation id -> external id (Note [GPU correlation]); the first record of our kind wins.
  std::unordered_map<std::uint32_t, std::uint64_t> external;
  for (const auto& e : activity.externals())
    if (e.kind == externalKind && e.correlationId != 0)
      external.try_emplace(e.correlationId, e.externalId);
  std::unordered_map<std::uint32_t, std::int64_t> launch;
  for (std::size_t k = 0; k < activity.apis().size(); ++k)
    if (activity.apis()[k].correlationId != 0)
      launch.try_emplace(activity.apis()[k].correlationId, static_cast<std::int64_t>(k));

  std::unordered_map<std::uint64_t, std::size_t> byExternal;  // external id -> index in nodes
  std::vector<NodeKey> unsortedKeys;
  auto statsFor = [&](std::uint32_t correlationId) -> std::int64_t {
    if (correlationId == 0) {
      ++out.withoutCorrelation;
      return -1;
    }
    auto e = external.find(correlationId);
    if (e == external.end()) {
      ++out.withoutExternal;
      return -1;
    }
    auto it = byExternal.find(e->second);
    if (it != byExternal.end()) return static_cast<std::int64_t>(it->second);
    std::optional<NodeKey> key = table.keyOf(e->second);
    if (!key) {
      ++out.unknownExternal;
      return -1;
    }
    NodeGpuStats fresh;
    fresh.node = std::move(*key);
    out.nodes.push_back(std::move(fresh));
    byExternal.emplace(e->second, out.nodes.size() - 1);
    return static_cast<std::int64_t>(out.nodes.size() - 1);
  };
  auto at = [&](std::int64_t index) -> NodeGpuStats& {
    return index < 0 ? out.unattributed : out.nodes[static_cast<std::size_t>(index)];
  };

  // Kernels by start time, so each node's list is in time order whatever the arrival order.
  const auto& kernels = activity.kernels();
  std::vector<std::size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return kernels[a].startNs < kernels[b].startNs;
  });
  out.kernelNode.assign(kernels.size(), -1);
  out.kernelLaunch.assign(kernels.size(), -1);
  for (std::size_t k : order) {
    const KernelRecord& r = kernels[k];
    const std::int64_t n = statsFor(r.correlationId);
    NodeGpuStats& s = at(n);
    ++s.kernels;
    s.kernelNs += r.durationNs();
    s.untimed += r.timed() ? 0 : 1;
    s.kernelIndices.push_back(k);
    out.kernelNode[k] = n;
    if (auto l = launch.find(r.correlationId); r.correlationId != 0 && l != launch.end())
      out.kernelLaunch[k] = l->second;
  }
  for (const MemcpyRecord& r : activity.memcpys()) {
    NodeGpuStats& s = at(statsFor(r.correlationId));
    ++s.memcpys;
    s.memcpyNs += r.durationNs();
    s.memcpyBytes += static_cast<std::int64_t>(r.bytes);
    s.untimed += r.timed() ? 0 : 1;
  }
  for (const MemsetRecord& r : activity.memsets()) {
    NodeGpuStats& s = at(statsFor(r.correlationId));
    ++s.memsets;
    s.memsetNs += r.durationNs();
    s.memsetBytes += static_cast<std::int64_t>(r.bytes);
    s.untimed += r.timed() ? 0 : 1;
  }
  // Sort the nodes by key and renumber kernelNode.
  std::vector<std::size_t> perm(out.nodes.size());
  std::iota(perm.begin(), perm.end(), std::size_t(0));
  std::sort(perm.begin(), perm.end(),
            [&](std::size_t a, std::size_t b) { return out.nodes[a].node < out.nodes[b].node; });
  std::vector<std::int64_t> rank(perm.size());
  std::vector<NodeGpuStats> sorted;
  sorted.reserve(perm.size());
  for (std::size_t r = 0; r < perm.size(); ++r) {
    rank[perm[r]] = static_cast<std::int64_t>(r);
    sorted.push_back(std::move(out.nodes[perm[r]]));
  }
  out.nodes = std::move(sorted);
  for (auto& n : out.kernelNode)
    if (n >= 0) n = rank[static_cast<std::size_t>(n)];
  return out;
}

std::vector<OriginalGpuGroup> toOriginalNodes(const GpuAttribution& attribution,
                                              const engine::debug::NodeLineage& lineage) {
  std::vector<OriginalGpuGroup> out;
  out.reserve(attribution.nodes.size());
  for (const NodeGpuStats& s : attribution.nodes) {
    OriginalGpuGroup g;
    g.stats = s;
    if (s.node.framePath.empty())
      g.originalNodes = lineage.originalNodesFor(s.node.id);
    else
      g.originalNodes = {s.node.id};
    out.push_back(std::move(g));
  }
  return out;
}

std::int64_t addGpuTimes(Profile& profile, const GpuAttribution& attribution) {
  std::int64_t missing = 0;
  for (const NodeGpuStats& s : attribution.nodes) {
    const std::int64_t k = profile.find(s.node.framePath, s.node.id);
    if (k < 0) {
      ++missing;
      continue;
    }
    NodeProfile& n = profile.nodes[static_cast<std::size_t>(k)];
    n.gpuSeconds += static_cast<double>(s.gpuNs()) * 1e-9;
    n.gpuKernels += s.kernels;
  }
  return missing;
}

std::string demangleKernelName(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

}  // namespace tscope::prof
