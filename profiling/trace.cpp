#include "profiling/trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <unistd.h>

namespace tscope::prof {

using nlohmann::json;

namespace {

constexpr int kCpuPid = 1;

// Microseconds with 3 decimals: nanoseconds / 1000 prints in at most 3 decimals as the shortest
// round-trip double for any time a trace holds (below 2^53 ns).
double us(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

std::vector<std::string> scopeParts(const std::string& scope) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin < scope.size()) {
    std::size_t end = scope.find('/', begin);
    if (end == std::string::npos) end = scope.size();
    if (end > begin) parts.push_back(scope.substr(0, end));  // the prefix up to this level
    begin = end + 1;
  }
  return parts;
}

std::string shapeText(const engine::Shape& shape) {
  return engine::shapeToString(shape);
}

struct Slice {
  std::int64_t start = 0, end = 0;
  int rank = 0;  // run 0, scope 1 + level, node 100 + depth: the enclosing one first on ties
  json event;
};

// Note [GPU tracks]: a process per GPU ("GPU 0", pid 100 + device), a thread per stream; each
// kernel, copy and set is a complete event there, and each kernel a node launched gets a flow
// from the node's slice on the CPU track (the launch) to the kernel ("s", then "f" with "bp":
// "e"), so clicking a node in Perfetto leads to its kernels.
constexpr int kGpuPidBase = 100;

void emitGpuTracks(const Profile& profile, const std::set<std::int32_t>& wanted,
                   const std::function<void(const json&)>& emit) {
  if (profile.gpuEvents.empty()) return;
  std::map<std::pair<std::int32_t, std::int32_t>, const NodeEventRecord*> launch;  // (run, node)
  for (const NodeEventRecord& e : profile.events)
    if (wanted.count(e.run)) launch.emplace(std::make_pair(e.run, e.node), &e);
  std::set<std::pair<std::int32_t, std::int32_t>> tracks;  // (device, stream)
  for (const GpuEventRecord& g : profile.gpuEvents)
    if (wanted.count(g.run)) tracks.insert({g.device, g.stream});
  std::set<std::int32_t> devices;
  for (const auto& [device, stream] : tracks) {
    if (devices.insert(device).second) {
      emit({{"ph", "M"},
            {"name", "process_name"},
            {"pid", kGpuPidBase + device},
            {"tid", 0},
            {"args", {{"name", "GPU " + std::to_string(device)}}}});
      emit({{"ph", "M"},
            {"name", "process_sort_index"},
            {"pid", kGpuPidBase + device},
            {"tid", 0},
            {"args", {{"sort_index", 1 + device}}}});
    }
    emit({{"ph", "M"},
          {"name", "thread_name"},
          {"pid", kGpuPidBase + device},
          {"tid", stream + 1},
          {"args", {{"name", "stream " + std::to_string(stream)}}}});
  }
  std::int64_t flow = 0;
  for (const GpuEventRecord& g : profile.gpuEvents) {
    if (!wanted.count(g.run)) continue;
    const int pid = kGpuPidBase + g.device, tid = g.stream + 1;
    json args = {{"run", g.run}};
    const NodeProfile* node = g.node >= 0 && static_cast<std::size_t>(g.node) < profile.nodes.size()
                                  ? &profile.nodes[static_cast<std::size_t>(g.node)]
                                  : nullptr;
    if (node) {
      args["node"] = node->id;
      args["op"] = node->op;
      if (!node->framePath.empty()) args["framePath"] = node->framePath;
    }
    if (g.bytes > 0) args["bytes"] = g.bytes;
    emit({{"ph", "X"},
          {"name", g.name},
          {"cat", std::string(gpuEventKindName(g.kind))},
          {"pid", pid},
          {"tid", tid},
          {"ts", us(g.startNs)},
          {"dur", us(g.endNs - g.startNs)},
          {"args", std::move(args)}});
    if (!node) continue;
    auto l = launch.find({g.run, g.node});
    if (l == launch.end()) continue;
    const NodeEventRecord& cpu = *l->second;
    ++flow;
    emit({{"ph", "s"},
          {"name", "launch"},
          {"cat", "launch"},
          {"id", flow},
          {"pid", kCpuPid},
          {"tid", cpu.thread + 1},
          {"ts", us(cpu.startNs)}});
    emit({{"ph", "f"},
          {"bp", "e"},
          {"name", "launch"},
          {"cat", "launch"},
          {"id", flow},
          {"pid", pid},
          {"tid", tid},
          {"ts", us(g.startNs)}});
  }
}

}  // namespace

