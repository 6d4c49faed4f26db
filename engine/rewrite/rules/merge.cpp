// The merge family: common subexpression elimination (constants included), constant folding and
// dead code removal.
#include "engine/graph/flat_hash_map.h"
#include "engine/graph/op.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/tensor/tensor.h"

#include <cstring>
#include <optional>

namespace tscope::engine {

namespace {

// FNV-1a over the bytes of a constant, with its dtype and shape.
std::size_t constantHash(const Tensor& t) {
  std::size_t h = 1469598103934665603ull ^ static_cast<std::size_t>(t.dtype());
  auto mix = [&h](std::uint64_t x) { h = (h ^ x) * 1099511628211ull; };
  for (std::int64_t d : t.shape()) mix(static_cast<std::uint64_t>(d));
  // A contiguous constant (nearly all) is hashed in place: contiguous() would copy the tensor's
  // shape and strides and take a reference to its storage, for each of tens of thousands of
  // constants.
  std::optional<Tensor> copy;
  if (!t.isContiguous()) copy = t.contiguous();
  const Tensor& c = copy ? *copy : t;
  const auto* p = static_cast<const unsigned char*>(c.rawData());
  const std::size_t n = c.nbytes();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(w);
  }
  for (; i < n; ++i) mix(p[i]);
  return h;
}

bool sameConstant(const Constant& a, const Constant& b) {
  return a.type() == b.type() && a.value().bitwiseEqual(b.value());
}

// Candidates by hash (for Note [Merge in one sweep], below): chains through one vector, the heads
// in an open-addressing map (no allocation per node; a node-based map of vectors cost as much as
// the rest of the pass).
template <class T>
class HashBuckets {
 public:
  explicit HashBuckets(std::size_t expected) : m_heads(expected) { m_entries.reserve(expected); }
  void add(std::size_t hash, T value) {
    auto [head, added] = m_heads.tryEmplace(hash, kEnd);
    m_entries.push_back({std::move(value), *head});
    *head = static_cast<std::uint32_t>(m_entries.size() - 1);
  }
  // Calls f(value) for the entries with this hash, newest first, until f returns true; returns
  // the value f accepted, or null.
  template <class F>
  const T* find(std::size_t hash, F&& f) const {
    const std::uint32_t* head = m_heads.find(hash);
    for (std::uint32_t i = head ? *head : kEnd; i != kEnd; i = m_entries[i].next)
      if (f(m_entries[i].value)) return &m_entries[i].value;
    return nullptr;
  }

