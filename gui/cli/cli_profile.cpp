#include "gui/cli/cli_profile.h"

#include "engine/backends/cpu/threads.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/debug/lineage.h"
#include "engine/session/graph_file.h"
#include "gui/cli/cli.h"
#include "gui/cli/cli_common.h"
#include "profiling/calibration.h"
#include "profiling/cupti_source.h"
#include "profiling/profile_diff.h"
#include "profiling/profile_graph.h"
#include "profiling/profile_io.h"
#include "profiling/report.h"
#include "profiling/trace.h"

#include <QStringList>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <unistd.h>

namespace tscope::gui {

namespace {

std::int64_t intOption(const QCommandLineParser& p, const char* name, std::int64_t fallback,
                       std::int64_t least) {
  if (!p.isSet(name)) return fallback;
  bool ok = false;
  const qlonglong v = p.value(name).toLongLong(&ok);
  if (!ok || v < least)
    throw std::invalid_argument("--" + std::string(name) +
                                " expects an integer >= " + std::to_string(least) + ", found '" +
                                p.value(name).toStdString() + "'");
  return v;
}

// Note [Profile progress]: a long profile says how far it is on stderr when stderr is a terminal
// (never in a pipe or a log), at most ten times a second, and clears its line when done.
class Progress {
 public:
  explicit Progress(std::string what) : m_what(std::move(what)), m_on(isatty(STDERR_FILENO)) {}
  ~Progress() {
    if (m_on && m_shown) std::fprintf(stderr, "\r\033[K");
  }
  std::function<void(std::int64_t, std::int64_t)> callback() {
    if (!m_on) return {};
    return [this](std::int64_t done, std::int64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (m_shown && now - m_last < std::chrono::milliseconds(100) && done < total) return;
      m_last = now;
      m_shown = true;
      std::fprintf(stderr, "\r\033[Kprofiling %s: call %lld of %lld", m_what.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total));
      std::fflush(stderr);
    };
  }

 private:
  std::string m_what;
  bool m_on;
  bool m_shown = false;
  std::chrono::steady_clock::time_point m_last;
};

std::vector<std::string> splitList(const QString& text) {
  std::vector<std::string> parts;
  for (const QString& s : text.split(',', Qt::SkipEmptyParts)) parts.push_back(s.toStdString());
  return parts;
}

// The machine's peaks for the roofline columns: the cached calibration, or measured once now
// (what `tensorscope calibrate` does) and cached.
std::optional<nlohmann::json> calibrationFor(const QCommandLineParser& p, std::string& err) {
  if (p.isSet("no-roofline")) return std::nullopt;
  bool measured = false;
  const prof::Calibration c = prof::cachedOrCalibrate({}, &measured);
  if (measured)
    err += "tensorscope profile: calibrated this machine once for the roofline (cached in " +
           prof::calibrationCachePath().string() + "; `tensorscope calibrate` redoes it)\n";
  return c.toJson();
}

}  // namespace

