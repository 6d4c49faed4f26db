#pragma once
// Loops of the engine's own CPU kernels split over the intra-op threads (threads.h): today the
// activation pass of the fused convolutions and channel-last max pooling, right after oneDNN's
// kernels on the same threads.
//
//   cpu::parallelFor(n, cpu::kElementwiseGrain, [&](std::int64_t begin, std::int64_t end) {
//     kernel(out + begin, in + begin, end - begin);
//   });
//
// Note [Parallel loops]: the ranges run on OpenMP's threads, the ones oneDNN's convolutions use, so
// after a convolution its workers are still awake (libgomp's spin a while after each region). The
// split is into at most intraOpThreads() contiguous ranges of at least `grain` elements (a small
// tensor stays on the calling thread, where a wake-up would cost more than the work), each
// starting on a multiple of 16 elements (whole SIMD vectors); each element is computed by the code
// that computes it on one thread, so results do not depend on the thread count. Why not every
// elementwise op: Elemwise and Composite split this way (measured 7 December 2026, 2-vCPU VM, the
// transformer encoder) made two threads 0.42-0.44x as fast as one (52 ms against 22-24 ms): its
// products run on OpenBLAS's own pthreads, whose workers spin after each product, and the OpenMP
// workers spin after each loop, so each pool's workers wait for a CPU the other's hold
// (OMP_WAIT_POLICY=PASSIVE: 1.12x; GOMP_SPINCOUNT=0: 1.34x; without the loops 1.20-1.34x). The
// elementwise ops go to the pool when the products run on the same one. Builds without OpenMP (no
// oneDNN) and ThreadSanitizer builds (libgomp is not instrumented: its barriers would read as
// races) run every range on the calling thread. An exception thrown by fn is rethrown on the
// calling thread after every range has finished.

#include <cstdint>
#include <functional>

namespace tscope::engine::cpu {

// Elements per thread below which a pass is not split (128 KiB of float32).
inline constexpr std::int64_t kElementwiseGrain = std::int64_t{1} << 15;

// align: every range but the first starts on a multiple of it (16: whole SIMD vectors of
// elements; 1 for loops over rows).
void parallelFor(std::int64_t n, std::int64_t grain,
                 const std::function<void(std::int64_t begin, std::int64_t end)>& fn,
                 std::int64_t align = 16);

// Whether parallelFor can run ranges on more than one thread in this build.
bool parallelLoopsAvailable();

}  // namespace tscope::engine::cpu
