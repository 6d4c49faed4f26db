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

// More conventions (the full table per op family is in docs/profiling.md, "Cost model and
// roofline"): an n-ary add/mul/min/max is n - 1 flops, clip 2, cast/identity/second 0; an inplace
// output is still written; a view or a shape query is known with 0 flops and 0 bytes (Shape,
// ShapeI and MakeVector count the int64s they write); a gather reads the elements it picks (and
// its indices), not its whole source; a scatter reads and writes the region it addresses and,
// when not inplace, copies its destination first; a reduction is one flop per input element; the
// scratch buffers a kernel chooses (im2col, Composite blocks) are not counted. Ops with an inner
// graph (OpFromGraph, IfElse) are unknown: their inner nodes are counted on their own. Helpers
// for writing Op::cost are in engine/ops/cost_common.h.
