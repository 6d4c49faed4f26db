#include "gui/app/debug/debug_marks.h"

#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "gui/app/inspector/slice_table_model.h"

#include <algorithm>
#include <set>

namespace tscope::gui {

namespace debug = engine::debug;

DebugMapper::DebugMapper(std::shared_ptr<const vis::ViewModel> model,
                         std::shared_ptr<const debug::NodeLineage> compiled,
                         std::shared_ptr<const debug::NodeLineage> document)
    : m_model(std::move(model)), m_compiled(std::move(compiled)), m_document(std::move(document)) {
  if (!m_model) return;
  const auto& groups = m_model->groups();
  for (int g = 0; g < static_cast<int>(groups.size()); ++g)
    if (groups[g].kind == vis::GroupKind::OpFromGraph && groups[g].ofgNode)
      m_ofgGroups[{nearestOfg(groups[g].parent), groups[g].ofgNode->id()}] = g;
  const auto& nodes = m_model->nodes();
  auto nodeOfg = [&](int n) {
    const int g = nodes[n].group;
    if (g >= 0 && groups[g].kind == vis::GroupKind::OpFromGraph && groups[g].ofgViewNode == n)
      return nearestOfg(groups[g].parent);
    return nearestOfg(g);
  };
  // The frame a value belongs to is its producer's graph (an OpFromGraph's outputs leave the
  // body through boxes drawn inside its group, but they are values of the caller's frame).
  std::map<const engine::FunctionGraph*, int> graphOfg;
  for (int n = 0; n < static_cast<int>(nodes.size()); ++n)
    if (nodes[n].kind == vis::NodeKind::Apply && nodes[n].apply) {
      m_nodes.emplace(std::pair{nodeOfg(n), nodes[n].apply->id()}, n);
      graphOfg.emplace(nodes[n].apply->fgraph(), nodeOfg(n));
    }
  const auto& edges = m_model->edges();
  for (int e = 0; e < static_cast<int>(edges.size()); ++e) {
    const engine::Variable* v = edges[e].value;
    if (!v || edges[e].from < 0) continue;
    int ofg = nodeOfg(edges[e].from);
    if (v->owner())
      if (auto it = graphOfg.find(v->owner()->fgraph()); it != graphOfg.end()) ofg = it->second;
    if (v->owner())
      m_edgesByProducer[{ofg, v->owner()->id(), v->index()}].push_back(e);
    else
      m_edgesByName[{ofg, v->displayName()}].push_back(e);
  }
}

int DebugMapper::nearestOfg(int group) const {
  const auto& groups = m_model->groups();
  while (group > 0) {
    if (groups[group].kind == vis::GroupKind::OpFromGraph) return group;
    group = groups[group].parent;
  }
  return -1;
}

bool DebugMapper::isInner(int viewNode) const {
  if (!m_model || viewNode < 0 || viewNode >= static_cast<int>(m_model->nodes().size()))
    return false;
  const int g = m_model->nodes()[viewNode].group;
  const auto& groups = m_model->groups();
  if (g >= 0 && groups[g].kind == vis::GroupKind::OpFromGraph && groups[g].ofgViewNode == viewNode)
    return nearestOfg(groups[g].parent) >= 0;
  return nearestOfg(g) >= 0;
}

std::vector<int> DebugMapper::viewNodesOfOriginal(std::int64_t originalId) const {
  std::vector<int> out;
  auto add = [&](std::int64_t id) {
    auto it = m_nodes.find({-1, id});
    if (it != m_nodes.end()) out.push_back(it->second);
  };
  if (m_document && m_document->known(originalId))
    for (std::int64_t id : m_document->optimizedNodesFor(originalId)) add(id);
  else
    add(originalId);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int DebugMapper::frameGroup(const std::vector<std::int64_t>& callers) const {
  if (!m_model || callers.empty()) return -1;
  int group = -1;
  for (std::size_t i = 0; i < callers.size(); ++i) {
    int found = -1;
    if (i == 0) {
      // The outer caller is a node of the compiled graph: through the lineage to the model.
      for (int n : viewNodes(callers[0])) {
        const vis::ViewNode& node = m_model->nodes()[n];
        auto it = m_ofgGroups.find({-1, node.apply->id()});
        if (it != m_ofgGroups.end()) found = it->second;
      }
    } else {
      auto it = m_ofgGroups.find({group, callers[i]});
      if (it != m_ofgGroups.end()) found = it->second;
    }
    if (found < 0) return -1;
    group = found;
  }
  return group;
}

std::vector<int> DebugMapper::viewNodes(std::int64_t compiledId,
                                        const std::vector<std::int64_t>& callers) const {
  if (!m_model || compiledId < 0) return {};
  if (!callers.empty()) {
    const int group = frameGroup(callers);
    if (group < 0) return {};
    auto it = m_nodes.find({group, compiledId});
    if (it == m_nodes.end()) return {};
    return {it->second};
  }
  std::vector<std::int64_t> originals =
      m_compiled ? m_compiled->originalNodesFor(compiledId) : std::vector<std::int64_t>{};
  if (originals.empty()) originals = {compiledId};
  std::vector<int> out;
  for (std::int64_t o : originals)
    for (int n : viewNodesOfOriginal(o)) out.push_back(n);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::int64_t DebugMapper::originalNode(int viewNode) const {
  if (!m_model || viewNode < 0 || viewNode >= static_cast<int>(m_model->nodes().size())) return -1;
  const vis::ViewNode& node = m_model->nodes()[viewNode];
  if (node.kind != vis::NodeKind::Apply || !node.apply) return -1;
  const std::int64_t id = node.apply->id();
  if (!m_document || isInner(viewNode)) return id;
  const std::vector<std::int64_t> originals = m_document->originalNodesFor(id);
  return originals.empty() ? -1 : originals.front();
}

std::int64_t DebugMapper::compiledNode(int viewNode) const {
  const std::int64_t original = originalNode(viewNode);
  if (original < 0) return -1;
  if (isInner(viewNode) || !m_compiled) return original;
  const std::vector<std::int64_t> compiled = m_compiled->optimizedNodesFor(original);
  return compiled.empty() ? -1 : compiled.front();
}

std::vector<int> DebugMapper::valueEdges(const std::vector<std::int64_t>& callers,
                                         std::int64_t producer, int output,
                                         const std::string& name) const {
  if (!m_model || m_document) return {};  // values are drawn on the graph that was compiled
  const int ofg = callers.empty() ? -1 : frameGroup(callers);
  if (!callers.empty() && ofg < 0) return {};
  if (producer >= 0) {
    // Only a node the compile kept stands for the same value in the original graph.
    if (ofg < 0 && m_compiled && m_compiled->rewritten(producer)) return {};
    auto it = m_edgesByProducer.find({ofg, producer, output});
    return it == m_edgesByProducer.end() ? std::vector<int>{} : it->second;
  }
  auto it = m_edgesByName.find({ofg, name});
  return it == m_edgesByName.end() ? std::vector<int>{} : it->second;
}

std::vector<std::int64_t> callersOf(const debug::SessionState& state, std::size_t frame) {
  std::vector<std::int64_t> callers;
  for (std::size_t f = 1; f <= frame && f < state.frames.size(); ++f)
    callers.push_back(state.frames[f].callerNodeId);
  return callers;
}

namespace {

QString shortDType(engine::DType dtype) {
  QString name = qstr(engine::dtypeName(dtype));
  name.replace(QLatin1String("uint"), QLatin1String("u"));
  name.replace(QLatin1String("int"), QLatin1String("i"));
  name.replace(QLatin1String("float"), QLatin1String("f"));
  name.replace(QLatin1String("bool"), QLatin1String("b"));
  return name;
}

QString shapeText(const std::vector<std::int64_t>& shape) {
  QStringList dims;
  for (std::int64_t d : shape) dims << QString::number(d);
  return dims.join(',');
}

}  // namespace

vis::HealthPill healthPill(const DebugValue& value) {
  const debug::TensorStats& s = value.view.stats;
  vis::HealthPill pill;
  const double n = s.size > 0 ? static_cast<double>(s.size) : 1.0;
  pill.nan = static_cast<double>(s.nan) / n;
  pill.negInf = static_cast<double>(s.negInf) / n;
  pill.posInf = static_cast<double>(s.posInf) / n;
  pill.negative = static_cast<double>(value.negative) / n;
  pill.zero = static_cast<double>(value.zero) / n;
  pill.positive = static_cast<double>(value.positive) / n;
  pill.text = QStringLiteral("%1[%2]").arg(shortDType(s.dtype), shapeText(s.shape));
  QStringList lines;
  lines << QStringLiteral("%1: %2 (%3)")
               .arg(QString::fromStdString(value.view.name), qstr(engine::dtypeName(s.dtype)),
                    shapeText(s.shape));
  lines << QStringLiteral("min %1, max %2, mean %3")
               .arg(formatElement(s.min, engine::DType::Float64),
                    formatElement(s.max, engine::DType::Float64),
                    formatElement(s.mean, engine::DType::Float64));
  lines << QStringLiteral("%1 negative, %2 zero, %3 positive")
               .arg(value.negative)
               .arg(value.zero)
               .arg(value.positive);
  if (s.nan + s.posInf + s.negInf > 0)
    lines << QStringLiteral("%1 NaN, %2 -Inf, %3 +Inf").arg(s.nan).arg(s.negInf).arg(s.posInf);
  if (value.view.edited) lines << QStringLiteral("edited");
  pill.tooltip = lines.join('\n');
  return pill;
}

std::shared_ptr<const vis::Decorations> debugLayer(
    const DebugMapper& mapper, const DebugSnapshot* snapshot,
    const std::vector<DebugController::Breakpoint>& breakpoints) {
  auto d = std::make_shared<vis::Decorations>();
  d->model = mapper.model();
  if (!d->model) return d;
  bool anyBreakpoint = false;
  for (const DebugController::Breakpoint& b : breakpoints) {
    std::vector<int> nodes;
    if (b.spec.target == debug::BreakpointSpec::Target::Node) {
      try {
        nodes = mapper.viewNodesOfOriginal(std::stoll(b.spec.key));
      } catch (const std::exception&) {
      }
    }
    for (std::int64_t id : b.info.nodes)
      for (int n : mapper.viewNodes(id)) nodes.push_back(n);
    for (int n : nodes) {
      vis::NodeDecoration& nd = d->nodes[n];
      if (nd.breakpoint != vis::BreakpointMark::Enabled)
        nd.breakpoint =
            b.spec.enabled ? vis::BreakpointMark::Enabled : vis::BreakpointMark::Disabled;
      QString line =
          QStringLiteral("Breakpoint %1").arg(QString::fromStdString(debug::toString(b.spec)));
      if (b.info.hits > 0) line += QStringLiteral(" (%1 hits)").arg(b.info.hits);
      if (!b.info.note.empty()) line += QStringLiteral(": ") + QString::fromStdString(b.info.note);
      nd.tooltip += (nd.tooltip.isEmpty() ? QString() : QStringLiteral("\n")) + line;
      anyBreakpoint = true;
    }
  }
  if (anyBreakpoint)
    d->legend.push_back(
        {vis::LegendRow::Swatch::Dot, QColor(0xd6, 0x27, 0x28), QStringLiteral("breakpoint")});
  if (!snapshot) return d;
  const debug::SessionState& st = snapshot->state;
  bool anyPill = false;
  for (std::size_t f = 0; f < snapshot->frames.size(); ++f) {
    const std::vector<std::int64_t> callers = callersOf(st, f);
    for (const DebugValue& v : snapshot->frames[f]) {
      if (v.view.producerId >= 0)
        for (int n : mapper.viewNodes(v.view.producerId, callers))
          if (d->nodes[n].mark == vis::NodeMark::None) d->nodes[n].mark = vis::NodeMark::Executed;
      for (int e : mapper.valueEdges(callers, v.view.producerId, v.view.outputIndex, v.view.name)) {
        vis::EdgeDecoration& ed = d->edges[e];
        ed.pill = healthPill(v);
        ed.tooltip = ed.pill->tooltip;
        anyPill = true;
      }
    }
  }
  if (!st.frames.empty()) {
    const std::size_t inner = st.frames.size() - 1;
    for (int n : mapper.viewNodes(st.frames[inner].nextNodeId, callersOf(st, inner)))
      d->nodes[n].mark = vis::NodeMark::Next;
  }
  const std::int64_t current =
      st.reason == debug::PauseKind::Error ? st.errorNodeId : st.lastNodeId;
  if (current >= 0 &&
      (st.phase == debug::SessionPhase::Paused || st.phase == debug::SessionPhase::Failed)) {
    for (std::size_t f = st.frames.size(); f-- > 0;) {
      const std::vector<int> nodes = mapper.viewNodes(current, callersOf(st, f));
      if (nodes.empty()) continue;
      for (int n : nodes) {
        d->nodes[n].mark = vis::NodeMark::Current;
        if (!st.message.empty())
          d->nodes[n].tooltip +=
              (d->nodes[n].tooltip.isEmpty() ? QString() : QStringLiteral("\n")) +
              QString::fromStdString(st.message);
      }
      break;
    }
  }
  if (anyPill)
    for (int segment = 0; segment < 6; ++segment)
      d->legend.push_back({vis::LegendRow::Swatch::Box, vis::HealthPill::colorOf(segment),
                           vis::HealthPill::nameOf(segment)});
  return d;
}

std::vector<int> linkNodes(const DebugMapper& mapper, const debug::NodeRef& node) {
  std::vector<int> nodes;
  if (!node.fusedInto.empty() && node.originalId >= 0 && node.frames.empty())
    nodes = mapper.viewNodesOfOriginal(node.originalId);
  if (!nodes.empty()) return nodes;
  nodes = mapper.viewNodes(node.id, node.frames);
  if (!node.fusedInto.empty() && nodes.size() > 1) {
    // A fused node named by its op only (the session's guard knows no original graph): of the
    // nodes the Composite stands for, the ones with that op.
    std::vector<int> same;
    for (int n : nodes) {
      const vis::ViewNode& vn = mapper.model()->nodes()[static_cast<std::size_t>(n)];
      if (vn.apply && vn.apply->op().str() == node.op) same.push_back(n);
    }
    if (!same.empty()) return same;
  }
  return nodes;
}

std::shared_ptr<const vis::Decorations> nanLayer(const DebugMapper& mapper,
                                                 const debug::NanReport& report) {
  auto d = std::make_shared<vis::Decorations>();
  d->model = mapper.model();
  if (!d->model) return d;
  std::vector<std::vector<int>> links;
  for (const debug::ChainLink& link : report.chain) {
    const bool creator = link.role == debug::ChainLink::Role::Creator;
    std::vector<int> nodes = linkNodes(mapper, link.node);
    for (int n : nodes) {
      vis::NodeDecoration& nd = d->nodes[n];
      // A fused creator and its propagators can be the same Composite: red wins.
      if (!nd.outline || creator) nd.outline = creator ? kCreatorColor : kPropagatorColor;
      if (creator) nd.badge = qstr(debug::checkName(link.firstKind));
      QString line =
          QStringLiteral("NaN chain, %1: %2 output %3 %4 = %5")
              .arg(qstr(debug::roleName(link.role)), QString::fromStdString(link.node.describe()))
              .arg(link.output)
              .arg(QString::fromStdString(debug::indexText(link.firstIndex)),
                   QString::fromStdString(debug::valueText(link.firstValue)));
      nd.tooltip += (nd.tooltip.isEmpty() ? QString() : QStringLiteral("\n")) + line;
    }
    links.push_back(std::move(nodes));
  }
  // Edges from each link's node to the one before it in the chain (towards the output).
  for (std::size_t i = 0; i + 1 < links.size(); ++i)
    for (int to : links[i])
      for (int e : d->model->inEdges(to))
        if (std::find(links[i + 1].begin(), links[i + 1].end(), d->model->edges()[e].from) !=
            links[i + 1].end())
          d->edges[e].color = kPropagatorColor;
  d->legend.push_back({vis::LegendRow::Swatch::Box, kCreatorColor, QStringLiteral("NaN creator")});
  d->legend.push_back(
      {vis::LegendRow::Swatch::Box, kPropagatorColor, QStringLiteral("propagates it")});
  return d;
}

std::shared_ptr<const vis::Decorations> flashLayer(const DebugMapper& mapper,
                                                   const DebugSnapshot& snapshot,
                                                   const debug::RecomputeResult& result) {
  auto d = std::make_shared<vis::Decorations>();
  d->model = mapper.model();
  if (!d->model) return d;
  const std::set<std::int64_t> changed(result.changedVars.begin(), result.changedVars.end());
  for (std::size_t f = 0; f < snapshot.frames.size(); ++f) {
    const std::vector<std::int64_t> callers = callersOf(snapshot.state, f);
    for (const DebugValue& v : snapshot.frames[f]) {
      if (!changed.count(v.view.varId)) continue;
      for (int n : mapper.viewNodes(v.view.producerId, callers)) {
        d->nodes[n].outline = kFlashColor;
        d->nodes[n].badge = QStringLiteral("Δ");
      }
      for (int e : mapper.valueEdges(callers, v.view.producerId, v.view.outputIndex, v.view.name))
        d->edges[e].color = kFlashColor;
    }
  }
  return d;
}

}  // namespace tscope::gui
