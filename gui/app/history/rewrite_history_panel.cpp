#include "gui/app/history/rewrite_history_panel.h"

#include "engine/session/replay_rewrites.h"
#include "gui/app/history/rewrite_log_model.h"
#include "gui/app/history/rewrite_steps.h"
#include "visualizers/threads/hand_off.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSlider>
#include <QStackedWidget>
#include <QStyle>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace tscope::gui {

namespace {

constexpr int kDebounceMs = 100;

struct CheckResult {
  std::optional<engine::RewriteQuery> query;
  QString error;
};
struct StepResult {
  RewriteStep step;
  QString error;
};
struct GraphResult {
  std::shared_ptr<const vis::ViewModel> model;
  QString error;
};

QString errorText(const std::exception& e) {
  return QString::fromStdString(e.what());
}

}  // namespace

RewriteHistoryPanel::RewriteHistoryPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  m_pages = new QStackedWidget(this);
  outer->addWidget(m_pages);

  m_emptyLabel = new QLabel(m_pages);
  m_emptyLabel->setObjectName("historyEmpty");
  m_emptyLabel->setWordWrap(true);
  m_emptyLabel->setAlignment(Qt::AlignCenter);
  m_emptyLabel->setMargin(12);
  m_pages->addWidget(m_emptyLabel);

  auto* page = new QWidget(m_pages);
  auto* layout = new QVBoxLayout(page);
  auto* filters = new QHBoxLayout;
  m_rewriterCombo = new QComboBox(page);
  m_rewriterCombo->setObjectName("rewriterFilter");
  m_rewriterCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_textFilter = new QLineEdit(page);
  m_textFilter->setObjectName("historyTextFilter");
  m_textFilter->setPlaceholderText(tr("Filter by rewriter, phase or node id"));
  m_textFilter->setClearButtonEnabled(true);
  filters->addWidget(m_rewriterCombo);
  filters->addWidget(m_textFilter, 1);
  layout->addLayout(filters);

  m_log = new RewriteLogModel(this);
  m_filter = new RewriteFilterModel(this);
  m_filter->setSourceModel(m_log);
  m_table = new QTableView(page);
  m_table->setObjectName("historyTable");
  m_table->setModel(m_filter);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(RewriteLogModel::Order, Qt::AscendingOrder);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setStretchLastSection(false);
  layout->addWidget(m_table, 1);

  m_status = new QLabel(page);
  m_status->setObjectName("historyStatus");
  m_status->setWordWrap(true);
  layout->addWidget(m_status);

  auto* stepper = new QHBoxLayout;
  auto button = [&](QStyle::StandardPixmap icon, const QString& tip) {
    auto* b = new QToolButton(page);
    b->setIcon(style()->standardIcon(icon));
    b->setToolTip(tip);
    b->setAutoRaise(true);
    stepper->addWidget(b);
    return b;
  };
  m_first = button(QStyle::SP_MediaSkipBackward, tr("The original graph (step 0)"));
  m_previous = button(QStyle::SP_MediaSeekBackward, tr("One rewrite back"));
  m_slider = new QSlider(Qt::Horizontal, page);
  m_slider->setObjectName("historySlider");
  m_slider->setPageStep(10);
  stepper->addWidget(m_slider, 1);
  m_next = button(QStyle::SP_MediaSeekForward, tr("One rewrite forward"));
  m_last = button(QStyle::SP_MediaSkipForward, tr("The optimized graph (every rewrite)"));
  layout->addLayout(stepper);
  m_stepLabel = new QLabel(page);
  m_stepLabel->setObjectName("historyStepLabel");
  layout->addWidget(m_stepLabel);
  m_pages->addWidget(page);

  m_debounce = new QTimer(this);
  m_debounce->setSingleShot(true);
  m_debounce->setInterval(kDebounceMs);
  connect(m_debounce, &QTimer::timeout, this, &RewriteHistoryPanel::runSliderStep);
  connect(m_slider, &QSlider::valueChanged, this, [this] {
    updateStepLabel();
    m_debounce->start();
  });
  connect(m_first, &QToolButton::clicked, this, [this] { m_slider->setValue(0); });
  connect(m_previous, &QToolButton::clicked, this,
          [this] { m_slider->setValue(m_slider->value() - 1); });
  connect(m_next, &QToolButton::clicked, this,
          [this] { m_slider->setValue(m_slider->value() + 1); });
  connect(m_last, &QToolButton::clicked, this, [this] { m_slider->setValue(m_slider->maximum()); });
  connect(m_rewriterCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    m_filter->setRewriter(i <= 0 ? QString() : m_rewriterCombo->itemText(i));
  });
  connect(m_textFilter, &QLineEdit::textChanged, m_filter, &RewriteFilterModel::setText);
  connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          &RewriteHistoryPanel::onCurrentRowChanged);

  setDocument(nullptr);
}