json forEachTraceEvent(const Profile& profile, const TraceOptions& options,
                       const std::function<void(const json&)>& emit) {
  std::set<std::int32_t> known;
  for (const RunSpan& r : profile.runs) known.insert(r.run);
  for (const NodeEventRecord& e : profile.events) known.insert(e.run);
  std::set<std::int32_t> wanted;
  if (options.runs.empty()) {
    wanted = known;
  } else {
    for (std::int32_t r : options.runs) {
      if (!known.count(r))
        throw std::invalid_argument(
            "chromeTrace: run " + std::to_string(r) + " is not in the profile (" +
            (known.empty() ? std::string("it kept no runs")
                           : "it kept runs " + std::to_string(*known.begin()) + " to " +
                                 std::to_string(*known.rbegin())) +
            ")");
      wanted.insert(r);
    }
  }
  std::map<std::int32_t, RunSpan> spans;
  for (const RunSpan& r : profile.runs) spans[r.run] = r;
  // (run, thread) -> events, in time order.
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<const NodeEventRecord*>> tracks;
  std::set<std::int32_t> threads;
  bool memory = false;
  for (const NodeEventRecord& e : profile.events) {
    if (e.node < 0 || static_cast<std::size_t>(e.node) >= profile.nodes.size()) continue;
    if (e.liveBytes != 0) memory = true;
    if (!wanted.count(e.run)) continue;
    tracks[{e.run, e.thread}].push_back(&e);
    threads.insert(e.thread);
  }
  memory = memory && options.memoryCounters;
  if (threads.empty() && !wanted.empty()) threads.insert(0);

  emit({{"ph", "M"},
        {"name", "process_name"},
        {"pid", kCpuPid},
        {"tid", 0},
        {"args", {{"name", "CPU"}}}});
  emit({{"ph", "M"},
        {"name", "process_sort_index"},
        {"pid", kCpuPid},
        {"tid", 0},
        {"args", {{"sort_index", 0}}}});
  for (std::int32_t t : threads)
    emit({{"ph", "M"},
          {"name", "thread_name"},
          {"pid", kCpuPid},
          {"tid", t + 1},
          {"args", {{"name", t == 0 ? std::string("main") : "thread " + std::to_string(t)}}}});

  // A run with no events still gets its slice on the main track.
  for (std::int32_t run : wanted)
    if (!tracks.count({run, 0}) && spans.count(run)) tracks[{run, 0}];

  for (auto& [key, events] : tracks) {
    const auto [run, thread] = key;
    const int tid = thread + 1;
    std::stable_sort(
        events.begin(), events.end(), [](const NodeEventRecord* a, const NodeEventRecord* b) {
          return a->startNs != b->startNs ? a->startNs < b->startNs : a->endNs > b->endNs;
        });
    std::vector<Slice> slices;
    auto slice = [&](std::int64_t start, std::int64_t end, int rank, const std::string& name,
                     const char* cat, json args) {
      slices.push_back({start, end, rank,
                        json{{"ph", "X"},
                             {"name", name},
                             {"cat", cat},
                             {"pid", kCpuPid},
                             {"tid", tid},
                             {"ts", us(start)},
                             {"dur", us(end - start)},
                             {"args", std::move(args)}}});
    };
    // The run slice encloses the run's span and every event of it.
    std::int64_t runStart = events.empty() ? 0 : events.front()->startNs;
    std::int64_t runEnd = runStart;
    for (const NodeEventRecord* e : events) runEnd = std::max(runEnd, e->endNs);
    if (auto s = spans.find(run); s != spans.end()) {
      runStart = events.empty() ? s->second.startNs : std::min(runStart, s->second.startNs);
      runEnd = events.empty() ? s->second.endNs : std::max(runEnd, s->second.endNs);
    }
    if (thread == 0 || !events.empty())
      slice(runStart, runEnd, 0, "run " + std::to_string(run), "run", {{"run", run}});
    // Scope slices over the top-level nodes (Note [Trace layout]).
    std::vector<std::pair<std::string, std::int64_t>> open;  // prefix, start
    std::int64_t lastEnd = runStart;
    auto closeTo = [&](std::size_t keep) {
      while (open.size() > keep) {
        const auto& [prefix, start] = open.back();
        slice(start, lastEnd, 1 + static_cast<int>(open.size()), prefix, "scope",
              {{"scope", prefix}, {"run", run}});
        open.pop_back();
      }
    };
    for (const NodeEventRecord* e : events) {
      const NodeProfile& n = profile.nodes[static_cast<std::size_t>(e->node)];
      if (!n.framePath.empty()) continue;
      const std::vector<std::string> parts = scopeParts(n.scope);
      std::size_t common = 0;
      while (common < open.size() && common < parts.size() && open[common].first == parts[common])
        ++common;
      closeTo(common);
      for (std::size_t k = common; k < parts.size(); ++k) open.emplace_back(parts[k], e->startNs);
      lastEnd = e->endNs;
    }
    closeTo(0);
    for (const NodeEventRecord* e : events) {
      const NodeProfile& n = profile.nodes[static_cast<std::size_t>(e->node)];
      json inputs = json::array();
      for (const engine::Shape& s : n.inputShapes) inputs.push_back(shapeText(s));
      json args = {{"node", n.id}, {"scope", n.scope}, {"inputs", std::move(inputs)}, {"run", run}};
      if (!n.framePath.empty()) args["framePath"] = n.framePath;
      slice(e->startNs, e->endNs, 100 + static_cast<int>(n.framePath.size()), n.op,
            n.opClass.empty() ? "node" : n.opClass.c_str(), std::move(args));
    }
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.end != b.end) return a.end > b.end;
      return a.rank < b.rank;
    });
    for (const Slice& s : slices) emit(s.event);
    if (memory)
      for (const NodeEventRecord* e : events)
        emit({{"ph", "C"},
              {"name", "live bytes"},
              {"pid", kCpuPid},
              {"tid", tid},
              {"ts", us(e->endNs)},
              {"args", {{"bytes", e->liveBytes}}}});
  }
  emitGpuTracks(profile, wanted, emit);
  return {{"displayTimeUnit", "ms"},
          {"otherData",
           {{"name", profile.name},
            {"mode", profile.function.mode},
            {"date", profile.date},
            {"graph", profile.graph},
            {"keptEvents", profile.capture.keptEvents},
            {"droppedEvents", profile.capture.droppedEvents}}}};
}

