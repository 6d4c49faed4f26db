#pragma once
// The CUPTI functions the source calls, loaded from libcupti at run time (Note [CUPTI at run
// time] in profiling/cupti_source.h), and CUPTI's result codes mapped to GpuSourceError.
// Internal to profiling/cupti/.

#include "profiling/gpu_source.h"

#include <cupti.h>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::prof::cupti {

struct CuptiApi {
  void* handle = nullptr;
  std::string path;  // the file that was opened
  CUptiResult (*getVersion)(uint32_t*) = nullptr;
  CUptiResult (*getResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*getTimestamp)(uint64_t*) = nullptr;
  CUptiResult (*getCallbackName)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
  CUptiResult (*activityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*activityDisable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*activityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                           CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*activityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*activityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*activityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*activityPushExternalCorrelationId)(CUpti_ExternalCorrelationKind,
                                                   uint64_t) = nullptr;
  CUptiResult (*activityPopExternalCorrelationId)(CUpti_ExternalCorrelationKind,
                                                  uint64_t*) = nullptr;

  // The name CUPTI gives a result ("CUPTI_ERROR_UNKNOWN"), or "CUPTI error <code>".
  std::string resultName(CUptiResult code) const;
};

// The files makeCuptiSource tries, in order (`library` alone when it is set).
std::vector<std::string> cuptiCandidates(const std::string& library);
// Opens the first candidate that loads and has every function; CannotLoad otherwise, naming
// each file tried and why. The handle stays open for the process (CUPTI cannot be unloaded
// safely once it was initialised).
CuptiApi loadCupti(const std::vector<std::string>& candidates);

// The error for a CUPTI call that returned `code` (not CUPTI_SUCCESS): its kind, and a one-line
// message naming the call, the result and what to do. `resultName` is CuptiApi::resultName's.
GpuSourceError cuptiError(int code, std::string_view call, std::string_view resultName);

}  // namespace tscope::prof::cupti