void addProfileOptions(QCommandLineParser& p) {
  p.addOption(QCommandLineOption("runs", "Measured calls (default 10).", "N"));
  p.addOption(QCommandLineOption(
      "threads", "Intra-op threads (default: TSCOPE_NUM_THREADS, else the CPUs available).", "N"));
  p.addOption(QCommandLineOption("warmup", "Calls before measuring (default 1).", "K"));
  p.addOption(QCommandLineOption(
      "mode", "How the graph is compiled: fast_run (default), fast_compile, none or debug.", "M"));
  p.addOption(QCommandLineOption("device", "Where it runs: cpu (default) or cuda.", "D"));
  p.addOption(
      QCommandLineOption("input", "The value of graph input NAME, from a .npy file.", "NAME=FILE"));
  p.addOption(QCommandLineOption(
      "random-inputs", "Seed of the random values of inputs without a value (default 0).", "SEED"));
  p.addOption(QCommandLineOption("trace", "Write a Chrome/Perfetto trace JSON here.", "OUT.json"));
  p.addOption(QCommandLineOption(
      "trace-runs", "Which measured runs the trace holds, e.g. 0,5,9 (default: every kept run).",
      "LIST"));
  p.addOption(QCommandLineOption({"o", "output"},
                                 "Write the file with the profile (and the profiled graph) here.",
                                 "OUT.tsg"));
  p.addOption(QCommandLineOption(
      "memory", "Count the bytes each node allocates and frees, and print the memory profile."));
  p.addOption(QCommandLineOption("json", "Print every table as JSON (docs/profiling.md)."));
  p.addOption(QCommandLineOption(
      "compare-modes", "Profile in two modes and print their diff, e.g. none,fast_run.", "A,B"));
  p.addOption(QCommandLineOption(
      "compare-threads",
      "Profile on two intra-op thread counts and print their diff (each node's scaling), e.g. 1,2.",
      "A,B"));
  p.addOption(QCommandLineOption(
      "max-events", "Most timeline events kept (older runs' are dropped and counted).", "N"));
  p.addOption(
      QCommandLineOption("sort", "Sort the tables by total (default), mean, p95 or calls.", "KEY"));
  p.addOption(QCommandLineOption("rows", "Rows shown per table (default 20).", "N"));
  p.addOption(QCommandLineOption(
      "no-roofline", "Do not calibrate the machine; the report has no roofline columns."));
}

