// Convolutions on the GPU through cuDNN, float32 NCHW: Conv2d and FusedConv2d forward
// (cudnnConvolutionForward), Conv2dGradInputs (cudnnConvolutionBackwardData) and Conv2dGradWeights
// (cudnnConvolutionBackwardFilter); each algorithm chosen as Note [Convolution algorithms]
// (cudnn_options.h) says. FusedConv2d runs as cuDNN steps on its output buffer: the convolution
// (with beta = 1 over a copy of the residual, or over the residual itself when inplace), the bias
// (cudnnAddTensor) and the activation (cudnnActivationForward, in place). cuDNN's fused
// cudnnConvolutionBiasActivationForward takes neither clip nor an identity activation with every
// algorithm, so the steps are separate: two more passes over the output than the CPU's oneDNN.
#include "engine/backends/cuda/cudnn_common.h"
#include "engine/backends/cuda/cudnn_options.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/compile/kernel_notes.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/tensor/device_memory.h"

#include <cuda_runtime.h>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tscope::engine::cuda {

namespace {
enum class Direction { Fwd, BwdData, BwdFilter };

// cuDNN has no name function for its algorithm enums.
constexpr const char* kFwdNames[] = {
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
    "WINOGRAD",      "WINOGRAD_NONFUSED"};
constexpr const char* kBwdDataNames[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                         "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
constexpr const char* kBwdFilterNames[] = {
    "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
static_assert(std::size(kFwdNames) == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
static_assert(std::size(kBwdDataNames) == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
static_assert(std::size(kBwdFilterNames) == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);

const float kOne = 1.0f, kZero = 0.0f;

// The descriptors and device pointers of one convolution. x, w, y are the forward's input,
// filters and output; which of them is written depends on the direction.
struct ConvCall {
  explicit ConvCall(const ConvDescriptorParams& p) : params(p), xd(p.x), wd(p.w), yd(p.y), cd(p) {
    std::array<int, 4> y{};
    TSCOPE_CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &y[0], &y[1], &y[2], &y[3]));
    if (y != p.y)  // cudnn_params.cpp's formula disagrees with cuDNN: a bug to report, not to run
      throw std::logic_error("cuDNN computes the output " + dimsString(y) + ", expected " +
                             dimsString(p.y));
  }
  ConvDescriptorParams params;
  TensorDesc xd;
  FilterDesc wd;
  TensorDesc yd;
  ConvDesc cd;
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

struct AlgoPick {
  int algo = 0;
  std::size_t workspace = 0;
};

// Per direction: the perf type, the heuristic, the timing, the workspace query.
template <Direction D>
struct Traits;
template <>
struct Traits<Direction::Fwd> {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr const char* kName = "fwd";
  // The tensor this direction writes, and its dims.
  static void*& out(ConvCall& c) { return c.y; }
  static const std::array<int, 4>& outDims(const ConvCall& c) { return c.params.y; }
  static constexpr int kCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static const char* name(int a) { return kFwdNames[a]; }
  static void guess(ConvCall& c, int n, int* got, Perf* perf) {
    TSCOPE_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle(), c.xd, c.wd, c.cd, c.yd,
                                                              n, got, perf));
  }
  static void time(ConvCall& c, int n, int* got, Perf* perf, void* ws, std::size_t bytes) {
    TSCOPE_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        cudnnHandle(), c.xd, c.x, c.wd, c.w, c.cd, c.yd, c.y, n, got, perf, ws, bytes));
  }
  static std::size_t workspace(ConvCall& c, int a) {
    std::size_t bytes = 0;
    TSCOPE_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        cudnnHandle(), c.xd, c.wd, c.cd, c.yd, static_cast<cudnnConvolutionFwdAlgo_t>(a), &bytes));
    return bytes;
  }
};
template <>
struct Traits<Direction::BwdData> {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr const char* kName = "bwd_data";
  // The tensor this direction writes, and its dims.
  static void*& out(ConvCall& c) { return c.x; }
  static const std::array<int, 4>& outDims(const ConvCall& c) { return c.params.x; }
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static const char* name(int a) { return kBwdDataNames[a]; }
  static void guess(ConvCall& c, int n, int* got, Perf* perf) {
    TSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle(), c.wd, c.yd, c.cd,
                                                                   c.xd, n, got, perf));
  }
  static void time(ConvCall& c, int n, int* got, Perf* perf, void* ws, std::size_t bytes) {
    TSCOPE_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
        cudnnHandle(), c.wd, c.w, c.yd, c.y, c.cd, c.xd, c.x, n, got, perf, ws, bytes));
  }
  static std::size_t workspace(ConvCall& c, int a) {
    std::size_t bytes = 0;
    TSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        cudnnHandle(), c.wd, c.yd, c.cd, c.xd, static_cast<cudnnConvolutionBwdDataAlgo_t>(a),
        &bytes));
    return bytes;
  }
};
template <>
struct Traits<Direction::BwdFilter> {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr const char* kName = "bwd_filter";
  // The tensor this direction writes, and its dims.
  static void*& out(ConvCall& c) { return c.w; }
  static const std::array<int, 4>& outDims(const ConvCall& c) { return c.params.w; }
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static const char* name(int a) { return kBwdFilterNames[a]; }
  static void guess(ConvCall& c, int n, int* got, Perf* perf) {
    TSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle(), c.xd, c.yd,
                                                                     c.cd, c.wd, n, got, perf));
  }
  static void time(ConvCall& c, int n, int* got, Perf* perf, void* ws, std::size_t bytes) {
    TSCOPE_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
        cudnnHandle(), c.xd, c.x, c.yd, c.y, c.cd, c.wd, c.w, n, got, perf, ws, bytes));
  }
  static std::size_t workspace(ConvCall& c, int a) {
    std::size_t bytes = 0;
    TSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        cudnnHandle(), c.xd, c.yd, c.cd, c.wd, static_cast<cudnnConvolutionBwdFilterAlgo_t>(a),
        &bytes));
    return bytes;
  }
};

