// DebugUi: actions, menus, the toolbar, the docks, the dialogs and the node context menu. The
// view side (snapshots, decorations, navigation, the banner) is in debug_ui_view.cpp.
#include "gui/app/debug/debug_ui.h"

#include "gui/app/debug/debug_dialogs.h"
#include "gui/app/debug/debug_models.h"
#include "gui/app/debug/debug_nodes.h"
#include "gui/app/debug/debug_value_source.h"
#include "gui/app/device_choice.h"
#include "gui/app/graph_pane.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/main_window.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

namespace tscope::gui {

namespace debug = engine::debug;
using debug::SessionPhase;

DebugUi::DebugUi(MainWindow* window) : QObject(window), m_window(window) {
  setObjectName(QStringLiteral("debugUi"));
  m_controller = new DebugController(this);
  m_values = std::make_shared<DebugValueSource>();
  window->inspector()->addValueSource(m_values);
  m_flashTimer = new QTimer(this);
  m_flashTimer->setSingleShot(true);
  m_flashTimer->setInterval(1000);
  connect(m_flashTimer, &QTimer::timeout, this, [this] {
    for (GraphPane* pane : {m_window->originalPane(), m_window->optimizedPane(),
                            m_window->leftPane(), m_window->rightPane()})
      pane->setDecorations(QStringLiteral("flash"), nullptr);
  });
  createActions();
  createDocks();
  createBanner();
  addNodeMenu();
  connectInspector();
  connect(window, &MainWindow::documentLoaded, this, &DebugUi::onDocument);
  connect(window, &MainWindow::documentClosed, this, &DebugUi::onDocument);
  connect(m_controller, &DebugController::snapshotChanged, this, &DebugUi::onSnapshot);
  connect(m_controller, &DebugController::breakpointsChanged, this, &DebugUi::updateDecorations);
  connect(m_controller, &DebugController::nanEventsChanged, this, &DebugUi::onNanEvents);
  connect(m_controller, &DebugController::recomputed, this, &DebugUi::onRecomputed);
  connect(m_controller, &DebugController::compiled, this, &DebugUi::rebuildMappers);
  connect(m_controller, &DebugController::busyChanged, this, &DebugUi::updateActions);
  connect(m_controller, &DebugController::editsChanged, this, &DebugUi::updateActions);
  connect(m_controller, &DebugController::message, this,
          [this](const QString& text) { m_window->statusBar()->showMessage(text, 8000); });
  connect(m_controller, &DebugController::failed, this, [this](const QString& text) {
    m_lastError = text;
    m_window->statusBar()->showMessage(tr("Debugger: %1").arg(text), 15000);
    auto* box =
        new QMessageBox(QMessageBox::Warning, tr("Debugger"), text, QMessageBox::Ok, m_window);
    box->setObjectName(QStringLiteral("debugErrorDialog"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
  });
  updateActions();
}

DebugUi::~DebugUi() {
  // The window's panes are gone by now: nothing may react to the controller's teardown.
  m_controller->disconnect();
  delete m_controller;
}

QAction* DebugUi::add(const QString& name, const QString& text, const QKeySequence& shortcut) {
  auto* a = new QAction(text, this);
  a->setObjectName(name);
  if (!shortcut.isEmpty()) {
    a->setShortcut(shortcut);
    a->setToolTip(
        QStringLiteral("%1 (%2)").arg(QString(text).remove('&').remove(QStringLiteral("…")),
                                      shortcut.toString(QKeySequence::NativeText)));
  }
  m_window->registerAction(a);
  return a;
}

void DebugUi::createActions() {
  QMenu* menu = m_window->menu(QStringLiteral("menuRun"));
  auto item = [&](const QString& name, const QString& text, const QKeySequence& key, auto&& slot) {
    QAction* a = add(name, text, key);
    connect(a, &QAction::triggered, this, slot);
    menu->addAction(a);
    return a;
  };
  item("actionDebugRun", tr("&Run"), QKeySequence(Qt::Key_F5), [this] { m_controller->run(); });
  item("actionDebugContinue", tr("&Continue"), {}, [this] { m_controller->run(); });
  item("actionDebugPause", tr("&Pause"), {}, [this] { m_controller->interrupt(); });
  item("actionDebugStop", tr("S&top"), QKeySequence(Qt::SHIFT | Qt::Key_F5),
       [this] { m_controller->stop(); });
  item("actionDebugRestart", tr("R&estart"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F5),
       [this] { m_controller->restart(); });
  menu->addSeparator();
  item("actionDebugStep", tr("&Step"), QKeySequence(Qt::Key_F10), [this] { m_controller->step(); });
  item("actionDebugStepInto", tr("Step &Into"), QKeySequence(Qt::Key_F11),
       [this] { m_controller->stepInto(); });
  item("actionDebugStepOut", tr("Step &Out"), QKeySequence(Qt::SHIFT | Qt::Key_F11),
       [this] { m_controller->stepOut(); });
  item("actionDebugRunToNode", tr("Run to &Node"), QKeySequence(Qt::CTRL | Qt::Key_F10), [this] {
    GraphPane* pane = targetPane();
    const auto mapper = mapperFor(pane);
    const std::int64_t id = mapper ? mapper->compiledNode(pane->selectedNode()) : -1;
    if (id < 0)
      m_window->statusBar()->showMessage(
          tr("Run to Node: select a node that the compiled graph runs"), 8000);
    else
      m_controller->runToNode(id);
  });
  menu->addSeparator();
  item("actionDebugInputs", tr("&Inputs…"), {}, [this] { openInputsDialog(); });
  QAction* guard = item("actionDebugNanGuard", tr("&NanGuard"), {},
                        [this](bool on) { m_controller->setNanGuardEnabled(on); });
  guard->setCheckable(true);
  item("actionDebugNanGuardSettings", tr("NanGuard &Settings…"), {},
       [this] { openNanGuardDialog(); });
  menu->addSeparator();
  item("actionDebugToggleBreakpoint", tr("Toggle &Breakpoint"), QKeySequence(Qt::Key_F9), [this] {
    GraphPane* pane = targetPane();
    const auto mapper = mapperFor(pane);
    const std::int64_t id = mapper ? mapper->originalNode(pane->selectedNode()) : -1;
    if (id >= 0) m_controller->toggleNodeBreakpoint(id);
  });
  item("actionDebugAddBreakpoint", tr("&Add Breakpoint…"), {}, [this] {
    GraphPane* pane = targetPane();
    const auto mapper = mapperFor(pane);
    const std::int64_t id = mapper ? mapper->originalNode(pane->selectedNode()) : -1;
    openBreakpointDialog(QStringLiteral("node"), id >= 0 ? QString::number(id) : QString());
  });
  item("actionDebugWatch", tr("&Watch Selected Value"), {}, [this] {
    const QString name = valueName(targetPane(), targetPane()->selectedNode());
    if (!name.isEmpty()) m_watchModel->addWatch(name);
  });
  menu->addSeparator();
  item("actionDebugEditValue", tr("&Edit Value…"), {}, [this] { editSelectedValue(); });
  item("actionDebugRecompute", tr("Re&compute"), QKeySequence(Qt::CTRL | Qt::Key_R),
       [this] { m_controller->recompute(); });
  item("actionDebugUndoEdit", tr("&Undo Edit"), {}, [this] {
    if (!m_controller->edits().empty()) {
      const auto& [frame, name] = m_controller->edits().back();
      m_controller->undoEdit(name, frame);
    }
  });
  item("actionDebugSaveFailure", tr("Save &Failure…"), {}, [this] { saveFailureInteractively(); });

  m_modeCombo = new QComboBox;
  m_modeCombo->setObjectName(QStringLiteral("debugModeCombo"));
  m_modeCombo->setToolTip(tr("How the debugger compiles the graph"));
  for (engine::Mode m :
       {engine::Mode::None, engine::Mode::FastCompile, engine::Mode::FastRun, engine::Mode::Debug})
    m_modeCombo->addItem(qstr(engine::modeName(m)), static_cast<int>(m));
  connect(m_modeCombo, &QComboBox::currentIndexChanged, this, [this] {
    m_controller->setMode(static_cast<engine::Mode>(m_modeCombo->currentData().toInt()));
    updateActions();
  });
  // The device (gui/app/device_choice.h).
  m_deviceCombo = new QComboBox;
  m_deviceCombo->setObjectName(QStringLiteral("debugDeviceCombo"));
  offerDevices(m_deviceCombo);
  connect(m_deviceCombo, &QComboBox::currentIndexChanged, this, [this] {
    m_controller->setDevice(static_cast<engine::Device>(m_deviceCombo->currentData().toInt()));
    updateActions();
  });
  QToolBar* bar = m_window->addToolBar(tr("Run"));
  bar->setObjectName(QStringLiteral("debugToolBar"));
  for (const char* name :
       {"actionDebugRun", "actionDebugPause", "actionDebugStop", "actionDebugRestart", "",
        "actionDebugStep", "actionDebugStepInto", "actionDebugStepOut", "actionDebugRunToNode", "",
        "actionDebugNanGuard", "actionDebugInputs"}) {
    if (*name)
      bar->addAction(m_window->action(QString::fromLatin1(name)));
    else
      bar->addSeparator();
  }
  bar->addWidget(m_modeCombo);
  bar->addWidget(m_deviceCombo);
}

void DebugUi::createDocks() {
  auto makeDock = [this](const QString& name, const QString& title, QWidget* content) {
    auto* dock = new QDockWidget(title, m_window);
    dock->setObjectName(name);
    dock->setWidget(content);
    m_window->addDockWidget(Qt::BottomDockWidgetArea, dock);
    QAction* toggle = dock->toggleViewAction();
    toggle->setObjectName(QStringLiteral("action_") + name);
    m_window->registerAction(toggle);
    dock->hide();
    return dock;
  };
  auto table = [](QAbstractItemModel* model, const QString& name) {
    auto* view = new QTableView;
    view->setObjectName(name);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->horizontalHeader()->setStretchLastSection(true);
    view->verticalHeader()->hide();
    return view;
  };

  // Breakpoints.
  m_breakpointModel = new BreakpointModel(m_controller, this);
  m_breakpointView = table(m_breakpointModel, QStringLiteral("breakpointView"));
  auto* bpWidget = new QWidget;
  auto* bpLayout = new QVBoxLayout(bpWidget);
  bpLayout->setContentsMargins(2, 2, 2, 2);
  bpLayout->addWidget(m_breakpointView, 1);
  auto* bpButtons = new QHBoxLayout;
  auto* addBp = new QPushButton(tr("Add…"));
  auto* removeBp = new QPushButton(tr("Remove"));
  connect(addBp, &QPushButton::clicked, this, [this] { openBreakpointDialog("node", {}); });
  connect(removeBp, &QPushButton::clicked, this, [this] {
    const QModelIndex i = m_breakpointView->currentIndex();
    if (i.isValid()) m_controller->removeBreakpoint(i.row());
  });
  bpButtons->addWidget(addBp);
  bpButtons->addWidget(removeBp);
  bpButtons->addStretch(1);
  bpLayout->addLayout(bpButtons);
  QDockWidget* bpDock = makeDock("breakpointsDock", tr("Breakpoints"), bpWidget);

  // Call stack.
  m_callStackModel = new CallStackModel(m_controller, this);
  m_callStackView = table(m_callStackModel, QStringLiteral("callStackView"));
  connect(m_callStackView, &QTableView::clicked, this, [this](const QModelIndex& i) {
    if (i.isValid()) showFrame(m_callStackModel->frameOf(i.row()));
  });
  QDockWidget* stackDock = makeDock("callStackDock", tr("Call Stack"), m_callStackView);

  // Watch.
  m_watchModel = new WatchModel(m_controller, this);
  m_watchView = table(m_watchModel, QStringLiteral("watchView"));
  m_watchView->setItemDelegateForColumn(WatchModel::History, new SparklineDelegate(m_watchView));
  auto* watchWidget = new QWidget;
  auto* watchLayout = new QVBoxLayout(watchWidget);
  watchLayout->setContentsMargins(2, 2, 2, 2);
  watchLayout->addWidget(m_watchView, 1);
  auto* watchRow = new QHBoxLayout;
  auto* watchEdit = new QLineEdit;
  watchEdit->setObjectName(QStringLiteral("watchEdit"));
  watchEdit->setPlaceholderText(tr("Variable name or node:ID.K"));
  auto* removeWatch = new QPushButton(tr("Remove"));
  connect(watchEdit, &QLineEdit::returnPressed, this, [this, watchEdit] {
    m_watchModel->addWatch(watchEdit->text().trimmed());
    watchEdit->clear();
  });
  connect(removeWatch, &QPushButton::clicked, this, [this] {
    const QModelIndex i = m_watchView->currentIndex();
    if (i.isValid()) m_watchModel->removeWatch(i.row());
  });
  watchRow->addWidget(watchEdit, 1);
  watchRow->addWidget(removeWatch);
  watchLayout->addLayout(watchRow);
  QDockWidget* watchDock = makeDock("watchDock", tr("Watch"), watchWidget);

  // NanGuard alerts, with the chain of the selected event.
  m_alertsModel = new AlertsModel(m_controller, this);
  m_alertsView = table(m_alertsModel, QStringLiteral("alertsView"));
  m_chainList = new QListWidget;
  m_chainList->setObjectName(QStringLiteral("nanChainList"));
  connect(m_alertsView, &QTableView::clicked, this, [this](const QModelIndex& i) {
    if (i.isValid()) showNanEvent(i.row());
  });
  connect(m_chainList, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { showChainLink(m_chainList->row(item)); });
  auto* alertsSplit = new QSplitter(Qt::Horizontal);
  alertsSplit->addWidget(m_alertsView);
  alertsSplit->addWidget(m_chainList);
  alertsSplit->setStretchFactor(0, 3);
  alertsSplit->setStretchFactor(1, 2);
  QDockWidget* alertsDock = makeDock("alertsDock", tr("NanGuard Alerts"), alertsSplit);

  // Nodes: the program's listing with a breakpoint margin.
  m_nodeListModel = new NodeListModel(m_controller, this);
  m_nodeListView = table(m_nodeListModel, QStringLiteral("nodeListView"));
  m_nodeListView->horizontalHeader()->setSectionResizeMode(NodeListModel::Margin,
                                                           QHeaderView::Fixed);
  m_nodeListView->setColumnWidth(NodeListModel::Margin, 22);
  connect(m_nodeListView, &QTableView::clicked, this, &DebugUi::nodeListClicked);
  QDockWidget* nodesDock = makeDock("nodesDock", tr("Nodes"), m_nodeListView);

  m_window->tabifyDockWidget(bpDock, stackDock);
  m_window->tabifyDockWidget(stackDock, watchDock);
  m_window->tabifyDockWidget(watchDock, alertsDock);
  m_window->tabifyDockWidget(alertsDock, nodesDock);
  QMenu* panels = m_window->menu(QStringLiteral("menuRun"))->addMenu(tr("&Panels"));
  panels->setObjectName(QStringLiteral("menuDebugPanels"));
  for (QDockWidget* dock : {bpDock, stackDock, watchDock, alertsDock, nodesDock})
    panels->addAction(dock->toggleViewAction());
}

void DebugUi::nodeListClicked(const QModelIndex& index) {
  if (!index.isValid()) return;
  const std::int64_t id = m_nodeListModel->nodeId(index.row());
  if (id < 0) return;
  if (index.column() == NodeListModel::Margin) {
    m_controller->toggleNodeBreakpoint(id);
    return;
  }
  GraphPane* pane = targetPane();
  const auto mapper = mapperFor(pane);
  if (!mapper) return;
  const std::vector<int> nodes = mapper->viewNodesOfOriginal(id);
  if (!nodes.empty()) pane->selectNode(nodes.front());  // opens the groups that hide it
}

void DebugUi::addNodeMenu() {
  m_window->addNodeMenuProvider([this](QMenu* menu, GraphPane* pane, int node, const QString&) {
    const auto mapper = mapperFor(pane);
    if (!mapper || node < 0) return;
    const std::int64_t original = mapper->originalNode(node);
    if (original >= 0) {
      const bool has = m_controller->nodeBreakpoint(original) >= 0;
      QAction* toggle = menu->addAction(has ? tr("Remove Breakpoint") : tr("Add Breakpoint"));
      toggle->setObjectName(QStringLiteral("nodeMenuToggleBreakpoint"));
      connect(toggle, &QAction::triggered, this,
              [this, original] { m_controller->toggleNodeBreakpoint(original); });
      QAction* dialog = menu->addAction(tr("Breakpoint…"));
      dialog->setObjectName(QStringLiteral("nodeMenuBreakpoint"));
      connect(dialog, &QAction::triggered, this, [this, original] {
        openBreakpointDialog(QStringLiteral("node"), QString::number(original));
      });
      const std::int64_t compiled = mapper->compiledNode(node);
      QAction* runTo = menu->addAction(tr("Run to Node"));
      runTo->setObjectName(QStringLiteral("nodeMenuRunToNode"));
      runTo->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_F10));
      runTo->setEnabled(compiled >= 0 && !m_controller->isBusy() && m_controller->document());
      connect(runTo, &QAction::triggered, this,
              [this, compiled] { m_controller->runToNode(compiled); });
    }
    const QString name = valueName(pane, node);
    if (!name.isEmpty()) {
      QAction* watch = menu->addAction(tr("Watch %1").arg(name));
      watch->setObjectName(QStringLiteral("nodeMenuWatch"));
      connect(watch, &QAction::triggered, this, [this, name] {
        m_watchModel->addWatch(name);
        if (QDockWidget* d = m_window->dock(QStringLiteral("watchDock"))) {
          d->show();
          d->raise();
        }
      });
      QAction* edit = menu->addAction(tr("Edit Value…"));
      edit->setObjectName(QStringLiteral("nodeMenuEditValue"));
      edit->setEnabled(m_controller->phase() == SessionPhase::Paused);
      connect(edit, &QAction::triggered, this, [this, pane, node] {
        pane->selectNode(node);
        editSelectedValue();
      });
    }
  });
}

void DebugUi::updateActions() {
  const bool doc = m_controller->document() != nullptr;
  const bool busy = m_controller->isBusy();
  const SessionPhase phase = m_controller->phase();
  const bool paused = !busy && (phase == SessionPhase::Paused || phase == SessionPhase::Ready);
  auto enable = [this](const char* name, bool on) {
    if (QAction* a = m_window->action(QString::fromLatin1(name))) a->setEnabled(on);
  };
  for (const char* name : {"actionDebugRun", "actionDebugStep", "actionDebugStepInto",
                           "actionDebugRunToNode", "actionDebugInputs"})
    enable(name, doc && !busy);
  enable("actionDebugContinue", doc && paused);
  enable("actionDebugStepOut", doc && paused);
  enable("actionDebugPause", busy && m_controller->isCompiled());
  enable("actionDebugStop", busy || paused);
  enable("actionDebugRestart", doc && !busy && m_controller->isCompiled());
  enable("actionDebugEditValue", paused);
  enable("actionDebugRecompute", paused && !m_controller->edits().empty());
  enable("actionDebugUndoEdit", paused && !m_controller->edits().empty());
  enable("actionDebugSaveFailure", doc && !busy);
  for (const char* name : {"actionDebugToggleBreakpoint", "actionDebugAddBreakpoint",
                           "actionDebugWatch", "actionDebugNanGuardSettings"})
    enable(name, doc);
  m_modeCombo->setEnabled(doc && !busy);
  m_deviceCombo->setEnabled(doc && !busy);
}

void DebugUi::openBreakpointDialog(const QString& target, const QString& key) {
  auto* dialog = new BreakpointDialog(m_window, target, key);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog] {
    m_controller->addBreakpoint(dialog->spec());
    if (QDockWidget* d = m_window->dock(QStringLiteral("breakpointsDock"))) {
      d->show();
      d->raise();
    }
  });
  dialog->open();
}

