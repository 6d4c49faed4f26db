#include "profiling/cupti/cupti_decode.h"

namespace tscope::prof::cupti {

namespace {

// CUPTI timestamps are unsigned; ours are signed nanoseconds (a value past 2^63 is not a time).
std::int64_t ns(std::uint64_t t) {
  return t > static_cast<std::uint64_t>(INT64_MAX) ? 0 : static_cast<std::int64_t>(t);
}

MemcpyKind memcpyKind(std::uint8_t k) {
  return k <= CUPTI_ACTIVITY_MEMCPY_KIND_PTOP ? static_cast<MemcpyKind>(k) : MemcpyKind::Unknown;
}

SyncRecord::Kind syncKind(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return SyncRecord::Kind::EventSynchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return SyncRecord::Kind::StreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return SyncRecord::Kind::StreamSynchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return SyncRecord::Kind::ContextSynchronize;
    default:
      return SyncRecord::Kind::Unknown;
  }
}

std::string overheadName(CUpti_ActivityOverheadKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "activity buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "CUPTI resources";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "activity buffer request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
      return "unified memory activity init";
    default:
      return "unknown (" + std::to_string(static_cast<std::uint32_t>(k)) + ")";
  }
}

}  // namespace

const std::string& Decoder::kernelName(const char* raw) {
  static const std::string kUnnamed = "(unnamed kernel)";
  if (!raw || !*raw) return kUnnamed;
  auto [it, fresh] = m_kernelNames.try_emplace(raw);
  if (fresh) it->second = demangleKernelName(raw);
  return it->second;
}

const std::string& Decoder::apiName(ApiRecord::Domain domain, std::uint32_t cbid) {
  const std::uint64_t key = (static_cast<std::uint64_t>(domain) << 32) | cbid;
  auto [it, fresh] = m_apiNames.try_emplace(key);
  if (fresh) {
    if (m_names) it->second = m_names(domain, cbid);
    if (it->second.empty()) it->second = "cbid " + std::to_string(cbid);
  }
  return it->second;
}

namespace {
// The fields every device record (kernel, copy, set) shares: its span, where it ran and its
// correlation id.
template <typename Record, typename Raw>
void deviceFields(Record& r, const Raw& raw) {
  r.startNs = ns(raw.start);
  r.endNs = ns(raw.end);
  r.device = raw.deviceId;
  r.context = raw.contextId;
  r.stream = raw.streamId;
  r.correlationId = raw.correlationId;
}
}  // namespace

void Decoder::decode(const CUpti_Activity& record, GpuActivity& into) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      KernelRecord r;
      deviceFields(r, k);
      r.name = kernelName(k.name);
      r.grid = {k.gridX, k.gridY, k.gridZ};
      r.block = {k.blockX, k.blockY, k.blockZ};
      r.registersPerThread = k.registersPerThread;
      r.staticSharedBytes = k.staticSharedMemory;
      r.dynamicSharedBytes = k.dynamicSharedMemory;
      into.add(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      MemcpyRecord r;
      deviceFields(r, m);
      r.kind = memcpyKind(m.copyKind);
      r.bytes = m.bytes;
      into.add(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record);
      MemcpyRecord r;
      deviceFields(r, m);
      r.kind = MemcpyKind::PtoP;
      r.bytes = m.bytes;
      into.add(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      MemsetRecord r;
      deviceFields(r, m);
      r.bytes = m.bytes;
      r.value = m.value;
      into.add(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = reinterpret_cast<const CUpti_ActivityAPI&>(record);
      ApiRecord r;
      r.startNs = ns(a.start);
      r.endNs = ns(a.end);
      r.domain = record.kind == CUPTI_ACTIVITY_KIND_RUNTIME ? ApiRecord::Domain::Runtime
                                                            : ApiRecord::Domain::Driver;
      r.cbid = a.cbid;
      r.name = apiName(r.domain, a.cbid);
      r.processId = a.processId;
      r.threadId = a.threadId;
      r.correlationId = a.correlationId;
      r.returnValue = static_cast<std::int32_t>(a.returnValue);
      into.add(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = reinterpret_cast<const CUpti_ActivitySynchronization2&>(record);
      SyncRecord r;
      r.startNs = ns(s.start);
      r.endNs = ns(s.end);
      r.kind = syncKind(s.type);
      r.context = s.contextId;
      r.stream = s.streamId;
      r.correlationId = s.correlationId;
      into.add(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = reinterpret_cast<const CUpti_ActivityOverhead3&>(record);
      OverheadRecord r;
      r.startNs = ns(o.start);
      r.endNs = ns(o.end);
      r.kind = overheadName(o.overheadKind);
      switch (o.objectKind) {
        case CUPTI_ACTIVITY_OBJECT_PROCESS:
          r.objectId = o.objectId.pt.processId;
          break;
        case CUPTI_ACTIVITY_OBJECT_THREAD:
          r.objectId = o.objectId.pt.threadId;
          break;
        default:
          r.objectId = o.objectId.dcs.deviceId;
          break;
      }
      into.add(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      into.add(ExternalCorrelationRecord{static_cast<std::uint32_t>(e.externalKind), e.externalId,
                                         e.correlationId});
      return;
    }
    default:
      into.countUnknownRecord();
      return;
  }
}

}  // namespace tscope::prof::cupti
