#include "gui/app/profile/profile_models.h"

#include "profiling/report.h"
#include "profiling/roofline.h"

#include <QRegularExpression>

#include <algorithm>

namespace tscope::gui {

namespace {

QString seconds(double s) {
  return QString::fromStdString(prof::formatSeconds(s));
}
QString share(double f) {
  return QString::fromStdString(prof::formatShare(f));
}
QString fixed(double v) {
  return QString::number(v, 'f', 2);
}

// "Elemwise{add} (layer1) [4x4, 4]": the Apply table's last column, as the report writes it.
QString opText(const prof::NodeProfile& node) {
  QString text = QString::fromStdString(node.op);
  if (!node.scope.empty()) text += QStringLiteral(" (%1)").arg(QString::fromStdString(node.scope));
  if (!node.inputShapes.empty()) {
    QStringList shapes;
    for (const engine::Shape& s : node.inputShapes)
      shapes << QString::fromStdString(engine::shapeToString(s));
    text += QStringLiteral(" [%1]").arg(shapes.join(QStringLiteral(", ")));
  }
  // What the kernel said about how it ran the node (the chosen cuDNN algorithm), as the text
  // report writes it.
  if (!node.kernelNote.empty())
    text += QStringLiteral(" {%1}").arg(QString::fromStdString(node.kernelNote));
  return text;
}

QVariant alignment(int column, int textColumnsFrom) {
  return column >= textColumnsFrom ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
}

// Whether a node lies in a scope: the scope itself or one below it.
bool inScope(const std::string& nodeScope, const std::string& scope) {
  if (scope.empty()) return true;
  return nodeScope == scope ||
         (nodeScope.size() > scope.size() && nodeScope.compare(0, scope.size(), scope) == 0 &&
          nodeScope[scope.size()] == '/');
}

class ProfileProxy : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    const QRegularExpression& filter = filterRegularExpression();
    if (filter.pattern().isEmpty()) return true;
    QAbstractItemModel* m = sourceModel();
    for (int c = 0; c < m->columnCount(parent); ++c)
      if (filter.match(m->index(row, c, parent).data().toString()).hasMatch()) return true;
    return false;
  }
};

}  // namespace

// --- Apply ---

void ApplyTableModel::setView(std::shared_ptr<const ProfileView> view) {
  beginResetModel();
  m_view = std::move(view);
  m_roof.clear();
  m_rowOfNode.clear();
  if (m_view) {
    const prof::Profile& p = *m_view->profile;
    m_rowOfNode.assign(p.nodes.size(), -1);
    for (std::size_t r = 0; r < m_view->tables.applies.size(); ++r) {
      const prof::ApplyRow& row = m_view->tables.applies[r];
      m_rowOfNode[static_cast<std::size_t>(row.node)] = static_cast<int>(r);
      const prof::NodeProfile& node = p.nodes[static_cast<std::size_t>(row.node)];
      RoofFigures roof;
      if (m_view->calibration && node.cost.known) {
        const prof::RooflinePoint pt =
            prof::roofline(node.cost, row.perCall, *m_view->calibration, p.function.threads != 1);
        roof = {pt.known, pt.gflops, pt.gbps, pt.intensity, pt.fraction};
      }
      m_roof.push_back(roof);
    }
  }
  endResetModel();
}

int ApplyTableModel::rowOfNode(int profileNode) const {
  if (profileNode < 0 || static_cast<std::size_t>(profileNode) >= m_rowOfNode.size()) return -1;
  return m_rowOfNode[static_cast<std::size_t>(profileNode)];
}

int ApplyTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_view ? 0 : static_cast<int>(m_view->tables.applies.size());
}
int ApplyTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant ApplyTableModel::data(const QModelIndex& index, int role) const {
  if (!m_view || !checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto r = static_cast<std::size_t>(index.row());
  const prof::ApplyRow& row = m_view->tables.applies[r];
  const prof::NodeProfile& node = m_view->profile->nodes[static_cast<std::size_t>(row.node)];
  const RoofFigures& roof = m_roof[r];
  const int c = index.column();
  if (role == kNodesRole) return QVariant::fromValue(QList<int>{static_cast<int>(row.node)});
  if (role == Qt::TextAlignmentRole) return alignment(c, Node);
  if (role == kSortRole) {
    switch (c) {
      case Share:
        return row.share;
      case Self:
        return row.selfSeconds;
      case Total:
        return row.totalSeconds;
      case PerCall:
        return row.perCall;
      case P95:
        return row.p95;
      case Calls:
        return static_cast<qlonglong>(row.calls);
      case Gflops:
        return roof.known ? roof.gflops : -1.0;
      case Gbps:
        return roof.known ? roof.gbps : -1.0;
      case Intensity:
        return roof.known ? roof.intensity : -1.0;
      case Roof:
        return roof.known ? roof.fraction : -1.0;
      case Node:
        return static_cast<qlonglong>(row.node);
      case Op:
        return opText(node);
    }
  }
  if (role == Qt::DisplayRole) {
    switch (c) {
      case Share:
        return share(row.share);
      case Self:
        return seconds(row.selfSeconds);
      case Total:
        return seconds(row.totalSeconds);
      case PerCall:
        return seconds(row.perCall);
      case P95:
        return seconds(row.p95);
      case Calls:
        return static_cast<qlonglong>(row.calls);
      case Gflops:
        return roof.known ? fixed(roof.gflops) : QStringLiteral("-");
      case Gbps:
        return roof.known ? fixed(roof.gbps) : QStringLiteral("-");
      case Intensity:
        return roof.known ? fixed(roof.intensity) : QStringLiteral("-");
      case Roof:
        return roof.known ? share(roof.fraction) : QStringLiteral("-");
      case Node:
        return profileNodeName(node);
      case Op:
        return opText(node);
    }
  }
  if (role == Qt::ToolTipRole && c == Total && node.hasInnerGraph)
    return tr("Total includes the nodes of its inner graph; self time excludes them");
  if (role == Qt::ToolTipRole && c == Op && !node.kernelNote.empty())
    return tr("Kernel: %1").arg(QString::fromStdString(node.kernelNote));
  return {};
}

QVariant ApplyTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kHeaders[ColumnCount] = {
      "% time",  "self time", "total",  "per call", "p95",  "#call",
      "GFLOP/s", "GB/s",      "flop/B", "% roof",   "node", "op (scope) [input shapes]"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(kHeaders[section])
                                               : QVariant();
}

// --- Class and Ops ---

GroupTableModel::GroupTableModel(Kind kind, QObject* parent)
    : QAbstractTableModel(parent), m_kind(kind) {}

void GroupTableModel::setView(std::shared_ptr<const ProfileView> view) {
  beginResetModel();
  m_view = std::move(view);
  m_nodes.clear();
  m_rowOfNode.clear();
  if (m_view) {
    const auto& rows = m_kind == Kind::Classes ? m_view->tables.classes : m_view->tables.ops;
    std::unordered_map<std::string, int> rowOf;
    for (std::size_t r = 0; r < rows.size(); ++r) rowOf.emplace(rows[r].name, static_cast<int>(r));
    m_nodes.resize(rows.size());
    m_rowOfNode.assign(m_view->profile->nodes.size(), -1);
    for (std::size_t i = 0; i < m_view->profile->nodes.size(); ++i) {
      const prof::NodeProfile& node = m_view->profile->nodes[i];
      auto it = rowOf.find(m_kind == Kind::Classes ? node.opClass : node.op);
      if (it == rowOf.end() || node.calls == 0) continue;
      m_nodes[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(i));
      m_rowOfNode[i] = it->second;
    }
  }
  endResetModel();
}

int GroupTableModel::rowOfNode(int profileNode) const {
  if (profileNode < 0 || static_cast<std::size_t>(profileNode) >= m_rowOfNode.size()) return -1;
  return m_rowOfNode[static_cast<std::size_t>(profileNode)];
}

int GroupTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_view) return 0;
  return static_cast<int>(m_nodes.size());
}
int GroupTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant GroupTableModel::data(const QModelIndex& index, int role) const {
  if (!m_view || !checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& rows = m_kind == Kind::Classes ? m_view->tables.classes : m_view->tables.ops;
  const prof::GroupRow& row = rows[static_cast<std::size_t>(index.row())];
  const int c = index.column();
  if (role == kNodesRole)
    return QVariant::fromValue(m_nodes[static_cast<std::size_t>(index.row())]);
  if (role == Qt::TextAlignmentRole) return alignment(c, Name);
  if (role == kSortRole) {
    switch (c) {
      case Share:
        return row.share;
      case Self:
        return row.selfSeconds;
      case PerCall:
        return row.perCall;
      case P95:
        return row.p95;
      case Calls:
        return static_cast<qlonglong>(row.calls);
      case Applies:
        return static_cast<qlonglong>(row.applies);
      case Name:
        return QString::fromStdString(row.name);
    }
  }
  if (role == Qt::DisplayRole) {
    switch (c) {
      case Share:
        return share(row.share);
      case Self:
        return seconds(row.selfSeconds);
      case PerCall:
        return seconds(row.perCall);
      case P95:
        return seconds(row.p95);
      case Calls:
        return static_cast<qlonglong>(row.calls);
      case Applies:
        return static_cast<qlonglong>(row.applies);
      case Name:
        return QString::fromStdString(row.name);
    }
  }
  if (role == Qt::ToolTipRole && c == P95)
    return tr("The largest p95 of its nodes (a bound, not a percentile of the group)");
  return {};
}

QVariant GroupTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kHeaders[ColumnCount] = {"% time", "self time", "per call", "p95",
                                                    "#call",  "#apply",    "name"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(kHeaders[section])
                                               : QVariant();
}

// --- Scope tree ---

void ScopeTreeModel::setView(std::shared_ptr<const ProfileView> view) {
  beginResetModel();
  m_view = std::move(view);
  m_entries.clear();
  m_byPath.clear();
  if (m_view) {
    const auto& scopes = m_view->tables.scopes;
    m_entries.resize(scopes.size());
    std::vector<int> stack;  // the open ancestors, by depth (rows are depth-first)
    for (std::size_t i = 0; i < scopes.size(); ++i) {
      const auto depth = static_cast<std::size_t>(std::max(0, scopes[i].depth));
      stack.resize(std::min(stack.size(), depth));
      Entry& e = m_entries[i];
      e.parent = stack.empty() ? -1 : stack.back();
      if (e.parent >= 0) {
        Entry& p = m_entries[static_cast<std::size_t>(e.parent)];
        e.row = static_cast<int>(p.children.size());
        p.children.push_back(static_cast<int>(i));
      } else {
        e.row = 0;
      }
      stack.push_back(static_cast<int>(i));
      m_byPath.emplace(scopes[i].path, static_cast<int>(i));
    }
    for (std::size_t n = 0; n < m_view->profile->nodes.size(); ++n) {
      const prof::NodeProfile& node = m_view->profile->nodes[n];
      if (node.calls == 0) continue;
      for (std::size_t i = 0; i < scopes.size(); ++i)
        if (inScope(node.scope, scopes[i].path)) m_entries[i].nodes.push_back(static_cast<int>(n));
    }
  }
  endResetModel();
}

QModelIndex ScopeTreeModel::indexOfNode(int profileNode) const {
  if (!m_view || profileNode < 0 ||
      static_cast<std::size_t>(profileNode) >= m_view->profile->nodes.size())
    return {};
  const auto it =
      m_byPath.find(m_view->profile->nodes[static_cast<std::size_t>(profileNode)].scope);
  if (it == m_byPath.end()) return {};
  return createIndex(m_entries[static_cast<std::size_t>(it->second)].row, 0,
                     static_cast<quintptr>(it->second));
}

QModelIndex ScopeTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!m_view || row < 0 || column < 0 || column >= ColumnCount) return {};
  if (!parent.isValid()) {
    // The top level holds the root scope only (the first row of the depth-first list).
    return row == 0 && !m_entries.empty() ? createIndex(0, column, quintptr(0)) : QModelIndex();
  }
  if (parent.column() != 0) return {};
  const Entry& p = m_entries[parent.internalId()];
  if (row >= static_cast<int>(p.children.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(p.children[static_cast<std::size_t>(row)]));
}

