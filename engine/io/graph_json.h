#pragma once
// One graph as a JSON value in the .tsg GRAPH schema (docs/tsg-format.md), for graphs that live
// inside something else: the inner graph of an OpFromGraph is stored in its props this way. The
// value is self-contained: it carries its own creation-site table under "sites".

#include "engine/graph/function_graph.h"
#include "engine/graph/op_registry.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace tscope::engine::io {

// {"inputs", "outputs", "updates", "next_id", "variables", "applies", "sites"}; the same ids and
// order as the graph in a .tsg file, so graphFromJson(graphToJson(g)) writes back identically.
nlohmann::json graphToJson(const FunctionGraph& graph);

// Checks and rebuilds a graph written by graphToJson. Throws TsgError (engine/io/tsg.h) whose
// source is `source` and whose path is a JSON pointer inside `value` ("/applies/3/inputs/1").
std::unique_ptr<FunctionGraph> graphFromJson(const nlohmann::json& value,
                                             const OpRegistry& registry, const std::string& source);

}  // namespace tscope::engine::io
