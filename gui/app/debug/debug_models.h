#pragma once
// The debugger docks' models, over a DebugController (each follows its signals):
//   BreakpointModel  enable/disable checkbox and spec, hits, where it landed (BreakpointInfo)
//   CallStackModel   the frames of the latest pause, innermost first
//   WatchModel       chosen variables: statistics at each pause, a history across pauses and runs
//                    (Qt::UserRole of the History column: a QVariantList of means;
//                    SparklineDelegate draws it)
//   AlertsModel      every NanGuard event: check, node, output, first bad index and value, counts

#include "gui/app/debug/debug_controller.h"

#include <QAbstractTableModel>
#include <QStyledItemDelegate>

namespace tscope::gui {

class BreakpointModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Spec, Hits, Where, ColumnCount };
  explicit BreakpointModel(DebugController* controller, QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  DebugController* m_controller;
  int m_rows = 0;
};

class CallStackModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Frame, Next, Position, ColumnCount };
  explicit CallStackModel(DebugController* controller, QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  // The frame index (0: outer) of a row.
  std::size_t frameOf(int row) const;
  const engine::debug::SessionState& state() const { return m_state; }

 private:
  engine::debug::SessionState m_state;
};

class WatchModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Stats, NonFinite, History, ColumnCount };
  static constexpr int kHistory = 64;  // values kept per watch
  explicit WatchModel(DebugController* controller, QObject* parent = nullptr);
  void addWatch(const QString& name);  // a variable name of the outer frame (or "node:ID")
  void removeWatch(int row);
  QStringList watches() const;
  // The means recorded for a watch, oldest first.
  QVector<double> history(int row) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  void update(const std::shared_ptr<const DebugSnapshot>& snapshot);
  struct Watch {
    QString name;
    std::optional<DebugValue> value;  // at the latest pause
    QVector<double> history;
  };
  std::vector<Watch> m_watches;
  std::shared_ptr<const DebugSnapshot> m_snapshot;
  std::uint64_t m_lastSerial = 0;
};

class AlertsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Check, Node, Output, FirstBad, Counts, Creator, ColumnCount };
  explicit AlertsModel(DebugController* controller, QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  std::shared_ptr<const engine::debug::NanReport> report(int row) const;

 private:
  std::vector<std::shared_ptr<const engine::debug::NanReport>> m_events;
};

// Draws a QVariantList of numbers (Qt::UserRole) as a small line.
class SparklineDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void paint(QPainter* painter, const QStyleOptionViewItem& option,
             const QModelIndex& index) const override;
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

}  // namespace tscope::gui
