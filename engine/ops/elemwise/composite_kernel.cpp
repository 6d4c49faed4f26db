// Composite::perform: the block interpreter (DESIGN.md "Backends").
//
// Note [Composite block interpreter]: the output's elements are visited in row-major order in
// blocks of a few hundred to a thousand elements (blockLength: a block's scratch stays about the
// size of L1). Per block, each input is a register view: a pointer into the input itself when the
// input is laid out like the output (contiguous, same element count: stride 1), a pointer to its
// only element when it has one (stride 0: broadcast scalars and 0-d constants cost nothing per
// element), else a block gathered into a scratch buffer through a coalesced strided walk
// (transposed inputs, rows and columns broadcast against a matrix). Then each instruction runs as
// one call of the same row kernel the unfused Elemwise uses (elemwiseRowKernel) over the block,
// from scratch registers into a scratch register; an instruction whose operands are all stride 0
// computes one element, once per block. Finally each output's register is stored into the output.
// Scratch is allocated once per call and registers share slots once their last reader has run, so
// the working set of a block stays in L1 and each tensor is read or written once.
//
// When a runtime shape broadcasts an output that its static type does not (an output that depends
// only on inputs whose runtime size is 1 along an axis where others are larger), the outputs do not
// all have the full shape; that case runs the program unfused, one Elemwise at a time.
//
// Note [Composite results]: the block interpreter converts operands and results exactly where
// Elemwise converts them (Note [Elemwise kernel dtypes]) and calls the same row kernels, so the
// results equal the unfused chain's bit for bit, with one exception: the row kernels of
// tanh/exp/log on contiguous float rows of 16 or more elements go through Eigen's vectorized
// functions (Note [Vectorized transcendentals]), other rows through the C library, which can
// differ in the last bits. Blocks keep the unfused choice on outputs laid out like the chain's
// intermediates: each block starts at a multiple of 16 elements in a 64-byte aligned scratch
// buffer and the last block is never shorter than 16 elements, so Eigen splits every row into the
// same packets and scalar tail as it splits the unfused full-size row. A transcendental applied
// directly to a gathered (non-contiguous or broadcast) input can still differ by a few ulp from the
// unfused strided loop.

#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/tensor/tensor.h"
// The numpy astype conversions, so that a cast or an operand conversion inside a Composite gives
// exactly what Tensor::astype gives the unfused Elemwise.
#include "engine/tensor/tensor_internal.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tscope::engine {

