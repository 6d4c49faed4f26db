#include "profiling/simulated_gpu_source.h"

#include <thread>

namespace tscope::prof {

// The pushed external ids of each thread (CUPTI's per-thread stack); 0 for a push made while not
// recording, so its pop stays balanced.
class SimulatedGpuSource::Sink final : public engine::CorrelationSink {
 public:
  Sink(std::shared_ptr<const std::atomic<bool>> recording, std::shared_ptr<NodeKeyTable> table)
      : m_recording(std::move(recording)), m_table(std::move(table)) {}
  void push(std::span<const std::int64_t> framePath, std::int64_t nodeId) override {
    t_stack.push_back(m_recording->load() ? m_table->idFor(framePath, nodeId) : 0);
  }
  void pop() override {
    if (!t_stack.empty()) t_stack.pop_back();
  }
  static std::uint64_t top() { return t_stack.empty() ? 0 : t_stack.back(); }

 private:
  static thread_local std::vector<std::uint64_t> t_stack;
  const std::shared_ptr<const std::atomic<bool>> m_recording;
  const std::shared_ptr<NodeKeyTable> m_table;
};
thread_local std::vector<std::uint64_t> SimulatedGpuSource::Sink::t_stack;

SimulatedGpuSource::SimulatedGpuSource(std::int64_t maxRecords)
    : m_sink(std::make_shared<Sink>(m_recording, m_table)),
      m_pending(INT64_MAX),
      m_activity(maxRecords) {}

SimulatedGpuSource::~SimulatedGpuSource() {
  m_recording->store(false);
}

std::shared_ptr<engine::CorrelationSink> SimulatedGpuSource::correlationSink() {
  return m_sink;
}

void SimulatedGpuSource::start() {
  m_recording->store(true);
}

void SimulatedGpuSource::flush() {
  const std::lock_guard lock(m_mutex);
  m_pending.countBuffer();
  m_activity.merge(std::move(m_pending));
}

void SimulatedGpuSource::stop() {
  flush();
  m_recording->store(false);
}

bool SimulatedGpuSource::recording() const {
  return m_recording->load();
}

GpuActivity SimulatedGpuSource::takeActivity() {
  const std::lock_guard lock(m_mutex);
  GpuActivity out(m_activity.maxRecords());
  std::swap(out, m_activity);
  return out;
}

// Called with m_mutex held.
std::uint32_t SimulatedGpuSource::launch(const char* api, std::int64_t startNs) {
  const std::uint32_t correlation = m_nextCorrelation++;
  if (const std::uint64_t external = Sink::top())
    m_pending.add(ExternalCorrelationRecord{kExternalKindCustom0, external, correlation});
  ApiRecord a;
  a.name = api;
  a.correlationId = correlation;
  a.startNs = startNs > 0 ? startNs - 1 : 0;
  a.endNs = startNs;
  a.threadId = static_cast<std::uint32_t>(std::hash<std::thread::id>()(std::this_thread::get_id()));
  m_pending.add(std::move(a));
  return correlation;
}

std::uint32_t SimulatedGpuSource::launchKernel(KernelRecord kernel) {
  const std::lock_guard lock(m_mutex);
  if (!m_recording->load()) return 0;
  kernel.correlationId = launch("cudaLaunchKernel", kernel.startNs);
  const std::uint32_t c = kernel.correlationId;
  m_pending.add(std::move(kernel));
  return c;
}

std::uint32_t SimulatedGpuSource::copy(MemcpyRecord copy) {
  const std::lock_guard lock(m_mutex);
  if (!m_recording->load()) return 0;
  copy.correlationId = launch("cudaMemcpyAsync", copy.startNs);
  const std::uint32_t c = copy.correlationId;
  m_pending.add(std::move(copy));
  return c;
}

std::uint32_t SimulatedGpuSource::set(MemsetRecord set) {
  const std::lock_guard lock(m_mutex);
  if (!m_recording->load()) return 0;
  set.correlationId = launch("cudaMemsetAsync", set.startNs);
  const std::uint32_t c = set.correlationId;
  m_pending.add(std::move(set));
  return c;
}

void SimulatedGpuSource::dropRecords(std::int64_t n) {
  const std::lock_guard lock(m_mutex);
  m_pending.addDroppedBySource(n);
}

}  // namespace tscope::prof
