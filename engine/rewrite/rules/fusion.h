#pragma once
// Elementwise fusion: connected groups of Elemwise (and Composite) nodes become one Composite node
// whose CPU kernel makes one pass over memory (engine/ops/elemwise/composite.h).
//
//   before: t = mul(x, a); u = add(t, b); y = tanh(u)        (three passes, two temporaries)
//   fuseElementwise(fg)
//   after:  y = Composite{tanh(add(mul(i0, i1), i2))}(x, a, b)
//
// Note [Fusion groups]: groups grow from a consumer (the group's root, visited in reverse
// topological order) towards its producers, highest topological position first, so that when a
// producer is considered every client it will ever have in the group is already there. A producer
// joins
// - as a member when every client of its outputs is a member;
// - as a copy (it stays in the graph for its other clients, the group recomputes it) when its
//   other clients are outside and it is a cheap unary op or a computation on scalars
//   (FusionOptions::duplicateCheap);
// - as an extra output of the Composite (multi-output) when its other clients are outside and its
//   output has the group's shape;
// and not at all when it is inplace (a destroyMap), when its output is smaller than the group's
// and broadcast into it (the Composite would recompute it for every element) unless it is a
// computation on scalars (the interpreter computes those once per block), or when the Composite
// would take more than maxInputs inputs. A group of a single node is left alone.
//
// Note [Fusion keeps a topological order]: contracting a group into one node creates a cycle when
// a node outside the group is both a descendant of the group and an ancestor of a member. Instead
// of ancestor bitsets over all pairs of nodes (N^2/8 bytes: 1.25 GB at 100k nodes), the pass keeps
// one position per node of the quotient graph (the graph with every formed group contracted):
// positions from the one toposort, and for a formed group a position strictly between the
// positions of everything feeding it and everything it feeds. A producer joins a group only if
// such a position still exists afterwards: max(position of the group's input producers) <
// min(position of the consumers of its outputs outside it). Then the positions stay a
// topological order of the quotient graph, which therefore has no cycle, whatever groups follow;
// each test is O(1) over a heap of the group's input producers, with no traversal. The test is
// exact for single-output groups (every input producer reaches the root, which precedes its
// consumers) and conservative for multi-output groups: it may refuse an extra output whose
// consumer the toposort happened to place before an unrelated input producer.

#include "engine/graph/function_graph.h"

#include <cstddef>

namespace tscope::engine {

struct FusionOptions {
  std::size_t maxInputs = 32;  // a Composite never takes more tensor inputs
  // A cheap single-input op (neg, cast, sqr, ...) or a computation on scalars with clients outside
  // the group may be duplicated into each consumer's Composite.
  bool duplicateCheap = true;
};

// Fuses connected groups of Elemwise (and existing Composite) nodes into Composite nodes. Every
// change goes through fg.replaceAll(pairs, "elemwise_fusion"), one per new Composite, replacing
// every output of the group used outside it. Returns the number of Composite nodes created. One
// toposort, then work proportional to the edges examined (Note [Fusion groups], Note [Fusion keeps
// a topological order]).
std::size_t fuseElementwise(FunctionGraph& fg, const FusionOptions& options = {});

}  // namespace tscope::engine
