#include "engine/backends/cuda/nn_codegen.h"

#include "engine/backends/cuda/nvrtc_compiler.h"

#include <sstream>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
GeneratedSource finish(const std::string& prefix, std::string kernels, bool rows) {
  std::ostringstream os;
  os << prefix << std::hex << fnv1a(kernels.data(), kernels.size());
  GeneratedSource g;
  g.name = os.str();
  for (std::size_t at = kernels.find("NAME"); at != std::string::npos;
       at = kernels.find("NAME", at))
    kernels.replace(at, 4, g.name);
  g.source = scalarPrelude() + (rows ? nnPrelude() : std::string()) + "\n" + kernels;
  return g;
}

void requireFloat(DType d, const char* where) {
  if (d != DType::Float32 && d != DType::Float64)
    throw std::invalid_argument(std::string(where) + ": expected float32 or float64, found " +
                                std::string(dtypeName(d)));
}

void requireIndex(DType d, const char* where) {
  if (!isInteger(d))
    throw std::invalid_argument(std::string(where) + ": expected an integer index dtype, found " +
                                std::string(dtypeName(d)));
}

const char* kElementLoop =
    "  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;"
    " e += (long long)gridDim.x * blockDim.x) {\n";
const char* kRowLoop = "  for (long long i = blockIdx.x; i < rows; i += gridDim.x) {\n";

// The class-index check every class-target source carries.
std::string checkKernel(DType index) {
  return "extern \"C\" __global__ void NAME_check(long long n, long long k, const " +
         cudaTypeName(index) + "* __restrict__ t, unsigned long long* bad) {\n" + kElementLoop +
         "    const long long v = (long long)t[e];\n"
         "    if (v < 0 || v >= k) atomicMin(bad, (unsigned long long)e);\n"
         "  }\n}\n";
}
}  // namespace

const std::string& nnPrelude() {
  static const std::string source = R"CUDA(
// Block-wide folds (blockDim.x a multiple of 32, every thread calls): the result in every thread.
template <class T> __device__ T ts_block_sum(T v, T* shared) {
  for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xffffffffu, v, s);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)((blockDim.x + 31) >> 5) ? shared[lane] : (T)0;
    for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xffffffffu, v, s);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}
// m = (m < v) ? v : m: std::max(m, v) of the CPU, which skips a NaN v.
template <class T> __device__ T ts_block_max(T v, T* shared, T lowest) {
  for (int s = 16; s > 0; s >>= 1) { const T o = __shfl_down_sync(0xffffffffu, v, s); v = (v < o) ? o : v; }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)((blockDim.x + 31) >> 5) ? shared[lane] : lowest;
    for (int s = 16; s > 0; s >>= 1) { const T o = __shfl_down_sync(0xffffffffu, v, s); v = (v < o) ? o : v; }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}
)CUDA";
  return source;
}

