// GUI figures (issue 6's targets): time to first paint for a 2,000-node flat graph and a
// 20,000-node graph grouped by scope (target < 2 s each), for the ResNet-18 and transformer ONNX
// fixtures; time to expand one group (< 1 s); frame time while panning with ~5,000 visible items
// (< 16 ms); and the event-loop probe's longest GUI-thread stall during each (< 100 ms).
//
// First paint = view model built on a worker + layout on the LayoutService thread + scene items
// built on the GUI thread + the viewport's first paint (the next event-loop turn), all measured in
// a shown QMainWindow holding a GraphPane, the way the application does it.
// Scene figures: items + first paint of 5,000 and 12,500 items (grid layouts, no Graphviz),
// synchronous (GraphScene::setContent) and asynchronous (setContentAsync, with its longest stall).
//   bench_gui [--runs N] [--no-onnx] [--expand-more] [--only TEXT] [--shots DIR]   (offscreen
//   unless QT_QPA_PLATFORM says otherwise; --only: the graphs whose name contains TEXT; --shots:
//   a picture of each after its first paint)
// --expand-more also opens every group of the 20,000-node graph (one ~50,000-item scene) and, in
// each ONNX model, collapses all and opens the largest group.
// Readability (issue 24): for the ResNet-18 and transformer fixtures, and with --models DIR for
// DIR/resnet18.onnx and DIR/transformer.onnx (tests/bench/make_bench_models.py), each in three
// variants: "boxes, old placement" (parameters as boxes, scope-less nodes at the root: before
// issue 24), "boxes" (placement by use) and "badges"; per variant its first paint, edge crossings
// and summed edge length, in scene points and in pixels when fitted to the window; --longest N
// lists each variant's N longest edges (length, share, the level and the nodes they join).

#include "bench/synthetic_graphs.h"
#include "engine/session/graph_file.h"
#include "gui/app/event_loop_probe.h"
#include "gui/app/graph_pane.h"
#include "visualizers/layout/layout_metrics.h"
#include "visualizers/scene_test_support.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QMainWindow>
#include <QScrollBar>
#include <QTimer>
#include <QWindow>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>

using namespace tscope;
using gui::EventLoopProbe;
using gui::GraphPane;

