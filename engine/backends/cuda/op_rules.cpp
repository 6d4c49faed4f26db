// The registration, placement rules and host values of the shape, indexing, argmax,
// cross-entropy and random kernels (Note [CUDA placement rules] in cuda_backend.cpp).
//
// Note [Op placement rules]: each rule claims exactly the nodes its kernel takes.
//   Reshape, Subtensor, Split, SpecifyShape   dtypes with CUDA code (not float16), rank <= 8;
//        views, or a copy (Reshape when no strides read x as the new shape); the shape vector,
//        the symbolic bounds and the sizes are host values;
//   IncSubtensor, Join, Alloc                 dtypes with CUDA code, ranks <= 8; the index
//        scalars and Alloc's sizes are host values; the data (y, the joined tensors, Alloc's
//        value) are device values;
//   AdvancedSubtensor1                        x of a dtype with CUDA code, rank <= 8; the index
//        vector is a device value (it is data: token ids, an argmax), checked on the device;
//   AdvancedIncSubtensor1                     the same; the increment only for dtypes with a
//        device atomicAdd (float32, float64, int32, int64, uint32, uint64), set for all;
//   Shape, ShapeI                             only where their input is a device value (the
//        output of a HostFromGpu while placement runs, isDeviceValue): the shape is read from
//        the device tensor's metadata into a host value, and nothing is copied; on a host
//        value they stay on the CPU (no upload to read a shape);
//   SumToShape                                g of a 32- or 64-bit dtype (the sum runs in g's
//        dtype, as on the CPU) or float16 (summed in float32), rank <= 8; the target sizes are
//        host values;
//   Argmax, Argmin                            dtypes with CUDA code, rank <= 8;
//   SoftmaxCrossEntropyWithLogits, SoftmaxCrossEntropyGrad, CategoricalCrossEntropy
//        float32 and float64 predictions (all the ops take), class targets of any integer
//        dtype or distributions;
//   OneHot                                    an output dtype with CUDA code; the depth is a
//        host value;
//   RandomUniform, RandomNormal, RandomIntegers   a sample dtype with CUDA code; the state and
//        the sizes are host values and the new state a host output (Note [Device random
//        numbers] in random_kernel.cpp).
// Integer inputs read as sizes (shape vectors, bounds, sizes, depth, the random state) stay on
// the host (Note [Host values of device nodes] in gpu_placement.h): the kernels read them as
// numbers to size their outputs and launches, and a device copy would cost a synchronising read
// per call. Data tensors are device values.
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/backends/cuda/shape_codegen.h"
#include "engine/compile/kernel.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/random/random_ops.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/rewrite/rules/gpu_placement.h"

