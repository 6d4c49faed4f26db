#pragma once
// RewriteHistoryPanel: the rewrite history dock's contents. The log as a table (filter by
// rewriter and by text); selecting a record replays the graphs before and after it on a worker
// and emits them with what the record removed and added; a slider steps through the
// optimization one rewrite at a time and emits the graph at each step.
//
// The log holds ids only, so every graph shown is rebuilt by replaying the optimizer
// (engine/session/replay_rewrites.h). When a document is set the panel first checks on a worker
// that the replay reproduces the log; until then requests wait, and if it does not the panel says
// why (replayUnavailable) and stepping stays off while the table still reads.

#include "engine/rewrite/rewrite_db.h"
#include "gui/app/document.h"

#include <QSet>
#include <QWidget>

#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QLineEdit;
class QSlider;
class QStackedWidget;
class QTableView;
class QTimer;
class QToolButton;

namespace tscope::gui {

class RewriteLogModel;
class RewriteFilterModel;

class RewriteHistoryPanel : public QWidget {
  Q_OBJECT

 public:
  enum class State { NoDocument, NoRewrites, Checking, Ready, Unavailable };

  explicit RewriteHistoryPanel(QWidget* parent = nullptr);

  void setDocument(std::shared_ptr<const Document> document);

  State state() const { return m_state; }
  // What the panel says about itself: why there is no history, the check in progress, the reason
  // stepping is unavailable; empty when ready.
  QString message() const;
  // A replay job is running.
  bool isBusy() const { return m_runningJobs > 0; }

  // Selects record `order` in the table (clearing filters that hide it); emits stepSelected once
  // the replay is done.
  void selectRecord(int order);
  // Moves the slider (0 .. number of records); stepGraphReady follows after the debounce.
  void setStep(int step);
  int step() const;
  QString stepText() const;

  void setRewriterFilter(const QString& rewriter);  // "" for all
  void setTextFilter(const QString& text);
  RewriteLogModel* logModel() const { return m_log; }
  RewriteFilterModel* filterModel() const { return m_filter; }
  QTableView* table() const { return m_table; }

 signals:
  // The user selected record `order`: the graphs before and after it (replayed on a worker) and
  // the ViewModel node indices it removed (in `before`) and added (in `after`).
  void stepSelected(int order, std::shared_ptr<const vis::ViewModel> before,
                    std::shared_ptr<const vis::ViewModel> after, QSet<int> removedNodes,
                    QSet<int> addedNodes);
  // The slider moved: the graph after the first `step` rewrites (0 = original).
  void stepGraphReady(int step, std::shared_ptr<const vis::ViewModel> graphAtStep);
  // The replay cannot reproduce the log (or a replay failed): the reason, for a status line.
  void replayUnavailable(const QString& message);

 private:
  void setState(State state, const QString& message = {});
  void onCheckDone(std::optional<engine::RewriteQuery> query, const QString& error);
  void onCurrentRowChanged();
  void runSelectedStep();
  void runSliderStep();
  void updateStepLabel();
  void rebuildRewriterCombo();
  void fitColumns();

  std::shared_ptr<const Document> m_document;
  std::optional<engine::RewriteQuery> m_query;
  State m_state = State::NoDocument;
  QString m_message;
  // Job counters: a result is used only when its counter is still the latest (stale results of
  // earlier selections, slider positions or documents are dropped).
  quint64 m_generation = 0, m_selectJob = 0, m_sliderJob = 0;
  int m_runningJobs = 0;
  int m_pendingOrder = -1;       // the selected record, waiting for the check
  bool m_pendingSlider = false;  // the slider moved while the check ran

  QStackedWidget* m_pages = nullptr;
  QLabel* m_emptyLabel = nullptr;
  QComboBox* m_rewriterCombo = nullptr;
  QLineEdit* m_textFilter = nullptr;
  QTableView* m_table = nullptr;
  RewriteLogModel* m_log = nullptr;
  RewriteFilterModel* m_filter = nullptr;
  QLabel* m_status = nullptr;
  QSlider* m_slider = nullptr;
  QToolButton *m_first = nullptr, *m_previous = nullptr, *m_next = nullptr, *m_last = nullptr;
  QLabel* m_stepLabel = nullptr;
  QTimer* m_debounce = nullptr;
};

}  // namespace tscope::gui
