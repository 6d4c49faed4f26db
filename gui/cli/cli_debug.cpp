#include "gui/cli/cli_debug.h"

#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/debug/nan_guard.h"
#include "engine/io/atomic_file.h"
#include "engine/io/npy.h"
#include "engine/session/debug_console.h"
#include "gui/cli/cli.h"

#ifdef TSCOPE_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>
#include <unistd.h>

namespace tscope::gui {

namespace {

namespace debug = engine::debug;
namespace session = engine::session;

// Note [Debugger exit codes]: `tensorscope run` and `tensorscope debug` end with kExitOk for a
// clean run, kExitNanEvent when NanGuard found a bad value, kExitBreakpoint when a breakpoint (or
// a BreakPoint op) paused the run, kExitExecutionError when a node failed (cli.h).
int exitCodeFor(const std::string& outcome) {
  if (outcome == "nan") return kExitNanEvent;
  if (outcome == "breakpoint") return kExitBreakpoint;
  if (outcome == "error") return kExitExecutionError;
  return kExitOk;
}

debug::NanGuardOptions guardOptions(const QCommandLineParser& p, debug::NanAction action) {
  debug::NanGuardOptions o;
  o.action = action;
  if (p.isSet("nan-checks")) o.checks = debug::parseChecks(p.value("nan-checks").toStdString());
  if (p.isSet("big-threshold")) {
    bool ok = false;
    const double t = p.value("big-threshold").toDouble(&ok);
    if (!ok || !(t > 0))
      throw std::invalid_argument("--big-threshold expects a positive number, found '" +
                                  p.value("big-threshold").toStdString() + "'");
    o.bigThreshold = t;
  }
  for (const QString& a : p.values("allow"))
    o.allow.push_back(debug::AllowRule::parse(a.toStdString()));
  if (p.isSet("save-failure")) o.saveFailure = p.value("save-failure").toStdString();
  o.validate();
  return o;
}

debug::NanAction actionFlag(const QCommandLineParser& p) {
  if (!p.isSet("nan-action")) return debug::NanAction::Raise;
  const std::string a = p.value("nan-action").toStdString();
  if (a == "raise") return debug::NanAction::Raise;
  if (a == "warn") return debug::NanAction::Warn;
  throw std::invalid_argument("--nan-action expects raise or warn, found '" + a + "'");
}

void writeText(const std::filesystem::path& path, const std::string& text, const char* what) {
  const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
  if (auto problem = engine::io::writeFileAtomically(path, {bytes, text.size()}))
    throw std::runtime_error(std::string("cannot write the ") + what + " " + path.string() + ": " +
                             *problem);
}

void writeOutputs(const engine::FunctionGraph& graph, const std::vector<engine::Tensor>& outputs,
                  const std::string& outputDir, std::string& out) {
  const std::filesystem::path dir = outputDir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the output directory " + dir.string() + ": " +
                             ec.message());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::filesystem::path path = dir / ("output_" + std::to_string(i) + ".npy");
    engine::io::saveNpy(outputs[i], path);
    const std::string& name = graph.outputs()[i]->name();
    out += "output " + std::to_string(i) + (name.empty() ? "" : " (" + name + ")") + ": " +
           std::string(engine::dtypeName(outputs[i].dtype())) + " " +
           engine::shapeToString(outputs[i].shape()) + " -> " + path.string() + "\n";
  }
}

// The session's function: the mode and the device of --mode and --device (deviceFromFlag has
// registered the CUDA backend, or refused, before this runs).
engine::Function compileFor(const engine::FunctionGraph& graph, const session::PreparedRun& run,
                            const session::RunInputs& inputs,
                            std::vector<std::shared_ptr<engine::ExecutionObserver>> observers) {
  engine::CompileOptions options;
  options.mode = inputs.mode;
  options.device = inputs.device;
  options.observers = std::move(observers);
  return engine::compile(run.inputs, graph.outputs(), {}, options);
}