namespace {

// A last block shorter than this joins the block before it (Note [Composite results]): the row
// kernels use Eigen's vectorized functions only on rows of at least 16 elements. Blocks are
// multiples of it, so every block starts on a packet boundary.
constexpr std::int64_t kMinTail = 16;
// Longer blocks spread the per-block dispatch over more elements; the scratch of a block (one slot
// per live register, 8 bytes an element) should stay in L1.
constexpr std::int64_t kMaxBlock = 1024;
constexpr std::int64_t kMinBlock = 64;
constexpr std::int64_t kScratchBudget = 32 * 1024;
constexpr std::size_t kScratchAlignment = 64;

std::int64_t blockLength(int nSlots) {
  const std::int64_t fit = kScratchBudget / (8 * std::max(1, nSlots));
  return std::clamp(fit / kMinTail * kMinTail, kMinBlock, kMaxBlock);
}

// Note [Composite streaming]: every output line a plain store writes is first read from memory
// (read for ownership), only to be overwritten. Outputs of at least kStreamingBytes (larger than
// the caches: no reader will find them there) are written with non-temporal stores instead, which
// skip that read and do not evict the block's working set (5% faster on the chain of
// bench_fusion).
//
// Inputs of that size are read from memory as the first instruction of each block touches them,
// and the hardware prefetcher stops running ahead while the block's other instructions compute on
// scratch in L1, so reading and computing took turns. The interpreter therefore asks for the next
// block's input lines itself, a slice before each instruction (a whole block's worth at once
// would wait on the few line-fill buffers a core has): the reads of block k+1 overlap the
// arithmetic of block k.
constexpr std::size_t kStreamingBytes = std::size_t{8} << 20;

// Note [Prefetch in asm]: GCC 12 deletes a loop whose body is only __builtin_prefetch (its dead
// code elimination treats the prefetch as free of side effects once loops are assumed finite), so
// the slices of prefetchNext compiled to nothing and every block read its input lines on demand.
// On x86 the instruction is emitted with asm volatile, which the compiler keeps. bench_fusion
// measures the effect (fused tanh chain, kept buffers: 9.4 -> 7.8 ms).
inline void prefetchLine(const char* p) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm volatile("prefetcht0 %0" : : "m"(*p));
#elif defined(__GNUC__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

// memcpy with non-temporal stores where the target allows them (16-byte aligned runs).
void streamCopy(char* dst, const char* src, std::size_t bytes) {
#if defined(__SSE2__)
  const std::size_t head =
      std::min(bytes, (16 - (reinterpret_cast<std::uintptr_t>(dst) & 15)) & 15);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  for (; bytes >= 16; bytes -= 16, dst += 16, src += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
#endif
  std::memcpy(dst, src, bytes);
}

void streamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// out[i] = convert(in[i * inStride]) for i in [0, n); out is contiguous.
using ConvertRowFn = void (*)(char* out, const char* in, std::int64_t inStride, std::int64_t n);

template <class To, class From>
void convertRow(char* out, const char* in, std::int64_t inStride, std::int64_t n) {
  To* o = reinterpret_cast<To*>(out);
  const From* a = reinterpret_cast<const From*>(in);
  if (inStride == 1) {
    for (std::int64_t i = 0; i < n; ++i) o[i] = detail::convertValue<To>(a[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) o[i] = detail::convertValue<To>(a[i * inStride]);
  }
}

ConvertRowFn convertRowFn(DType to, DType from) {
  return dispatchDType(to, [&](auto t) {
    return dispatchDType(
        from, [&](auto f) -> ConvertRowFn { return &convertRow<decltype(t), decltype(f)>; });
  });
}

DType kernelDType(DType d) {
  return d == DType::Float16 ? DType::Float32 : d;
}

// dst[i * dstStride] = src[i * srcStride] for elements of S bytes (strides in bytes).
template <std::size_t S>
void copyElements(char* dst, std::int64_t dstStride, const char* src, std::int64_t srcStride,
                  std::int64_t n) {
  if (dstStride == static_cast<std::int64_t>(S) && srcStride == static_cast<std::int64_t>(S)) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * S);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) std::memcpy(dst + i * dstStride, src + i * srcStride, S);
}
using CopyFn = void (*)(char*, std::int64_t, const char*, std::int64_t, std::int64_t);
CopyFn copyFn(std::size_t itemSize) {
  switch (itemSize) {
    case 1:
      return &copyElements<1>;
    case 2:
      return &copyElements<2>;
    case 4:
      return &copyElements<4>;
    default:
      return &copyElements<8>;
  }
}

// A walk over the full shape in row-major order for one operand: its axes coalesced (size-1 axes
// dropped, an axis merged into the one before it when the operand steps through both as one),
// strides in bytes. Coalescing per operand keeps the row-major element order, so every operand can
// have its own.
struct Cursor {
  char* base = nullptr;
  std::size_t itemSize = 0;
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  mutable std::vector<std::int64_t> index;  // scratch for walk()

  Cursor(char* b, std::size_t item, std::span<const std::int64_t> shape,
         std::span<const std::int64_t> elementStrides)
      : base(b), itemSize(item) {
    for (std::size_t a = 0; a < shape.size(); ++a) {
      if (shape[a] == 1) continue;
      const std::int64_t s = elementStrides[a] * static_cast<std::int64_t>(item);
      if (!dims.empty() && strides.back() == s * shape[a]) {
        dims.back() *= shape[a];
        strides.back() = s;
      } else {
        dims.push_back(shape[a]);
        strides.push_back(s);
      }
    }
    if (dims.empty()) {
      dims.push_back(1);
      strides.push_back(0);
    }
    index.resize(dims.size());
  }

