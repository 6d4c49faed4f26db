#include "engine/backends/cuda/shape_codegen.h"

#include "engine/backends/cuda/nvrtc_compiler.h"

#include <sstream>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
// Names every kernel of the text after its hash, then puts the preludes in front.
GeneratedSource finish(const std::string& prefix, std::string kernels) {
  std::ostringstream os;
  os << prefix << std::hex << fnv1a(kernels.data(), kernels.size());
  GeneratedSource g;
  g.name = os.str();
  for (std::size_t at = kernels.find("NAME"); at != std::string::npos;
       at = kernels.find("NAME", at))
    kernels.replace(at, 4, g.name);
  g.source = scalarPrelude() + shapePrelude() + "\n" + kernels;
  return g;
}

void require(DType d, const char* where) {
  if (!hasTemplateCudaType(d))
    throw std::invalid_argument(std::string(where) + ": expected dtypes with CUDA code, found " +
                                std::string(dtypeName(d)) + " (float16 runs on the CPU)");
}

void requireIndex(DType d, const char* where) {
  if (!isInteger(d) || d == DType::Bool)
    throw std::invalid_argument(std::string(where) + ": expected an integer index dtype, found " +
                                std::string(dtypeName(d)));
}

const char* kLoop =
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;"
    " i += (long long)gridDim.x * blockDim.x) {\n";

// The index struct of a strided kernel with `operands` stride arrays, and the offsets o0.. of
// element i.
std::string ixStruct(int operands) {
  return "struct NAME_ix { long long ndim; long long size[" + std::to_string(kMaxRank) +
         "]; long long stride[" + std::to_string(operands) + "][" + std::to_string(kMaxRank) +
         "]; };\n";
}
std::string offsets(int operands) {
  std::string s = "    long long rem = i;\n";
  for (int k = 0; k < operands; ++k) s += "    long long o" + std::to_string(k) + " = 0;\n";
  s += "    for (int d = (int)ix.ndim - 1; d >= 0; --d) {\n"
       "      const long long c = rem % ix.size[d];\n"
       "      rem /= ix.size[d];\n";
  for (int k = 0; k < operands; ++k)
    s += "      o" + std::to_string(k) + " += c * ix.stride[" + std::to_string(k) + "][d];\n";
  return s + "    }\n";
}
}  // namespace

const std::string& shapePrelude() {
  static const std::string source = R"CUDA(
template <class To, class From> TS_D To ts_convert(From x) {
  if constexpr (ts_tr<To>::is_bool) {
    return x != (From)0;
  } else if constexpr (!ts_tr<To>::is_float && ts_tr<From>::is_float) {
    const double t = trunc((double)x);
    if constexpr (sizeof(To) == 8 && !ts_tr<To>::is_signed)
      if (t >= 9223372036854775808.0 && t < 18446744073709551616.0) return (To)t;
    long long wide = -9223372036854775807LL - 1;
    if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) wide = (long long)t;
    return (To)wide;
  } else {
    return (To)x;
  }
}
)CUDA";
  return source;
}

GeneratedSource generateCopy(DType dst, DType src, bool add) {
  require(dst, "CUDA copy");
  require(src, "CUDA copy");
  const std::string d = cudaTypeName(dst), s = cudaTypeName(src);
  std::string k = ixStruct(2);
  k += "extern \"C\" __global__ void NAME(long long n, NAME_ix ix, " + d + "* dst, const " + s +
       "* __restrict__ src) {\n";
  k += kLoop;
  k += offsets(2);
  const std::string value = "ts_convert<" + d + ", " + s + ">(src[o1])";
  k += add ? "    dst[o0] = ts_add<" + d + ">(dst[o0], " + value + ");\n"
           : "    dst[o0] = " + value + ";\n";
  k += "  }\n}\n";
  return finish(add ? "ts_cpa_" : "ts_cp_", k);
}

GeneratedSource generateFill(DType dtype) {
  require(dtype, "CUDA fill");
  const std::string t = cudaTypeName(dtype);
  std::string k = ixStruct(1);
  k += "extern \"C\" __global__ void NAME(long long n, NAME_ix ix, " + t + "* dst, " + t +
       " value) {\n";
  k += kLoop;
  k += offsets(1);
  k += "    dst[o0] = value;\n  }\n}\n";
  return finish("ts_fill_", k);
}