// Any of the NanGuard flags of addDebugOptions turns the guard on.
bool wantsNanGuard(const QCommandLineParser& p) {
  for (const char* o : {"nan-guard", "nan-checks", "big-threshold", "nan-action", "allow",
                        "report-json", "save-failure"})
    if (p.isSet(o)) return true;
  return false;
}

std::vector<debug::BreakpointSpec> breakFlags(const QCommandLineParser& p) {
  std::vector<debug::BreakpointSpec> breaks;
  for (const QString& s : p.values("break"))
    breaks.push_back(debug::parseBreakSpec(s.toStdString()));
  return breaks;
}

}  // namespace

void addDebugOptions(QCommandLineParser& p) {
  p.addOption(QCommandLineOption("nan-guard", "Check every value for NaN, Inf and big values."));
  p.addOption(QCommandLineOption(
      "nan-checks", "The checks: a comma-separated list of nan, inf, +inf, -inf, big (all).",
      "LIST"));
  p.addOption(QCommandLineOption("big-threshold", "What counts as big: max|x| > X (1e10).", "X"));
  p.addOption(QCommandLineOption(
      "nan-action", "raise (stop at the first event, default) or warn (report every event).", "A"));
  p.addOption(QCommandLineOption(
      "allow",
      "Expected non-finite values: SCOPE:CHECK, node:ID:CHECK, var:NAME:CHECK or "
      "op:TYPE:CHECK (repeatable).",
      "RULE"));
  p.addOption(QCommandLineOption("report-json", "Write the NanGuard report as JSON.", "OUT"));
  p.addOption(QCommandLineOption(
      "save-failure", "On a NanGuard event, save the graph with the call's inputs (.tsg).", "OUT"));
  p.addOption(QCommandLineOption(
      "break",
      "Pause at SPEC: node:ID, var:NAME, op:TYPE or scope:PATH, then @nan @inf @max>K @min<K "
      "@norm>K @changed>K, then #HIT (repeatable).",
      "SPEC"));
}

bool wantsGuardedRun(const QCommandLineParser& p) {
  return wantsNanGuard(p) || p.isSet("break");
}

int runGuarded(const QCommandLineParser& p, const engine::io::TsgDocument& doc,
               const std::string& file, const session::RunInputs& inputs,
               const std::string& outputDir, std::string& out, std::string& err) {
  const engine::FunctionGraph& graph = *doc.original;
  // Parse every flag before anything runs: a bad one is a usage error and nothing ran.
  const std::vector<debug::BreakpointSpec> breaks = breakFlags(p);
  const debug::NanAction action = actionFlag(p);
  const std::optional<debug::NanGuardOptions> guardOpts =
      wantsNanGuard(p)
          ? std::optional(guardOptions(p, breaks.empty() ? action : debug::NanAction::Pause))
          : std::nullopt;
  if (breaks.empty()) {
    // NanGuard alone: the run use case checks, writes the report and the replay file.
    session::RunInputs guarded = inputs;
    guarded.nanGuard = guardOpts;
    if (p.isSet("report-json")) guarded.reportJson = p.value("report-json").toStdString();
    session::RunResult result;
    try {
      result = session::runGraph(graph, guarded);
    } catch (const debug::NanGuardError& e) {
      out += e.report().toText();
      if (guardOpts && !guardOpts->saveFailure.empty())
        out += "the failed call was saved to " + guardOpts->saveFailure + " (`tensorscope run " +
               guardOpts->saveFailure + " --nan-guard` replays it)\n";
      return kExitNanEvent;
    } catch (const engine::ExecutionError& e) {
      err += "tensorscope: " + file + ": " + e.what() + "\n";
      return kExitExecutionError;
    }
    writeOutputs(graph, result.outputs, outputDir, out);
    if (result.nanEvents.empty()) return kExitOk;
    out += std::to_string(result.nanEvents.size()) + " NanGuard event(s):\n";
    for (const auto& e : result.nanEvents) out += e.toText();
    return kExitNanEvent;
  }

  const session::PreparedRun run = session::prepareRun(graph, inputs);
  engine::Function f = compileFor(graph, run, inputs, {});
  debug::DebugSession s(f);
  for (const auto& b : breaks) s.addBreakpoint(b).get();
  if (guardOpts) s.setNanGuard(*guardOpts).get();
  s.start(run.args).get();
  const debug::SessionState st = s.run().get();
  switch (st.phase) {
    case debug::SessionPhase::Finished:
      writeOutputs(graph, s.finish().get(), outputDir, out);
      return kExitOk;
    case debug::SessionPhase::Paused:
      if (st.reason == debug::PauseKind::NanGuard && st.nan) {
        out += session::formatPause(s, st);
        if (p.isSet("report-json")) {
          const nlohmann::json doc = {{"outcome", "nan"},
                                      {"event_count", 1},
                                      {"events", nlohmann::json::array({st.nan->toJson()})}};
          writeText(p.value("report-json").toStdString(), doc.dump(2) + "\n", "report");
        }
        return kExitNanEvent;
      }
      out += session::formatPause(s, st);
      return kExitBreakpoint;
    case debug::SessionPhase::Failed:
      out += session::formatPause(s, st);
      return kExitExecutionError;
    default:
      out += session::formatPause(s, st);
      return kExitFailure;
  }
}