QString RewriteHistoryPanel::message() const {
  return m_message;
}

void RewriteHistoryPanel::setState(State state, const QString& message) {
  m_state = state;
  m_message = message;
  const bool hasLog =
      state == State::Checking || state == State::Ready || state == State::Unavailable;
  m_pages->setCurrentIndex(hasLog ? 1 : 0);
  m_emptyLabel->setText(message);
  m_status->setText(message);
  m_status->setVisible(!message.isEmpty());
  const bool stepping = state == State::Ready || state == State::Checking;
  for (QWidget* w : std::initializer_list<QWidget*>{m_slider, m_first, m_previous, m_next, m_last})
    w->setEnabled(stepping);
}

void RewriteHistoryPanel::setDocument(std::shared_ptr<const Document> document) {
  ++m_generation;
  ++m_selectJob;
  ++m_sliderJob;
  m_debounce->stop();
  m_document = std::move(document);
  m_query.reset();
  m_pendingOrder = -1;
  m_pendingSlider = false;
  {
    const QSignalBlocker blockSlider(m_slider);
    const QSignalBlocker blockSelection(m_table->selectionModel());
    const QSignalBlocker blockText(m_textFilter);
    m_textFilter->clear();
    m_filter->setText({});
    m_filter->setRewriter({});
    // The model aliases the document's log: no copy, and it lives as long as the model shows it.
    if (m_document && !m_document->rewrites.empty())
      m_log->setRecords(std::shared_ptr<const std::vector<engine::RewriteRecord>>(
          m_document, &m_document->rewrites));
    else
      m_log->setRecords(nullptr);
    rebuildRewriterCombo();
    fitColumns();
    const int n = m_document ? static_cast<int>(m_document->rewrites.size()) : 0;
    m_slider->setRange(0, n);
    m_slider->setValue(n);  // the optimized graph, as the optimized tab shows it
  }
  updateStepLabel();
  if (!m_document) {
    setState(State::NoDocument, tr("Open a file to see the rewrites that optimized its graph."));
    return;
  }
  if (!m_document->optimized || m_document->rewrites.empty()) {
    setState(State::NoRewrites,
             m_document->optimized
                 ? tr("This file's optimized graph came without a rewrite log.")
                 : tr("This file has no optimized graph, so there are no rewrites to show. "
                      "Optimize it (tensorscope optimize FILE -o OUT.tsg) and open the result."));
    return;
  }
  setState(State::Checking, tr("Checking that the optimizer reproduces the log…"));
  const quint64 generation = m_generation;
  ++m_runningJobs;
  vis::runOnWorker(
      this,
      [doc = m_document] {
        CheckResult r;
        try {
          r.query =
              engine::session::checkedReplayQuery(*doc->original, doc->rewrites, doc->profiles);
        } catch (const std::exception& e) {
          r.error = errorText(e);
        }
        return r;
      },
      [this, generation](CheckResult r) {
        --m_runningJobs;
        if (generation == m_generation) onCheckDone(std::move(r.query), r.error);
      });
}

void RewriteHistoryPanel::onCheckDone(std::optional<engine::RewriteQuery> query,
                                      const QString& error) {
  if (!query) {
    setState(State::Unavailable, error);
    emit replayUnavailable(error);
    return;
  }
  m_query = std::move(query);
  setState(State::Ready);
  if (m_pendingOrder >= 0) runSelectedStep();
  if (m_pendingSlider) runSliderStep();
}

void RewriteHistoryPanel::fitColumns() {
  // A model reset drops per-section modes: numbers fit their contents (the table measures the
  // rows in view only), the rewriter's name takes the rest.
  QHeaderView* header = m_table->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::Interactive);
  m_table->resizeColumnsToContents();
  header->setSectionResizeMode(RewriteLogModel::Rewriter, QHeaderView::Stretch);
}

void RewriteHistoryPanel::rebuildRewriterCombo() {
  const QSignalBlocker block(m_rewriterCombo);
  m_rewriterCombo->clear();
  m_rewriterCombo->addItem(tr("All rewriters"));
  m_rewriterCombo->addItems(m_log->rewriters());
}