  // Calls run(pointer, count, innerStride, position) for the runs of elements [start, start + len)
  // of the walk, position counting from start.
  template <class Run>
  void walk(std::int64_t start, std::int64_t len, Run&& run) const {
    const std::size_t nd = dims.size();
    std::int64_t offset = 0;
    std::int64_t rest = start;
    for (std::size_t a = nd; a-- > 0;) {
      index[a] = rest % dims[a];
      rest /= dims[a];
      offset += index[a] * strides[a];
    }
    const std::size_t inner = nd - 1;
    std::int64_t done = 0;
    while (done < len) {
      const std::int64_t count = std::min(len - done, dims[inner] - index[inner]);
      run(base + offset, count, strides[inner], done);
      done += count;
      offset += count * strides[inner];
      index[inner] += count;
      for (std::size_t a = inner; a > 0 && index[a] == dims[a]; --a) {
        offset -= dims[a] * strides[a];
        index[a] = 0;
        ++index[a - 1];
        offset += strides[a - 1];
      }
    }
  }
};

// May an output be written into input k's buffer? (Elemwise's rule.) It must have the full shape
// and no two elements in one place, and every other input reading the same storage must read it
// through exactly the same view, so that each element is read before it is overwritten: the block
// interpreter reads a block of every input before it stores the block of any output.
bool canWriteInto(std::span<const Tensor* const> inputs, std::size_t k, const Shape& shape) {
  const Tensor& t = *inputs[k];
  if (t.device() != Device::Cpu || t.shape() != shape) return false;
  for (std::size_t a = 0; a < t.shape().size(); ++a)
    if (t.shape()[a] > 1 && t.strides()[a] == 0) return false;
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& u = *inputs[j];
    if (j == k || !u.sharesStorageWith(t)) continue;
    if (u.offset() != t.offset() || u.shape() != t.shape() || u.strides() != t.strides() ||
        u.dtype() != t.dtype())
      return false;
  }
  return true;
}

struct RegisterView {
  const char* ptr = nullptr;
  std::int64_t stride = 0;  // elements: 0 (one value for the whole block) or 1
};

struct AlignedDelete {
  void operator()(std::byte* p) const {
    ::operator delete[](p, std::align_val_t{kScratchAlignment});
  }
};

}  // namespace

struct Composite::Plan {
  enum class Kind : std::uint8_t { Kernel, Fold, Convert };
  struct Operand {
    int reg = 0;
    ConvertRowFn convert = nullptr;  // into the kernel's operand dtype, in slot `temp`
    int temp = -1;
  };
  struct Step {
    Kind kind = Kind::Kernel;
    ElemwiseRowFn fn = nullptr;   // Kernel, Fold
    ConvertRowFn cast = nullptr;  // Convert
    std::vector<Operand> operands;
    int resultSlot = -1;
    int kernelTemp = -1;  // the kernel writes here, then outConvert into resultSlot
    ConvertRowFn outConvert = nullptr;
  };
  std::vector<Step> steps;
  int nSlots = 0;
  std::size_t maxOperands = 0;
};

