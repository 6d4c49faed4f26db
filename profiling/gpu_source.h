#pragma once
// GpuSource: an event source for GPU work (kernels, copies, sets), as the profiler and the CLI
// see it; no CUDA types. The CUPTI source (profiling/cupti_source.h) is the one we build.
//
//   std::unique_ptr<GpuSource> gpu = makeCuptiSource();   // throws GpuSourceError
//   gpu->start();                                         // throws GpuSourceError ("no GPU")
//   vm.setCorrelationSink(gpu->correlationSink());
//   ... run; synchronise the device ...
//   gpu->flush();                                         // every record so far is decoded
//   GpuActivity a = gpu->takeActivity();                  // on the host steady clock
//   GpuAttribution per = correlate(a, gpu->nodeKeys());
//
// Every failure is a GpuSourceError with a kind the caller tests and a one-line message; the CPU
// profiler goes on without the GPU source.

#include "engine/vm/correlation.h"
#include "profiling/gpu_records.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tscope::prof {

class GpuSourceError : public std::runtime_error {
 public:
  enum class Kind {
    NotBuilt,          // this build has no CUPTI (configured without CUDA::cupti)
    CannotLoad,        // libcupti could not be opened, or lacks a function we call
    ProfilerConflict,  // another profiler holds CUPTI (CUPTI error 39)
    NoGpu,             // no GPU or no driver (CUPTI error 999, not initialized, no device)
    NoPermission,      // the driver restricts profiling to administrators
    Failed,            // any other CUPTI failure
  };
  GpuSourceError(Kind kind, const std::string& message, int code = 0)
      : std::runtime_error(message), m_kind(kind), m_code(code) {}
  Kind kind() const { return m_kind; }
  // The CUPTI result code, 0 when none.
  int code() const { return m_code; }

 private:
  Kind m_kind;
  int m_code;
};
std::string_view gpuSourceErrorKindName(GpuSourceError::Kind kind);  // "not-built", "no-gpu", ...

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual std::string_view name() const = 0;  // "cupti"
  // Begins recording; GpuSourceError when the GPU tooling refuses (nothing is left enabled).
  virtual void start() = 0;
  // Note [GPU flush]: hands every buffered record to the decoder and waits until it is decoded.
  // The caller synchronises the device first (its work must be complete to be recorded), or sets
  // a synchronize hook (CuptiOptions::synchronize). Called at the end of each profiled run.
  virtual void flush() = 0;
  // Flushes and stops recording; start() may be called again.
  virtual void stop() = 0;
  // The sink to install on the VM (Note [Correlation]). Note [Sink lifetime]: it shares what it
  // needs with the source, so a VM that keeps it after the source is gone (or stopped) pushes
  // nothing and stays balanced.
  virtual std::shared_ptr<engine::CorrelationSink> correlationSink() = 0;
  // The external ids the sink handed out (Note [GPU correlation]).
  virtual const NodeKeyTable& nodeKeys() const = 0;
  // The records decoded so far, moved out, with timestamps on the host steady clock.
  virtual GpuActivity takeActivity() = 0;
};

}  // namespace tscope::prof
