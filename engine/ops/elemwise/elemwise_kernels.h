#pragma once
// The CPU loops behind Elemwise::perform (and SumToShape): one inner-row function per (scalar op,
// kernel dtype), chosen once per call, and a strided n-d driver that calls it once per row.
//
// Note [Elemwise kernel layout]: an inner function computes one row of n elements,
//   out[i * outStride] = f(in0[i * s0], in1[i * s1], ...)   for i in [0, n)
// with strides in elements. Its contiguous case (every stride 1) and the binary cases with one
// operand broadcast along the row (stride 0) run as blocked loops the compiler vectorizes at -O2;
// every other stride pattern runs a plain strided loop. The driver coalesces axes so that
// contiguous or simply broadcast tensors become a few long rows, and a same-shape contiguous call
// is a single row: no per-element dispatch anywhere, no allocation on the same-shape path.

#include "engine/ops/elemwise/scalar_op.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tscope::engine {

// One row of an elementwise kernel (Note [Elemwise kernel layout]). in[k] points at operand k's
// first element of the row; outStride and inStrides[k] count elements of each operand's own type.
using ElemwiseRowFn = void (*)(char* out, std::int64_t outStride, const char* const* in,
                               const std::int64_t* inStrides, std::int64_t n);

// The row function of op on kernel dtype `dtype` (never Float16: half values are computed in
// float32), or null when the op has no kernel for it (a float-only op on an integer dtype, Cast,
// which converts through Tensor::copyFrom). Second's kernel is the identity: callers pass b alone.
// Operand dtypes: every operand has `dtype`, except Switch's condition, which is bool. The output
// is bool for comparisons and logic, else `dtype`.
ElemwiseRowFn elemwiseRowKernel(ScalarOp op, DType dtype);

// Note [Kernel instruction sets] (elemwise_rows_impl.h): the row functions are built for several
// instruction sets; elemwiseRowKernel uses the widest this CPU runs (TSCOPE_CPU_KERNELS=base|avx2
// narrows it, for comparisons).
enum class KernelSet : std::uint8_t { Base, Avx2, Avx512 };
KernelSet activeKernelSet();
// The sets this build has and this CPU runs, narrowest first (always Base).
std::vector<KernelSet> availableKernelSets();
const char* kernelSetName(KernelSet set);
// The row function of a given set (one of availableKernelSets()).
ElemwiseRowFn elemwiseRowKernel(ScalarOp op, DType dtype, KernelSet set);

// Runs fn over out's elements (out's shape is the broadcast shape; every operand broadcasts to it
// with numpy's rules). out may be exactly one of the operands (in place), never a partial overlap.
void runElemwiseKernel(ElemwiseRowFn fn, Tensor& out, std::span<const Tensor* const> operands);

// The numpy broadcast of runtime shapes; false when two sizes other than 1 disagree on an axis.
bool broadcastRuntimeShapes(std::span<const Tensor* const> tensors, Shape& out);

// A strided loop over `shape` for several operands (operand strides in elements, one per axis of
// shape, 0 where an operand is broadcast), coalesced into as few rows as the strides allow.
class RowLoop {
 public:
  static constexpr int kMaxOperands = 4;
  // strides[k] has shape.size() entries; itemSizes[k] is operand k's element size in bytes.
  RowLoop(std::span<const std::int64_t> shape, std::span<char* const> bases,
          std::span<const std::int64_t* const> strides, std::span<const std::size_t> itemSizes);

  // Calls row(ptrs, innerStrides, n) once per row; ptrs[k] is operand k's first element of the row.
  template <class Row>
  void run(Row&& row) const {
    if (m_empty) return;
    char* ptrs[kMaxOperands];
    for (int k = 0; k < m_nOperands; ++k) ptrs[k] = m_bases[k];
    const int outer = static_cast<int>(m_dims.size()) - 1;
    std::int64_t inner[kMaxOperands];
    for (int k = 0; k < m_nOperands; ++k)
      inner[k] = m_strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(outer)];
    std::int64_t index[32] = {};
    std::vector<std::int64_t> bigIndex;
    std::int64_t* idx = index;
    if (outer > 32) {
      bigIndex.assign(static_cast<std::size_t>(outer), 0);
      idx = bigIndex.data();
    }
    const std::int64_t n = m_dims[static_cast<std::size_t>(outer)];
    for (;;) {
      row(static_cast<char* const*>(ptrs), static_cast<const std::int64_t*>(inner), n);
      int axis = outer - 1;
      for (; axis >= 0; --axis) {
        const auto a = static_cast<std::size_t>(axis);
        ++idx[axis];
        for (int k = 0; k < m_nOperands; ++k)
          ptrs[k] += m_byteStrides[static_cast<std::size_t>(k)][a];
        if (idx[axis] < m_dims[a]) break;
        for (int k = 0; k < m_nOperands; ++k)
          ptrs[k] -= m_byteStrides[static_cast<std::size_t>(k)][a] * m_dims[a];
        idx[axis] = 0;
      }
      if (axis < 0) return;
    }
  }

 private:
  int m_nOperands = 0;
  bool m_empty = false;
  std::vector<std::int64_t> m_dims;                      // coalesced; never empty
  std::vector<std::vector<std::int64_t>> m_strides;      // per operand, elements
  std::vector<std::vector<std::int64_t>> m_byteStrides;  // per operand, bytes
  char* m_bases[kMaxOperands] = {};
};

// The strides of t broadcast to `shape` (right-aligned; 0 on missing and stretched axes).
std::vector<std::int64_t> broadcastStrides(const Tensor& t, std::span<const std::int64_t> shape);

}  // namespace tscope::engine
