#pragma once
// Loops the engine's own CPU kernels split over the intra-op threads (threads.h): elementwise ops
// and the activation pass of the fused convolutions today.
//
//   cpu::parallelFor(n, cpu::kElementwiseGrain, [&](std::int64_t begin, std::int64_t end) {
//     kernel(out + begin, in + begin, end - begin);
//   });
//
// Note [Parallel loops]: the ranges run on OpenMP's threads, the ones oneDNN's convolutions
// already use, so no second pool's workers spin for the same CPUs (after a parallel region
// libgomp's workers keep spinning for a while: a pool of our own would start each loop against
// them). The split is into at most intraOpThreads() contiguous ranges of at least `grain`
// elements (so small tensors stay on the calling thread, where a wake-up would cost more than the
// work), each starting on a multiple of 16 elements (whole SIMD vectors). Each element is computed
// by exactly the code that computes it on one thread, so results do not depend on the thread
// count (Note [Deterministic threads] in threads.h). Builds without OpenMP (no oneDNN) and
// ThreadSanitizer builds (libgomp is not instrumented: its barriers would read as races) run
// every range on the calling thread. An exception thrown by fn is rethrown on the calling thread
// after every range has finished.

#include <cstdint>
#include <functional>

namespace tscope::engine::cpu {

// Elements below which an elementwise pass is not split (128 KiB of float32 per thread).
inline constexpr std::int64_t kElementwiseGrain = std::int64_t{1} << 15;

void parallelFor(std::int64_t n, std::int64_t grain,
                 const std::function<void(std::int64_t begin, std::int64_t end)>& fn);

// Whether parallelFor can run ranges on more than one thread in this build.
bool parallelLoopsAvailable();

}  // namespace tscope::engine::cpu
