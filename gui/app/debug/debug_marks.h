#pragma once
// What the debugger draws on a pane: DebugMapper relates the nodes of the compiled graph (the ids
// a DebugSession names, in its frames) to the nodes and edges of the model a pane shows, and the
// builders make the decoration layers (visualizers/scene/decorations.h) from a snapshot:
//
//   auto mapper = std::make_shared<const DebugMapper>(pane->model(), controller.lineage(),
//                                                     documentLineage /* optimized pane */);
//   pane->setDecorations("debug", debugLayer(*mapper, *snapshot, breakpoints), 10);
//   pane->setDecorations("nan", nanLayer(*mapper, report), 20);
//
// Note [Debugger on two graphs]: the controller compiles the document's original graph, and its
// lineage (the compile's rewrite log) names for each compiled node the original nodes it stands
// for. The Original pane shows a compiled node on those nodes; the Optimized pane (the file's own
// optimized graph, with its own rewrite log) on the nodes those original nodes became there. So a
// breakpoint set on the original graph is drawn where it landed in the optimized one, whichever
// mode the debugger compiled with. Inner graphs (OpFromGraph bodies) keep their ids: a node of an
// inner frame is found in the group of its caller, nested as the frames are.

#include "engine/debug/lineage.h"
#include "engine/debug/nan_report.h"
#include "gui/app/debug/debug_controller.h"
#include "visualizers/scene/decorations.h"

#include <QSet>

#include <map>
#include <memory>
#include <vector>

namespace tscope::gui {

class DebugMapper {
 public:
  // compiled: the debugger's function lineage; document: the file's lineage when `model` is its
  // optimized graph (null when it is the original).
  DebugMapper(std::shared_ptr<const vis::ViewModel> model,
              std::shared_ptr<const engine::debug::NodeLineage> compiled,
              std::shared_ptr<const engine::debug::NodeLineage> document = nullptr);

  const std::shared_ptr<const vis::ViewModel>& model() const { return m_model; }
  // The view nodes of a compiled node; callers: the caller node ids of its frame, outer first
  // (FrameView::callerNodeId of frames 1..k).
  std::vector<int> viewNodes(std::int64_t compiledId,
                             const std::vector<std::int64_t>& callers = {}) const;
  // The view nodes of an original-graph node (outer graph).
  std::vector<int> viewNodesOfOriginal(std::int64_t originalId) const;
  // The compiled node a view node runs as (-1: none, e.g. a variable box or a removed node).
  std::int64_t compiledNode(int viewNode) const;
  // The original-graph node a view node stands for (-1: none).
  std::int64_t originalNode(int viewNode) const;
  // The OpFromGraph group of a frame path (-1 for the outer frame or when not shown).
  int frameGroup(const std::vector<std::int64_t>& callers) const;
  // The edges carrying a value of frame `callers` made by `producer` output `output`, or (producer
  // -1) the input or shared value named `name`.
  std::vector<int> valueEdges(const std::vector<std::int64_t>& callers, std::int64_t producer,
                              int output, const std::string& name) const;
  bool isOptimizedPane() const { return m_document != nullptr; }
  // Whether a view node belongs to an inner graph (an OpFromGraph body).
  bool isInner(int viewNode) const;

 private:
  int nearestOfg(int group) const;
  std::shared_ptr<const vis::ViewModel> m_model;
  std::shared_ptr<const engine::debug::NodeLineage> m_compiled, m_document;
  std::map<std::pair<int, std::int64_t>, int> m_ofgGroups;  // (parent ofg group, caller id)
  std::map<std::pair<int, std::int64_t>, int> m_nodes;      // (ofg group or -1, apply id)
  std::map<std::tuple<int, std::int64_t, int>, std::vector<int>> m_edgesByProducer;
  std::map<std::pair<int, std::string>, std::vector<int>> m_edgesByName;
};

// The callers of frame `frame` of a state (outer first), for DebugMapper.
std::vector<std::int64_t> callersOf(const engine::debug::SessionState& state, std::size_t frame);

// The "debug" layer: executed nodes, the next one, the current one, breakpoints, health pills on
// every edge whose value is computed (with shape text and a min/max tooltip).
std::shared_ptr<const vis::Decorations> debugLayer(
    const DebugMapper& mapper, const DebugSnapshot* snapshot,
    const std::vector<DebugController::Breakpoint>& breakpoints);

// The "nan" layer: the root-cause chain of a report (creator outlined red, propagating nodes and
// the edges between the links orange), with a legend.
std::shared_ptr<const vis::Decorations> nanLayer(const DebugMapper& mapper,
                                                 const engine::debug::NanReport& report);
// The view nodes of one chain link (a fused creator: its original node when the pane has it).
std::vector<int> linkNodes(const DebugMapper& mapper, const engine::debug::NodeRef& node);

// The "flash" layer after a recompute: the nodes whose outputs changed, outlined.
std::shared_ptr<const vis::Decorations> flashLayer(const DebugMapper& mapper,
                                                   const DebugSnapshot& snapshot,
                                                   const engine::debug::RecomputeResult& result);

// A health pill of a value (fractions, "f32[64,10]", tooltip with min, max, mean and counts).
vis::HealthPill healthPill(const DebugValue& value);

inline const QColor kCreatorColor{0xd6, 0x27, 0x28};     // red
inline const QColor kPropagatorColor{0xff, 0x7f, 0x0e};  // orange
inline const QColor kFlashColor{0x17, 0xbe, 0xcf};       // cyan

}  // namespace tscope::gui
