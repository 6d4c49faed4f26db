#include "gui/app/profile/profile_ui.h"

#include "gui/app/graph_pane.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/profile/profile_panels.h"
#include "profiling/profile_diff.h"
#include "visualizers/model/palette.h"
#include "visualizers/threads/hand_off.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTime>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>

#include <algorithm>

namespace tscope::gui {

// What one rebuild computed (Note [Profiler snapshots]).
struct ProfileUi::Built {
  std::shared_ptr<const ProfileView> view;
  std::shared_ptr<const TimelineData> timeline;  // null: the snapshot's timeline is unchanged
  HeatMap heat;
  HeatOptions heatOptions;  // what `heat` shows (no comparison)
  QString error;
};

ProfileUi::ProfileUi(MainWindow* window) : QObject(window), m_window(window) {
  setObjectName(QStringLiteral("profileUi"));
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_done = std::make_shared<std::atomic<std::int64_t>>(0);
  m_total = std::make_shared<std::atomic<std::int64_t>>(0);
  createDocks();
  createActions();

  m_progress = new QProgressBar;
  m_progress->setObjectName(QStringLiteral("profileProgress"));
  m_progress->setMaximumWidth(260);
  m_progress->setTextVisible(true);
  m_progress->hide();
  m_cancel = new QToolButton;
  m_cancel->setObjectName(QStringLiteral("cancelProfileButton"));
  m_cancel->setIcon(QIcon(QStringLiteral(":/icons/close.svg")));
  m_cancel->setToolTip(tr("Cancel profiling"));
  m_cancel->setAutoRaise(true);
  m_cancel->hide();
  window->statusBar()->addPermanentWidget(m_progress);
  window->statusBar()->addPermanentWidget(m_cancel);
  connect(m_cancel, &QToolButton::clicked, this, &ProfileUi::cancelProfile);
  // Note [Quiet progress]: every change of the status bar repaints the window around it, on the
  // GUI thread, while the profiled calls run on a worker; on a machine with one core's worth of
  // compute that is time taken from the calls (bench_gui_profile counted about 80 window paints
  // for five short profiles, and their calls ran 5-14 % slower than the CLI's). So the progress
  // bar and Cancel button appear only once a profile has run for kProgressDelayMs (Profile >
  // Cancel works from the start), and then change four times a second, only when the text does.
  m_progressTimer = new QTimer(this);
  m_progressTimer->setInterval(kProgressIntervalMs);
  connect(m_progressTimer, &QTimer::timeout, this, [this] {
    if (m_progressClock.elapsed() < kProgressDelayMs) return;
    const auto total = static_cast<int>(m_total->load()), done = static_cast<int>(m_done->load());
    const QString text = done == 0 ? tr("Profiling: compiling")
                                   : tr("Profiling: call %1 of %2").arg(done).arg(total);
    if (!m_progress->isVisible()) {
      m_progress->show();
      m_cancel->show();
    }
    if (text == m_progress->format()) return;
    m_progress->setRange(0, std::max(1, total));
    m_progress->setValue(std::min(done, std::max(1, total)));
    m_progress->setFormat(text);
  });

  connect(window, &MainWindow::documentLoaded, this, &ProfileUi::onDocumentLoaded);
  for (GraphPane* pane :
       {window->originalPane(), window->optimizedPane(), window->leftPane(), window->rightPane()})
    connect(pane, &GraphPane::nodeSelected, this, [this, pane](int node) {
      if (m_snapshot && pane->model() == m_snapshot->model) onPaneNodeSelected(node);
    });
  updateActions();
}

ProfileUi::~ProfileUi() {
  // A run in flight stops at its next call (its result is dropped with this object).
  m_cancelFlag->store(true);
  // The "Profiled" pane cancels its layout jobs as it goes: before the window's layout service
  // (MainWindow's destructor deletes this object first).
  if (m_ownPane) {
    m_ownPane->disconnect(this);
    delete m_ownPane;
  }
}

void ProfileUi::createDocks() {
  m_tables = new ProfileTablesPanel;
  m_timelinePanel = new TimelinePanel;
  auto makeDock = [this](const QString& name, const QString& title, QWidget* content,
                         Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, m_window);
    dock->setObjectName(name);
    dock->setWidget(content);
    m_window->addDockWidget(area, dock);
    dock->toggleViewAction()->setObjectName(QStringLiteral("action_") + name);
    m_window->registerAction(dock->toggleViewAction());
    dock->hide();
    return dock;
  };
  m_tablesDock =
      makeDock(QStringLiteral("profileDock"), tr("Profile"), m_tables, Qt::RightDockWidgetArea);
  m_timelineDock = makeDock(QStringLiteral("timelineDock"), tr("Timeline"), m_timelinePanel,
                            Qt::BottomDockWidgetArea);

