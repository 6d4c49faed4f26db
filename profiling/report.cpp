#include "profiling/report.h"

#include "profiling/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>

namespace tscope::prof {

std::string formatSeconds(double seconds) {
  if (seconds == 0) return "0";
  char buf[32];
  const double a = std::fabs(seconds);
  if (a >= 1)
    std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  else if (a >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  else if (a >= 1e-6)
    std::snprintf(buf, sizeof buf, "%.3g us", seconds * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3g ns", seconds * 1e9);
  return buf;
}

std::string formatBytes(double bytes) {
  char buf[32];
  const double a = std::fabs(bytes);
  if (a < 1024)
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else if (a < 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024);
  else if (a < 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

std::string formatShare(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

namespace {

// A text table: right-aligned columns, the last one (a name) left-aligned and unpadded.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { m_rows.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { m_rows.push_back(std::move(row)); }
  std::string str(const std::string& indent = "  ") const {
    std::vector<std::size_t> width;
    for (const auto& row : m_rows)
      for (std::size_t c = 0; c + 1 < row.size(); ++c) {
        if (width.size() <= c) width.resize(c + 1, 0);
        width[c] = std::max(width[c], row[c].size());
      }
    std::string text;
    for (const auto& row : m_rows) {
      std::string line = indent;
      for (std::size_t c = 0; c < row.size(); ++c) {
        if (c + 1 < row.size())
          line += std::string(width[c] - row[c].size(), ' ') + row[c] + "  ";
        else
          line += row[c];
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      text += line + "\n";
    }
    return text;
  }

 private:
  std::vector<std::vector<std::string>> m_rows;
};

std::string shapeList(const std::vector<engine::Shape>& shapes) {
  std::string text;
  for (const engine::Shape& s : shapes)
    text += (text.empty() ? "" : ", ") + engine::shapeToString(s);
  return text;
}

// "... (remaining 12 rows account for 3.4% (1.2 ms) of the runtime)"
std::string remainingLine(std::size_t count, double seconds, double timeInNodes) {
  if (count == 0) return "";
  return "  ... (remaining " + std::to_string(count) + (count == 1 ? " row" : " rows") +
         " account for " + formatShare(timeInNodes > 0 ? seconds / timeInNodes : 0) + " (" +
         formatSeconds(seconds) + ") of the runtime)\n";
}

std::string statsLine(const TimeStats& s) {
  return "mean " + formatSeconds(s.mean) + ", median " + formatSeconds(s.median) + ", p95 " +
         formatSeconds(s.p95) + ", min " + formatSeconds(s.min) + ", max " + formatSeconds(s.max);
}

std::string nodeName(const NodeProfile& node) {
  std::string path;
  for (std::int64_t outer : node.framePath) path += std::to_string(outer) + "/";
  return path + std::to_string(node.id);
}

std::string summaryText(const Profile& p) {
  const FunctionSummary& f = p.function;
  std::string text = "Function profile" + (p.name.empty() ? std::string() : ": " + p.name) + "\n";
  text += "  mode " + f.mode + " on " + f.device + "; " + std::to_string(f.measuredRuns) +
          " measured calls after " + std::to_string(f.warmupRuns) + " warm-up\n";
  if (!p.machine.cpu.empty() || !p.date.empty())
    text += "  " + p.date + (p.machine.host.empty() ? "" : " on " + p.machine.host) +
            (p.machine.cpu.empty()
                 ? ""
                 : " (" + p.machine.cpu + ", " + std::to_string(p.machine.threads) + " threads)") +
            "\n";
  const double call = f.call.mean;
  text += "  time per call:  " + statsLine(f.call) + "\n";
  text += "  time in nodes:  " + statsLine(f.inNodes) + " (" +
          formatShare(call > 0 ? f.inNodes.mean / call : 0) + " of the call)\n";
  text += "  VM overhead:    " + statsLine(f.overhead) + " (" +
          formatShare(call > 0 ? f.overhead.mean / call : 0) +
          "; the call minus its nodes: argument checks, dispatch, updates)\n";
  std::string phases;
  for (const PhaseTime& ph : f.compilePhases)
    phases += (phases.empty() ? "" : ", ") + ph.name + " " + formatSeconds(ph.seconds);
  text += "  compile time:   " + formatSeconds(f.compileSeconds) +
          (phases.empty() ? std::string() : " (" + phases + ")") + "\n";
  text += "  nodes:          " + std::to_string(f.applyCount) + " applies" +
          (f.innerApplyCount > 0 ? ", " + std::to_string(f.innerApplyCount) + " in inner graphs"
                                 : std::string()) +
          "\n";
  if (p.gpu) {
    const GpuSummary& g = *p.gpu;
    text += "  GPU (" + g.source + "):     " + std::to_string(g.kernels) + " kernels, " +
            std::to_string(g.memcpys) + " copies, " + std::to_string(g.memsets) + " sets; " +
            std::to_string(g.unattributed) + " launched outside any node (" +
            formatSeconds(g.unattributedSeconds) + "), " + std::to_string(g.dropped) +
            " dropped, " + std::to_string(g.invalidTimestamps) + " without a valid time\n";
  }
  text += "  events:         " + std::to_string(p.capture.keptEvents) + " kept, " +
          std::to_string(p.capture.droppedEvents) + " dropped (budget " +
          std::to_string(p.capture.maxEvents) + ")\n";
  return text;
}

std::string groupTable(const std::string& title, const std::vector<GroupRow>& rows,
                       double timeInNodes, std::size_t limit) {
  std::string text = "\n" + title + "\n";
  TextTable table({"% time", "sum %", "self time", "per call", "p95", "#call", "#apply", "name"});
  double cumulative = 0, rest = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GroupRow& r = rows[i];
    if (i >= limit) {
      rest += r.selfSeconds;
      continue;
    }
    cumulative += r.share;
    table.add({formatShare(r.share), formatShare(cumulative), formatSeconds(r.selfSeconds),
               formatSeconds(r.perCall), formatSeconds(r.p95), std::to_string(r.calls),
               std::to_string(r.applies), r.name});
  }
  text += table.str();
  text += remainingLine(rows.size() > limit ? rows.size() - limit : 0, rest, timeInNodes);
  return text;
}

// The machine's calibration of a profile, when it holds a readable one.
std::optional<Calibration> calibrationOf(const Profile& p) {
  if (!p.calibration) return std::nullopt;
  try {
    return Calibration::fromJson(*p.calibration, "/calibration");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The roofline point of one call of a node (Note [Self and total time]: a frame node's cost is
// unknown, its inner nodes have their own).
// Whether the roofline compares with the all-threads peaks: unless the engine ran on one thread.
bool allThreadsOf(const Profile& p) {
  return p.function.threads != 1;
}

RooflinePoint rooflineOf(const Profile& p, const NodeProfile& node, const ApplyRow& row,
                         const std::optional<Calibration>& machine) {
  if (!machine || !node.cost.known) return {};
  return roofline(node.cost, row.perCall, *machine, allThreadsOf(p));
}

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string applyTable(const Profile& p, const Tables& t, std::size_t limit) {
  const std::optional<Calibration> machine = calibrationOf(p);
  std::string text = "\nApply (node ids: outer/inner for nodes of an OpFromGraph or IfElse body)\n";
  if (machine)
    text +=
        "  roofline: achieved GFLOP/s and GB/s per call, flops per byte, and the share of this "
        "machine's bound (" +
        (allThreadsOf(p)
             ? fixed(machine->gemmGflopsAll, 1) + " GFLOP/s, " +
                   fixed(machine->bandwidthGBsAll, 1) + " GB/s on " +
                   std::to_string(machine->threads) + " threads"
             : fixed(machine->gemmGflopsOne, 1) + " GFLOP/s, " +
                   fixed(machine->bandwidthGBsOne, 1) + " GB/s on one thread, as the engine ran") +
        ") the node reaches; - for an unknown cost\n";
  std::vector<std::string> header = {"% time",   "sum %", "self time", "total",
                                     "per call", "p95",   "#call"};
  if (machine)
    for (const char* h : {"GFLOP/s", "GB/s", "flop/B", "% roof"}) header.push_back(h);
  if (p.gpu)
    for (const char* h : {"GPU time", "#kernels"}) header.push_back(h);
  header.push_back("node");
  header.push_back("op (scope) [input shapes]");
  TextTable table(header);
  double cumulative = 0, rest = 0;
  // Note [Roofline above the bound]: a node faster than the calibrated peak says the calibration
  // was taken while the machine ran slower (a shared VM's speed drifts by tens of percent); its
  // fractions are then too high, which the report says rather than hide.
  std::size_t aboveBound = 0;
  double highest = 0;
  if (machine)
    for (const ApplyRow& r : t.applies) {
      const RooflinePoint roof =
          rooflineOf(p, p.nodes[static_cast<std::size_t>(r.node)], r, machine);
      if (roof.known && roof.fraction > 1.05) {
        ++aboveBound;
        highest = std::max(highest, roof.fraction);
      }
    }
  for (std::size_t i = 0; i < t.applies.size(); ++i) {
    const ApplyRow& r = t.applies[i];
    if (i >= limit) {
      rest += r.selfSeconds;
      continue;
    }
    const NodeProfile& node = p.nodes[static_cast<std::size_t>(r.node)];
    cumulative += r.share;
    std::string name = node.op;
    if (!node.scope.empty()) name += " (" + node.scope + ")";
    if (!node.inputShapes.empty()) name += " [" + shapeList(node.inputShapes) + "]";
    if (!node.kernelNote.empty()) name += " {" + node.kernelNote + "}";
    std::vector<std::string> cells = {formatShare(r.share),         formatShare(cumulative),
                                      formatSeconds(r.selfSeconds), formatSeconds(r.totalSeconds),
                                      formatSeconds(r.perCall),     formatSeconds(r.p95),
                                      std::to_string(r.calls)};
    if (machine) {
      const RooflinePoint roof = rooflineOf(p, node, r, machine);
      if (roof.known)
        for (std::string c : {fixed(roof.gflops, 2), fixed(roof.gbps, 2), fixed(roof.intensity, 2),
                              formatShare(roof.fraction)})
          cells.push_back(std::move(c));
      else
        for (int k = 0; k < 4; ++k) cells.push_back("-");
    }
    if (p.gpu) {
      const double runs = double(std::max<std::int64_t>(p.function.measuredRuns, 1));
      cells.push_back(formatSeconds(node.gpuSeconds / runs));
      cells.push_back(std::to_string(node.gpuKernels));
    }
    cells.push_back(nodeName(node));
    cells.push_back(name);
    table.add(std::move(cells));
  }
  text += table.str();
  text +=
      remainingLine(t.applies.size() > limit ? t.applies.size() - limit : 0, rest, t.timeInNodes);
  if (aboveBound > 0)
    text += "  note: " + std::to_string(aboveBound) + " node" + (aboveBound == 1 ? "" : "s") +
            " ran faster than the calibrated bound (up to " + formatShare(highest) +
            "): the calibration" + (machine->date.empty() ? "" : " of " + machine->date) +
            " was taken while this machine ran slower; `tensorscope calibrate` measures it "
            "again\n";
  return text;
}

// Note [Loop frames]: a loop node's body time per iteration (averaged over the measured runs); its
// body's nodes appear in the Apply table once each, summed over the iterations.
std::string loopTable(const Profile& p, std::size_t limit) {
  std::string text;
  for (const NodeProfile& node : p.nodes) {
    if (node.iterationSeconds.empty()) continue;
    const auto& its = node.iterationSeconds;
    double total = 0, lo = its[0], hi = its[0];
    for (double v : its) {
      total += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    text += "\nIterations of " + node.op + " (node " + nodeName(node) +
            "): " + std::to_string(its.size()) + " iterations, body time " + formatSeconds(total) +
            ", per iteration mean " + formatSeconds(total / double(its.size())) + ", min " +
            formatSeconds(lo) + ", max " + formatSeconds(hi) + "\n";
    TextTable table({"iteration", "body time", "% of loop"});
    double rest = 0;
    for (std::size_t k = 0; k < its.size(); ++k) {
      if (k >= limit) {
        rest += its[k];
        continue;
      }
      table.add(
          {std::to_string(k), formatSeconds(its[k]), formatShare(total > 0 ? its[k] / total : 0)});
    }
    text += table.str();
    if (its.size() > limit)
      text += "  ... " + std::to_string(its.size() - limit) + " more iterations, " +
              formatSeconds(rest) + "\n";
  }
  return text;
}

std::string scopeTable(const Tables& t, std::size_t limit) {
  std::string text =
      "\nScopes (inclusive: the scope and every scope under it; exclusive: its own nodes only)\n";
  TextTable table({"% incl", "inclusive", "exclusive", "#apply", "scope"});
  std::size_t shown = 0;
  for (const ScopeRow& r : t.scopes) {
    if (shown++ >= limit * 2) break;
    table.add({formatShare(r.share), formatSeconds(r.inclusive), formatSeconds(r.exclusive),
               std::to_string(r.applies),
               std::string(static_cast<std::size_t>(r.depth) * 2, ' ') + r.name});
  }
  text += table.str();
  if (t.scopes.size() > shown)
    text += "  ... (" + std::to_string(t.scopes.size() - shown) + " more scopes in --json)\n";
  return text;
}

std::string outputKinds(const NodeProfile& node) {
  std::string kinds;
  for (const OutputInfo& o : node.outputs)
    kinds += (kinds.empty() ? "" : ",") + std::string(outputKindName(o.kind));
  return kinds;
}

std::int64_t outputBytes(const NodeProfile& node) {
  std::int64_t bytes = 0;
  for (const OutputInfo& o : node.outputs) bytes += o.bytes;
  return bytes;
}

std::string memoryText(const Profile& p, std::size_t limit) {
  const MemorySummary& m = p.memory;
  std::string text = "\nMemory\n";
  text += "  peak live (measured):               " + formatBytes(double(m.peakLiveBytes)) + "\n";
  text += "  peak with the current plan:         " + formatBytes(double(m.planPeakBytes)) + "\n";
  text +=
      "  peak without inplace:               " + formatBytes(double(m.peakWithoutInplace)) + "\n";
  text +=
      "  peak without freeing intermediates: " + formatBytes(double(m.peakWithoutFreeing)) + "\n";
  std::vector<std::size_t> order(p.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return outputBytes(p.nodes[a]) > outputBytes(p.nodes[b]);
  });
  TextTable table({"output bytes", "kind", "allocated", "node", "op [output shapes]"});
  std::size_t shown = 0;
  for (std::size_t i : order) {
    const NodeProfile& node = p.nodes[i];
    if (shown >= limit || outputBytes(node) == 0) break;
    ++shown;
    std::vector<engine::Shape> shapes;
    for (const OutputInfo& o : node.outputs) shapes.push_back(o.shape);
    table.add({formatBytes(double(outputBytes(node))), outputKinds(node),
               formatBytes(double(node.allocatedBytes)), nodeName(node),
               node.op + " [" + shapeList(shapes) + "]"});
  }
  if (shown > 0)
    text +=
        "  largest outputs (created: a new buffer; inplace: overwrote an input; "
        "view: aliases an input)\n" +
        table.str();
  return text;
}

std::string rewriteText(const Profile& p, std::size_t limit) {
  if (p.rewritePhases.empty() && p.rewriters.empty()) return "";
  std::string text = "\nRewrites\n";
  TextTable phases({"time", "nodes before", "after", "changes", "phase"});
  for (const RewritePhaseRow& r : p.rewritePhases)
    phases.add({formatSeconds(r.seconds), std::to_string(r.nodesBefore),
                std::to_string(r.nodesAfter), std::to_string(r.changes), r.name});
  text += phases.str();
  std::vector<RewriterRow> rows = p.rewriters;
  std::stable_sort(rows.begin(), rows.end(), [](const RewriterRow& a, const RewriterRow& b) {
    return a.seconds > b.seconds;
  });
  TextTable rewriters({"time", "tried", "applied", "refused", "rewriter (phase)"});
  for (std::size_t i = 0; i < rows.size() && i < limit; ++i)
    rewriters.add({formatSeconds(rows[i].seconds), std::to_string(rows[i].tried),
                   std::to_string(rows[i].applied), std::to_string(rows[i].refused),
                   rows[i].name + " (" + rows[i].phase + ")"});
  text += "  rewriters by time:\n" + rewriters.str("    ");
  if (rows.size() > limit)
    text += "    ... (" + std::to_string(rows.size() - limit) + " more rewriters in --json)\n";
  return text;
}

nlohmann::json statsJson(const TimeStats& s) {
  return {{"count", s.count},   {"total", s.total}, {"mean", s.mean}, {"min", s.min},
          {"median", s.median}, {"p95", s.p95},     {"max", s.max}};
}

nlohmann::json groupJson(const std::vector<GroupRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const GroupRow& r : rows)
    out.push_back({{"name", r.name},
                   {"self_seconds", r.selfSeconds},
                   {"per_call", r.perCall},
                   {"p95", r.p95},
                   {"calls", r.calls},
                   {"applies", r.applies},
                   {"share", r.share}});
  return out;
}

}  // namespace

std::string reportText(const Profile& profile, const ReportOptions& options) {
  const Tables t = aggregate(profile, options.sort);
  std::string text = summaryText(profile);
  text +=
      "\nTimes are per measured call of the function. Self time is a node's own time; the total\n"
      "of a node that runs an inner graph (OpFromGraph, IfElse) also holds its inner nodes'.\n"
      "Shares use self time, so each table adds up to the time in nodes (" +
      formatSeconds(t.timeInNodes) + ").\n";
  text += groupTable("Class", t.classes, t.timeInNodes, options.rows);
  text += groupTable("Ops (equal props: one row)", t.ops, t.timeInNodes, options.rows);
  text += applyTable(profile, t, options.rows);
  text += loopTable(profile, options.rows);
  text += scopeTable(t, options.rows);
  if (options.memory) text += memoryText(profile, options.memoryRows);
  if (options.rewrites) text += rewriteText(profile, options.rows);
  return text;
}

nlohmann::json reportJson(const Profile& profile, const ReportOptions& options) {
  const Tables t = aggregate(profile, options.sort);
  const std::optional<Calibration> machine = calibrationOf(profile);
  const FunctionSummary& f = profile.function;
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseTime& ph : f.compilePhases)
    phases.push_back({{"name", ph.name}, {"seconds", ph.seconds}});
  nlohmann::json out;
  out["schema"] = 1;
  out["name"] = profile.name;
  out["date"] = profile.date;
  out["machine"] = {{"host", profile.machine.host},
                    {"cpu", profile.machine.cpu},
                    {"threads", profile.machine.threads}};
  out["function"] = {{"mode", f.mode},
                     {"device", f.device},
                     {"warmup_runs", f.warmupRuns},
                     {"measured_runs", f.measuredRuns},
                     {"call", statsJson(f.call)},
                     {"in_nodes", statsJson(f.inNodes)},
                     {"overhead", statsJson(f.overhead)},
                     {"compile_seconds", f.compileSeconds},
                     {"compile_phases", phases},
                     {"applies", f.applyCount},
                     {"inner_applies", f.innerApplyCount},
                     {"time_in_nodes", t.timeInNodes}};
  out["classes"] = groupJson(t.classes);
  out["ops"] = groupJson(t.ops);
  nlohmann::json applies = nlohmann::json::array();
  for (const ApplyRow& r : t.applies) {
    const NodeProfile& node = profile.nodes[static_cast<std::size_t>(r.node)];
    nlohmann::json shapes = nlohmann::json::array();
    for (const engine::Shape& s : node.inputShapes) shapes.push_back(s);
    nlohmann::json row = {{"id", node.id},
                          {"frame_path", node.framePath},
                          {"op", node.op},
                          {"class", node.opClass},
                          {"scope", node.scope},
                          {"self_seconds", r.selfSeconds},
                          {"total_seconds", r.totalSeconds},
                          {"per_call", r.perCall},
                          {"p95", r.p95},
                          {"calls", r.calls},
                          {"share", r.share},
                          {"time", statsJson(node.time)},
                          {"input_shapes", shapes}};
    if (node.cost.known)
      row["cost"] = {{"flops", node.cost.flops},
                     {"bytes_read", node.cost.bytesRead},
                     {"bytes_written", node.cost.bytesWritten}};
    else
      row["cost"] = nullptr;
    row["gpu_seconds"] =
        node.gpuSeconds / double(std::max<std::int64_t>(profile.function.measuredRuns, 1));
    row["gpu_kernels"] = node.gpuKernels;
    const RooflinePoint roof = rooflineOf(profile, node, r, machine);
    if (roof.known)
      row["roofline"] = {{"gflops", roof.gflops},       {"gbps", roof.gbps},
                         {"intensity", roof.intensity}, {"bound_seconds", roof.boundSeconds},
                         {"fraction", roof.fraction},   {"limit", rooflineLimitName(roof.limit)}};
    else
      row["roofline"] = nullptr;
    applies.push_back(std::move(row));
  }
  out["applies"] = std::move(applies);
  nlohmann::json scopes = nlohmann::json::array();
  for (const ScopeRow& r : t.scopes)
    scopes.push_back({{"path", r.path},
                      {"depth", r.depth},
                      {"inclusive_seconds", r.inclusive},
                      {"exclusive_seconds", r.exclusive},
                      {"applies", r.applies},
                      {"share", r.share}});
  out["scopes"] = std::move(scopes);
  nlohmann::json outputs = nlohmann::json::array();
  for (const NodeProfile& node : profile.nodes) {
    nlohmann::json list = nlohmann::json::array();
    for (const OutputInfo& o : node.outputs)
      list.push_back({{"bytes", o.bytes},
                      {"kind", outputKindName(o.kind)},
                      {"shape", o.shape},
                      {"dtype", o.dtype}});
    outputs.push_back({{"id", node.id},
                       {"frame_path", node.framePath},
                       {"outputs", list},
                       {"allocated_bytes", node.allocatedBytes},
                       {"freed_bytes", node.freedBytes}});
  }
  const MemorySummary& m = profile.memory;
  out["memory"] = {{"peak_live_bytes", m.peakLiveBytes},
                   {"plan_peak_bytes", m.planPeakBytes},
                   {"peak_without_inplace_bytes", m.peakWithoutInplace},
                   {"peak_without_freeing_bytes", m.peakWithoutFreeing},
                   {"nodes", outputs}};
  nlohmann::json rphases = nlohmann::json::array(), rewriters = nlohmann::json::array();
  for (const RewritePhaseRow& r : profile.rewritePhases)
    rphases.push_back({{"name", r.name},
                       {"seconds", r.seconds},
                       {"nodes_before", r.nodesBefore},
                       {"nodes_after", r.nodesAfter},
                       {"changes", r.changes}});
  for (const RewriterRow& r : profile.rewriters)
    rewriters.push_back({{"name", r.name},
                         {"phase", r.phase},
                         {"tried", r.tried},
                         {"applied", r.applied},
                         {"refused", r.refused},
                         {"seconds", r.seconds}});
  out["rewrites"] = {{"phases", rphases}, {"rewriters", rewriters}};
  if (profile.gpu)
    out["gpu"] = {{"source", profile.gpu->source},
                  {"kernels", profile.gpu->kernels},
                  {"memcpys", profile.gpu->memcpys},
                  {"memsets", profile.gpu->memsets},
                  {"unattributed", profile.gpu->unattributed},
                  {"unattributed_seconds", profile.gpu->unattributedSeconds},
                  {"dropped", profile.gpu->dropped},
                  {"invalid_timestamps", profile.gpu->invalidTimestamps}};
  else
    out["gpu"] = nullptr;
  out["calibration"] = profile.calibration ? *profile.calibration : nlohmann::json(nullptr);
  out["capture"] = {{"max_events", profile.capture.maxEvents},
                    {"kept_events", profile.capture.keptEvents},
                    {"dropped_events", profile.capture.droppedEvents}};
  return out;
}

}  // namespace tscope::prof
