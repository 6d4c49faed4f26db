#pragma once
// SimulatedGpuSource: a GpuSource without a GPU, producing the records CUPTI would for the
// launches a test (or a CPU kernel standing in for a GPU one) reports, so the whole chain (VM
// brackets -> sink -> records -> correlate) is tested on the CPU, the profiler's included.
//
//   SimulatedGpuSource gpu;
//   gpu.start();
//   vm.setCorrelationSink(gpu.correlationSink());
//   // inside a node's kernel:
//   gpu.launchKernel(kernelRecord);    // gets a correlation id, and the pushed node's external id
//   gpu.flush();
//   correlate(gpu.takeActivity(), gpu.nodeKeys());
//
// As CUPTI does (Note [GPU correlation]): each launch is an API record with a fresh correlation
// id; when a node is pushed on the launching thread, an external-correlation record names it.
// Records are held until flush() (CUPTI's buffers), and their timestamps are taken as given (on
// the host clock already).

#include "profiling/gpu_source.h"

#include <atomic>
#include <mutex>

namespace tscope::prof {

class SimulatedGpuSource final : public GpuSource {
 public:
  explicit SimulatedGpuSource(std::int64_t maxRecords = GpuActivity::kDefaultMaxRecords);
  ~SimulatedGpuSource() override;

  std::string_view name() const override { return "simulated"; }
  void start() override;
  void flush() override;
  void stop() override;
  std::shared_ptr<engine::CorrelationSink> correlationSink() override;
  const NodeKeyTable& nodeKeys() const override { return *m_table; }
  GpuActivity takeActivity() override;

  // A launch on this thread while recording (ignored otherwise); returns its correlation id
  // (0 when ignored). The record's correlationId is set here.
  std::uint32_t launchKernel(KernelRecord kernel);
  std::uint32_t copy(MemcpyRecord copy);
  std::uint32_t set(MemsetRecord set);
  // Records the "driver" could not keep (CUPTI's dropped count).
  void dropRecords(std::int64_t n);
  bool recording() const;

 private:
  class Sink;
  std::uint32_t launch(const char* api, std::int64_t startNs);

  mutable std::mutex m_mutex;
  // Shared with the sink, which may outlive the source (Note [Sink lifetime]).
  std::shared_ptr<std::atomic<bool>> m_recording = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<NodeKeyTable> m_table = std::make_shared<NodeKeyTable>();
  std::uint32_t m_nextCorrelation = 1;
  std::shared_ptr<Sink> m_sink;
  GpuActivity m_pending;  // not flushed yet
  GpuActivity m_activity;
};

}  // namespace tscope::prof
