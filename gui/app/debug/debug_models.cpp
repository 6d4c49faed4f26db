#include "gui/app/debug/debug_models.h"

#include "engine/debug/nan_report.h"
#include "gui/app/inspector/slice_table_model.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

namespace tscope::gui {

namespace debug = engine::debug;

namespace {

QString num(double v) {
  return formatElement(v, engine::DType::Float64);
}

QString statsText(const debug::TensorStats& s) {
  QStringList dims;
  for (std::int64_t d : s.shape) dims << QString::number(d);
  return QStringLiteral("%1 (%2)  min %3  max %4  mean %5")
      .arg(qstr(engine::dtypeName(s.dtype)), dims.join(QStringLiteral(", ")), num(s.min),
           num(s.max), num(s.mean));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BreakpointModel

BreakpointModel::BreakpointModel(DebugController* controller, QObject* parent)
    : QAbstractTableModel(parent), m_controller(controller) {
  m_rows = static_cast<int>(controller->breakpoints().size());
  connect(controller, &DebugController::breakpointsChanged, this, [this] {
    const int rows = static_cast<int>(m_controller->breakpoints().size());
    if (rows != m_rows) {
      beginResetModel();
      m_rows = rows;
      endResetModel();
    } else if (rows > 0) {
      emit dataChanged(index(0, 0), index(rows - 1, ColumnCount - 1));
    }
  });
}

int BreakpointModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : m_rows;
}

int BreakpointModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant BreakpointModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= m_rows ||
      index.row() >= static_cast<int>(m_controller->breakpoints().size()))
    return {};
  const DebugController::Breakpoint& b =
      m_controller->breakpoints()[static_cast<std::size_t>(index.row())];
  switch (index.column()) {
    case Spec:
      if (role == Qt::DisplayRole) return QString::fromStdString(debug::toString(b.spec));
      if (role == Qt::CheckStateRole) return b.spec.enabled ? Qt::Checked : Qt::Unchecked;
      if (role == Qt::ToolTipRole && !b.error.isEmpty()) return b.error;
      break;
    case Hits:
      if (role == Qt::DisplayRole) return b.info.hits;
      if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case Where:
      if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
        if (!b.error.isEmpty()) return tr("not set: %1").arg(b.error);
        if (b.sessionId < 0) return tr("set at the next run");
        QStringList nodes;
        for (std::int64_t id : b.info.nodes) nodes << QString::number(id);
        QString text = nodes.isEmpty() ? tr("no node") : tr("nodes %1").arg(nodes.join(", "));
        if (!b.info.note.empty())
          text += QStringLiteral(" — ") + QString::fromStdString(b.info.note);
        return text;
      }
      break;
    default:
      break;
  }
  return {};
}

bool BreakpointModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != Spec || role != Qt::CheckStateRole) return false;
  m_controller->setBreakpointEnabled(index.row(), value.toInt() == Qt::Checked);
  return true;
}

Qt::ItemFlags BreakpointModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() == Spec) f |= Qt::ItemIsUserCheckable;
  return f;
}

QVariant BreakpointModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Spec:
      return tr("Breakpoint");
    case Hits:
      return tr("Hits");
    case Where:
      return tr("Where (compiled graph)");
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------
// CallStackModel

CallStackModel::CallStackModel(DebugController* controller, QObject* parent)
    : QAbstractTableModel(parent) {
  connect(controller, &DebugController::snapshotChanged, this,
          [this](const std::shared_ptr<const DebugSnapshot>& snapshot) {
            beginResetModel();
            m_state = snapshot ? snapshot->state : debug::SessionState{};
            endResetModel();
          });
}

int CallStackModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_state.frames.size());
}

int CallStackModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

std::size_t CallStackModel::frameOf(int row) const {
  return m_state.frames.size() - 1 - static_cast<std::size_t>(row);
}

