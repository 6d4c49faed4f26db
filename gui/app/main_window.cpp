#include "gui/app/main_window.h"

#include "gui/app/debug/debug_ui.h"
#include "gui/app/document_loader.h"
#include "gui/app/graph_pane.h"
#include "gui/app/history/rewrite_history_panel.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/optimize_ui.h"
#include "gui/app/profile/profile_ui.h"
#include "gui/app/recent_files.h"
#include "gui/app/search_bar.h"
#include "visualizers/layout/layout_service.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QCryptographicHash>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QTime>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

// The resources are compiled into the static tscope_app library; nothing references their
// initialiser, so the linker would drop it without this call (Q_INIT_RESOURCE must sit outside
// any namespace).
static void initTensorscopeResources() {
  Q_INIT_RESOURCE(tensorscope);
}

namespace tscope::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  initTensorscopeResources();
  setObjectName(QStringLiteral("MainWindow"));
  setWindowTitle(QStringLiteral("Tensorscope"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/tensorscope.svg")));
  setAcceptDrops(true);
  setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);

  m_layoutService = new vis::LayoutService(this);
  m_loader = new DocumentLoader(this);
  m_recentFiles = new RecentFiles(this);

  // Centre: the tabs, or the two side-by-side panes, above the search bar.
  m_tabs = new QTabWidget;
  m_tabs->setDocumentMode(true);
  m_originalPane = createPane();
  m_optimizedPane = createPane();
  m_stepPane = createPane();
  m_tabs->addTab(m_originalPane, tr("Original"));

  m_splitter = new QSplitter(Qt::Horizontal);
  m_splitter->setChildrenCollapsible(false);
  auto makeSide = [this](QLabel*& title, GraphPane*& pane) {
    auto* side = new QWidget;
    auto* layout = new QVBoxLayout(side);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    title = new QLabel;
    title->setObjectName(QStringLiteral("sideTitle"));
    title->setContentsMargins(8, 4, 8, 4);
    title->setStyleSheet(
        QStringLiteral("QLabel { font-weight: bold; background: palette(alternate-base); }"));
    pane = createPane();
    layout->addWidget(title);
    layout->addWidget(pane, 1);
    m_splitter->addWidget(side);
  };
  makeSide(m_leftTitle, m_leftPane);
  makeSide(m_rightTitle, m_rightPane);

  m_centre = new QStackedWidget;
  m_centre->addWidget(m_tabs);
  m_centre->addWidget(m_splitter);
  m_searchBar = new SearchBar;
  m_searchBar->hide();
  auto* central = new QWidget;
  auto* centralLayout = new QVBoxLayout(central);
  centralLayout->setContentsMargins(0, 0, 0, 0);
  centralLayout->setSpacing(0);
  centralLayout->addWidget(m_centre, 1);
  centralLayout->addWidget(m_searchBar);
  setCentralWidget(central);

  createActions();
  createMenus();
  createToolBar();
  createDocks();
  createStatusBar();

  // Feature UIs: each builds its own actions, menus, docks and workers on the window's hooks
  // (menu(), registerAction(), addNodeMenuProvider(), addDockWidget()).
  // (feature UIs are created here)
  m_optimizeUi = new OptimizeUi(this);
  m_debugUi = new DebugUi(this);
  m_profileUi = new ProfileUi(this);

  connect(m_tabs, &QTabWidget::currentChanged, this, [this] {
    updateStatus();
    updateActions();
  });
  connect(qApp, &QApplication::focusChanged, this, [this](QWidget*, QWidget* now) {
    for (GraphPane* side : {m_leftPane, m_rightPane})
      if (now && side->isAncestorOf(now)) m_activeSide = side;
  });
  connect(m_loader, &DocumentLoader::started, this, [this](const QString& path) {
    m_progress->setValue(0);
    m_progress->setFormat(tr("Opening %1").arg(QFileInfo(path).fileName()));
    m_progress->show();
    m_cancelButton->show();
  });
  connect(m_loader, &DocumentLoader::progress, this, [this](int stage, const QString& text) {
    m_progress->setValue(stage);
    m_progress->setFormat(text);
  });
  connect(m_loader, &DocumentLoader::loaded, this, &MainWindow::onLoaded);
  connect(m_loader, &DocumentLoader::failed, this, &MainWindow::onLoadFailed);
  connect(m_loader, &DocumentLoader::cancelled, this, [this](const QString& path) {
    if (m_loader->isLoading()) return;  // a newer load replaced this one
    m_progress->hide();
    m_cancelButton->hide();
    statusBar()->showMessage(tr("Opening %1 cancelled").arg(QFileInfo(path).fileName()), 5000);
  });
  connect(m_searchBar, &SearchBar::searchRequested, this,
          [this](const QString& text) { find(text); });
  connect(m_searchBar, &SearchBar::nextRequested, this,
          [this] { m_actions["actionFindNext"]->trigger(); });
  connect(m_searchBar, &SearchBar::previousRequested, this,
          [this] { m_actions["actionFindPrevious"]->trigger(); });
  connect(m_searchBar, &SearchBar::closed, this, [this] {
    if (GraphPane* pane = currentPane()) {
      pane->search(QString());  // clears the hit highlight
      pane->view()->setFocus();
    }
  });

  resize(1400, 900);
  readSettings();
  updateActions();
  updateStatus();
}

