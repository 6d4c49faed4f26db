#pragma once
// The value scans of NanGuard (engine/debug/nan_guard.h): a quick pass over a value that only says
// whether anything is bad, and a detailed pass, run only then, for the counts and first indices.
//
// Note [One pass per value]: the quick pass reads each element once with independent lanes the
// compiler vectorises: sum(x * 0) is NaN exactly when some x is NaN or infinite, and max|x| over
// the same lanes decides "big". Only a value that fails it is read again (countBad).
//
// Note [Device scans]: a value on a GPU is scanned there. The backend's DeviceMemory::scan runs
// one NVRTC kernel over the value (engine/backends/cuda/scan_kernel.cpp: a grid-stride pass, warp
// shuffles, one atomic per warp into a 16-byte result) and copies back those 16 bytes: whether
// anything is NaN or infinite, and max |x|. The alternative, copying every device value to the
// host and scanning it there (what a device without a scan kernel, an integer value or the
// detailed countBad still get: Note [Reading device values]), costs the value's bytes over PCIe
// per node and call: for the MLP 784-500-10 SGD step at batch 1024, about 40 MB per step, some
// 3-4 ms at PCIe's 10-20 GB/s for pageable memory, against 20 us of device reads at 3 TB/s. Both
// synchronise the stream once per scanned value (the guard must stop at the first bad node, so
// the answer is needed before the next node runs): about 10 us per node on an H100, which is the
// cost left, and what makes a guarded GPU step slower than an unguarded one. A value that fails
// the quick pass is read again on the host for its counts and first index (countBad), once.
// GpuFromHost/HostFromGpu outputs are never scanned (Note [Transfers are not scanned] in
// nan_guard.cpp).

#include "engine/debug/nan_report.h"
#include "engine/tensor/tensor.h"

#include <array>
#include <cstdint>

namespace tscope::engine::debug {

struct QuickScan {
  bool nonFinite = false;
  double maxAbs = 0;  // of the elements, when asked for and everything is finite
};
// Integer and bool values are never non-finite (maxAbs is computed for them only when asked).
QuickScan quickScan(const Tensor& value, bool wantMaxAbs);

struct BadDetail {
  BadCounts counts;
  // Per kind (NaN, +inf, -inf, big in that order): the first flat (row-major) index, -1 if none,
  // and its value.
  std::array<std::int64_t, 4> first{-1, -1, -1, -1};
  std::array<double, 4> firstValue{0, 0, 0, 0};
  // The first flat index among the kinds in `kinds`, -1 if none.
  std::int64_t firstOf(NanChecks kinds, NanCheck* kind = nullptr) const;
};
// big: count |x| > bigThreshold for finite x.
BadDetail countBad(const Tensor& value, bool big, double bigThreshold);

// The row-major multi-index of a flat index in a shape.
std::vector<std::int64_t> unflatten(std::int64_t flat, const std::vector<std::int64_t>& shape);
// The element of `input` that an elementwise op with broadcasting reads for output element
// `outIndex` (numpy rules: leading dims missing, size-1 dims read index 0); nullopt when the
// input's shape does not broadcast to the output's.
std::optional<std::vector<std::int64_t>> broadcastIndex(const std::vector<std::int64_t>& outIndex,
                                                        const std::vector<std::int64_t>& inShape);

}  // namespace tscope::engine::debug