namespace {

using GraphSource = std::function<std::shared_ptr<const engine::FunctionGraph>()>;

// --only TEXT: only the figures whose graph name contains TEXT, or one of the '|'-separated TEXTs
// (and no scene figures).
QByteArray g_only;
// --shots DIR: a picture of each graph after its first paint (fitted, and at zoom 0.5 at the top).
QString g_shots;
// --longest N: the N longest edges of each readability variant, with the level and items they join.
int g_longest = 0;
bool selected(const char* name) {
  if (g_only.isEmpty()) return true;
  for (const QByteArray& part : g_only.split('|'))  // --only "a|b": either
    if (!part.isEmpty() && QByteArray(name).contains(part)) return true;
  return false;
}

struct Bench {
  vis::LayoutService* service = nullptr;
  QMainWindow* window = nullptr;
  GraphPane* pane = nullptr;
  double layoutReadyMs =
      0;  // when the service delivered the awaited layout (before the pane's items)
  QElapsedTimer clock;
};

// Runs the event loop until `signal` fires or `timeoutMs` pass; false on timeout.
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

// Runs the event loop for `ms` milliseconds (paint events and other deferred work land).
void spin(int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
}

double ms(const QElapsedTimer& clock) {
  return static_cast<double>(clock.nsecsElapsed()) / 1e6;
}

void printRow(const char* what, double value, const char* unit, double target,
              const EventLoopProbe* probe, const QString& note = {}) {
  std::printf("  %-44s %9.1f %-3s %s", what, value, unit,
              target > 0 ? (value < target ? "ok  " : "SLOW") : "    ");
  if (probe)
    std::printf("  max stall %6.1f ms (busy %6.1f)", probe->maxStallMs(), probe->maxBusyStallMs());
  if (!note.isEmpty()) std::printf("  %s", qPrintable(note));
  std::printf("\n");
}

// Waits for the pane's next layoutFinished; false on timeout.
bool waitLayout(GraphPane* pane, int timeoutMs = 120000) {
  return waitForSignal(pane, &GraphPane::layoutFinished, timeoutMs);
}

// How a first paint draws its graph: the model's build options and the pane's parameter mode
// (null: the model's default).
struct Variant {
  vis::BuildOptions build;
  std::optional<vis::ParameterMode> parameters;
};

// Model build (worker) + layout + items + first paint. Returns the model shown, or null.
std::shared_ptr<const vis::ViewModel> firstPaint(Bench& b, const char* name,
                                                 const GraphSource& source,
                                                 const Variant& variant = {}) {
  if (!selected(name)) return nullptr;
  auto graph = source();  // building or reading the graph is not part of the figure
  b.pane->setModel(nullptr);
  b.pane->setParameterMode(variant.parameters);
  EventLoopProbe probe;
  int shown = 0;
  QMetaObject::Connection counts = QObject::connect(b.pane, &GraphPane::layoutFinished,
                                                    [&shown](int nodes, int) { shown = nodes; });
  probe.start();
  b.clock.start();
  b.layoutReadyMs = 0;
  double modelMs = 0;
  QtConcurrent::run([graph, options = variant.build] {
    return vis::ViewModel::build(graph, {}, false, options);
  }).then(b.window, [&b, &modelMs](std::shared_ptr<const vis::ViewModel> model) {
    modelMs = ms(b.clock);
    b.pane->setModel(std::move(model));
  });
  const bool done = waitLayout(b.pane);
  QObject::disconnect(counts);
  if (!done) {
    std::printf("  %s: no layout within 120 s\n", name);
    return nullptr;
  }
  double itemsMs = ms(b.clock);
  // The viewport's first paint is the update request setContent posted: the next event-loop turn.
  QCoreApplication::processEvents();
  double paintMs = ms(b.clock);
  spin(50);
  probe.stop();
  if (!g_shots.isEmpty()) {
    const QString base = g_shots + QLatin1Char('/') + QString::fromLatin1(name).replace(' ', '_');
    vis::GraphView* view = b.pane->view();
    view->zoomToFit();
    spin(200);
    b.pane->grab().save(base + QStringLiteral("_fit.png"));
    const QRectF all = view->scene()->sceneRect();
    view->setZoom(0.5);
    view->centerOn(QPointF(all.center().x(), all.top() + view->viewport()->height()));
    spin(200);
    b.pane->grab().save(base + QStringLiteral("_top.png"));
    view->zoomToFit();
    spin(50);
  }
  const auto& model = b.pane->model();
  QString note =
      QStringLiteral("[%1 view nodes, %2 shown; model %3, layout %4, items %5, paint %6 ms]")
          .arg(model->nodes().size())
          .arg(shown)
          .arg(modelMs, 0, 'f', 0)
          .arg(b.layoutReadyMs - modelMs, 0, 'f', 0)
          .arg(itemsMs - b.layoutReadyMs, 0, 'f', 0)
          .arg(paintMs - itemsMs, 0, 'f', 0);
  printRow(qPrintable(QStringLiteral("first paint, %1").arg(name)), paintMs, "ms", 2000, &probe,
           note);
  return model;
}

// Toggles the largest collapsed group on screen open; time to its layout and repaint.
void expandGroup(Bench& b, const char* name) {
  auto layout = b.pane->view()->graphScene()->sceneLayout();
  const auto& model = *b.pane->model();
  const vis::PlacedGroup* best = nullptr;
  for (const vis::PlacedGroup& g : layout->groups)
    if (!g.expanded &&
        (!best || model.groups()[g.group].totalNodes > model.groups()[best->group].totalNodes))
      best = &g;
  if (!best && !layout->groups.empty()) {
    // Everything fitted the default budget: collapse all, then expand the largest top group.
    b.pane->collapseAll();
    if (!waitLayout(b.pane)) return;
    return expandGroup(b, name);
  }
  if (!best) {
    std::printf("  expand a group, %s: the graph has no groups\n", name);
    return;
  }
  const vis::Group& group = model.groups()[best->group];
  EventLoopProbe probe;
  probe.start();
  b.clock.start();
  b.pane->toggleGroup(group.path);
  if (!waitLayout(b.pane)) return;
  b.pane->view()->viewport()->repaint();
  double total = ms(b.clock);
  spin(50);
  probe.stop();
  printRow(qPrintable(QStringLiteral("expand a group, %1").arg(name)), total, "ms", 1000, &probe,
           QStringLiteral("[%1: %2 nodes inside]").arg(group.path).arg(group.totalNodes));
}

// Expands every group: each group's layout is its own dot run (cached), then one scene of it all.
void expandAll(Bench& b, const char* name) {
  EventLoopProbe probe;
  probe.start();
  b.clock.start();
  b.layoutReadyMs = 0;
  int shown = 0;
  QMetaObject::Connection counts = QObject::connect(b.pane, &GraphPane::layoutFinished,
                                                    [&shown](int nodes, int) { shown = nodes; });
  b.pane->expandAll();
  const bool done = waitLayout(b.pane);
  QObject::disconnect(counts);
  if (!done) return;
  double itemsMs = ms(b.clock);
  b.pane->view()->viewport()->repaint();
  double total = ms(b.clock);
  spin(50);
  probe.stop();
  printRow(qPrintable(QStringLiteral("expand all, %1").arg(name)), total, "ms", 0, &probe,
           QStringLiteral("[%1 shown, %2 scene items; layout %3, items %4, paint %5 ms]")
               .arg(shown)
               .arg(b.pane->view()->scene()->items().size())
               .arg(b.layoutReadyMs, 0, 'f', 0)
               .arg(itemsMs - b.layoutReadyMs, 0, 'f', 0)
               .arg(total - itemsMs, 0, 'f', 0));
}

// Zooms until about `items` items are in the viewport, then pans step by step, repainting each.
void panFrames(Bench& b, const char* name, int targetItems) {
  vis::GraphView* view = b.pane->view();
  view->zoomToFit();
  auto visibleItems = [view] { return view->items(view->viewport()->rect()).size(); };
  for (int i = 0;
       i < 100 && visibleItems() > targetItems && view->zoom() < vis::GraphView::kMaxZoom; ++i)
    view->setZoom(view->zoom() * 1.05);
  const qsizetype visible = visibleItems();
  QScrollBar* bar = view->verticalScrollBar()->maximum() > view->horizontalScrollBar()->maximum()
                        ? view->verticalScrollBar()
                        : view->horizontalScrollBar();
  bar->setValue(bar->minimum());
  const int frames = 120;
  const int step = std::max(1, (bar->maximum() - bar->minimum()) / frames);
  std::vector<double> times;
  // A paint at the new zoom before panning, reported on its own.
  QElapsedTimer first;
  first.start();
  view->viewport()->repaint();
  const double firstFrameMs = ms(first);
  QCoreApplication::processEvents();
  EventLoopProbe probe;
  probe.start();
  for (int i = 0; i < frames; ++i) {
    bar->setValue(bar->value() + (i < frames / 2 ? step : -step));
    QElapsedTimer frame;
    frame.start();
    view->viewport()->repaint();
    times.push_back(ms(frame));
    QCoreApplication::processEvents();
  }
  probe.stop();
  // The slowest frame and where it came: the first scroll step at a new zoom fills the view's
  // caches for the area it exposes; the steady frames follow.
  const auto slowest = std::max_element(times.begin(), times.end());
  const long slowestFrame = static_cast<long>(slowest - times.begin());
  std::sort(times.begin(), times.end());
  double mean =
      std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
  printRow(qPrintable(QStringLiteral("pan frame (mean), %1").arg(name)), mean, "ms", 16, &probe,
           QStringLiteral("[%1 items visible at zoom %2; p95 %3, max %4 ms (frame %5 of %6); "
                          "paint before panning %7 ms]")
               .arg(visible)
               .arg(view->zoom(), 0, 'f', 2)
               .arg(times[times.size() * 95 / 100], 0, 'f', 1)
               .arg(times.back(), 0, 'f', 1)
               .arg(slowestFrame)
               .arg(frames)
               .arg(firstFrameMs, 0, 'f', 1));
}

// Scene items + first paint for a grid-laid-out chain (no Graphviz: the figure is the scene's),
// in a view of its own, fitted (overview) and at 1x replacing a full scene: the synchronous
// path (exporters, command line) and the asynchronous one (the window) with its longest stall.
void sceneFigures(int applies, int columns) {
  const auto model = vis::ViewModel::build(vis::testing::chainGraph(applies));
  const auto layout = vis::testing::gridLayout(*model, columns);
  const std::size_t items = layout->nodes.size() + layout->edges.size() + 2;
  QMainWindow window;
  auto* view = new vis::GraphView;
  window.setCentralWidget(view);
  window.resize(1600, 1000);
  window.show();
  spin(200);
  for (bool fit : {true, false}) {
    const char* where = fit ? "fitted" : "1x, replacing";
    if (!fit) {
      view->resetZoom();
      spin(100);
    }
    EventLoopProbe probe;
    probe.start();
    QElapsedTimer clock;
    clock.start();
    view->setContent(model, layout, QString(), fit);
    const double itemsMs = ms(clock);
    view->viewport()->repaint();
    const double paintMs = ms(clock) - itemsMs;
    spin(50);
    probe.stop();
    printRow(qPrintable(QStringLiteral("scene sync, %1 items, %2").arg(items).arg(where)),
             itemsMs + paintMs, "ms", 0, &probe,
             QStringLiteral("[items %1, first paint %2 ms]")
                 .arg(itemsMs, 0, 'f', 1)
                 .arg(paintMs, 0, 'f', 1));
    if (!fit) {
      view->resetZoom();
      spin(100);
    }
    probe.start();
    clock.start();
    view->setContentAsync(model, layout, QString(), fit);
    const bool done = waitForSignal(view, &vis::GraphView::contentReady, 30000);
    const double readyMs = ms(clock);
    spin(50);
    probe.stop();
    if (!done) {
      std::printf("  scene async, %zu items: not ready within 30 s\n", items);
      continue;
    }
    printRow(qPrintable(QStringLiteral("scene async, %1 items, %2").arg(items).arg(where)), readyMs,
             "ms", 0, &probe,
             QStringLiteral("[all items created; the stall is the figure: < 100 ms]"));
  }
}

std::shared_ptr<const engine::FunctionGraph> onnxGraph(const std::filesystem::path& file) {
  auto doc = engine::session::openGraphFile(file);
  return std::shared_ptr<const engine::FunctionGraph>(std::move(doc.original));
}

std::shared_ptr<const engine::FunctionGraph> onnxFixture(const char* file) {
  return onnxGraph(std::filesystem::path(TSCOPE_TEST_DATA_DIR) / "onnx/models" / file);
}

// The `g_longest` longest edges of `layout`: length, share of `total`, the level they lie in and
// the ViewModel nodes of their first edge's ends.
void printLongest(const vis::ViewModel& model, const vis::SceneLayout& layout, double total) {
  std::vector<std::pair<double, const vis::PlacedEdge*>> edges;
  for (const vis::PlacedEdge& edge : layout.edges) edges.emplace_back(edge.path.length(), &edge);
  std::sort(edges.begin(), edges.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  double sum = 0;
  auto name = [&](int node) {
    const vis::ViewNode& n = model.nodes()[std::size_t(node)];
    return model.groups()[std::size_t(n.group)].path + QLatin1Char(':') +
           QString(n.label).replace(QLatin1Char('\n'), QLatin1Char(' '));
  };
  for (std::size_t i = 0; i < edges.size() && i < std::size_t(g_longest); ++i) {
    const vis::PlacedEdge& e = *edges[i].second;
    sum += edges[i].first;
    const vis::ViewEdge& first = model.edges()[std::size_t(e.edges.front())];
    const QRectF box = e.path.controlPointRect();
    std::printf("      %7.0f pt (%4.1f %%, top %4.1f %%)  %4.0f x %5.0f  level '%s': %s -> %s%s\n",
                edges[i].first, 100 * edges[i].first / total, 100 * sum / total, box.width(),
                box.height(), qPrintable(model.groups()[std::size_t(e.level)].path),
                qPrintable(name(first.from)), qPrintable(name(first.to)),
                e.edges.size() > 1 ? qPrintable(QStringLiteral(" (x%1)").arg(e.edges.size())) : "");
  }
}

// The readability figures of one model (issue 24): first paint, crossings and edge length of each
// variant, the before/after ratio of the fitted edge length.
void readability(Bench& b, const QString& name, const std::filesystem::path& file) {
  if (!selected(qPrintable(name))) return;
  std::shared_ptr<const engine::FunctionGraph> graph;
  try {
    graph = onnxGraph(file);
  } catch (const std::exception& e) {
    std::printf("  %s: cannot open %s: %s\n", qPrintable(name), file.c_str(), e.what());
    return;
  }
  struct Row {
    const char* what;
    Variant variant;
  };
  const Row rows[] = {
      {"boxes, old placement", {{.placeByUse = false}, vis::ParameterMode::Boxes}},
      {"boxes", {{}, vis::ParameterMode::Boxes}},
      {"badges", {{}, vis::ParameterMode::Badges}},
  };
  double before = 0;
  for (const Row& row : rows) {
    const QString label = name + QStringLiteral(", ") + QString::fromLatin1(row.what);
    b.service->clearCache();  // each variant lays out from scratch: first paints compare fairly
    const auto model = firstPaint(
        b, qPrintable(label), [graph] { return graph; }, row.variant);
    if (!model) continue;
    const auto layout = b.pane->view()->graphScene()->sceneLayout();
    const vis::LayoutMetrics m = vis::measureLayout(*layout);
    const double scale = m.fitScale(QSizeF(b.pane->view()->viewport()->size()));
    const double fitted = m.edgeLength * scale;
    if (before == 0) before = fitted;
    printRow(qPrintable(QStringLiteral("  crossings, %1").arg(label)), double(m.crossings), "", 0,
             nullptr,
             QStringLiteral("[%1 edges; %2 parameters, default %3]")
                 .arg(m.edges)
                 .arg(model->parameterCount())
                 .arg(vis::parameterModeName(model->defaultParameterMode())));
    printRow(qPrintable(QStringLiteral("  edge length fitted, %1").arg(label)), fitted, "px", 0,
             nullptr,
             QStringLiteral("[%1 pt in a %2 x %3 pt drawing, fit scale %4; %5 of before]")
                 .arg(m.edgeLength, 0, 'f', 0)
                 .arg(m.bounds.width(), 0, 'f', 0)
                 .arg(m.bounds.height(), 0, 'f', 0)
                 .arg(scale, 0, 'f', 3)
                 .arg(before > 0 ? fitted / before : 0, 0, 'f', 2));
    if (g_longest > 0) printLongest(*model, *layout, m.edgeLength);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures already printed survive a crash further on
  QApplication app(argc, argv);
  int runs = 1;
  bool withOnnx = true;
  bool expandMore = false;
  QString modelsDir;
  for (int i = 1; i < argc; ++i) {
    if (QByteArray(argv[i]) == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (QByteArray(argv[i]) == "--no-onnx")
      withOnnx = false;
    else if (QByteArray(argv[i]) == "--expand-more")
      expandMore = true;
    else if (QByteArray(argv[i]) == "--only" && i + 1 < argc)
      g_only = argv[++i];
    else if (QByteArray(argv[i]) == "--shots" && i + 1 < argc)
      g_shots = QString::fromLocal8Bit(argv[++i]);
    else if (QByteArray(argv[i]) == "--models" && i + 1 < argc)
      modelsDir = QString::fromLocal8Bit(argv[++i]);
    else if (QByteArray(argv[i]) == "--longest" && i + 1 < argc)
      g_longest = std::max(0, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr,
                   "bench_gui: unknown argument '%s' (expected --runs N, --no-onnx, "
                   "--expand-more, --only TEXT, --shots DIR, --models DIR, --longest N)\n",
                   argv[i]);
      return 2;
    }
  }

  vis::LayoutService service;
  QMainWindow window;
  Bench b;
  b.service = &service;
  b.window = &window;
  // Connected before the pane exists, so it runs before the pane builds the scene items.
  QObject::connect(&service, &vis::LayoutService::layoutReady, &window,
                   [&b] { b.layoutReadyMs = ms(b.clock); });
  b.pane = new GraphPane(&service);
  window.setCentralWidget(b.pane);
  window.resize(1600, 1000);
  window.show();
  for (int i = 0; i < 100 && !(window.windowHandle() && window.windowHandle()->isExposed()); ++i)
    spin(20);
  if (!window.windowHandle() || !window.windowHandle()->isExposed()) {
    std::fprintf(stderr, "bench_gui: the window was not exposed\n");
    return 1;
  }

  std::printf("bench_gui: %s platform, window %dx%d, %d run(s)\n",
              qPrintable(QGuiApplication::platformName()), window.width(), window.height(), runs);
  std::printf("  %-44s %9s %-3s %s\n", "figure", "value", "", "target");
  for (int run = 0; run < runs; ++run) {
    if (g_only.isEmpty()) {
      sceneFigures(2000, 45);  // ~5,000 items
      sceneFigures(5000, 70);  // ~12,500 items
    }
    service.clearCache();  // each run lays out from scratch
    firstPaint(b, "2000 nodes flat", [] { return synthetic::flatGraph(2000); });
    if (firstPaint(b, "20000 nodes grouped", [] { return synthetic::groupedGraph(20000, 3); })) {
      expandGroup(b, "20000 nodes grouped");
      expandGroup(b, "20000 nodes grouped (again)");
      if (expandMore) expandAll(b, "20000 nodes grouped");
    }
    // Panning needs many items on screen at a readable zoom: a wide graph (32 chains side by side).
    if (firstPaint(b, "5000 nodes flat, 32 chains",
                   [] { return synthetic::makeGraph({.applies = 5000, .chains = 32}); }))
      panFrames(b, "5000 nodes flat, 32 chains", 5000);
#ifdef TSCOPE_HAVE_ONNX
    if (withOnnx) {
      for (const char* file : {"resnet18.onnx", "transformer_encoder.onnx"}) {
        if (firstPaint(b, file, [file] { return onnxFixture(file); }) && expandMore)
          expandGroup(b, file);
      }
      const std::filesystem::path fixtures =
          std::filesystem::path(TSCOPE_TEST_DATA_DIR) / "onnx/models";
      readability(b, QStringLiteral("resnet18 fixture"), fixtures / "resnet18.onnx");
      readability(b, QStringLiteral("transformer fixture"), fixtures / "transformer_encoder.onnx");
      if (!modelsDir.isEmpty()) {
        const std::filesystem::path dir = modelsDir.toStdString();
        readability(b, QStringLiteral("resnet18 full"), dir / "resnet18.onnx");
        readability(b, QStringLiteral("transformer full"), dir / "transformer.onnx");
      }
    }
#else
    if (withOnnx) std::printf("  (ONNX fixtures skipped: built without ONNX)\n");
#endif
  }
  auto stats = service.stats();
  std::printf(
      "layout service: %llu dot runs, %llu cache hits, %llu stale jobs dropped, %.2f s in "
      "Graphviz\n",
      static_cast<unsigned long long>(stats.levelsLaidOut),
      static_cast<unsigned long long>(stats.cacheHits),
      static_cast<unsigned long long>(stats.jobsDropped), stats.dotSeconds);
  return 0;
}