MainWindow::~MainWindow() {
  // Panes cancel their layout jobs as they go, so they must go before the layout service (the
  // first child, which QObject would delete first); the Optimized and Step panes may not be in a
  // tab, so nothing else owns them. Nothing may react to the teardown with the panes half gone.
  disconnect(qApp, nullptr, this, nullptr);
  m_tabs->disconnect(this);
  m_loader->blockSignals(true);
  m_loader->cancel();
  delete m_profileUi;  // its "Profiled" pane, like the others, before the layout service
  m_profileUi = nullptr;
  // A scene is quiet while it is destroyed (GraphScene's destructor), so a pane can go with a node
  // still selected.
  for (GraphPane* pane : {m_originalPane, m_optimizedPane, m_stepPane, m_leftPane, m_rightPane}) {
    pane->disconnect(this);
    delete pane;
  }
}

QAction* MainWindow::makeAction(const QString& name, const QString& text, const QString& icon,
                                const QKeySequence& shortcut) {
  auto* action = new QAction(text, this);
  action->setObjectName(name);
  if (!icon.isEmpty()) action->setIcon(QIcon(QStringLiteral(":/icons/%1.svg").arg(icon)));
  if (!shortcut.isEmpty()) {
    action->setShortcut(shortcut);
    action->setToolTip(
        QStringLiteral("%1 (%2)").arg(QString(text).remove('&').remove(QStringLiteral("…")),
                                      shortcut.toString(QKeySequence::NativeText)));
  }
  m_actions.insert(name, action);
  return action;
}

QAction* MainWindow::action(const QString& objectName) const {
  return m_actions.value(objectName);
}