std::shared_ptr<const Composite::Plan> Composite::buildPlan(const Composite& op) {
  auto plan = std::make_shared<Plan>();
  const int nIn = op.nInputs();
  const auto& program = op.program();
  // The last instruction reading each register; outputs live to the end of the block.
  std::vector<int> lastUse(static_cast<std::size_t>(op.nRegisters()), -1);
  for (std::size_t j = 0; j < program.size(); ++j)
    for (int a : program[j].args) lastUse[static_cast<std::size_t>(a)] = static_cast<int>(j);
  for (int r : op.outputRegisters()) lastUse[static_cast<std::size_t>(r)] = INT_MAX;
  std::vector<int> registerSlot(static_cast<std::size_t>(op.nRegisters()), -1);
  std::vector<int> freeSlots;
  auto allocate = [&] {
    if (freeSlots.empty()) return plan->nSlots++;
    const int s = freeSlots.back();
    freeSlots.pop_back();
    return s;
  };

  for (std::size_t j = 0; j < program.size(); ++j) {
    const CompositeInstruction& ins = program[j];
    const ScalarOpInfo& info = scalarOpInfo(ins.op);
    const DType dtype = op.registerDType(nIn + static_cast<int>(j));
    Plan::Step step;
    std::vector<int> temps;
    if (ins.op == ScalarOp::Cast) {
      // numpy's astype straight from the operand's dtype, as Elemwise's Tensor::copyFrom.
      step.kind = Plan::Kind::Convert;
      step.cast = convertRowFn(dtype, op.registerDType(ins.args[0]));
      step.operands.push_back({ins.args[0], nullptr, -1});
    } else {
      // Note [Elemwise kernel dtypes]: comparisons and logic compute in the promoted operand dtype,
      // everything else in the output dtype; float16 computes in float32 and rounds once.
      DType compute = dtype;
      if (info.rule == DTypeRule::Bool) {
        compute = op.registerDType(ins.args[0]);
        for (std::size_t k = 1; k < ins.args.size(); ++k)
          compute = promoteTypes(compute, op.registerDType(ins.args[k]));
      }
      const DType k = kernelDType(compute);
      const DType kernelOut = info.rule == DTypeRule::Bool ? DType::Bool : k;
      step.fn = elemwiseRowKernel(ins.op, k);
      if (step.fn == nullptr)
        throw std::invalid_argument("Composite: \"program\"[" + std::to_string(j) +
                                    "]: " + std::string(info.name) + " has no CPU kernel for " +
                                    std::string(dtypeName(k)) + " operands");
      step.kind = info.arity < 0 && ins.args.size() > 2 ? Plan::Kind::Fold : Plan::Kind::Kernel;
      // second(a, b) is b broadcast: its kernel is the identity on b alone.
      const std::size_t first = ins.op == ScalarOp::Second ? 1 : 0;
      for (std::size_t a = first; a < ins.args.size(); ++a) {
        Plan::Operand operand{ins.args[a], nullptr, -1};
        const DType want = ins.op == ScalarOp::Switch && a == 0 ? DType::Bool : k;
        const DType have = op.registerDType(operand.reg);
        if (have != want) {
          operand.convert = convertRowFn(want, have);
          operand.temp = allocate();
          temps.push_back(operand.temp);
        }
        step.operands.push_back(operand);
      }
      if (dtype != kernelOut) {
        step.kernelTemp = allocate();
        step.outConvert = convertRowFn(dtype, kernelOut);
        temps.push_back(step.kernelTemp);
      }
    }
    // The result never shares a slot with an operand or a temporary of its own instruction: a
    // conversion may change the element size, and row kernels allow only exact aliasing.
    step.resultSlot = allocate();
    const int result = nIn + static_cast<int>(j);
    registerSlot[static_cast<std::size_t>(result)] = step.resultSlot;
    for (int t : temps) freeSlots.push_back(t);
    for (std::size_t a = 0; a < ins.args.size(); ++a) {
      const int r = ins.args[a];
      const bool firstUse =
          std::find(ins.args.begin(), ins.args.begin() + static_cast<std::ptrdiff_t>(a), r) ==
          ins.args.begin() + static_cast<std::ptrdiff_t>(a);
      if (r >= nIn && firstUse && lastUse[static_cast<std::size_t>(r)] == static_cast<int>(j))
        freeSlots.push_back(registerSlot[static_cast<std::size_t>(r)]);
    }
    if (lastUse[static_cast<std::size_t>(result)] < 0)
      freeSlots.push_back(step.resultSlot);  // never read
    plan->maxOperands = std::max(plan->maxOperands, step.operands.size());
    plan->steps.push_back(std::move(step));
  }
  return plan;
}

