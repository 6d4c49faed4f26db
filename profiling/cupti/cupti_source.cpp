// The CUPTI source (profiling/cupti_source.h): activity buffers requested and completed through
// CUPTI's callbacks, decoded on a worker thread, correlated to nodes through external ids.
#include "profiling/cupti_source.h"

#include "engine/vm/clock.h"
#include "profiling/cupti/buffer_queue.h"
#include "profiling/cupti/cupti_api.h"
#include "profiling/cupti/cupti_decode.h"
#include "profiling/gpu_clock.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace tscope::prof {

bool cuptiBuilt() {
  return true;
}

namespace cupti {
namespace {

// Note [CUPTI buffers]: CUPTI's buffer callbacks are plain functions without user data, and a
// process has one set of them, so one source at a time records (g_recording); the callbacks stay
// registered for the process and find that source through it. A completed buffer is only queued
// in the callback (decoding there would stall CUPTI's thread and the application's launches);
// the source's worker decodes it. A buffer completed while no source records is freed.
class CuptiSourceImpl;
std::atomic<CuptiSourceImpl*> g_recording{nullptr};
std::atomic<std::size_t> g_bufferBytes{4u << 20};
constexpr std::size_t kAlign = 8;  // CUPTI's record alignment

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords);
void CUPTIAPI bufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t size,
                              size_t validSize);

// The kinds we enable; the optional ones are skipped where the device does not support them.
struct KindToEnable {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
};
constexpr KindToEnable kKinds[] = {
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", true},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", true},
    // Kernels launched through the driver API (cuLaunchKernel: the fused kernels NVRTC compiles)
    // carry a driver call's correlation id; its external-correlation record needs this kind.
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", false},
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", true},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false},
};

// Note [Correlation]: one external id per node, pushed on the launching thread. A push that CUPTI
// refused (not recording) is remembered per thread, so its pop is skipped and the stack stays
// balanced.
class CuptiSink : public engine::CorrelationSink {
 public:
  CuptiSink(const CuptiApi& api, std::shared_ptr<NodeKeyTable> table,
            std::shared_ptr<const std::atomic<bool>> recording)
      : m_api(api), m_table(std::move(table)), m_recording(std::move(recording)) {}
  void push(std::span<const std::int64_t> framePath, std::int64_t nodeId) override {
    bool pushed = false;
    if (m_recording->load(std::memory_order_relaxed)) {
      const std::uint64_t id = m_table->idFor(framePath, nodeId);
      pushed = m_api.activityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                       id) == CUPTI_SUCCESS;
    }
    t_pushed.push_back(pushed);
  }
  void pop() override {
    if (t_pushed.empty()) return;
    const bool pushed = t_pushed.back();
    t_pushed.pop_back();
    std::uint64_t last = 0;
    if (pushed)
      m_api.activityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  }

 private:
  static thread_local std::vector<char> t_pushed;
  // Note [Sink lifetime] (gpu_source.h): the function table is a copy (libcupti stays loaded),
  // the table and the recording flag are shared with the source.
  const CuptiApi m_api;
  const std::shared_ptr<NodeKeyTable> m_table;
  const std::shared_ptr<const std::atomic<bool>> m_recording;
};
thread_local std::vector<char> CuptiSink::t_pushed;

class CuptiSourceImpl final : public GpuSource {
 public:
  CuptiSourceImpl(CuptiApi api, CuptiOptions options)
      : m_api(std::move(api)),
        m_options(std::move(options)),
        m_buffers(
            [api = m_api](std::uint8_t* buffer, std::size_t validSize, CUpti_Activity*& record) {
              return api.activityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS;
            },
            Decoder([api = m_api](ApiRecord::Domain domain, std::uint32_t cbid) -> std::string {
              const char* name = nullptr;
              const auto d = domain == ApiRecord::Domain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                  : CUPTI_CB_DOMAIN_DRIVER_API;
              if (api.getCallbackName(d, cbid, &name) == CUPTI_SUCCESS && name) return name;
              return {};
            }),
            m_options.maxRecords) {
    m_sink = std::make_shared<CuptiSink>(m_api, m_table, m_recording);  // Note [Sink lifetime]
  }
  ~CuptiSourceImpl() override {
    try {
      if (m_recording->load()) stop();
    } catch (...) {
      // A destructor does not throw; stop() failing leaves nothing of ours enabled anyway.
    }
  }

  std::string_view name() const override { return "cupti"; }

