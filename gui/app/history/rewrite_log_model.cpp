#include "gui/app/history/rewrite_log_model.h"

#include <algorithm>
#include <set>

namespace tscope::gui {

namespace {
QString idList(const std::vector<std::int64_t>& ids) {
  QStringList s;
  for (auto id : ids) s << QString::number(id);
  return s.join(", ");
}
}  // namespace

RewriteLogModel::RewriteLogModel(QObject* parent) : QAbstractTableModel(parent) {}

void RewriteLogModel::setRecords(
    std::shared_ptr<const std::vector<engine::RewriteRecord>> records) {
  beginResetModel();
  m_records = std::move(records);
  endResetModel();
}

const engine::RewriteRecord* RewriteLogModel::record(int row) const {
  if (!m_records || row < 0 || row >= static_cast<int>(m_records->size())) return nullptr;
  return &(*m_records)[static_cast<std::size_t>(row)];
}

QStringList RewriteLogModel::rewriters() const {
  std::set<std::string> names;
  if (m_records)
    for (const auto& r : *m_records) names.insert(r.reason);
  QStringList out;
  for (const auto& n : names) out << QString::fromStdString(n);
  return out;
}

int RewriteLogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_records ? 0 : static_cast<int>(m_records->size());
}

int RewriteLogModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant RewriteLogModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const engine::RewriteRecord& r = *record(index.row());
  if (role == kOrderRole) return static_cast<qulonglong>(r.order);
  if (role == Qt::TextAlignmentRole) {
    const bool number = index.column() != Phase && index.column() != Rewriter;
    return QVariant::fromValue((number ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  }
  if (role == Qt::ToolTipRole) {
    return tr("%1 in phase %2\nremoved nodes: %3\nadded nodes: %4\nreplaced variables: %5")
        .arg(QString::fromStdString(r.reason),
             QString::fromStdString(r.phase.empty() ? "-" : r.phase),
             idList(r.removedNodes).isEmpty() ? tr("none") : idList(r.removedNodes),
             idList(r.addedNodes).isEmpty() ? tr("none") : idList(r.addedNodes))
        .arg(r.replaced.size());
  }
  if (role != Qt::DisplayRole && role != kSortRole) return {};
  const bool sort = role == kSortRole;
  switch (index.column()) {
    case Order:
      return sort ? QVariant(static_cast<qulonglong>(r.order)) : QVariant(QString::number(r.order));
    case Phase:
      return QString::fromStdString(r.phase);
    case Rewriter:
      return QString::fromStdString(r.reason);
    case Removed:
      return sort ? QVariant(static_cast<qulonglong>(r.removedNodes.size()))
                  : QVariant(QString::number(r.removedNodes.size()));
    case Added:
      return sort ? QVariant(static_cast<qulonglong>(r.addedNodes.size()))
                  : QVariant(QString::number(r.addedNodes.size()));
    case Replaced:
      return sort ? QVariant(static_cast<qulonglong>(r.replaced.size()))
                  : QVariant(QString::number(r.replaced.size()));
    case Time:
      return sort ? QVariant(r.seconds) : QVariant(QString::number(r.seconds * 1e3, 'f', 3));
    default:
      return {};
  }
}

QVariant RewriteLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::ToolTipRole))
    return QAbstractTableModel::headerData(section, orientation, role);
  // The counts and the time are narrow columns with short titles, so the dock shows every column
  // next to the rewriter's name; the tooltips say what they count.
  const bool tip = role == Qt::ToolTipRole;
  switch (section) {
    case Order:
      return tip ? tr("Order of the change in the log") : tr("#");
    case Phase:
      return tip ? tr("Optimizer phase") : tr("Phase");
    case Rewriter:
      return tip ? tr("The rewrite that made the change") : tr("Rewriter");
    case Removed:
      return tip ? tr("Nodes removed") : tr("\u2212");
    case Added:
      return tip ? tr("Nodes added") : tr("+");
    case Replaced:
      return tip ? tr("Variables replaced (a merged constant removes no node but replaces a "
                      "variable)")
                 : tr("vars");
    case Time:
      return tip ? tr("Wall time of the change, in milliseconds") : tr("ms");
    default:
      return {};
  }
}

RewriteFilterModel::RewriteFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(RewriteLogModel::kSortRole);
}

void RewriteFilterModel::setRewriter(const QString& rewriter) {
  if (rewriter == m_rewriter) return;
  m_rewriter = rewriter;
  invalidateFilter();
}

void RewriteFilterModel::setText(const QString& text) {
  if (text == m_text) return;
  m_text = text;
  invalidateFilter();
}

bool RewriteFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  const auto* log = qobject_cast<const RewriteLogModel*>(sourceModel());
  const engine::RewriteRecord* r =
      log && !sourceParent.isValid() ? log->record(sourceRow) : nullptr;
  if (!r) return false;
  const QString reason = QString::fromStdString(r->reason);
  if (!m_rewriter.isEmpty() && reason != m_rewriter) return false;
  const QString text = m_text.trimmed();
  if (text.isEmpty()) return true;
  if (reason.contains(text, Qt::CaseInsensitive) ||
      QString::fromStdString(r->phase).contains(text, Qt::CaseInsensitive))
    return true;
  bool isNumber = false;
  const qlonglong id = text.toLongLong(&isNumber);
  if (!isNumber) return false;
  auto has = [id](const std::vector<std::int64_t>& ids) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  return has(r->removedNodes) || has(r->addedNodes);
}

}  // namespace tscope::gui
