#pragma once
// OutputTableModel: per node output bytes, with Theano's memory marks: how each output got its
// buffer, "created", "inplace" (it overwrote an input) or "view" (it aliases one)
// (NodeProfile::outputs). One row per output of every node that ran, largest first; or of a
// chosen set of nodes (the nodes alive at the memory peak).
//
//   auto* outputs = new OutputTableModel(this);
//   outputs->setView(view);                                 // every node
//   alive->setView(view, timeline->memory.aliveAtPeak);     // just these

#include "gui/app/profile/profile_view.h"

#include <QAbstractTableModel>

#include <memory>
#include <optional>
#include <vector>

namespace tscope::gui {

class OutputTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Bytes, Kind, Shape, DType, Output, Node, Op, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setView(std::shared_ptr<const ProfileView> view,
               std::optional<std::vector<int>> nodes = std::nullopt);
  // The first row of a profile node, -1 when none.
  int rowOfNode(int profileNode) const;
  double totalBytes() const;  // over the rows

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int node = 0;
    int output = 0;
  };
  std::shared_ptr<const ProfileView> m_view;
  std::vector<Row> m_rows;
};

}  // namespace tscope::gui