// A node's kept choice (Note [Convolution algorithms]). Keyed by the Apply's address and its id:
// a compiled Function keeps its nodes alive, and the id tells a new node at a freed address apart
// in nearly every case; a wrong hit still runs correctly when the algorithm supports the shapes
// (cuDNN says NOT_SUPPORTED otherwise, and the key includes the shapes in the *_on_shape_change
// modes).
struct Kept {
  std::uint64_t generation = 0;
  std::string shapes;
  AlgoPick pick;
};
std::mutex g_keptMutex;
std::map<std::tuple<const Apply*, std::int64_t, Direction>, Kept> g_kept;

std::string shapesKey(const ConvDescriptorParams& p) {
  return "x " + dimsString(p.x) + " w " + dimsString(p.w) + " y " + dimsString(p.y);
}

template <Direction D>
AlgoPick choose(const Apply& node, ConvCall& c) {
  using T = Traits<D>;
  const CudnnOptions options = cudnnOptions();
  const bool once =
      options.algoMode == ConvAlgoMode::GuessOnce || options.algoMode == ConvAlgoMode::TimeOnce;
  const bool timed = options.algoMode == ConvAlgoMode::TimeOnce ||
                     options.algoMode == ConvAlgoMode::TimeOnShapeChange;
  const std::uint64_t generation = convAlgoGeneration();
  const std::string shapes = shapesKey(c.params);
  const auto key = std::make_tuple(&node, node.id(), D);
  {
    std::lock_guard lock(g_keptMutex);
    auto it = g_kept.find(key);
    if (it != g_kept.end() && it->second.generation == generation &&
        (once || it->second.shapes == shapes)) {
      AlgoPick pick = it->second.pick;
      if (once && it->second.shapes != shapes)  // the same algorithm, the new shapes' workspace
        pick.workspace = T::workspace(c, pick.algo);
      return pick;
    }
  }
  typename T::Perf perf[T::kCount];
  int got = 0;
  T::guess(c, T::kCount, &got, perf);
  AlgoPick pick;
  bool found = false;
  float timeMs = -1;
  if (timed) {
    // A workspace as large as the largest the heuristic reports, up to the limit.
    std::size_t bytes = 0;
    for (int i = 0; i < got; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= options.workspaceLimit)
        bytes = std::max(bytes, perf[i].memory);
    std::shared_ptr<void> ws = bytes ? CudaRuntime::instance().allocate(bytes) : nullptr;
    // cudnnFind*AlgorithmEx writes the output: time into a scratch buffer, so that a forward
    // with beta = 1 (FusedConv2d's residual) keeps what its output holds.
    const std::array<int, 4>& od = T::outDims(c);
    const std::size_t outBytes = sizeof(float) * static_cast<std::size_t>(od[0]) *
                                 static_cast<std::size_t>(od[1]) * static_cast<std::size_t>(od[2]) *
                                 static_cast<std::size_t>(od[3]);
    std::shared_ptr<void> scratch = CudaRuntime::instance().allocate(outBytes);
    void* const written = T::out(c);
    T::out(c) = scratch.get();
    typename T::Perf timedPerf[T::kCount];
    int timedGot = 0;
    try {
      T::time(c, T::kCount, &timedGot, timedPerf, ws.get(), bytes);
    } catch (...) {
      T::out(c) = written;
      throw;
    }
    T::out(c) = written;
    for (int i = 0; i < timedGot && !found; ++i)
      if (timedPerf[i].status == CUDNN_STATUS_SUCCESS && timedPerf[i].memory <= bytes) {
        pick.algo = static_cast<int>(timedPerf[i].algo);
        timeMs = timedPerf[i].time;
        found = true;
      }
  }
  for (int i = 0; i < got && !found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= options.workspaceLimit) {
      pick.algo = static_cast<int>(perf[i].algo);
      found = true;
    }
  if (!found)
    throw std::runtime_error(
        node.op().str() + " (node " + std::to_string(node.id()) + ") on the GPU: cuDNN has no " +
        T::kName + " algorithm for " + shapes + " within the workspace limit of " +
        std::to_string(options.workspaceLimit) + " bytes (TSCOPE_CUDNN_WORKSPACE_LIMIT)");
  pick.workspace = T::workspace(c, pick.algo);
  ConvAlgoChoice record;
  record.nodeId = node.id();
  record.op = node.op().name();
  record.direction = T::kName;
  record.algorithm = T::name(pick.algo);
  record.workspaceBytes = pick.workspace;
  record.mode = options.algoMode;
  record.timeMs = timeMs;
  record.shapes = shapes;
  recordConvAlgoChoice(std::move(record));
  setKernelNote(node, convAlgoNote(node.id()));
  std::lock_guard lock(g_keptMutex);
  g_kept[key] = Kept{generation, shapes, pick};
  return pick;
}

