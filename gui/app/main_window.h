#pragma once
// MainWindow: the window people live in. One document at a time (File > Open replaces it; the
// command line opens one window per file). The centre shows the document's graphs as tabs
// ("Original", "Optimized" when the file has one, "Step k" while stepping through the rewrites)
// or side by side (original left, optimized right, or the graphs before and after one rewrite),
// with selection kept in step through Counterparts. Docks: node inspector, rewrite history, log.
//
// Loading runs on a DocumentLoader worker with a progress bar and a cancel button in the status
// bar; errors open a (non-blocking) message box naming the file and the reason. Settings: window
// geometry and dock layout, recent files, side-by-side, minimap and legend, and the group state
// of each graph of each file (keyed by the file's absolute path).
//
// Implementation: main_window.cpp (actions, menus, docks, settings, status bar) and
// main_window_document.cpp (loading, panes, side by side, rewrite history, export).

#include "gui/app/document.h"
#include "visualizers/model/view_model.h"

#include <QHash>
#include <QMainWindow>
#include <QPointer>
#include <QSet>

#include <functional>
#include <memory>
#include <vector>

class QDockWidget;
class QMenu;
class QLabel;
class QMessageBox;
class QPlainTextEdit;
class QProgressBar;
class QSplitter;
class QStackedWidget;
class QTabWidget;
class QToolButton;

namespace tscope::vis {
class LayoutService;
}

namespace tscope::gui {

class Counterparts;
class DebugUi;
class DocumentLoader;
class ProfileUi;
class GraphPane;
class InspectorPanel;
class RecentFiles;
class RewriteHistoryPanel;
class SearchBar;

class OptimizeUi;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts loading a file (replacing the open document when it loads); errors go to a dialog.
  void openFile(const QString& path);
  void closeDocument();
  const std::shared_ptr<const Document>& document() const { return m_document; }
  // Shows another snapshot of the open document (the same file with an optimized graph, a
  // profile): as if it had been opened, without touching the recent files; `modified` marks the
  // title until it is saved.
  void replaceDocument(std::shared_ptr<const Document> document, bool modified);
  // Switches to the Optimized tab (or keeps side by side) when the document has one.
  void showOptimized();
  // File > Save As: writes the document as a .tsg on a worker (errors to the error dialog); the
  // window then shows that file. saveFinished reports the outcome.
  void saveDocumentAs(const QString& path);
  // A non-blocking message box (the window stays usable); errorDialog() returns it.
  void showError(const QString& title, const QString& text);

  GraphPane* originalPane() const { return m_originalPane; }
  GraphPane* optimizedPane() const { return m_optimizedPane; }
  GraphPane* stepPane() const { return m_stepPane; }
  GraphPane* leftPane() const { return m_leftPane; }
  GraphPane* rightPane() const { return m_rightPane; }
  // The pane the window's actions (zoom, search, export, back/forward) act on: the current tab,
  // or in side-by-side mode the side last clicked or focused.
  GraphPane* currentPane() const;
  QTabWidget* tabs() const { return m_tabs; }
  QStringList tabTitles() const;

  bool isSideBySide() const;
  // Side by side with the original left and the optimized right (no-op without optimized graph).
  void setSideBySide(bool on);
  // Side by side with the graphs before and after a rewrite, removed nodes highlighted on the left
  // and added nodes on the right.
  void showRewriteComparison(int order, std::shared_ptr<const vis::ViewModel> before,
                             std::shared_ptr<const vis::ViewModel> after, const QSet<int>& removed,
                             const QSet<int>& added);
  // Shows (and switches to) the "Step k" tab: the graph after the first `step` rewrites.
  void showStep(int step, std::shared_ptr<const vis::ViewModel> graph);

  // Writes what the current pane shows, format by suffix (.svg, .png, .dot); throws
  // std::runtime_error with the reason.
  void exportView(const QString& path);
  // Runs the current pane's search and selects the first hit; returns the hit count.
  int find(const QString& text);

  DocumentLoader* loader() const { return m_loader; }
  RecentFiles* recentFiles() const { return m_recentFiles; }
  SearchBar* searchBar() const { return m_searchBar; }
  InspectorPanel* inspector() const { return m_inspector; }
  RewriteHistoryPanel* rewriteHistory() const { return m_history; }
  OptimizeUi* optimizeUi() const { return m_optimizeUi; }
  DebugUi* debugUi() const { return m_debugUi; }
  QPlainTextEdit* logView() const { return m_log; }
  ProfileUi* profileUi() const { return m_profileUi; }
  // The window's layout service (one Graphviz thread), for panes that feature UIs add.
  vis::LayoutService* layoutService() const { return m_layoutService; }
  QDockWidget* dock(const QString& objectName) const;
  QAction* action(const QString& objectName) const;  // e.g. "actionOpen"
  // Adds an action made elsewhere (a feature UI) to action(): its objectName is its key; its
  // shortcut works without a menu.
  void registerAction(QAction* action);
  // The window's menus by object name: "menuView", "menuGraph", "menuRun", "menuProfile".
  QMenu* menu(const QString& objectName) const;
  // The context menu of a node (or a collapsed group box: node -1 and its path): each provider
  // adds its actions, separated. buildNodeMenu returns the menu (owned by the window, the caller
  // deletes it); a right click on a pane pops it up.
  using NodeMenuProvider =
      std::function<void(QMenu* menu, GraphPane* pane, int node, const QString& groupPath)>;
  void addNodeMenuProvider(NodeMenuProvider provider);
  QMenu* buildNodeMenu(GraphPane* pane, int node, const QString& groupPath = {});
  QMessageBox* errorDialog() const;  // the last one shown, null if none
  QString statusCounts() const;
  QString statusZoom() const;

