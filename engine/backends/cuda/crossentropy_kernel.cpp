// The cross-entropy family on the device (Note [Cross-entropy kernels] in nn_codegen.h):
// SoftmaxCrossEntropyWithLogits, SoftmaxCrossEntropyGrad, CategoricalCrossEntropy, OneHot.
#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/backends/cuda/nn_codegen.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/tensor/device_memory.h"

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
enum class Family { Softmax, SoftmaxGrad, Categorical, OneHot };

const GeneratedSource& source(Family f, DType dtype, std::optional<DType> index) {
  static std::mutex mutex;
  static std::map<std::tuple<Family, DType, int>, GeneratedSource> cache;
  const std::tuple key{f, dtype, index ? static_cast<int>(*index) : -1};
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    GeneratedSource g;
    switch (f) {
      case Family::Softmax:
        g = generateSoftmaxCrossEntropy(dtype, index);
        break;
      case Family::SoftmaxGrad:
        g = generateSoftmaxCrossEntropyGrad(dtype, index);
        break;
      case Family::Categorical:
        g = generateCategoricalCrossEntropy(dtype, index);
        break;
      case Family::OneHot:
        g = generateOneHot(dtype, *index);
        break;
    }
    it = cache.emplace(key, std::move(g)).first;
  }
  return it->second;
}

// Note [Cross-entropy targets] in crossentropy.cpp: class indices are a 1-d integer tensor.
bool classTargets(const Apply& node, int input) {
  const TensorType& t = node.input(input)->type();
  return isInteger(t.dtype()) && t.ndim() == 1;
}

// Threads per row: a multiple of 32 up to 256.
unsigned rowBlock(long long k) {
  return static_cast<unsigned>(
      std::min<long long>(256, std::max<long long>(32, (k + 31) / 32 * 32)));
}
unsigned rowGrid(long long rows) {
  return static_cast<unsigned>(std::min<long long>(rows, 1 << 20));
}

// The class targets checked on the device: launches <name>_check into bad (read by the caller
// after its kernel, Note [Cross-entropy kernels]).
void launchCheck(const GeneratedSource& g, const Tensor& t, long long k, ErrorWord& bad) {
  CudaRuntime& rt = CudaRuntime::instance();
  long long n = t.numel();
  const void* pt = t.rawData();
  void* pb = bad.device();
  void* args[] = {&n, &k, &pt, &pb};
  rt.launch(rt.kernel(g.source, g.name + "_check"), n, args);
}

// The CPU's message for the first class index outside [0, depth) (classIndices).
void raiseIfBad(const ErrorWord& bad, const Tensor& t, long long depth, const std::string& op) {
  const long long row = bad.read();
  if (row < 0) return;
  const Tensor v = toHost(t.slice(0, row, row + 1)).astype(DType::Int64);
  throw std::invalid_argument(op + ": class index " + std::to_string(v.data<std::int64_t>()[0]) +
                              " of row " + std::to_string(row) + " is outside [0, " +
                              std::to_string(depth) + ")");
}

void checkRows(const Tensor& t, long long rows, const std::string& op) {
  if (t.ndim() != 1 || t.shape()[0] != rows)
    throw std::invalid_argument(op + ": expected " + std::to_string(rows) +
                                " class indices, found shape " + shapeToString(t.shape()));
}

void checkSameShape(const Tensor& a, const Tensor& b, const std::string& op,
                    const std::string& what) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(op + ": " + what + " has shape " + shapeToString(b.shape()) +
                                ", expected " + shapeToString(a.shape()));
}
}  // namespace

void softmaxCrossEntropyKernel(const Op& op, const Apply& node,
                               std::span<const Tensor* const> inputs,
                               std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const Tensor z = deviceContiguous(*inputs[0]);
  long long rows = z.shape()[0], k = z.shape()[1];
  const bool classes = classTargets(node, 1);
  const Tensor t = deviceContiguous(*inputs[1]);
  if (classes)
    checkRows(t, rows, op.str());
  else
    checkSameShape(z, t, op.str(), "the target distribution");
  *outputs[0] = emptyOn(Device::Cuda, z.dtype(), {rows});
  *outputs[1] = emptyOn(Device::Cuda, z.dtype(), z.shape());
  if (rows == 0) return;
  const GeneratedSource& g =
      source(Family::Softmax, z.dtype(), classes ? std::optional(t.dtype()) : std::nullopt);
  std::optional<ErrorWord> bad;
  if (classes) launchCheck(g, t, k, bad.emplace());
  CudaRuntime& rt = CudaRuntime::instance();
  const void* pz = z.rawData();
  const void* pt = t.rawData();
  void* pl = outputs[0]->rawData();
  void* ps = outputs[1]->rawData();
  void* args[] = {&rows, &k, &pz, &pt, &pl, &ps};
  rt.launchGrid(rt.kernel(g.source, g.name), rowGrid(rows), rowBlock(k), args);
  if (bad) raiseIfBad(*bad, t, k, op.str());
}

