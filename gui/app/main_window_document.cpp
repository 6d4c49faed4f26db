// MainWindow: the document side — loading, the panes and their tabs, side by side with
// synchronised selection, the rewrite history's comparisons and steps, export.

#include "gui/app/counterparts.h"
#include "gui/app/debug/debug_ui.h"
#include "gui/app/document_io.h"
#include "gui/app/document_loader.h"
#include "gui/app/graph_pane.h"
#include "gui/app/history/rewrite_history_panel.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/optimize_ui.h"
#include "gui/app/profile/profile_ui.h"
#include "gui/app/recent_files.h"
#include "gui/app/search_bar.h"
#include "visualizers/model/palette.h"
#include "visualizers/scene/exporters.h"
#include "visualizers/threads/hand_off.h"

#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFuture>
#include <QLabel>
#include <QLocale>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolButton>

#include <algorithm>
#include <stdexcept>

namespace tscope::gui {

namespace {

const QColor kRemovedColor(220, 50, 47);  // a rewrite's removed nodes, in the "before" graph
const QColor kAddedColor(46, 160, 67);    // its added nodes, in the "after" graph
constexpr int kRevealLimit = 64;          // highlighted nodes whose groups a comparison opens

// Opens only the groups around the first highlighted nodes: a comparison shows what changed, with
// the rest of the graph collapsed around it.
vis::GroupState revealing(const vis::ViewModel& model, const QSet<int>& nodes) {
  vis::GroupState state;
  std::vector<int> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.size() > static_cast<std::size_t>(kRevealLimit)) sorted.resize(kRevealLimit);
  for (int node : sorted)
    if (node >= 0 && node < static_cast<int>(model.nodes().size()))
      state = model.revealed(node, std::move(state));
  return state;
}

}  // namespace

GraphPane* MainWindow::createPane() {
  auto* pane = new GraphPane(m_layoutService);
  connectPane(pane);
  return pane;
}

void MainWindow::connectPane(GraphPane* pane) {
  connect(pane, &GraphPane::nodeSelected, this, [this, pane](int node) {
    if (m_syncing) return;
    if (pane == m_syncPane && node == m_syncNode) {
      m_syncPane = nullptr;
      return;
    }
    if (pane == m_leftPane || pane == m_rightPane) m_activeSide = pane;
    if (pane->model()) m_inspector->showNode(pane->model(), node);
    syncSelection(pane, node);
    updateActions();
  });
  connect(pane, &GraphPane::groupStateChanged, this, [this, pane](const vis::GroupState& state) {
    const QString role = m_paneRole.value(pane);
    if (m_document && !role.isEmpty())
      QSettings().setValue(groupStateKey(m_document->path, role), state.toStringList());
  });
  connect(pane, &GraphPane::layoutStarted, this, &MainWindow::updateStatus);
  connect(pane, &GraphPane::layoutFinished, this, [this, pane](int nodes, int edges) {
    m_paneCounts.insert(pane, {nodes, edges});
    updateStatus();
  });
  connect(pane, &GraphPane::layoutFailed, this, [this](const QString& message) {
    appendLog(tr("Layout failed: %1").arg(message));
    statusBar()->showMessage(tr("Layout failed: %1").arg(message), 10000);
    updateStatus();
  });
  connect(pane, &GraphPane::zoomChanged, this, &MainWindow::updateStatus);
  connect(pane, &GraphPane::historyChanged, this, &MainWindow::updateActions);
  connect(pane, &GraphPane::contextMenuRequested, this,
          [this, pane](int node, const QString& groupPath, const QPoint& at) {
            QMenu* menu = buildNodeMenu(pane, node, groupPath);
            if (menu->isEmpty()) return menu->deleteLater();
            menu->setAttribute(Qt::WA_DeleteOnClose);
            menu->popup(at);
          });
}

GraphPane* MainWindow::currentPane() const {
  if (isSideBySide()) return m_activeSide ? m_activeSide.data() : m_leftPane;
  return qobject_cast<GraphPane*>(m_tabs->currentWidget());
}

