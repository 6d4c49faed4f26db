#pragma once
// CUDA source for the shape and indexing kernels (shape_kernel.cpp): strided copies with numpy's
// astype conversion, fills, and the row gather / scatter of AdvancedSubtensor1 and
// AdvancedIncSubtensor1. Pure text generation, like elemwise_codegen.h: no CUDA type, no device
// (tests/engine/cuda/tst_cuda_codegen.cpp compiles every kernel with NVRTC).
//
// Note [Shape kernels]: views (Reshape where strides allow, Subtensor, Split, DimShuffle) are
// metadata and launch nothing; copies go through these kernels, whose operands are seen through
// an index struct of at most kMaxRank axes after adjacent axes are merged (coalesceAxes):
//   <copy>(n, ix, dst, src)      dst[i] = convert(src[i]) or dst[i] += convert(src[i]) over the
//                                shape in ix, each operand with its own strides (0 broadcasts);
//                                convert is numpy's astype (detail::convertValue): float to
//                                integer truncates through int64, to bool is "!= 0";
//   <fill>(n, ix, dst, value)    dst[i] = value, value passed by value in dst's dtype;
//   <gather>(nIdx, rowLen, nRows, idx, x, out, bad)
//                                out row k = x row idx[k] (x and out contiguous); an index
//                                outside [-nRows, nRows) records the smallest such k in *bad
//                                (atomicMin) and the host raises the CPU's error;
//   <scatter>_check(nIdx, nRows, idx, bad)           the same bounds check, before any write;
//   <scatter>_winner(nIdx, nRows, idx, winner)       set: winner[row] = the last k naming row
//                                                    (atomicMax), so "the last write wins" as
//                                                    on the CPU;
//   <scatter>_write(nIdx, rowLen, nRows, idx, winner, y, out)
//                                set: row idx[k] of out = row k of y where k is the winner;
//                                inc: atomicAdd of row k of y into row idx[k] (duplicates
//                                accumulate, in an order the hardware picks: float sums may
//                                differ from the CPU's in the last bits).
// Integer index vectors of any integer dtype are read on the device as int64.

#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <vector>

namespace tscope::engine::cuda {

// The device functions the shape kernels add to the scalar prelude: ts_convert<To>(x), numpy's
// astype.
const std::string& shapePrelude();

GeneratedSource generateCopy(DType dst, DType src, bool add);
GeneratedSource generateFill(DType dtype);
GeneratedSource generateGather(DType dtype, DType index);
// inc: dtypes with a device atomicAdd only (scatterIncSupported).
GeneratedSource generateScatter(DType dtype, DType index, bool set);
bool scatterIncSupported(DType dtype);

// Operands over one shape, each with its strides in elements; coalesceAxes merges adjacent axes
// that every operand walks as one (stride[d] == stride[d+1] * size[d+1] for all), drops axes of
// size 1, and gives a rank-0 shape rank 1 (size 1). The element order is unchanged.
struct StridedOperands {
  Shape shape;
  std::vector<Strides> strides;  // one per operand
};
StridedOperands coalesceAxes(const Shape& shape, std::vector<Strides> strides);

}  // namespace tscope::engine::cuda
