#include "visualizers/scene/decorations.h"

#include <algorithm>
#include <map>

namespace tscope::vis {

QColor HealthPill::colorOf(int segment) {
  switch (segment) {
    case 0:
      return QColor(0xd6, 0x27, 0x28);  // NaN: red
    case 1:
      return QColor(0x94, 0x67, 0xbd);  // -Inf: purple
    case 2:
      return QColor(0xff, 0x7f, 0x0e);  // +Inf: orange
    case 3:
      return QColor(0x1f, 0x77, 0xb4);  // negative: blue
    case 4:
      return QColor(0xbd, 0xbd, 0xbd);  // zero: grey
    default:
      return QColor(0x2c, 0xa0, 0x2c);  // positive: green
  }
}

QString HealthPill::nameOf(int segment) {
  static const char* names[] = {"NaN", "-Inf", "+Inf", "negative", "zero", "positive"};
  return QString::fromLatin1(names[std::clamp(segment, 0, 5)]);
}

double HealthPill::fraction(int segment) const {
  switch (segment) {
    case 0:
      return nan;
    case 1:
      return negInf;
    case 2:
      return posInf;
    case 3:
      return negative;
    case 4:
      return zero;
    default:
      return positive;
  }
}

namespace {

void joinText(QString& into, const QString& more, QChar sep) {
  if (more.isEmpty()) return;
  if (!into.isEmpty()) into += sep;
  into += more;
}

// `from` over `into` (Note [Decoration layers]); `hidden`: `from` belongs to a node inside the
// collapsed group `into` draws, so only what must stay visible passes.
void mergeNode(NodeDecoration& into, const NodeDecoration& from, bool hidden) {
  if (from.fill && !hidden) into.fill = from.fill;
  if (from.outline) into.outline = from.outline;
  into.mark = std::max(into.mark, from.mark);
  if (from.breakpoint != BreakpointMark::None &&
      (into.breakpoint == BreakpointMark::None || from.breakpoint == BreakpointMark::Enabled))
    into.breakpoint = from.breakpoint;
  if (!hidden || into.badge.isEmpty()) joinText(into.badge, from.badge, QLatin1Char(' '));
  if (!hidden) joinText(into.tooltip, from.tooltip, QLatin1Char('\n'));
}

void mergeEdge(EdgeDecoration& into, const EdgeDecoration& from) {
  if (from.color) into.color = from.color;
  if (from.pill && !into.pill) into.pill = from.pill;
  joinText(into.tooltip, from.tooltip, QLatin1Char('\n'));
}

}  // namespace

MergedDecorations MergedDecorations::merge(const SceneContent& content,
                                           const std::vector<const Decorations*>& layers) {
  MergedDecorations m;
  if (!content.model || !content.layout) return m;
  // No layer for this model (the common case: a plain graph): nothing to allocate.
  if (std::none_of(layers.begin(), layers.end(),
                   [&](const Decorations* layer) { return layer->model == content.model; }))
    return m;
  m.shapes.resize(content.shapes.size());
  m.edges.resize(content.edges.size());
  auto shapeAt = [&](int shape) -> NodeDecoration& {
    auto& slot = m.shapes[std::size_t(shape)];
    if (!slot) slot.emplace();
    m.anyItem = true;
    return *slot;
  };
  // The ViewModel edges each drawn edge stands for, inverted once.
  std::unordered_map<int, int>& drawnEdge = m.drawnEdge;
  bool edgesWanted = false;
  for (const Decorations* layer : layers) edgesWanted |= !layer->edges.empty();
  if (edgesWanted)
    for (std::size_t i = 0; i < content.layout->edges.size(); ++i)
      for (int e : content.layout->edges[i].edges) drawnEdge.emplace(e, int(i));

  for (const Decorations* layer : layers) {
    if (layer->model != content.model) continue;  // made for another graph
    for (const auto& [node, deco] : layer->nodes) {
      if (node < 0 || std::size_t(node) >= content.nodeShape.size()) continue;
      const int exact = content.nodeShape[std::size_t(node)];
      if (exact >= 0) {
        mergeNode(shapeAt(exact), deco, false);
        continue;
      }
      const int shown = content.shownShape(node);
      if (shown >= 0) mergeNode(shapeAt(shown), deco, true);
    }
    for (const auto& [group, deco] : layer->groups) {
      if (group < 0 || std::size_t(group) >= content.groupBox.size()) continue;
      const int box = content.groupBox[std::size_t(group)];
      if (box >= 0) mergeNode(shapeAt(box), deco, false);
    }
    for (const auto& [edge, deco] : layer->edges) {
      const auto it = drawnEdge.find(edge);
      if (it == drawnEdge.end()) continue;
      auto& slot = m.edges[std::size_t(it->second)];
      if (!slot) slot.emplace();
      m.anyItem = true;
      mergeEdge(*slot, deco);
    }
    m.legend.insert(m.legend.end(), layer->legend.begin(), layer->legend.end());
  }

  // Zoomed out the items do not paint: the overview draws the replaced fills, per colour.
  std::map<QRgb, std::vector<QRectF>> fills;
  for (std::size_t i = 0; i < m.shapes.size(); ++i)
    if (m.shapes[i] && m.shapes[i]->fill)
      fills[m.shapes[i]->fill->rgba()].push_back(content.shapes[i].rect);
  for (auto& [rgba, rects] : fills)
    m.overviewFills.emplace_back(QColor::fromRgba(rgba), std::move(rects));
  return m;
}

}  // namespace tscope::vis