int runProfile(const QCommandLineParser& p, const std::string& file, std::string& out,
               std::string& err) {
  prof::ProfileRunOptions run;
  run.device = deviceFromFlag(p);  // throws CudaUnavailable before any work
  run.runs = intOption(p, "runs", 10, 1);
  run.warmup = intOption(p, "warmup", 1, 0);
  run.profiler.maxEvents = intOption(p, "max-events", run.profiler.maxEvents, 0);
  run.profiler.memory = p.isSet("memory");
  prof::ReportOptions report;
  report.sort = prof::parseSortKey(p.isSet("sort") ? p.value("sort").toStdString() : "total");
  report.rows = static_cast<std::size_t>(intOption(p, "rows", 20, 1));
  report.memory = p.isSet("memory");
  prof::TraceOptions trace;
  for (const std::string& r : splitList(p.value("trace-runs"))) {
    std::size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(r, &used);
    } catch (const std::exception&) {
    }
    if (used != r.size() || v < 0 || v >= run.runs)
      throw std::invalid_argument("--trace-runs expects measured run numbers from 0 to " +
                                  std::to_string(run.runs - 1) + ", found '" + r + "'");
    trace.runs.push_back(v);
  }
  if (p.isSet("trace-runs") && !p.isSet("trace"))
    throw std::invalid_argument("--trace-runs chooses the runs of --trace OUT.json; give --trace");
  const bool compare = p.isSet("compare-modes");
  if (compare && (p.isSet("trace") || p.isSet("output") || p.isSet("mode")))
    throw std::invalid_argument(
        "--compare-modes prints the diff of two profiles; --mode, --trace and -o apply to one");
  const bool compareThreads = p.isSet("compare-threads");
  if (compareThreads && (compare || p.isSet("trace") || p.isSet("output") || p.isSet("threads")))
    throw std::invalid_argument(
        "--compare-threads prints the diff of two profiles; --compare-modes, --threads, --trace "
        "and -o apply to one");
  std::vector<int> threadCounts;
  if (compareThreads) {
    for (const std::string& t : splitList(p.value("compare-threads"))) {
      std::size_t used = 0;
      int n = 0;
      try {
        n = std::stoi(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != t.size() || n < 1)
        throw std::invalid_argument(
            "--compare-threads expects two thread counts A,B of at least "
            "1 (e.g. 1,2), found '" +
            p.value("compare-threads").toStdString() + "'");
      threadCounts.push_back(n);
    }
    if (threadCounts.size() != 2)
      throw std::invalid_argument(
          "--compare-threads expects two thread counts A,B (e.g. 1,2), "
          "found '" +
          p.value("compare-threads").toStdString() + "'");
  }
  if (p.isSet("output") &&
      std::filesystem::path(p.value("output").toStdString()).extension() != ".tsg")
    throw std::invalid_argument("-o expects a .tsg path, found '" +
                                p.value("output").toStdString() + "'");

  engine::io::TsgDocument doc = engine::session::openGraphFile(file);
  engine::session::RunInputs inputs = runInputsFromFlags(p);
  if (!p.isSet("mode")) inputs.mode = engine::Mode::FastRun;
  if (!inputs.randomSeed) inputs.randomSeed = 0;
  engine::session::PreparedRun prepared;
  try {
    prepared = engine::session::prepareRun(*doc.original, inputs);
  } catch (const engine::session::MissingInputValue& e) {
    rethrowMissing(e);
  }
  const std::optional<nlohmann::json> calibration = calibrationFor(p, err);

  // On the GPU, CUPTI records the kernels each node launches (ProfileRunOptions::gpu); where it
  // cannot here, the profile keeps its host times and says why.
  std::string gpuWhy;
  prof::CuptiOptions cupti;
  cupti.synchronize = [] { engine::cuda::cudaSynchronize(); };
  const std::unique_ptr<prof::GpuSource> gpu = prof::gpuSourceFor(run.device, cupti, gpuWhy);
  if (!gpuWhy.empty()) err += "tensorscope profile: " + gpuWhy + "\n";
  run.gpu = gpu.get();

  auto profileIn = [&](engine::Mode mode) {
    Progress progress(file + " (" + std::string(engine::modeName(mode)) + ")");
    run.progress = progress.callback();
    prof::GraphProfile g =
        prof::profileGraph(*doc.original, prepared.inputs, prepared.args, mode, run);
    g.profile.name = std::filesystem::path(file).filename().string();
    g.profile.calibration = calibration;
    return g;
  };

  if (compare) {
    const std::vector<std::string> modes = splitList(p.value("compare-modes"));
    if (modes.size() != 2)
      throw std::invalid_argument(
          "--compare-modes expects two modes A,B (e.g. none,fast_run), "
          "found '" +
          p.value("compare-modes").toStdString() + "'");
    const engine::Mode a = parseMode(modes[0], "--compare-modes"),
                       b = parseMode(modes[1], "--compare-modes");
    const prof::GraphProfile ga = profileIn(a), gb = profileIn(b);
    std::optional<engine::debug::NodeLineage> la, lb;
    if (ga.profile.graph == "optimized") la.emplace(*ga.graph, ga.rewrites);
    if (gb.profile.graph == "optimized") lb.emplace(*gb.graph, gb.rewrites);
    const prof::ProfileDiff diff = prof::diffProfiles({&ga.profile, la ? &*la : nullptr, modes[0]},
                                                      {&gb.profile, lb ? &*lb : nullptr, modes[1]});
    out +=
        p.isSet("json") ? prof::diffJson(diff).dump(2) + "\n" : prof::diffText(diff, report.rows);
    return kExitOk;
  }

  if (compareThreads) {
    // The same compilation mode on A threads, then on B: a row per node with both times, so the
    // nodes that do not scale stand out (Note [oneDNN threads per plan]: plans follow the count).
    std::vector<prof::GraphProfile> g;
    for (int n : threadCounts) {
      engine::cpu::setIntraOpThreads(n);
      g.push_back(profileIn(inputs.mode));
    }
    // One compilation of one graph twice: the node ids match, no lineage needed (a lineage
    // through the rewrite log would group the nodes a graph rewrite made).
    auto label = [](int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); };
    const prof::ProfileDiff diff =
        prof::diffProfiles({&g[0].profile, nullptr, label(threadCounts[0])},
                           {&g[1].profile, nullptr, label(threadCounts[1])});
    out +=
        p.isSet("json") ? prof::diffJson(diff).dump(2) + "\n" : prof::diffText(diff, report.rows);
    return kExitOk;
  }

  const prof::GraphProfile g = profileIn(inputs.mode);
  out += p.isSet("json") ? prof::reportJson(g.profile, report).dump(2) + "\n"
                         : prof::reportText(g.profile, report);
  // Messages about written files go to stderr with --json, so stdout stays one JSON document.
  std::string& notes = p.isSet("json") ? err : out;
  if (p.isSet("trace")) {
    const std::string path = p.value("trace").toStdString();
    prof::writeChromeTrace(g.profile, path, trace);
    notes += "wrote " + path + " (Chrome trace; open it in Perfetto or chrome://tracing)\n";
  }
  if (p.isSet("output")) {
    const std::string path = p.value("output").toStdString();
    prof::storeProfile(doc, g);
    engine::io::saveTsg(doc, path);
    notes += "wrote " + path + " (the graph with this profile" +
             std::string(g.profile.graph == "optimized" ? ", the profiled optimized graph and its "
                                                          "rewrite log"
                                                        : "") +
             ")\n";
  }
  return kExitOk;
}