void Composite::performUnfused(const Apply& node, std::span<const Tensor* const> inputs,
                               std::span<Tensor* const> outputs) const {
  // The Elemwise nodes are built here, not with the op: this path is rare, and a graph holds
  // thousands of Composites. Elemwise::perform reads its node's output dtype and site.
  const std::size_t nIn = inputs.size();
  std::vector<VarPtr> placeholders(static_cast<std::size_t>(nRegisters()));
  auto placeholder = [&](int r) -> const VarPtr& {
    VarPtr& v = placeholders[static_cast<std::size_t>(r)];
    if (!v) v = Variable::create(TensorType(registerDType(r), {}));
    return v;
  };
  std::vector<Tensor> regs(m_program.size());
  auto value = [&](int r) -> const Tensor* {
    return static_cast<std::size_t>(r) < nIn ? inputs[static_cast<std::size_t>(r)]
                                             : &regs[static_cast<std::size_t>(r) - nIn];
  };
  std::vector<const Tensor*> args;
  for (std::size_t j = 0; j < m_program.size(); ++j) {
    const CompositeInstruction& ins = m_program[j];
    args.clear();
    std::vector<VarPtr> vars;
    for (int a : ins.args) {
      args.push_back(value(a));
      vars.push_back(placeholder(a));
    }
    const ApplyPtr ref = Apply::create(
        std::make_shared<Elemwise>(ins.op, std::map<int, int>{}, ins.target), std::move(vars),
        {TensorType(registerDType(static_cast<int>(nIn + j)), {})}, node.site());
    Tensor* out = &regs[j];
    ref->op().perform(*ref, args, std::span<Tensor* const>(&out, 1));
  }
  for (std::size_t o = 0; o < m_outputs.size(); ++o) {
    const Tensor& result = *value(m_outputs[o]);
    const bool repeated =
        std::find(m_outputs.begin(), m_outputs.begin() + static_cast<std::ptrdiff_t>(o),
                  m_outputs[o]) != m_outputs.begin() + static_cast<std::ptrdiff_t>(o);
    *outputs[o] = repeated ? result.clone() : result;
  }
}

