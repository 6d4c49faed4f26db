#pragma once
// GPU activity as our own records (no CUDA types): what a GPU source (the CUPTI source,
// profiling/cupti_source.h) decodes, collected in any order and across buffers, then mapped to
// the nodes whose launches produced it.
//
//   GpuActivity activity;                     // filled by a source's decoder (or a test)
//   NodeKeyTable nodes;                       // filled by the source's CorrelationSink
//   GpuAttribution a = correlate(activity, nodes);
//   a.find({}, 41)->kernelNs;                 // GPU time of node 41's kernels
//   toOriginalNodes(a, lineage);              // the Composite's kernels -> the nodes it fused
//
// Note [GPU correlation]: the VM pushes (framePath, nodeId) around each node's work (Note
// [Correlation] in engine/vm/correlation.h); the source interns it as an external id
// (NodeKeyTable) and pushes that to CUPTI (kind CUSTOM0). CUPTI then emits, for every API call
// made under the push, an external-correlation record (external id -> correlation id); the
// kernel, memcpy and memset records carry the correlation id of the API call that launched them.
// So: record.correlationId -> ExternalCorrelationRecord.externalId -> NodeKey. The records of
// one chain may arrive in any order and in different buffers (a kernel completes after its
// launch record's buffer went out), so correlate() runs over everything collected. A record
// with no correlation id, no external record, or an external id no node has is "unattributed":
// counted and reported, never dropped silently.
//
// Timestamps: records hold the GPU clock until GpuActivity::toHostClock (Note [GPU clock] in
// profiling/gpu_clock.h) maps them onto the CPU source's steady clock. A record whose start or
// end is 0, or ends before it starts, is kept and counted (it launched work) but has no time.

// No <compare> include (NodeKey's operator<=> gets it through <string>): Qt 6.4's moc, which
// reads this header in the tests, fails to parse <concepts> when it reaches it from there.
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tscope::engine::debug {
class NodeLineage;
}

namespace tscope::prof {

class HostClockMap;
struct Profile;

enum class MemcpyKind : std::uint8_t {
  Unknown,
  HtoD,
  DtoH,
  HtoA,
  AtoH,
  AtoA,
  AtoD,
  DtoA,
  DtoD,
  HtoH,
  PtoP
};
std::string_view memcpyKindName(MemcpyKind kind);  // "HtoD", "DtoH", ..., "unknown"

struct Dim3 {
  std::int32_t x = 0, y = 0, z = 0;
  bool operator==(const Dim3&) const = default;
};

// The fields every timed record has.
struct GpuSpan {
  std::int64_t startNs = 0, endNs = 0;
  bool timed() const { return startNs > 0 && endNs >= startNs; }
  std::int64_t durationNs() const { return timed() ? endNs - startNs : 0; }
  bool operator==(const GpuSpan&) const = default;
};

struct KernelRecord : GpuSpan {
  std::string name;  // demangled when possible (demangleKernelName)
  std::uint32_t device = 0, context = 0, stream = 0;
  Dim3 grid, block;
  std::int32_t registersPerThread = 0;
  std::int64_t staticSharedBytes = 0, dynamicSharedBytes = 0;
  std::uint32_t correlationId = 0;  // 0: none
  bool operator==(const KernelRecord&) const = default;
};

struct MemcpyRecord : GpuSpan {
  MemcpyKind kind = MemcpyKind::Unknown;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0, context = 0, stream = 0;
  std::uint32_t correlationId = 0;
  bool operator==(const MemcpyRecord&) const = default;
};

struct MemsetRecord : GpuSpan {
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;
  std::uint32_t device = 0, context = 0, stream = 0;
  std::uint32_t correlationId = 0;
  bool operator==(const MemsetRecord&) const = default;
};

// A runtime (or driver) API call on a host thread: the launch side of a kernel's correlation.
struct ApiRecord : GpuSpan {
  enum class Domain : std::uint8_t { Runtime, Driver };
  Domain domain = Domain::Runtime;
  std::uint32_t cbid = 0;
  std::string name;  // "cudaLaunchKernel", or "cbid 211" when unknown
  std::uint32_t processId = 0, threadId = 0;
  std::uint32_t correlationId = 0;
  std::int32_t returnValue = 0;
  bool operator==(const ApiRecord&) const = default;
};

struct SyncRecord : GpuSpan {
  enum class Kind : std::uint8_t {
    Unknown,
    EventSynchronize,
    StreamWaitEvent,
    StreamSynchronize,
    ContextSynchronize
  };
  Kind kind = Kind::Unknown;
  std::uint32_t context = 0, stream = 0;
  std::uint32_t correlationId = 0;
  bool operator==(const SyncRecord&) const = default;
};
std::string_view syncKindName(SyncRecord::Kind kind);

// Time the GPU tooling itself spent (buffer flushes, instrumentation): shown as overhead.
struct OverheadRecord : GpuSpan {
  std::string kind;            // "activity buffer flush", "instrumentation", ...
  std::uint64_t objectId = 0;  // the process, thread or device it was charged to
  bool operator==(const OverheadRecord&) const = default;
};

// CUPTI's external correlation kinds we use (CUpti_ExternalCorrelationKind's values).
constexpr std::uint32_t kExternalKindCustom0 = 3;

struct ExternalCorrelationRecord {
  std::uint32_t kind = kExternalKindCustom0;
  std::uint64_t externalId = 0;
  std::uint32_t correlationId = 0;
  bool operator==(const ExternalCorrelationRecord&) const = default;
};

struct GpuActivityCounts {
  std::int64_t droppedBySource = 0;  // records the source could not keep (CUPTI's count)
  std::int64_t droppedByBudget = 0;  // records beyond GpuActivity's maxRecords
  std::int64_t invalidTimestamps = 0;
  std::int64_t unknownRecords = 0;  // record kinds the decoder does not know
  std::int64_t buffers = 0;         // completed buffers decoded
  bool operator==(const GpuActivityCounts&) const = default;
};

// The records of one capture. Not thread-safe: a source decodes into its own and merges.
class GpuActivity {
 public:
  // The capture budget: a few records per node and run for 1,000 runs of a large graph.
  static constexpr std::int64_t kDefaultMaxRecords = 8'000'000;
  explicit GpuActivity(std::int64_t maxRecords = kDefaultMaxRecords) : m_maxRecords(maxRecords) {}

