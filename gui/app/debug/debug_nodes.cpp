#include "gui/app/debug/debug_nodes.h"

#include "engine/debug/lineage.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "gui/app/document.h"

#include <QColor>
#include <QPainter>
#include <QPixmap>

#include <algorithm>

namespace tscope::gui {

namespace debug = engine::debug;

namespace {

// The margin's marks: a red dot for a breakpoint, a hollow one for a conditional breakpoint.
QPixmap dot(bool filled) {
  QPixmap pix(12, 12);
  pix.fill(Qt::transparent);
  QPainter p(&pix);
  p.setRenderHint(QPainter::Antialiasing);
  const QColor red(0xd6, 0x27, 0x28);
  p.setPen(QPen(red, 1.5));
  p.setBrush(filled ? QBrush(red) : QBrush(Qt::NoBrush));
  p.drawEllipse(QRectF(1.5, 1.5, 9, 9));
  return pix;
}

}  // namespace

NodeListModel::NodeListModel(DebugController* controller, QObject* parent)
    : QAbstractTableModel(parent), m_controller(controller) {
  connect(controller, &DebugController::documentChanged, this, &NodeListModel::rebuild);
  connect(controller, &DebugController::compiled, this, &NodeListModel::relink);
  connect(controller, &DebugController::breakpointsChanged, this,
          [this] { changedColumn(Margin); });
  connect(controller, &DebugController::snapshotChanged, this, &NodeListModel::updateStates);
  rebuild();
}

void NodeListModel::rebuild() {
  beginResetModel();
  m_rows.clear();
  m_rowOf.clear();
  m_states.clear();
  if (const std::shared_ptr<const Document>& doc = m_controller->document(); doc && doc->original) {
    // A listing: one pass over the nodes, as any table of the document (no values computed).
    for (const engine::Apply* node : doc->original->toposort()) {
      Row r;
      r.id = node->id();
      r.op = qstr(node->op().str());
      QStringList outs;
      for (int o = 0; o < node->nOutputs(); ++o) outs << qstr(node->outputRef(o).displayName());
      r.outputs = outs.join(QStringLiteral(", "));
      m_rowOf.emplace(r.id, static_cast<int>(m_rows.size()));
      m_rows.push_back(std::move(r));
    }
    m_states.assign(m_rows.size(), NodeState::NotRun);
  }
  endResetModel();
  relink();
}

void NodeListModel::relink() {
  const std::shared_ptr<const debug::NodeLineage> lineage = m_controller->lineage();
  for (Row& r : m_rows) {
    r.compiled.clear();
    r.landed.clear();
    if (!lineage) continue;
    r.compiled = lineage->optimizedNodesFor(r.id);
    const std::string how = lineage->describe(r.id);
    if (!how.empty())
      r.landed = qstr(how);
    else if (!r.compiled.empty())
      r.landed = tr("node %1").arg(r.compiled.front());
  }
  changedColumn(Landed);
  updateStates();
}

void NodeListModel::updateStates() {
  const std::shared_ptr<const DebugSnapshot> snap = m_controller->snapshot();
  std::vector<NodeState> states(m_rows.size(), NodeState::NotRun);
  if (snap && !snap->state.frames.empty()) {
    const debug::SessionState& st = snap->state;
    // The outer frame's node that holds the pause: the node itself, or the caller of the frame
    // the pause is in (an OpFromGraph, an IfElse).
    const std::int64_t current = st.frames.size() > 1 ? st.frames[1].callerNodeId : st.lastNodeId;
    const std::int64_t next = st.frames.size() > 1 ? -1 : st.frames[0].nextNodeId;
    for (std::size_t k = 0; k < m_rows.size(); ++k) {
      const Row& r = m_rows[k];
      NodeState s = NodeState::NotRun;
      for (std::int64_t c : r.compiled) {
        if (c == current && st.phase == debug::SessionPhase::Paused) {
          s = NodeState::Current;
          break;
        }
        if (c == next) s = NodeState::Next;
        if (s == NodeState::NotRun && snap->find(0, c, 0) != nullptr) s = NodeState::Done;
      }
      states[k] = s;
    }
  }
  if (states != m_states) {
    m_states = std::move(states);
    changedColumn(State);
    if (!m_rows.empty())  // the row colours
      emit dataChanged(index(0, 0), index(static_cast<int>(m_rows.size()) - 1, ColumnCount - 1),
                       {Qt::BackgroundRole});
  }
}

void NodeListModel::changedColumn(int column) {
  if (m_rows.empty()) return;
  emit dataChanged(index(0, column), index(static_cast<int>(m_rows.size()) - 1, column));
}

std::int64_t NodeListModel::nodeId(int row) const {
  return row >= 0 && row < static_cast<int>(m_rows.size())
             ? m_rows[static_cast<std::size_t>(row)].id
             : -1;
}

int NodeListModel::rowOf(std::int64_t originalId) const {
  const auto it = m_rowOf.find(originalId);
  return it == m_rowOf.end() ? -1 : it->second;
}

NodeListModel::NodeState NodeListModel::state(int row) const {
  return row >= 0 && row < static_cast<int>(m_states.size())
             ? m_states[static_cast<std::size_t>(row)]
             : NodeState::NotRun;
}

int NodeListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int NodeListModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant NodeListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(m_rows.size())) return {};
  const Row& r = m_rows[static_cast<std::size_t>(index.row())];
  const NodeState st = m_states[static_cast<std::size_t>(index.row())];
  if (role == Qt::BackgroundRole) {
    if (st == NodeState::Current) return QColor(0xff, 0xf1, 0x9c);  // the paused node
    if (st == NodeState::Next) return QColor(0xdd, 0xee, 0xff);
    return {};
  }
  switch (index.column()) {
    case Margin: {
      // Any breakpoint on the node: unconditional (filled) or with a condition (hollow).
      bool any = false, plain = false;
      const std::string key = std::to_string(r.id);
      for (const DebugController::Breakpoint& b : m_controller->breakpoints())
        if (b.spec.target == debug::BreakpointSpec::Target::Node && b.spec.key == key) {
          any = true;
          plain = plain || b.spec.condition.kind == debug::BreakCondition::Kind::Always;
        }
      if (role == Qt::UserRole) return any;
      if (role == Qt::DecorationRole && any) {
        static const QPixmap filled = dot(true), hollow = dot(false);
        return plain ? filled : hollow;
      }
      if (role == Qt::ToolTipRole)
        return any ? tr("Breakpoint set; click to remove it") : tr("Click to set a breakpoint");
      return {};
    }
    case Id:
      if (role == Qt::DisplayRole) return QVariant::fromValue<qlonglong>(r.id);
      if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case Op:
      if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return r.op;
      return {};
    case Outputs:
      if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return r.outputs;
      return {};
    case Landed:
      if (role == Qt::DisplayRole || role == Qt::ToolTipRole)
        return r.landed.isEmpty() && !m_controller->lineage() ? tr("(not compiled yet)") : r.landed;
      return {};
    case State:
      if (role == Qt::UserRole) return static_cast<int>(st);
      if (role != Qt::DisplayRole) return {};
      switch (st) {
        case NodeState::NotRun:
          return QString();
        case NodeState::Done:
          return tr("done");
        case NodeState::Current:
          return tr("\u25B6 current");
        case NodeState::Next:
          return tr("next");
      }
      return {};
    default:
      return {};
  }
}

QVariant NodeListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Margin:
      return QString();
    case Id:
      return tr("Node");
    case Op:
      return tr("Op");
    case Outputs:
      return tr("Outputs");
    case Landed:
      return tr("Compiled as");
    case State:
      return tr("State");
    default:
      return {};
  }
}

}  // namespace tscope::gui