QModelIndex ScopeTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || !m_view) return {};
  const int p = m_entries[child.internalId()].parent;
  if (p < 0) return {};
  return createIndex(m_entries[static_cast<std::size_t>(p)].row, 0, static_cast<quintptr>(p));
}

int ScopeTreeModel::rowCount(const QModelIndex& parent) const {
  if (!m_view) return 0;
  if (!parent.isValid()) return m_entries.empty() ? 0 : 1;
  if (parent.column() != 0) return 0;
  return static_cast<int>(m_entries[parent.internalId()].children.size());
}
int ScopeTreeModel::columnCount(const QModelIndex&) const {
  return ColumnCount;
}

QVariant ScopeTreeModel::data(const QModelIndex& index, int role) const {
  if (!m_view || !checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto i = static_cast<std::size_t>(index.internalId());
  const prof::ScopeRow& row = m_view->tables.scopes[i];
  const int c = index.column();
  if (role == kNodesRole) return QVariant::fromValue(m_entries[i].nodes);
  if (role == Qt::TextAlignmentRole) return alignment(c == Name ? ColumnCount : c, ColumnCount);
  if (role == kSortRole) {
    switch (c) {
      case Name:
        return QString::fromStdString(row.name);
      case ShareIncl:
        return row.share;
      case Inclusive:
        return row.inclusive;
      case Exclusive:
        return row.exclusive;
      case Applies:
        return static_cast<qlonglong>(row.applies);
    }
  }
  if (role == Qt::DisplayRole) {
    switch (c) {
      case Name:
        return QString::fromStdString(row.name);
      case ShareIncl:
        return share(row.share);
      case Inclusive:
        return seconds(row.inclusive);
      case Exclusive:
        return seconds(row.exclusive);
      case Applies:
        return static_cast<qlonglong>(row.applies);
    }
  }
  if (role == Qt::ToolTipRole && c == Name)
    return row.path.empty() ? tr("Every node") : QString::fromStdString(row.path);
  return {};
}

QVariant ScopeTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kHeaders[ColumnCount] = {"scope", "% incl", "inclusive", "exclusive",
                                                    "#apply"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(kHeaders[section])
                                               : QVariant();
}

QSortFilterProxyModel* makeProfileProxy(QAbstractItemModel* source, QObject* parent) {
  auto* proxy = new ProfileProxy(parent);
  proxy->setSourceModel(source);
  proxy->setSortRole(kSortRole);
  proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy->setRecursiveFilteringEnabled(true);
  return proxy;
}

}  // namespace tscope::gui