void requireFloat32(const Tensor& t, const Apply& node, int input) {
  if (t.dtype() != DType::Float32)
    throw std::invalid_argument(node.op().str() + " (node " + std::to_string(node.id()) +
                                ") on the GPU: expected float32 input " + std::to_string(input) +
                                ", found " + std::string(dtypeName(t.dtype())));
}

// A spatial size the gradient ops take as a 0-d int64 input: the output type's static dimension
// when it is known (no device read), else the value copied to the host (a synchronisation).
std::int64_t sizeInput(const Apply& node, int outputAxis, const Tensor& value) {
  const std::int64_t known = node.outputRef(0).type().shape()[static_cast<std::size_t>(outputAxis)];
  if (known != kUnknownDim) return known;
  return static_cast<std::int64_t>(toHost(value).item());
}

void zero(Tensor& t) {
  if (t.nbytes() > 0)
    TSCOPE_CUDA_CHECK(cudaMemsetAsync(t.rawData(), 0, t.nbytes(),
                                      static_cast<cudaStream_t>(CudaRuntime::instance().stream())));
}

bool anyZero(const std::array<int, 4>& d) {
  return d[0] == 0 || d[1] == 0 || d[2] == 0 || d[3] == 0;
}

// y = conv(x, w) + beta y.
void forward(const Apply& node, ConvCall& c, float beta) {
  const AlgoPick pick = choose<Direction::Fwd>(node, c);
  std::shared_ptr<void> ws =
      pick.workspace ? CudaRuntime::instance().allocate(pick.workspace) : nullptr;
  TSCOPE_CUDNN_CHECK(cudnnConvolutionForward(cudnnHandle(), &kOne, c.xd, c.x, c.wd, c.w, c.cd,
                                             static_cast<cudnnConvolutionFwdAlgo_t>(pick.algo),
                                             ws.get(), pick.workspace, &beta, c.yd, c.y));
}