QVariant CallStackModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const std::size_t f = frameOf(index.row());
  const debug::FrameView& frame = m_state.frames[f];
  if (role == Qt::UserRole) return static_cast<qulonglong>(f);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Frame: {
      QString text = frame.callerNodeId < 0 ? tr("outer graph")
                                            : tr("%1 (node %2)")
                                                  .arg(QString::fromStdString(frame.callerOp))
                                                  .arg(frame.callerNodeId);
      // Note [Loop frames]: a loop's frame shows the iteration it runs.
      if (frame.iteration >= 0)
        text += tr(", iteration %1 of %2").arg(frame.iteration).arg(frame.iterations);
      return text;
    }
    case Next:
      return frame.nextNodeId < 0 ? tr("(end)")
                                  : tr("%1 (node %2)")
                                        .arg(QString::fromStdString(frame.nextNodeOp))
                                        .arg(frame.nextNodeId);
    case Position:
      return QStringLiteral("%1 / %2").arg(frame.pc).arg(frame.scheduleSize);
    default:
      return {};
  }
}

QVariant CallStackModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Frame:
      return tr("Frame");
    case Next:
      return tr("Next node");
    case Position:
      return tr("Position");
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------
// WatchModel

WatchModel::WatchModel(DebugController* controller, QObject* parent) : QAbstractTableModel(parent) {
  connect(controller, &DebugController::snapshotChanged, this, &WatchModel::update);
}

void WatchModel::addWatch(const QString& name) {
  if (name.isEmpty()) return;
  for (const Watch& w : m_watches)
    if (w.name == name) return;
  const int row = static_cast<int>(m_watches.size());
  beginInsertRows({}, row, row);
  Watch w;
  w.name = name;
  if (m_snapshot)
    if (const DebugValue* v = m_snapshot->findByName(name.toStdString())) w.value = *v;
  m_watches.push_back(std::move(w));
  endInsertRows();
}

void WatchModel::removeWatch(int row) {
  if (row < 0 || row >= static_cast<int>(m_watches.size())) return;
  beginRemoveRows({}, row, row);
  m_watches.erase(m_watches.begin() + row);
  endRemoveRows();
}

QStringList WatchModel::watches() const {
  QStringList names;
  for (const Watch& w : m_watches) names << w.name;
  return names;
}

QVector<double> WatchModel::history(int row) const {
  if (row < 0 || row >= static_cast<int>(m_watches.size())) return {};
  return m_watches[static_cast<std::size_t>(row)].history;
}

void WatchModel::update(const std::shared_ptr<const DebugSnapshot>& snapshot) {
  m_snapshot = snapshot;
  // A pause (a new serial) adds one point per watch computed there; a snapshot of the same pause
  // (after an edit) replaces the last point.
  const bool newPause = snapshot && snapshot->state.serial != m_lastSerial;
  if (snapshot) m_lastSerial = snapshot->state.serial;
  for (Watch& w : m_watches) {
    const DebugValue* v = snapshot ? snapshot->findByName(w.name.toStdString()) : nullptr;
    if (!v && snapshot && w.name.startsWith(QLatin1String("node:"))) {
      const QStringList parts = w.name.mid(5).split('.');
      v = snapshot->find(0, parts.value(0).toLongLong(), parts.value(1).toInt());
    }
    w.value = v ? std::optional<DebugValue>(*v) : std::nullopt;
    if (!v) continue;
    if (newPause || w.history.isEmpty())
      w.history.push_back(v->view.stats.mean);
    else
      w.history.back() = v->view.stats.mean;
    if (w.history.size() > kHistory) w.history.remove(0, w.history.size() - kHistory);
  }
  if (!m_watches.empty())
    emit dataChanged(index(0, 0), index(static_cast<int>(m_watches.size()) - 1, ColumnCount - 1));
}

int WatchModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_watches.size());
}

int WatchModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant WatchModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Watch& w = m_watches[static_cast<std::size_t>(index.row())];
  switch (index.column()) {
    case Name:
      if (role == Qt::DisplayRole) return w.name;
      break;
    case Stats:
      if (role == Qt::DisplayRole || role == Qt::ToolTipRole)
        return w.value ? statsText(w.value->view.stats) : tr("not computed");
      break;
    case NonFinite:
      if (role == Qt::DisplayRole && w.value) {
        const debug::TensorStats& s = w.value->view.stats;
        return s.nan + s.posInf + s.negInf == 0
                   ? tr("finite")
                   : tr("%1 NaN, %2 +Inf, %3 -Inf").arg(s.nan).arg(s.posInf).arg(s.negInf);
      }
      break;
    case History:
      if (role == Qt::UserRole) {
        QVariantList list;
        for (double v : w.history) list << v;
        return list;
      }
      if (role == Qt::ToolTipRole) {
        QStringList list;
        for (double v : w.history) list << num(v);
        return tr("mean at each pause: %1").arg(list.join(", "));
      }
      break;
    default:
      break;
  }
  return {};
}

