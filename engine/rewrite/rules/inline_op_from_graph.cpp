// The inline rewrite of OpFromGraph (Theano's inline_ofg_expansion): an OpFromGraph built with
// inline = true is replaced by its inner graph in the canonicalize phase, so every later phase
// sees (and fuses across) the inner nodes. A non-inline one is left alone and stays one node.
#include "engine/ops/graph/op_from_graph.h"
#include "engine/rewrite/pattern.h"
#include "engine/rewrite/rewrite_db.h"

namespace tscope::engine {

void registerInlineOpFromGraphRewrites(RewriteDb& db) {
  //   before: y = OpFromGraph{gelu_block, inline}(a)
  //   after:  y = a * sigmoid(a * 1.702), the nodes scoped <node scope>/gelu_block/<inner scope>
  // so the viewer still groups them under the op's label.
  db.add(Phase::Canonicalize,
         nodeRewriter("inline_op_from_graph", {"OpFromGraph"},
                      [](RewriteContext& ctx, Apply& node) -> Replacements {
                        const auto* op = dynamic_cast<const OpFromGraph*>(&node.op());
                        if (!op || !op->isInline() || !op->isExecutable()) return {};
                        const std::vector<VarPtr> built =
                            op->expand(node.inputs(), joinScope(node.scope(), op->label()));
                        Replacements out;
                        for (int o = 0; o < node.nOutputs(); ++o) {
                          const VarPtr old = node.output(o);
                          VarPtr fitted =
                              fitReplacement(ctx, built[static_cast<std::size_t>(o)], old);
                          if (!fitted) return {};  // all outputs or none: the node must go
                          out.emplace_back(old, std::move(fitted));
                        }
                        return out;
                      }),
         {"fast_run", "fast_compile", "canonicalize"});
}

}  // namespace tscope::engine
