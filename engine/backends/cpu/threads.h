#pragma once
// The engine's intra-op threads: one count for every CPU kernel that splits its work over
// threads, today OpenBLAS's matrix products (Dot, Gemm, the GEMMs of im2col convolutions),
// oneDNN's convolutions (engine/backends/cpu/dnnl_conv.h, on OpenMP's threads) and the engine's
// own parallel loops (parallel.h, on the same OpenMP threads).
//
//   cpu::setIntraOpThreads(1);   // benchmarks: one thread, as their peers run
//   int n = cpu::intraOpThreads();
//
// The default is TSCOPE_NUM_THREADS when it is set to a number >= 1, else the number of CPUs this
// process may run on (its affinity mask). `tensorscope run/profile --threads N` sets it.
//
// Note [Deterministic threads]: the convolution and GEMM kernels split their outputs among
// threads, never one output's sum, so their results do not depend on the thread count, except
// where OpenBLAS or oneDNN choose a different blocking of the reduction for another count (then
// the last bits of a float32 sum may differ: rounding, not a different result). The fused
// convolutions' activation, channel-last max pooling and the channel-block reorders split their
// work over the same threads (parallel.h, Note [Parallel loops]), each element computed as on one
// thread; elementwise ops, reductions, softmax and other pooling run on the calling thread (why:
// Note [Parallel loops]).

namespace tscope::engine::cpu {

// The current count (>= 1).
int intraOpThreads();
// Sets the count for every kernel (n < 1 counts as 1), OpenBLAS's included.
void setIntraOpThreads(int n);
// The CPUs this process may run on (>= 1).
int availableCpus();

}  // namespace tscope::engine::cpu