GeneratedSource generateSoftmaxCrossEntropy(DType dtype, std::optional<DType> classIndex) {
  requireFloat(dtype, "CUDA softmax cross-entropy");
  const std::string T = cudaTypeName(dtype);
  const std::string inf = dtype == DType::Float32 ? "__int_as_float(0x7f800000)"
                                                  : "__longlong_as_double(0x7ff0000000000000LL)";
  std::string k;
  if (classIndex) {
    requireIndex(*classIndex, "CUDA softmax cross-entropy");
    k += checkKernel(*classIndex);
  }
  const std::string targets = classIndex ? "const " + cudaTypeName(*classIndex) + "* __restrict__ t"
                                         : "const " + T + "* __restrict__ q";
  k += "extern \"C\" __global__ void NAME(long long rows, long long k, const " + T +
       "* __restrict__ z, " + targets + ", " + T + "* __restrict__ loss, " + T +
       "* __restrict__ sm) {\n";
  k += "  __shared__ " + T + " shared[32];\n";
  k += "  const " + T + " lowest = -" + inf + ";\n";
  k += kRowLoop;
  k += "    const " + T + "* row = z + i * k;\n";
  k += "    " + T + " m = lowest;\n";
  k += "    for (long long j = threadIdx.x; j < k; j += blockDim.x) m = (m < row[j]) ? row[j] : "
       "m;\n";
  k += "    m = ts_block_max<" + T + ">(m, shared, lowest);\n";
  k += "    " + T + " s = 0;\n";
  k += "    for (long long j = threadIdx.x; j < k; j += blockDim.x) s += exp(row[j] - m);\n";
  k += "    s = ts_block_sum<" + T + ">(s, shared);\n";
  k += "    const " + T + " inv = " + T + "(1) / s;\n";
  k += "    for (long long j = threadIdx.x; j < k; j += blockDim.x) sm[i * k + j] = exp(row[j] - "
       "m) * inv;\n";
  k += "    const " + T + " lse = m + log(s);\n";
  if (classIndex) {
    k += "    if (threadIdx.x == 0) {\n"
         "      const long long c = (long long)t[i];\n"
         "      loss[i] = (c >= 0 && c < k) ? " +
         T +
         "(lse - row[c]) : lse;\n"
         "    }\n";
  } else {
    k += "    " + T + " acc = 0;\n";
    k += "    for (long long j = threadIdx.x; j < k; j += blockDim.x) acc += q[i * k + j] * (lse - "
         "row[j]);\n";
    k += "    acc = ts_block_sum<" + T + ">(acc, shared);\n";
    k += "    if (threadIdx.x == 0) loss[i] = acc;\n";
  }
  k += "  }\n}\n";
  return finish("ts_sxent_", k, true);
}

GeneratedSource generateSoftmaxCrossEntropyGrad(DType dtype, std::optional<DType> classIndex) {
  requireFloat(dtype, "CUDA softmax cross-entropy gradient");
  const std::string T = cudaTypeName(dtype);
  std::string k;
  if (classIndex) {
    requireIndex(*classIndex, "CUDA softmax cross-entropy gradient");
    k += checkKernel(*classIndex);
    k += "extern \"C\" __global__ void NAME(long long rows, long long k, const " + T +
         "* __restrict__ g, const " + T + "* __restrict__ sm, const " + cudaTypeName(*classIndex) +
         "* __restrict__ t, " + T + "* __restrict__ dz) {\n";
    k += "  const long long n = rows * k;\n";
    k += kElementLoop;
    k += "    const long long i = e / k, j = e - i * k;\n"
         "    " +
         T +
         " v = g[i] * sm[e];\n"
         "    if (j == (long long)t[i]) v -= g[i];\n"
         "    dz[e] = v;\n"
         "  }\n}\n";
    return finish("ts_sxentg_", k, false);
  }
  k += "extern \"C\" __global__ void NAME(long long rows, long long k, const " + T +
       "* __restrict__ g, const " + T + "* __restrict__ sm, const " + T + "* __restrict__ q, " + T +
       "* __restrict__ dz) {\n";
  k += "  __shared__ " + T + " shared[32];\n";
  k += kRowLoop;
  k += "    " + T + " sq = 0;\n";
  k += "    for (long long j = threadIdx.x; j < k; j += blockDim.x) sq += q[i * k + j];\n";
  k += "    sq = ts_block_sum<" + T + ">(sq, shared);\n";
  k += "    for (long long j = threadIdx.x; j < k; j += blockDim.x) {\n"
       "      const long long e = i * k + j;\n"
       "      dz[e] = g[i] * (sm[e] * sq - q[e]);\n"
       "    }\n";
  k += "  }\n}\n";
  return finish("ts_sxentg_", k, true);
}

