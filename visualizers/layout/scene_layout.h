#pragma once
// SceneLayout: the geometry of everything a GroupState shows, in scene coordinates (points, y
// down), assembled from one Graphviz layout per shown group (Note [Per-group layout]).
//
// Note [Per-group layout]: each expanded group is laid out on its own by `dot`, with its child
// groups as single nodes (a collapsed group: a box sized for its title; an expanded group: a box
// the size of its own layout plus a margin and a title bar) and ports for values crossing its
// border. Layouts are computed bottom-up and cached by the text of the level's dot input, so
// expanding a group lays out only that group (when not cached) and its ancestors; the other
// groups' layouts come from the cache unchanged. `dot` ranks and orders a level the same way
// whatever its node sizes, so when a group opens only the space around it changes; the view keeps
// the toggled group's top-left corner fixed on screen (GraphView::setSceneLayout's anchor).

#include "visualizers/model/view_model.h"

#include <QPainterPath>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <memory>
#include <vector>

namespace tscope::vis {

struct PlacedNode {
  int node = -1;  // ViewModel node
  QRectF rect;
};
struct PlacedGroup {
  int group = -1;
  bool expanded = false;  // expanded: a cluster holding its contents; collapsed: one box
  QRectF rect;            // the whole cluster or the collapsed box
  QRectF titleRect;       // the title bar of a cluster (the collapsed box's label area)
  int depth = 0;          // nesting depth (root children: 1)
};
struct PlacedPort {
  int group = -1;  // the expanded group whose border it sits on
  // The ViewModel node producing the value that crosses the border: outside the group for an
  // in-port, inside it for an out-port (one port per value, Note [One port per value] in
  // level_graph.cpp).
  int source = -1;
  bool input = true;
  QRectF rect;
};
struct PlacedEdge {
  int level = 0;           // the group whose layout holds it
  std::vector<int> edges;  // ViewModel edges it draws
  EdgeKind kind = EdgeKind::Plain;
  QPainterPath path;  // the cubic bezier spline from Graphviz, in scene coordinates
  QPointF arrowTip;   // where the arrow head ends
  QPointF arrowBase;  // the head's base centre (direction = tip - base)
  QString label;
  QPointF labelPos;  // centre of the label
};

struct SceneLayout {
  std::vector<PlacedNode> nodes;
  std::vector<PlacedGroup> groups;  // shown groups except the root, parents before children
  std::vector<PlacedPort> ports;
  std::vector<PlacedEdge> edges;
  QRectF bounds;
  // How parameters are drawn (LayoutOptions::parameters): under Badges, a PlacedNode whose
  // ViewModel::parameterEdges is not empty is a box with one row per edge.
  ParameterMode parameters = ParameterMode::Boxes;
  // Lookups (index into the vectors above; -1 when not shown).
  int placedNode(int node) const;
  int placedGroup(int group) const;
  std::vector<int> m_nodeIndex, m_groupIndex;  // filled by the layout service
};

}  // namespace tscope::vis