  // True while a file loads or a visible pane waits for its layout (screenshots wait for it).
  bool isBusy() const;

  // Group states are stored under this settings key per file and graph role.
  static QString groupStateKey(const QString& path, const QString& role);
  // View > Parameters (boxes | badges | hidden) is stored under this key per file.
  static QString parameterModeKey(const QString& path);
  // View > Parameters: draws parameters this way in every pane and remembers it for the file.
  void setParameterMode(vis::ParameterMode mode);

 signals:
  void documentLoaded(QString path);  // also after replaceDocument
  void documentClosed();
  void loadFailed(QString path, QString message);
  void saveFinished(QString path, bool ok, QString message);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  // main_window.cpp
  void createActions();
  void createMenus();
  void createToolBar();
  void createDocks();
  void createStatusBar();
  void readSettings();
  void writeSettings();
  void updateActions();
  void updateStatus();
  void appendLog(const QString& line);
  QAction* makeAction(const QString& name, const QString& text, const QString& icon,
                      const QKeySequence& shortcut = {});
  // main_window_view.cpp
  void createParameterActions();
  void updateParameterActions();
  void applyStoredParameterMode();  // the file's stored mode, else each model's default
  std::vector<GraphPane*> windowPanes() const;
  // main_window_document.cpp
  GraphPane* createPane();
  void connectPane(GraphPane* pane);
  void onLoaded(std::shared_ptr<const Document> document);
  void showDocument(std::shared_ptr<const Document> document);
  void onLoadFailed(const QString& path, const QString& message);
  void setPaneModel(GraphPane* pane, const QString& role,
                    std::shared_ptr<const vis::ViewModel> model);
  void syncSelection(GraphPane* from, int node);
  void exportInteractively(const QString& suffix);
  void openInteractively();
  void saveInteractively();

  vis::LayoutService* m_layoutService = nullptr;
  DocumentLoader* m_loader = nullptr;
  RecentFiles* m_recentFiles = nullptr;
  std::shared_ptr<const Document> m_document;
  QHash<QString, QAction*> m_actions;
  std::vector<NodeMenuProvider> m_nodeMenuProviders;

  QStackedWidget* m_centre = nullptr;
  QTabWidget* m_tabs = nullptr;
  QSplitter* m_splitter = nullptr;
  QLabel* m_leftTitle = nullptr;
  QLabel* m_rightTitle = nullptr;
  GraphPane* m_originalPane = nullptr;
  GraphPane* m_optimizedPane = nullptr;
  GraphPane* m_stepPane = nullptr;
  GraphPane* m_leftPane = nullptr;
  GraphPane* m_rightPane = nullptr;
  QPointer<GraphPane> m_activeSide;
  QHash<GraphPane*, QString> m_paneRole;  // "original" / "optimized" when a pane shows one of them
  QHash<GraphPane*, QPair<int, int>> m_paneCounts;
  // Maps left-pane nodes to right-pane nodes in side-by-side mode (null: no syncing).
  std::shared_ptr<const Counterparts> m_counterparts;
  std::shared_ptr<const Counterparts> m_documentCounterparts;  // original <-> optimized
  std::shared_ptr<const void> m_counterpartsOwner;  // keeps the graphs m_counterparts points into
  bool m_syncing = false;
  // A counterpart selected in a collapsed group is selected after a layout: its late nodeSelected
  // is recognised by these and not synced back or shown in the inspector.
  QPointer<GraphPane> m_syncPane;
  int m_syncNode = -1;
  bool m_comparing = false;  // the side-by-side panes show a rewrite's before/after

  OptimizeUi* m_optimizeUi = nullptr;
  SearchBar* m_searchBar = nullptr;
  InspectorPanel* m_inspector = nullptr;
  RewriteHistoryPanel* m_history = nullptr;
  DebugUi* m_debugUi = nullptr;
  QPlainTextEdit* m_log = nullptr;
  QPointer<QMessageBox> m_errorDialog;
  ProfileUi* m_profileUi = nullptr;

  QLabel* m_countsLabel = nullptr;
  QLabel* m_zoomLabel = nullptr;
  QLabel* m_layoutLabel = nullptr;
  QProgressBar* m_progress = nullptr;
  QToolButton* m_cancelButton = nullptr;
};

}  // namespace tscope::gui