void MainWindow::createActions() {
  connect(makeAction("actionOpen", tr("&Open…"), "open", QKeySequence::Open), &QAction::triggered,
          this, &MainWindow::openInteractively);
  connect(makeAction("actionClose", tr("&Close"), {}, QKeySequence(Qt::CTRL | Qt::Key_W)),
          &QAction::triggered, this, &MainWindow::closeDocument);
  connect(makeAction("actionSaveAs", tr("Save &As…"), {}, QKeySequence::SaveAs),
          &QAction::triggered, this, &MainWindow::saveInteractively);
  connect(makeAction("actionExportSvg", tr("Export View as &SVG…"), "export"), &QAction::triggered,
          this, [this] { exportInteractively("svg"); });
  connect(makeAction("actionExportPng", tr("Export View as &PNG…"), {}), &QAction::triggered, this,
          [this] { exportInteractively("png"); });
  connect(makeAction("actionExportDot", tr("Export View as &DOT…"), {}), &QAction::triggered, this,
          [this] { exportInteractively("dot"); });
  connect(makeAction("actionQuit", tr("&Quit"), {}, QKeySequence(Qt::CTRL | Qt::Key_Q)),
          &QAction::triggered, this, &QWidget::close);

  auto onPane = [this](void (*f)(GraphPane*)) {
    return [this, f] {
      if (GraphPane* pane = currentPane(); pane && pane->model()) f(pane);
    };
  };
  QAction* zoomIn = makeAction("actionZoomIn", tr("Zoom &In"), "zoom_in", QKeySequence::ZoomIn);
  zoomIn->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  connect(zoomIn, &QAction::triggered, this, onPane([](GraphPane* p) { p->view()->zoomIn(); }));
  connect(makeAction("actionZoomOut", tr("Zoom &Out"), "zoom_out", QKeySequence::ZoomOut),
          &QAction::triggered, this, onPane([](GraphPane* p) { p->view()->zoomOut(); }));
  connect(makeAction("actionZoomFit", tr("Zoom to &Fit"), "zoom_fit",
                     QKeySequence(Qt::CTRL | Qt::Key_0)),
          &QAction::triggered, this, onPane([](GraphPane* p) { p->view()->zoomToFit(); }));
  connect(makeAction("actionZoomReset", tr("&Actual Size"), "zoom_reset",
                     QKeySequence(Qt::CTRL | Qt::Key_1)),
          &QAction::triggered, this, onPane([](GraphPane* p) { p->view()->resetZoom(); }));
  connect(makeAction("actionExpandAll", tr("&Expand All Groups"), "expand_all",
                     QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E)),
          &QAction::triggered, this, onPane([](GraphPane* p) { p->expandAll(); }));
  connect(makeAction("actionCollapseAll", tr("&Collapse All Groups"), "collapse_all",
                     QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C)),
          &QAction::triggered, this, onPane([](GraphPane* p) { p->collapseAll(); }));
  QAction* sideBySide =
      makeAction("actionSideBySide", tr("&Side by Side"), "side_by_side", QKeySequence(Qt::Key_F6));
  sideBySide->setShortcuts({QKeySequence(Qt::Key_F6), QKeySequence(Qt::CTRL | Qt::Key_Backslash)});
  sideBySide->setCheckable(true);
  connect(sideBySide, &QAction::triggered, this, [this](bool on) {
    setSideBySide(on);
    QSettings().setValue("view/sideBySide", on);
  });
  QAction* minimap =
      makeAction("actionMinimap", tr("&Minimap"), "minimap", QKeySequence(Qt::CTRL | Qt::Key_M));
  minimap->setCheckable(true);
  minimap->setChecked(true);
  connect(minimap, &QAction::toggled, this, [this](bool on) {
    for (GraphPane* pane : {m_originalPane, m_optimizedPane, m_stepPane, m_leftPane, m_rightPane})
      pane->view()->setMinimapVisible(on);
  });
  QAction* legend =
      makeAction("actionLegend", tr("&Legend"), "legend", QKeySequence(Qt::CTRL | Qt::Key_L));
  legend->setCheckable(true);
  legend->setChecked(true);
  connect(legend, &QAction::toggled, this, [this](bool on) {
    for (GraphPane* pane : {m_originalPane, m_optimizedPane, m_stepPane, m_leftPane, m_rightPane})
      pane->view()->graphScene()->setLegendVisible(on);
  });
  connect(makeAction("actionBack", tr("&Back"), "back", QKeySequence(Qt::ALT | Qt::Key_Left)),
          &QAction::triggered, this, onPane([](GraphPane* p) { p->goBack(); }));
  connect(
      makeAction("actionForward", tr("&Forward"), "forward", QKeySequence(Qt::ALT | Qt::Key_Right)),
      &QAction::triggered, this, onPane([](GraphPane* p) { p->goForward(); }));

  connect(makeAction("actionFind", tr("&Find…"), "find", QKeySequence::Find), &QAction::triggered,
          m_searchBar, &SearchBar::activate);
  connect(makeAction("actionFindNext", tr("Find &Next"), "find_next", QKeySequence(Qt::Key_F3)),
          &QAction::triggered, this, [this] {
            if (GraphPane* pane = currentPane()) {
              pane->findNext();
              m_searchBar->setResult(pane->currentSearchHit(), pane->searchHitCount());
            }
          });
  connect(makeAction("actionFindPrevious", tr("Find &Previous"), "find_previous",
                     QKeySequence(Qt::SHIFT | Qt::Key_F3)),
          &QAction::triggered, this, [this] {
            if (GraphPane* pane = currentPane()) {
              pane->findPrevious();
              m_searchBar->setResult(pane->currentSearchHit(), pane->searchHitCount());
            }
          });
  connect(makeAction("actionAbout", tr("&About Tensorscope"), {}), &QAction::triggered, this,
          [this] {
            auto* box = new QMessageBox(
                QMessageBox::NoIcon, tr("About Tensorscope"),
                tr("<h3>Tensorscope %1</h3><p>A debugger and profiler for tensor computation "
                   "graphs: open <tt>.tsg</tt> files and ONNX models, inspect the graph and "
                   "its values, step through the optimizer's rewrites.</p>")
                    .arg(QApplication::applicationVersion()),
                QMessageBox::Ok, this);
            box->setIconPixmap(windowIcon().pixmap(64, 64));
            box->setAttribute(Qt::WA_DeleteOnClose);
            box->open();
          });
  createParameterActions();
  for (QAction* a : std::as_const(m_actions))
    QMainWindow::addAction(a);  // shortcuts work without menus
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(m_actions["actionOpen"]);
  QMenu* recent = file->addMenu(tr("Open &Recent"));
  recent->setObjectName(QStringLiteral("menuRecent"));
  auto refill = [this, recent] { m_recentFiles->fillMenu(recent); };
  connect(m_recentFiles, &RecentFiles::changed, this, refill);
  connect(recent, &QMenu::aboutToShow, this, refill);  // another window may have changed the list
  connect(m_recentFiles, &RecentFiles::openRequested, this, &MainWindow::openFile);
  refill();
  file->addAction(m_actions["actionSaveAs"]);
  file->addAction(m_actions["actionClose"]);
  file->addSeparator();
  file->addAction(m_actions["actionExportSvg"]);
  file->addAction(m_actions["actionExportPng"]);
  file->addAction(m_actions["actionExportDot"]);
  file->addSeparator();
  file->addAction(m_actions["actionQuit"]);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  for (const char* name : {"actionFind", "actionFindNext", "actionFindPrevious"})
    edit->addAction(m_actions[name]);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->setObjectName(QStringLiteral("menuView"));
  for (const char* name : {"actionZoomIn", "actionZoomOut", "actionZoomFit", "actionZoomReset"})
    view->addAction(m_actions[name]);
  view->addSeparator();
  view->addAction(m_actions["actionExpandAll"]);
  view->addAction(m_actions["actionCollapseAll"]);
  view->addSeparator();
  for (const char* name : {"actionSideBySide", "actionMinimap", "actionLegend"})
    view->addAction(m_actions[name]);
  QMenu* parameters = view->addMenu(tr("&Parameters"));
  parameters->setObjectName(QStringLiteral("menuParameters"));
  for (const char* name :
       {"actionParametersBoxes", "actionParametersBadges", "actionParametersHidden"})
    parameters->addAction(m_actions[name]);
  view->addSeparator();
  view->addAction(m_actions["actionBack"]);
  view->addAction(m_actions["actionForward"]);

  // Filled by the feature UIs (the debugger, the profiler, Graph > Optimize).
  for (auto [name, title] :
       {std::pair{"menuGraph", QT_TR_NOOP("&Graph")}, std::pair{"menuRun", QT_TR_NOOP("&Run")},
        std::pair{"menuProfile", QT_TR_NOOP("&Profile")}}) {
    QMenu* menu = menuBar()->addMenu(tr(title));
    menu->setObjectName(QString::fromLatin1(name));
  }

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(m_actions["actionAbout"]);
}

