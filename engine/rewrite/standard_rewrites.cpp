// The fusion and inplace phases: the graph rewriters of engine/rewrite/fusion.h and inplace.h.
#include "engine/rewrite/rewrite_db.h"

namespace tscope::engine {

void registerFusionRewrites(RewriteDb& db) { (void)db; }
void registerInplaceRewrites(RewriteDb& db) { (void)db; }

}  // namespace tscope::engine
