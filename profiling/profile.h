#pragma once
// Profile: everything one profiling session of a compiled Function measured, as plain values (no
// pointers into the graph), so it can be saved in a .tsg, loaded back exactly, compared with
// another profile, turned into reports and traces, and handed to the GUI thread as an immutable
// snapshot. The Profiler (profiling/profiler.h) fills one; reports (profiling/report.h), the
// trace writer (profiling/trace.h), profile diffs (profiling/profile_diff.h) and the .tsg section
// (profiling/profile_io.h) read one.
//
// Times are seconds (double) in the tables and nanoseconds (int64, from the profile's origin) in
// the events. Node ids are the Apply ids of the graph named by Profile::graph; a node of an inner
// graph (an OpFromGraph body, an IfElse branch) is named by its frame path (the outer node ids it
// runs inside, outermost first) and its id in the inner graph.

#include "engine/graph/op_cost.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tscope::prof {

// A sample of durations summarised: the measured runs of a node or of a call.
struct TimeStats {
  std::int64_t count = 0;  // samples
  double total = 0;        // their sum
  double mean = 0, min = 0, median = 0, p95 = 0, max = 0;

  // Nearest-rank percentiles: median is the ceil(0.5 n)-th smallest sample, p95 the
  // ceil(0.95 n)-th. All zero for an empty sample.
  static TimeStats of(std::vector<double> samples);
  bool operator==(const TimeStats&) const = default;
};

// How a node's output got its buffer (Theano's memory profile marks): created (a new buffer),
// inplace (the node overwrote one of its inputs, destroyMap) or view (it aliases an input,
// viewMap).
enum class OutputKind { Created, Inplace, View };
std::string_view outputKindName(OutputKind kind);  // "created", "inplace", "view"

struct OutputInfo {
  engine::Shape shape;  // as last measured
  std::string dtype;    // dtypeName()
  std::int64_t bytes = 0;
  OutputKind kind = OutputKind::Created;
  bool operator==(const OutputInfo&) const = default;
};

// One node of the profiled program (outer or inner), with what was measured of it.
struct NodeProfile {
  std::vector<std::int64_t> framePath;  // empty at the top level
  std::int64_t id = -1;                 // the Apply id in its graph
  // Which inner graph of the frame's caller node it belongs to (an IfElse's branch: 0 then,
  // 1 else, whose ids may coincide); 0 at the top level.
  std::int64_t body = 0;
  std::int64_t position = 0;  // its index in its frame's schedule
  std::string op;             // Op::str(): the Ops table's key (equal props, one row)
  std::string opClass;        // Op::name(): the Class table's key
  std::string scope;          // its scope path ("encoder/layer1/attn"), "" for none
  // The nodes this node's frame runs (an OpFromGraph or IfElse node): its time is inclusive.
  bool hasInnerGraph = false;
  // A loop node (a Scan, Note [Loop frames] in engine/vm/vm.h): the time of each iteration
  // (index k), averaged over the measured runs that reached it; its body's nodes appear once each,
  // their calls and time summed over the iterations. Empty for other nodes.
  std::vector<double> iterationSeconds;
  std::vector<engine::Shape> inputShapes;  // as last measured
  std::vector<OutputInfo> outputs;

  std::int64_t calls = 0;  // calls over the measured runs
  // The node's time in each measured run (the sum of its calls in that run), summarised over the
  // runs; a node that did not run in some run (an untaken IfElse branch) has fewer samples.
  TimeStats time;
  // Bytes the node allocated and freed (allocation hook), per call, averaged over the calls.
  std::int64_t allocatedBytes = 0;
  std::int64_t freedBytes = 0;
  engine::OpCost cost;  // per call, from the last measured input shapes

  // GPU time of the kernels, memcpys and memsets its launches produced (CUPTI), per run, summed
  // over the measured runs; 0 without a GPU source.
  double gpuSeconds = 0;
  std::int64_t gpuKernels = 0;
  // What the node's kernel said about how it ran it (Note [Kernel notes] in
  // engine/compile/kernel_notes.h): cuDNN's convolution algorithm; "" for most nodes.
  std::string kernelNote;

  bool operator==(const NodeProfile&) const = default;
};

struct PhaseTime {
  std::string name;
  double seconds = 0;
  bool operator==(const PhaseTime&) const = default;
};

// The function as a whole (the head of the ProfileStats report).
struct FunctionSummary {
  std::string mode;             // modeName()
  std::string device = "cpu";   // "cpu" or "cuda"
  std::int64_t warmupRuns = 0;  // calls made before measuring
  std::int64_t measuredRuns = 0;
  TimeStats call;      // wall time of each measured call (begin to finish)
  TimeStats inNodes;   // time in top-level nodes per call
  TimeStats overhead;  // call - inNodes per call (argument checks, VM dispatch, updates)
  // Compile time: the optimizer's phases in order, then "link" (planning and kernels).
  double compileSeconds = 0;
  std::vector<PhaseTime> compilePhases;
  std::int64_t applyCount = 0;       // top-level nodes
  std::int64_t innerApplyCount = 0;  // nodes of inner graphs
  // Threads the engine's matrix products used (engine/backends/cpu/gemm.h, gemmThreads); the
  // roofline compares with the one-thread peaks when 1, the all-threads peaks otherwise. 0: not
  // recorded (files written before it).
  std::int64_t threads = 0;
  bool operator==(const FunctionSummary&) const = default;
};

