#pragma once
// LayoutService: every Graphviz call of the process happens on the service's one worker thread
// (Graphviz is not thread-safe, not even for reading: REFERENCE.md "Graphviz"). Callers queue
// requests and get results by signal, tagged with the request's job id, emitted on the thread the
// service lives in (Note [Layout results]); a newer request on the same channel makes the older
// ones stale: a pending stale job is dropped unrun, a running one finishes but its result is not
// emitted. Results per group are cached (Note [Per-group layout]).

#include "visualizers/layout/scene_layout.h"

#include <QFont>
#include <QObject>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace tscope::vis {

struct LayoutOptions {
  QFont font;           // node sizes come from this font's metrics (fixedsize in dot)
  double nodeSep = 18;  // points
  double rankSep = 28;  // points
  // Levels with more items than this use dot's fast settings (Note [Fast settings for big levels]
  // in graphviz_level.cpp) so a 2,000-node flat graph lays out in about half a second.
  int fastAbove = 600;
  bool edgeLabels = true;
  // How parameters are drawn (Note [Parameters] in view_model.h).
  ParameterMode parameters = ParameterMode::Boxes;
};

struct LayoutStats {
  std::uint64_t levelsLaidOut = 0;  // dot runs
  std::uint64_t cacheHits = 0;
  std::uint64_t jobsDropped = 0;   // stale jobs dropped unrun or not emitted
  double dotSeconds = 0;           // total time inside Graphviz
  std::thread::id graphvizThread;  // the worker that makes every Graphviz call of the process
};

class LayoutService : public QObject {
  Q_OBJECT
 public:
  explicit LayoutService(QObject* parent = nullptr);  // starts the worker thread
  ~LayoutService() override;                          // stops it (waits for a running level)

  // Queues a layout of what `state` shows of `model`; returns its job id (> 0, increasing).
  std::uint64_t request(std::shared_ptr<const ViewModel> model, GroupState state,
                        LayoutOptions options, int channel = 0);
  // Drops a job: it is not run, or its result is not emitted.
  void cancel(std::uint64_t job);
  // Runs a layout on the worker and waits for it (for the command line and tests; never call it
  // from the GUI thread of a window). Throws std::runtime_error with Graphviz's message on failure.
  std::shared_ptr<const SceneLayout> layoutNow(std::shared_ptr<const ViewModel> model,
                                               GroupState state, LayoutOptions options);
  LayoutStats stats() const;
  void clearCache();

 signals:
  void layoutReady(quint64 job, std::shared_ptr<const tscope::vis::SceneLayout> layout);
  void layoutFailed(quint64 job, QString message);

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace tscope::vis

Q_DECLARE_METATYPE(std::shared_ptr<const tscope::vis::SceneLayout>)
