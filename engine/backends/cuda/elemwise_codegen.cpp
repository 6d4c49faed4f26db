#include "engine/backends/cuda/elemwise_codegen.h"

#include "engine/backends/cuda/nvrtc_compiler.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/elemwise.h"

#include <sstream>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
std::string reg(int r) {
  return "r" + std::to_string(r);
}

// The device function of a scalar op: ts_<name> (scalarOpInfo's names are the prelude's).
std::string fn(ScalarOp op) {
  return "ts_" + std::string(scalarOpInfo(op).name);
}

DType kernelDType(DType d) {
  return d == DType::Float16 ? DType::Float32 : d;
}

void requireType(DType d, const char* where) {
  if (!hasCudaType(d))
    throw std::invalid_argument(std::string(where) + ": expected dtypes with CUDA code, found " +
                                std::string(dtypeName(d)));
}

// Note [Half registers]: a float16 register is a __half (cuda_fp16.h); it is read as a float
// (__half2float) and written from one (__float2half_rn, round to nearest even, as the CPU's
// floatToHalf), so every computation on it happens in float32, the kernel dtype the CPU Composite
// uses for float16 (Note [Elemwise kernel dtypes]). No implicit __half conversion is relied on.
std::string readAs(DType registerType, const std::string& value) {
  return registerType == DType::Float16 ? "__half2float(" + value + ")" : value;
}
std::string convertTo(DType to, const std::string& expr) {
  if (to == DType::Float16) return "__float2half_rn((float)(" + expr + "))";
  return "(" + cudaTypeName(to) + ")(" + expr + ")";
}

// One instruction as a statement writing register r (Note [Elementwise kernels]).
std::string statement(const ScalarProgram& p, std::size_t j) {
  const CompositeInstruction& ins = p.program[j];
  const int r = p.nInputs + static_cast<int>(j);
  const DType out = p.registers[static_cast<std::size_t>(r)];
  const std::string outType = cudaTypeName(out);
  const ScalarOpInfo& info = scalarOpInfo(ins.op);
  auto dtypeOf = [&](int a) { return p.registers[static_cast<std::size_t>(a)]; };
  std::string expr;
  if (ins.op == ScalarOp::Cast) {
    return "const " + outType + " " + reg(r) + " = " +
           convertTo(out, readAs(dtypeOf(ins.args[0]), reg(ins.args[0]))) + ";";
  } else {
    // Note [Elemwise kernel dtypes]: comparisons and logic in the promoted operand dtype, the
    // rest in the output dtype.
    DType compute = out;
    if (info.rule == DTypeRule::Bool) {
      compute = dtypeOf(ins.args[0]);
      for (std::size_t k = 1; k < ins.args.size(); ++k)
        compute = promoteTypes(compute, dtypeOf(ins.args[k]));
    }
    const std::string k = cudaTypeName(kernelDType(compute));
    auto operand = [&](std::size_t a) {
      const bool cond = ins.op == ScalarOp::Switch && a == 0;
      return "(" + (cond ? std::string("bool") : k) + ")" +
             readAs(dtypeOf(ins.args[a]), reg(ins.args[a]));
    };
    if (ins.op == ScalarOp::Second) {
      expr = operand(1);
    } else if (info.arity < 0 && ins.args.size() > 2) {
      expr = operand(0);
      for (std::size_t a = 1; a < ins.args.size(); ++a)
        expr = fn(ins.op) + "<" + k + ">(" + expr + ", " + operand(a) + ")";
    } else {
      expr = fn(ins.op) + "<" + k + ">(";
      for (std::size_t a = 0; a < ins.args.size(); ++a) expr += (a ? ", " : "") + operand(a);
      expr += ")";
    }
    expr = convertTo(out, expr);
  }
  return "const " + outType + " " + reg(r) + " = " + expr + ";";
}

// The program's statements, loading input i from load(i) and storing output o with store(o, v).
template <class Load, class Store>
std::string body(const ScalarProgram& p, Load load, Store store, const std::string& indent) {
  std::string s;
  for (int i = 0; i < p.nInputs; ++i)
    s += indent + "const " + cudaTypeName(p.registers[static_cast<std::size_t>(i)]) + " " + reg(i) +
         " = " + load(i) + ";\n";
  for (std::size_t j = 0; j < p.program.size(); ++j) s += indent + statement(p, j) + "\n";
  for (std::size_t o = 0; o < p.outputs.size(); ++o)
    s += indent + store(static_cast<int>(o), reg(p.outputs[o])) + ";\n";
  return s;
}

