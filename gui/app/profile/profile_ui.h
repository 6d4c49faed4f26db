#pragma once
// ProfileUi: the profiler in the window (issue 20, "Profiler"), built on the window's hooks
// (MainWindow::menu("menuProfile"), registerAction, the status bar) over profiling/:
// - Profile > Profile... (and its toolbar button) runs `warmup` + `runs` calls of the open graph
//   on a worker (profileGraph, as `tensorscope profile` does), with a progress bar and Cancel in
//   the status bar; the result is an immutable ProfileSnapshot (profile_view.h);
// - the heat map (heat_map.h) on the pane showing the profiled graph: the Original pane for a
//   profile of the original graph (mode none), the Optimized pane for a file's saved profile of
//   its optimized graph, else a "Profiled" tab with the compiled graph; diff mode against another
//   profile of this session or a file;
// - the Profile dock (tables) and the Timeline dock (timeline, memory), kept in step with the
//   graph's selection; a time range filters the tables and recolours the heat map;
// - Profile > Save Profile... writes the .tsg with the profile (storeProfile + saveTsg, as
//   `tensorscope profile -o`), Export Trace... (Perfetto JSON) and Export Report... (text or
//   JSON); a .tsg that holds profiles opens coloured by its last one.
//
//   ProfileUi* ui = window->profileUi();
//   ui->startProfile({.mode = engine::Mode::FastRun, .runs = 20});
//   connect(ui, &ProfileUi::viewShown, ...);   // tables, timeline and heat map are up to date
//
// Note [Profiler snapshots]: every figure the window shows is computed on a worker from
// shared_ptr<const ...> snapshots (the profile, the graph, the view model) and handed back
// whole; each rebuild carries a generation number and a result older than the last request is
// dropped, so a quick change of metric, range or comparison never shows a stale mix.

#include "gui/app/profile/heat_map.h"
#include "gui/app/profile/profile_dialog.h"
#include "gui/app/profile/profile_view.h"
#include "gui/app/profile/timeline_data.h"

#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QStringList>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QAction;
class QDockWidget;
class QProgressBar;
class QTimer;
class QToolButton;

namespace tscope::gui {

class GraphPane;
class MainWindow;
class ProfileTablesPanel;
class TimelinePanel;

class ProfileUi : public QObject {
  Q_OBJECT
 public:
  explicit ProfileUi(MainWindow* window);
  ~ProfileUi() override;

  // --- Running ---
  void startProfile(const ProfileRequest& request);
  // Profiles in mode a, then b, and shows b in diff mode against a (original vs optimized when
  // a is none).
  void compareModes(engine::Mode a, engine::Mode b, ProfileRequest request);
  void cancelProfile();
  bool isRunning() const { return m_running; }
  // Running, or building what the docks and the heat map show, or options waiting for a profile.
  bool isBusy() const;
  const ProfileRequest& lastRequest() const { return m_request; }

  // --- What is shown ---
  const std::shared_ptr<const ProfileSnapshot>& snapshot() const { return m_snapshot; }
  const std::shared_ptr<const ProfileView>& view() const { return m_view; }
  const std::shared_ptr<const TimelineData>& timelineData() const { return m_timeline; }
  const std::vector<std::shared_ptr<const ProfileSnapshot>>& snapshots() const {
    return m_snapshots;
  }
  // Shows a snapshot (adding it to snapshots() when new): heat map, tables, timeline.
  void showSnapshot(std::shared_ptr<const ProfileSnapshot> snapshot);
  GraphPane* profilePane() const;  // the pane the heat map is drawn on (null: none)
  HeatOptions heatOptions() const { return m_heat; }
  void setHeatOptions(const HeatOptions& options);
  std::optional<TimeRange> range() const { return m_range; }
  void setRange(std::optional<TimeRange> range);  // also selects it on the timeline
  // Diff mode against another snapshot (null ends it).
  void compareWith(std::shared_ptr<const ProfileSnapshot> other);
  const std::shared_ptr<const ProfileSnapshot>& comparison() const { return m_compare; }
  // The profile node a ViewModel node of the profile pane draws (-1 when none), and back.
  int profileNodeOf(int viewNode) const;
  int viewNodeOf(int profileNode) const;

