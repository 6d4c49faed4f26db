#include "visualizers/layout/layout_assembly.h"

#include "visualizers/layout/item_sizes.h"

#include <QTransform>

#include <algorithm>

namespace tscope::vis::layout {
namespace {

struct BuiltLevel {
  LevelGraph graph;
  std::shared_ptr<const LevelLayout> layout;
  std::vector<int> childLevel;  // per item: the BuiltLevel of an expanded child group, else -1
};

class Assembler {
 public:
  Assembler(const ViewModel& model, const GroupState& state, const LayoutOptions& options,
            const LevelRunner& runLevel, const std::atomic<bool>& cancelled)
      : m_model(model),
        m_state(state),
        m_options(options),
        m_runLevel(runLevel),
        m_cancelled(cancelled),
        m_sizes(options.font) {}

  std::shared_ptr<const SceneLayout> run() {
    const int root = build(0);
    auto scene = std::make_shared<SceneLayout>();
    scene->m_nodeIndex.assign(m_model.nodes().size(), -1);
    scene->m_groupIndex.assign(m_model.groups().size(), -1);
    place(*scene, root, QPointF(0, 0), 0);
    scene->bounds = QRectF(QPointF(0, 0), m_levels[std::size_t(root)].layout->size);
    scene->parameters = m_options.parameters;
    return scene;
  }

 private:
  // Lays out `group` and, first, every expanded group inside it. Returns its BuiltLevel index.
  int build(int group) {
    if (m_cancelled.load(std::memory_order_relaxed)) throw LayoutCancelled();
    BuiltLevel level;
    level.graph = m_model.levelGraph(group, m_state, m_options.parameters);
    level.childLevel.assign(level.graph.items.size(), -1);
    for (std::size_t i = 0; i < level.graph.items.size(); ++i)
      if (level.graph.items[i].kind == LevelItem::Kind::ExpandedGroup)
        level.childLevel[i] = build(level.graph.items[i].index);
    if (m_cancelled.load(std::memory_order_relaxed)) throw LayoutCancelled();
    level.layout = m_runLevel(spec(level));
    m_levels.push_back(std::move(level));
    return static_cast<int>(m_levels.size()) - 1;
  }

  LevelSpec spec(const BuiltLevel& level) const {
    LevelSpec spec;
    spec.nodeSep = m_options.nodeSep;
    spec.rankSep = m_options.rankSep;
    spec.fast = static_cast<int>(level.graph.items.size()) > m_options.fastAbove;
    // Big levels put labels on their edges' midpoints (real labels add a label node per edge,
    // xlabels cost dot a search); small levels get real labels, clear of nodes and other edges.
    spec.labels = spec.fast ? LevelSpec::LabelPlacement::Midpoint : LevelSpec::LabelPlacement::Dot;
    spec.nodes.reserve(level.graph.items.size());
    for (std::size_t i = 0; i < level.graph.items.size(); ++i) {
      const LevelItem& item = level.graph.items[i];
      LevelNodeSpec node;
      node.key = item.key;
      QSizeF size;
      switch (item.kind) {
        case LevelItem::Kind::Node: {
          const ViewNode& viewNode = m_model.nodes()[std::size_t(item.index)];
          const std::vector<int>& badges = m_model.parameterEdges(item.index);
          if (m_options.parameters == ParameterMode::Badges && !badges.empty()) {
            std::vector<QString> rows;
            for (int e : badges)
              rows.push_back(
                  m_model.nodes()[std::size_t(m_model.edges()[std::size_t(e)].from)].badge);
            size = m_sizes.badgedNode(viewNode, rows);
            break;  // a box: edges end at its border
          }
          size = m_sizes.node(viewNode);
          if (viewNode.kind == NodeKind::Apply) node.shape = LevelNodeSpec::Shape::Ellipse;
          break;
        }
        case LevelItem::Kind::CollapsedGroup:
          size = m_sizes.collapsedGroup(m_model.groups()[std::size_t(item.index)]);
          break;
        case LevelItem::Kind::ExpandedGroup:
          size = m_sizes.expandedGroup(m_model.groups()[std::size_t(item.index)],
                                       m_levels[std::size_t(level.childLevel[i])].layout->size);
          break;
        case LevelItem::Kind::InPort:
        case LevelItem::Kind::OutPort:
          size = m_sizes.port();
          node.rank = item.kind == LevelItem::Kind::InPort ? LevelNodeSpec::Rank::Source
                                                           : LevelNodeSpec::Rank::Sink;
          break;
      }
      node.width = size.width();
      node.height = size.height();
      spec.nodes.push_back(std::move(node));
    }
    spec.edges.reserve(level.graph.edges.size());
    for (const LevelEdge& edge : level.graph.edges) {
      LevelEdgeSpec e;
      e.from = edge.from;
      e.to = edge.to;
      if (m_options.edgeLabels) e.labelSize = m_sizes.edgeLabel(edge.label);
      spec.edges.push_back(e);
    }
    return spec;
  }