std::string operandParams(const ScalarProgram& p) {
  std::string s;
  for (int i = 0; i < p.nInputs; ++i)
    s += ", const " + cudaTypeName(p.registers[static_cast<std::size_t>(i)]) + "* __restrict__ in" +
         std::to_string(i);
  for (std::size_t o = 0; o < p.outputs.size(); ++o)
    s += ", " + cudaTypeName(p.registers[static_cast<std::size_t>(p.outputs[o])]) +
         "* __restrict__ out" + std::to_string(o);
  return s;
}

std::string hexName(const std::string& prefix, const std::string& text) {
  std::ostringstream os;
  os << prefix << std::hex << fnv1a(text.data(), text.size());
  return os.str();
}
}  // namespace

bool hasCudaType(DType) {
  return true;  // float16 through cuda_fp16.h (Note [Half registers])
}
bool hasTemplateCudaType(DType dtype) {
  return dtype != DType::Float16;
}

bool usesHalf(const ScalarProgram& program) {
  for (DType d : program.registers)
    if (d == DType::Float16) return true;
  return false;
}

const std::string& halfInclude() {
  static const std::string include = "#include <cuda_fp16.h>\n";
  return include;
}

std::string cudaTypeName(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "ts_i8";
    case DType::Int16:
      return "ts_i16";
    case DType::Int32:
      return "ts_i32";
    case DType::Int64:
      return "ts_i64";
    case DType::UInt8:
      return "ts_u8";
    case DType::UInt16:
      return "ts_u16";
    case DType::UInt32:
      return "ts_u32";
    case DType::UInt64:
      return "ts_u64";
    case DType::Float16:
      return "__half";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  throw std::invalid_argument("cudaTypeName: unknown dtype");
}

ScalarProgram scalarProgramOf(const Composite& op) {
  ScalarProgram p;
  p.nInputs = op.nInputs();
  for (int r = 0; r < op.nRegisters(); ++r) {
    p.registers.push_back(op.registerDType(r));
    requireType(p.registers.back(), "CUDA Composite");
  }
  p.program = op.program();
  p.outputs = op.outputRegisters();
  return p;
}

ScalarProgram scalarProgramOf(const Apply& node) {
  if (const auto* c = dynamic_cast<const Composite*>(&node.op())) return scalarProgramOf(*c);
  const auto* e = dynamic_cast<const Elemwise*>(&node.op());
  if (e == nullptr)
    throw std::invalid_argument("scalarProgramOf: expected an Elemwise or Composite node, found " +
                                node.op().str());
  ScalarProgram p;
  p.nInputs = node.nInputs();
  CompositeInstruction ins;
  ins.op = e->scalarOp();
  ins.target = e->target();
  for (int i = 0; i < node.nInputs(); ++i) {
    p.registers.push_back(node.input(i)->type().dtype());
    ins.args.push_back(i);
  }
  p.registers.push_back(node.outputRef(0).type().dtype());
  for (DType d : p.registers) requireType(d, "CUDA Elemwise");
  p.program.push_back(ins);
  p.outputs.push_back(p.nInputs);
  return p;
}

