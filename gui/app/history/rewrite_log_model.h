#pragma once
// The rewrite log as a table (#, phase, rewriter, removed, added, time) and the filter the
// history dock puts in front of it (by rewriter name and by free text).

#include "engine/graph/rewrite_recorder.h"

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QStringList>

#include <memory>
#include <vector>

namespace tscope::gui {

class RewriteLogModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  // Replaced: the variables the change replaced (a merged constant removes no node but replaces
  // one).
  enum Column { Order, Phase, Rewriter, Removed, Added, Replaced, Time, ColumnCount };
  // Qt::UserRole on any column: the record's order (its row in the log).
  static constexpr int kOrderRole = Qt::UserRole;
  // Numbers sort as numbers under this role (the proxy's sort role).
  static constexpr int kSortRole = Qt::UserRole + 1;

  explicit RewriteLogModel(QObject* parent = nullptr);

  // A snapshot of the log (shared, never modified); null clears.
  void setRecords(std::shared_ptr<const std::vector<engine::RewriteRecord>> records);
  const engine::RewriteRecord* record(int row) const;
  // The distinct rewriter names, sorted (for the filter combo).
  QStringList rewriters() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const std::vector<engine::RewriteRecord>> m_records;
};

class RewriteFilterModel : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit RewriteFilterModel(QObject* parent = nullptr);
  // Only records of this rewriter (exact name); empty: every rewriter.
  void setRewriter(const QString& rewriter);
  const QString& rewriter() const { return m_rewriter; }
  // Only records whose phase or rewriter contains the text (case-insensitive), or that touch a
  // node whose id is the text.
  void setText(const QString& text);
  const QString& text() const { return m_text; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  QString m_rewriter;
  QString m_text;
};

}  // namespace tscope::gui
