#pragma once
// Kernel notes: one line a backend kernel leaves about how it ran a node, for a profile to show
// next to the node's time (docs/gpu.md). The cuDNN convolutions write the algorithm they chose:
//
//   setKernelNote(node, "cudnn fwd IMPLICIT_PRECOMP_GEMM (guess_once, ws 0 B)");
//   kernelNote(node)   // -> that line; "" for a node no kernel wrote about
//
// Note [Kernel notes]: keyed by the Apply and its id (a compiled Function keeps its nodes alive;
// the id tells a new node at a freed address apart). The latest note of a node replaces the
// earlier one. Thread-safe; kernels on any thread may write. No backend type here, so the
// profiler reads notes without linking a backend.

#include <string>

namespace tscope::engine {

class Apply;

void setKernelNote(const Apply& node, std::string note);
std::string kernelNote(const Apply& node);
// Forgets every note (tests; a new profiling session).
void clearKernelNotes();

}  // namespace tscope::engine