QMenu* MainWindow::menu(const QString& objectName) const {
  return menuBar()->findChild<QMenu*>(objectName);
}

void MainWindow::addNodeMenuProvider(NodeMenuProvider provider) {
  m_nodeMenuProviders.push_back(std::move(provider));
}

QMenu* MainWindow::buildNodeMenu(GraphPane* pane, int node, const QString& groupPath) {
  auto* menu = new QMenu(this);
  menu->setObjectName(QStringLiteral("nodeMenu"));
  for (const NodeMenuProvider& provider : m_nodeMenuProviders) {
    if (!menu->isEmpty()) menu->addSeparator();
    provider(menu, pane, node, groupPath);
  }
  return menu;
}

void MainWindow::registerAction(QAction* action) {
  m_actions.insert(action->objectName(), action);
  QMainWindow::addAction(action);
}

void MainWindow::createToolBar() {
  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName(QStringLiteral("mainToolBar"));
  bar->setIconSize(QSize(20, 20));
  for (const char* name : {"actionOpen", "actionExportSvg", "", "actionBack", "actionForward", "",
                           "actionZoomIn", "actionZoomOut", "actionZoomFit", "actionZoomReset", "",
                           "actionExpandAll", "actionCollapseAll", "", "actionSideBySide",
                           "actionMinimap", "actionLegend", "", "actionFind"}) {
    if (*name)
      bar->addAction(m_actions[name]);
    else
      bar->addSeparator();
  }
}