json chromeTrace(const Profile& profile, const TraceOptions& options) {
  json events = json::array();
  json doc = forEachTraceEvent(profile, options, [&](const json& e) { events.push_back(e); });
  doc["traceEvents"] = std::move(events);
  return doc;
}

void writeChromeTrace(const Profile& profile, const std::string& path,
                      const TraceOptions& options) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.string() + ".tmp-" + std::to_string(::getpid());
  auto failure = [&](const std::string& why) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return std::runtime_error("writing the trace " + path + " failed: " + why);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw failure("cannot create " + tmp.string() + " (" + std::strerror(errno) + ")");
    out << "{\"traceEvents\":[\n";
    bool first = true;
    json rest;
    try {
      rest = forEachTraceEvent(profile, options, [&](const json& e) {
        if (!first) out << ",\n";
        first = false;
        out << e.dump(-1, ' ', false, json::error_handler_t::replace);
      });
    } catch (...) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw;
    }
    out << "\n]";
    for (auto& [key, value] : rest.items())
      out << ",\"" << key << "\":" << value.dump(-1, ' ', false, json::error_handler_t::replace);
    out << "}\n";
    out.flush();
    if (!out) throw failure("writing " + tmp.string() + " failed (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) throw failure("renaming " + tmp.string() + " failed (" + ec.message() + ")");
}

}  // namespace tscope::prof
