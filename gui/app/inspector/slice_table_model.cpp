#include "gui/app/inspector/slice_table_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace tscope::gui {

QString formatElement(double value, engine::DType dtype) {
  if (dtype == engine::DType::Bool)
    return value != 0 ? QStringLiteral("true") : QStringLiteral("false");
  if (engine::isInteger(dtype) && std::isfinite(value))
    return QString::number(static_cast<qlonglong>(value));
  if (std::isnan(value)) return QStringLiteral("nan");
  if (std::isinf(value)) return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return QString::number(value, 'g', 6);
}

SliceTableModel::SliceTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void SliceTableModel::setTensor(const engine::Tensor& tensor) {
  beginResetModel();
  m_tensor = tensor;
  const int rank = tensor.defined() ? tensor.ndim() : 0;
  m_rowAxis = rank >= 2 ? rank - 2 : -1;
  m_columnAxis = rank >= 2 ? rank - 1 : (rank == 1 ? 0 : -1);
  m_fixed.assign(static_cast<std::size_t>(rank), 0);
  rebuildSlice();
  endResetModel();
}

void SliceTableModel::setSliceAxes(int rowAxis, int columnAxis) {
  const int rank = m_tensor.defined() ? m_tensor.ndim() : 0;
  if (rank < 2 || rowAxis == columnAxis || rowAxis < 0 || columnAxis < 0 || rowAxis >= rank ||
      columnAxis >= rank)
    throw std::out_of_range("SliceTableModel: axes " + std::to_string(rowAxis) + " and " +
                            std::to_string(columnAxis) + " are not two distinct axes of a rank-" +
                            std::to_string(rank) + " value");
  beginResetModel();
  m_rowAxis = rowAxis;
  m_columnAxis = columnAxis;
  rebuildSlice();
  endResetModel();
}

void SliceTableModel::setFixedIndex(int axis, std::int64_t index) {
  const std::vector<int> fixed = fixedAxes();
  if (std::find(fixed.begin(), fixed.end(), axis) == fixed.end())
    throw std::out_of_range("SliceTableModel: axis " + std::to_string(axis) +
                            " is not held at a fixed index");
  if (index < 0 || index >= extent(axis))
    throw std::out_of_range("SliceTableModel: index " + std::to_string(index) +
                            " is outside axis " + std::to_string(axis) + " of size " +
                            std::to_string(extent(axis)));
  if (m_fixed[static_cast<std::size_t>(axis)] == index) return;
  // The table keeps its size (the shown axes did not change): only the cells change.
  m_fixed[static_cast<std::size_t>(axis)] = index;
  rebuildSlice();
  if (rowCount() > 0 && columnCount() > 0)
    emit dataChanged(this->index(0, 0), this->index(rowCount() - 1, columnCount() - 1));
}

std::vector<int> SliceTableModel::fixedAxes() const {
  std::vector<int> axes;
  for (int a = 0; a < static_cast<int>(m_fixed.size()); ++a)
    if (a != m_rowAxis && a != m_columnAxis) axes.push_back(a);
  return axes;
}

std::int64_t SliceTableModel::extent(int axis) const {
  return m_tensor.shape().at(static_cast<std::size_t>(axis));
}

bool SliceTableModel::truncated() const {
  return (m_rowAxis >= 0 && extent(m_rowAxis) > kMaxExtent) ||
         (m_columnAxis >= 0 && extent(m_columnAxis) > kMaxExtent);
}

void SliceTableModel::rebuildSlice() {
  if (!m_tensor.defined()) {
    m_slice = {};
    return;
  }
  engine::Tensor s = m_tensor;
  // Select the fixed axes from the last to the first so the remaining axis numbers stay valid.
  const std::vector<int> fixed = fixedAxes();
  for (auto it = fixed.rbegin(); it != fixed.rend(); ++it)
    s = s.select(*it, m_fixed[static_cast<std::size_t>(*it)]);
  // Rows before columns: transpose when the row axis comes after the column axis.
  if (s.ndim() == 2 && m_rowAxis > m_columnAxis) s = s.transpose();
  m_slice = s;
}

int SliceTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_slice.defined()) return 0;
  if (m_slice.ndim() < 2) return m_slice.numel() == 0 ? 0 : 1;
  return static_cast<int>(std::min<std::int64_t>(m_slice.shape()[0], kMaxExtent));
}

int SliceTableModel::columnCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_slice.defined()) return 0;
  if (m_slice.ndim() == 0) return 1;
  return static_cast<int>(std::min<std::int64_t>(m_slice.shape().back(), kMaxExtent));
}

QVariant SliceTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::UserRole && role != Qt::ToolTipRole) return {};
  double v = 0;
  switch (m_slice.ndim()) {
    case 0:
      v = m_slice.item();
      break;
    case 1:
      v = m_slice.at({index.column()});
      break;
    default:
      v = m_slice.at({index.row(), index.column()});
      break;
  }
  if (role == Qt::UserRole) return v;
  return formatElement(v, m_slice.dtype());
}

void SliceTableModel::setEditable(bool editable) {
  if (editable == m_editable) return;
  m_editable = editable;
  if (rowCount() > 0 && columnCount() > 0)
    emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

std::vector<std::int64_t> SliceTableModel::elementIndex(int row, int column) const {
  std::vector<std::int64_t> full = m_fixed;
  if (m_columnAxis >= 0) full[static_cast<std::size_t>(m_columnAxis)] = column;
  if (m_rowAxis >= 0) full[static_cast<std::size_t>(m_rowAxis)] = row;
  return full;
}

Qt::ItemFlags SliceTableModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (m_editable && index.isValid()) f |= Qt::ItemIsEditable;
  return f;
}

bool SliceTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!m_editable || role != Qt::EditRole ||
      !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return false;
  const QString text = value.toString().trimmed().toLower();
  bool ok = false;
  double v = text.toDouble(&ok);
  if (text == QLatin1String("nan")) v = std::nan(""), ok = true;
  if (text == QLatin1String("inf") || text == QLatin1String("-inf"))
    v = text.startsWith('-') ? -INFINITY : INFINITY, ok = true;
  if (!ok) return false;
  emit elementEdited(elementIndex(index.row(), index.column()), v);
  return true;
}

QVariant SliceTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  if (orientation == Qt::Vertical && m_rowAxis < 0) return QString();  // rank 0/1: one unnamed row
  return QString::number(section);
}

}  // namespace tscope::gui
