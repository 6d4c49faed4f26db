#include "gui/cli/cli_export.h"

#include "profiling/profile_record.h"
#include "visualizers/layout/layout_service.h"
#include "visualizers/scene/exporters.h"
#include "visualizers/scene/graph_scene.h"

#include <QGuiApplication>

#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

namespace tscope::gui {

namespace {

using nlohmann::json;

// Per-node times from the document's profiles (prof::firstNodeTimes: the first per-node time
// profile of the chosen graph), as shares of the profile's call time.
std::map<std::int64_t, vis::HeatEntry> heatFromProfiles(const json& profiles,
                                                        const std::string& which,
                                                        const std::string& file) {
  std::optional<prof::ProfileRecord> record;
  try {
    record = prof::firstNodeTimes(profiles, which);
  } catch (const prof::ProfileError& e) {
    throw std::runtime_error(file + ": " + e.what());
  }
  if (!record)
    throw std::runtime_error(
        "--heatmap: " + file + " has no per-node profile of the " + which +
        " graph (expected a profile {\"nodes\": [{\"id\": APPLY_ID, \"seconds\": S}, ...]})");
  std::map<std::int64_t, vis::HeatEntry> heat;
  for (const prof::NodeTime& node : record->nodes) heat[node.id].seconds += node.seconds;
  const double total = record->totalSeconds();
  for (auto& [id, entry] : heat) entry.share = total > 0 ? entry.seconds / total : 0;
  return heat;
}

vis::GroupState groupState(const QCommandLineParser& p, const vis::ViewModel& model) {
  const QStringList values = p.values("expand");
  if (values.isEmpty()) return model.defaultState();
  if (values.size() == 1 && values[0] == QLatin1String("all")) return model.allExpanded();
  if (values.size() == 1 && values[0] == QLatin1String("none")) return {};
  vis::GroupState state;
  for (const QString& path : values) {
    const int group = model.groupByPath(path);
    if (group <= 0) {
      QStringList known;
      for (std::size_t g = 1; g < model.groups().size() && known.size() < 8; ++g)
        known << model.groups()[g].path;
      const std::string list = known.isEmpty() ? std::string("the graph has no groups")
                                               : "known groups include " +
                                                     known.join(QStringLiteral(", ")).toStdString();
      throw std::invalid_argument("--expand expects all, none or group paths; no group '" +
                                  path.toStdString() + "' (" + list + ")");
    }
    // A listed group is shown expanded, so every group around it opens too.
    for (int g = group; g > 0; g = model.groups()[std::size_t(g)].parent)
      state.setExpanded(model.groups()[std::size_t(g)].path, true);
  }
  return state;
}

}  // namespace

void addPictureOptions(QCommandLineParser& p) {
  p.addOption(QCommandLineOption(
      "expand",
      "Drawings: which groups are expanded: all, none, or a group path (repeatable); "
      "default: as many as keep the drawing readable.",
      "all|none|PATH"));
  p.addOption(QCommandLineOption(
      "heatmap", "Drawings: colour the nodes by the time the file's profile measured."));
  p.addOption(QCommandLineOption(
      "scale", "PNG: pixels per point (default 1; 2 for high-DPI screens).", "S"));
  p.addOption(QCommandLineOption(
      "parameters",
      "Drawings: parameters (shared variables, constants) as boxes, as badges inside the nodes "
      "that read them, or hidden; default: badges above 50 parameters, else boxes.",
      "boxes|badges|hidden"));
}

std::string writeGraphPicture(const QCommandLineParser& p, engine::io::TsgDocument& doc,
                              const std::string& which, const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  double scale = 1;
  if (p.isSet("scale")) {
    if (ext != ".png") throw std::invalid_argument("--scale applies to .png output only");
    bool ok = false;
    scale = p.value("scale").toDouble(&ok);
    if (!ok || !(scale > 0) || scale > 16)
      throw std::invalid_argument("--scale expects a number in (0, 16], found '" +
                                  p.value("scale").toStdString() + "'");
  }
  std::optional<vis::ParameterMode> parameters;
  if (p.isSet("parameters")) {
    parameters = vis::parameterModeFromName(p.value("parameters"));
    if (!parameters)
      throw std::invalid_argument("--parameters expects boxes, badges or hidden, found '" +
                                  p.value("parameters").toStdString() + "'");
  }
  const std::string file = p.positionalArguments().value(0).toStdString();
  std::map<std::int64_t, vis::HeatEntry> heat;
  if (p.isSet("heatmap")) heat = heatFromProfiles(doc.profiles, which, file);
  std::shared_ptr<const engine::FunctionGraph> graph(
      std::move(which == "optimized" ? doc.optimized : doc.original));
  const auto model = vis::ViewModel::build(graph, std::move(heat), p.isSet("heatmap"));
  const vis::GroupState state = groupState(p, *model);

  vis::LayoutOptions options;
  options.font = QGuiApplication::font();
  options.parameters = parameters.value_or(model->defaultParameterMode());
  vis::LayoutService service;
  const auto layout = service.layoutNow(model, state, options);
  const QString out = QString::fromStdString(path.string());
  std::string kind;
  if (ext == ".dot") {
    vis::exportDot(*model, *layout, out);
    kind = "DOT with positions";
  } else {
    vis::GraphScene scene;
    scene.setFont(options.font);
    scene.setContent(model, layout);
    if (ext == ".svg") {
      vis::exportSvg(scene, out);
      kind = "SVG";
    } else {
      vis::exportPng(scene, out, scale);
      kind = "PNG";
    }
  }
  return "wrote " + path.string() + " (" + kind + ", " + std::to_string(layout->nodes.size()) +
         " nodes, " + std::to_string(layout->groups.size()) + " groups, " +
         std::to_string(layout->edges.size()) + " edges shown; " +
         std::to_string(state.expanded().size()) + " groups expanded)\n";
}

}  // namespace tscope::gui
