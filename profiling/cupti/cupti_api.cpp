#include "profiling/cupti/cupti_api.h"

#include <dlfcn.h>

namespace tscope::prof::cupti {

std::string CuptiApi::resultName(CUptiResult code) const {
  const char* s = nullptr;
  if (getResultString && getResultString(code, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(code));
}

std::vector<std::string> cuptiCandidates(const std::string& library) {
  if (!library.empty()) return {library};
  std::vector<std::string> out;
  // The soname of the toolkit the build used (CUDA_VERSION 13000 -> libcupti.so.13).
  const std::string soname = "libcupti.so." + std::to_string(CUDA_VERSION / 1000);
  out.push_back(soname);
  out.push_back("libcupti.so");
#ifdef TSCOPE_CUPTI_BUILD_DIR
  out.push_back(std::string(TSCOPE_CUPTI_BUILD_DIR) + "/" + soname);
#endif
  out.push_back("/usr/local/cuda/lib64/" + soname);
  return out;
}

namespace {
template <class F>
bool bind(void* handle, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return fn != nullptr;
}
}  // namespace

CuptiApi loadCupti(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& file : candidates) {
    if (!tried.empty()) tried += "; ";
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      tried += why ? std::string(why) : file + ": cannot be opened";
      continue;
    }
    CuptiApi api;
    api.handle = handle;
    api.path = file;
    std::string missing;
    bind(handle, "cuptiGetVersion", api.getVersion, missing);
    bind(handle, "cuptiGetResultString", api.getResultString, missing);
    bind(handle, "cuptiGetTimestamp", api.getTimestamp, missing);
    bind(handle, "cuptiGetCallbackName", api.getCallbackName, missing);
    bind(handle, "cuptiActivityEnable", api.activityEnable, missing);
    bind(handle, "cuptiActivityDisable", api.activityDisable, missing);
    bind(handle, "cuptiActivityRegisterCallbacks", api.activityRegisterCallbacks, missing);
    bind(handle, "cuptiActivityGetNextRecord", api.activityGetNextRecord, missing);
    bind(handle, "cuptiActivityGetNumDroppedRecords", api.activityGetNumDroppedRecords, missing);
    bind(handle, "cuptiActivityFlushAll", api.activityFlushAll, missing);
    bind(handle, "cuptiActivityPushExternalCorrelationId", api.activityPushExternalCorrelationId,
         missing);
    bind(handle, "cuptiActivityPopExternalCorrelationId", api.activityPopExternalCorrelationId,
         missing);
    if (missing.empty()) return api;
    dlclose(handle);
    tried += file + ": lacks " + missing + " (an older CUPTI?)";
  }
  throw GpuSourceError(GpuSourceError::Kind::CannotLoad,
                       "GPU profiling is off: CUPTI cannot be loaded (tried " + tried +
                           "); add the CUDA toolkit's lib64 to LD_LIBRARY_PATH");
}

GpuSourceError cuptiError(int code, std::string_view call, std::string_view resultName) {
  using Kind = GpuSourceError::Kind;
  const std::string where = " (" + std::string(call) + " returned " + std::string(resultName) +
                            ", " + std::to_string(code) +
                            "); GPU records are off, the CPU profile goes on";
  switch (code) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return GpuSourceError(Kind::ProfilerConflict,
                            "another profiler holds CUPTI: usually Nsight Systems/Compute, "
                            "compute-sanitizer, or a framework profiler such as PyTorch's "
                            "Kineto; run without it" +
                                where,
                            code);
    case CUPTI_ERROR_UNKNOWN:
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_INVALID_DEVICE:
      return GpuSourceError(Kind::NoGpu, "no GPU: CUPTI found no CUDA driver or device" + where,
                            code);
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return GpuSourceError(Kind::NoPermission,
                            "the driver lets only administrators profile the GPU "
                            "(NVreg_RestrictProfilingToAdminUsers): run as root or lift the "
                            "restriction" +
                                where,
                            code);
    default:
      return GpuSourceError(Kind::Failed, "CUPTI failed" + where, code);
  }
}

}  // namespace tscope::prof::cupti