QStringList MainWindow::tabTitles() const {
  QStringList titles;
  for (int i = 0; i < m_tabs->count(); ++i) titles << m_tabs->tabText(i);
  return titles;
}

bool MainWindow::isSideBySide() const {
  return m_centre->currentWidget() == m_splitter;
}

bool MainWindow::isBusy() const {
  if (m_loader->isLoading() || m_history->isBusy()) return true;
  if (m_debugUi && m_debugUi->isBusy()) return true;
  if (m_optimizeUi && m_optimizeUi->isRunning()) return true;
  if (m_profileUi && m_profileUi->isBusy()) return true;
  const std::vector<GraphPane*> shown = isSideBySide()
                                            ? std::vector<GraphPane*>{m_leftPane, m_rightPane}
                                            : std::vector<GraphPane*>{currentPane()};
  return std::any_of(shown.begin(), shown.end(), [](GraphPane* pane) {
    return pane && pane->model() && pane->isLayoutPending();
  });
}

void MainWindow::openFile(const QString& path) {
  m_loader->load(path);
  updateActions();
}

void MainWindow::openInteractively() {
  const QString dir = m_document ? QFileInfo(m_document->path).absolutePath() : QString();
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open Graph"), dir,
      tr("Graphs (*.tsg *.onnx);;Tensorscope graphs (*.tsg);;ONNX models (*.onnx);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void MainWindow::saveInteractively() {
  if (!m_document) return;
  // An ONNX model (or any other file) is offered as a .tsg beside it.
  const QFileInfo info(m_document->path);
  const QString suggested =
      info.absolutePath() + QLatin1Char('/') + info.completeBaseName() + QStringLiteral(".tsg");
  QString path = QFileDialog::getSaveFileName(this, tr("Save As"), suggested,
                                              tr("Tensorscope graphs (*.tsg)"));
  if (path.isEmpty()) return;
  if (!path.endsWith(QStringLiteral(".tsg"), Qt::CaseInsensitive)) path += QStringLiteral(".tsg");
  saveDocumentAs(path);
}

void MainWindow::setPaneModel(GraphPane* pane, const QString& role,
                              std::shared_ptr<const vis::ViewModel> model) {
  std::optional<vis::GroupState> state;
  if (m_document && !role.isEmpty()) {
    const QVariant stored = QSettings().value(groupStateKey(m_document->path, role));
    if (stored.isValid()) state = vis::GroupState::fromStringList(stored.toStringList());
  }
  m_paneCounts.remove(pane);
  // The role is set first: setModel reports the state it starts with, which is then stored.
  if (role.isEmpty())
    m_paneRole.remove(pane);
  else
    m_paneRole.insert(pane, role);
  pane->setModel(std::move(model), state);
}

void MainWindow::onLoaded(std::shared_ptr<const Document> document) {
  m_progress->hide();
  m_cancelButton->hide();
  m_recentFiles->add(document->path);
  showDocument(std::move(document));
}

void MainWindow::replaceDocument(std::shared_ptr<const Document> document, bool modified) {
  showDocument(std::move(document));
  setWindowModified(modified);
}

void MainWindow::showOptimized() {
  if (!m_document || !m_document->optimizedModel || isSideBySide()) return;
  m_tabs->setCurrentWidget(m_optimizedPane);
}

void MainWindow::saveDocumentAs(const QString& path) {
  const std::shared_ptr<const Document> document = m_document;
  if (!document) return;
  statusBar()->showMessage(tr("Saving %1...").arg(QFileInfo(path).fileName()));
  vis::runOnWorker(
      this,
      [document, path]() -> QString {
        try {
          saveDocument(*document, path);
          return {};
        } catch (const std::exception& e) {
          return QString::fromStdString(e.what());
        }
      },
      [this, document, path](const QString& error) {
        if (!error.isEmpty()) {
          statusBar()->clearMessage();
          showError(tr("Save As"), tr("Could not save %1: %2").arg(path, error));
          emit saveFinished(path, false, error);
          return;
        }
        statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
        if (m_document == document) {
          // The window now shows the saved file: same graphs, views and panes.
          m_document = savedAs(*document, path);
          setWindowTitle(tr("%1[*] — Tensorscope").arg(QFileInfo(path).fileName()));
          setWindowFilePath(m_document->path);
          setWindowModified(false);
          m_inspector->setDocument(m_document);
          m_recentFiles->add(m_document->path);
          emit documentLoaded(m_document->path);
        }
        emit saveFinished(path, true, QString());
      });
}

void MainWindow::showDocument(std::shared_ptr<const Document> document) {
  closeDocument();
  m_document = document;
  const QString name = QFileInfo(document->path).fileName();
  setWindowTitle(tr("%1[*] — Tensorscope").arg(name));
  setWindowFilePath(document->path);
  setWindowModified(false);

  appendLog(tr("Opened %1 (%2): %3 nodes in the original graph%4, %5 logged rewrites")
                .arg(document->path, QString::fromStdString(document->info.format))
                .arg(document->original->nodeCount())
                .arg(document->optimized
                         ? tr(", %1 in the optimized graph").arg(document->optimized->nodeCount())
                         : QString())
                .arg(document->rewrites.size()));
  if (document->info.format == "tsg") {
    // The file's tensor facts, as `tensorscope info` prints them (issue 26).
    const engine::io::TsgTensorStats& t = document->info.tensors;
    const QLocale locale;
    appendLog(tr("Tensors (format version %1): %2 stored, %3; %4 saved by sharing (%5 used more "
                 "than once, %6 shared between the graphs)")
                  .arg(t.version)
                  .arg(t.tensors)
                  .arg(locale.formattedDataSize(static_cast<qint64>(t.tensorBytes)))
                  .arg(locale.formattedDataSize(static_cast<qint64>(t.sharedBytes)))
                  .arg(t.sharedTensors)
                  .arg(t.sharedBetweenGraphs));
  }
  for (const std::string& warning : document->info.warnings)
    appendLog(tr("Warning: %1").arg(QString::fromStdString(warning)));
  if (!document->info.opaqueOps.empty()) {
    QStringList ops;
    for (const std::string& op : document->info.opaqueOps) ops << QString::fromStdString(op);
    appendLog(tr("Opaque ops (drawn and inspected, not executed): %1")
                  .arg(ops.join(QStringLiteral(", "))));
  }
  if (!document->info.warnings.empty() || !document->info.opaqueOps.empty())
    dock("logDock")->show();

  applyStoredParameterMode();
  setPaneModel(m_originalPane, QStringLiteral("original"), document->originalModel);
  if (document->optimizedModel) {
    m_tabs->addTab(m_optimizedPane, tr("Optimized"));
    setPaneModel(m_optimizedPane, QStringLiteral("optimized"), document->optimizedModel);
    // Counterparts walk the rewrite log: on a worker, like everything that grows with the file.
    vis::runOnWorker(
        this,
        [document] {
          return std::make_shared<const Counterparts>(*document->original, *document->optimized,
                                                      document->rewrites);
        },
        [this, document](std::shared_ptr<const Counterparts> counterparts) {
          if (m_document != document) return;
          m_documentCounterparts = std::move(counterparts);
          if (!m_comparing) {
            m_counterparts = m_documentCounterparts;
            m_counterpartsOwner = document;
          }
        });
  }
  m_inspector->setDocument(document);
  m_history->setDocument(document);
  if (document->optimizedModel && QSettings().value("view/sideBySide", false).toBool())
    setSideBySide(true);
  updateActions();
  updateStatus();
  emit documentLoaded(document->path);
}

void MainWindow::onLoadFailed(const QString& path, const QString& message) {
  m_progress->hide();
  m_cancelButton->hide();
  if (!QFileInfo::exists(path)) m_recentFiles->remove(path);
  showError(tr("Could not open %1").arg(QFileInfo(path).fileName()), message);
  updateActions();
  emit loadFailed(path, message);
}

void MainWindow::closeDocument() {
  if (m_loader->isLoading()) m_loader->cancel();
  if (!m_document) return;
  setSideBySide(false);
  m_document.reset();
  m_documentCounterparts.reset();
  m_counterparts.reset();
  m_counterpartsOwner.reset();
  m_comparing = false;
  m_paneRole.clear();
  m_paneCounts.clear();
  while (m_tabs->count() > 1) m_tabs->removeTab(1);
  for (GraphPane* pane : {m_originalPane, m_optimizedPane, m_stepPane, m_leftPane, m_rightPane})
    pane->setModel(nullptr);
  m_inspector->setDocument(nullptr);
  m_history->setDocument(nullptr);
  setWindowTitle(QStringLiteral("Tensorscope"));
  setWindowFilePath(QString());
  setWindowModified(false);
  updateActions();
  updateStatus();
  emit documentClosed();
}

void MainWindow::setSideBySide(bool on) {
  if (on && (!m_document || !m_document->optimizedModel)) on = false;
  if (on) {
    m_comparing = false;
    m_leftTitle->setText(tr("Original"));
    m_rightTitle->setText(tr("Optimized"));
    // The panes keep their layout when they already show these graphs.
    if (m_leftPane->model() != m_document->originalModel || !m_paneRole.contains(m_leftPane))
      setPaneModel(m_leftPane, QStringLiteral("original"), m_document->originalModel);
    if (m_rightPane->model() != m_document->optimizedModel || !m_paneRole.contains(m_rightPane))
      setPaneModel(m_rightPane, QStringLiteral("optimized"), m_document->optimizedModel);
    m_leftPane->setHighlight({}, QColor());
    m_rightPane->setHighlight({}, QColor());
    m_counterparts = m_documentCounterparts;
    m_counterpartsOwner = m_document;
    m_centre->setCurrentWidget(m_splitter);
  } else {
    m_centre->setCurrentWidget(m_tabs);
  }
  updateActions();
  updateStatus();
}

void MainWindow::showRewriteComparison(int order, std::shared_ptr<const vis::ViewModel> before,
                                       std::shared_ptr<const vis::ViewModel> after,
                                       const QSet<int>& removed, const QSet<int>& added) {
  if (!m_document || !before || !after) return;
  const auto record = std::find_if(
      m_document->rewrites.begin(), m_document->rewrites.end(),
      [order](const engine::RewriteRecord& r) { return static_cast<int>(r.order) == order; });
  QString what = tr("rewrite %1").arg(order);
  if (record != m_document->rewrites.end())
    what += QStringLiteral(": %1%2").arg(
        QString::fromStdString(record->reason),
        record->phase.empty() ? QString()
                              : QStringLiteral(" (%1)").arg(QString::fromStdString(record->phase)));
  m_comparing = true;
  m_leftTitle->setText(tr("Before %1 — removed nodes in red").arg(what));
  m_rightTitle->setText(tr("After %1 — added nodes in green").arg(what));
  m_paneRole.remove(m_leftPane);
  m_paneRole.remove(m_rightPane);
  m_paneCounts.remove(m_leftPane);
  m_paneCounts.remove(m_rightPane);
  m_leftPane->setModel(before, revealing(*before, removed));
  m_rightPane->setModel(after, revealing(*after, added));
  m_leftPane->setHighlight(removed, kRemovedColor);
  m_rightPane->setHighlight(added, kAddedColor);
  // Selection follows this one record's replacements; the models keep their graphs alive.
  if (record != m_document->rewrites.end())
    m_counterparts = std::make_shared<const Counterparts>(
        before->graph(), after->graph(), std::span<const engine::RewriteRecord>(&*record, 1));
  else
    m_counterparts = std::make_shared<const Counterparts>(before->graph(), after->graph(),
                                                          std::span<const engine::RewriteRecord>());
  m_counterpartsOwner = std::make_shared<
      std::pair<std::shared_ptr<const vis::ViewModel>, std::shared_ptr<const vis::ViewModel>>>(
      before, after);
  m_centre->setCurrentWidget(m_splitter);
  // The change in view: its first removed node selected (and centred; its counterpart follows on
  // the right), or the first added one when the rewrite only added.
  if (!removed.isEmpty()) {
    m_activeSide = m_leftPane;
    m_leftPane->selectNode(*std::min_element(removed.begin(), removed.end()));
  } else if (!added.isEmpty()) {
    m_activeSide = m_rightPane;
    m_rightPane->selectNode(*std::min_element(added.begin(), added.end()));
  }
  updateActions();
  updateStatus();
}

void MainWindow::showStep(int step, std::shared_ptr<const vis::ViewModel> graph) {
  if (!m_document || !graph) return;
  const QString title = step == 0 ? tr("Step 0 (original)") : tr("Step %1").arg(step);
  int index = m_tabs->indexOf(m_stepPane);
  if (index < 0) index = m_tabs->addTab(m_stepPane, title);
  m_tabs->setTabText(index, title);
  // Stepping keeps the groups the user opened; the first step starts from the original's.
  const vis::GroupState state =
      m_stepPane->model() ? m_stepPane->groupState() : m_originalPane->groupState();
  m_paneCounts.remove(m_stepPane);
  m_stepPane->setModel(std::move(graph), state);
  setSideBySide(false);
  m_tabs->setCurrentWidget(m_stepPane);
}

void MainWindow::syncSelection(GraphPane* from, int node) {
  if (!isSideBySide() || !m_counterparts || (from != m_leftPane && from != m_rightPane)) return;
  GraphPane* other = from == m_leftPane ? m_rightPane : m_leftPane;
  if (!from->model() || !other->model()) return;
  const int mapped = node < 0 ? -1
                              : counterpartNode(*from->model(), node, *other->model(),
                                                *m_counterparts, from == m_leftPane);
  if (mapped == other->selectedNode()) return;
  m_syncing = true;
  other->selectNode(mapped);
  m_syncing = false;
  // Hidden in a collapsed group, the counterpart is selected after a layout (m_syncPane).
  m_syncPane = other->selectedNode() == mapped ? nullptr : other;
  m_syncNode = mapped;
}

int MainWindow::find(const QString& text) {
  GraphPane* pane = currentPane();
  if (!pane || !pane->model()) {
    m_searchBar->setResult(-1, 0);
    return 0;
  }
  const int hits = pane->search(text);
  if (hits > 0) pane->findNext();
  m_searchBar->setResult(pane->currentSearchHit(), hits);
  return hits;
}

void MainWindow::exportView(const QString& path) {
  GraphPane* pane = currentPane();
  vis::GraphScene* scene = pane ? pane->view()->graphScene() : nullptr;
  if (!scene || !scene->model() || !scene->sceneLayout())
    throw std::runtime_error(
        "nothing to export: no graph is shown (open a file and wait for its layout)");
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("svg"))
    vis::exportSvg(*scene, path);
  else if (suffix == QLatin1String("png"))
    vis::exportPng(*scene, path, 2.0);
  else if (suffix == QLatin1String("dot"))
    vis::exportDot(*scene->model(), *scene->sceneLayout(), path);
  else
    throw std::runtime_error(("cannot export to " + path +
                              ": expected a .svg, .png or .dot file, found '." + suffix + "'")
                                 .toStdString());
}

void MainWindow::exportInteractively(const QString& suffix) {
  const QString base =
      m_document ? QFileInfo(m_document->path).completeBaseName() : QStringLiteral("graph");
  const QString dir = m_document ? QFileInfo(m_document->path).absolutePath() : QString();
  const QString filter = suffix == "svg"   ? tr("SVG images (*.svg)")
                         : suffix == "png" ? tr("PNG images (*.png)")
                                           : tr("Graphviz DOT files (*.dot)");
  QString path = QFileDialog::getSaveFileName(this, tr("Export View"),
                                              dir + '/' + base + '.' + suffix, filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += '.' + suffix;
  try {
    exportView(path);
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
    appendLog(tr("Exported the view to %1").arg(path));
  } catch (const std::exception& e) {
    showError(tr("Could not export the view"), QString::fromUtf8(e.what()));
  }
}

}  // namespace tscope::gui