GeneratedSource generateElemwise(const ScalarProgram& p) {
  const int nOperands = p.nInputs + static_cast<int>(p.outputs.size());
  std::string kernels;
  // Strided: index arithmetic per operand (Note [Elementwise kernels]).
  kernels += "struct NAME_ix { long long ndim; long long size[" + std::to_string(kMaxRank) +
             "]; long long stride[" + std::to_string(nOperands) + "][" + std::to_string(kMaxRank) +
             "]; };\n";
  std::string params = operandParams(p);
  kernels += "extern \"C\" __global__ void NAME_strided(long long n, NAME_ix ix" + params + ") {\n";
  kernels +=
      "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;"
      " i += (long long)gridDim.x * blockDim.x) {\n";
  kernels += "    long long rem = i;\n";
  for (int k = 0; k < nOperands; ++k) kernels += "    long long o" + std::to_string(k) + " = 0;\n";
  kernels +=
      "    for (int d = (int)ix.ndim - 1; d >= 0; --d) {\n"
      "      const long long c = rem % ix.size[d];\n"
      "      rem /= ix.size[d];\n";
  for (int k = 0; k < nOperands; ++k)
    kernels += "      o" + std::to_string(k) + " += c * ix.stride[" + std::to_string(k) + "][d];\n";
  kernels += "    }\n";
  kernels += body(
      p, [](int i) { return "in" + std::to_string(i) + "[o" + std::to_string(i) + "]"; },
      [&](int o, const std::string& v) {
        return "out" + std::to_string(o) + "[o" + std::to_string(p.nInputs + o) + "] = " + v;
      },
      "    ");
  kernels += "  }\n}\n";
  // Contiguous.
  kernels += "extern \"C\" __global__ void NAME_contig(long long n" + params + ") {\n";
  kernels +=
      "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;"
      " i += (long long)gridDim.x * blockDim.x) {\n";
  kernels += body(
      p, [](int i) { return "in" + std::to_string(i) + "[i]"; },
      [](int o, const std::string& v) { return "out" + std::to_string(o) + "[i] = " + v; }, "    ");
  kernels += "  }\n}\n";
  // float4 loads and stores when every operand is float32.
  bool allFloat = true;
  for (int i = 0; i < p.nInputs; ++i)
    allFloat = allFloat && p.registers[std::size_t(i)] == DType::Float32;
  for (int r : p.outputs) allFloat = allFloat && p.registers[std::size_t(r)] == DType::Float32;
  if (allFloat) {
    kernels += "extern \"C\" __global__ void NAME_vec4(long long n" + params + ") {\n";
    kernels += "  const long long n4 = n / 4;\n";
    kernels +=
        "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;"
        " i += (long long)gridDim.x * blockDim.x) {\n";
    for (int i = 0; i < p.nInputs; ++i)
      kernels += "    const float4 v" + std::to_string(i) +
                 " = reinterpret_cast<const float4*>(in" + std::to_string(i) + ")[i];\n";
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      kernels += "    float4 w" + std::to_string(o) + ";\n";
    for (const char* lane : {"x", "y", "z", "w"}) {
      kernels += "    {\n";
      kernels += body(
          p, [&](int i) { return "v" + std::to_string(i) + "." + lane; },
          [&](int o, const std::string& v) {
            return "w" + std::to_string(o) + "." + lane + " = " + v;
          },
          "      ");
      kernels += "    }\n";
    }
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      kernels += "    reinterpret_cast<float4*>(out" + std::to_string(o) + ")[i] = w" +
                 std::to_string(o) + ";\n";
    kernels += "  }\n";
    kernels +=
        "  for (long long i = n4 * 4 + blockIdx.x * (long long)blockDim.x + threadIdx.x;"
        " i < n; i += (long long)gridDim.x * blockDim.x) {\n";
    kernels += body(
        p, [](int i) { return "in" + std::to_string(i) + "[i]"; },
        [](int o, const std::string& v) { return "out" + std::to_string(o) + "[i] = " + v; },
        "    ");
    kernels += "  }\n}\n";
  }
  GeneratedSource g;
  g.name = hexName("ts_ew_", kernels);
  g.vec4 = allFloat;
  for (std::size_t at = kernels.find("NAME"); at != std::string::npos;
       at = kernels.find("NAME", at))
    kernels.replace(at, 4, g.name);
  g.source = scalarPrelude() + "\n" + (usesHalf(p) ? halfInclude() : std::string()) + kernels;
  return g;
}