GeneratedSource generateGather(DType dtype, DType index) {
  require(dtype, "CUDA gather");
  requireIndex(index, "CUDA gather");
  const std::string t = cudaTypeName(dtype), ix = cudaTypeName(index);
  std::string k;
  // Threads walk nIdx * max(rowLen, 1) items so that every index is checked even when the rows
  // are empty.
  k += "extern \"C\" __global__ void NAME(long long nIdx, long long rowLen, long long nRows, "
       "const " +
       ix + "* __restrict__ idx, const " + t + "* __restrict__ x, " + t +
       "* __restrict__ out, unsigned long long* bad) {\n";
  k += "  const long long per = rowLen > 0 ? rowLen : 1, n = nIdx * per;\n";
  k += kLoop;
  k += "    const long long kk = i / per, j = i - kk * per;\n"
       "    long long r = (long long)idx[kk];\n"
       "    if (r < -nRows || r >= nRows) { atomicMin(bad, (unsigned long long)kk); continue; }\n"
       "    if (rowLen == 0) continue;\n"
       "    if (r < 0) r += nRows;\n"
       "    out[i] = x[r * rowLen + j];\n"
       "  }\n}\n";
  return finish("ts_take_", k);
}

bool scatterIncSupported(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float64:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt32:
    case DType::UInt64:
      return true;
    default:
      return false;
  }
}

GeneratedSource generateScatter(DType dtype, DType index, bool set) {
  require(dtype, "CUDA scatter");
  requireIndex(index, "CUDA scatter");
  if (!set && !scatterIncSupported(dtype))
    throw std::invalid_argument(
        "CUDA scatter: an increment needs a dtype with a device atomicAdd (float32, float64, "
        "int32, int64, uint32, uint64), found " +
        std::string(dtypeName(dtype)));
  const std::string t = cudaTypeName(dtype), ix = cudaTypeName(index);
  std::string k;
  k += "extern \"C\" __global__ void NAME_check(long long n, long long nRows, const " + ix +
       "* __restrict__ idx, unsigned long long* bad) {\n";
  k += kLoop;
  k += "    const long long r = (long long)idx[i];\n"
       "    if (r < -nRows || r >= nRows) atomicMin(bad, (unsigned long long)i);\n"
       "  }\n}\n";
  if (set) {
    k += "extern \"C\" __global__ void NAME_winner(long long n, long long nRows, const " + ix +
         "* __restrict__ idx, long long* winner) {\n";
    k += kLoop;
    k += "    long long r = (long long)idx[i];\n"
         "    if (r < 0) r += nRows;\n"
         "    atomicMax(winner + r, i);\n"
         "  }\n}\n";
  }
  // The write: n = nIdx * rowLen items; y is contiguous of shape (nIdx, row...).
  k += "extern \"C\" __global__ void NAME_write(long long n, long long rowLen, long long nRows, "
       "const " +
       ix + "* __restrict__ idx, const long long* __restrict__ winner, const " + t +
       "* __restrict__ y, " + t + "* out) {\n";
  k += kLoop;
  k += "    const long long kk = i / rowLen, j = i - kk * rowLen;\n"
       "    long long r = (long long)idx[kk];\n"
       "    if (r < 0) r += nRows;\n";
  if (set) {
    k += "    if (winner[r] == kk) out[r * rowLen + j] = y[i];\n";
  } else if (dtype == DType::Int64 || dtype == DType::UInt64) {
    // Two's complement: an unsigned 64-bit add wraps as the CPU's int64 add does.
    k += "    atomicAdd((unsigned long long*)(out + r * rowLen + j), (unsigned long long)y[i]);\n";
  } else {
    k += "    atomicAdd(out + r * rowLen + j, y[i]);\n";
  }
  k += "  }\n}\n";
  return finish(set ? "ts_scs_" : "ts_sci_", k);
}

StridedOperands coalesceAxes(const Shape& shape, std::vector<Strides> strides) {
  StridedOperands out;
  out.strides.resize(strides.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool merge = !out.shape.empty() && [&] {
      for (std::size_t k = 0; k < strides.size(); ++k)
        if (out.strides[k].back() != strides[k][d] * shape[d]) return false;
      return true;
    }();
    if (merge) {
      out.shape.back() *= shape[d];
      for (std::size_t k = 0; k < strides.size(); ++k) out.strides[k].back() = strides[k][d];
      continue;
    }
    out.shape.push_back(shape[d]);
    for (std::size_t k = 0; k < strides.size(); ++k) out.strides[k].push_back(strides[k][d]);
  }
  if (out.shape.empty()) {
    out.shape.push_back(1);
    for (Strides& s : out.strides) s.push_back(0);
  }
  return out;
}

}  // namespace tscope::engine::cuda
