#pragma once
// Apply: one application of an Op to input Variables, producing output Variables.
//
// Ownership (DESIGN.md): an Apply owns its outputs; a VarPtr to an output shares ownership of the
// Apply (shared_ptr aliasing), and an Apply holds its inputs, so a handle to an output keeps the
// whole upstream graph alive and nothing more.

#include "engine/graph/source_site.h"
#include "engine/graph/variable.h"
#include "engine/graph/walk_marks.h"

#include <memory>
#include <span>
#include <vector>

namespace tscope::engine {

class Op;
class Apply;

// Note [Gradient origin]: every node that grad/Lop/Rop builds records the forward node it
// differentiates, so a NaN in a gradient names "gradient of Exp at encoder/attn (created at
// model.cpp:88)" (engine/debug/nan_guard.h). A value copy of what names the forward node (its id,
// -1 when it was in no graph, its op, scope and site), so it survives clones, rewrites that clone
// the node, and .tsg round trips ("gradient_of"), even when the forward node itself is gone.
struct GradientOrigin {
  std::int64_t nodeId = -1;
  std::string op;             // Op::str() of the forward node: "Elemwise{exp}"
  std::string scope;          // its scope path
  SourceSite site;            // its creation site
  std::string kind = "grad";  // "grad" (pullback: grad/Lop) or "rop" (pushforward: Rop)
  friend bool operator==(const GradientOrigin&, const GradientOrigin&) = default;
};
using OpPtr = std::shared_ptr<const Op>;
using ApplyPtr = std::shared_ptr<Apply>;

class Apply : public std::enable_shared_from_this<Apply> {
 public:
  // Builds the node; output variables get the given types, the current scope and the site.
  // Op::makeNode is the checked way to build a node; this is for ops whose output types are
  // known from elsewhere (a file, a clone).
  static ApplyPtr create(OpPtr op, std::vector<VarPtr> inputs, std::vector<TensorType> outputTypes,
                         SourceSite site = {});
  ~Apply();
  Apply(const Apply&) = delete;
  Apply& operator=(const Apply&) = delete;

  const Op& op() const { return *m_op; }
  const OpPtr& opPtr() const { return m_op; }
  const std::vector<VarPtr>& inputs() const { return m_inputs; }
  const VarPtr& input(int i) const { return m_inputs.at(static_cast<std::size_t>(i)); }
  int nInputs() const { return static_cast<int>(m_inputs.size()); }
  int nOutputs() const { return static_cast<int>(m_outputs.size()); }
  // A handle to output i that keeps this node alive.
  VarPtr output(int i);
  std::vector<VarPtr> outputs();
  // Borrowed access without touching reference counts.
  Variable& outputRef(int i) const { return *m_outputs.at(static_cast<std::size_t>(i)); }

  const std::string& scope() const { return m_scope; }
  void setScope(SharedString scope) { m_scope = std::move(scope); }
  const SourceSite& site() const { return m_site; }
  // Importers point the site at the model file and node they read the node from.
  void setSite(SourceSite site) { m_site = std::move(site); }
  // Note [Gradient origin]: null for a node that differentiates nothing.
  const std::shared_ptr<const GradientOrigin>& gradientOf() const { return m_gradientOf; }
  void setGradientOf(std::shared_ptr<const GradientOrigin> origin) {
    m_gradientOf = std::move(origin);
  }
  // See Note [Node ids] in variable.h.
  std::int64_t id() const { return m_id; }
  FunctionGraph* fgraph() const { return m_fgraph; }
  // Sets the id before the object joins a graph (loaders and clones keep ids); throws GraphError
  // once it is in a graph, whose ids are the graph's to give.
  void presetId(std::int64_t id);

  // A new node with the same op, output types and metadata (ids included) on other inputs.
  ApplyPtr cloneWithNewInputs(std::vector<VarPtr> inputs) const;

  // "Elemwise{add}(x, y)".
  std::string str() const;

 private:
  struct Token {
    explicit Token() = default;
  };

 public:
  explicit Apply(Token) {}  // for std::make_shared inside create(): one allocation per node

 private:
  friend class FunctionGraph;
  friend class WalkMemo;

  // What graph walks read first (graph, slot, inputs, walk mark), next to each other.
  FunctionGraph* m_fgraph = nullptr;
  std::size_t m_slot = 0;  // position in FunctionGraph's node list
  std::vector<VarPtr> m_inputs;
  mutable WalkMark m_walk;  // Note [Walk marks]
  std::vector<std::unique_ptr<Variable>> m_outputs;
  OpPtr m_op;
  std::int64_t m_id = -1;
  SharedString m_scope;
  SourceSite m_site;
  std::shared_ptr<const GradientOrigin> m_gradientOf;
};

}  // namespace tscope::engine
