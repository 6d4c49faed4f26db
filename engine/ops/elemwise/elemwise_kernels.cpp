#include "engine/ops/elemwise/elemwise_kernels.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace tscope::engine {

// The row tables of Note [Kernel instruction sets] (elemwise_rows_impl.h).
namespace rows_base {
ElemwiseRowFn rowKernel(ScalarOp op, DType dtype);
}
#if defined(TSCOPE_HAVE_AVX2_KERNELS)
namespace rows_avx2 {
ElemwiseRowFn rowKernel(ScalarOp op, DType dtype);
}
#endif
#if defined(TSCOPE_HAVE_AVX512_KERNELS)
namespace rows_avx512 {
ElemwiseRowFn rowKernel(ScalarOp op, DType dtype);
}
#endif

namespace {

// The widest set this CPU (and its operating system) supports, found once.
KernelSet widestKernelSet() {
  static const KernelSet found = [] {
    KernelSet widest = KernelSet::Base;
#if defined(TSCOPE_HAVE_AVX2_KERNELS) || defined(TSCOPE_HAVE_AVX512_KERNELS)
    __builtin_cpu_init();
#endif
#if defined(TSCOPE_HAVE_AVX2_KERNELS)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) widest = KernelSet::Avx2;
#endif
#if defined(TSCOPE_HAVE_AVX512_KERNELS)
    if (widest == KernelSet::Avx2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw"))
      widest = KernelSet::Avx512;
#endif
    return widest;
  }();
  return found;
}

}  // namespace

KernelSet activeKernelSet() {
  static const KernelSet set = [] {
    const KernelSet widest = widestKernelSet();
    const char* asked = std::getenv("TSCOPE_CPU_KERNELS");
    const std::string_view want = asked ? asked : "";
    if (want == "base") return KernelSet::Base;
    if (want == "avx2") return std::min(widest, KernelSet::Avx2);
    return widest;
  }();
  return set;
}

std::vector<KernelSet> availableKernelSets() {
  std::vector<KernelSet> sets{KernelSet::Base};
  const KernelSet widest = widestKernelSet();
  if (widest >= KernelSet::Avx2) sets.push_back(KernelSet::Avx2);
  if (widest >= KernelSet::Avx512) sets.push_back(KernelSet::Avx512);
  return sets;
}

const char* kernelSetName(KernelSet set) {
  switch (set) {
    case KernelSet::Base:
      return "base";
    case KernelSet::Avx2:
      return "avx2";
    case KernelSet::Avx512:
      return "avx512";
  }
  return "?";
}

ElemwiseRowFn elemwiseRowKernel(ScalarOp op, DType dtype, KernelSet set) {
  switch (set) {
#if defined(TSCOPE_HAVE_AVX512_KERNELS)
    case KernelSet::Avx512:
      return rows_avx512::rowKernel(op, dtype);
#endif
#if defined(TSCOPE_HAVE_AVX2_KERNELS)
    case KernelSet::Avx2:
      return rows_avx2::rowKernel(op, dtype);
#endif
    default:
      return rows_base::rowKernel(op, dtype);
  }
}

ElemwiseRowFn elemwiseRowKernel(ScalarOp op, DType dtype) {
  return elemwiseRowKernel(op, dtype, activeKernelSet());
}

// --- The driver --------------------------------------------------------------------------------

bool broadcastRuntimeShapes(std::span<const Tensor* const> tensors, Shape& out) {
  std::size_t ndim = 0;
  for (const Tensor* t : tensors) ndim = std::max(ndim, t->shape().size());
  out.assign(ndim, 1);
  for (const Tensor* t : tensors) {
    const Shape& s = t->shape();
    const std::size_t lead = ndim - s.size();
    for (std::size_t a = 0; a < s.size(); ++a) {
      std::int64_t& o = out[lead + a];
      if (s[a] == 1) continue;
      if (o != 1 && o != s[a]) return false;
      o = s[a];
    }
  }
  return true;
}

std::vector<std::int64_t> broadcastStrides(const Tensor& t, std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> strides(shape.size(), 0);
  const std::size_t lead = shape.size() - t.shape().size();
  for (std::size_t a = 0; a < t.shape().size(); ++a)
    if (t.shape()[a] != 1 || shape[lead + a] == 1) strides[lead + a] = t.strides()[a];
  return strides;
}

RowLoop::RowLoop(std::span<const std::int64_t> shape, std::span<char* const> bases,
                 std::span<const std::int64_t* const> strides,
                 std::span<const std::size_t> itemSizes)
    : m_nOperands(static_cast<int>(bases.size())) {
  if (bases.size() > static_cast<std::size_t>(kMaxOperands))
    throw std::logic_error("RowLoop: at most 4 operands");
  for (int k = 0; k < m_nOperands; ++k) m_bases[k] = bases[static_cast<std::size_t>(k)];
  m_strides.resize(bases.size());
  for (std::int64_t d : shape)
    if (d == 0) m_empty = true;
  // Drop size-1 axes, then merge each axis into the one before it when every operand steps
  // through both as through one axis (stride[a-1] == stride[a] * dim[a]).
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == 1) continue;
    const bool merge = !m_dims.empty() && [&] {
      for (std::size_t k = 0; k < bases.size(); ++k)
        if (m_strides[k].back() != strides[k][a] * shape[a]) return false;
      return true;
    }();
    if (merge) {
      m_dims.back() *= shape[a];
      for (std::size_t k = 0; k < bases.size(); ++k) m_strides[k].back() = strides[k][a];
    } else {
      m_dims.push_back(shape[a]);
      for (std::size_t k = 0; k < bases.size(); ++k) m_strides[k].push_back(strides[k][a]);
    }
  }
  if (m_dims.empty()) {
    m_dims.push_back(1);
    for (auto& s : m_strides) s.push_back(0);
  }
  m_byteStrides.resize(bases.size());
  for (std::size_t k = 0; k < bases.size(); ++k) {
    m_byteStrides[k].resize(m_dims.size());
    for (std::size_t a = 0; a < m_dims.size(); ++a)
      m_byteStrides[k][a] = m_strides[k][a] * static_cast<std::int64_t>(itemSizes[k]);
  }
}

