#include "gui/cli/cli.h"

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/compile/kernel.h"
#include "engine/io/graph_text.h"
#include "engine/io/npy.h"
#include "engine/session/graph_file.h"
#include "engine/session/optimize_graph.h"
#include "engine/session/run_graph.h"
#include "gui/cli/cli_common.h"
#include "gui/cli/cli_debug.h"
#include "gui/cli/cli_export.h"
#include "gui/cli/cli_profile.h"

#ifdef TSCOPE_HAVE_ONNX
#include "engine/io/onnx/onnx_export.h"
#endif

#include <QCommandLineParser>
#include <QStringList>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

namespace tscope::gui {

namespace {

using nlohmann::json;

struct SubCommand {
  const char* summary;
  const char* usage;
  int (*run)(const QCommandLineParser&, const std::string& file, std::string& out,
             std::string& err);
  void (*addOptions)(QCommandLineParser&);
  // The FILE arguments it takes (diff-profile compares two; calibrate takes none).
  int files = 1;
};

void noOptions(QCommandLineParser&) {}

const engine::FunctionGraph& pickGraph(const engine::io::TsgDocument& doc,
                                       const std::string& which) {
  if (which == "original") return *doc.original;
  if (which == "optimized") {
    if (!doc.optimized)
      throw std::runtime_error(
          "the file has no optimized graph (run `tensorscope optimize` first)");
    return *doc.optimized;
  }
  throw std::invalid_argument("--graph expects original or optimized, found '" + which + "'");
}

// "1234 bytes" below 10 KiB, else "12.3 MB (12345678 bytes)".
std::string byteCount(std::uint64_t bytes) {
  if (bytes < 10240) return std::to_string(bytes) + " bytes";
  char text[64];
  std::snprintf(text, sizeof text, "%.1f MB (%llu bytes)", static_cast<double>(bytes) / 1e6,
                static_cast<unsigned long long>(bytes));
  return text;
}

int runInfo(const QCommandLineParser& p, const std::string& file, std::string& out, std::string&) {
  engine::session::GraphFileInfo fileInfo;
  engine::io::TsgDocument doc = engine::session::openGraphFile(file, &fileInfo);
  json info = {{"file", file},
               {"format", fileInfo.format},
               {"producer", doc.producer},
               {"original", engine::io::graphSummary(*doc.original)},
               {"rewrites", doc.rewrites.size()},
               {"profiles", doc.profiles.size()}};
  if (fileInfo.format == "onnx")
    info["onnx"] = {{"opset", fileInfo.onnxOpset},
                    {"warnings", fileInfo.warnings},
                    {"opaque_ops", fileInfo.opaqueOps}};
  if (doc.optimized) info["optimized"] = engine::io::graphSummary(*doc.optimized);
  if (fileInfo.format == "tsg") info["tensors"] = engine::io::tensorStatsToJson(fileInfo.tensors);
  if (p.isSet("json")) {
    out += info.dump(2) + "\n";
    return kExitOk;
  }
  out += file + "\n";
  if (doc.producer.contains("name") && doc.producer["name"].is_string())
    out += "  written by " + doc.producer["name"].get<std::string>() +
           (doc.producer.contains("version") && doc.producer["version"].is_string()
                ? " " + doc.producer["version"].get<std::string>()
                : std::string()) +
           "\n";
  if (fileInfo.format == "onnx") {
    out += "  ONNX model, opset " + std::to_string(fileInfo.onnxOpset) + "\n";
    if (!fileInfo.opaqueOps.empty()) {
      std::string ops;
      for (const std::string& op : fileInfo.opaqueOps) ops += (ops.empty() ? "" : ", ") + op;
      out += "  opaque (not executable) ops: " + ops + "\n";
    }
    for (const std::string& w : fileInfo.warnings) out += "  warning: " + w + "\n";
  }
  if (fileInfo.format == "tsg") {
    const engine::io::TsgTensorStats& t = fileInfo.tensors;
    out += "  format version " + std::to_string(t.version) +
           "; tensors: " + std::to_string(t.tensors) + " stored, " + byteCount(t.tensorBytes) +
           "; " + byteCount(t.sharedBytes) + " saved by sharing (" +
           std::to_string(t.sharedTensors) + " tensors used more than once, " +
           std::to_string(t.sharedBetweenGraphs) + " shared between the graphs)\n";
  }
  out += "original graph:\n" + engine::io::graphSummaryText(info["original"]);
  if (doc.optimized)
    out += "optimized graph:\n" + engine::io::graphSummaryText(info["optimized"]);
  else
    out += "optimized graph: none\n";
  out += "rewrite log: " + std::to_string(doc.rewrites.size()) + " changes\n";
  out += "profiles: " + std::to_string(doc.profiles.size()) + "\n";
  return kExitOk;
}

int runPrint(const QCommandLineParser& p, const std::string& file, std::string& out, std::string&) {
  engine::io::TsgDocument doc = engine::session::openGraphFile(file);
  if (p.isSet("rewrites")) {
    if (p.isSet("graph"))
      throw std::invalid_argument("--rewrites lists the rewrite log; it takes no --graph");
    if (doc.rewrites.empty()) {
      out += file + " has no rewrite log (`tensorscope optimize` writes one)\n";
      return kExitOk;
    }
    out +=
        "rewrite log of " + file + ": " + std::to_string(doc.rewrites.size()) +
        " changes (node ids with their op where the original or the optimized graph holds them)\n";
    out += engine::session::rewriteLogText(doc.rewrites, doc.original.get(), doc.optimized.get());
    return kExitOk;
  }
  std::string which = p.isSet("graph") ? p.value("graph").toStdString() : "original";
  out += engine::io::debugPrint(pickGraph(doc, which));
  return kExitOk;
}

// "Hardmax (2 nodes), FancyOp (1 node)": the graph's ops that were loaded but cannot run
// (Op::isExecutable), by name, in the graph's node order as graphSummary's "opaque_ops" lists them,
// with a count each; empty when every op runs.
std::string opaqueOpsText(const engine::FunctionGraph& graph) {
  std::vector<std::pair<std::string, int>> counts;
  for (const engine::Apply* node : graph.nodes()) {
    if (node->op().isExecutable()) continue;
    const std::string name = node->op().name();
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
    if (it == counts.end())
      counts.emplace_back(name, 1);
    else
      ++it->second;
  }
  std::string text;
  for (const auto& [name, n] : counts)
    text += (text.empty() ? "" : ", ") + name + " (" + std::to_string(n) +
            (n == 1 ? " node)" : " nodes)");
  return text;
}

// A file with opaque ops is valid (it opens, prints and draws) but cannot run: validate says so
// on stderr, so that a script checking models before `run` learns it without parsing `info`.
int runValidate(const QCommandLineParser&, const std::string& file, std::string& out,
                std::string& err) {
  engine::io::TsgDocument doc = engine::session::openGraphFile(file);
  doc.original->checkIntegrity();
  if (doc.optimized) doc.optimized->checkIntegrity();
  out +=
      file + ": valid (" + std::to_string(doc.original->nodeCount()) +
      " applies in the original graph" +
      (doc.optimized ? ", " + std::to_string(doc.optimized->nodeCount()) + " in the optimized graph"
                     : std::string()) +
      ")\n";
  for (const auto& [which, graph] :
       {std::pair{"original", doc.original.get()}, std::pair{"optimized", doc.optimized.get()}}) {
    if (!graph) continue;
    const std::string opaque = opaqueOpsText(*graph);
    if (!opaque.empty())
      err += "tensorscope validate: warning: the " + std::string(which) +
             " graph has ops this build cannot execute (loaded as opaque ops, so `run` and the "
             "compiled modes stop at them): " +
             opaque + "\n";
  }
  return kExitOk;
}

int runRun(const QCommandLineParser& p, const std::string& file, std::string& out,
           std::string& err) {
  engine::io::TsgDocument doc = engine::session::openGraphFile(file);
  const engine::session::RunInputs inputs = runInputsFromFlags(p);
  const std::string outputDir =
      p.isSet("output-dir") ? p.value("output-dir").toStdString() : std::string(".");
  if (wantsGuardedRun(p)) {
    try {
      return runGuarded(p, doc, file, inputs, outputDir, out, err);
    } catch (const engine::session::MissingInputValue& e) {
      rethrowMissing(e);
    }
  }
  const std::filesystem::path dir = outputDir;
  engine::session::RunResult result;
  try {
    result = engine::session::runGraph(*doc.original, inputs);
  } catch (const engine::session::MissingInputValue& e) {
    rethrowMissing(e);
  } catch (const engine::ExecutionError& e) {
    err += "tensorscope: " + std::string(e.what()) + "\n";
    return kExitExecutionError;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the output directory " + dir.string() + ": " +
                             ec.message());
  std::size_t k = 0;
  for (const auto& in : doc.original->inputs()) {
    if (in->kind() == engine::Variable::Kind::Shared) continue;
    out += "input " + (in->name().empty() ? std::to_string(k) : in->name()) + ": " +
           result.inputSource[k] + "\n";
    ++k;
  }
  for (std::size_t i = 0; i < result.outputs.size(); ++i) {
    const engine::Tensor& t = result.outputs[i];
    const std::filesystem::path path = dir / ("output_" + std::to_string(i) + ".npy");
    engine::io::saveNpy(t, path);
    const std::string& name = doc.original->outputs()[i]->name();
    out += "output " + std::to_string(i) + (name.empty() ? "" : " (" + name + ")") + ": " +
           std::string(engine::dtypeName(t.dtype())) + " " + engine::shapeToString(t.shape()) +
           " -> " + path.string() + "\n";
  }
  return kExitOk;
}

int runDebug(const QCommandLineParser& p, const std::string& file, std::string& out,
             std::string& err) {
  engine::io::TsgDocument doc = engine::session::openGraphFile(file);
  const engine::session::RunInputs inputs = runInputsFromFlags(p);
  try {
    return runDebugConsole(p, doc, inputs, out, err);
  } catch (const engine::session::MissingInputValue& e) {
    rethrowMissing(e);
  }
}

void addRunOptions(QCommandLineParser& p) {
  p.addOption(QCommandLineOption("mode",
                                 "How the graph is compiled: none (default), fast_compile, "
                                 "fast_run or debug.",
                                 "M"));
  p.addOption(QCommandLineOption(
      "input", "The value of graph input NAME, from a NumPy .npy file (repeatable).", "NAME=FILE"));
  p.addOption(QCommandLineOption(
      "random-inputs", "Fill inputs that have neither --input nor a test value with random values.",
      "SEED"));
  p.addOption(QCommandLineOption(
      "threads", "Intra-op threads (default: TSCOPE_NUM_THREADS, else the CPUs available).", "N"));
  addDebugOptions(p);
}

int runOptimize(const QCommandLineParser& p, const std::string& file, std::string& out,
                std::string&) {
  if (!p.isSet("output")) throw std::invalid_argument("-o OUT.tsg is required");
  const std::filesystem::path target = p.value("output").toStdString();
  if (target.extension() != ".tsg")
    throw std::invalid_argument("-o expects a .tsg path, found '" + target.string() + "'");
  const std::string mode =
      p.isSet("mode") ? p.value("mode").toStdString() : std::string("fast_run");
  std::vector<std::string> include, exclude;
  for (const QString& t : p.values("include")) include.push_back(t.toStdString());
  for (const QString& t : p.values("exclude")) exclude.push_back(t.toStdString());
  const engine::RewriteQuery query = engine::session::rewriteQueryFor(mode, include, exclude);
  // --device cuda: placed as compile would place it, without needing a GPU (Note [Placement
  // without a device] in engine/session/optimize_graph.h).
  engine::session::DevicePlacement placement;
  engine::KernelRegistry cudaKernels;
  engine::DeviceSupport cudaRules;
  if (parseDeviceFlag(p) == engine::Device::Cuda) {
    if (!engine::cuda::cudaStatus().built)
      throw std::invalid_argument("--device cuda: this build has no CUDA backend");
    engine::cuda::registerCudaKernels(cudaKernels, cudaRules);
    placement = {engine::Device::Cuda, &cudaKernels, &cudaRules};
  }
  engine::io::TsgDocument doc = engine::session::openGraphFile(file);
  const engine::RewriteProfile profile = engine::session::optimizeDocument(doc, query, placement);
  engine::io::saveTsg(doc, target);
  out += file + " (" + mode + "):\n" + engine::session::rewriteProfileText(profile);
  out += "wrote " + target.string() + " (original, optimized, " +
         std::to_string(doc.rewrites.size()) + " logged changes)\n";
  return kExitOk;
}

// `tensorscope export`: one writer per output format, chosen by the extension of -o.
struct ExportFormat {
  const char* extension;
  const char* description;
  // Writes graph `which` of the document to path; returns what the command prints.
  std::string (*write)(const QCommandLineParser&, engine::io::TsgDocument&,
                       const std::string& which, const std::filesystem::path&);
};

std::string writeOnnxFile(const QCommandLineParser& p, engine::io::TsgDocument& doc,
                          const std::string& which, const std::filesystem::path& path) {
  const engine::FunctionGraph& graph = pickGraph(doc, which);
#ifdef TSCOPE_HAVE_ONNX
  engine::io::OnnxExportOptions options;
  if (p.isSet("opset")) {
    bool ok = false;
    options.opset = p.value("opset").toInt(&ok);
    if (!ok)
      throw std::invalid_argument("--opset expects an integer, found '" +
                                  p.value("opset").toStdString() + "'");
  }
  engine::io::saveOnnx(graph, path, options);
  return "wrote " + path.string() + " (ONNX, opset " + std::to_string(options.opset) + ", " +
         std::to_string(graph.nodeCount()) + " applies exported)\n";
#else
  (void)p, (void)graph, (void)path;
  throw std::runtime_error(
      "this build of tensorscope has no ONNX support (it needs libonnx-dev and libprotobuf-dev)");
#endif
}

const std::vector<ExportFormat>& exportFormats() {
  static const std::vector<ExportFormat> formats = {
      {".onnx", "an ONNX model", &writeOnnxFile},
      {".svg", "the drawing as SVG", &writeGraphPicture},
      {".png", "the drawing as PNG", &writeGraphPicture},
      {".dot", "the drawing as Graphviz DOT with positions", &writeGraphPicture},
  };
  return formats;
}

int runExport(const QCommandLineParser& p, const std::string& file, std::string& out,
              std::string&) {
  std::string supported;
  for (const ExportFormat& f : exportFormats())
    supported +=
        (supported.empty() ? "" : ", ") + std::string(f.extension) + " (" + f.description + ")";
  if (!p.isSet("output"))
    throw std::invalid_argument("-o OUT is required; supported outputs: " + supported);
  const std::filesystem::path target = p.value("output").toStdString();
  const ExportFormat* format = nullptr;
  for (const ExportFormat& f : exportFormats())
    if (target.extension() == f.extension) format = &f;
  if (!format)
    throw std::invalid_argument("cannot export to '" + target.string() + "': unknown extension '" +
                                target.extension().string() + "'; supported: " + supported);
  const std::string which = p.isSet("graph") ? p.value("graph").toStdString() : "original";
  if (which != "original" && which != "optimized")
    throw std::invalid_argument("--graph expects original or optimized, found '" + which + "'");
  const bool picture = format->write == &writeGraphPicture;
  if (!picture) {
    for (const char* option : {"expand", "heatmap", "scale", "parameters"})
      if (p.isSet(option))
        throw std::invalid_argument("--" + std::string(option) +
                                    " applies to drawings (.svg, .png, .dot), not to " +
                                    target.extension().string());
  } else if (p.isSet("opset")) {
    throw std::invalid_argument("--opset applies to .onnx output only");
  }
  engine::io::TsgDocument doc = engine::session::openGraphFile(file);
  pickGraph(doc, which);  // a missing optimized graph is an error before any work
  out += format->write(p, doc, which, target);
  return kExitOk;
}

const std::map<std::string, SubCommand>& subCommands() {
  static const std::map<std::string, SubCommand> commands = {
      {"export",
       {"writes a graph in another format, chosen by the extension of OUT (.onnx, .svg, .png, "
        ".dot)",
        "export FILE -o OUT.(onnx|svg|png|dot) [--graph original|optimized] [--opset N] [--expand "
        "all|none|PATH]... "
        "[--heatmap] [--scale S]",
        &runExport,
        [](QCommandLineParser& p) {
          p.addOption(QCommandLineOption(
              {"o", "output"}, "Where the graph is written; the extension picks the format.",
              "OUT"));
          p.addOption(QCommandLineOption("graph", "Which graph: original (default) or optimized.",
                                         "which"));
          p.addOption(
              QCommandLineOption("opset", "The ONNX opset to write, 13 to 17 (default 17).", "N"));
          addPictureOptions(p);
        }}},
      {"calibrate",
       {"measures this machine's peak GEMM GFLOP/s and memory bandwidth (one thread, all "
        "threads) for the profiler's roofline",
        "calibrate [--threads N] [--json]", &runCalibrate, &addCalibrateOptions, 0}},
      {"debug",
       {"an interactive terminal debugger (break, step, print, set, recompute; `help` inside)",
        "debug FILE [--input NAME=x.npy]... [--random-inputs SEED] [--mode M] [--device cpu|cuda] "
        "[--nan-guard ...] [--break SPEC]...",
        &runDebug,
        [](QCommandLineParser& p) {
          addRunOptions(p);
          p.addOption(QCommandLineOption("device", "Where it runs: cpu (default) or cuda.", "D"));
        }}},
      {"diff-profile",
       {"compares the profiles saved in two files node by node and scope by scope",
        "diff-profile A.tsg B.tsg [--json] [--rows N]", &runDiffProfile, &addDiffProfileOptions,
        2}},
      {"info",
       {"counts, inputs and outputs with types, op histogram, a .tsg's tensor bytes and sharing",
        "info FILE [--json]", &runInfo,
        [](QCommandLineParser& p) {
          p.addOption(QCommandLineOption("json", "Print the summary as JSON."));
        }}},
      {"optimize",
       {"optimizes the original graph; writes it with the optimized graph and the rewrite log",
        "optimize FILE -o OUT.tsg [--mode M] [--include TAG]... [--exclude TAG]... "
        "[--device cpu|cuda]",
        &runOptimize,
        [](QCommandLineParser& p) {
          p.addOption(QCommandLineOption(
              "device",
              "Also place the nodes a device would run (cuda; needs no GPU): phase \"gpu\".", "D"));
          p.addOption(QCommandLineOption({"o", "output"},
                                         "Where the optimized file is written (.tsg).", "OUT"));
          p.addOption(
              QCommandLineOption("mode", "fast_run (default), fast_compile, none or debug.", "M"));
          p.addOption(QCommandLineOption(
              "include", "Also run the rewrites with this tag or name (repeatable).", "TAG"));
          p.addOption(QCommandLineOption(
              "exclude", "Skip the rewrites with this tag or name (repeatable).", "TAG"));
        }}},
      {"print",
       {"a debugprint-style text tree of a graph, or the rewrite log",
        "print FILE [--graph original|optimized] [--rewrites]", &runPrint,
        [](QCommandLineParser& p) {
          p.addOption(QCommandLineOption("graph", "Which graph: original (default) or optimized.",
                                         "which"));
          p.addOption(
              QCommandLineOption("rewrites", "List the rewrite log instead, one change per line."));
        }}},
      {"profile",
       {"runs the graph N times and prints per-node, per-op, per-class and per-scope time with "
        "the roofline, memory and rewrite profiles",
        "profile FILE [--runs N] [--warmup K] [--mode M] [--device cpu|cuda] [--trace OUT.json "
        "[--trace-runs LIST]] [-o OUT.tsg] [--memory] [--json] [--compare-modes A,B] "
        "[--compare-threads A,B] "
        "[--max-events N] [--sort total|mean|p95|calls] [--rows N] [--input NAME=x.npy]... "
        "[--random-inputs SEED] [--threads N] [--no-roofline]",
        &runProfile, &addProfileOptions}},
      {"run",
       {"executes the graph; writes output i as DIR/output_<i>.npy; --nan-guard and --break "
        "check and pause it",
        "run FILE [--input NAME=x.npy]... [--random-inputs SEED] [--output-dir DIR] [--mode M] "
        "[--device cpu|cuda] [--threads N] "
        "[--nan-guard [--nan-checks L] [--big-threshold X] [--nan-action raise|warn] "
        "[--allow RULE]... [--report-json OUT] [--save-failure OUT.tsg]] [--break SPEC]...",
        &runRun,
        [](QCommandLineParser& p) {
          addRunOptions(p);
          p.addOption(QCommandLineOption("output-dir",
                                         "Where output_<i>.npy are written (default: .).", "DIR"));
          p.addOption(QCommandLineOption("device", "Where it runs: cpu (default) or cuda.", "D"));
        }}},
      {"validate",
       {"loads and checks a file; exit 0 or a message (and a warning for ops it cannot execute)",
        "validate FILE", &runValidate, &noOptions}},
  };
  return commands;
}

std::string usage() {
  std::string text = "usage: tensorscope <command> [options]\n\ncommands:\n";
  for (const auto& [name, cmd] : subCommands()) {
    // A usage too long for the column gets its summary on the next line, under the column.
    std::string line = "  " + std::string(cmd.usage);
    if (line.size() + 2 > 48) line += "\n";
    line.resize(line.back() == '\n' ? line.size() + 48 : 48, ' ');
    text += line + cmd.summary + "\n";
  }
  text +=
      "\nFILE is a .tsg graph file or an ONNX model. `tensorscope <command> --help` describes one "
      "command.\n"
      "\nWithout a command, tensorscope opens the window:\n"
      "  tensorscope [FILE...] [--side-by-side] [--expand all|none|GROUP]... [--select TEXT]\n"
      "              [--dock inspector|history|log]... [--history-step N] [--zoom PERCENT]\n"
      "              [--window-size WxH] [--screenshot OUT.png [--screenshot-timeout S]]\n"
      "  (--screenshot waits until the graph is drawn, writes the window to OUT.png and quits)\n";
  return text;
}

}  // namespace

bool isSubCommand(const std::vector<std::string>& args) {
  return !args.empty() && (subCommands().count(args[0]) || args[0] == "help" ||
                           args[0] == "--help" || args[0] == "-h" || args[0] == "--version");
}

int runCli(const std::vector<std::string>& args, std::string& out, std::string& err) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    out += usage();
    return kExitOk;
  }
  if (args[0] == "--version") {
    out += "tensorscope 0.1.0\n";
    return kExitOk;
  }
  auto it = subCommands().find(args[0]);
  if (it == subCommands().end()) {
    std::string names;
    for (const auto& [name, cmd] : subCommands()) names += (names.empty() ? "" : ", ") + name;
    err += "tensorscope: unknown command '" + args[0] + "'; expected one of " + names +
           " (see tensorscope --help)\n";
    return kExitUsage;
  }
  const SubCommand& cmd = it->second;
  QCommandLineParser parser;
  parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  QCommandLineOption help({"h", "help"}, "Show this help.");
  parser.addOption(help);
  cmd.addOptions(parser);
  if (cmd.files == 1) parser.addPositionalArgument("FILE", "The graph file (.tsg or ONNX).");
  if (cmd.files == 2) {
    parser.addPositionalArgument("A", "The first file with a saved profile (.tsg).");
    parser.addPositionalArgument("B", "The second file with a saved profile (.tsg).");
  }
  QStringList qargs{QStringLiteral("tensorscope ") + QString::fromStdString(args[0])};
  for (std::size_t i = 1; i < args.size(); ++i) qargs << QString::fromStdString(args[i]);
  if (!parser.parse(qargs)) {
    err += "tensorscope " + args[0] + ": " + parser.errorText().toStdString() +
           " (usage: tensorscope " + cmd.usage + ")\n";
    return kExitUsage;
  }
  if (parser.isSet(help)) {
    out += "usage: tensorscope " + std::string(cmd.usage) + "\n" + cmd.summary + "\n\n" +
           parser.helpText().section('\n', 1).toStdString();
    return kExitOk;
  }
  QStringList positional = parser.positionalArguments();
  if (positional.size() != cmd.files) {
    static const char* const expected[] = {"no FILE", "one FILE", "two FILEs"};
    err += "tensorscope " + args[0] + ": expected " + expected[cmd.files] + ", found " +
           std::to_string(positional.size()) + " (usage: tensorscope " + cmd.usage + ")\n";
    return kExitUsage;
  }
  try {
    return cmd.run(parser, positional.isEmpty() ? std::string() : positional[0].toStdString(), out,
                   err);
  } catch (const std::invalid_argument& e) {
    err += "tensorscope " + args[0] + ": " + e.what() + "\n";
    return kExitUsage;
  } catch (const engine::cuda::CudaUnavailable& e) {
    // --device cuda: one line, and an exit status a script can tell from a failed run.
    if (e.built()) {
      err += "tensorscope: " + std::string(e.what()) + "\n";
      return kExitNoDevice;
    }
    err += "tensorscope: --device cuda: " + std::string(e.what()) +
           "; nothing can run on a GPU (use --device cpu)\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    err += "tensorscope: " + std::string(e.what()) + "\n";
    return kExitFailure;
  }
}

}  // namespace tscope::gui
