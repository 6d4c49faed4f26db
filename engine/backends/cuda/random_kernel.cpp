// RandomUniform, RandomNormal and RandomIntegers on the GPU through cuRAND's host API.
//
// Note [Device random numbers]: the CPU op (engine/ops/random/random_ops.h, Note [Random state])
// carries its generator as an int64 (2,) state [key, counter] and returns [key, counter + blocks]
// with blocks the Philox blocks the draw consumes (RandomOp::blocksFor). The device kernel keeps
// that contract exactly, so a training loop walks through the same states on either device:
//   * the state and the sample's sizes are host inputs and the new state a host output (Note
//     [Host values of device nodes]); the two distribution parameters are device values (the
//     sample lives where they do, RandomOp::outputTypes), read back once per draw (one
//     synchronisation) to be checked as the CPU checks them and passed to cuRAND and the
//     transform kernels;
//   * one cuRAND generator of type CURAND_RNG_PSEUDO_PHILOX4_32_10 bound to the backend's stream
//     (Note [One stream]); each draw sets its seed to mixSeed(key ^ mixSeed(counter)) (SplitMix64,
//     engine/ops/random/philox.h) and its offset to 0, so the numbers are a function of the state
//     alone: the same state gives the same sample on the device, two states give independent
//     Philox streams (distinct keys), and no draw depends on cuRAND's offset arithmetic;
//   * the values follow the CPU op's distributions, not its numbers: uniform from
//     curandGenerateUniform[Double] ((0, 1]) mapped to [low, high) by a transform kernel (moved
//     below high when rounding lands on it, as on the CPU); normal from
//     curandGenerateNormal[Double] (an even count: a draw of odd size generates one more and keeps
//     n); integers from two 32-bit words per element (curandGenerate) by Lemire's multiply-shift
//     into [low, high), as on the CPU. tests/gpu/tst_cuda_ops_parity.cpp checks means, variances
//     and ranges with fixed seeds.
#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/backends/cuda/nn_codegen.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/random/philox.h"
#include "engine/ops/random/random_ops.h"
#include "engine/tensor/device_memory.h"

#include <cmath>
#include <cuda_runtime.h>
#include <curand.h>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace tscope::engine::cuda {

namespace {
const char* curandStatusName(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS:
      return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH:
      return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED:
      return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED:
      return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR:
      return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE:
      return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE:
      return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
      return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE:
      return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE:
      return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED:
      return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH:
      return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR:
      return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "CURAND_STATUS_UNKNOWN";
}

void checkCurand(curandStatus_t s, std::string_view call) {
  if (s == CURAND_STATUS_SUCCESS) return;
  const char* name = curandStatusName(s);
  throw CudaError(errorMessage(call, name, name, static_cast<int>(s), NodeScope::current()),
                  "cuRAND", static_cast<int>(s));
}
#define TSCOPE_CURAND_CHECK(call) checkCurand((call), #call)

// The process's generator, created on first use and bound to the runtime's stream. Seeding and
// generating happen under the lock, so two threads' draws never mix their seeds.
std::mutex g_mutex;
curandGenerator_t generatorLocked() {
  static curandGenerator_t gen = nullptr;
  if (gen == nullptr) {
    void* stream = CudaRuntime::instance().stream();
    curandGenerator_t g = nullptr;
    TSCOPE_CURAND_CHECK(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    TSCOPE_CURAND_CHECK(curandSetStream(g, static_cast<cudaStream_t>(stream)));
    gen = g;
  }
  return gen;
}

const GeneratedSource& transform(bool integers, DType dtype) {
  static std::mutex mutex;
  static std::map<std::pair<bool, DType>, GeneratedSource> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find({integers, dtype});
  if (it == cache.end())
    it = cache
             .emplace(std::pair{integers, dtype},
                      integers ? generateIntegersTransform(dtype) : generateUniformTransform(dtype))
             .first;
  return it->second;
}

std::int64_t exactInt(const Tensor& t) {
  return t.astype(DType::Int64).data<std::int64_t>()[0];
}

// The integer range [low, high) fits dtype: the CPU op's check.
bool fits(DType dtype, std::int64_t low, std::int64_t high) {
  bool ok = true;
  dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      ok = !(std::cmp_less(low, std::numeric_limits<T>::min()) ||
             std::cmp_greater(high - 1, std::numeric_limits<T>::max()));
    }
  });
  return ok;
}
}  // namespace

void randomKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& r = static_cast<const RandomOp&>(op);
  const int ndim = r.ndim();
  const Tensor& stateIn = *inputs[0];
  if (stateIn.shape() != Shape{2})
    throw std::invalid_argument(op.str() + ": the generator state must have shape (2,), found " +
                                shapeToString(stateIn.shape()));
  const Tensor state = stateIn.contiguous();
  const auto key = static_cast<std::uint64_t>(state.data<std::int64_t>()[0]);
  const auto counter = static_cast<std::uint64_t>(state.data<std::int64_t>()[1]);
  Shape shape;
  for (int i = 1; i <= ndim; ++i) {
    const std::int64_t d = exactInt(*inputs[static_cast<std::size_t>(i)]);
    if (d < 0)
      throw std::invalid_argument(op.str() + ": sample axis " + std::to_string(i - 1) +
                                  " has negative size " + std::to_string(d));
    shape.push_back(d);
  }
  const long long n = shapeNumel(shape);
  // The parameters, read back (Note [Device random numbers]).
  const Tensor p0 = toHost(*inputs[static_cast<std::size_t>(ndim) + 1]);
  const Tensor p1 = toHost(*inputs[static_cast<std::size_t>(ndim) + 2]);
  const DType dtype = r.dtype();
  Tensor sample;
  CudaRuntime& rt = CudaRuntime::instance();
  const std::uint64_t seed = philox::mixSeed(key ^ philox::mixSeed(counter));
  switch (r.distribution()) {
    case RandomDistribution::Uniform: {
      const double low = p0.item(), high = p1.item();
      if (!std::isfinite(low) || !std::isfinite(high) || low > high)
        throw std::invalid_argument(op.str() +
                                    ": expected finite bounds with low <= high, found low=" +
                                    std::to_string(low) + ", high=" + std::to_string(high));
      sample = emptyOn(Device::Cuda, dtype, shape);
      if (n == 0) break;
      {
        std::lock_guard lock(g_mutex);
        curandGenerator_t gen = generatorLocked();
        TSCOPE_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
        TSCOPE_CURAND_CHECK(curandSetGeneratorOffset(gen, 0));
        if (dtype == DType::Float64)
          TSCOPE_CURAND_CHECK(curandGenerateUniformDouble(
              gen, static_cast<double*>(sample.rawData()), static_cast<std::size_t>(n)));
        else
          TSCOPE_CURAND_CHECK(curandGenerateUniform(gen, static_cast<float*>(sample.rawData()),
                                                    static_cast<std::size_t>(n)));
      }
      const GeneratedSource& g = transform(false, dtype);
      long long count = n;
      void* p = sample.rawData();
      double lo = low, hi = high;
      void* args[] = {&count, &p, &lo, &hi};
      rt.launch(rt.kernel(g.source, g.name), n, args);
      break;
    }
    case RandomDistribution::Normal: {
      const double mean = p0.item(), sd = p1.item();
      if (!std::isfinite(mean) || !std::isfinite(sd) || sd < 0)
        throw std::invalid_argument(
            op.str() + ": expected a finite mean and std >= 0, found mean=" + std::to_string(mean) +
            ", std=" + std::to_string(sd));
      // cuRAND generates normals in pairs: an odd count gets one more, the view keeps n.
      const long long even = n + (n & 1);
      Tensor buffer = emptyOn(Device::Cuda, dtype, {even});
      sample = buffer.view(shape, contiguousStrides(shape), 0);
      if (n == 0) break;
      std::lock_guard lock(g_mutex);
      curandGenerator_t gen = generatorLocked();
      TSCOPE_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
      TSCOPE_CURAND_CHECK(curandSetGeneratorOffset(gen, 0));
      if (dtype == DType::Float64)
        TSCOPE_CURAND_CHECK(curandGenerateNormalDouble(gen, static_cast<double*>(buffer.rawData()),
                                                       static_cast<std::size_t>(even), mean, sd));
      else
        TSCOPE_CURAND_CHECK(curandGenerateNormal(gen, static_cast<float*>(buffer.rawData()),
                                                 static_cast<std::size_t>(even),
                                                 static_cast<float>(mean), static_cast<float>(sd)));
      break;
    }
    case RandomDistribution::Integers: {
      const std::int64_t low = exactInt(p0), high = exactInt(p1);
      if (low >= high)
        throw std::invalid_argument(op.str() + ": expected low < high, found low=" +
                                    std::to_string(low) + ", high=" + std::to_string(high));
      if (!fits(dtype, low, high))
        throw std::invalid_argument(op.str() + ": the range [" + std::to_string(low) + ", " +
                                    std::to_string(high) + ") does not fit " +
                                    std::string(dtypeName(dtype)));
      sample = emptyOn(Device::Cuda, dtype, shape);
      if (n == 0) break;
      Tensor words = emptyOn(Device::Cuda, DType::UInt32, {2 * n});
      {
        std::lock_guard lock(g_mutex);
        curandGenerator_t gen = generatorLocked();
        TSCOPE_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
        TSCOPE_CURAND_CHECK(curandSetGeneratorOffset(gen, 0));
        TSCOPE_CURAND_CHECK(curandGenerate(gen, static_cast<unsigned int*>(words.rawData()),
                                           static_cast<std::size_t>(2 * n)));
      }
      const GeneratedSource& g = transform(true, dtype);
      long long count = n;
      const void* pw = words.rawData();
      unsigned long long lo = static_cast<std::uint64_t>(low);
      unsigned long long range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
      void* po = sample.rawData();
      void* args[] = {&count, &pw, &lo, &range, &po};
      rt.launch(rt.kernel(g.source, g.name), n, args);
      break;
    }
  }
  // The CPU's next state: the same key, the counter past the blocks the CPU draw would use.
  Tensor next(DType::Int64, Shape{2});
  next.data<std::int64_t>()[0] = static_cast<std::int64_t>(key);
  next.data<std::int64_t>()[1] = static_cast<std::int64_t>(counter + r.blocksFor(n));
  *outputs[0] = next;
  *outputs[1] = sample;
}

}  // namespace tscope::engine::cuda