  // Each returns false when the budget is spent (the record is dropped and counted).
  bool add(KernelRecord r);
  bool add(MemcpyRecord r);
  bool add(MemsetRecord r);
  bool add(ApiRecord r);
  bool add(SyncRecord r);
  bool add(OverheadRecord r);
  bool add(ExternalCorrelationRecord r);
  void addDroppedBySource(std::int64_t n) { m_counts.droppedBySource += n; }
  void countUnknownRecord() { ++m_counts.unknownRecords; }
  void countBuffer() { ++m_counts.buffers; }
  // Moves other's records after this one's (a decoded buffer), within this one's budget.
  void merge(GpuActivity&& other);
  // Every timed record's timestamps onto the host clock (untimed ones stay 0).
  void toHostClock(const HostClockMap& clock);
  void clear();

  std::int64_t records() const;
  std::int64_t maxRecords() const { return m_maxRecords; }
  const GpuActivityCounts& counts() const { return m_counts; }
  const std::vector<KernelRecord>& kernels() const { return m_kernels; }
  const std::vector<MemcpyRecord>& memcpys() const { return m_memcpys; }
  const std::vector<MemsetRecord>& memsets() const { return m_memsets; }
  const std::vector<ApiRecord>& apis() const { return m_apis; }
  const std::vector<SyncRecord>& syncs() const { return m_syncs; }
  const std::vector<OverheadRecord>& overheads() const { return m_overheads; }
  const std::vector<ExternalCorrelationRecord>& externals() const { return m_externals; }

 private:
  template <class R>
  bool keep(std::vector<R>& into, R&& r);