 private:
  static constexpr std::uint32_t kEnd = ~std::uint32_t{0};
  struct Entry {
    T value;
    std::uint32_t next;
  };
  FlatHashMap<std::size_t, std::uint32_t> m_heads;
  std::vector<Entry> m_entries;
};

// Note [Merge in one sweep]: nodes are visited in topological order, so when a node is visited
// its inputs are already the merged (canonical) variables; two nodes are equal when their ops are
// equal and their inputs are the same variables. Each duplicate is replaced once (its clients move
// to the canonical node) and nothing is re-validated globally: the cost is one toposort plus a
// hash lookup per node, and one hash of each constant's bytes.
std::size_t mergeGraph(RewriteContext& ctx, const std::string& reason) {
  FunctionGraph& fg = ctx.graph();
  std::size_t changes = 0;
  HashBuckets<VarPtr> constants(64);
  HashBuckets<Apply*> nodes(fg.nodeCount());

  // The canonical constant equal to var (an earlier one), or null when var is the first.
  auto canonicalConstant = [&](const VarPtr& var) -> VarPtr {
    const auto& c = static_cast<const Constant&>(*var);
    const std::size_t h = constantHash(c.value());
    bool seen = false;
    const VarPtr* twin = constants.find(h, [&](const VarPtr& other) {
      if (other == var) return seen = true;
      return other->fgraph() == &fg && sameConstant(static_cast<const Constant&>(*other), c);
    });
    if (twin && !seen) return *twin;
    if (!twin) constants.add(h, var);
    return nullptr;
  };

  for (Apply* node : fg.toposort()) {
    if (node->fgraph() != &fg) continue;
    for (int i = 0; i < node->nInputs(); ++i) {
      const VarPtr& in = node->input(i);
      if (in->kind() != Variable::Kind::Constant) continue;
      if (VarPtr canonical = canonicalConstant(in)) {
        const VarPtr replaced = in;  // the replacement changes node's input list
        if (ctx.replace({{replaced, canonical}}, reason)) ++changes;
      }
    }
    // Note [Debug ops survive rewrites] (breakpoint.h): each BreakPoint node stays its own.
    if (!node->op().isExecutable() || !node->op().destroyMap().empty() ||
        isDebugBarrier(node->op()))
      continue;
    std::size_t h = node->op().hash();
    for (const VarPtr& in : node->inputs())
      h = h * 1000003u ^ std::hash<const Variable*>()(in.get());
    Apply* const* twin = nodes.find(h, [&](Apply* other) {
      if (other->fgraph() != &fg || other->nInputs() != node->nInputs() ||
          !other->op().equals(node->op()))
        return false;
      for (int i = 0; i < node->nInputs(); ++i)
        if (other->input(i) != node->input(i)) return false;
      return true;
    });
    if (!twin) {
      nodes.add(h, node);
      continue;
    }
    Replacements pairs;
    for (int o = 0; o < node->nOutputs(); ++o)
      pairs.emplace_back(node->output(o), (*twin)->output(o));
    if (ctx.replace(pairs, reason))
      ++changes;
    else
      nodes.add(h, node);  // a type mismatch: keep both
  }
  return changes;
}

bool foldable(const Apply& node) {
  const Op& op = node.op();
  if (node.nInputs() == 0 || !op.isExecutable() || !op.destroyMap().empty() || isDebugBarrier(op))
    return false;
  const std::string name = op.name();
  // Alloc-like ops would turn a cheap broadcast into a big constant in the graph and the file;
  // random ops are kept so the graph still shows where randomness comes from.
  if (name == "Alloc" || name == "ARange" || name == "Tile" || name == "Repeat" ||
      name.rfind("Random", 0) == 0)
    return false;
  for (const VarPtr& in : node.inputs())
    if (in->kind() != Variable::Kind::Constant) return false;
  return true;
}

// Outputs bigger than this stay computed at run time.
constexpr std::int64_t kMaxFoldedElements = std::int64_t{1} << 20;

Replacements foldConstants(RewriteContext&, Apply& node) {
  if (!foldable(node)) return {};
  for (int o = 0; o < node.nOutputs(); ++o) {
    const TensorType& t = node.outputRef(o).type();
    if (t.isFullyKnown() && shapeNumel(t.shape()) > kMaxFoldedElements) return {};
  }
  std::vector<const Tensor*> inputs;
  for (const VarPtr& in : node.inputs())
    inputs.push_back(&static_cast<const Constant&>(*in).value());
  std::vector<Tensor> values(static_cast<std::size_t>(node.nOutputs()));
  std::vector<Tensor*> outputs;
  for (Tensor& v : values) outputs.push_back(&v);
  try {
    node.op().perform(node, inputs, outputs);
  } catch (const std::exception&) {
    return {};  // the error belongs to run time, where it names the node
  }
  Replacements r;
  for (int o = 0; o < node.nOutputs(); ++o) {
    Tensor& v = values[static_cast<std::size_t>(o)];
    if (!v.defined() || v.numel() > kMaxFoldedElements) return {};
    // A view of an input would tie the new constant to another constant's storage: copy only then.
    bool view = false;
    for (const Tensor* in : inputs) view = view || v.sharesStorageWith(*in);
    auto c = Constant::create(view ? v.clone() : std::move(v), node.outputRef(o).name());
    r.emplace_back(node.output(o), c);
  }
  return r;
}

}  // namespace

void registerMergeRewrites(RewriteDb& db) {
  const std::vector<std::string> tags{"fast_run", "fast_compile", "merge"};
  db.add(Phase::Merge,
         graphRewriter("merge", [](RewriteContext& ctx) { return mergeGraph(ctx, "merge"); }),
         tags);
  db.add(Phase::Merge,
         graphRewriter(
             "dead_code_elimination",
             [](RewriteContext& ctx) { return ctx.graph().pruneUnused("dead_code_elimination"); }),
         tags);
  db.add(Phase::Canonicalize, nodeRewriter("constant_folding", {}, foldConstants),
         {"fast_run", "fast_compile", "canonicalize"});
  db.add(Phase::FinalMerge,
         graphRewriter("final_merge",
                       [](RewriteContext& ctx) { return mergeGraph(ctx, "final_merge"); }),
         tags);
}

}  // namespace tscope::engine