QVariant WatchModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name:
      return tr("Variable");
    case Stats:
      return tr("Statistics");
    case NonFinite:
      return tr("NaN / Inf");
    case History:
      return tr("Mean over pauses");
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------
// AlertsModel

AlertsModel::AlertsModel(DebugController* controller, QObject* parent)
    : QAbstractTableModel(parent) {
  connect(controller, &DebugController::nanEventsChanged, this, [this, controller] {
    beginResetModel();
    m_events = controller->nanEvents();
    endResetModel();
  });
}

int AlertsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_events.size());
}

int AlertsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

std::shared_ptr<const debug::NanReport> AlertsModel::report(int row) const {
  if (row < 0 || row >= rowCount()) return nullptr;
  return m_events[static_cast<std::size_t>(row)];
}

QVariant AlertsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const debug::NanReport& r = *m_events[static_cast<std::size_t>(index.row())];
  if (role == Qt::ToolTipRole) return QString::fromStdString(r.toText());
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Check:
      return qstr(debug::checkName(r.check));
    case Node:
      if (r.where != "node")
        return QStringLiteral("%1 %2").arg(QString::fromStdString(r.where),
                                           QString::fromStdString(r.variable));
      return QString::fromStdString(r.node.describe());
    case Output:
      return QStringLiteral("%1 (%2)").arg(r.output).arg(QString::fromStdString(r.variable));
    case FirstBad:
      return QStringLiteral("%1 = %2").arg(QString::fromStdString(debug::indexText(r.firstIndex)),
                                           QString::fromStdString(debug::valueText(r.firstValue)));
    case Counts:
      return tr("%1 NaN, %2 +Inf, %3 -Inf, %4 big of %5")
          .arg(r.counts.nan)
          .arg(r.counts.posInf)
          .arg(r.counts.negInf)
          .arg(r.counts.big)
          .arg(r.counts.numel);
    case Creator:
      if (const debug::ChainLink* c = r.creator())
        return QString::fromStdString(c->node.describe());
      return tr("(none)");
    default:
      return {};
  }
}

QVariant AlertsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Check:
      return tr("Check");
    case Node:
      return tr("Node");
    case Output:
      return tr("Output");
    case FirstBad:
      return tr("First bad element");
    case Counts:
      return tr("Counts");
    case Creator:
      return tr("Created by");
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------
// SparklineDelegate

void SparklineDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                              const QModelIndex& index) const {
  QStyledItemDelegate::paint(painter, option, index);
  const QVariantList values = index.data(Qt::UserRole).toList();
  if (values.isEmpty()) return;
  double lo = values[0].toDouble(), hi = lo;
  for (const QVariant& v : values) {
    lo = std::min(lo, v.toDouble());
    hi = std::max(hi, v.toDouble());
  }
  const QRectF r = QRectF(option.rect).adjusted(3, 3, -3, -3);
  const double span = hi > lo ? hi - lo : 1.0;
  QPainterPath path;
  for (int i = 0; i < values.size(); ++i) {
    const double x =
        values.size() == 1 ? r.center().x() : r.left() + r.width() * i / (values.size() - 1);
    const double y =
        hi > lo ? r.bottom() - r.height() * (values[i].toDouble() - lo) / span : r.center().y();
    if (i == 0)
      path.moveTo(x, y);
    else
      path.lineTo(x, y);
  }
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 1.5));
  painter->drawPath(path);
  painter->setBrush(QColor(0x1f, 0x77, 0xb4));
  painter->drawEllipse(path.currentPosition(), 2, 2);
  painter->restore();
}

QSize SparklineDelegate::sizeHint(const QStyleOptionViewItem& option,
                                  const QModelIndex& index) const {
  return QStyledItemDelegate::sizeHint(option, index).expandedTo(QSize(120, 20));
}

}  // namespace tscope::gui