void RewriteHistoryPanel::setRewriterFilter(const QString& rewriter) {
  const int i = rewriter.isEmpty() ? 0 : m_rewriterCombo->findText(rewriter);
  if (i >= 0)
    m_rewriterCombo->setCurrentIndex(i);
  else
    m_filter->setRewriter(rewriter);  // a name not in this log: nothing matches, as asked
}

void RewriteHistoryPanel::setTextFilter(const QString& text) {
  m_textFilter->setText(text);
}

void RewriteHistoryPanel::selectRecord(int order) {
  if (!m_log->record(order)) return;
  QModelIndex proxy = m_filter->mapFromSource(m_log->index(order, 0));
  if (!proxy.isValid()) {  // hidden by a filter: show everything again
    setRewriterFilter({});
    setTextFilter({});
    proxy = m_filter->mapFromSource(m_log->index(order, 0));
  }
  m_table->selectionModel()->setCurrentIndex(
      proxy, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  m_table->scrollTo(proxy);
}

void RewriteHistoryPanel::onCurrentRowChanged() {
  const QModelIndex current = m_table->selectionModel()->currentIndex();
  if (!current.isValid()) return;
  m_pendingOrder = current.data(RewriteLogModel::kOrderRole).toInt();
  {
    // The slider follows the selection (the step right after the record) without replaying it:
    // the record's before/after comparison is what the window shows now.
    const QSignalBlocker block(m_slider);
    m_slider->setValue(m_pendingOrder + 1);
  }
  updateStepLabel();
  if (m_state == State::Ready) runSelectedStep();
}

void RewriteHistoryPanel::runSelectedStep() {
  const int order = m_pendingOrder;
  m_pendingOrder = -1;
  const quint64 job = ++m_selectJob;
  ++m_runningJobs;
  vis::runOnWorker(
      this,
      [doc = m_document, query = *m_query, order] {
        StepResult r;
        try {
          r.step = rewriteStep(doc, query, order);
        } catch (const std::exception& e) {
          r.error = errorText(e);
        }
        return r;
      },
      [this, job](StepResult r) {
        --m_runningJobs;
        if (job != m_selectJob) return;  // another record was selected meanwhile
        if (!r.error.isEmpty()) {
          m_status->setText(tr("Replaying record %1 failed: %2").arg(r.step.order).arg(r.error));
          m_status->show();
          emit replayUnavailable(m_status->text());
          return;
        }
        emit stepSelected(r.step.order, r.step.before, r.step.after, r.step.removedNodes,
                          r.step.addedNodes);
      });
}

void RewriteHistoryPanel::setStep(int step) {
  m_slider->setValue(step);
}

int RewriteHistoryPanel::step() const {
  return m_slider->value();
}

void RewriteHistoryPanel::runSliderStep() {
  if (m_state != State::Ready) {
    m_pendingSlider = m_state == State::Checking;
    return;
  }
  m_pendingSlider = false;
  const int step = m_slider->value();
  const quint64 job = ++m_sliderJob;
  ++m_runningJobs;
  vis::runOnWorker(
      this,
      [doc = m_document, query = *m_query, step] {
        GraphResult r;
        try {
          r.model = graphAtStep(doc, query, static_cast<std::size_t>(step));
        } catch (const std::exception& e) {
          r.error = errorText(e);
        }
        return r;
      },
      [this, job, step](GraphResult r) {
        --m_runningJobs;
        if (job != m_sliderJob) return;  // the slider moved on
        if (!r.error.isEmpty()) {
          m_status->setText(tr("Replaying %1 rewrites failed: %2").arg(step).arg(r.error));
          m_status->show();
          emit replayUnavailable(m_status->text());
          return;
        }
        emit stepGraphReady(step, r.model);
      });
}

QString RewriteHistoryPanel::stepText() const {
  return m_stepLabel->text();
}

void RewriteHistoryPanel::updateStepLabel() {
  const int n = m_slider->maximum();
  const int k = m_slider->value();
  if (!m_document || n == 0) {
    m_stepLabel->clear();
    return;
  }
  if (k == 0) {
    m_stepLabel->setText(tr("step 0 of %1: the original graph").arg(n));
    return;
  }
  const engine::RewriteRecord* r = m_log->record(k - 1);
  m_stepLabel->setText(tr("step %1 of %2: %3%4")
                           .arg(k)
                           .arg(n)
                           .arg(QString::fromStdString(r->reason))
                           .arg(r->phase.empty()
                                    ? QString()
                                    : QString(" (%1)").arg(QString::fromStdString(r->phase))));
}

}  // namespace tscope::gui
