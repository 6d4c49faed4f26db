// The profiler window's figures (issue 20):
// 1. A profiled run of the MLP example through the window (ProfileUi::startProfile until the heat
//    map, tables and timeline are shown) against what `tensorscope profile` does for the same
//    run (prepareRun + profileGraph + reportText), paired: the two alternate, same mode, runs and
//    warm-up, no roofline on either side; target: the window costs at most 5 % more. The mean
//    call time each side measured is printed too (the profiled calls themselves must not slow).
// 2. Drawing a heat map on the 20,000-node graph grouped by scope (bench_gui's graph): the
//    profile's view and decorations built (what the worker does) plus the scene's merge and
//    repaint (what the GUI thread does); target < 200 ms.
//   bench_gui_profile [--pairs N] [--runs R]    (offscreen unless QT_QPA_PLATFORM says otherwise)

#include "bench/synthetic_graphs.h"
#include "engine/session/graph_file.h"
#include "engine/session/run_graph.h"
#include "gui/app/graph_pane.h"
#include "gui/app/main_window.h"
#include "gui/app/profile/heat_map.h"
#include "gui/app/profile/profile_ui.h"
#include "gui/app/profile/timeline_data.h"
#include "profiling/profile_graph.h"
#include "profiling/report.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QMainWindow>
#include <QSignalSpy>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>

using namespace tscope;

