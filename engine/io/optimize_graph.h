#pragma once
// Optimizing a loaded graph: what `tensorscope optimize` does, as an engine function so scripts,
// tests and the GUI share it.

#include "engine/io/tsg.h"
#include "engine/rewrite/rewrite_db.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tscope::engine::io {

// Optimizes a copy of doc.original with the query and stores it as doc.optimized, with the rewrite
// log in doc.rewrites and the rewriter profile (rewriteProfileJson) appended to doc.profiles,
// replacing an earlier rewriter profile. The original graph is not changed.
RewriteProfile optimizeDocument(TsgDocument& doc, const RewriteQuery& query);

// {"kind": "rewriter", "seconds", "nodes_before", "nodes_after", "phases": [...], "rewriters": [...]}.
nlohmann::json rewriteProfileJson(const RewriteProfile& profile);
// The summary `tensorscope optimize` prints: nodes before/after, time per phase, the top rewrites
// by count.
std::string rewriteProfileText(const RewriteProfile& profile, std::size_t topRewrites = 10);

}  // namespace tscope::engine::io