void DebugUi::openInputsDialog() {
  const auto doc = m_controller->document();
  if (!doc) return;
  auto* dialog = new InputsDialog(m_window, *doc->original, m_controller->inputs());
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this,
          [this, dialog] { m_controller->setInputs(dialog->inputs()); });
  dialog->open();
}

void DebugUi::openNanGuardDialog() {
  auto* dialog = new NanGuardDialog(m_window, m_controller->nanGuardOptions(),
                                    m_controller->nanGuardCollects());
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog] {
    m_controller->setNanGuardOptions(dialog->options(), dialog->collect());
    m_controller->setNanGuardEnabled(true);
    m_window->action(QStringLiteral("actionDebugNanGuard"))->setChecked(true);
  });
  dialog->open();
}

void DebugUi::saveFailureInteractively() {
  const auto doc = m_controller->document();
  if (!doc) return;
  auto* dialog =
      new QFileDialog(m_window, tr("Save Failure"),
                      QFileInfo(doc->path).absolutePath() + QStringLiteral("/") +
                          QFileInfo(doc->path).completeBaseName() + QStringLiteral("_failure.tsg"),
                      tr("Tensorscope graphs (*.tsg)"));
  dialog->setAcceptMode(QFileDialog::AcceptSave);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QFileDialog::fileSelected, this,
          [this](const QString& path) { m_controller->saveFailure(path); });
  dialog->open();
}

void DebugUi::editSelectedValue() {
  GraphPane* pane = targetPane();
  const int node = pane->selectedNode();
  const QString name = valueName(pane, node);
  const auto snapshot = m_controller->snapshot();
  const DebugValue* value = nullptr;
  if (snapshot && !name.isEmpty()) {
    value = snapshot->findByName(name.toStdString());
    if (!value && name.startsWith(QLatin1String("node:"))) {
      const QStringList parts = name.mid(5).split('.');
      value = snapshot->find(0, parts.value(0).toLongLong(), parts.value(1).toInt());
    }
  }
  if (!value) {
    m_window->statusBar()->showMessage(
        tr("Edit Value: select a node whose value is computed at this pause"), 8000);
    return;
  }
  auto* dialog = new EditValueDialog(m_window, name, value->view.value);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this,
          [this, dialog] { m_controller->setValue(dialog->name(), dialog->value()); });
  dialog->open();
}

}  // namespace tscope::gui