namespace {

// Ctrl-C while the execution runs pauses it (the session's interrupt()); at the prompt it only
// starts a new line, as in gdb.
std::atomic<bool> g_interrupt{false};
extern "C" void onSigint(int) {
  g_interrupt.store(true);
}

}  // namespace

int runDebugConsole(const QCommandLineParser& p, const engine::io::TsgDocument& doc,
                    const session::RunInputs& inputs, std::string&, std::string& err) {
  const engine::FunctionGraph& graph = *doc.original;
  const std::vector<debug::BreakpointSpec> breaks = breakFlags(p);
  if (p.isSet("report-json") || p.isSet("nan-action"))
    throw std::invalid_argument(
        std::string(p.isSet("report-json") ? "--report-json" : "--nan-action") +
        " is for `run`; `debug` pauses at a NanGuard event and prints it");
  const std::optional<debug::NanGuardOptions> guardOpts =
      wantsNanGuard(p) ? std::optional(guardOptions(p, debug::NanAction::Pause)) : std::nullopt;
  const session::PreparedRun run = session::prepareRun(graph, inputs);
  engine::Function f = compileFor(graph, run, inputs, {});
  debug::DebugSession s(f);
  for (const auto& b : breaks) s.addBreakpoint(b).get();
  if (guardOpts) s.setNanGuard(*guardOpts).get();
  session::DebugConsole console(s, run.args, std::cout);

  const bool tty = ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO);
  std::atomic<bool> done{false};
  std::thread watcher;
  struct sigaction previous {};
  if (tty) {
    struct sigaction sa {};
    sa.sa_handler = onSigint;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &previous);
    watcher = std::thread([&] {
      while (!done.load()) {
        if (g_interrupt.exchange(false)) s.interrupt();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    std::cout << "tensorscope debug: " << graph.nodes().size() << " nodes, "
              << f.program().schedule().size() << " scheduled after "
              << engine::modeName(inputs.mode) << "; `help` lists the commands\n";
#ifdef TSCOPE_HAVE_LIBEDIT
    using_history();
#endif
  }
  while (true) {
    std::string line;
    if (tty) {
#ifdef TSCOPE_HAVE_LIBEDIT
      char* raw = readline("(tsdb) ");
      if (!raw) {
        std::cout << "\n";
        break;
      }
      line = raw;
      std::free(raw);
      if (!line.empty()) add_history(line.c_str());
#else
      std::cout << "(tsdb) " << std::flush;
      if (!std::getline(std::cin, line)) break;
#endif
    } else if (!std::getline(std::cin, line)) {
      break;
    } else {
      std::cout << "(tsdb) " << line << "\n";
    }
    if (!console.execute(line)) break;
  }
  if (tty) {
    done.store(true);
    watcher.join();
    ::sigaction(SIGINT, &previous, nullptr);
  }
  std::cout.flush();
  (void)err;
  return exitCodeFor(console.lastOutcome());
}

}  // namespace tscope::gui