Shape shapeOf(const std::array<int, 4>& d) {
  return {d[0], d[1], d[2], d[3]};
}
}  // namespace

void conv2dKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  requireFloat32(*inputs[1], node, 1);
  const auto& conv = static_cast<const Conv2dFamilyOp&>(op);
  Tensor x = deviceContiguous(*inputs[0]), w = deviceContiguous(*inputs[1]);
  const ConvDescriptorParams d = convDescriptor(conv.params(), x.shape(), w.shape());
  Tensor y = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.y));
  if (anyZero(d.x) || anyZero(d.w)) {
    zero(y);
  } else {
    ConvCall c(d);
    c.x = x.rawData(), c.w = w.rawData(), c.y = y.rawData();
    forward(node, c, 0.0f);
  }
  *outputs[0] = y;
}

// FusedConv2d (x, w, b[, r]): act(conv(x, w) + b[o] (+ r)).
void fusedConv2dKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& fused = static_cast<const FusedConv2d&>(op);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    requireFloat32(*inputs[i], node, static_cast<int>(i));
  Tensor x = deviceContiguous(*inputs[0]), w = deviceContiguous(*inputs[1]);
  const Tensor b = deviceContiguous(*inputs[2]);
  const ConvDescriptorParams d = convDescriptor(fused.params(), x.shape(), w.shape());
  if (b.numel() != d.y[1])
    throw std::invalid_argument(op.str() + ": the bias has shape " + shapeToString(b.shape()) +
                                ", expected " + std::to_string(d.y[1]) + " values");
  Tensor y;
  float beta = 0.0f;
  if (fused.residual()) {
    const Tensor& r = *inputs[3];
    if (r.shape() != shapeOf(d.y))
      throw std::invalid_argument(op.str() + ": the residual has shape " +
                                  shapeToString(r.shape()) + ", expected " + dimsString(d.y));
    if (fused.inplace() && r.isContiguous()) {
      y = r;  // destroyMap {0: [3]}: the sum is written over the residual
    } else {
      const Tensor rc = deviceContiguous(r);
      y = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.y));
      if (y.nbytes() > 0)
        CudaRuntime::instance().copy(y.rawData(), rc.rawData(), y.nbytes(),
                                     DeviceMemory::Copy::DeviceToDevice);
    }
    beta = 1.0f;
  } else {
    y = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.y));
  }
  if (anyZero(d.y)) {
    *outputs[0] = y;
    return;
  }
  if (anyZero(d.x) || anyZero(d.w)) {
    if (beta == 0.0f) zero(y);
  } else {
    ConvCall c(d);
    c.x = x.rawData(), c.w = w.rawData(), c.y = y.rawData();
    forward(node, c, beta);
  }
  const TensorDesc yd(d.y), bd({1, d.y[1], 1, 1});
  TSCOPE_CUDNN_CHECK(cudnnAddTensor(cudnnHandle(), &kOne, bd, b.rawData(), &kOne, yd, y.rawData()));
  const ConvActivationSpec& a = fused.activation();
  if (a.kind != cpu::ConvActivation::None) {
    // The rule (cudnnRules) takes clip only with lo = 0: cuDNN's clipped relu is min(max(v, 0),
    // hi).
    const ActivationDesc act(
        a.kind == cpu::ConvActivation::Relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_CLIPPED_RELU,
        a.kind == cpu::ConvActivation::Relu ? 0.0 : a.hi);
    TSCOPE_CUDNN_CHECK(cudnnActivationForward(cudnnHandle(), act, &kOne, yd, y.rawData(), &kZero,
                                              yd, y.rawData()));
  }
  *outputs[0] = y;
}