void Composite::perform(const Apply& node, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) const {
  const Plan& plan = *m_plan;
  const std::size_t nIn = inputs.size();
  // Values of another dtype than the op was built for (a caller that bypassed the types) are
  // converted as Elemwise converts its operands.
  std::vector<Tensor> converted;
  converted.reserve(nIn);
  std::vector<const Tensor*> in(inputs.begin(), inputs.end());
  for (std::size_t i = 0; i < nIn; ++i) {
    if (in[i]->dtype() == m_inputDTypes[i]) continue;
    converted.push_back(in[i]->astype(m_inputDTypes[i]));
    in[i] = &converted.back();
  }
  Shape full;
  if (!broadcastRuntimeShapes(in, full)) {
    std::string found;
    for (std::size_t i = 0; i < nIn; ++i) found += (i ? ", " : "") + shapeToString(in[i]->shape());
    std::string msg = str() + ": the input shapes cannot be broadcast together: " + found;
    if (!node.site().empty()) msg += "; the node was created at " + node.site().str();
    throw std::invalid_argument(msg);
  }
  // Every output must have the full shape for the block interpreter (see the Note).
  {
    std::vector<const Tensor*> deps;
    Shape natural;
    for (std::size_t o = 0; o < m_outputs.size(); ++o) {
      deps.clear();
      for (int i : m_outputDeps[o]) deps.push_back(in[static_cast<std::size_t>(i)]);
      broadcastRuntimeShapes(deps, natural);
      if (natural != full) {
        performUnfused(node, in, outputs);
        return;
      }
    }
  }

  // Output buffers: in place where the pattern says so and the input allows it, else reused or new.
  std::vector<Tensor*> outs(outputs.begin(), outputs.end());
  for (std::size_t o = 0; o < outs.size(); ++o) {
    const DType dtype = registerDType(m_outputs[o]);
    const auto ip = m_inplace.find(static_cast<int>(o));
    if (ip != m_inplace.end() && canWriteInto(in, static_cast<std::size_t>(ip->second), full)) {
      if (outs[o] != in[static_cast<std::size_t>(ip->second)])
        *outs[o] = *in[static_cast<std::size_t>(ip->second)];
    } else {
      reuseOrAllocate(outs[o], dtype, full);
    }
  }
  const std::int64_t total = shapeNumel(full);
  if (total == 0) return;

  // How each input enters a block (Note [Composite block interpreter]).
  enum class Mode : std::uint8_t { Direct, Scalar, Gather };
  std::vector<Mode> modes(nIn);
  std::vector<std::optional<Cursor>> gathers(nIn);
  std::vector<int> stagingSlot(nIn, -1);
  int nSlots = plan.nSlots;
  for (std::size_t i = 0; i < nIn; ++i) {
    const Tensor& t = *in[i];
    const std::int64_t n = t.ndim() == 0 ? 1 : t.numel();
    if (n == 1) {
      modes[i] = Mode::Scalar;
    } else if (n == total && t.isContiguous()) {
      modes[i] = Mode::Direct;
    } else {
      modes[i] = Mode::Gather;
      gathers[i].emplace(const_cast<char*>(static_cast<const char*>(t.rawData())), t.itemSize(),
                         full, broadcastStrides(t, full));
      stagingSlot[i] = nSlots++;
    }
  }
  // Large contiguous inputs whose next block the loop prefetches (Note [Composite streaming]).
  std::vector<std::pair<const char*, std::int64_t>> prefetched;  // base, item size
  for (std::size_t i = 0; i < nIn; ++i)
    if (modes[i] == Mode::Direct && in[i]->nbytes() >= kStreamingBytes)
      prefetched.emplace_back(static_cast<const char*>(in[i]->rawData()),
                              static_cast<std::int64_t>(in[i]->itemSize()));
  std::vector<std::optional<Cursor>> scatters(outs.size());
  std::vector<bool> streamed(outs.size(), false);
  bool anyStreamed = false;
  for (std::size_t o = 0; o < outs.size(); ++o) {
    if (!outs[o]->isContiguous()) {
      scatters[o].emplace(static_cast<char*>(outs[o]->rawData()), outs[o]->itemSize(), full,
                          outs[o]->strides());
    } else if (outs[o]->nbytes() >= kStreamingBytes) {
      streamed[o] = true;  // Note [Composite streaming]
      anyStreamed = true;
    }
  }

  const std::int64_t block = blockLength(nSlots);
  const std::size_t slotBytes = static_cast<std::size_t>(block + kMinTail) * 8;  // the widest dtype
  const std::size_t scratchBytes =
      std::max<std::size_t>(1, static_cast<std::size_t>(nSlots)) * slotBytes;
  std::unique_ptr<std::byte[], AlignedDelete> scratch(new (std::align_val_t{kScratchAlignment})
                                                          std::byte[scratchBytes]);
  auto slot = [&](int s) {
    return reinterpret_cast<char*>(scratch.get()) + static_cast<std::size_t>(s) * slotBytes;
  };

  std::vector<RegisterView> regs(static_cast<std::size_t>(nRegisters()));
  std::vector<const char*> ptrs(std::max<std::size_t>(plan.maxOperands, 2));
  std::vector<std::int64_t> strides(ptrs.size());
  const std::size_t nSteps = plan.steps.size();
  // Where each of the nSteps + 1 prefetch slices of the next block ends, in elements from its
  // start: computed again only when the next block's length changes (the last block), not with
  // two divisions per slice and input in every block.
  std::vector<std::int64_t> sliceEnd(nSteps + 1);
  std::int64_t slicedLength = -1;

  for (std::int64_t start = 0; start < total;) {
    std::int64_t len = std::min(block, total - start);
    if (total - start - len < kMinTail) len = total - start;
    // Slice `phase` of nSteps + 1 of the next block's lines of each prefetched input.
    const std::int64_t nextStart = start + len;
    const std::int64_t nextLength = std::min(total, nextStart + block) - nextStart;
    if (!prefetched.empty() && nextLength != slicedLength) {
      const auto phases = static_cast<std::int64_t>(sliceEnd.size());
      for (std::int64_t p = 0; p < phases; ++p)
        sliceEnd[static_cast<std::size_t>(p)] = nextLength * (p + 1) / phases;
      slicedLength = nextLength;
    }
    auto prefetchNext = [&](std::size_t phase) {
      const std::int64_t first = nextStart + (phase == 0 ? 0 : sliceEnd[phase - 1]);
      const std::int64_t last = nextStart + sliceEnd[phase];
      for (const auto& [base, item] : prefetched) {
        const std::int64_t end = last * item;
        for (std::int64_t at = (first * item) & ~std::int64_t{63}; at < end; at += 64)
          prefetchLine(base + at);
      }
    };

    for (std::size_t i = 0; i < nIn; ++i) {
      const Tensor& t = *in[i];
      switch (modes[i]) {
        case Mode::Direct:
          regs[i] = {static_cast<const char*>(t.rawData()) +
                         start * static_cast<std::int64_t>(t.itemSize()),
                     1};
          break;
        case Mode::Scalar:
          regs[i] = {static_cast<const char*>(t.rawData()), 0};
          break;
        case Mode::Gather: {
          char* dst = slot(stagingSlot[i]);
          const std::size_t item = t.itemSize();
          const CopyFn copy = copyFn(item);
          gathers[i]->walk(
              start, len, [&](char* src, std::int64_t count, std::int64_t stride, std::int64_t at) {
                copy(dst + at * static_cast<std::int64_t>(item), static_cast<std::int64_t>(item),
                     src, stride, count);
              });
          regs[i] = {dst, 1};
          break;
        }
      }
    }

    for (std::size_t j = 0; j < nSteps; ++j) {
      if (!prefetched.empty()) prefetchNext(j);
      const Plan::Step& step = plan.steps[j];
      bool scalar = true;
      for (const Plan::Operand& op : step.operands)
        scalar = scalar && regs[static_cast<std::size_t>(op.reg)].stride == 0;
      const std::int64_t n = scalar ? 1 : len;
      for (std::size_t k = 0; k < step.operands.size(); ++k) {
        const Plan::Operand& op = step.operands[k];
        const RegisterView v = regs[static_cast<std::size_t>(op.reg)];
        if (op.convert) {
          op.convert(slot(op.temp), v.ptr, v.stride, v.stride == 0 ? 1 : n);
          ptrs[k] = slot(op.temp);
        } else {
          ptrs[k] = v.ptr;
        }
        strides[k] = v.stride;
      }
      char* result = slot(step.resultSlot);
      char* dst = step.kernelTemp >= 0 ? slot(step.kernelTemp) : result;
      switch (step.kind) {
        case Plan::Kind::Convert:
          step.cast(result, ptrs[0], strides[0], n);
          break;
        case Plan::Kind::Kernel:
          step.fn(dst, 1, ptrs.data(), strides.data(), n);
          break;
        case Plan::Kind::Fold: {
          // Left to right into the result, as Elemwise folds add/mul/minimum/maximum.
          step.fn(dst, 1, ptrs.data(), strides.data(), n);
          for (std::size_t k = 2; k < step.operands.size(); ++k) {
            const char* pair[2] = {dst, ptrs[k]};
            const std::int64_t pairStrides[2] = {1, strides[k]};
            step.fn(dst, 1, pair, pairStrides, n);
          }
          break;
        }
      }
      if (step.kernelTemp >= 0) step.outConvert(result, dst, 1, n);
      regs[nIn + j] = {result, scalar ? 0 : 1};
    }

    if (!prefetched.empty()) prefetchNext(nSteps);
    for (std::size_t o = 0; o < outs.size(); ++o) {
      const RegisterView v = regs[static_cast<std::size_t>(m_outputs[o])];
      Tensor& out = *outs[o];
      const std::size_t item = out.itemSize();
      const CopyFn copy = copyFn(item);
      const std::int64_t srcStride = v.stride * static_cast<std::int64_t>(item);
      if (streamed[o] && v.stride == 1) {
        streamCopy(static_cast<char*>(out.rawData()) + start * static_cast<std::int64_t>(item),
                   v.ptr, static_cast<std::size_t>(len) * item);
      } else if (!scatters[o]) {
        char* dst = static_cast<char*>(out.rawData()) + start * static_cast<std::int64_t>(item);
        copy(dst, static_cast<std::int64_t>(item), v.ptr, srcStride, len);
      } else {
        scatters[o]->walk(start, len,
                          [&](char* dst, std::int64_t count, std::int64_t stride, std::int64_t at) {
                            copy(dst, stride, v.ptr + at * srcStride, srcStride, count);
                          });
      }
    }
    start += len;
  }
  if (anyStreamed) streamFence();  // the non-temporal stores are visible before the readers run
}

}  // namespace tscope::engine
