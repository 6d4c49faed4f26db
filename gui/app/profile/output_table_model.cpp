#include "gui/app/profile/output_table_model.h"

#include "gui/app/profile/profile_models.h"
#include "profiling/report.h"

#include <algorithm>

namespace tscope::gui {

void OutputTableModel::setView(std::shared_ptr<const ProfileView> view,
                               std::optional<std::vector<int>> nodes) {
  beginResetModel();
  m_view = std::move(view);
  m_rows.clear();
  if (m_view) {
    const auto& all = m_view->profile->nodes;
    std::vector<int> chosen;
    if (nodes) {
      chosen = *nodes;
    } else {
      for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i].calls > 0) chosen.push_back(static_cast<int>(i));
    }
    for (int n : chosen) {
      if (n < 0 || static_cast<std::size_t>(n) >= all.size()) continue;
      for (std::size_t o = 0; o < all[static_cast<std::size_t>(n)].outputs.size(); ++o)
        m_rows.push_back({n, static_cast<int>(o)});
    }
    std::stable_sort(m_rows.begin(), m_rows.end(), [&](const Row& a, const Row& b) {
      return all[std::size_t(a.node)].outputs[std::size_t(a.output)].bytes >
             all[std::size_t(b.node)].outputs[std::size_t(b.output)].bytes;
    });
  }
  endResetModel();
}

int OutputTableModel::rowOfNode(int profileNode) const {
  for (std::size_t r = 0; r < m_rows.size(); ++r)
    if (m_rows[r].node == profileNode) return static_cast<int>(r);
  return -1;
}

double OutputTableModel::totalBytes() const {
  double total = 0;
  for (const Row& r : m_rows)
    total += static_cast<double>(
        m_view->profile->nodes[std::size_t(r.node)].outputs[std::size_t(r.output)].bytes);
  return total;
}

int OutputTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}
int OutputTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant OutputTableModel::data(const QModelIndex& index, int role) const {
  if (!m_view || !checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& row = m_rows[static_cast<std::size_t>(index.row())];
  const prof::NodeProfile& node = m_view->profile->nodes[static_cast<std::size_t>(row.node)];
  const prof::OutputInfo& out = node.outputs[static_cast<std::size_t>(row.output)];
  const int c = index.column();
  if (role == kNodesRole) return QVariant::fromValue(QList<int>{row.node});
  if (role == Qt::TextAlignmentRole)
    return c == Bytes || c == Output ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                     : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
  if (role == kSortRole && c == Bytes) return static_cast<qlonglong>(out.bytes);
  if (role == kSortRole && c == Output) return row.output;
  if (role == Qt::DisplayRole || role == kSortRole) {
    switch (c) {
      case Bytes:
        return QString::fromStdString(prof::formatBytes(double(out.bytes)));
      case Kind:
        return [&] {
          const std::string_view k = prof::outputKindName(out.kind);
          return QString::fromLatin1(k.data(), qsizetype(k.size()));
        }();
      case Shape:
        return QString::fromStdString(engine::shapeToString(out.shape));
      case DType:
        return QString::fromStdString(out.dtype);
      case Output:
        return row.output;
      case Node:
        return profileNodeName(node);
      case Op:
        return QString::fromStdString(node.op);
    }
  }
  if (role == Qt::ToolTipRole && c == Kind) {
    switch (out.kind) {
      case prof::OutputKind::Created:
        return tr("A new buffer");
      case prof::OutputKind::Inplace:
        return tr("Overwrote one of its inputs (destroyMap)");
      case prof::OutputKind::View:
        return tr("Aliases one of its inputs (viewMap)");
    }
  }
  return {};
}

QVariant OutputTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kHeaders[ColumnCount] = {"bytes",  "kind", "shape", "dtype",
                                                    "output", "node", "op"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(kHeaders[section])
                                               : QVariant();
}

}  // namespace tscope::gui