// Conv2dGradInputs (w, gy, H, W) -> gx (N, C, H, W).
void conv2dGradInputsKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                            std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  requireFloat32(*inputs[1], node, 1);
  const auto& conv = static_cast<const Conv2dFamilyOp&>(op);
  Tensor w = deviceContiguous(*inputs[0]), gy = deviceContiguous(*inputs[1]);
  const std::int64_t h = sizeInput(node, 2, *inputs[2]), wd = sizeInput(node, 3, *inputs[3]);
  const ConvDescriptorParams d =
      convGradInputsDescriptor(conv.params(), w.shape(), gy.shape(), h, wd);
  Tensor gx = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.x));
  if (anyZero(d.x)) {
    *outputs[0] = gx;
    return;
  }
  if (anyZero(d.y) || anyZero(d.w)) {
    zero(gx);
  } else {
    ConvCall c(d);
    c.x = gx.rawData(), c.w = w.rawData(), c.y = gy.rawData();
    const AlgoPick pick = choose<Direction::BwdData>(node, c);
    std::shared_ptr<void> ws =
        pick.workspace ? CudaRuntime::instance().allocate(pick.workspace) : nullptr;
    TSCOPE_CUDNN_CHECK(
        cudnnConvolutionBackwardData(cudnnHandle(), &kOne, c.wd, c.w, c.yd, c.y, c.cd,
                                     static_cast<cudnnConvolutionBwdDataAlgo_t>(pick.algo),
                                     ws.get(), pick.workspace, &kZero, c.xd, c.x));
  }
  *outputs[0] = gx;
}

// Conv2dGradWeights (x, gy, KH, KW) -> gw (O, C/groups, KH, KW).
void conv2dGradWeightsKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                             std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  requireFloat32(*inputs[1], node, 1);
  const auto& conv = static_cast<const Conv2dFamilyOp&>(op);
  Tensor x = deviceContiguous(*inputs[0]), gy = deviceContiguous(*inputs[1]);
  const std::int64_t kh = sizeInput(node, 2, *inputs[2]), kw = sizeInput(node, 3, *inputs[3]);
  const ConvDescriptorParams d =
      convGradWeightsDescriptor(conv.params(), x.shape(), gy.shape(), kh, kw);
  Tensor gw = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.w));
  if (anyZero(d.w)) {
    *outputs[0] = gw;
    return;
  }
  if (anyZero(d.x) || anyZero(d.y)) {
    zero(gw);
  } else {
    ConvCall c(d);
    c.x = x.rawData(), c.w = gw.rawData(), c.y = gy.rawData();
    const AlgoPick pick = choose<Direction::BwdFilter>(node, c);
    std::shared_ptr<void> ws =
        pick.workspace ? CudaRuntime::instance().allocate(pick.workspace) : nullptr;
    TSCOPE_CUDNN_CHECK(
        cudnnConvolutionBackwardFilter(cudnnHandle(), &kOne, c.xd, c.x, c.yd, c.y, c.cd,
                                       static_cast<cudnnConvolutionBwdFilterAlgo_t>(pick.algo),
                                       ws.get(), pick.workspace, &kZero, c.wd, c.w));
  }
  *outputs[0] = gw;
}

}  // namespace tscope::engine::cuda