  connect(m_tables, &ProfileTablesPanel::heatOptionsChanged, this,
          [this](HeatOptions options) { setHeatOptions(options); });
  connect(m_tables, &ProfileTablesPanel::rowsChosen, this, &ProfileUi::selectProfileNodes);
  connect(m_tables, &ProfileTablesPanel::compareChosen, this, [this](int index) {
    // Index 0 is "No comparison"; then the session's other snapshots in order.
    std::shared_ptr<const ProfileSnapshot> other;
    int k = 0;
    for (const auto& s : m_snapshots) {
      if (s == m_snapshot) continue;
      if (++k == index) other = s;
    }
    compareWith(other);
  });
  connect(m_timelinePanel, &TimelinePanel::rowsChosen, this, &ProfileUi::selectProfileNodes);
  TimelineWidget* timeline = m_timelinePanel->timeline();
  connect(timeline, &TimelineWidget::nodeClicked, this,
          [this](int node) { selectProfileNodes({node}); });
  connect(timeline, &TimelineWidget::rangeSelected, this, [this](TimeRange r) {
    if (m_range == r) return;
    m_range = r;
    rebuild();
  });
  connect(timeline, &TimelineWidget::rangeCleared, this, [this] {
    if (!m_range) return;
    m_range.reset();
    rebuild();
  });
  connect(m_timelinePanel, &TimelinePanel::highlightPeakRequested, this, [this] {
    GraphPane* pane = profilePane();
    if (!pane || !m_timeline) return;
    QSet<int> nodes;
    for (int n : m_timeline->memory.aliveAtPeak)
      if (const int v = viewNodeOf(n); v >= 0) nodes.insert(v);
    pane->setHighlight(nodes, QColor(0xd6, 0x27, 0x28));
  });
}

void ProfileUi::createActions() {
  QMenu* menu = m_window->menu(QStringLiteral("menuProfile"));
  auto make = [this](const char* name, const QString& text, const QKeySequence& key = {}) {
    auto* a = new QAction(text, this);
    a->setObjectName(QString::fromLatin1(name));
    a->setShortcut(key);
    m_window->registerAction(a);
    return a;
  };
  m_profileAction = make("actionProfile", tr("&Profile..."), QKeySequence(Qt::CTRL | Qt::Key_F9));
  m_profileAction->setIcon(QIcon(QStringLiteral(":/icons/tensorscope.svg")));
  m_profileAction->setToolTip(tr("Profile the graph: N measured runs after K warm-up calls"));
  m_compareModesAction = make("actionProfileCompareModes", tr("Profile and &Compare Modes"));
  m_compareModesAction->setToolTip(
      tr("Profile the original graph (mode none) and the optimized one, coloured by the change"));
  QAction* cancel = make("actionCancelProfile", tr("&Cancel Profiling"));
  m_saveAction = make("actionSaveProfile", tr("&Save Profile..."));
  m_traceAction = make("actionExportTrace", tr("Export &Trace (Perfetto JSON)..."));
  m_reportAction = make("actionExportReport", tr("Export &Report..."));
  menu->addAction(m_profileAction);
  menu->addAction(m_compareModesAction);
  menu->addAction(cancel);
  menu->addSeparator();
  menu->addAction(m_saveAction);
  menu->addAction(m_traceAction);
  menu->addAction(m_reportAction);
  menu->addSeparator();
  menu->addAction(m_tablesDock->toggleViewAction());
  menu->addAction(m_timelineDock->toggleViewAction());
  // File > Save Profile... as well, after the export entries.
  for (QAction* top : m_window->menuBar()->actions())
    if (top->menu() && top->text() == QObject::tr("&File")) {
      QMenu* file = top->menu();
      const QList<QAction*> entries = file->actions();
      QAction* before = nullptr;
      for (int i = 0; i + 1 < entries.size(); ++i)
        if (entries[i]->objectName() == QLatin1String("actionExportDot")) before = entries[i + 1];
      file->insertAction(before, m_saveAction);
      break;
    }
  if (auto* bar = m_window->findChild<QToolBar*>(QStringLiteral("mainToolBar"))) {
    bar->addSeparator();
    bar->addAction(m_profileAction);
  }
  connect(m_profileAction, &QAction::triggered, this, [this] {
    auto* dialog = new ProfileDialog(m_window);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setRequest(m_request);
    connect(dialog, &QDialog::accepted, this, [this, dialog] { startProfile(dialog->request()); });
    dialog->open();
  });
  connect(m_compareModesAction, &QAction::triggered, this,
          [this] { compareModes(engine::Mode::None, engine::Mode::FastRun, m_request); });
  connect(cancel, &QAction::triggered, this, &ProfileUi::cancelProfile);
  connect(m_saveAction, &QAction::triggered, this, [this] {
    const QString dir =
        m_window->document() ? QFileInfo(m_window->document()->path).absolutePath() : QString();
    const QString path = QFileDialog::getSaveFileName(m_window, tr("Save Profile"), dir,
                                                      tr("Tensorscope graphs (*.tsg)"));
    if (!path.isEmpty()) saveProfile(path.endsWith(QLatin1String(".tsg")) ? path : path + ".tsg");
  });
  connect(m_traceAction, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(m_window, tr("Export Trace"), {},
                                                      tr("Chrome/Perfetto trace (*.json)"));
    if (!path.isEmpty()) exportTrace(path);
  });
  connect(m_reportAction, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(m_window, tr("Export Report"), {},
                                                      tr("Text report (*.txt);;JSON (*.json)"));
    if (!path.isEmpty()) exportReport(path);
  });
}

