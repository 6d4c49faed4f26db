// Launching the NVRTC elementwise and reduction kernels (Note [Elementwise kernels],
// Note [Reduction kernels] in elemwise_codegen.cpp).
#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/ops/reduce/argreduce.h"
#include "engine/ops/reduce/careduce.h"

#include <map>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
struct Prepared {
  ScalarProgram program;
  GeneratedSource source;
};

// Generation costs string work: once per op and operand dtypes (one Elemwise op object serves
// nodes of several dtypes; a Composite's dtypes are its own). The map keeps the ops alive so that
// an address is never reused for another op.
const Prepared& prepared(const Apply& node) {
  using Key = std::pair<const Op*, std::vector<DType>>;
  static std::mutex mutex;
  static std::map<Key, std::pair<OpPtr, std::shared_ptr<const Prepared>>> cache;
  Key key{&node.op(), {}};
  for (const VarPtr& in : node.inputs()) key.second.push_back(in->type().dtype());
  for (int o = 0; o < node.nOutputs(); ++o) key.second.push_back(node.outputRef(o).type().dtype());
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto p = std::make_shared<Prepared>();
    p->program = scalarProgramOf(node);
    p->source = generateElemwise(p->program);
    it = cache.emplace(std::move(key), std::pair{node.opPtr(), std::move(p)}).first;
  }
  return *it->second.second;
}

const Prepared& identityProgram(DType dtype) {
  static std::mutex mutex;
  static std::map<DType, Prepared> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(dtype);
  if (it == cache.end()) {
    Prepared p;
    p.program.registers = {dtype, dtype};
    p.program.nInputs = 1;
    p.program.program = {CompositeInstruction{ScalarOp::Identity, {0}, dtype}};
    p.program.outputs = {1};
    p.source = generateElemwise(p.program);
    it = cache.emplace(dtype, std::move(p)).first;
  }
  return it->second;
}

