#include "visualizers/model/palette.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string_view>

namespace tscope::vis::palette {
namespace {

// Note [One palette table]: every colour lives in the tables below; the functions read them and
// paletteJson() prints them, so resources/palette.json (checked against paletteJson() by
// tst_palette) cannot drift from what the view draws.

struct FamilyRule {
  const char* word;  // matched against the op's class name, case-sensitively (d3viz: `in`)
  const char* colour;
};
// d3viz's rules in its order; the first whose word the name contains wins. Composite is a fused
// Elemwise, so it takes the Elemwise colour.
constexpr std::array kFamilies{
    FamilyRule{"Scan", "#ffff00"},        FamilyRule{"Shape", "#00ffff"},
    FamilyRule{"IfElse", "#ff00ff"},      FamilyRule{"Elemwise", "#ffaabb"},
    FamilyRule{"Composite", "#ffaabb"},   FamilyRule{"Subtensor", "#ffaaff"},
    FamilyRule{"Alloc", "#ffaa22"},       FamilyRule{"GpuFromHost", "#ff0000"},
    FamilyRule{"HostFromGpu", "#ff0000"},
};
constexpr const char* kOtherOp = "#ffffff";

struct Named {
  const char* key;
  const char* colour;
};
// Indexed by VariableRole: limegreen, SpringGreen, YellowGreen, dodgerblue, lightgrey.
constexpr std::array kVariables{Named{"input", "#32cd32"}, Named{"constant", "#00ff7f"},
                                Named{"shared", "#9acd32"}, Named{"output", "#1e90ff"},
                                Named{"unused_output", "#d3d3d3"}};
static_assert(std::size(kVariables) == static_cast<std::size_t>(VariableRole::UnusedOutput) + 1);

// Indexed by EdgeKind: black, dodgerblue (view), red (destroy).
constexpr std::array kEdges{Named{"plain", "#000000"}, Named{"view", "#1e90ff"},
                            Named{"destroy", "#ff0000"}};
static_assert(std::size(kEdges) == static_cast<std::size_t>(EdgeKind::Destroy) + 1);

constexpr std::array kHeat{"#fff5f0", "#fee0d2", "#fcbba1", "#fc9272",
                           "#fb6a4a", "#ef3b2c", "#cb181d", "#a50f15"};

// Cluster backgrounds by nesting depth (1 = a child of the root), darker the deeper; deeper
// clusters keep the last shade.
constexpr std::array kClusterFills{"#f5f7fa", "#eaeef3", "#dfe5ec",
                                   "#d4dce5", "#c9d3de", "#bec9d6"};
constexpr const char* kClusterBorder = "#8a99ab";

// Indexed by GroupKind.
constexpr std::array kCollapsedGroups{Named{"root", "#ffffff"}, Named{"scope", "#dde6f0"},
                                      Named{"op_from_graph", "#ffe4b5"}};
static_assert(std::size(kCollapsedGroups) == static_cast<std::size_t>(GroupKind::OpFromGraph) + 1);

constexpr std::array kView{Named{"selection", "#ff8c00"}, Named{"hover", "#ffd700"},
                           Named{"search_hit", "#c71585"}, Named{"port", "#708090"},
                           Named{"cluster_border", kClusterBorder}};

QColor colour(const char* hex) {
  return QColor(QString::fromLatin1(hex));
}

QString quoted(const char* text) {
  return QLatin1Char('"') + QString::fromLatin1(text) + QLatin1Char('"');
}

template <class Table>
QString namedObject(const Table& table, const QString& indent) {
  QStringList entries;
  for (const Named& entry : table)
    entries << indent + QStringLiteral("  ") + quoted(entry.key) + QStringLiteral(": ") +
                   quoted(entry.colour);
  return QStringLiteral("{\n") + entries.join(QStringLiteral(",\n")) + QLatin1Char('\n') + indent +
         QLatin1Char('}');
}

template <class Table>
QString colourArray(const Table& table) {
  QStringList entries;
  for (const char* hex : table) entries << quoted(hex);
  return QLatin1Char('[') + entries.join(QStringLiteral(", ")) + QLatin1Char(']');
}

// The first of d3viz's rules whose word the op name contains; null for the ops drawn white.
const FamilyRule* familyRule(const QString& opName) {
  for (const FamilyRule& rule : kFamilies)
    if (opName.contains(QLatin1String(rule.word))) return &rule;
  return nullptr;
}

}  // namespace

QString opFamily(const QString& opName) {
  const FamilyRule* rule = familyRule(opName);
  if (!rule) return {};
  // A fused Composite is drawn, and listed in the legend, as the Elemwise it fuses.
  return QString::fromLatin1(rule->word == std::string_view("Composite") ? "Elemwise" : rule->word);
}

QColor opFamilyColor(const QString& opName) {
  const FamilyRule* rule = familyRule(opName);
  return colour(rule ? rule->colour : kOtherOp);
}

QColor variableColor(VariableRole role) {
  return colour(kVariables.at(static_cast<std::size_t>(role)).colour);
}

QColor edgeColor(EdgeKind kind) {
  return colour(kEdges.at(static_cast<std::size_t>(kind)).colour);
}

QColor heatColor(double shareOfMax) {
  // Linear in the share: [0, 1/8) -> the palest, [7/8, 1] -> the darkest (the slowest node).
  const double share = std::isfinite(shareOfMax) ? std::clamp(shareOfMax, 0.0, 1.0) : 0.0;
  const auto bin =
      std::min<std::size_t>(kHeat.size() - 1, static_cast<std::size_t>(share * kHeat.size()));
  return colour(kHeat[bin]);
}

QColor clusterFill(int depth) {
  const auto index = static_cast<std::size_t>(
      std::clamp(depth - 1, 0, static_cast<int>(kClusterFills.size()) - 1));
  return colour(kClusterFills[index]);
}

QColor clusterBorder() {
  return colour(kClusterBorder);
}
QColor collapsedGroupFill(GroupKind kind) {
  return colour(kCollapsedGroups.at(static_cast<std::size_t>(kind)).colour);
}
QColor selectionColor() {
  return colour(kView[0].colour);
}
QColor hoverColor() {
  return colour(kView[1].colour);
}
QColor searchHitColor() {
  return colour(kView[2].colour);
}
QColor portColor() {
  return colour(kView[3].colour);
}

QString paletteJson() {
  QStringList families;
  for (const FamilyRule& rule : kFamilies)
    families << QStringLiteral("      {\"contains\": ") + quoted(rule.word) +
                    QStringLiteral(", \"fill\": ") + quoted(rule.colour) + QLatin1Char('}');
  QString text = QStringLiteral("{\n");
  text += QStringLiteral(
      "  \"comment\": \"The colours of Tensorscope's graph view (d3viz's conventions). "
      "Generated from visualizers/model/palette.cpp; op_family rules apply in order, "
      "the first whose word the op's class name contains wins.\",\n");
  text += QStringLiteral("  \"op_family\": {\n    \"rules\": [\n") +
          families.join(QStringLiteral(",\n")) + QStringLiteral("\n    ],\n    \"other\": ") +
          quoted(kOtherOp) + QStringLiteral("\n  },\n");
  text += QStringLiteral("  \"variable\": ") + namedObject(kVariables, QStringLiteral("  ")) +
          QStringLiteral(",\n");
  text += QStringLiteral("  \"edge\": ") + namedObject(kEdges, QStringLiteral("  ")) +
          QStringLiteral(",\n");
  text += QStringLiteral("  \"heat\": ") + colourArray(kHeat) + QStringLiteral(",\n");
  text +=
      QStringLiteral("  \"cluster_fill\": ") + colourArray(kClusterFills) + QStringLiteral(",\n");
  text += QStringLiteral("  \"collapsed_group\": ") +
          namedObject(kCollapsedGroups, QStringLiteral("  ")) + QStringLiteral(",\n");
  text += QStringLiteral("  \"view\": ") + namedObject(kView, QStringLiteral("  ")) +
          QStringLiteral("\n}\n");
  return text;
}

}  // namespace tscope::vis::palette
