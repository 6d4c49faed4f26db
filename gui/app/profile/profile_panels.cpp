#include "gui/app/profile/profile_panels.h"

#include "profiling/report.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

namespace tscope::gui {

namespace {

template <typename View>
View* makeView(QAbstractItemModel* proxy, const QString& name) {
  auto* view = new View;
  view->setObjectName(name);
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setSelectionMode(QAbstractItemView::SingleSelection);
  view->setAlternatingRowColors(true);
  view->setUniformRowHeights(true);
  return view;
}

QTableView* makeTable(QAbstractItemModel* proxy, const QString& name) {
  auto* view = new QTableView;
  view->setObjectName(name);
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setSelectionMode(QAbstractItemView::SingleSelection);
  view->setAlternatingRowColors(true);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
  view->horizontalHeader()->setStretchLastSection(true);
  view->setWordWrap(false);
  return view;
}

// The profile nodes of the current row of a view (its kNodesRole).
QList<int> nodesOfCurrent(QAbstractItemView* view, const QModelIndex& current) {
  if (!current.isValid()) return {};
  return view->model()
      ->index(current.row(), 0, current.parent())
      .data(kNodesRole)
      .value<QList<int>>();
}

}  // namespace

// --- ProfileTablesPanel ---

ProfileTablesPanel::ProfileTablesPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("profileTables"));
  m_metric = new QComboBox;
  m_metric->setObjectName(QStringLiteral("heatMetric"));
  for (int m = 0; m < kHeatMetricCount; ++m)
    m_metric->addItem(heatMetricName(static_cast<HeatMetric>(m)), m);
  m_scale = new QComboBox;
  m_scale->setObjectName(QStringLiteral("heatScale"));
  m_scale->addItem(tr("Reds"), int(HeatScale::Reds));
  m_scale->addItem(tr("Perceptual"), int(HeatScale::Perceptual));
  m_compare = new QComboBox;
  m_compare->setObjectName(QStringLiteral("compareWith"));
  m_compare->addItem(tr("No comparison"));
  m_compare->setToolTip(
      tr("Diff mode: colour each node by its change against another profile "
         "(blue faster, red slower)"));
  m_filter = new QLineEdit;
  m_filter->setObjectName(QStringLiteral("profileFilter"));
  m_filter->setPlaceholderText(tr("Filter rows"));
  m_filter->setClearButtonEnabled(true);

  m_classes = new GroupTableModel(GroupTableModel::Kind::Classes, this);
  m_ops = new GroupTableModel(GroupTableModel::Kind::Ops, this);
  m_apply = new ApplyTableModel(this);
  m_scopes = new ScopeTreeModel(this);
  QAbstractItemModel* sources[TabCount] = {m_classes, m_ops, m_apply, m_scopes};
  const char* names[TabCount] = {"classTable", "opsTable", "applyTable", "scopeTree"};
  const QString titles[TabCount] = {tr("Class"), tr("Ops"), tr("Apply"), tr("Scope")};
  m_tabs = new QTabWidget;
  m_tabs->setObjectName(QStringLiteral("profileTabs"));
  m_tabs->setDocumentMode(true);
  for (int t = 0; t < TabCount; ++t) {
    m_proxies[t] = makeProfileProxy(sources[t], this);
    if (t == ScopeTab) {
      auto* tree = makeView<QTreeView>(m_proxies[t], QString::fromLatin1(names[t]));
      tree->sortByColumn(ScopeTreeModel::Inclusive, Qt::DescendingOrder);
      tree->setSortingEnabled(true);
      m_views[t] = tree;
    } else {
      QTableView* table = makeTable(m_proxies[t], QString::fromLatin1(names[t]));
      table->sortByColumn(1, Qt::DescendingOrder);  // self time
      m_views[t] = table;
    }
    m_tabs->addTab(m_views[t], titles[t]);
    connect(m_views[t]->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this, t](const QModelIndex& current) {
              if (m_selecting) return;
              const QList<int> nodes = nodesOfCurrent(m_views[t], current);
              if (!nodes.isEmpty()) emit rowsChosen(nodes);
            });
    // A click on the row that is already current (the graph's selection made it so) chooses it
    // again: a class row then selects all its nodes.
    connect(m_views[t], &QAbstractItemView::clicked, this, [this, t](const QModelIndex& index) {
      const QList<int> nodes = nodesOfCurrent(m_views[t], index);
      if (!nodes.isEmpty()) emit rowsChosen(nodes);
    });
  }
  m_tabs->setCurrentIndex(ApplyTab);

  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(4, 4, 4, 0);
  bar->addWidget(new QLabel(tr("Colour by")));
  bar->addWidget(m_metric);
  bar->addWidget(m_scale);
  bar->addWidget(m_compare, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addLayout(bar);
  auto* filterRow = new QHBoxLayout;
  filterRow->setContentsMargins(4, 0, 4, 0);
  filterRow->addWidget(m_filter);
  layout->addLayout(filterRow);
  layout->addWidget(m_tabs, 1);

  auto options = [this] { emit heatOptionsChanged(heatOptions()); };
  connect(m_metric, &QComboBox::currentIndexChanged, this, options);
  connect(m_scale, &QComboBox::currentIndexChanged, this, options);
  connect(m_compare, &QComboBox::activated, this, [this](int i) { emit compareChosen(i); });
  connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    for (QSortFilterProxyModel* p : m_proxies) p->setFilterFixedString(text);
  });
}

