#pragma once
// Decoding CUPTI activity records (CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4, API,
// Synchronization2, Overhead3, ExternalCorrelation) into our records (profiling/gpu_records.h).
// A pure function of the structs: no CUPTI call, so tst_cupti_decode builds the structs in memory.
// Internal to profiling/cupti/.

#include "profiling/gpu_records.h"

#include <cupti.h>
#include <functional>
#include <string>
#include <unordered_map>

namespace tscope::prof::cupti {

class Decoder {
 public:
  // The name of an API call (cuptiGetCallbackName); null or an empty result: "cbid <n>".
  using ApiNames = std::function<std::string(ApiRecord::Domain, std::uint32_t cbid)>;
  explicit Decoder(ApiNames names = nullptr) : m_names(std::move(names)) {}

  // Adds the record to `into` (an unknown kind is counted there). Names are demangled once per
  // distinct name.
  void decode(const CUpti_Activity& record, GpuActivity& into);

 private:
  const std::string& kernelName(const char* raw);
  const std::string& apiName(ApiRecord::Domain domain, std::uint32_t cbid);

  ApiNames m_names;
  std::unordered_map<std::string, std::string> m_kernelNames;
  std::unordered_map<std::uint64_t, std::string> m_apiNames;
};

}  // namespace tscope::prof::cupti