namespace tscope::engine::cuda {

namespace {
bool deviceType(const TensorType& t) {
  return hasTemplateCudaType(t.dtype()) && t.ndim() <= kMaxRank;
}

// Every input in [first, last) and every output has a dtype with CUDA code and rank <= 8.
bool valuesFit(const Apply& node, int first = 0, int last = -1) {
  if (last < 0) last = node.nInputs();
  for (int i = first; i < last && i < node.nInputs(); ++i)
    if (!deviceType(node.input(i)->type())) return false;
  for (int o = 0; o < node.nOutputs(); ++o)
    if (!deviceType(node.outputRef(o).type())) return false;
  return true;
}

bool firstInputFits(const Apply& node) {
  return valuesFit(node, 0, 1);
}
bool incSubtensorRule(const Apply& node) {
  return valuesFit(node, 0, 2);
}
bool allInputsFit(const Apply& node) {
  return valuesFit(node);
}
bool advancedIncRule(const Apply& node) {
  const auto& op = static_cast<const AdvancedIncSubtensor1&>(node.op());
  if (!valuesFit(node, 0, 2)) return false;
  return op.setInsteadOfInc() || scatterIncSupported(node.input(0)->type().dtype());
}
bool onDeviceValue(const Apply& node) {
  return isDeviceValue(*node.input(0));
}
bool outputFits(const Apply& node) {
  return valuesFit(node, 0, 0);
}
// SumToShape sums in g's dtype, which the reduction kernels take at 32 and 64 bits, or float16
// in float32 (as the CPU's half path).
bool sumToShapeRule(const Apply& node) {
  const DType d = node.input(0)->type().dtype();
  if (d == DType::Float16) return node.input(0)->type().ndim() <= kMaxRank;
  return valuesFit(node, 0, 1) && d != DType::Bool && dtypeSize(d) >= 4;
}
bool randomRule(const Apply& node) {
  return hasTemplateCudaType(node.outputRef(1).type().dtype());
}

HostValues inputsFrom(const Apply& node, int first) {
  HostValues h;
  for (int i = first; i < node.nInputs(); ++i) h.inputs.push_back(i);
  return h;
}
HostValues fromSecond(const Apply& node) {
  return inputsFrom(node, 1);
}
HostValues fromThird(const Apply& node) {
  return inputsFrom(node, 2);
}
HostValues secondOnly(const Apply&) {
  return {{1}, {}};
}
HostValues shapeOutput(const Apply&) {
  return {{}, {0}};
}
HostValues randomHostValues(const Apply& node) {
  const int ndim = static_cast<const RandomOp&>(node.op()).ndim();
  HostValues h;
  for (int i = 0; i <= ndim; ++i) h.inputs.push_back(i);  // the state, then the sizes
  h.outputs.push_back(0);                                 // the new state
  return h;
}
}  // namespace

void registerOpKernels(KernelRegistry& kernels, DeviceSupport& rules) {
  const Device d = Device::Cuda;
  struct Entry {
    const char* op;
    KernelFn fn;
    const char* source;
    NodeSupportFn rule;
    HostValuesFn host;
  };
  const Entry entries[] = {
      {"Reshape", &reshapeKernel, "cuda-view", &firstInputFits, &fromSecond},
      {"Subtensor", &performKernel, "cuda-view", &firstInputFits, &fromSecond},
      {"Split", &performKernel, "cuda-view", &firstInputFits, &fromSecond},
      {"SpecifyShape", &performKernel, "cuda-view", &firstInputFits, &fromSecond},
      {"Shape", &performKernel, "cuda-view", &onDeviceValue, &shapeOutput},
      {"ShapeI", &performKernel, "cuda-view", &onDeviceValue, &shapeOutput},
      {"IncSubtensor", &incSubtensorKernel, "cuda-nvrtc", &incSubtensorRule, &fromThird},
      {"AdvancedSubtensor1", &advancedSubtensor1Kernel, "cuda-nvrtc", &firstInputFits, nullptr},
      {"AdvancedIncSubtensor1", &advancedIncSubtensor1Kernel, "cuda-nvrtc", &advancedIncRule,
       nullptr},
      {"Join", &joinKernel, "cuda-nvrtc", &allInputsFit, nullptr},
      {"Alloc", &allocKernel, "cuda-nvrtc", &firstInputFits, &fromSecond},
      {"SumToShape", &sumToShapeKernel, "cuda-nvrtc", &sumToShapeRule, &fromSecond},
      {"Argmax", &argReduceKernel, "cuda-nvrtc", &allInputsFit, nullptr},
      {"Argmin", &argReduceKernel, "cuda-nvrtc", &allInputsFit, nullptr},
      {"SoftmaxCrossEntropyWithLogits", &softmaxCrossEntropyKernel, "cuda-nvrtc", &allInputsFit,
       nullptr},
      {"SoftmaxCrossEntropyGrad", &softmaxCrossEntropyGradKernel, "cuda-nvrtc", &allInputsFit,
       nullptr},
      {"CategoricalCrossEntropy", &categoricalCrossEntropyKernel, "cuda-nvrtc", &allInputsFit,
       nullptr},
      {"OneHot", &oneHotKernel, "cuda-nvrtc", &outputFits, &secondOnly},
      {"RandomUniform", &randomKernel, "curand", &randomRule, &randomHostValues},
      {"RandomNormal", &randomKernel, "curand", &randomRule, &randomHostValues},
      {"RandomIntegers", &randomKernel, "curand", &randomRule, &randomHostValues},
  };
  for (const Entry& e : entries) {
    kernels.add(e.op, d, e.fn, e.source);
    rules.add(e.op, d, e.rule);
    if (e.host) rules.addHostValues(e.op, d, e.host);
  }
}

}  // namespace tscope::engine::cuda