void runElemwiseKernel(ElemwiseRowFn fn, Tensor& out, std::span<const Tensor* const> operands) {
  constexpr std::size_t kMax = RowLoop::kMaxOperands - 1;
  if (operands.size() > kMax) throw std::logic_error("runElemwiseKernel: at most 3 operands");
  const Shape& shape = out.shape();
  // Same shape and contiguous everywhere: one row over all elements (and no allocation).
  bool flat = out.isContiguous();
  for (const Tensor* t : operands) flat = flat && t->shape() == shape && t->isContiguous();
  if (flat) {
    std::array<const char*, kMax> ptrs{};
    std::array<std::int64_t, kMax> ones{1, 1, 1};
    for (std::size_t k = 0; k < operands.size(); ++k)
      ptrs[k] = static_cast<const char*>(operands[k]->rawData());
    fn(static_cast<char*>(out.rawData()), 1, ptrs.data(), ones.data(), out.numel());
    return;
  }
  std::vector<std::vector<std::int64_t>> strides;
  strides.reserve(operands.size() + 1);
  strides.push_back(out.strides());
  for (const Tensor* t : operands) strides.push_back(broadcastStrides(*t, shape));
  std::array<char*, RowLoop::kMaxOperands> bases{};
  std::array<const std::int64_t*, RowLoop::kMaxOperands> stridePtrs{};
  std::array<std::size_t, RowLoop::kMaxOperands> sizes{};
  bases[0] = static_cast<char*>(out.rawData());
  sizes[0] = out.itemSize();
  for (std::size_t k = 0; k < operands.size(); ++k) {
    // The driver only reads through the operand pointers; RowLoop takes char* for every operand.
    bases[k + 1] = const_cast<char*>(static_cast<const char*>(operands[k]->rawData()));
    sizes[k + 1] = operands[k]->itemSize();
  }
  for (std::size_t k = 0; k < strides.size(); ++k) stridePtrs[k] = strides[k].data();
  const std::size_t n = operands.size() + 1;
  RowLoop loop(shape, std::span(bases.data(), n), std::span(stridePtrs.data(), n),
               std::span(sizes.data(), n));
  loop.run([&](char* const* ptrs, const std::int64_t* inner, std::int64_t count) {
    fn(ptrs[0], inner[0], ptrs + 1, inner + 1, count);
  });
}

}  // namespace tscope::engine
