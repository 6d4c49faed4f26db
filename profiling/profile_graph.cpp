#include "profiling/profile_graph.h"

#include "profiling/profile_io.h"

namespace tscope::prof {

GraphProfile profileGraph(const engine::FunctionGraph& graph,
                          const std::vector<engine::VarPtr>& inputs,
                          const std::vector<engine::Tensor>& args, engine::Mode mode,
                          const ProfileRunOptions& options) {
  // The graph's updates are compiled as updates (not as plain outputs), as a training step runs.
  std::vector<engine::VarPtr> outputs;
  std::vector<engine::Update> updates;
  const auto& mapping = graph.updateMapping();
  for (std::size_t o = 0; o < graph.outputs().size(); ++o) {
    auto up = mapping.find(o);
    if (up != mapping.end())
      updates.push_back({graph.inputs()[up->second], graph.outputs()[o]});
    else
      outputs.push_back(graph.outputs()[o]);
  }
  engine::CompileOptions compileOptions;
  compileOptions.mode = mode;
  compileOptions.keepBuffers = true;
  compileOptions.device = options.device;
  engine::Function f = engine::compile(inputs, outputs, updates, compileOptions);
  GraphProfile result;
  result.profile = profileFunction(f, args, options);
  result.profile.graph = mode == engine::Mode::None ? "original" : "optimized";
  result.graph = f.graph().clone();
  result.rewrites = f.rewriteLog();
  return result;
}

void storeProfile(engine::io::TsgDocument& doc, const GraphProfile& g) {
  if (g.profile.graph == "optimized") {
    doc.optimized = g.graph->clone();
    doc.rewrites = g.rewrites;
  }
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& p : doc.profiles)
    if (!(isProfileJson(p) && p.value("graph", std::string()) == g.profile.graph))
      kept.push_back(p);
  kept.push_back(profileToJson(g.profile));
  doc.profiles = std::move(kept);
}

std::vector<Profile> profilesOf(const engine::io::TsgDocument& doc) {
  std::vector<Profile> out;
  if (!doc.profiles.is_array()) return out;
  for (std::size_t i = 0; i < doc.profiles.size(); ++i)
    if (isProfileJson(doc.profiles[i]))
      out.push_back(profileFromJson(doc.profiles[i], "/profiles/" + std::to_string(i)));
  return out;
}

}  // namespace tscope::prof