  std::int64_t m_maxRecords;
  GpuActivityCounts m_counts;
  std::vector<KernelRecord> m_kernels;
  std::vector<MemcpyRecord> m_memcpys;
  std::vector<MemsetRecord> m_memsets;
  std::vector<ApiRecord> m_apis;
  std::vector<SyncRecord> m_syncs;
  std::vector<OverheadRecord> m_overheads;
  std::vector<ExternalCorrelationRecord> m_externals;
};

// A node of the profiled program (NodeProfile's framePath and id).
struct NodeKey {
  std::vector<std::int64_t> framePath;
  std::int64_t id = -1;
  auto operator<=>(const NodeKey&) const = default;
  bool operator==(const NodeKey&) const = default;
};

// Interns node keys as external ids (1, 2, ...): the same node always gets the same id, so the
// table holds one entry per node, however many runs. Thread-safe (the VM's thread interns, the
// caller of correlate() reads).
class NodeKeyTable {
 public:
  std::uint64_t idFor(std::span<const std::int64_t> framePath, std::int64_t nodeId);
  std::optional<NodeKey> keyOf(std::uint64_t externalId) const;
  std::size_t size() const;

 private:
  mutable std::mutex m_mutex;
  std::unordered_map<std::int64_t, std::uint64_t> m_top;    // top-level nodes by id
  std::unordered_map<std::string, std::uint64_t> m_nested;  // framePath + id, packed
  std::vector<NodeKey> m_keys;                              // externalId - 1 -> key
};

// What the records of one node (or of none) add up to. Times are nanoseconds.
struct NodeGpuStats {
  NodeKey node;
  std::int64_t kernels = 0, kernelNs = 0;
  std::int64_t memcpys = 0, memcpyNs = 0, memcpyBytes = 0;
  std::int64_t memsets = 0, memsetNs = 0, memsetBytes = 0;
  std::int64_t untimed = 0;                // of the above, records without valid timestamps
  std::vector<std::size_t> kernelIndices;  // into GpuActivity::kernels(), by start time
  std::int64_t gpuNs() const { return kernelNs + memcpyNs + memsetNs; }
  std::int64_t records() const { return kernels + memcpys + memsets; }
  bool operator==(const NodeGpuStats&) const = default;
};

struct GpuAttribution {
  std::vector<NodeGpuStats> nodes;  // sorted by NodeKey
  NodeGpuStats unattributed;        // node id -1
  // Why records are unattributed: no correlation id; a correlation id no external-correlation
  // record (of our kind) names; an external id the NodeKeyTable does not know.
  std::int64_t withoutCorrelation = 0, withoutExternal = 0, unknownExternal = 0;
  // Per kernel (GpuActivity::kernels() order): the index into nodes (-1: unattributed) and the
  // API record that launched it (-1: none), for a trace's flow events.
  std::vector<std::int64_t> kernelNode, kernelLaunch;

  const NodeGpuStats* find(const std::vector<std::int64_t>& framePath, std::int64_t id) const;
};

// Note [GPU correlation]. `externalKind` is the kind the source pushed.
GpuAttribution correlate(const GpuActivity& activity, const NodeKeyTable& nodes,
                         std::uint32_t externalKind = kExternalKindCustom0);

// The GPU work of an optimized node, named by the original nodes it stands for (through the
// rewrite log): a fused Composite's kernels belong to the whole chain it fused. Top-level nodes
// go through the lineage; inner-frame nodes are not rewritten and stand for themselves.
struct OriginalGpuGroup {
  std::vector<std::int64_t> originalNodes;  // sorted; empty for a node no original maps to
  NodeGpuStats stats;                       // the optimized node's records
  bool operator==(const OriginalGpuGroup&) const = default;
};
std::vector<OriginalGpuGroup> toOriginalNodes(const GpuAttribution& attribution,
                                              const engine::debug::NodeLineage& lineage);

// Adds each attributed node's GPU time (kernels, memcpys, memsets; seconds) and kernel count to
// its NodeProfile (gpuSeconds, gpuKernels) in `profile`, summed over the runs the activity holds
// (the measured runs: a source is flushed and taken per profiled session). Returns the number of
// attributed nodes the profile does not have (a node of another graph: a caller's bug to report).
std::int64_t addGpuTimes(Profile& profile, const GpuAttribution& attribution);

// "void foo<float>(float*, int)" from "_Z3fooIfEvPfi"; anything that is not a mangled name
// (an NVRTC kernel named extern "C") comes back unchanged.
std::string demangleKernelName(std::string_view name);

}  // namespace tscope::prof
