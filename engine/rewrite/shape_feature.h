#pragma once
// ShapeFeature: answers "what is the shape of this variable?" symbolically, lazily, from the ops'
// inferShape (Theano's ShapeFeature, but on demand: nothing is computed until a rewrite asks).
//
// shapeOf(v) is a ShapeExpr (one 0-d int64 variable per dimension): a Constant where the size is
// static or inferable, else an expression of the graph inputs' shapes (Shape_i of an input) built
// from the producers' inferShape. The expressions are not part of the graph until a rewrite uses
// one as a replacement. Results are cached per variable; the cache forgets a variable when its
// node leaves the graph. An op without inferShape (NotImplementedError) gets Shape_i(v) per axis;
// so does one whose inferShape throws (with a warning).
//
// Note [Shape cache invalidation]: an entry is derived from the entries of its producer's inputs,
// so it can name variables that a later change removes (a Reshape's shape vector, say). The cache
// forgets an entry when its node is pruned or one of its node's inputs changes, and with it every
// entry that was derived from it (each entry lists the entries computed from it). Forgotten
// entries are recomputed on the next question. Every entry holds its variable, so an address is
// never reused while it is a key. Entries of variables outside the graph (a rewrite's candidate
// replacement) are dropped at the end of the next graph change unless the change imported them.
//
// Note [Iterative shape inference]: shapeOf walks the producers with an explicit stack, never by
// recursion, so a chain of 100k nodes is fine; each node's inferShape runs once per cache life.

#include "engine/graph/feature.h"
#include "engine/graph/op.h"

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tscope::engine {

class ShapeFeature final : public Feature {
 public:
  // Throws std::logic_error when the feature is not attached to a graph, and std::logic_error
  // naming the op and node when an op's inferShape returns the wrong number of dimensions or a
  // dimension that is not a 0-d integer.
  const ShapeExpr& shapeOf(const VarPtr& var);
  // Dimension `axis` of var; a Constant when it is known.
  VarPtr dimOf(const VarPtr& var, int axis);
  // The size of dimension axis when it is known statically (from the type or by folding the
  // inferred expression), else nullopt.
  std::optional<std::int64_t> staticDim(const VarPtr& var, int axis);
  // True when a and b are known to have equal shapes (same static dims, or the same expressions).
  bool sameShape(const VarPtr& a, const VarPtr& b);
  // True when the 0-d integer expressions a and b are known to be equal: the same variable, equal
  // constants (or expressions that fold to them), or the same op applied to inputs that are
  // themselves the same (compared up to kCompareNodeLimit node pairs).
  static bool sameDim(const VarPtr& a, const VarPtr& b);
  // The value of a 0-d integer expression whose leaves are all constants, found by running the
  // expression's ops (at most kFoldNodeLimit nodes); nullopt when a leaf is not a constant, the
  // expression is larger, or it does not evaluate.
  static std::optional<std::int64_t> foldInt(const VarPtr& expr);
  static constexpr std::size_t kFoldNodeLimit = 64;
  static constexpr std::size_t kCompareNodeLimit = 256;

  void onAttach(FunctionGraph& fg) override;
  void onDetach(FunctionGraph& fg) override;
  void onPrune(FunctionGraph& fg, Apply& node, std::string_view reason) override;
  void onChangeInput(FunctionGraph& fg, Apply* node, int index, const VarPtr& oldVar,
                     const VarPtr& newVar, std::string_view reason) override;
  void onChangeEnd(FunctionGraph& fg, std::string_view reason) override;
  std::size_t cacheSize() const { return m_cache.size(); }
  bool cached(const Variable& var) const { return m_cache.contains(&var); }
  // Number of inferShape calls made so far (tests check that answers come from the cache).
  std::size_t inferCount() const { return m_inferCount; }

 private:
  struct Entry {
    VarPtr var;  // keeps the key's address from being reused (Note [Shape cache invalidation])
    ShapeExpr shape;
    std::vector<const Variable*> derived;  // entries computed from this one
  };
  // Computes and caches the shapes of node's outputs; its inputs' entries exist.
  void computeNode(Apply& node);
  Entry& store(const VarPtr& var, ShapeExpr shape);
  ShapeExpr shapeOfFreeVariable(const VarPtr& var);
  // The output dimension as the cache keeps it: the type's static size, a folded constant, or
  // the inferred 0-d int64 expression.
  VarPtr normalizeDim(const Apply& node, int output, int axis, const VarPtr& inferred);
  VarPtr constInt(std::int64_t value);
  // Forgets var's entry and every entry derived from it.
  void forget(const Variable* var);
  void forgetOutputs(const Apply& node);

  std::unordered_map<const Variable*, Entry> m_cache;
  // Entries of variables outside the graph, dropped at the next onChangeEnd when still outside.
  std::vector<const Variable*> m_outside;
  // Small integer constants, shared so equal static sizes are one variable.
  std::map<std::int64_t, VarPtr> m_constants;
  FunctionGraph* m_graph = nullptr;
  std::size_t m_inferCount = 0;
};

}  // namespace tscope::engine