void MainWindow::createDocks() {
  auto makeDock = [this](const QString& name, const QString& title, QWidget* content,
                         Qt::DockWidgetArea area, const QString& icon,
                         const QKeySequence& shortcut) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(content);
    addDockWidget(area, dock);
    QAction* toggle = dock->toggleViewAction();
    toggle->setObjectName(QStringLiteral("action_") + name);
    if (!icon.isEmpty()) toggle->setIcon(QIcon(QStringLiteral(":/icons/%1.svg").arg(icon)));
    toggle->setShortcut(shortcut);
    m_actions.insert(toggle->objectName(), toggle);
    QMainWindow::addAction(toggle);
    return dock;
  };
  m_inspector = new InspectorPanel;
  m_history = new RewriteHistoryPanel;
  m_log = new QPlainTextEdit;
  m_log->setReadOnly(true);
  m_log->setMaximumBlockCount(5000);
  QDockWidget* inspector =
      makeDock("inspectorDock", tr("Inspector"), m_inspector, Qt::RightDockWidgetArea, "inspector",
               QKeySequence(Qt::CTRL | Qt::Key_I));
  QDockWidget* history =
      makeDock("historyDock", tr("Rewrite History"), m_history, Qt::RightDockWidgetArea, "history",
               QKeySequence(Qt::CTRL | Qt::Key_H));
  QDockWidget* log = makeDock("logDock", tr("Log"), m_log, Qt::BottomDockWidgetArea, {}, {});
  // The graph gets the width: the two docks share the right side as tabs, the inspector in front.
  tabifyDockWidget(inspector, history);
  inspector->raise();
  resizeDocks({inspector}, {440}, Qt::Horizontal);
  resizeDocks({log}, {120}, Qt::Vertical);
  log->hide();
  QMenu* panels = menuBar()->findChild<QMenu*>(QStringLiteral("menuView"))->addMenu(tr("&Panels"));
  for (QDockWidget* dock : {inspector, history, log}) panels->addAction(dock->toggleViewAction());

  connect(m_history, &RewriteHistoryPanel::stepSelected, this,
          [this](int order, std::shared_ptr<const vis::ViewModel> before,
                 std::shared_ptr<const vis::ViewModel> after, QSet<int> removed, QSet<int> added) {
            showRewriteComparison(order, std::move(before), std::move(after), removed, added);
          });
  connect(m_history, &RewriteHistoryPanel::stepGraphReady, this,
          [this](int step, std::shared_ptr<const vis::ViewModel> graph) {
            showStep(step, std::move(graph));
          });
  connect(m_history, &RewriteHistoryPanel::replayUnavailable, this,
          [this](const QString& message) { appendLog(tr("Rewrite history: %1").arg(message)); });
}

QDockWidget* MainWindow::dock(const QString& objectName) const {
  return findChild<QDockWidget*>(objectName, Qt::FindDirectChildrenOnly);
}

void MainWindow::createStatusBar() {
  m_layoutLabel = new QLabel;
  m_countsLabel = new QLabel;
  m_zoomLabel = new QLabel;
  m_zoomLabel->setMinimumWidth(70);
  m_zoomLabel->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  m_progress = new QProgressBar;
  m_progress->setRange(0, DocumentLoader::kStageCount);
  m_progress->setTextVisible(true);
  m_progress->setMaximumWidth(320);
  m_progress->hide();
  m_cancelButton = new QToolButton;
  m_cancelButton->setObjectName(QStringLiteral("cancelLoadButton"));
  m_cancelButton->setIcon(QIcon(QStringLiteral(":/icons/close.svg")));
  m_cancelButton->setToolTip(tr("Cancel loading"));
  m_cancelButton->setAutoRaise(true);
  m_cancelButton->hide();
  connect(m_cancelButton, &QToolButton::clicked, m_loader, &DocumentLoader::cancel);
  statusBar()->addWidget(m_layoutLabel);
  statusBar()->addPermanentWidget(m_progress);
  statusBar()->addPermanentWidget(m_cancelButton);
  statusBar()->addPermanentWidget(m_countsLabel);
  statusBar()->addPermanentWidget(m_zoomLabel);
}

