#include "gui/app/application.h"

#include "engine/debug/breakpoints.h"
#include "gui/app/debug/debug_ui.h"
#include "gui/app/graph_pane.h"
#include "gui/app/history/rewrite_history_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/profile/profile_ui.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QImageWriter>
#include <QPixmap>
#include <QRegularExpression>
#include <QTimer>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>

namespace tscope::gui {

namespace {

struct WindowOptions {
  QString screenshot;  // where to write the PNG; empty: run interactively
  int timeoutSeconds = 120;
  bool sideBySide = false;
  QStringList expand;    // {"all"}, {"none"}, group paths, or empty
  QString select;        // search text whose first hit is selected
  QStringList docks;     // docks to show and raise ("inspector", "history", "log")
  int historyStep = -1;  // rewrite-log row to select in the history dock
  QSize size;
  double zoom = 0;                               // > 0: the zoom factor once laid out
  std::optional<vis::ParameterMode> parameters;  // --parameters: View > Parameters
  QString debug;            // "run" or "nan-guard": the debugger runs once the file is open
  QStringList debugBreaks;  // breakpoints set before that run
  QStringList profileView;  // --profile-view KEY=VALUE (ProfileUi::applyOptions)
};

void fail(const QString& message) {
  std::fprintf(stderr, "tensorscope: %s\n", qPrintable(message));
}

// Applies the options that need a loaded document; returns false with a message when one is wrong.
bool applyDocumentOptions(MainWindow& window, const WindowOptions& options, QString& error) {
  if (options.parameters) window.setParameterMode(*options.parameters);
  if (options.sideBySide) {
    if (!window.document()->optimizedModel) {
      error = QStringLiteral(
                  "--side-by-side: %1 has no optimized graph (run `tensorscope optimize` first)")
                  .arg(window.document()->path);
      return false;
    }
    window.setSideBySide(true);
  }
  for (GraphPane* pane : window.isSideBySide()
                             ? QList<GraphPane*>{window.leftPane(), window.rightPane()}
                             : QList<GraphPane*>{window.currentPane()}) {
    if (options.expand == QStringList{QStringLiteral("all")}) {
      pane->expandAll();
    } else if (options.expand == QStringList{QStringLiteral("none")}) {
      pane->collapseAll();
    } else if (!options.expand.isEmpty()) {
      // Group paths: each opens with the groups around it.
      vis::GroupState state;
      const vis::ViewModel& model = *pane->model();
      for (const QString& path : options.expand) {
        int group = model.groupByPath(path);
        if (group < 0) {
          if (pane == window.rightPane()) continue;  // a scope the optimizer emptied
          error =
              QStringLiteral("--expand: %1 has no group '%2'").arg(window.document()->path, path);
          return false;
        }
        for (; group > 0; group = model.groups()[static_cast<std::size_t>(group)].parent)
          state.setExpanded(model.groups()[static_cast<std::size_t>(group)].path, true);
      }
      pane->setGroupState(state);
    }
  }
  for (const QString& name : options.docks) {
    QDockWidget* dock = window.dock(name + QStringLiteral("Dock"));
    dock->show();
    dock->raise();
  }
  if (!options.profileView.isEmpty() &&
      !window.profileUi()->applyOptions(options.profileView, &error))
    return false;
  if (!options.select.isEmpty() && window.find(options.select) == 0) {
    error = QStringLiteral("--select: no node matches '%1'").arg(options.select);
    return false;
  }
  if (options.historyStep >= 0) {
    if (options.historyStep >= static_cast<int>(window.document()->rewrites.size())) {
      error = QStringLiteral("--history-step: %1 has %2 logged rewrites, asked for row %3")
                  .arg(window.document()->path)
                  .arg(window.document()->rewrites.size())
                  .arg(options.historyStep);
      return false;
    }
    window.rewriteHistory()->selectRecord(options.historyStep);
  }
  if (!options.debug.isEmpty()) {
    DebugController* debugger = window.debugUi()->controller();
    for (const QString& spec : options.debugBreaks) {
      try {
        debugger->addBreakpoint(engine::debug::parseBreakSpec(spec.toStdString()));
      } catch (const std::exception& e) {
        error = QStringLiteral("--debug-break: %1").arg(QString::fromUtf8(e.what()));
        return false;
      }
    }
    const bool guard = options.debug != QLatin1String("run");
    if (guard) {
      debugger->setNanGuardOptions(debugger->nanGuardOptions(),
                                   options.debug == QLatin1String("nan-collect"));
      window.action(QStringLiteral("actionDebugNanGuard"))->setChecked(true);
    }
    debugger->setNanGuardEnabled(guard);
    window.action(QStringLiteral("actionDebugRun"))->trigger();
  }
  return true;
}

// Calls `then` once the window has a document, nothing loads or lays out and `ready` holds, for
// three 100 ms ticks in a row (queued paints and selections settle meanwhile).
void whenSettled(MainWindow& window, std::function<bool()> ready, std::function<void()> then) {
  auto* poll = new QTimer(&window);
  auto idleTicks = std::make_shared<int>(0);
  QObject::connect(poll, &QTimer::timeout, &window, [&window, poll, idleTicks, ready, then] {
    const bool settled = window.document() && !window.isBusy() && ready();
    *idleTicks = settled ? *idleTicks + 1 : 0;
    if (*idleTicks < 3) return;
    poll->stop();
    poll->deleteLater();
    then();
  });
  poll->start(100);
}

// --zoom: the shown panes at that zoom, centred on their selected node when they have one.
void applyZoom(MainWindow& window, double zoom) {
  for (GraphPane* pane : window.isSideBySide()
                             ? QList<GraphPane*>{window.leftPane(), window.rightPane()}
                             : QList<GraphPane*>{window.currentPane()}) {
    pane->view()->setZoom(zoom);
    if (pane->selectedNode() >= 0) pane->view()->centerOnNode(pane->selectedNode());
  }
}

void grabWindow(QApplication& app, MainWindow& window, const QString& path) {
  const QPixmap image = window.grab();
  QImageWriter writer(path, "png");
  if (!writer.write(image.toImage())) {
    fail(QStringLiteral("--screenshot: cannot write %1: %2").arg(path, writer.errorString()));
    app.exit(1);
    return;
  }
  std::fprintf(stdout, "wrote %s (%dx%d)\n", qPrintable(QFileInfo(path).absoluteFilePath()),
               image.width(), image.height());
  app.exit(0);
}

// --screenshot: once the document is loaded, the options applied and every shown pane laid out
// (and the history's replay, when asked for, shown), grabs the window to a PNG and quits.
void takeScreenshotWhenReady(QApplication& app, MainWindow& window, const WindowOptions& options) {
  auto waitingForStep = std::make_shared<bool>(options.historyStep >= 0);
  QObject::connect(window.rewriteHistory(), &RewriteHistoryPanel::stepSelected, &window,
                   [waitingForStep] { *waitingForStep = false; });
  if (options.historyStep >= 0) {
    QObject::connect(window.rewriteHistory(), &RewriteHistoryPanel::replayUnavailable, &app,
                     [&app](const QString& message) {
                       fail(QStringLiteral("--history-step: %1").arg(message));
                       app.exit(1);
                     });
  }
  QObject::connect(&window, &MainWindow::loadFailed, &app,
                   [&app](const QString&, const QString& message) {
                     fail(QStringLiteral("--screenshot: %1").arg(message));
                     app.exit(1);
                   });
  QObject::connect(&window, &MainWindow::documentLoaded, &window, [&app, &window, options] {
    QString error;
    if (!applyDocumentOptions(window, options, error)) {
      fail(error);
      app.exit(2);
    }
  });
  whenSettled(
      window, [waitingForStep] { return !*waitingForStep; },
      [&app, &window, options] {
        if (options.zoom <= 0) {
          grabWindow(app, window, options.screenshot);
          return;
        }
        applyZoom(window, options.zoom);
        whenSettled(
            window, [] { return true; },
            [&app, &window, options] { grabWindow(app, window, options.screenshot); });
      });
  QTimer::singleShot(options.timeoutSeconds * 1000, &window, [&app, &window, options] {
    const QString what = !window.document() ? QStringLiteral("the file to load")
                         : window.isBusy()  ? QStringLiteral("the layout")
                                            : QStringLiteral("the rewrite history's replay");
    fail(QStringLiteral("--screenshot: timed out after %1 s waiting for %2")
             .arg(options.timeoutSeconds)
             .arg(what));
    app.exit(1);
  });
}

}  // namespace

int runApplication(QApplication& app) {
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/tensorscope.svg")));
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "Tensorscope: inspect, debug and profile tensor computation graphs.\n"
      "Without a sub-command it opens the window (sub-commands: tensorscope help)."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(
      "files", "Graphs to open (.tsg files or ONNX models), one window each.", "[FILE...]");
  const QCommandLineOption screenshot(
      "screenshot", "Open FILE, wait until it is drawn, write the window to OUT.png, quit.",
      "OUT.png");
  const QCommandLineOption timeout("screenshot-timeout",
                                   "Seconds --screenshot waits at most (default 120).", "S", "120");
  const QCommandLineOption sideBySide("side-by-side",
                                      "Show the original and optimized graphs side by side.");
  const QCommandLineOption expand(
      "expand",
      "Expand all groups, none, or the named group (a scope path such as "
      "layer1/layer1.0; repeatable).",
      "all|none|GROUP");
  const QCommandLineOption select(
      "select", "Select the first node matching TEXT (name, op, scope or id:N).", "TEXT");
  const QCommandLineOption dock(
      "dock", "Show and raise a dock: inspector, history, log, profile or timeline (repeatable).",
      "NAME");
  const QCommandLineOption profileView(
      "profile-view",
      "Show the file's profile so: metric=time|share|mean|p95|gflops|roofline|output|allocated, "
      "scale=reds|perceptual, range=A:B (fractions of run 0), run=N, compare=OTHER.tsg "
      "(repeatable).",
      "KEY=VALUE");
  const QCommandLineOption historyStep("history-step", "Select row N of the rewrite history.", "N");
  const QCommandLineOption size("window-size", "Resize the window, e.g. 1600x1000.", "WxH");
  const QCommandLineOption zoom(
      "zoom", "Once laid out, zoom to PERCENT (centred on the selected node).", "PERCENT");
  const QCommandLineOption debug(
      "debug",
      "Once the file is open, run it in the debugger (nan-guard: with NanGuard pausing at "
      "the first event; nan-collect: collecting every event).",
      "run|nan-guard|nan-collect");
  const QCommandLineOption debugBreak(
      "debug-break", "A breakpoint for --debug (node:ID, var:NAME, ...; repeatable).", "SPEC");
  const QCommandLineOption parameters(
      "parameters",
      "Draw parameters (shared variables, constants) as boxes, as badges inside the nodes that "
      "read them, or not at all (View > Parameters; remembered for the file).",
      "boxes|badges|hidden");
  parser.addOptions({screenshot, timeout, sideBySide, expand, select, dock, historyStep, size, zoom,
                     debug, debugBreak, profileView, parameters});
  parser.process(app);  // --help / --version / unknown options print and exit

  WindowOptions options;
  options.screenshot = parser.value(screenshot);
  options.sideBySide = parser.isSet(sideBySide);
  options.expand = parser.values(expand);
  options.select = parser.value(select);
  options.docks = parser.values(dock);
  options.debug = parser.value(debug);
  options.debugBreaks = parser.values(debugBreak);
  if (!options.debug.isEmpty() && options.debug != QLatin1String("run") &&
      options.debug != QLatin1String("nan-guard") &&
      options.debug != QLatin1String("nan-collect")) {
    fail(QStringLiteral("--debug expects run, nan-guard or nan-collect, found '%1'")
             .arg(options.debug));
    return 2;
  }
  options.profileView = parser.values(profileView);
  bool ok = true;
  options.timeoutSeconds = parser.value(timeout).toInt(&ok);
  if (!ok || options.timeoutSeconds <= 0) {
    fail(QStringLiteral("--screenshot-timeout expects a positive number of seconds, found '%1'")
             .arg(parser.value(timeout)));
    return 2;
  }
  if (parser.isSet(historyStep)) {
    options.historyStep = parser.value(historyStep).toInt(&ok);
    if (!ok || options.historyStep < 0) {
      fail(QStringLiteral("--history-step expects a row number (0, 1, ...), found '%1'")
               .arg(parser.value(historyStep)));
      return 2;
    }
  }
  if (options.expand.size() > 1 && (options.expand.contains(QStringLiteral("all")) ||
                                    options.expand.contains(QStringLiteral("none")))) {
    fail(QStringLiteral("--expand all and --expand none stand alone, found '%1'")
             .arg(options.expand.join(QStringLiteral("', '"))));
    return 2;
  }
  for (const QString& name : options.docks) {
    if (!QStringList{"inspector", "history", "log", "profile", "timeline"}.contains(name)) {
      fail(QStringLiteral("--dock expects inspector, history, log, profile or timeline, found "
                          "'%1'")
               .arg(name));
      return 2;
    }
  }
  if (parser.isSet(size)) {
    const QRegularExpressionMatch m =
        QRegularExpression(QStringLiteral("^(\\d+)x(\\d+)$")).match(parser.value(size));
    if (!m.hasMatch()) {
      fail(QStringLiteral("--window-size expects WIDTHxHEIGHT, e.g. 1600x1000, found '%1'")
               .arg(parser.value(size)));
      return 2;
    }
    options.size = QSize(m.captured(1).toInt(), m.captured(2).toInt());
  }
  if (parser.isSet(zoom)) {
    const double percent = parser.value(zoom).toDouble(&ok);
    if (!ok || percent < vis::GraphView::kMinZoom * 100 ||
        percent > vis::GraphView::kMaxZoom * 100) {
      fail(QStringLiteral("--zoom expects a percentage from %1 to %2, found '%3'")
               .arg(vis::GraphView::kMinZoom * 100)
               .arg(vis::GraphView::kMaxZoom * 100)
               .arg(parser.value(zoom)));
      return 2;
    }
    options.zoom = percent / 100;
  }
  if (parser.isSet(parameters)) {
    options.parameters = vis::parameterModeFromName(parser.value(parameters));
    if (!options.parameters) {
      fail(QStringLiteral("--parameters expects boxes, badges or hidden, found '%1'")
               .arg(parser.value(parameters)));
      return 2;
    }
  }
  const QStringList files = parser.positionalArguments();
  if (!options.screenshot.isEmpty() && files.isEmpty()) {
    fail(QStringLiteral("--screenshot needs a FILE to open"));
    return 2;
  }

  MainWindow window;
  if (options.size.isValid()) window.resize(options.size);
  window.show();
  if (!options.screenshot.isEmpty()) {
    takeScreenshotWhenReady(app, window, options);
  } else {
    QObject::connect(
        &window, &MainWindow::documentLoaded, &window,
        [&window, options] {
          QString error;
          if (!applyDocumentOptions(window, options, error)) fail(error);
          if (options.zoom > 0)
            whenSettled(
                window, [] { return true; },
                [&window, options] { applyZoom(window, options.zoom); });
        },
        Qt::SingleShotConnection);
  }
  if (!files.isEmpty()) window.openFile(files.first());
  if (options.screenshot.isEmpty()) {
    for (const QString& file : files.mid(1)) {
      auto* other = new MainWindow;
      other->setAttribute(Qt::WA_DeleteOnClose);
      other->show();
      other->openFile(file);
    }
  }
  return app.exec();
}

}  // namespace tscope::gui
