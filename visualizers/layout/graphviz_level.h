#pragma once
// The Graphviz side of the layout service: one level (Note [Per-group layout]) in, its geometry
// out. A LevelSpec is plain data (sizes already measured with Qt's font metrics); GraphvizLayouter
// owns the GVC_t and makes Graphviz calls, so it must be created, used and destroyed on the one
// thread that owns Graphviz (the service's worker). No Graphviz type leaks out of this header.
// TSCOPE_DOT_TRACE=FILE appends every level to FILE as DOT before it is laid out; `dot -Tplain` on
// that file replays the process's Graphviz work, the way to tell a Graphviz bug from ours.

#include <QPainterPath>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tscope::vis::layout {

struct LevelNodeSpec {
  enum class Rank : std::uint8_t { Normal, Source, Sink };
  enum class Shape : std::uint8_t { Box, Ellipse };
  QString key;       // the node's name in dot; unique in the level
  double width = 0;  // points (fixedsize)
  double height = 0;
  Rank rank = Rank::Normal;
  Shape shape = Shape::Box;  // dot clips edge ends at the shape's border
};

struct LevelEdgeSpec {
  int from = -1, to = -1;  // indices into LevelSpec::nodes
  QSizeF labelSize;        // points; empty: no label
};

struct LevelSpec {
  std::vector<LevelNodeSpec> nodes;
  std::vector<LevelEdgeSpec> edges;
  double nodeSep = 18;  // points
  double rankSep = 28;  // points
  // dot's fast settings for big levels (Note [Fast settings for big levels] in the .cpp): newrank,
  // no network-simplex pass for x coordinates (nodes packed towards the left), mclimit 0.05, and
  // polylines instead of splines above 4,000 edges.
  bool fast = false;
  // Where edge labels go. Dot: real labels, which make dot insert a label node in the middle of
  // every labelled edge (doubling the ranks) and keep them clear of everything. External: xlabels,
  // placed after the layout next to their edges (about 0.6 s for 3,500 labels). Midpoint: dot does
  // not see them; each sits on the middle of its edge's path (free).
  enum class LabelPlacement : std::uint8_t { Dot, External, Midpoint };
  LabelPlacement labels = LabelPlacement::Dot;

  // The full text that determines the layout: two specs with the same key get the same geometry.
  std::string cacheKey() const;
};

struct LevelEdgeGeometry {
  QPainterPath path;  // cubic beziers, local coordinates
  QPointF arrowTip;   // the end of the arrow head (the edge's head end when it has no arrow)
  QPointF arrowBase;  // the head's base centre
  QPointF labelPos;   // the label's centre (when the edge has a label)
};

// Local coordinates: points, y grows downwards, (0, 0) is the top-left of the bounding box.
struct LevelLayout {
  QSizeF size;
  std::vector<QRectF> nodes;             // per LevelSpec node
  std::vector<LevelEdgeGeometry> edges;  // per LevelSpec edge
  double seconds = 0;                    // time spent in Graphviz

  std::size_t approximateBytes() const;  // for the cache's memory bound
};

class GraphvizError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GraphvizLayouter {
 public:
  // Loads the dot layout plugin and creates the Graphviz context on the calling thread, which
  // becomes the owning thread. Throws GraphvizError when the plugin cannot be found.
  GraphvizLayouter();
  ~GraphvizLayouter();
  GraphvizLayouter(const GraphvizLayouter&) = delete;
  GraphvizLayouter& operator=(const GraphvizLayouter&) = delete;

  // Lays out one level with `engine` ("dot"; another name exercises the error path). Throws
  // GraphvizError carrying Graphviz's own messages when the layout fails, and std::logic_error when
  // called from a thread other than the owner.
  LevelLayout layout(const LevelSpec& spec, const char* engine = "dot");

  std::thread::id ownerThread() const { return m_owner; }
  // Whether layouts are protected from Graphviz 2.42's decompose() mark wrap (Note [dot's
  // decompose mark wraps] in dot_mark_wrap.h); false only with a dot plugin that does not export
  // decompose() or behaves differently, where the crash cannot be steered around.
  bool guardsMarkWrap() const;

 private:
  LevelLayout layoutWithDot(const LevelSpec& spec, const char* engine);
  struct Context;
  std::unique_ptr<Context> m_context;
  std::thread::id m_owner;
};

}  // namespace tscope::vis::layout