  // --- Files ---
  // Writes the open document with the shown profile to a .tsg (on a worker): saved / failed.
  void saveProfile(const QString& path);
  void exportTrace(const QString& path);   // Chrome/Perfetto JSON of the shown profile (or range)
  void exportReport(const QString& path);  // .json: reportJson, else reportText
  // `tensorscope FILE --profile-view KEY=VALUE`: metric=, scale=, range=A:B (fractions of run 0),
  // run=N, compare=OTHER.tsg. Applied once the file's profile is shown; false with a message
  // for a bad key or value.
  bool applyOptions(const QStringList& options, QString* error);

  ProfileTablesPanel* tablesPanel() const { return m_tables; }
  TimelinePanel* timelinePanel() const { return m_timelinePanel; }
  QDockWidget* tablesDock() const { return m_tablesDock; }
  QDockWidget* timelineDock() const { return m_timelineDock; }
  QProgressBar* progressBar() const { return m_progress; }
  QToolButton* cancelButton() const { return m_cancel; }

 signals:
  void profileStarted();
  void profileFinished();  // the new snapshot is shown (viewShown follows when it is drawn)
  void profileFailed(QString message);
  void profileCancelled();
  void viewShown();  // tables, timeline and heat map show the current snapshot, range and options
  void saved(QString path);
  void exported(QString path);
  void fileError(QString message);  // save, export, a profile section that does not read

 public:
  // What one rebuild computed: a view, its timeline, its heat map (complete in profile_ui.cpp).
  struct Built;

 private:
  void createActions();
  void createDocks();
  void onDocumentLoaded();
  void rebuild();
  void applyBuilt(std::shared_ptr<const Built> built, quint64 generation);
  // What a rebuild computes (pure: any thread).
  static std::shared_ptr<const Built> build(std::shared_ptr<const ProfileSnapshot> snapshot,
                                            std::shared_ptr<const ProfileSnapshot> compare,
                                            std::optional<TimeRange> range, HeatOptions heat,
                                            bool timeline);
  // showSnapshot with its first view already built (by the job that measured it), or rebuilt.
  void showSnapshotWith(std::shared_ptr<const ProfileSnapshot> snapshot,
                        std::shared_ptr<const Built> built);
  void finishRun(bool ok, const QString& message);
  void runJob(std::function<std::vector<std::shared_ptr<const ProfileSnapshot>>(
                  const std::function<void(std::int64_t, std::int64_t)>&)>
                  job,
              bool diffFirst);

  void selectProfileNodes(const QList<int>& profileNodes);
  void onPaneNodeSelected(int viewNode);
  void updateActions();
  void applyPendingOptions();
  void refreshCompareBox();
  void report(const QString& message, bool error);

  MainWindow* m_window;
  ProfileRequest m_request;
  std::vector<std::shared_ptr<const ProfileSnapshot>> m_snapshots;
  std::shared_ptr<const ProfileSnapshot> m_snapshot, m_compare;
  std::shared_ptr<const ProfileView> m_view;
  std::shared_ptr<const TimelineData> m_timeline;
  std::shared_ptr<const ProfileSnapshot> m_timelineOf;  // the snapshot m_timeline was built for
  HeatOptions m_heat;
  std::optional<TimeRange> m_range;
  quint64 m_generation = 0;
  int m_building = 0;  // rebuilds in flight
  bool m_running = false;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  std::shared_ptr<std::atomic<std::int64_t>> m_done, m_total;
  QStringList m_pendingOptions;
  int m_pendingLoads = 0;  // a file's profiles or a compare file being read

  GraphPane* m_ownPane = nullptr;  // the "Profiled" tab
  QPointer<GraphPane> m_pane;      // where the layer is drawn now
  ProfileTablesPanel* m_tables = nullptr;
  TimelinePanel* m_timelinePanel = nullptr;
  QDockWidget* m_tablesDock = nullptr;
  QDockWidget* m_timelineDock = nullptr;
  QProgressBar* m_progress = nullptr;
  QToolButton* m_cancel = nullptr;
  QTimer* m_progressTimer = nullptr;
  QElapsedTimer m_progressClock;  // since the running profile started (Note [Quiet progress])
  static constexpr int kProgressDelayMs = 500, kProgressIntervalMs = 250;
  QAction* m_profileAction = nullptr;
  QAction* m_compareModesAction = nullptr;
  QAction* m_saveAction = nullptr;
  QAction* m_traceAction = nullptr;
  QAction* m_reportAction = nullptr;
};

}  // namespace tscope::gui