namespace {

double ms(const QElapsedTimer& clock) {
  return static_cast<double>(clock.nsecsElapsed()) / 1e6;
}

template <typename Sender, typename Signal>
bool waitForSignal(const Sender* sender, Signal signal, int timeoutMs) {
  QEventLoop loop;
  bool fired = false;
  QObject::connect(sender, signal, &loop, [&] {
    fired = true;
    loop.quit();
  });
  QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
  loop.exec();
  return fired;
}

// Waits in the event loop (sleeping between checks every 5 ms: a spinning GUI thread would take a
// core from the profiled calls' matrix-product threads).
bool waitUntil(const std::function<bool()>& done, int timeoutMs) {
  if (done()) return true;
  QEventLoop loop;
  QTimer poll;
  QObject::connect(&poll, &QTimer::timeout, &loop, [&] {
    if (done()) loop.quit();
  });
  poll.start(5);
  QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
  loop.exec();
  return done();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// memory: the allocation hook on both sides (the Profile dialog's default; `tensorscope profile
// --memory`) or off on both (the CLI's default). Each side measures what the other does.
// BENCH_PAINTS=1: counts the paint events of each widget class while the window profiles (what
// the GUI thread draws meanwhile).
struct PaintCounter : QObject {
  std::map<std::string, int> counts;
  bool on = false;
  bool eventFilter(QObject* o, QEvent* e) override {
    if (on && e->type() == QEvent::Paint) ++counts[o->metaObject()->className()];
    return false;
  }
};

void mlpThroughTheWindow(int pairs, int runs, bool memory) {
  static PaintCounter paints;
  static const bool countPaints = std::getenv("BENCH_PAINTS") != nullptr;
  if (countPaints) qApp->installEventFilter(&paints);
  const QString path = QStringLiteral(TSCOPE_SOURCE_DIR "/examples/graphs/mlp.tsg");
  gui::MainWindow window;
  window.resize(1400, 900);
  window.show();
  window.openFile(path);
  if (!waitUntil([&] { return window.document() && !window.isBusy(); }, 120000)) {
    std::printf("  mlp.tsg did not open\n");
    return;
  }
  gui::ProfileUi* ui = window.profileUi();
  gui::ProfileRequest request;
  request.mode = engine::Mode::FastRun;
  request.runs = runs;
  request.warmup = 5;
  request.roofline = false;
  request.memory = memory;
  const engine::io::TsgDocument doc = engine::session::openGraphFile(path.toStdString());
  std::vector<double> cli, gui, ratio, cliCall, guiCall, excess;
  for (int pair = 0; pair < pairs + 1; ++pair) {  // the first pair warms caches and is dropped
    double cliMs = 0, guiMs = 0, cliCallMean = 0, guiCallMean = 0;
    auto runCli = [&] {
      // The graph as the file holds it, as each `tensorscope profile` reads it (its training
      // updates change the copy; the window profiles a copy of its document too). The copy is
      // timed on both sides: it stands for the CLI's reading of the file, which costs more.
      QElapsedTimer clock;
      clock.start();
      const std::unique_ptr<engine::FunctionGraph> graph = doc.original->clone();
      engine::session::RunInputs inputs;
      inputs.mode = request.mode;
      inputs.randomSeed = 0;
      const auto prepared = engine::session::prepareRun(*graph, inputs);
      prof::ProfileRunOptions o;
      o.runs = request.runs;
      o.warmup = request.warmup;
      o.profiler.memory = request.memory;
      prof::GraphProfile g =
          prof::profileGraph(*graph, prepared.inputs, prepared.args, request.mode, o);
      prof::ReportOptions report;
      report.memory = request.memory;
      const std::string text = prof::reportText(g.profile, report);
      cliMs = ms(clock);
      cliCallMean = g.profile.function.call.mean;
      if (text.empty()) std::printf("empty report\n");
    };
    auto runGui = [&] {
      QElapsedTimer clock;
      clock.start();
      QEventLoop loop;
      QObject::connect(ui, &gui::ProfileUi::viewShown, &loop, &QEventLoop::quit);
      double finishedMs = 0;
      auto c = QObject::connect(ui, &gui::ProfileUi::profileFinished, &loop,
                                [&] { finishedMs = ms(clock); });
      QTimer::singleShot(120000, &loop, &QEventLoop::quit);
      paints.on = countPaints;
      ui->startProfile(request);
      loop.exec();
      paints.on = false;
      guiMs = ms(clock);
      QObject::disconnect(c);
      if (std::getenv("BENCH_VERBOSE"))
        std::printf("    [gui: run done %.1f ms, shown %.1f ms]\n", finishedMs, guiMs);
      guiCallMean = ui->snapshot()->profile->function.call.mean;
      waitUntil([&] { return !window.isBusy(); }, 120000);  // the pane's layout: not timed
    };
    // BENCH_CLI_ON_WORKER=1: the CLI side on a thread of Qt's pool, as the window's profile runs
    // (tells the cost of the thread from the cost of the window).
    static const bool cliOnWorker = std::getenv("BENCH_CLI_ON_WORKER") != nullptr;
    auto cliSide = [&] {
      if (cliOnWorker)
        QtConcurrent::run(runCli).waitForFinished();
      else
        runCli();
    };
    if (pair % 2 == 0) {
      cliSide();
      runGui();
    } else {
      runGui();
      cliSide();
    }
    if (pair == 0) continue;
    cli.push_back(cliMs);
    gui.push_back(guiMs);
    ratio.push_back(guiMs / cliMs);
    cliCall.push_back(cliCallMean * 1e3);
    guiCall.push_back(guiCallMean * 1e3);
    // What each side spends outside its measured calls (compiling, warm-up, the report or the
    // window's views), the window's surplus as a share of the CLI's whole run.
    const double calls = static_cast<double>(request.runs);
    excess.push_back(((guiMs - guiCallMean * 1e3 * calls) - (cliMs - cliCallMean * 1e3 * calls)) /
                     cliMs);
  }
  // Where the window's extra time goes: what it computes after the calls, on one profile.
  {
    const std::unique_ptr<engine::FunctionGraph> graph = doc.original->clone();
    engine::session::RunInputs inputs;
    inputs.mode = request.mode;
    inputs.randomSeed = 0;
    const auto prepared = engine::session::prepareRun(*graph, inputs);
    prof::ProfileRunOptions o;
    o.runs = request.runs;
    o.warmup = request.warmup;
    o.profiler.memory = request.memory;
    prof::GraphProfile g =
        prof::profileGraph(*graph, prepared.inputs, prepared.args, request.mode, o);
    QElapsedTimer clock;
    clock.start();
    auto s = std::make_shared<gui::ProfileSnapshot>();
    s->graph = std::shared_ptr<const engine::FunctionGraph>(std::move(g.graph));
    s->model = vis::ViewModel::build(s->graph);
    const double model = ms(clock);
    s->profile = std::make_shared<const prof::Profile>(std::move(g.profile));
    const auto view = gui::ProfileView::make(s);
    const double made = ms(clock);
    // The timeline: best of three (its first build also touches fresh pages).
    std::shared_ptr<const gui::TimelineData> timeline;
    double timelineMs = 1e9;
    for (int k = 0; k < 3; ++k) {
      QElapsedTimer t;
      t.start();
      timeline = gui::TimelineData::build(*s->profile, s->graph.get());
      timelineMs = std::min(timelineMs, ms(t));
    }
    const double timed = made + timelineMs;
    clock.restart();
    const gui::HeatMap heat = gui::buildHeatMap(*view, {});
    const double heated = timed + ms(clock);
    std::printf(
        "    after the calls: view model %.1f ms, tables %.1f ms, timeline %.1f ms (%zu "
        "bars), heat map %.1f ms\n",
        model, made - model, timed - made, timeline->bars.size(), heated - timed);
  }
  if (countPaints) {
    std::printf("    paint events during the window's profiles:");
    for (const auto& [cls, n] : paints.counts) std::printf(" %s %d", cls.c_str(), n);
    std::printf("\n");
    paints.counts.clear();
  }
  const double r = median(ratio);
  std::printf("  MLP fast_run, %d runs + 5 warm-up, %d pairs, memory %s on both sides:\n", runs,
              pairs, memory ? "on" : "off");
  std::printf("    tensorscope profile (in process)   median %8.1f ms\n", median(cli));
  std::printf("    through the window (to viewShown)  median %8.1f ms\n", median(gui));
  std::printf("    window / CLI, paired               median %8.3f   %s (target <= 1.05)\n", r,
              r <= 1.05 ? "ok" : "SLOW");
  std::sort(ratio.begin(), ratio.end());
  std::printf("    paired ratios, sorted:");
  for (double x : ratio) std::printf(" %.2f", x);
  std::printf("\n");
  std::printf("    mean call measured: CLI %.3f ms, window %.3f ms (ratio %.3f)\n", median(cliCall),
              median(guiCall), median(guiCall) / median(cliCall));
  // Note [Window cost outside the calls]: on a shared VM the profiled calls of two identical
  // sides differ by tens of percent from pair to pair, which swamps a 5 % target; what the window
  // adds is the time it spends outside its calls beyond what the CLI spends outside its own.
  const double e = median(excess);
  std::printf(
      "    window's surplus outside the calls, paired median %+.1f %% of the CLI's run "
      "(ratio with equal calls %.3f)   %s (target <= 1.05)\n",
      100 * e, 1 + e, 1 + e <= 1.05 ? "ok" : "SLOW");
}

void heatMapOnTheBigGraph() {
  auto graph = synthetic::groupedGraph(20000, 3);
  auto model = vis::ViewModel::build(graph);
  // A profile of every apply with random times, one call per run, two runs.
  prof::Profile p;
  p.function.measuredRuns = 2;
  std::mt19937 rng(7);
  std::exponential_distribution<double> time(1000.0);
  std::int64_t position = 0;
  for (const engine::Apply* a : graph->nodes()) {
    prof::NodeProfile n;
    n.id = a->id();
    n.position = position++;
    n.op = a->op().str();
    n.opClass = a->op().name();
    n.scope = a->scope();
    n.calls = 2;
    const double s = time(rng);
    n.time = prof::TimeStats::of({s, s});
    n.outputs.push_back({{8}, "float32", 32});
    p.nodes.push_back(std::move(n));
  }
  auto snapshot = std::make_shared<gui::ProfileSnapshot>();
  snapshot->graph = graph;
  snapshot->model = model;
  snapshot->profile = std::make_shared<const prof::Profile>(std::move(p));

  vis::LayoutService service;
  QMainWindow window;
  auto* pane = new gui::GraphPane(&service);
  window.setCentralWidget(pane);
  window.resize(1600, 1000);
  window.show();
  pane->setModel(model);
  if (!waitForSignal(pane, &gui::GraphPane::layoutFinished, 120000)) {
    std::printf("  20000 nodes grouped: no layout\n");
    return;
  }
  waitUntil([&] { return !pane->isLayoutPending(); }, 120000);
  std::vector<double> build, draw, total;
  for (int i = 0; i < 5; ++i) {
    QElapsedTimer clock;
    clock.start();
    const auto view = gui::ProfileView::make(snapshot);
    const gui::HeatMap heat = gui::buildHeatMap(
        *view, {i % 2 ? gui::HeatMetric::P95 : gui::HeatMetric::Time, gui::HeatScale::Reds});
    const double built = ms(clock);
    pane->setDecorations(QStringLiteral("profile"), heat.decorations, gui::kProfileLayerZ);
    pane->view()->viewport()->repaint();
    const double all = ms(clock);
    build.push_back(built);
    draw.push_back(all - built);
    total.push_back(all);
  }
  const double t = median(total);
  std::printf("  heat map on 20000 nodes grouped (%zu view nodes, %zu groups):\n",
              model->nodes().size(), model->groups().size());
  std::printf("    view + decorations (worker) %7.1f ms, merge + repaint (GUI) %7.1f ms\n",
              median(build), median(draw));
  std::printf("    total                       median %7.1f ms   %s (target < 200 ms)\n", t,
              t < 200 ? "ok" : "SLOW");
}

}  // namespace

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  QApplication app(argc, argv);
  int pairs = 5, runs = 200;
  for (int i = 1; i < argc; ++i) {
    if (QByteArray(argv[i]) == "--pairs" && i + 1 < argc)
      pairs = std::max(1, std::atoi(argv[++i]));
    else if (QByteArray(argv[i]) == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr,
                   "bench_gui_profile: unknown argument '%s' (expected --pairs N, --runs R)\n",
                   argv[i]);
      return 2;
    }
  }
  std::printf("bench_gui_profile\n");
  mlpThroughTheWindow(pairs, runs, false);
  mlpThroughTheWindow(pairs, runs, true);
  heatMapOnTheBigGraph();
  return 0;
}