// Memory over a run (bytes). The measured figures come from the allocation hook; the plan
// figures are computed from the program's StoragePlan and the measured output sizes.
struct MemorySummary {
  std::int64_t peakLiveBytes = 0;       // measured: most bytes held at once during a run
  std::int64_t planPeakBytes = 0;       // the current plan (frees after last use, inplace)
  std::int64_t peakWithoutInplace = 0;  // every inplace output given its own buffer
  std::int64_t peakWithoutFreeing = 0;  // no intermediate freed before the end of the run
  bool operator==(const MemorySummary&) const = default;
};

// The optimizer's profile, copied from engine::RewriteProfile.
struct RewritePhaseRow {
  std::string name;
  double seconds = 0;
  std::int64_t nodesBefore = 0, nodesAfter = 0, changes = 0;
  bool operator==(const RewritePhaseRow&) const = default;
};
struct RewriterRow {
  std::string name, phase;
  std::int64_t tried = 0, applied = 0, refused = 0;
  double seconds = 0;
  bool operator==(const RewriterRow&) const = default;
};

// The capture budget: events beyond maxEvents are dropped (the oldest measured runs' events are
// overwritten first, ring-buffer style) and counted; tables are never affected by it.
struct CaptureInfo {
  std::int64_t maxEvents = 0;
  std::int64_t keptEvents = 0;
  std::int64_t droppedEvents = 0;
  bool operator==(const CaptureInfo&) const = default;
};

// One call of one node, for the timeline.
struct NodeEventRecord {
  std::int32_t run = 0;      // measured run index, 0-based
  std::int32_t node = 0;     // index into Profile::nodes
  std::int32_t thread = 0;   // small thread number (0: the thread that ran the call)
  std::int64_t startNs = 0;  // from Profile::originNs
  std::int64_t endNs = 0;
  std::int64_t liveBytes = 0;  // live bytes after the node ran (allocation hook), 0 when off
  bool operator==(const NodeEventRecord&) const = default;
};

struct RunSpan {
  std::int32_t run = 0;
  std::int64_t startNs = 0, endNs = 0;
  bool operator==(const RunSpan&) const = default;
};

// One GPU record (a kernel, a copy, a set) of a measured run, for the timeline: on the host clock
// the node events use, attributed to the node whose launch produced it (CUPTI's correlation,
// profiling/gpu_records.h).
struct GpuEventRecord {
  enum class Kind : std::uint8_t { Kernel, Memcpy, Memset };
  Kind kind = Kind::Kernel;
  std::int32_t run = 0;
  std::int32_t node = -1;  // index into Profile::nodes; -1: no node (unattributed)
  std::string name;        // the kernel's name; "memcpy DtoH", "memset"
  std::int32_t device = 0, stream = 0;
  std::int64_t startNs = 0, endNs = 0;  // from Profile::originNs
  std::int64_t bytes = 0;               // copies and sets
  bool operator==(const GpuEventRecord&) const = default;
};
std::string_view gpuEventKindName(GpuEventRecord::Kind kind);  // "kernel", "memcpy", "memset"

// What the GPU source recorded over the measured runs, and what it could not attribute.
struct GpuSummary {
  std::string source;  // "cupti"
  std::int64_t kernels = 0, memcpys = 0, memsets = 0;
  std::int64_t unattributed = 0;       // records no node launched (work outside any node)
  std::int64_t dropped = 0;            // records the source or the capture budget dropped
  std::int64_t invalidTimestamps = 0;  // records with a zero or reversed time span
  double unattributedSeconds = 0;
  bool operator==(const GpuSummary&) const = default;
};

struct MachineInfo {
  std::string host;
  std::string cpu;           // model name
  std::int64_t threads = 0;  // hardware threads
  bool operator==(const MachineInfo&) const = default;
};

struct Profile {
  static constexpr int kSchemaVersion = 1;
  std::string graph = "optimized";  // the graph node ids refer to: "original" or "optimized"
  std::string name;                 // the profiled file or function, for headers
  MachineInfo machine;
  std::string date;  // ISO 8601, UTC
  FunctionSummary function;
  std::vector<NodeProfile> nodes;  // outer nodes in schedule order, each frame's nodes after it
  MemorySummary memory;
  std::vector<RewritePhaseRow> rewritePhases;
  std::vector<RewriterRow> rewriters;
  // The machine's peaks (profiling/calibration.h, Calibration::toJson), when known.
  std::optional<nlohmann::json> calibration;
  CaptureInfo capture;
  std::int64_t originNs = 0;  // steady-clock time the events are relative to
  std::vector<RunSpan> runs;
  std::vector<NodeEventRecord> events;  // in time order
  // With a GPU source (ProfileRunOptions::gpu): its summary and records, by start time.
  std::optional<GpuSummary> gpu;
  std::vector<GpuEventRecord> gpuEvents;

  // The index into nodes of (framePath, id), or -1.
  std::int64_t find(const std::vector<std::int64_t>& framePath, std::int64_t id) const;
  bool operator==(const Profile&) const = default;
};

}  // namespace tscope::prof
