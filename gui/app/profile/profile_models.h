#pragma once
// The profiler's tables as Qt models over a ProfileView snapshot (profile_view.h): Apply, Ops,
// Class (flat tables) and the Scope tree, with the columns and names of the text report
// (profiling/report.h): "% time", "self time", "total", "per call", "p95", "#call", ...; "self"
// and "total" as Note [Self and total time] (profiling/aggregate.h) defines them. The text report's
// "sum %" (a running sum down the sorted rows) is left out: a sortable view has no one order.
//
//   auto* model = new ApplyTableModel(this);
//   model->setView(view);                            // resets
//   auto* proxy = makeProfileProxy(model, this);     // sorts by value, filters every column
//   proxy->setFilterFixedString("gemm");
//
// Qt::DisplayRole gives the formatted text, kSortRole the number (or text) to sort by, and
// kNodesRole the profile node indices a row stands for (QList<int>): what the window selects on
// the graph when the row is chosen.

#include "gui/app/profile/profile_view.h"

#include <QAbstractItemModel>
#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include <memory>
#include <vector>

namespace tscope::gui {

inline constexpr int kSortRole = Qt::UserRole + 1;
inline constexpr int kNodesRole = Qt::UserRole + 2;

class ApplyTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Share,
    Self,
    Total,
    PerCall,
    P95,
    Calls,
    Gflops,
    Gbps,
    Intensity,
    Roof,
    Node,
    Op,
    ColumnCount
  };
  using QAbstractTableModel::QAbstractTableModel;
  void setView(std::shared_ptr<const ProfileView> view);
  const std::shared_ptr<const ProfileView>& view() const { return m_view; }
  // The row of a profile node, -1 when it has none (it never ran).
  int rowOfNode(int profileNode) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct RoofFigures {
    bool known = false;
    double gflops = 0, gbps = 0, intensity = 0, fraction = 0;
  };
  std::shared_ptr<const ProfileView> m_view;
  std::vector<RoofFigures> m_roof;  // by row
  std::vector<int> m_rowOfNode;     // by profile node
};

// The Class table (rows by Op::name()) or the Ops table (by Op::str()).
class GroupTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum class Kind { Classes, Ops };
  enum Column { Share, Self, PerCall, P95, Calls, Applies, Name, ColumnCount };
  GroupTableModel(Kind kind, QObject* parent = nullptr);
  void setView(std::shared_ptr<const ProfileView> view);
  // The row holding a profile node, -1 when none.
  int rowOfNode(int profileNode) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  Kind m_kind;
  std::shared_ptr<const ProfileView> m_view;
  std::vector<QList<int>> m_nodes;  // by row
  std::vector<int> m_rowOfNode;
};

// The scope tree: the root "(all)" with every scope below it, children by inclusive time.
class ScopeTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { Name, ShareIncl, Inclusive, Exclusive, Applies, ColumnCount };
  using QAbstractItemModel::QAbstractItemModel;
  void setView(std::shared_ptr<const ProfileView> view);
  // The index of the innermost scope holding a profile node (column 0), invalid when none.
  QModelIndex indexOfNode(int profileNode) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Entry {
    int row = 0;  // among its parent's children
    int parent = -1;
    std::vector<int> children;
    QList<int> nodes;  // profile nodes in the scope or below it
  };
  std::shared_ptr<const ProfileView> m_view;
  std::vector<Entry> m_entries;  // parallel to m_view->tables.scopes
  std::unordered_map<std::string, int> m_byPath;
};

// A proxy sorting by kSortRole and filtering (case-insensitive) on every column; for the tree,
// a scope shows when it or one below it matches.
QSortFilterProxyModel* makeProfileProxy(QAbstractItemModel* source, QObject* parent);

}  // namespace tscope::gui