// Note [Reduction kernels]: the input is seen as [kept..., reduced...] through ix (the kept
// axes' sizes and strides, then the reduced ones'); block b folds output element b (grid-stride
// over the outputs), each thread folds a strided share of the nReduce elements in the
// accumulator dtype, then the block combines: warp shuffles, one value per warp in shared
// memory, the first warp again. One pass over the input; NaN wins max/min as on the CPU.
// all/any (And, Or: a bool accumulator) fold "x != 0" (NaN is true) in an int with & and |,
// since warp shuffles take no bool. Argmax/argmin (generateArgReduce) fold (value, index) pairs:
// the reduced axes are read in row-major order, so r is the index along one axis, or the flat
// index for axis=null; the pair rule picks the first NaN if there is one, else the larger
// (smaller) value, and the smaller index between equals, which is associative and gives
// exactly the CPU's "first extreme, the first NaN wins" whatever the order the threads fold in.
namespace {
struct ReduceParts {
  std::string accType;   // the accumulator's C++ type
  std::string identity;  // of the fold
  std::string (*combine)(const std::string& a, const std::string& b, const std::string& type);
  std::string (*load)(const std::string& x, const std::string& type);
};

std::string reduceSkeleton(const ReduceParts& r, DType in, DType out) {
  const std::string& a = r.accType;
  auto comb = [&](const std::string& x, const std::string& y) { return r.combine(x, y, a); };
  std::string k;
  k += "struct NAME_rx { long long nKept; long long nRed; long long size[" +
       std::to_string(kMaxRank) + "]; long long stride[" + std::to_string(kMaxRank) + "]; };\n";
  k += "extern \"C\" __global__ void NAME(long long nOut, long long nReduce, NAME_rx ix, const " +
       cudaTypeName(in) + "* __restrict__ in, " + cudaTypeName(out) + "* __restrict__ out) {\n";
  k += "  __shared__ " + a + " partial[32];\n";
  k += "  for (long long o = blockIdx.x; o < nOut; o += gridDim.x) {\n"
       "    long long base = 0, rem = o;\n"
       "    for (int d = (int)ix.nKept - 1; d >= 0; --d) {\n"
       "      base += (rem % ix.size[d]) * ix.stride[d];\n"
       "      rem /= ix.size[d];\n"
       "    }\n";
  k += "    " + a + " acc = " + r.identity + ";\n";
  k += "    for (long long r = threadIdx.x; r < nReduce; r += blockDim.x) {\n"
       "      long long off = base, left = r;\n"
       "      for (int d = (int)(ix.nKept + ix.nRed) - 1; d >= (int)ix.nKept; --d) {\n"
       "        off += (left % ix.size[d]) * ix.stride[d];\n"
       "        left /= ix.size[d];\n"
       "      }\n";
  k += "      acc = " + comb("acc", r.load(readAs(in, "in[off]"), a)) + ";\n    }\n";
  k += "    for (int s = 16; s > 0; s >>= 1) acc = " +
       comb("acc", "__shfl_down_sync(0xffffffffu, acc, s)") + ";\n";
  k += "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
       "    if (lane == 0) partial[warp] = acc;\n"
       "    __syncthreads();\n"
       "    if (warp == 0) {\n"
       "      acc = lane < (int)((blockDim.x + 31) >> 5) ? partial[lane] : " +
       r.identity + ";\n";
  k += "      for (int s = 16; s > 0; s >>= 1) acc = " +
       comb("acc", "__shfl_down_sync(0xffffffffu, acc, s)") + ";\n";
  k += "      if (lane == 0) out[o] = " + convertTo(out, "acc") +
       ";\n"
       "    }\n"
       "    __syncthreads();\n"
       "  }\n}\n";
  return k;
}

// The reduction kernel's source: named by its hash, with cuda_fp16.h when a value is float16.
GeneratedSource reduceSource(std::string k, DType in, DType out) {
  GeneratedSource g;
  g.name = hexName("ts_red_", k);
  for (std::size_t at = k.find("NAME"); at != std::string::npos; at = k.find("NAME", at))
    k.replace(at, 4, g.name);
  const bool half = in == DType::Float16 || out == DType::Float16;
  g.source = scalarPrelude() + "\n" + (half ? halfInclude() : std::string()) + k;
  return g;
}
}  // namespace

