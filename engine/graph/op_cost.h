#pragma once
// OpCost: what one call of a node costs, declared by its op from the input shapes (Op::cost):
// floating-point operations and the bytes it reads and writes. The profiler turns it into achieved
// GFLOP/s, GB/s, arithmetic intensity and the fraction of the machine's roofline bound
// (profiling/roofline.h). An op that cannot say leaves `known` false; reports show "unknown",
// never 0.
//
// Counting conventions (docs/profiling.md): a multiply-add is 2 flops; a comparison, a max or a
// select counts 1; exp/log/tanh/erf and other transcendental functions count 1 each (what the
// roofline compares against is the machine's peak for FMA-heavy GEMM, so a transcendental op
// shows as far below compute-bound, which is the truth for such kernels). Bytes are the elements
// read from the inputs and written to the outputs times their dtype's size, each counted once
// (a broadcast input is read at its own size).

namespace tscope::engine {

struct OpCost {
  double flops = 0;
  double bytesRead = 0;
  double bytesWritten = 0;
  bool known = false;

  double bytes() const { return bytesRead + bytesWritten; }
  // Flops per byte moved; 0 when nothing is moved.
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0; }
  bool operator==(const OpCost&) const = default;
};

}  // namespace tscope::engine
