#pragma once
// The one list of op families: every family's registerXxxOps is called from registerAllOps.

#include "engine/graph/op_registry.h"

namespace tscope::engine {

void registerAllOps(OpRegistry& registry);
// A registry with every op of the engine, built once (thread-safe).
const OpRegistry& defaultOpRegistry();

}  // namespace tscope::engine
