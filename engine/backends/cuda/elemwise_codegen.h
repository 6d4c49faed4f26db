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

// Throws std::invalid_argument for an op that is neither, or a dtype with no CUDA code (float16).
ScalarProgram scalarProgramOf(const Apply& node);
ScalarProgram scalarProgramOf(const Composite& op);

struct GeneratedSource {
  std::string name;  // the kernels' prefix: ts_ew_<hash>
  std::string source;
  bool vec4 = false;  // has the _vec4 kernel
};

// The scalar ops' device functions every generated source starts with (scalar_prelude.cpp).
const std::string& scalarPrelude();
// The C++ type of dtype in generated code ("float", "ts_i64", "bool", ...).
std::string cudaTypeName(DType dtype);
// Whether CUDA code exists for dtype (all but float16).
bool hasCudaType(DType dtype);

GeneratedSource generateElemwise(const ScalarProgram& program);

// A reduction of `scalar` (Add, Mul, Maximum, Minimum with a 32- or 64-bit accumulator; And, Or
// with a bool one) from in to out: kernel <name>(nOut, nReduce, ix, in, out), one block per
// output element, warp shuffles then shared memory (Note [Reduction kernels] in
// elemwise_codegen.cpp).
GeneratedSource generateReduce(ScalarOp scalar, DType in, DType acc, DType out);
// Argmax (max) or argmin of in into int64 indices: the same kernel signature and index struct,
// with the reduced axes read in row-major order (Note [Reduction kernels]).
GeneratedSource generateArgReduce(bool max, DType in);

}  // namespace tscope::engine::cuda