GeneratedSource generateReduce(ScalarOp scalar, DType in, DType acc, DType out) {
  requireType(in, "CUDA reduction");
  requireType(acc, "CUDA reduction");
  requireType(out, "CUDA reduction");
  ReduceParts r;
  const bool logical = scalar == ScalarOp::And || scalar == ScalarOp::Or;
  if (logical) {
    if (acc != DType::Bool || out != DType::Bool)
      throw std::invalid_argument("generateReduce: all/any accumulate and return bool, found " +
                                  std::string(dtypeName(acc)) + " and " +
                                  std::string(dtypeName(out)));
    r.accType = "int";
    r.load = [](const std::string& x, const std::string&) { return "(int)(" + x + " != 0)"; };
    if (scalar == ScalarOp::And) {
      r.identity = "1";
      r.combine = [](const std::string& a, const std::string& b, const std::string&) {
        return "(" + a + " & " + b + ")";
      };
    } else {
      r.identity = "0";
      r.combine = [](const std::string& a, const std::string& b, const std::string&) {
        return "(" + a + " | " + b + ")";
      };
    }
    return reduceSource(reduceSkeleton(r, in, out), in, out);
  }
  if (acc == DType::Bool || dtypeSize(acc) < 4)
    throw std::invalid_argument("generateReduce: expected a 32- or 64-bit accumulator, found " +
                                std::string(dtypeName(acc)));
  const std::string a = cudaTypeName(acc);
  r.accType = a;
  r.load = [](const std::string& x, const std::string& type) { return "(" + type + ")" + x; };
  // NVRTC has no INFINITY macro (no <math.h>): the bits of +inf.
  const std::string inf = acc == DType::Float32 ? "__int_as_float(0x7f800000)"
                                                : "__longlong_as_double(0x7ff0000000000000LL)";
  switch (scalar) {
    case ScalarOp::Add:
      r.combine = [](const std::string& x, const std::string& y, const std::string& t) {
        return "ts_add<" + t + ">(" + x + ", " + y + ")";
      };
      r.identity = "(" + a + ")0";
      break;
    case ScalarOp::Mul:
      r.combine = [](const std::string& x, const std::string& y, const std::string& t) {
        return "ts_mul<" + t + ">(" + x + ", " + y + ")";
      };
      r.identity = "(" + a + ")1";
      break;
    case ScalarOp::Maximum:
      r.combine = [](const std::string& x, const std::string& y, const std::string& t) {
        return "ts_maximum<" + t + ">(" + x + ", " + y + ")";
      };
      r.identity = isFloat(acc) ? "(" + a + ")(-" + inf + ")" : "ts_lowest<" + a + ">()";
      break;
    case ScalarOp::Minimum:
      r.combine = [](const std::string& x, const std::string& y, const std::string& t) {
        return "ts_minimum<" + t + ">(" + x + ", " + y + ")";
      };
      r.identity = isFloat(acc) ? "(" + a + ")(" + inf + ")" : "ts_highest<" + a + ">()";
      break;
    default:
      throw std::invalid_argument(
          "generateReduce: expected add, mul, maximum, minimum, and or or, found " +
          std::string(scalarOpInfo(scalar).name));
  }
  return reduceSource(reduceSkeleton(r, in, out), in, out);
}

GeneratedSource generateScan(DType dtype) {
  if (dtype != DType::Float16 && dtype != DType::Float32 && dtype != DType::Float64)
    throw std::invalid_argument("generateScan: expected float16, float32 or float64, found " +
                                std::string(dtypeName(dtype)));
  const bool wide = dtype == DType::Float64;
  const std::string f = wide ? "double" : "float";
  const std::string word = wide ? "unsigned long long" : "unsigned int";
  const std::string in = dtype == DType::Float16 ? "unsigned short" : f;
  std::string k;
  if (dtype == DType::Float16)
    // |x| of a half's bits as a float, +inf for inf and NaN (exponent all ones).
    k += "__device__ __forceinline__ float ts_habs(unsigned short h) {\n"
         "  const unsigned int e = (h >> 10) & 31u, m = h & 1023u;\n"
         "  if (e == 31u) return __int_as_float(0x7f800000);\n"
         "  return e == 0u ? (float)m * 5.9604644775390625e-8f\n"
         "                 : __int_as_float((int)(((e + 112u) << 23) | (m << 13)));\n"
         "}\n";
  const std::string load = dtype == DType::Float16 ? "ts_habs(x[i])" : "fabs(x[i])";
  const std::string limit = wide ? "1.7976931348623157e308" : "3.402823466e+38f";
  const std::string bits =
      wide ? "(unsigned long long)__double_as_longlong(m)" : "__float_as_uint(m)";
  k += "extern \"C\" __global__ void NAME(long long n, const " + in + "* __restrict__ x, " + word +
       "* __restrict__ out) {\n";
  k += "  " + f + " m = 0;\n  " + word + " bad = 0;\n";
  k += "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;"
       " i += (long long)gridDim.x * blockDim.x) {\n";
  k += "    const " + f + " a = " + load + ";\n";
  k += "    if (a <= " + limit + ") m = a > m ? a : m; else bad = 1;\n  }\n";
  k += "  for (int s = 16; s > 0; s >>= 1) {\n"
       "    const " +
       f +
       " o = __shfl_down_sync(0xffffffffu, m, s);\n"
       "    m = o > m ? o : m;\n"
       "    bad |= __shfl_down_sync(0xffffffffu, bad, s);\n  }\n";
  k += "  if ((threadIdx.x & 31) == 0) {\n"
       "    if (bad) atomicOr(out, bad);\n"
       "    if (m > 0) atomicMax(out + 1, " +
       bits + ");\n  }\n}\n";
  GeneratedSource g;
  g.name = hexName("ts_scan_", k);
  for (std::size_t at = k.find("NAME"); at != std::string::npos; at = k.find("NAME", at))
    k.replace(at, 4, g.name);
  g.source = k;
  return g;
}