void ProfileUi::updateActions() {
  const bool doc = m_window->document() != nullptr;
  m_profileAction->setEnabled(doc && !m_running);
  m_compareModesAction->setEnabled(doc && !m_running);
  m_window->action(QStringLiteral("actionCancelProfile"))->setEnabled(m_running);
  for (QAction* a : {m_saveAction, m_traceAction, m_reportAction})
    a->setEnabled(m_snapshot != nullptr);
}

bool ProfileUi::isBusy() const {
  return m_running || m_building > 0 || m_pendingLoads > 0 || !m_pendingOptions.isEmpty();
}

GraphPane* ProfileUi::profilePane() const {
  return m_pane.data();
}

int ProfileUi::profileNodeOf(int viewNode) const {
  if (!m_view) return -1;
  const auto it = m_view->profileNode.find(viewNode);
  return it == m_view->profileNode.end() ? -1 : it->second;
}

int ProfileUi::viewNodeOf(int profileNode) const {
  if (!m_view || profileNode < 0 ||
      static_cast<std::size_t>(profileNode) >= m_view->viewNode.size())
    return -1;
  return m_view->viewNode[static_cast<std::size_t>(profileNode)];
}

void ProfileUi::report(const QString& message, bool error) {
  m_window->logView()->appendPlainText(
      QStringLiteral("[%1] Profile: %2")
          .arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), message));
  m_window->statusBar()->showMessage(message, 8000);
  if (!error) return;
  // open(), not exec(): the event loop keeps running (tests, screenshots).
  auto* box =
      new QMessageBox(QMessageBox::Warning, tr("Profile"), message, QMessageBox::Ok, m_window);
  box->setObjectName(QStringLiteral("profileError"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
  emit fileError(message);
}

// --- What is shown ---

void ProfileUi::showSnapshot(std::shared_ptr<const ProfileSnapshot> snapshot) {
  showSnapshotWith(std::move(snapshot), nullptr);
}

void ProfileUi::showSnapshotWith(std::shared_ptr<const ProfileSnapshot> snapshot,
                                 std::shared_ptr<const Built> built) {
  if (!snapshot) return;
  if (std::find(m_snapshots.begin(), m_snapshots.end(), snapshot) == m_snapshots.end())
    m_snapshots.push_back(snapshot);
  m_snapshot = std::move(snapshot);
  if (m_compare == m_snapshot) m_compare.reset();
  m_range.reset();
  // The pane: the document's own pane when the snapshot draws on its model, else the
  // "Profiled" tab with the compiled graph.
  const std::shared_ptr<const Document>& doc = m_window->document();
  GraphPane* pane = nullptr;
  if (doc && m_snapshot->model == doc->originalModel) pane = m_window->originalPane();
  if (doc && m_snapshot->model && m_snapshot->model == doc->optimizedModel)
    pane = m_window->optimizedPane();
  if (!pane && m_snapshot->model) {
    if (!m_ownPane) {
      m_ownPane = new GraphPane(m_window->layoutService());
      m_ownPane->setObjectName(QStringLiteral("profiledPane"));
      connect(m_ownPane, &GraphPane::nodeSelected, this, [this](int node) {
        // The inspector shows the compiled node as it does a node of the document's panes.
        if (m_ownPane->model()) m_window->inspector()->showNode(m_ownPane->model(), node);
        if (m_snapshot && m_ownPane->model() == m_snapshot->model) onPaneNodeSelected(node);
      });
    }
    if (m_ownPane->model() != m_snapshot->model) m_ownPane->setModel(m_snapshot->model);
    pane = m_ownPane;
    const QString title =
        tr("Profiled (%1)").arg(QString::fromStdString(m_snapshot->profile->function.mode));
    int tab = m_window->tabs()->indexOf(m_ownPane);
    if (tab < 0) tab = m_window->tabs()->addTab(m_ownPane, title);
    m_window->tabs()->setTabText(tab, title);
  }
  if (m_pane && m_pane != pane) m_pane->setDecorations(QStringLiteral("profile"), nullptr);
  m_pane = pane;
  if (pane && !m_window->isSideBySide() && m_window->tabs()->indexOf(pane) >= 0)
    m_window->tabs()->setCurrentWidget(pane);
  if (!m_tablesDock->isVisible() && !m_timelineDock->isVisible()) {
    m_tablesDock->show();
    m_timelineDock->show();
    // The timeline's tracks, the memory chart and the lists under them.
    m_window->resizeDocks({m_timelineDock}, {360}, Qt::Vertical);
  }
  refreshCompareBox();
  updateActions();
  // A view built with the run fits when nothing it depends on changed meanwhile (Note [Profiler
  // snapshots]): it saves a round trip to a worker after every profile.
  if (built && built->view && built->view->snapshot == m_snapshot && !m_compare && !m_range &&
      built->heatOptions.metric == m_heat.metric && built->heatOptions.scale == m_heat.scale) {
    ++m_building;
    applyBuilt(built, ++m_generation);
    return;
  }
  rebuild();
}

void ProfileUi::refreshCompareBox() {
  QComboBox* box = m_tables->compareBox();
  box->clear();
  box->addItem(tr("No comparison"));
  int chosen = 0, k = 0;
  for (const auto& s : m_snapshots) {
    if (s == m_snapshot) continue;
    box->addItem(tr("Compare with %1").arg(s->label));
    ++k;
    if (s == m_compare) chosen = k;
  }
  box->setCurrentIndex(chosen);
}

void ProfileUi::setHeatOptions(const HeatOptions& options) {
  if (options.metric == m_heat.metric && options.scale == m_heat.scale) return;
  m_heat = options;
  m_tables->setHeatOptions(options);
  if (m_snapshot) rebuild();
}

void ProfileUi::setRange(std::optional<TimeRange> range) {
  m_timelinePanel->timeline()->setRange(range);  // its signals rebuild
  if (!m_timelinePanel->timeline()->data() && range != m_range) {
    m_range = range;
    rebuild();
  }
}

void ProfileUi::compareWith(std::shared_ptr<const ProfileSnapshot> other) {
  if (other == m_snapshot) other.reset();
  if (other && std::find(m_snapshots.begin(), m_snapshots.end(), other) == m_snapshots.end())
    m_snapshots.insert(m_snapshots.begin(), other);
  m_compare = std::move(other);
  refreshCompareBox();
  rebuild();
}

std::shared_ptr<const ProfileUi::Built> ProfileUi::build(
    std::shared_ptr<const ProfileSnapshot> snapshot, std::shared_ptr<const ProfileSnapshot> compare,
    std::optional<TimeRange> range, HeatOptions heat, bool timeline) {
  auto built = std::make_shared<Built>();
  try {
    built->heatOptions = heat;
    built->view = ProfileView::make(snapshot, range);
    if (timeline) built->timeline = TimelineData::build(*snapshot->profile, snapshot->graph.get());
    if (compare) {
      // Note [Diff through the rewrite log] (profiling/profile_diff.h).
      std::optional<engine::debug::NodeLineage> la, lb;
      if (compare->profile->graph == "optimized" && compare->graph)
        la.emplace(*compare->graph, compare->rewrites);
      if (snapshot->profile->graph == "optimized" && snapshot->graph)
        lb.emplace(*snapshot->graph, snapshot->rewrites);
      const prof::ProfileDiff diff = prof::diffProfiles(
          {compare->profile.get(), la ? &*la : nullptr, compare->label.toStdString()},
          {built->view->profile.get(), lb ? &*lb : nullptr, snapshot->label.toStdString()});
      built->heat = buildDiffMap(*built->view, diff);
    } else {
      built->heat = buildHeatMap(*built->view, heat);
    }
  } catch (const std::exception& e) {
    built->error = QString::fromStdString(e.what());
  }
  return built;
}

void ProfileUi::rebuild() {
  if (!m_snapshot) return;
  const quint64 generation = ++m_generation;
  ++m_building;
  auto snapshot = m_snapshot, compare = m_compare;
  const std::optional<TimeRange> range = m_range;
  const HeatOptions heat = m_heat;
  const bool needTimeline = m_timelineOf != snapshot;
  vis::runOnWorker(
      this, [=] { return build(snapshot, compare, range, heat, needTimeline); },
      [this, generation](std::shared_ptr<const Built> built) { applyBuilt(built, generation); });
}

void ProfileUi::applyBuilt(std::shared_ptr<const Built> built, quint64 generation) {
  --m_building;
  if (generation != m_generation) return;  // a newer request is on its way
  if (!built->error.isEmpty()) {
    report(tr("could not show the profile: %1").arg(built->error), true);
    return;
  }
  m_view = built->view;
  if (built->timeline) {
    m_timeline = built->timeline;
    m_timelineOf = m_snapshot;
    m_timelinePanel->setData(m_timeline, m_view);
  } else {
    m_timelinePanel->setView(m_view);
  }
  m_tables->setView(m_view);
  m_timelinePanel->timeline()->setNodeColors(built->heat.nodeColors);
  const std::shared_ptr<const vis::Decorations> layer = built->heat.decorations;
  for (GraphPane* pane : {m_window->originalPane(), m_window->optimizedPane(), m_window->leftPane(),
                          m_window->rightPane(), m_ownPane})
    if (pane)
      pane->setDecorations(QStringLiteral("profile"),
                           pane->model() == m_snapshot->model ? layer : nullptr, kProfileLayerZ);
  // The kernel notes (the chosen cuDNN algorithm...) in the inspector, for the profiled pane.
  std::unordered_map<int, QString> notes;
  const prof::Profile& profile = *m_view->profile;
  for (std::size_t i = 0; i < profile.nodes.size(); ++i)
    if (!profile.nodes[i].kernelNote.empty())
      if (const int v = viewNodeOf(static_cast<int>(i)); v >= 0)
        notes[v] = QString::fromStdString(profile.nodes[i].kernelNote);
  m_window->inspector()->setKernelNotes(m_snapshot->model, std::move(notes));
  if (m_pane && m_pane->selectedNode() >= 0) onPaneNodeSelected(m_pane->selectedNode());
  emit viewShown();
  applyPendingOptions();
}

// --- Selection ---

void ProfileUi::selectProfileNodes(const QList<int>& profileNodes) {
  GraphPane* pane = profilePane();
  if (!pane || profileNodes.isEmpty()) return;
  QSet<int> shown;
  int first = -1;
  for (int n : profileNodes)
    if (const int v = viewNodeOf(n); v >= 0) {
      shown.insert(v);
      if (first < 0) first = v;
    }
  if (!m_window->isSideBySide() && m_window->tabs()->indexOf(pane) >= 0)
    m_window->tabs()->setCurrentWidget(pane);
  pane->setHighlight(profileNodes.size() > 1 ? shown : QSet<int>{}, vis::palette::searchHitColor());
  if (first >= 0) pane->selectNode(first);
  m_timelinePanel->timeline()->setSelectedNode(profileNodes.size() == 1 ? profileNodes.front()
                                                                        : -1);
}

void ProfileUi::onPaneNodeSelected(int viewNode) {
  const int n = profileNodeOf(viewNode);
  m_tables->selectNode(n);
  m_timelinePanel->timeline()->setSelectedNode(n);
}

}  // namespace tscope::gui
