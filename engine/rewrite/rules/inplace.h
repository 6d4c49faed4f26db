#pragma once
// The inplace rewrite: switches nodes to the forms that write their result into an input's buffer
// instead of a fresh one, wherever the DestroyHandler accepts it (Note [Destroy handler
// invariant]).
//   before: t = exp(x); u = neg(t); y = mul(u, z)
//   after:  t = exp(x); u = Elemwise{neg,inplace}(t); y = Elemwise{mul,inplace}(u, z)
// exp keeps its own buffer because x is a graph input; neg overwrites t, whose only reader it is.
//
// Note [Inplace candidates]:
//   - Elemwise and Composite (the fused elementwise op): output o may overwrite input k when input
//     k has exactly output o's type (dtype, static shape, device: it is never broadcast up to a
//     larger output), its buffer is not protected (a graph input, a constant, a view of one, or
//     viewed by a graph output), no node destroys it yet, and no other input reads the same buffer
//     through another view. Inputs whose buffer dies here (this node is their only client and they
//     are no view) are tried first, then the others, each in input order; the handler's orderings
//     decide whether the other readers of a shared buffer can all run first. A multi-output
//     Composite is switched output by output, each accepted pair added to its inplace pattern.
//     0-d outputs are left alone: there is no allocation to save, and the Elemwise fast path for
//     chains of 0-d arithmetic only runs out of place.
//   - Gemm, Gemv, Ger: input 0 (Z, y, A) under the same conditions (the types are equal by
//     construction). A shared variable with an update is no protected input (see insertInplace):
//     the SGD step W <- W - lr * dot(x.T, g) becomes Gemm{inplace} on W's own buffer.
//   - FusedConv2d{residual}: input 3 (the residual, of the output's type by construction) under
//     the same conditions: a ResNet block's convolution adds into its identity's buffer.
// Every switch is one fg.replaceAll(outputs -> the twin's outputs, "inplace_elemwise" /
// "inplace_gemm" / "inplace_gemv" / "inplace_ger"), followed by the handler's validate(), which
// re-checks only what the switch changed (Note [Incremental destroy validation]); a refused switch
// is reverted through History. The pass visits the nodes once, in topological order.

#include "engine/graph/function_graph.h"

#include <cstddef>

namespace tscope::engine {

// Attaches a DestroyHandler when the graph has none (and leaves it attached: toposort() needs its
// orderings to schedule the readers of a buffer before the node that overwrites it), with the
// inputs that have an update (FunctionGraph::updateMapping) as its mutable inputs, and a History
// for the duration of the pass when the graph has none. Throws InconsistencyError when the graph
// is already inconsistent before the pass. Returns the number of nodes switched.
std::size_t insertInplace(FunctionGraph& fg);

}  // namespace tscope::engine