GeneratedSource generateArgReduce(bool max, DType in) {
  if (!hasTemplateCudaType(in))
    throw std::invalid_argument("CUDA argmax/argmin: expected dtypes with CUDA code, found " +
                                std::string(dtypeName(in)) + " (float16 runs on the CPU)");
  // Values widen to a type warp shuffles take; the order of values is unchanged.
  std::string w;
  switch (in) {
    case DType::Bool:
    case DType::Int8:
    case DType::Int16:
    case DType::UInt8:
    case DType::UInt16:
    case DType::Int32:
      w = "int";
      break;
    case DType::UInt32:
      w = "unsigned int";
      break;
    default:
      w = cudaTypeName(in);
  }
  const bool flt = isFloat(in);
  const std::string better = max ? ">" : "<";
  std::string k;
  k += "struct NAME_rx { long long nKept; long long nRed; long long size[" +
       std::to_string(kMaxRank) + "]; long long stride[" + std::to_string(kMaxRank) + "]; };\n";
  // The pair rule (Note [Reduction kernels]); index -1 is "no element yet".
  k += "__device__ __forceinline__ void NAME_pick(" + w + "& v, long long& i, " + w +
       " v2, long long i2) {\n"
       "  if (i2 < 0) return;\n"
       "  if (i < 0) { v = v2; i = i2; return; }\n";
  if (flt) {
    k += "  const bool n1 = v != v, n2 = v2 != v2;\n"
         "  if (n1 || n2) { if (n2 && (!n1 || i2 < i)) { v = v2; i = i2; } return; }\n";
  }
  k += "  if (v2 " + better + " v || (v2 == v && i2 < i)) { v = v2; i = i2; }\n}\n";
  k += "extern \"C\" __global__ void NAME(long long nOut, long long nReduce, NAME_rx ix, const " +
       cudaTypeName(in) + "* __restrict__ in, long long* __restrict__ out) {\n";
  k += "  __shared__ " + w + " pv[32];\n  __shared__ long long pi[32];\n";
  k += "  for (long long o = blockIdx.x; o < nOut; o += gridDim.x) {\n"
       "    long long base = 0, rem = o;\n"
       "    for (int d = (int)ix.nKept - 1; d >= 0; --d) {\n"
       "      base += (rem % ix.size[d]) * ix.stride[d];\n"
       "      rem /= ix.size[d];\n"
       "    }\n";
  k += "    " + w + " v = (" + w + ")0;\n    long long i = -1;\n";
  k += "    for (long long r = threadIdx.x; r < nReduce; r += blockDim.x) {\n"
       "      long long off = base, left = r;\n"
       "      for (int d = (int)(ix.nKept + ix.nRed) - 1; d >= (int)ix.nKept; --d) {\n"
       "        off += (left % ix.size[d]) * ix.stride[d];\n"
       "        left /= ix.size[d];\n"
       "      }\n";
  k += "      NAME_pick(v, i, (" + w + ")in[off], r);\n    }\n";
  const std::string shuffle = "for (int s = 16; s > 0; s >>= 1) { const " + w +
                              " v2 = __shfl_down_sync(0xffffffffu, v, s); const long long i2 = "
                              "__shfl_down_sync(0xffffffffu, i, s); NAME_pick(v, i, v2, i2); }\n";
  k += "    " + shuffle;
  k += "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
       "    if (lane == 0) { pv[warp] = v; pi[warp] = i; }\n"
       "    __syncthreads();\n"
       "    if (warp == 0) {\n"
       "      const bool has = lane < (int)((blockDim.x + 31) >> 5);\n"
       "      v = has ? pv[lane] : (" +
       w +
       ")0;\n"
       "      i = has ? pi[lane] : -1;\n"
       "      " +
       shuffle +
       "      if (lane == 0) out[o] = i;\n"
       "    }\n"
       "    __syncthreads();\n"
       "  }\n}\n";
  GeneratedSource g;
  g.name = hexName(max ? "ts_argmax_" : "ts_argmin_", k);
  for (std::size_t at = k.find("NAME"); at != std::string::npos; at = k.find("NAME", at))
    k.replace(at, 4, g.name);
  g.source = scalarPrelude() + "\n" + k;
  return g;
}

}  // namespace tscope::engine::cuda