QAbstractItemView* ProfileTablesPanel::tableView(int tab) const {
  return tab >= 0 && tab < TabCount ? m_views[tab] : nullptr;
}
QSortFilterProxyModel* ProfileTablesPanel::proxy(int tab) const {
  return tab >= 0 && tab < TabCount ? m_proxies[tab] : nullptr;
}

void ProfileTablesPanel::setView(std::shared_ptr<const ProfileView> view) {
  m_selecting = true;
  m_classes->setView(view);
  m_ops->setView(view);
  m_apply->setView(view);
  m_scopes->setView(view);
  if (auto* tree = qobject_cast<QTreeView*>(m_views[ScopeTab])) tree->expandToDepth(1);
  m_selecting = false;
}

HeatOptions ProfileTablesPanel::heatOptions() const {
  return {static_cast<HeatMetric>(m_metric->currentData().toInt()),
          static_cast<HeatScale>(m_scale->currentData().toInt())};
}

void ProfileTablesPanel::setHeatOptions(const HeatOptions& options) {
  // Set from outside (ProfileUi): no heatOptionsChanged back.
  const QSignalBlocker blockMetric(m_metric), blockScale(m_scale);
  m_metric->setCurrentIndex(m_metric->findData(int(options.metric)));
  m_scale->setCurrentIndex(m_scale->findData(int(options.scale)));
}