GeneratedSource generateCategoricalCrossEntropy(DType dtype, std::optional<DType> classIndex) {
  requireFloat(dtype, "CUDA categorical cross-entropy");
  const std::string T = cudaTypeName(dtype);
  std::string k;
  if (classIndex) {
    requireIndex(*classIndex, "CUDA categorical cross-entropy");
    k += checkKernel(*classIndex);
    k += "extern \"C\" __global__ void NAME(long long rows, long long k, const " + T +
         "* __restrict__ p, const " + cudaTypeName(*classIndex) + "* __restrict__ t, " + T +
         "* __restrict__ loss) {\n";
    k += "  const long long n = rows;\n";
    k += kElementLoop;
    k += "    const long long c = (long long)t[e];\n"
         "    if (c >= 0 && c < k) loss[e] = -log(p[e * k + c]);\n"
         "  }\n}\n";
    return finish("ts_cxent_", k, false);
  }
  k += "extern \"C\" __global__ void NAME(long long rows, long long k, const " + T +
       "* __restrict__ p, const " + T + "* __restrict__ q, " + T + "* __restrict__ loss) {\n";
  k += "  __shared__ " + T + " shared[32];\n";
  k += kRowLoop;
  k += "    " + T + " acc = 0;\n";
  k += "    for (long long j = threadIdx.x; j < k; j += blockDim.x) acc += q[i * k + j] * log(p[i "
       "* k + j]);\n";
  k += "    acc = ts_block_sum<" + T + ">(acc, shared);\n";
  k += "    if (threadIdx.x == 0) loss[i] = -acc;\n";
  k += "  }\n}\n";
  return finish("ts_cxent_", k, true);
}

GeneratedSource generateOneHot(DType out, DType index) {
  if (!hasTemplateCudaType(out))
    throw std::invalid_argument("CUDA one-hot: expected a dtype with CUDA code, found " +
                                std::string(dtypeName(out)));
  requireIndex(index, "CUDA one-hot");
  const std::string O = cudaTypeName(out);
  std::string k = checkKernel(index);
  k += "extern \"C\" __global__ void NAME(long long rows, long long depth, const " +
       cudaTypeName(index) + "* __restrict__ t, " + O + "* __restrict__ out) {\n";
  k += "  const long long n = rows * depth;\n";
  k += kElementLoop;
  k += "    const long long i = e / depth, j = e - i * depth;\n"
       "    out[e] = (" +
       O +
       ")(j == (long long)t[i] ? 1 : 0);\n"
       "  }\n}\n";
  return finish("ts_onehot_", k, false);
}

GeneratedSource generateUniformTransform(DType dtype) {
  requireFloat(dtype, "CUDA uniform transform");
  const std::string T = cudaTypeName(dtype);
  const std::string next = dtype == DType::Float32 ? "nextafterf" : "nextafter";
  std::string k;
  k += "extern \"C\" __global__ void NAME(long long n, " + T + "* u, double low, double high) {\n";
  k += "  const double span = high - low;\n";
  k += "  const " + T + " hi = (" + T + ")high, lo = (" + T + ")low;\n";
  k += kElementLoop;
  k += "    " + T + " v = (" + T +
       ")(low + span * (1.0 - (double)u[e]));\n"
       "    if (span > 0 && v >= hi) v = " +
       next +
       "(hi, lo);\n"
       "    u[e] = v;\n"
       "  }\n}\n";
  return finish("ts_runi_", k, false);
}

GeneratedSource generateIntegersTransform(DType dtype) {
  if (!isInteger(dtype))
    throw std::invalid_argument("CUDA integers transform: expected an integer dtype, found " +
                                std::string(dtypeName(dtype)));
  const std::string T = cudaTypeName(dtype);
  std::string k;
  k += "extern \"C\" __global__ void NAME(long long n, const unsigned int* __restrict__ w, "
       "unsigned long long low, unsigned long long range, " +
       T + "* __restrict__ out) {\n";
  k += kElementLoop;
  k += "    const unsigned long long bits = ((unsigned long long)w[2 * e] << 32) | w[2 * e + 1];\n"
       "    out[e] = (" +
       T +
       ")(long long)(low + __umul64hi(bits, range));\n"
       "  }\n}\n";
  return finish("ts_rint_", k, false);
}

}  // namespace tscope::engine::cuda
