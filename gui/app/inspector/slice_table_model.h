#pragma once
// SliceTableModel: a 2-D slice of a tensor as a table. Rank 0 and 1 show as one row (1 x 1,
// 1 x n); for rank >= 2 the rows and columns are two chosen axes (the last two by default) and
// every other axis is held at a chosen index.
//
//   value of shape (4, 2, 3); setFixedIndex(0, 1)  ->  a 2 x 3 table of value[1, :, :]

#include "engine/tensor/tensor.h"

#include <QAbstractTableModel>

#include <vector>

namespace tscope::gui {

class SliceTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  // Rows and columns beyond this are not shown (a view of millions of sections is unusable).
  static constexpr int kMaxExtent = 100000;

  explicit SliceTableModel(QObject* parent = nullptr);

  // The tensor is a snapshot (it shares the value's storage, which is never written while shown).
  // Resets the axes to the last two and the other indices to 0. An undefined tensor clears.
  void setTensor(const engine::Tensor& tensor);
  const engine::Tensor& tensor() const { return m_tensor; }

  // The axes shown as rows and columns (rank >= 2; distinct). Throws std::out_of_range otherwise.
  void setSliceAxes(int rowAxis, int columnAxis);
  int rowAxis() const { return m_rowAxis; }
  int columnAxis() const { return m_columnAxis; }
  // The index of an axis that is not shown; throws std::out_of_range for a shown axis or an index
  // outside the axis.
  void setFixedIndex(int axis, std::int64_t index);
  std::int64_t fixedIndex(int axis) const { return m_fixed.at(static_cast<std::size_t>(axis)); }
  // The axes held at a fixed index, in order.
  std::vector<int> fixedAxes() const;
  // True when the slice has more rows or columns than are shown.
  bool truncated() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  // DisplayRole: the element as text; Qt::UserRole: as a double; TextAlignmentRole: right.
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

  // Editable cells (the debugger's values at a pause): a number typed into a cell is reported by
  // elementEdited with the element's full index; the shown tensor (a snapshot) does not change.
  void setEditable(bool editable);
  bool isEditable() const { return m_editable; }
  // The full index of the element shown in a cell.
  std::vector<std::int64_t> elementIndex(int row, int column) const;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 signals:
  void elementEdited(std::vector<std::int64_t> index, double value);

 private:
  void rebuildSlice();
  std::int64_t extent(int axis) const;

  engine::Tensor m_tensor;
  engine::Tensor m_slice;  // a view of rank <= 2: (rows, columns), (columns) or ()
  int m_rowAxis = -1, m_columnAxis = -1;
  std::vector<std::int64_t> m_fixed;
  bool m_editable = false;
};

// An element as the table and the inspector show it: integers exactly, floats with 6 significant
// digits, bools as true/false.
QString formatElement(double value, engine::DType dtype);

}  // namespace tscope::gui