void ProfileTablesPanel::selectNode(int profileNode) {
  m_selecting = true;
  auto select = [&](int tab, const QModelIndex& source) {
    QAbstractItemView* view = m_views[tab];
    const QModelIndex index = m_proxies[tab]->mapFromSource(source);
    if (!index.isValid()) {
      view->selectionModel()->clearSelection();
      return;
    }
    view->selectionModel()->setCurrentIndex(
        index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    view->scrollTo(index);
  };
  auto rowIndex = [](QAbstractItemModel* m, int row) {
    return row >= 0 ? m->index(row, 0) : QModelIndex();
  };
  select(ClassTab, rowIndex(m_classes, m_classes->rowOfNode(profileNode)));
  select(OpsTab, rowIndex(m_ops, m_ops->rowOfNode(profileNode)));
  select(ApplyTab, rowIndex(m_apply, m_apply->rowOfNode(profileNode)));
  select(ScopeTab, m_scopes->indexOfNode(profileNode));
  m_selecting = false;
}

// --- TimelinePanel ---

TimelinePanel::TimelinePanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("profileTimelinePanel"));
  m_timeline = new TimelineWidget;
  m_memory = new MemoryChart;
  m_runs = new QComboBox;
  m_runs->setObjectName(QStringLiteral("timelineRun"));
  m_runs->addItem(tr("All runs"), -1);
  m_rangeLabel = new QLabel;
  m_rangeLabel->setObjectName(QStringLiteral("timelineRangeLabel"));
  auto* clear = new QToolButton;
  clear->setObjectName(QStringLiteral("clearRange"));
  clear->setText(tr("Clear range"));
  clear->setToolTip(tr("Show the whole profile again (Escape in the timeline)"));
  clear->setEnabled(false);
  m_peakLabel = new QLabel;
  auto* highlight = new QToolButton;
  highlight->setObjectName(QStringLiteral("highlightPeak"));
  highlight->setText(tr("Highlight on graph"));
  highlight->setToolTip(tr("Highlight the nodes whose outputs are alive at the memory peak"));

  m_alive = new OutputTableModel(this);
  m_outputs = new OutputTableModel(this);
  m_aliveView = makeTable(makeProfileProxy(m_alive, this), QStringLiteral("aliveAtPeak"));
  m_outputsView = makeTable(makeProfileProxy(m_outputs, this), QStringLiteral("nodeOutputs"));
  m_aliveView->sortByColumn(OutputTableModel::Bytes, Qt::DescendingOrder);
  m_outputsView->sortByColumn(OutputTableModel::Bytes, Qt::DescendingOrder);

  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(4, 4, 4, 0);
  bar->addWidget(m_runs);
  bar->addWidget(m_rangeLabel, 1);
  bar->addWidget(clear);
  auto* top = new QWidget;
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  topLayout->setSpacing(0);
  topLayout->addLayout(bar);
  topLayout->addWidget(m_timeline, 1);
  topLayout->addWidget(m_memory);

  auto* aliveBox = new QWidget;
  auto* aliveLayout = new QVBoxLayout(aliveBox);
  aliveLayout->setContentsMargins(0, 0, 0, 0);
  auto* aliveBar = new QHBoxLayout;
  aliveBar->addWidget(m_peakLabel, 1);
  aliveBar->addWidget(highlight);
  aliveLayout->addLayout(aliveBar);
  aliveLayout->addWidget(m_aliveView, 1);
  auto* outputsBox = new QWidget;
  auto* outputsLayout = new QVBoxLayout(outputsBox);
  outputsLayout->setContentsMargins(0, 0, 0, 0);
  outputsLayout->addWidget(new QLabel(tr("Outputs of every node (created, inplace, view)")));
  outputsLayout->addWidget(m_outputsView, 1);
  auto* lists = new QSplitter(Qt::Horizontal);
  lists->addWidget(aliveBox);
  lists->addWidget(outputsBox);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(top);
  split->addWidget(lists);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);

  connect(m_timeline, &TimelineWidget::viewChanged, m_memory, &MemoryChart::setViewRange);
  connect(m_timeline, &TimelineWidget::rangeSelected, this, [this, clear](TimeRange r) {
    m_memory->setRange(r);
    clear->setEnabled(true);
    m_rangeLabel->setText(
        tr("Range: %1 from %2 (tables and heat map show only it)")
            .arg(QString::fromStdString(prof::formatSeconds(double(r.endNs - r.startNs) * 1e-9)),
                 QString::fromStdString(prof::formatSeconds(
                     double(r.startNs - (m_data ? m_data->startNs : 0)) * 1e-9))));
  });
  connect(m_timeline, &TimelineWidget::rangeCleared, this, [this, clear] {
    m_memory->setRange(std::nullopt);
    clear->setEnabled(false);
    m_rangeLabel->setText(tr("Shift-drag to choose a time range"));
  });
  connect(clear, &QToolButton::clicked, m_timeline, &TimelineWidget::clearRange);
  connect(m_runs, &QComboBox::activated, this,
          [this](int i) { m_timeline->showRun(m_runs->itemData(i).toInt()); });
  connect(m_timeline, &TimelineWidget::runClicked, this, [this](int run) {
    m_runs->setCurrentIndex(std::max(0, m_runs->findData(run)));
    m_timeline->showRun(run);
  });
  connect(highlight, &QToolButton::clicked, this, &TimelinePanel::highlightPeakRequested);
  for (QTableView* view : {m_aliveView, m_outputsView})
    connect(view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this, view](const QModelIndex& current) {
              const QList<int> nodes = nodesOfCurrent(view, current);
              if (!nodes.isEmpty()) emit rowsChosen(nodes);
            });
  m_rangeLabel->setText(tr("Shift-drag to choose a time range"));
}

void TimelinePanel::setData(std::shared_ptr<const TimelineData> data,
                            std::shared_ptr<const ProfileView> view) {
  m_data = data;
  m_timeline->setData(data, view ? view->snapshot->profile : nullptr);
  m_memory->setProfile(view ? view->snapshot->profile : nullptr);
  m_memory->setData(data);
  m_memory->setViewRange(m_timeline->viewRange());
  m_memory->setRange(std::nullopt);
  m_runs->clear();
  m_runs->addItem(tr("All runs"), -1);
  if (view)
    for (const prof::RunSpan& r : view->snapshot->profile->runs)
      m_runs->addItem(tr("Run %1").arg(r.run), r.run);
  m_peakLabel->setText(!data                     ? QString()
                       : data->memory.aliveKnown ? tr("Alive at the %1").arg(m_memory->peakText())
                                                 : m_memory->peakText());
  m_alive->setView(view,
                   data ? std::optional<std::vector<int>>(data->memory.aliveAtPeak) : std::nullopt);
  m_outputs->setView(view);
}

void TimelinePanel::setView(std::shared_ptr<const ProfileView> view) {
  m_outputs->setView(view);
}

}  // namespace tscope::gui