Shape broadcastShape(std::span<const Tensor* const> inputs, const char* where) {
  std::size_t rank = 0;
  for (const Tensor* t : inputs) rank = std::max(rank, t->shape().size());
  Shape out(rank, 1);
  for (const Tensor* t : inputs) {
    const std::size_t lead = rank - t->shape().size();
    for (std::size_t d = 0; d < t->shape().size(); ++d) {
      const std::int64_t s = t->shape()[d];
      std::int64_t& o = out[lead + d];
      if (s == o || s == 1) continue;
      if (o != 1)
        throw std::invalid_argument(std::string(where) + ": shapes do not broadcast, found " +
                                    shapeToString(t->shape()) + " against " + shapeToString(out));
      o = s;
    }
  }
  return out;
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// Runs a prepared program: the outputs get the broadcast shape of all inputs.
void run(const Prepared& p, std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
         const char* where) {
  CudaRuntime& rt = CudaRuntime::instance();
  const Shape shape = broadcastShape(inputs, where);
  if (shape.size() > static_cast<std::size_t>(kMaxRank))
    throw std::invalid_argument(std::string(where) + ": expected at most " +
                                std::to_string(kMaxRank) + " dimensions on the GPU, found " +
                                shapeToString(shape));
  const std::size_t nOut = p.program.outputs.size();
  for (std::size_t o = 0; o < nOut; ++o)
    *outputs[o] = emptyOn(
        Device::Cuda, p.program.registers[static_cast<std::size_t>(p.program.outputs[o])], shape);
  long long n = shapeNumel(shape);
  if (n == 0) return;
  std::vector<const void*> pointers;
  for (const Tensor* t : inputs) pointers.push_back(t->rawData());
  for (std::size_t o = 0; o < nOut; ++o) pointers.push_back(outputs[o]->rawData());
  bool contiguous = true, vec = p.source.vec4;
  for (const Tensor* t : inputs)
    contiguous = contiguous && t->shape() == shape && t->isContiguous();
  for (const void* ptr : pointers) vec = vec && aligned16(ptr);
  std::vector<void*> args;
  args.push_back(&n);
  std::vector<long long> ix;
  std::string kernel;
  if (contiguous) {
    kernel = p.source.name + (vec ? "_vec4" : "_contig");
  } else {
    // TsIx: ndim, size[kMaxRank], stride[operand][kMaxRank] (all long long, no padding).
    const std::size_t rank = shape.size();
    ix.assign(1 + kMaxRank + pointers.size() * kMaxRank, 0);
    ix[0] = static_cast<long long>(rank);
    for (std::size_t d = 0; d < rank; ++d) ix[1 + d] = shape[d];
    auto strides = [&](std::size_t k, const Tensor& t) {
      const std::size_t lead = rank - t.shape().size();
      for (std::size_t d = 0; d < t.shape().size(); ++d)
        ix[1 + kMaxRank + k * kMaxRank + lead + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
    };
    for (std::size_t k = 0; k < inputs.size(); ++k) strides(k, *inputs[k]);
    for (std::size_t o = 0; o < nOut; ++o) strides(inputs.size() + o, *outputs[o]);
    args.push_back(ix.data());
    kernel = p.source.name + "_strided";
  }
  for (const void*& ptr : pointers) args.push_back(&ptr);
  const LoadedKernel k = rt.kernel(p.source.source, kernel);
  rt.launch(k, contiguous && vec ? std::max(n / 4, 1LL) : n, args.data());
}
}  // namespace

void elemwiseKernel(const Op&, const Apply& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  run(prepared(node), inputs, outputs, "CUDA elementwise kernel");
}

Tensor deviceContiguous(const Tensor& t) {
  if (t.isContiguous()) return t;
  Tensor out;
  const Tensor* in[] = {&t};
  Tensor* outs[] = {&out};
  run(identityProgram(t.dtype()), in, outs, "CUDA contiguous copy");
  return out;
}

Tensor reduceOnDevice(ScalarOp scalar, const Tensor& x, const std::vector<bool>& reduced, DType acc,
                      DType outType) {
  if (x.ndim() > kMaxRank)
    throw std::invalid_argument("CUDA reduction: expected at most " + std::to_string(kMaxRank) +
                                " dimensions, found " + shapeToString(x.shape()));
  const GeneratedSource g = generateReduce(scalar, x.dtype(), acc, outType);
  // TsRx: nKept, nRed, size[kMaxRank], stride[kMaxRank]: the kept axes, then the reduced ones.
  std::vector<long long> rx(2 + 2 * kMaxRank, 0);
  Shape kept;
  long long nOut = 1, nReduce = 1;
  std::size_t slot = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int d = 0; d < x.ndim(); ++d) {
      if (reduced[static_cast<std::size_t>(d)] != (pass == 1)) continue;
      const std::int64_t size = x.shape()[static_cast<std::size_t>(d)];
      rx[2 + slot] = size;
      rx[2 + kMaxRank + slot] = x.strides()[static_cast<std::size_t>(d)];
      ++slot;
      ++rx[pass];
      if (pass == 0) {
        kept.push_back(size);
        nOut *= size;
      } else {
        nReduce *= size;
      }
    }
  Tensor result = emptyOn(Device::Cuda, outType, kept);
  if (nOut == 0) return result;
  CudaRuntime& rt = CudaRuntime::instance();
  const void* in = x.rawData();
  void* out = result.rawData();
  void* args[] = {&nOut, &nReduce, rx.data(), &in, &out};
  const unsigned block = static_cast<unsigned>(
      std::min<long long>(256, std::max<long long>(32, (nReduce + 31) / 32 * 32)));
  const unsigned grid = static_cast<unsigned>(std::min<long long>(nOut, 1 << 20));
  rt.launchGrid(rt.kernel(g.source, g.name), grid, block, args);
  return result;
}

void reduceKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& reduce = static_cast<const CAReduce&>(op);
  const Tensor& x = *inputs[0];
  std::vector<bool> reduced(static_cast<std::size_t>(x.ndim()));
  for (int d = 0; d < x.ndim(); ++d) reduced[static_cast<std::size_t>(d)] = reduce.reduces(d);
  *outputs[0] = reduceOnDevice(reduce.scalarOp(), x, reduced, reduce.accDType(x.dtype()),
                               reduce.outputDType(x.dtype()));
}

void sumToShapeKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const Tensor& g = *inputs[0];
  // SumToShape::perform's checks and messages; the sizes are host values.
  const std::size_t k = inputs.size() - 1;
  if (k > static_cast<std::size_t>(g.ndim()))
    throw std::invalid_argument(op.str() + ": cannot sum a tensor of shape " +
                                shapeToString(g.shape()) + " to " + std::to_string(k) +
                                " dimensions");
  Shape target(k);
  for (std::size_t a = 0; a < k; ++a) target[a] = static_cast<std::int64_t>(inputs[a + 1]->item());
  const std::size_t lead = static_cast<std::size_t>(g.ndim()) - k;
  std::vector<bool> reduced(static_cast<std::size_t>(g.ndim()), false);
  bool sums = lead > 0;
  for (std::size_t a = 0; a < lead; ++a) reduced[a] = true;
  for (std::size_t a = 0; a < k; ++a) {
    if (target[a] == g.shape()[lead + a]) continue;
    if (target[a] != 1) {
      std::string msg = op.str() + ": cannot sum a tensor of shape " + shapeToString(g.shape()) +
                        " to shape " + shapeToString(target) + " (axis " +
                        std::to_string(lead + a) + ")";
      if (!node.site().empty()) msg += "; the node was created at " + node.site().str();
      throw std::invalid_argument(msg);
    }
    reduced[lead + a] = true;
    sums = true;
  }
  if (!sums) {
    *outputs[0] = g;  // nothing to sum: a view (viewMap)
    return;
  }
  // A sum in g's own dtype, as the CPU's (float16 in float32, as its half path); the kept
  // axes come out contiguous in order, which is the target's layout with its 1s put back.
  const DType acc = g.dtype() == DType::Float16 ? DType::Float32 : g.dtype();
  const Tensor summed = reduceOnDevice(ScalarOp::Add, g, reduced, acc, g.dtype());
  *outputs[0] = summed.view(target, contiguousStrides(target), summed.offset());
}

void argReduceKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& arg = static_cast<const ArgReduce&>(op);
  const Tensor& x = *inputs[0];
  if (x.ndim() > kMaxRank)
    throw std::invalid_argument("CUDA " + op.name() + ": expected at most " +
                                std::to_string(kMaxRank) + " dimensions, found " +
                                shapeToString(x.shape()));
  const std::optional<int>& axis = arg.axis();
  // TsRx as for CAReduce: the kept axes, then the reduced ones (one axis, or all in row-major
  // order for axis=null: r is then the flat index).
  std::vector<long long> rx(2 + 2 * kMaxRank, 0);
  Shape kept;
  long long nOut = 1, nReduce = 1;
  std::size_t slot = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int d = 0; d < x.ndim(); ++d) {
      const bool reduced = !axis || *axis == d;
      if (reduced != (pass == 1)) continue;
      const std::int64_t size = x.shape()[static_cast<std::size_t>(d)];
      rx[2 + slot] = size;
      rx[2 + kMaxRank + slot] = x.strides()[static_cast<std::size_t>(d)];
      ++slot;
      ++rx[pass];
      if (pass == 0) {
        kept.push_back(size);
        nOut *= size;
      } else {
        nReduce *= size;
      }
    }
  if (nReduce == 0)
    throw std::invalid_argument(
        std::string(arg.kind() == ArgReduce::Kind::Max ? "argmax" : "argmin") +
        ": attempt to get the index of an empty sequence (input shape " + shapeToString(x.shape()) +
        ")");
  *outputs[0] = emptyOn(Device::Cuda, DType::Int64, kept);
  if (nOut == 0) return;
  static std::mutex mutex;
  static std::map<std::pair<bool, DType>, GeneratedSource> sources;
  const bool max = arg.kind() == ArgReduce::Kind::Max;
  GeneratedSource g;
  {
    std::lock_guard lock(mutex);
    auto it = sources.find({max, x.dtype()});
    if (it == sources.end())
      it = sources.emplace(std::pair{max, x.dtype()}, generateArgReduce(max, x.dtype())).first;
    g = it->second;
  }
  CudaRuntime& rt = CudaRuntime::instance();
  const void* in = x.rawData();
  void* out = outputs[0]->rawData();
  void* args[] = {&nOut, &nReduce, rx.data(), &in, &out};
  const unsigned block = static_cast<unsigned>(
      std::min<long long>(256, std::max<long long>(32, (nReduce + 31) / 32 * 32)));
  const unsigned grid = static_cast<unsigned>(std::min<long long>(nOut, 1 << 20));
  rt.launchGrid(rt.kernel(g.source, g.name), grid, block, args);
}

}  // namespace tscope::engine::cuda
