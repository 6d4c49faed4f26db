#pragma once
// CUDA source for elementwise work (DESIGN.md "Backends"): one kernel source per Elemwise node or
// fused Composite, generated from the op's scalar program, and the source of the reductions.
// Pure text generation: no CUDA type, no device; NVRTC compiles what this writes
// (tests/engine/cuda/tst_cuda_codegen.cpp compiles one kernel per scalar op and dtype).
//
// Note [Elementwise kernels]: every generated source holds three kernels with the same operands
// (inputs, then outputs):
//   <name>_strided(n, ix, in0.., out0..)  any broadcasting and strides: ix holds the output shape
//                                         and each operand's strides in elements (0 where an input
//                                         broadcasts), and each thread turns its flat index into
//                                         offsets by index arithmetic;
//   <name>_contig(n, in0.., out0..)       every operand contiguous with the output's shape;
//   <name>_vec4(n, in0.., out0..)         the same with float4 loads and stores, for programs whose
//                                         operands are all float32 and whose pointers are 16-byte
//                                         aligned (the launcher checks); a scalar loop does the
//                                         tail.
// All loops are grid-stride loops over n. Registers follow Note [Composite programs]: each
// instruction computes in the kernel dtype the CPU Composite uses (Note [Elemwise kernel dtypes])
// and converts its result to the register's dtype, so the device computes what the CPU does.

#include "engine/ops/elemwise/composite.h"
#include "engine/tensor/dtype.h"

#include <string>
#include <vector>

namespace tscope::engine {
class Apply;
}

namespace tscope::engine::cuda {

inline constexpr int kMaxRank = 8;

// The scalar program of an Elemwise node (one instruction) or a Composite, with register dtypes.
struct ScalarProgram {
  std::vector<DType> registers;  // inputs first, then one per instruction
  int nInputs = 0;
  std::vector<CompositeInstruction> program;
  std::vector<int> outputs;  // registers
};

// Throws std::invalid_argument for an op that is neither.
ScalarProgram scalarProgramOf(const Apply& node);
ScalarProgram scalarProgramOf(const Composite& op);

struct GeneratedSource {
  std::string name;  // the kernels' prefix: ts_ew_<hash>
  std::string source;
  bool vec4 = false;  // has the _vec4 kernel
};

// The scalar ops' device functions every generated source starts with (scalar_prelude.cpp).
const std::string& scalarPrelude();
// The C++ type of dtype in generated code ("float", "ts_i64", "bool", "__half", ...).
std::string cudaTypeName(DType dtype);
// Whether CUDA code exists for dtype: every dtype (float16 through cuda_fp16.h, Note [Half
// registers] in elemwise_codegen.cpp; the engine has no bfloat16 dtype).
bool hasCudaType(DType dtype);
// Whether the shape, indexing, argmax/argmin, cross-entropy, one-hot and random kernels take
// dtype: every dtype but float16. Their templates (ts_convert, comparisons, atomics) compute on
// the C++ type itself, which __half does not support without explicit conversions; so float16
// values of those ops stay on the CPU (only the elementwise kernels, reductions, SumToShape and Dot
// take float16).
bool hasTemplateCudaType(DType dtype);
// Whether a program has float16 registers: its source includes cuda_fp16.h, which NVRTC finds
// through the toolkit's include folder (cudaIncludeDirectory() in nvrtc_compiler.h).
bool usesHalf(const ScalarProgram& program);

GeneratedSource generateElemwise(const ScalarProgram& program);

// A reduction of `scalar` (Add, Mul, Maximum, Minimum with a 32- or 64-bit accumulator; And, Or
// with a bool one) from in to out: kernel <name>(nOut, nReduce, ix, in, out), one block per
// output element, warp shuffles then shared memory (Note [Reduction kernels] in
// elemwise_codegen.cpp).
GeneratedSource generateReduce(ScalarOp scalar, DType in, DType acc, DType out);
// Argmax (max) or argmin of in into int64 indices: the same kernel signature and index struct,
// with the reduced axes read in row-major order (Note [Reduction kernels]).
GeneratedSource generateArgReduce(bool max, DType in);

// Note [Device scans] (engine/debug/nan_scan.h): kernel <name>(n, in, out) over n contiguous
// elements of a float16, float32 or float64 value: out (16 bytes, zeroed by the caller) gets a
// non-zero first word when some element is NaN or infinite, and in its second word the bits of
// max |x| over the finite elements (float32 bits for float16 and float32, float64 bits for
// float64: non-negative floats order as their bits do, so atomicMax on the bits is a max).
// Throws std::invalid_argument for another dtype.
GeneratedSource generateScan(DType dtype);

}  // namespace tscope::engine::cuda
