#pragma once
// Decorations: what the debugger and the profiler draw over a graph without changing its layout —
// heat-map fills, execution marks (executed, next, current with an arrow), breakpoint dots,
// coloured outlines (a NanGuard root-cause chain), badges, coloured edges and health pills on
// edges, extra tooltip lines and legend rows.
//
//   auto d = std::make_shared<vis::Decorations>();
//   d->model = pane->model();                          // the model the indices refer to
//   d->nodes[node].fill = palette::heatColor(0.8);
//   d->nodes[creator].outline = QColor("#d62728");
//   d->edges[edge].pill = HealthPill{...};
//   pane->setDecorations("profile", d);                // replaces that layer; null removes it
//
// Note [Decoration layers]: a GraphScene holds any number of named layers (the debugger's, the
// profiler's heat map, a flash after a recompute). They are merged per shown item in the order of
// their z (then name): a later layer's fill, outline, mark, breakpoint and edge colour replace an
// earlier one's when set; badges, tooltips and legend rows are joined. A layer applies only while
// the scene shows the model it was made for (ViewModel node, edge and group indices mean nothing
// in another model), so a stale layer is never drawn on a new graph; setting it again for the new
// model brings it back. A node hidden in a collapsed group passes its outline, mark, breakpoint
// and badge to the box of its outermost collapsed group (so the current node or a NaN's creator is
// never invisible); fills and tooltips of hidden nodes are not passed on (the layer decorates
// groups itself: `groups`, e.g. a heat map's inclusive time). Layers are immutable snapshots: build
// them on any thread, hand them to the GUI thread, which only merges and paints.

#include "visualizers/model/view_model.h"
#include "visualizers/scene/scene_content.h"

#include <QColor>
#include <QString>

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tscope::vis {

// A value's health at a glance (TensorBoard's health pills): the fractions of its elements that
// are NaN, -Inf, +Inf, negative, zero and positive (finite), drawn as one small segmented bar.
struct HealthPill {
  double nan = 0, negInf = 0, posInf = 0, negative = 0, zero = 0, positive = 0;
  QString text;     // drawn beside the bar when text is legible ("f32[64,10]")
  QString tooltip;  // shape, min, max, mean, counts
  // The segment colours, in the order above.
  static QColor colorOf(int segment);
  static QString nameOf(int segment);  // "NaN", "-Inf", "+Inf", "negative", "zero", "positive"
  double fraction(int segment) const;
};

enum class NodeMark : std::uint8_t {
  None,
  Executed,  // ran in this execution: a small check mark
  Next,      // runs next: a dashed outline
  Current,   // where the execution stands (the paused node): a thick outline and an arrow
};
enum class BreakpointMark : std::uint8_t { None, Enabled, Disabled };

struct NodeDecoration {
  std::optional<QColor> fill;     // replaces the family colour (heat map, diff)
  std::optional<QColor> outline;  // a wide outline (a root-cause chain: red creator, orange rest)
  NodeMark mark = NodeMark::None;
  BreakpointMark breakpoint = BreakpointMark::None;  // a red dot at the top-left corner
  QString badge;    // a few characters at the top-right corner ("×3", "NaN")
  QString tooltip;  // lines appended to the item's tooltip
};

struct EdgeDecoration {
  std::optional<QColor> color;  // drawn wider in this colour (a root-cause chain's edges)
  std::optional<HealthPill> pill;
  QString tooltip;  // shown over the pill
};

struct Decorations {
  std::shared_ptr<const ViewModel> model;          // the model the indices refer to
  std::unordered_map<int, NodeDecoration> nodes;   // by ViewModel node index
  std::unordered_map<int, NodeDecoration> groups;  // by group index: its collapsed box
  std::unordered_map<int, EdgeDecoration> edges;   // by ViewModel edge index
  std::vector<LegendRow> legend;                   // rows added to the legend
};

// The decorations of one shown item after merging every layer (Note [Decoration layers]).
struct MergedDecorations {
  std::vector<std::optional<NodeDecoration>> shapes;  // by SceneContent shape
  std::vector<std::optional<EdgeDecoration>> edges;   // by SceneContent edge
  std::vector<LegendRow> legend;
  // By ViewModel edge: the drawn edge standing for it (filled when some layer decorates edges).
  std::unordered_map<int, int> drawnEdge;
  // Fills to draw over the overview (zoomed out), batched per colour.
  std::vector<std::pair<QColor, std::vector<QRectF>>> overviewFills;
  bool empty() const { return legend.empty() && overviewFills.empty() && !anyItem; }
  bool anyItem = false;

  // Pure data, callable on any thread. `layers` in merge order.
  static MergedDecorations merge(const SceneContent& content,
                                 const std::vector<const Decorations*>& layers);
};

}  // namespace tscope::vis
