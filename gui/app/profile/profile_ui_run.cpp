// ProfileUi: running profiles, reading a document's saved profiles, saving, exporting and the
// command line's --profile-view options (profile_ui.h).
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/session/graph_file.h"
#include "engine/session/run_graph.h"
#include "gui/app/graph_pane.h"
#include "gui/app/main_window.h"
#include "gui/app/profile/profile_panels.h"
#include "gui/app/profile/profile_ui.h"
#include "profiling/calibration.h"
#include "profiling/cupti_source.h"
#include "profiling/profile_graph.h"
#include "profiling/profile_io.h"
#include "profiling/report.h"
#include "profiling/trace.h"
#include "visualizers/threads/hand_off.h"

#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QProgressBar>
#include <QSaveFile>
#include <QTimer>
#include <QToolButton>

#include <filesystem>
#include <fstream>

namespace tscope::gui {

namespace {

struct Cancelled {};

struct RunResult {
  std::vector<std::shared_ptr<const ProfileSnapshot>> snapshots;
  std::shared_ptr<const ProfileUi::Built> built;  // the last snapshot's first view
  QString error;
  bool cancelled = false;
};

QString modeText(engine::Mode mode) {
  const std::string_view m = engine::modeName(mode);
  return QString::fromLatin1(m.data(), qsizetype(m.size()));
}

// One profile of the document's original graph (what `tensorscope profile FILE` measures), as a
// snapshot. Runs on a worker: the graph is cloned so its shared values (a training step's
// updates) change in the copy, never in the document the window shows.
std::shared_ptr<const ProfileSnapshot> profileDocument(
    const std::shared_ptr<const Document>& doc, const ProfileRequest& request,
    const std::function<void(std::int64_t, std::int64_t)>& progress, int number) {
  std::unique_ptr<engine::FunctionGraph> graph = doc->original->clone();
  engine::session::RunInputs inputs;
  inputs.mode = request.mode;
  inputs.randomSeed = request.seed;
  const engine::session::PreparedRun prepared = engine::session::prepareRun(*graph, inputs);
  std::optional<nlohmann::json> calibration;
  if (request.roofline) calibration = prof::cachedOrCalibrate().toJson();
  prof::ProfileRunOptions options;
  options.runs = request.runs;
  options.warmup = request.warmup;
  options.profiler.memory = request.memory;
  options.progress = progress;
  options.device = request.device;
  // Starts the CUDA runtime once; without a device CudaUnavailable says why (the run fails).
  if (request.device == engine::Device::Cuda) engine::cuda::registerCudaBackend();
  // On the GPU, CUPTI records the kernels each node launches; where it cannot, the profile keeps
  // its host times and its label says so.
  std::string gpuWhy;
  prof::CuptiOptions cupti;
  cupti.synchronize = [] { engine::cuda::cudaSynchronize(); };
  const std::unique_ptr<prof::GpuSource> gpu = prof::gpuSourceFor(request.device, cupti, gpuWhy);
  options.gpu = gpu.get();
  prof::GraphProfile g =
      prof::profileGraph(*graph, prepared.inputs, prepared.args, request.mode, options);
  const QString file = QFileInfo(doc->path).fileName();
  g.profile.name = file.toStdString();
  g.profile.calibration = calibration;
  auto s = std::make_shared<ProfileSnapshot>();
  s->graph = std::shared_ptr<const engine::FunctionGraph>(std::move(g.graph));
  s->rewrites = std::move(g.rewrites);
  // Mode none profiles the original's nodes with their ids: drawn on the document's own model.
  s->model = g.profile.graph == "original" ? doc->originalModel : vis::ViewModel::build(s->graph);
  s->label =
      QStringLiteral("#%1 %2 (%3)")
          .arg(number)
          .arg(file, request.device == engine::Device::Cpu
                         ? modeText(request.mode)
                         : modeText(request.mode) + QStringLiteral(", ") +
                               QString::fromLatin1(engine::deviceName(request.device).data()));
  if (!gpuWhy.empty()) s->label += QStringLiteral(" - ") + QString::fromStdString(gpuWhy);
  s->profile = std::make_shared<const prof::Profile>(std::move(g.profile));
  return s;
}

// The profiles saved in a document, as snapshots on its graphs (Note [Diff through the rewrite
// log]: a profile of the optimized graph refers to the document's optimized graph).
std::vector<std::shared_ptr<const ProfileSnapshot>> savedProfiles(
    const nlohmann::json& profiles, const QString& path,
    std::shared_ptr<const engine::FunctionGraph> original,
    std::shared_ptr<const engine::FunctionGraph> optimized,
    std::shared_ptr<const vis::ViewModel> originalModel,
    std::shared_ptr<const vis::ViewModel> optimizedModel,
    const std::vector<engine::RewriteRecord>& rewrites) {
  std::vector<std::shared_ptr<const ProfileSnapshot>> out;
  if (!profiles.is_array()) return out;
  const QString file = QFileInfo(path).fileName();
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (!prof::isProfileJson(profiles[i])) continue;
    const std::string where = "/profiles/" + std::to_string(i);
    auto s = std::make_shared<ProfileSnapshot>();
    prof::Profile p = prof::profileFromJson(profiles[i], where);
    if (p.graph == "optimized") {
      if (!optimized)
        throw prof::ProfileError(where + ": a profile of the optimized graph, which " +
                                 file.toStdString() + " does not hold");
      s->graph = optimized;
      s->model = optimizedModel;
      s->rewrites = rewrites;
    } else {
      s->graph = original;
      s->model = originalModel;
    }
    s->label = QStringLiteral("%1 (%2)").arg(file, QString::fromStdString(p.function.mode));
    s->fromFile = true;
    s->profile = std::make_shared<const prof::Profile>(std::move(p));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

void ProfileUi::startProfile(const ProfileRequest& request) {
  const std::shared_ptr<const Document> doc = m_window->document();
  if (!doc || m_running) return;
  m_request = request;
  const int number = static_cast<int>(m_snapshots.size()) + 1;
  runJob(
      [doc, request, number](const std::function<void(std::int64_t, std::int64_t)>& progress) {
        return std::vector<std::shared_ptr<const ProfileSnapshot>>{
            profileDocument(doc, request, progress, number)};
      },
      false);
}

void ProfileUi::compareModes(engine::Mode a, engine::Mode b, ProfileRequest request) {
  const std::shared_ptr<const Document> doc = m_window->document();
  if (!doc || m_running) return;
  m_request = request;
  const int number = static_cast<int>(m_snapshots.size()) + 1;
  runJob(
      [doc, request, a, b,
       number](const std::function<void(std::int64_t, std::int64_t)>& progress) {
        ProfileRequest first = request, second = request;
        first.mode = a;
        second.mode = b;
        auto sa = profileDocument(
            doc, first, [&](std::int64_t d, std::int64_t t) { progress(d, 2 * t); }, number);
        auto sb = profileDocument(
            doc, second, [&](std::int64_t d, std::int64_t t) { progress(t + d, 2 * t); },
            number + 1);
        return std::vector<std::shared_ptr<const ProfileSnapshot>>{sa, sb};
      },
      true);
}

void ProfileUi::runJob(std::function<std::vector<std::shared_ptr<const ProfileSnapshot>>(
                           const std::function<void(std::int64_t, std::int64_t)>&)>
                           job,
                       bool diffFirst) {
  m_running = true;
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_done->store(0);
  m_total->store(m_request.runs + m_request.warmup);
  // Note [Quiet progress]: shown by the timer once the profile has run a while.
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(QString());
  m_progressClock.start();
  m_progressTimer->start();
  updateActions();
  emit profileStarted();
  auto cancel = m_cancelFlag;
  auto done = m_done, total = m_total;
  const HeatOptions heat = m_heat;
  vis::runOnWorker(
      this,
      [job = std::move(job), cancel, done, total, heat,
       diffFirst]() -> std::shared_ptr<const RunResult> {
        auto result = std::make_shared<RunResult>();
        // Note [Profile progress]: the calls report here; Cancel takes effect at the next one.
        auto progress = [&](std::int64_t d, std::int64_t t) {
          done->store(d);
          total->store(t);
          if (cancel->load()) throw Cancelled{};
        };
        try {
          if (cancel->load()) throw Cancelled{};
          result->snapshots = job(progress);
          // The first view on the same worker: no second trip before the heat map shows.
          if (!diffFirst && !result->snapshots.empty())
            result->built = build(result->snapshots.back(), nullptr, std::nullopt, heat, true);
        } catch (const Cancelled&) {
          result->cancelled = true;
        } catch (const std::exception& e) {
          result->error = QString::fromStdString(e.what());
        }
        return result;
      },
      [this, diffFirst](std::shared_ptr<const RunResult> result) {
        m_running = false;
        m_progressTimer->stop();
        m_progress->hide();
        m_cancel->hide();
        updateActions();
        if (result->cancelled) {
          report(tr("profiling cancelled"), false);
          emit profileCancelled();
          return;
        }
        if (!result->error.isEmpty()) {
          report(tr("profiling %1 failed: %2")
                     .arg(m_window->document() ? QFileInfo(m_window->document()->path).fileName()
                                               : QString(),
                          result->error),
                 true);
          emit profileFailed(result->error);
          return;
        }
        if (!m_window->document()) return;  // closed meanwhile
        for (const auto& s : result->snapshots) m_snapshots.push_back(s);
        const auto& last = result->snapshots.back();
        report(tr("profiled %1: %2 per call (mean of %3 runs)")
                   .arg(last->label, QString::fromStdString(
                                         prof::formatSeconds(last->profile->function.call.mean)))
                   .arg(last->profile->function.measuredRuns),
               false);
        if (diffFirst && result->snapshots.size() == 2) m_compare = result->snapshots.front();
        showSnapshotWith(last, result->built);
        emit profileFinished();
      });
}

void ProfileUi::cancelProfile() {
  if (m_running) m_cancelFlag->store(true);
}

void ProfileUi::onDocumentLoaded() {
  // A new document: the old one's profiles mean nothing on it.
  for (GraphPane* pane : {m_window->originalPane(), m_window->optimizedPane(), m_window->leftPane(),
                          m_window->rightPane(), m_ownPane})
    if (pane) pane->setDecorations(QStringLiteral("profile"), nullptr);
  if (m_ownPane) m_ownPane->setModel(nullptr);
  m_snapshots.clear();
  m_snapshot.reset();
  m_compare.reset();
  m_view.reset();
  m_timeline.reset();
  m_timelineOf.reset();
  m_range.reset();
  m_pane.clear();
  ++m_generation;
  m_tables->setView(nullptr);
  m_timelinePanel->setData(nullptr, nullptr);
  refreshCompareBox();
  updateActions();
  const std::shared_ptr<const Document> doc = m_window->document();
  if (!doc || !doc->profiles.is_array() || doc->profiles.empty()) {
    if (!m_pendingOptions.isEmpty() && doc) {
      report(tr("--profile-view: %1 holds no profile (`tensorscope profile FILE -o OUT.tsg` "
                "writes one)")
                 .arg(doc->path),
             true);
      m_pendingOptions.clear();
    }
    return;
  }
  ++m_pendingLoads;
  vis::runOnWorker(
      this,
      [doc]() -> std::pair<std::vector<std::shared_ptr<const ProfileSnapshot>>, QString> {
        try {
          return {savedProfiles(doc->profiles, doc->path, doc->original, doc->optimized,
                                doc->originalModel, doc->optimizedModel, doc->rewrites),
                  {}};
        } catch (const std::exception& e) {
          return {{}, QStringLiteral("%1: %2").arg(doc->path, QString::fromStdString(e.what()))};
        }
      },
      [this, doc](std::pair<std::vector<std::shared_ptr<const ProfileSnapshot>>, QString> r) {
        --m_pendingLoads;
        if (m_window->document() != doc) return;
        if (!r.second.isEmpty()) {
          report(tr("the file's profile does not read: %1").arg(r.second), true);
          m_pendingOptions.clear();
          return;
        }
        if (r.first.empty()) {
          m_pendingOptions.clear();
          return;
        }
        for (const auto& s : r.first) m_snapshots.push_back(s);
        showSnapshot(r.first.back());
      });
}

void ProfileUi::saveProfile(const QString& path) {
  const std::shared_ptr<const Document> doc = m_window->document();
  const auto snapshot = m_snapshot;
  if (!doc || !snapshot) return;
  ++m_pendingLoads;
  vis::runOnWorker(
      this,
      [doc, snapshot, path]() -> QString {
        try {
          // The document as the file holds it (every graph, log and earlier profile), then the
          // profile as `tensorscope profile -o` stores it.
          engine::io::TsgDocument file = engine::session::openGraphFile(doc->path.toStdString());
          if (!snapshot->fromFile) {
            prof::GraphProfile g;
            g.profile = *snapshot->profile;
            g.graph = snapshot->graph->clone();
            g.rewrites = snapshot->rewrites;
            prof::storeProfile(file, g);
          }
          engine::io::saveTsg(file, path.toStdString());
          return {};
        } catch (const std::exception& e) {
          return QString::fromStdString(e.what());
        }
      },
      [this, path](const QString& error) {
        --m_pendingLoads;
        if (!error.isEmpty()) {
          report(tr("could not save %1: %2").arg(path, error), true);
          return;
        }
        report(tr("wrote %1 (the graph with this profile)").arg(path), false);
        emit saved(path);
      });
}

void ProfileUi::exportTrace(const QString& path) {
  const auto view = m_view;
  if (!view) return;
  ++m_pendingLoads;
  vis::runOnWorker(
      this,
      [view, path]() -> QString {
        try {
          prof::writeChromeTrace(*view->profile, path.toStdString());
          return {};
        } catch (const std::exception& e) {
          return QString::fromStdString(e.what());
        }
      },
      [this, path](const QString& error) {
        --m_pendingLoads;
        if (!error.isEmpty()) return report(tr("could not export the trace: %1").arg(error), true);
        report(tr("wrote %1 (Chrome trace; open it in Perfetto or chrome://tracing)").arg(path),
               false);
        emit exported(path);
      });
}

void ProfileUi::exportReport(const QString& path) {
  const auto view = m_view;
  if (!view) return;
  ++m_pendingLoads;
  vis::runOnWorker(
      this,
      [view, path]() -> QString {
        const bool json = path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive);
        const std::string text = json ? prof::reportJson(*view->profile).dump(2) + "\n"
                                      : prof::reportText(*view->profile);
        QSaveFile out(path);
        if (!out.open(QIODevice::WriteOnly) ||
            out.write(text.data(), qint64(text.size())) != qint64(text.size()) || !out.commit())
          return QStringLiteral("%1: %2").arg(path, out.errorString());
        return {};
      },
      [this, path](const QString& error) {
        --m_pendingLoads;
        if (!error.isEmpty()) return report(tr("could not export the report: %1").arg(error), true);
        report(tr("wrote %1 (the profile report)").arg(path), false);
        emit exported(path);
      });
}

bool ProfileUi::applyOptions(const QStringList& options, QString* error) {
  static const QStringList kMetrics = {"time",   "share",    "mean",   "p95",
                                       "gflops", "roofline", "output", "allocated"};
  for (const QString& option : options) {
    const QString key = option.section(QLatin1Char('='), 0, 0);
    const QString value = option.section(QLatin1Char('='), 1);
    bool ok = true;
    if (key == QLatin1String("metric")) {
      ok = kMetrics.contains(value);
    } else if (key == QLatin1String("scale")) {
      ok = value == QLatin1String("reds") || value == QLatin1String("perceptual");
    } else if (key == QLatin1String("range")) {
      const QStringList parts = value.split(QLatin1Char(':'));
      bool a = false, b = false;
      ok = parts.size() == 2 && parts[0].toDouble(&a) < parts[1].toDouble(&b) && a && b;
    } else if (key == QLatin1String("run")) {
      value.toInt(&ok);
    } else if (key == QLatin1String("compare")) {
      ok = QFileInfo::exists(value);
    } else if (key == QLatin1String("expand")) {
      ok = value == QLatin1String("none") || value == QLatin1String("all") ||
           value == QLatin1String("default");
    } else if (key == QLatin1String("docks")) {
      ok = value == QLatin1String("profile") || value == QLatin1String("timeline") ||
           value == QLatin1String("both");
    } else {
      if (error)
        *error = QStringLiteral(
                     "--profile-view expects metric=, scale=, range=A:B, run=N or "
                     "compare=FILE, found '%1'")
                     .arg(option);
      return false;
    }
    if (!ok) {
      if (error)
        *error = QStringLiteral(
                     "--profile-view %1: unexpected value '%2' (metric: %3; scale: "
                     "reds or perceptual; range: two fractions A:B of run 0 with "
                     "A < B; run: a number; compare: an existing .tsg)")
                     .arg(key, value, kMetrics.join(QStringLiteral(", ")));
      return false;
    }
  }
  const std::shared_ptr<const Document>& doc = m_window->document();
  if (doc && (!doc->profiles.is_array() || doc->profiles.empty())) {
    if (error)
      *error = QStringLiteral(
                   "--profile-view: %1 holds no profile (`tensorscope profile FILE -o "
                   "OUT.tsg` writes one)")
                   .arg(doc->path);
    return false;
  }
  m_pendingOptions = options;
  if (m_snapshot && m_building == 0) QTimer::singleShot(0, this, [this] { applyPendingOptions(); });
  return true;
}

void ProfileUi::applyPendingOptions() {
  if (m_pendingOptions.isEmpty() || !m_snapshot || !m_timeline) return;
  static const QStringList kMetrics = {"time",   "share",    "mean",   "p95",
                                       "gflops", "roofline", "output", "allocated"};
  const QStringList options = std::exchange(m_pendingOptions, {});
  HeatOptions heat = m_heat;
  for (const QString& option : options) {
    const QString key = option.section(QLatin1Char('='), 0, 0);
    const QString value = option.section(QLatin1Char('='), 1);
    if (key == QLatin1String("metric"))
      heat.metric = static_cast<HeatMetric>(kMetrics.indexOf(value));
    if (key == QLatin1String("scale"))
      heat.scale = value == QLatin1String("perceptual") ? HeatScale::Perceptual : HeatScale::Reds;
    if (key == QLatin1String("run")) m_timelinePanel->timeline()->showRun(value.toInt());
    if (key == QLatin1String("docks")) {
      m_tablesDock->setVisible(value != QLatin1String("timeline"));
      m_timelineDock->setVisible(value != QLatin1String("profile"));
    }
    // The profiled graph with its groups collapsed, expanded or as it opens, fitted once laid out.
    if (key == QLatin1String("expand") && m_pane) {
      GraphPane* pane = m_pane;
      ++m_pendingLoads;
      connect(
          pane, &GraphPane::layoutFinished, this,
          [this, pane] {
            QTimer::singleShot(0, this, [this, pane] {
              pane->view()->zoomToFit();
              --m_pendingLoads;
            });
          },
          Qt::SingleShotConnection);
      if (value == QLatin1String("none"))
        pane->collapseAll();
      else if (value == QLatin1String("all"))
        pane->expandAll();
      else
        pane->setGroupState(pane->model()->defaultState());
    }
    if (key == QLatin1String("range") && !m_snapshot->profile->runs.empty()) {
      const prof::RunSpan& run = m_snapshot->profile->runs.front();
      const double a = value.section(QLatin1Char(':'), 0, 0).toDouble();
      const double b = value.section(QLatin1Char(':'), 1).toDouble();
      const auto span = static_cast<double>(run.endNs - run.startNs);
      m_timelinePanel->timeline()->showRun(run.run);
      setRange(TimeRange{run.startNs + static_cast<std::int64_t>(a * span),
                         run.startNs + static_cast<std::int64_t>(b * span)});
    }
    if (key == QLatin1String("compare")) {
      ++m_pendingLoads;
      vis::runOnWorker(
          this,
          [value]() -> std::pair<std::shared_ptr<const ProfileSnapshot>, QString> {
            try {
              engine::io::TsgDocument doc = engine::session::openGraphFile(value.toStdString());
              std::shared_ptr<const engine::FunctionGraph> original = std::move(doc.original);
              std::shared_ptr<const engine::FunctionGraph> optimized = std::move(doc.optimized);
              auto all = savedProfiles(doc.profiles, value, original, optimized, nullptr, nullptr,
                                       doc.rewrites);
              if (all.empty()) return {nullptr, QStringLiteral("%1 holds no profile").arg(value)};
              return {all.back(), {}};
            } catch (const std::exception& e) {
              return {nullptr, QString::fromStdString(e.what())};
            }
          },
          [this](std::pair<std::shared_ptr<const ProfileSnapshot>, QString> r) {
            --m_pendingLoads;
            if (!r.first) return report(tr("--profile-view compare: %1").arg(r.second), true);
            compareWith(r.first);
          });
    }
  }
  setHeatOptions(heat);
}

}  // namespace tscope::gui