void softmaxCrossEntropyGradKernel(const Op& op, const Apply& node,
                                   std::span<const Tensor* const> inputs,
                                   std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const Tensor g = deviceContiguous(*inputs[0]);
  const Tensor sm = deviceContiguous(*inputs[1]);
  long long rows = sm.shape()[0], k = sm.shape()[1];
  if (g.shape() != Shape{rows})
    throw std::invalid_argument(op.str() + ": the gradient has shape " + shapeToString(g.shape()) +
                                ", expected (" + std::to_string(rows) + ")");
  const bool classes = classTargets(node, 2);
  const Tensor t = deviceContiguous(*inputs[2]);
  if (classes)
    checkRows(t, rows, op.str());
  else
    checkSameShape(sm, t, op.str(), "the target distribution");
  *outputs[0] = emptyOn(Device::Cuda, sm.dtype(), sm.shape());
  if (rows == 0) return;
  const GeneratedSource& src =
      source(Family::SoftmaxGrad, sm.dtype(), classes ? std::optional(t.dtype()) : std::nullopt);
  std::optional<ErrorWord> bad;
  if (classes) launchCheck(src, t, k, bad.emplace());
  CudaRuntime& rt = CudaRuntime::instance();
  const void* pg = g.rawData();
  const void* ps = sm.rawData();
  const void* pt = t.rawData();
  void* pd = outputs[0]->rawData();
  void* args[] = {&rows, &k, &pg, &ps, &pt, &pd};
  if (classes)
    rt.launch(rt.kernel(src.source, src.name), rows * k, args);
  else
    rt.launchGrid(rt.kernel(src.source, src.name), rowGrid(rows), rowBlock(k), args);
  if (bad) raiseIfBad(*bad, t, k, op.str());
}

void categoricalCrossEntropyKernel(const Op& op, const Apply& node,
                                   std::span<const Tensor* const> inputs,
                                   std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const Tensor p = deviceContiguous(*inputs[0]);
  long long rows = p.shape()[0], k = p.shape()[1];
  const bool classes = classTargets(node, 1);
  const Tensor t = deviceContiguous(*inputs[1]);
  if (classes)
    checkRows(t, rows, op.str());
  else
    checkSameShape(p, t, op.str(), "the target distribution");
  *outputs[0] = emptyOn(Device::Cuda, p.dtype(), {rows});
  if (rows == 0) return;
  const GeneratedSource& g =
      source(Family::Categorical, p.dtype(), classes ? std::optional(t.dtype()) : std::nullopt);
  std::optional<ErrorWord> bad;
  if (classes) launchCheck(g, t, k, bad.emplace());
  CudaRuntime& rt = CudaRuntime::instance();
  const void* pp = p.rawData();
  const void* pt = t.rawData();
  void* pl = outputs[0]->rawData();
  void* args[] = {&rows, &k, &pp, &pt, &pl};
  if (classes)
    rt.launch(rt.kernel(g.source, g.name), rows, args);
  else
    rt.launchGrid(rt.kernel(g.source, g.name), rowGrid(rows), rowBlock(k), args);
  if (bad) raiseIfBad(*bad, t, k, op.str());
}

void oneHotKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  // The depth is a host input (Note [Host values of device nodes]), as OneHot::perform reads it.
  long long depth = static_cast<long long>(inputs[1]->item());
  if (depth < 0)
    throw std::invalid_argument("OneHot: the depth is negative (" + std::to_string(depth) + ")");
  const Tensor t = deviceContiguous(*inputs[0]);
  long long rows = t.shape()[0];
  checkRows(t, rows, op.str());
  const DType dtype = node.outputRef(0).type().dtype();
  *outputs[0] = emptyOn(Device::Cuda, dtype, {rows, depth});
  if (rows == 0) return;
  const GeneratedSource& g = source(Family::OneHot, dtype, t.dtype());
  ErrorWord bad;
  launchCheck(g, t, depth, bad);
  CudaRuntime& rt = CudaRuntime::instance();
  const void* pt = t.rawData();
  void* po = outputs[0]->rawData();
  void* args[] = {&rows, &depth, &pt, &po};
  rt.launch(rt.kernel(g.source, g.name), rows * depth, args);
  raiseIfBad(bad, t, depth, op.str());
}

}  // namespace tscope::engine::cuda