void MainWindow::updateStatus() {
  GraphPane* pane = currentPane();
  const bool shown = pane && pane->model();
  if (shown && m_paneCounts.contains(pane)) {
    const auto [nodes, edges] = m_paneCounts.value(pane);
    m_countsLabel->setText(tr("%1 nodes, %2 edges shown").arg(nodes).arg(edges));
  } else {
    m_countsLabel->clear();
  }
  m_zoomLabel->setText(shown ? QStringLiteral("%1%").arg(qRound(pane->view()->zoom() * 100))
                             : QString());
  bool pending = false;
  for (GraphPane* p : {m_originalPane, m_optimizedPane, m_stepPane, m_leftPane, m_rightPane})
    pending = pending || (p->isVisible() && p->isLayoutPending());
  m_layoutLabel->setText(pending ? tr("Laying out…") : QString());
}

QString MainWindow::statusCounts() const {
  return m_countsLabel->text();
}
QString MainWindow::statusZoom() const {
  return m_zoomLabel->text();
}

void MainWindow::updateActions() {
  const bool open = m_document != nullptr;
  GraphPane* pane = currentPane();
  const bool shown = pane && pane->model();
  m_actions["actionClose"]->setEnabled(open || m_loader->isLoading());
  m_actions["actionSaveAs"]->setEnabled(open);
  for (const char* name :
       {"actionExportSvg", "actionExportPng", "actionExportDot", "actionZoomIn", "actionZoomOut",
        "actionZoomFit", "actionZoomReset", "actionExpandAll", "actionCollapseAll", "actionFind",
        "actionFindNext", "actionFindPrevious"})
    m_actions[name]->setEnabled(shown);
  m_actions["actionBack"]->setEnabled(shown && pane->canGoBack());
  m_actions["actionForward"]->setEnabled(shown && pane->canGoForward());
  QAction* sideBySide = m_actions["actionSideBySide"];
  sideBySide->setEnabled(open && m_document->optimizedModel);
  const QSignalBlocker blocker(sideBySide);
  sideBySide->setChecked(isSideBySide());
  updateParameterActions();
}

void MainWindow::appendLog(const QString& line) {
  m_log->appendPlainText(QStringLiteral("[%1] %2").arg(
      QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), line));
}

QMessageBox* MainWindow::errorDialog() const {
  return m_errorDialog.data();
}

void MainWindow::showError(const QString& title, const QString& text) {
  // open(), not exec(): the event loop (layouts, tests, the screenshot timer) keeps running.
  if (m_errorDialog) m_errorDialog->close();
  auto* box = new QMessageBox(QMessageBox::Critical, title, title, QMessageBox::Ok, this);
  box->setInformativeText(text);
  box->setAttribute(Qt::WA_DeleteOnClose);
  m_errorDialog = box;
  box->open();
  appendLog(title + QStringLiteral(": ") + text);
}

QString MainWindow::groupStateKey(const QString& path, const QString& role) {
  // Paths hold '/' (QSettings' group separator) and characters INI keys mangle: key by a hash.
  const QByteArray hash = QCryptographicHash::hash(QFileInfo(path).absoluteFilePath().toUtf8(),
                                                   QCryptographicHash::Sha1)
                              .toHex()
                              .left(16);
  return QStringLiteral("groupState/%1/%2").arg(QString::fromLatin1(hash), role);
}

void MainWindow::readSettings() {
  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  m_actions["actionMinimap"]->setChecked(settings.value("view/minimap", true).toBool());
  m_actions["actionLegend"]->setChecked(settings.value("view/legend", true).toBool());
}

void MainWindow::writeSettings() {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  settings.setValue("view/minimap", m_actions["actionMinimap"]->isChecked());
  settings.setValue("view/legend", m_actions["actionLegend"]->isChecked());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  writeSettings();
  m_loader->cancel();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile()) {
      event->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList files;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) files << url.toLocalFile();
  if (files.isEmpty()) return;
  event->acceptProposedAction();
  openFile(files.takeFirst());
  // Each further file gets its own window, as on the command line.
  for (const QString& file : files) {
    auto* window = new MainWindow;
    window->setAttribute(Qt::WA_DeleteOnClose);
    window->show();
    window->openFile(file);
  }
}

}  // namespace tscope::gui