  void start() override {
    if (m_recording->load()) return;
    CuptiSourceImpl* none = nullptr;
    if (!g_recording.compare_exchange_strong(none, this))
      throw GpuSourceError(GpuSourceError::Kind::ProfilerConflict,
                           "another CUPTI source of this process is recording: stop it first");
    // At least 64 KiB, a multiple of the alignment (aligned_alloc's contract).
    const std::size_t bytes = std::max<std::size_t>(m_options.bufferBytes, 64u << 10);
    g_bufferBytes.store((bytes + kAlign - 1) / kAlign * kAlign);
    try {
      check(m_api.activityRegisterCallbacks(bufferRequested, bufferCompleted),
            "cuptiActivityRegisterCallbacks");
      for (const KindToEnable& k : kKinds) {
        const CUptiResult r = m_api.activityEnable(k.kind);
        if (r == CUPTI_SUCCESS) {
          m_enabled.push_back(k.kind);
        } else if (k.required ||
                   (r != CUPTI_ERROR_NOT_SUPPORTED && r != CUPTI_ERROR_INVALID_KIND)) {
          check(r, std::string("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_") + k.name + ")");
        }
      }
    } catch (...) {
      disableAll();
      g_recording.store(nullptr);
      throw;
    }
    m_recording->store(true);
    syncClocks();
  }

  void flush() override {
    if (m_options.synchronize) m_options.synchronize();
    if (!m_recording->load()) return;
    check(m_api.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    syncClocks();
    // Note [GPU flush]: the forced flush completed every buffer; wait until they are decoded.
    m_buffers.waitIdle();
  }

  void stop() override {
    if (!m_recording->load()) return;
    std::exception_ptr failure;
    try {
      flush();
    } catch (...) {
      failure = std::current_exception();
    }
    disableAll();
    m_api.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // what the disable completed
    m_buffers.waitIdle();
    m_recording->store(false);
    g_recording.store(nullptr);
    if (failure) std::rethrow_exception(failure);
  }

  std::shared_ptr<engine::CorrelationSink> correlationSink() override { return m_sink; }
  const NodeKeyTable& nodeKeys() const override { return *m_table; }

  GpuActivity takeActivity() override {
    GpuActivity out = m_buffers.take();
    {
      const std::lock_guard lock(m_clockMutex);
      out.toHostClock(m_clock);
    }
    return out;
  }

  // Called by bufferCompleted (any CUPTI thread).
  void enqueue(uint8_t* buffer, std::size_t validSize, std::size_t dropped) {
    m_buffers.enqueue(buffer, validSize, dropped);
  }
  const CuptiApi& api() const { return m_api; }

 private:
  void check(CUptiResult r, const std::string& call) const {
    if (r != CUPTI_SUCCESS) throw cuptiError(static_cast<int>(r), call, m_api.resultName(r));
  }

  void disableAll() {
    for (auto it = m_enabled.rbegin(); it != m_enabled.rend(); ++it) m_api.activityDisable(*it);
    m_enabled.clear();
  }

  // Note [GPU clock]: the narrowest of a few brackets.
  void syncClocks() {
    std::int64_t bestBefore = 0, bestAfter = 0;
    std::uint64_t bestGpu = 0;
    for (int k = 0; k < 5; ++k) {
      const std::int64_t before = engine::vmclock::nowNs();
      std::uint64_t gpu = 0;
      if (m_api.getTimestamp(&gpu) != CUPTI_SUCCESS || gpu == 0) return;  // no driver
      const std::int64_t after = engine::vmclock::nowNs();
      if (bestGpu == 0 || after - before < bestAfter - bestBefore) {
        bestBefore = before;
        bestAfter = after;
        bestGpu = gpu;
      }
    }
    const std::lock_guard lock(m_clockMutex);
    m_clock.addSample(bestBefore, static_cast<std::int64_t>(bestGpu), bestAfter);
  }

  CuptiApi m_api;
  CuptiOptions m_options;
  std::shared_ptr<NodeKeyTable> m_table = std::make_shared<NodeKeyTable>();
  std::shared_ptr<std::atomic<bool>> m_recording = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<CuptiSink> m_sink;
  std::vector<CUpti_ActivityKind> m_enabled;

  std::mutex m_clockMutex;
  HostClockMap m_clock;
  BufferQueue m_buffers;  // last: its worker stops first
};

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) {
  const std::size_t bytes = g_bufferBytes.load();
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, bytes));
  *size = *buffer ? bytes : 0;
  *maxNumRecords = 0;  // as many as fit
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t,
                              size_t validSize) {
  CuptiSourceImpl* source = g_recording.load();
  if (!source) {
    std::free(buffer);
    return;
  }
  std::size_t dropped = 0;
  if (source->api().activityGetNumDroppedRecords(context, streamId, &dropped) != CUPTI_SUCCESS)
    dropped = 0;
  source->enqueue(buffer, validSize, dropped);
}

}  // namespace
}  // namespace cupti

std::unique_ptr<GpuSource> makeCuptiSource(CuptiOptions options) {
  cupti::CuptiApi api = cupti::loadCupti(cupti::cuptiCandidates(options.library));
  return std::make_unique<cupti::CuptiSourceImpl>(std::move(api), std::move(options));
}

}  // namespace tscope::prof