  // Places a level with its top-left corner at `origin`; `depth` is its group's nesting depth.
  void place(SceneLayout& scene, int levelIndex, QPointF origin, int depth) const {
    const BuiltLevel& level = m_levels[std::size_t(levelIndex)];
    const LevelLayout& layout = *level.layout;
    const int group = level.graph.group;
    for (std::size_t i = 0; i < level.graph.items.size(); ++i) {
      const LevelItem& item = level.graph.items[i];
      const QRectF rect = layout.nodes[i].translated(origin);
      switch (item.kind) {
        case LevelItem::Kind::Node:
          scene.m_nodeIndex[std::size_t(item.index)] = static_cast<int>(scene.nodes.size());
          scene.nodes.push_back({item.index, rect});
          break;
        case LevelItem::Kind::CollapsedGroup:
          scene.m_groupIndex[std::size_t(item.index)] = static_cast<int>(scene.groups.size());
          scene.groups.push_back({item.index, false, rect, rect, depth + 1});
          break;
        case LevelItem::Kind::ExpandedGroup: {
          const QRectF title(rect.topLeft(), QSizeF(rect.width(), m_sizes.titleHeight()));
          scene.m_groupIndex[std::size_t(item.index)] = static_cast<int>(scene.groups.size());
          scene.groups.push_back({item.index, true, rect, title, depth + 1});
          // Centred across the cluster, which is wider than its contents when the title is long.
          const int child = level.childLevel[i];
          const double spare = rect.width() - 2 * m_sizes.margin() -
                               m_levels[std::size_t(child)].layout->size.width();
          const QPointF inner =
              rect.topLeft() + QPointF(m_sizes.margin() + std::max(0.0, spare / 2),
                                       m_sizes.titleHeight() + m_sizes.margin());
          place(scene, child, inner, depth + 1);
          break;
        }
        case LevelItem::Kind::InPort:
        case LevelItem::Kind::OutPort:
          scene.ports.push_back({group, item.index, item.kind == LevelItem::Kind::InPort, rect});
          break;
      }
    }
    const QTransform shift = QTransform::fromTranslate(origin.x(), origin.y());
    for (std::size_t e = 0; e < level.graph.edges.size(); ++e) {
      const LevelEdge& edge = level.graph.edges[e];
      const LevelEdgeGeometry& geometry = layout.edges[e];
      PlacedEdge placed;
      placed.level = group;
      placed.edges = edge.edges;
      placed.kind = edge.kind;
      placed.path = shift.map(geometry.path);
      placed.arrowTip = geometry.arrowTip + origin;
      placed.arrowBase = geometry.arrowBase + origin;
      if (m_options.edgeLabels && !edge.label.isEmpty()) {
        placed.label = edge.label;
        placed.labelPos = geometry.labelPos + origin;
      }
      scene.edges.push_back(std::move(placed));
    }
  }

  const ViewModel& m_model;
  const GroupState& m_state;
  const LayoutOptions& m_options;
  const LevelRunner& m_runLevel;
  const std::atomic<bool>& m_cancelled;
  ItemSizes m_sizes;
  std::vector<BuiltLevel> m_levels;
};

}  // namespace

std::shared_ptr<const SceneLayout> assembleLayout(const ViewModel& model, const GroupState& state,
                                                  const LayoutOptions& options,
                                                  const LevelRunner& runLevel,
                                                  const std::atomic<bool>& cancelled) {
  return Assembler(model, state, options, runLevel, cancelled).run();
}

}  // namespace tscope::vis::layout