void addDiffProfileOptions(QCommandLineParser& p) {
  p.addOption(QCommandLineOption("json", "Print the diff as JSON."));
  p.addOption(QCommandLineOption("rows", "Rows shown (default 25).", "N"));
}

int runDiffProfile(const QCommandLineParser& p, const std::string&, std::string& out,
                   std::string&) {
  const QStringList files = p.positionalArguments();
  struct Side {
    engine::io::TsgDocument doc;
    prof::Profile profile;
    std::optional<engine::debug::NodeLineage> lineage;
    std::string label;
  };
  std::vector<Side> sides(2);
  for (int i = 0; i < 2; ++i) {
    const std::string file = files[i].toStdString();
    Side& s = sides[static_cast<std::size_t>(i)];
    s.doc = engine::session::openGraphFile(file);
    std::vector<prof::Profile> profiles;
    try {
      profiles = prof::profilesOf(s.doc);
    } catch (const prof::ProfileError& e) {
      throw std::runtime_error(file + ": " + e.what());
    }
    if (profiles.empty())
      throw std::runtime_error(file + " holds no profile (`tensorscope profile " + file +
                               " -o OUT.tsg` writes one)");
    s.profile = std::move(profiles.back());
    if (s.profile.graph == "optimized") {
      if (!s.doc.optimized)
        throw std::runtime_error(file +
                                 ": its profile is of the optimized graph, which the file "
                                 "lacks");
      s.lineage.emplace(*s.doc.optimized, s.doc.rewrites);
    }
    s.label =
        std::filesystem::path(file).filename().string() + " (" + s.profile.function.mode + ")";
  }
  const prof::ProfileDiff diff = prof::diffProfiles(
      {&sides[0].profile, sides[0].lineage ? &*sides[0].lineage : nullptr, sides[0].label},
      {&sides[1].profile, sides[1].lineage ? &*sides[1].lineage : nullptr, sides[1].label});
  out += p.isSet("json")
             ? prof::diffJson(diff).dump(2) + "\n"
             : prof::diffText(diff, static_cast<std::size_t>(intOption(p, "rows", 25, 1)));
  return kExitOk;
}

void addCalibrateOptions(QCommandLineParser& p) {
  p.addOption(QCommandLineOption("threads",
                                 "Threads of the \"all threads\" figures (default: "
                                 "every hardware thread).",
                                 "N"));
  p.addOption(QCommandLineOption("json", "Print the calibration as JSON."));
}

int runCalibrate(const QCommandLineParser& p, const std::string&, std::string& out, std::string&) {
  prof::CalibrateOptions options;
  options.threads = intOption(p, "threads", 0, 1);
  const prof::Calibration c = prof::calibrate(options);
  prof::saveCachedCalibration(c);
  out += p.isSet("json") ? c.toJson().dump(2) + "\n" : prof::formatCalibration(c);
  if (!p.isSet("json"))
    out += "cached in " + prof::calibrationCachePath().string() +
           " (the profiler's roofline uses it)\n";
  return kExitOk;
}

}  // namespace tscope::gui
