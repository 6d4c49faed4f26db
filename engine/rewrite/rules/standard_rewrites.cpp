// The fusion and inplace phases: the graph rewriters of engine/rewrite/rules/fusion.h and
// inplace.h.
#include "engine/rewrite/rewrite_db.h"
#include "engine/rewrite/rules/fusion.h"
#include "engine/rewrite/rules/inplace.h"

namespace tscope::engine {

void registerFusionRewrites(RewriteDb& db) {
  db.add(Phase::Fusion,
         graphRewriter("elemwise_fusion",
                       [](RewriteContext& ctx) { return fuseElementwise(ctx.graph()); }),
         {"fast_run", "fusion"});
}

// insertInplace validates each switch with the DestroyHandler's incremental check and reverts a
// refused one itself; going through RewriteContext::replace would validate every feature of the
// graph per switch. The handler stays attached: the schedule (toposort) needs its orderings.
void registerInplaceRewrites(RewriteDb& db) {
  db.add(Phase::Inplace,
         graphRewriter("inplace", [](RewriteContext& ctx) { return insertInplace(ctx.graph()); }),
         {"fast_run", "inplace"});
}

}  // namespace tscope::engine
