#include "profiling/profile_io.h"

#include <cmath>
#include <limits>

namespace tscope::prof {

using nlohmann::json;

// =============================================================================================
// Writing

namespace {

json timeStatsJson(const TimeStats& s) {
  return {{"count", s.count},   {"total", s.total}, {"mean", s.mean}, {"min", s.min},
          {"median", s.median}, {"p95", s.p95},     {"max", s.max}};
}

json shapeJson(const engine::Shape& shape) {
  json a = json::array();
  for (std::int64_t d : shape) a.push_back(d);
  return a;
}

json nodeJson(const NodeProfile& n) {
  json inputs = json::array();
  for (const engine::Shape& s : n.inputShapes) inputs.push_back(shapeJson(s));
  json outputs = json::array();
  for (const OutputInfo& o : n.outputs)
    outputs.push_back({{"shape", shapeJson(o.shape)},
                       {"dtype", o.dtype},
                       {"bytes", o.bytes},
                       {"kind", std::string(outputKindName(o.kind))}});
  json path = json::array();
  for (std::int64_t id : n.framePath) path.push_back(id);
  json out = {{"framePath", std::move(path)},
              {"id", n.id},
              {"body", n.body},
              {"position", n.position},
              {"op", n.op},
              {"opClass", n.opClass},
              {"scope", n.scope},
              {"hasInnerGraph", n.hasInnerGraph},
              {"inputShapes", std::move(inputs)},
              {"outputs", std::move(outputs)},
              {"calls", n.calls},
              {"time", timeStatsJson(n.time)},
              {"allocatedBytes", n.allocatedBytes},
              {"freedBytes", n.freedBytes},
              {"cost",
               {{"flops", n.cost.flops},
                {"bytesRead", n.cost.bytesRead},
                {"bytesWritten", n.cost.bytesWritten},
                {"known", n.cost.known}}},
              {"gpuSeconds", n.gpuSeconds},
              {"gpuKernels", n.gpuKernels},
              {"iterationSeconds", n.iterationSeconds}};
  // Written only when a kernel left one, so files of graphs without such kernels do not change.
  if (!n.kernelNote.empty()) out["kernelNote"] = n.kernelNote;
  return out;
}

}  // namespace

json profileToJson(const Profile& p) {
  json out = {{"kind", "profile"},
              {"schema", Profile::kSchemaVersion},
              {"graph", p.graph},
              {"name", p.name},
              {"date", p.date}};
  out["machine"] = {
      {"host", p.machine.host}, {"cpu", p.machine.cpu}, {"threads", p.machine.threads}};
  const FunctionSummary& f = p.function;
  json phases = json::array();
  for (const PhaseTime& ph : f.compilePhases)
    phases.push_back({{"name", ph.name}, {"seconds", ph.seconds}});
  out["function"] = {{"mode", f.mode},
                     {"device", f.device},
                     {"warmupRuns", f.warmupRuns},
                     {"measuredRuns", f.measuredRuns},
                     {"call", timeStatsJson(f.call)},
                     {"inNodes", timeStatsJson(f.inNodes)},
                     {"overhead", timeStatsJson(f.overhead)},
                     {"compileSeconds", f.compileSeconds},
                     {"compilePhases", std::move(phases)},
                     {"applyCount", f.applyCount},
                     {"innerApplyCount", f.innerApplyCount},
                     {"threads", f.threads}};
  json nodes = json::array();
  for (const NodeProfile& n : p.nodes) nodes.push_back(nodeJson(n));
  out["nodes"] = std::move(nodes);
  out["memory"] = {{"peakLiveBytes", p.memory.peakLiveBytes},
                   {"planPeakBytes", p.memory.planPeakBytes},
                   {"peakWithoutInplace", p.memory.peakWithoutInplace},
                   {"peakWithoutFreeing", p.memory.peakWithoutFreeing}};
  json rp = json::array();
  for (const RewritePhaseRow& r : p.rewritePhases)
    rp.push_back({{"name", r.name},
                  {"seconds", r.seconds},
                  {"nodesBefore", r.nodesBefore},
                  {"nodesAfter", r.nodesAfter},
                  {"changes", r.changes}});
  out["rewritePhases"] = std::move(rp);
  json rw = json::array();
  for (const RewriterRow& r : p.rewriters)
    rw.push_back({{"name", r.name},
                  {"phase", r.phase},
                  {"tried", r.tried},
                  {"applied", r.applied},
                  {"refused", r.refused},
                  {"seconds", r.seconds}});
  out["rewriters"] = std::move(rw);
  if (p.calibration) out["calibration"] = *p.calibration;
  out["capture"] = {{"maxEvents", p.capture.maxEvents},
                    {"keptEvents", p.capture.keptEvents},
                    {"droppedEvents", p.capture.droppedEvents}};
  out["originNs"] = p.originNs;
  json runs = json::array();
  for (const RunSpan& r : p.runs) runs.push_back({r.run, r.startNs, r.endNs});
  out["runs"] = std::move(runs);
  // Note [Compact events]: one array per event, [run, node, thread, startNs, endNs, liveBytes],
  // a third of the size of objects for the part of the section that grows with the runs.
  json events = json::array();
  for (const NodeEventRecord& e : p.events)
    events.push_back({e.run, e.node, e.thread, e.startNs, e.endNs, e.liveBytes});
  out["events"] = std::move(events);
  if (p.gpu) {
    const GpuSummary& g = *p.gpu;
    out["gpu"] = {{"source", g.source},
                  {"kernels", g.kernels},
                  {"memcpys", g.memcpys},
                  {"memsets", g.memsets},
                  {"unattributed", g.unattributed},
                  {"dropped", g.dropped},
                  {"invalidTimestamps", g.invalidTimestamps},
                  {"unattributedSeconds", g.unattributedSeconds}};
    // [kind, run, node, name, device, stream, startNs, endNs, bytes] (Note [Compact events]).
    json gpuEvents = json::array();
    for (const GpuEventRecord& e : p.gpuEvents)
      gpuEvents.push_back({std::string(gpuEventKindName(e.kind)), e.run, e.node, e.name, e.device,
                           e.stream, e.startNs, e.endNs, e.bytes});
    out["gpuEvents"] = std::move(gpuEvents);
  }
  return out;
}

bool isProfileJson(const json& value) {
  if (!value.is_object()) return false;
  auto kind = value.find("kind");
  return kind != value.end() && *kind == "profile";
}

// =============================================================================================
// Reading

namespace {

// A JSON pointer built only when a complaint needs it.
struct Path {
  const Path* parent = nullptr;
  const std::string* root = nullptr;  // the section's own path, at the root
  const char* key = nullptr;
  std::size_t index = 0;

  Path operator/(const char* k) const { return {this, nullptr, k, 0}; }
  Path operator[](std::size_t i) const { return {this, nullptr, nullptr, i}; }
  std::string str() const {
    if (root) return *root;
    std::string base = parent ? parent->str() : std::string();
    return base + "/" + (key ? std::string(key) : std::to_string(index));
  }
};

[[noreturn]] void fail(const Path& at, const std::string& expected, const json& found) {
  failAt(at.str(), expected, found);
}

const json& member(const json& object, const Path& at, const char* key) {
  auto it = object.find(key);
  if (it == object.end())
    throw ProfileError(at.str() + ": expected a member \"" + std::string(key) + "\", found none");
  return *it;
}

const json& object(const json& v, const Path& at, const char* what) {
  if (!v.is_object()) fail(at, what, v);
  return v;
}

const json& array(const json& v, const Path& at, const char* what) {
  if (!v.is_array()) fail(at, what, v);
  return v;
}

double seconds(const json& v, const Path& at) {
  if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
    fail(at, "a number of seconds (>= 0)", v);
  return v.get<double>();
}

double number(const json& v, const Path& at, const char* what) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) fail(at, what, v);
  return v.get<double>();
}

std::int64_t integer(const json& v, const Path& at, std::int64_t min, const char* what) {
  if (!v.is_number_integer()) fail(at, what, v);
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    fail(at, what, v);
  const auto n = v.get<std::int64_t>();
  if (n < min) fail(at, what, v);
  return n;
}

// A run index or thread number: an integer in [0, 2^31).
std::int32_t index32(const json& v, const Path& at, const char* what) {
  const std::int64_t n = integer(v, at, 0, what);
  if (n > std::numeric_limits<std::int32_t>::max()) fail(at, what, v);
  return static_cast<std::int32_t>(n);
}

std::string string(const json& v, const Path& at) {
  if (!v.is_string()) fail(at, "a string", v);
  return v.get<std::string>();
}

bool boolean(const json& v, const Path& at) {
  if (!v.is_boolean()) fail(at, "true or false", v);
  return v.get<bool>();
}

TimeStats timeStats(const json& v, const Path& at) {
  object(v, at,
         "time statistics {\"count\", \"total\", \"mean\", \"min\", \"median\", \"p95\", \"max\"}");
  TimeStats s;
  s.count = integer(member(v, at, "count"), at / "count", 0, "a sample count (integer >= 0)");
  s.total = seconds(member(v, at, "total"), at / "total");
  s.mean = seconds(member(v, at, "mean"), at / "mean");
  s.min = seconds(member(v, at, "min"), at / "min");
  s.median = seconds(member(v, at, "median"), at / "median");
  s.p95 = seconds(member(v, at, "p95"), at / "p95");
  s.max = seconds(member(v, at, "max"), at / "max");
  if (!(s.min <= s.median && s.median <= s.p95 && s.p95 <= s.max))
    throw ProfileError(at.str() + ": expected min <= median <= p95 <= max, found " +
                       json({s.min, s.median, s.p95, s.max}).dump());
  return s;
}

engine::Shape shape(const json& v, const Path& at) {
  array(v, at, "a shape (an array of sizes >= 0)");
  engine::Shape s;
  s.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    s.push_back(integer(v[i], at[i], 0, "a size (integer >= 0)"));
  return s;
}

std::int64_t bytes(const json& v, const Path& at) {
  return integer(v, at, 0, "a byte count (integer >= 0)");
}

NodeProfile node(const json& v, const Path& at) {
  object(v, at, "a node profile object");
  NodeProfile n;
  const Path fp = at / "framePath";
  const json& path = array(member(v, at, "framePath"), fp, "an array of outer node ids");
  for (std::size_t i = 0; i < path.size(); ++i)
    n.framePath.push_back(integer(path[i], fp[i], 0, "an outer node id (integer >= 0)"));
  n.id = integer(member(v, at, "id"), at / "id", 0, "an Apply id (integer >= 0)");
  n.body = integer(member(v, at, "body"), at / "body", 0, "an inner graph index (integer >= 0)");
  n.position =
      integer(member(v, at, "position"), at / "position", 0, "a schedule position (integer >= 0)");
  n.op = string(member(v, at, "op"), at / "op");
  n.opClass = string(member(v, at, "opClass"), at / "opClass");
  n.scope = string(member(v, at, "scope"), at / "scope");
  n.hasInnerGraph = boolean(member(v, at, "hasInnerGraph"), at / "hasInnerGraph");
  const Path ip = at / "inputShapes";
  const json& inputs = array(member(v, at, "inputShapes"), ip, "an array of shapes");
  for (std::size_t i = 0; i < inputs.size(); ++i) n.inputShapes.push_back(shape(inputs[i], ip[i]));
  const Path op = at / "outputs";
  const json& outputs = array(member(v, at, "outputs"), op, "an array of outputs");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Path o = op[i];
    object(outputs[i], o, "an output {\"shape\", \"dtype\", \"bytes\", \"kind\"}");
    OutputInfo info;
    info.shape = shape(member(outputs[i], o, "shape"), o / "shape");
    info.dtype = string(member(outputs[i], o, "dtype"), o / "dtype");
    info.bytes = bytes(member(outputs[i], o, "bytes"), o / "bytes");
    const json& kind = member(outputs[i], o, "kind");
    if (kind == "created")
      info.kind = OutputKind::Created;
    else if (kind == "inplace")
      info.kind = OutputKind::Inplace;
    else if (kind == "view")
      info.kind = OutputKind::View;
    else
      fail(o / "kind", "\"created\", \"inplace\" or \"view\"", kind);
    n.outputs.push_back(std::move(info));
  }
  n.calls = integer(member(v, at, "calls"), at / "calls", 0, "a call count (integer >= 0)");
  n.time = timeStats(member(v, at, "time"), at / "time");
  n.allocatedBytes = bytes(member(v, at, "allocatedBytes"), at / "allocatedBytes");
  n.freedBytes = bytes(member(v, at, "freedBytes"), at / "freedBytes");
  const Path cp = at / "cost";
  const json& cost = object(member(v, at, "cost"), cp, "a cost {\"flops\", \"bytesRead\", ...}");
  n.cost.flops = number(member(cost, cp, "flops"), cp / "flops", "a number of flops");
  n.cost.bytesRead = number(member(cost, cp, "bytesRead"), cp / "bytesRead", "a number of bytes");
  n.cost.bytesWritten =
      number(member(cost, cp, "bytesWritten"), cp / "bytesWritten", "a number of bytes");
  n.cost.known = boolean(member(cost, cp, "known"), cp / "known");
  n.gpuSeconds = seconds(member(v, at, "gpuSeconds"), at / "gpuSeconds");
  n.gpuKernels =
      integer(member(v, at, "gpuKernels"), at / "gpuKernels", 0, "a kernel count (integer >= 0)");
  // A loop node's per-iteration times (absent in files written before loops).
  if (v.contains("iterationSeconds")) {
    const Path ip = at / "iterationSeconds";
    const json& its = array(v["iterationSeconds"], ip, "an array of seconds per iteration");
    for (std::size_t i = 0; i < its.size(); ++i)
      n.iterationSeconds.push_back(seconds(its[i], ip[i]));
  }
  // The kernel's note (absent unless a kernel left one, and in files written before notes).
  if (v.contains("kernelNote")) n.kernelNote = string(v["kernelNote"], at / "kernelNote");
  return n;
}

}  // namespace

Profile profileFromJson(const json& value, const std::string& jsonPath) {
  const Path at{nullptr, &jsonPath, nullptr, 0};
  object(value, at, "a profile section {\"kind\": \"profile\", ...}");
  const json& kind = member(value, at, "kind");
  if (kind != "profile") fail(at / "kind", "\"profile\"", kind);
  const json& schema = member(value, at, "schema");
  if (!schema.is_number_integer() || schema.get<std::int64_t>() != Profile::kSchemaVersion)
    fail(at / "schema",
         "schema " + std::to_string(Profile::kSchemaVersion) +
             " (a profile written by a newer Tensorscope cannot be read by this one)",
         schema);
  Profile p;
  p.graph = string(member(value, at, "graph"), at / "graph");
  if (p.graph != "original" && p.graph != "optimized")
    fail(at / "graph", "\"original\" or \"optimized\"", value["graph"]);
  p.name = string(member(value, at, "name"), at / "name");
  p.date = string(member(value, at, "date"), at / "date");
  const Path mp = at / "machine";
  const json& machine = object(member(value, at, "machine"), mp, "a machine {\"host\", ...}");
  p.machine.host = string(member(machine, mp, "host"), mp / "host");
  p.machine.cpu = string(member(machine, mp, "cpu"), mp / "cpu");
  p.machine.threads =
      integer(member(machine, mp, "threads"), mp / "threads", 0, "a thread count (integer >= 0)");

  const Path fpath = at / "function";
  const json& f = object(member(value, at, "function"), fpath, "a function summary object");
  FunctionSummary& s = p.function;
  s.mode = string(member(f, fpath, "mode"), fpath / "mode");
  s.device = string(member(f, fpath, "device"), fpath / "device");
  if (s.device != "cpu" && s.device != "cuda")
    fail(fpath / "device", "\"cpu\" or \"cuda\"", f["device"]);
  s.warmupRuns = integer(member(f, fpath, "warmupRuns"), fpath / "warmupRuns", 0,
                         "a run count (integer >= 0)");
  s.measuredRuns = integer(member(f, fpath, "measuredRuns"), fpath / "measuredRuns", 0,
                           "a run count (integer >= 0)");
  s.call = timeStats(member(f, fpath, "call"), fpath / "call");
  s.inNodes = timeStats(member(f, fpath, "inNodes"), fpath / "inNodes");
  s.overhead = timeStats(member(f, fpath, "overhead"), fpath / "overhead");
  s.compileSeconds = seconds(member(f, fpath, "compileSeconds"), fpath / "compileSeconds");
  const Path cpp = fpath / "compilePhases";
  const json& phases = array(member(f, fpath, "compilePhases"), cpp, "an array of phases");
  for (std::size_t i = 0; i < phases.size(); ++i) {
    object(phases[i], cpp[i], "a phase {\"name\", \"seconds\"}");
    s.compilePhases.push_back({string(member(phases[i], cpp[i], "name"), cpp[i] / "name"),
                               seconds(member(phases[i], cpp[i], "seconds"), cpp[i] / "seconds")});
  }
  s.applyCount = integer(member(f, fpath, "applyCount"), fpath / "applyCount", 0,
                         "a node count (integer >= 0)");
  s.innerApplyCount = integer(member(f, fpath, "innerApplyCount"), fpath / "innerApplyCount", 0,
                              "a node count (integer >= 0)");
  if (auto t = f.find("threads"); t != f.end())
    s.threads = integer(*t, fpath / "threads", 0, "a thread count (integer >= 0)");

  const Path np = at / "nodes";
  const json& nodes = array(member(value, at, "nodes"), np, "an array of node profiles");
  p.nodes.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) p.nodes.push_back(node(nodes[i], np[i]));

  const Path mem = at / "memory";
  const json& m = object(member(value, at, "memory"), mem, "a memory summary object");
  p.memory.peakLiveBytes = bytes(member(m, mem, "peakLiveBytes"), mem / "peakLiveBytes");
  p.memory.planPeakBytes = bytes(member(m, mem, "planPeakBytes"), mem / "planPeakBytes");
  p.memory.peakWithoutInplace =
      bytes(member(m, mem, "peakWithoutInplace"), mem / "peakWithoutInplace");
  p.memory.peakWithoutFreeing =
      bytes(member(m, mem, "peakWithoutFreeing"), mem / "peakWithoutFreeing");

  const Path rpp = at / "rewritePhases";
  const json& rp = array(member(value, at, "rewritePhases"), rpp, "an array of rewrite phases");
  for (std::size_t i = 0; i < rp.size(); ++i) {
    const Path e = rpp[i];
    object(rp[i], e, "a rewrite phase object");
    RewritePhaseRow r;
    r.name = string(member(rp[i], e, "name"), e / "name");
    r.seconds = seconds(member(rp[i], e, "seconds"), e / "seconds");
    r.nodesBefore = integer(member(rp[i], e, "nodesBefore"), e / "nodesBefore", 0, "a node count");
    r.nodesAfter = integer(member(rp[i], e, "nodesAfter"), e / "nodesAfter", 0, "a node count");
    r.changes = integer(member(rp[i], e, "changes"), e / "changes", 0, "a change count");
    p.rewritePhases.push_back(std::move(r));
  }
  const Path rwp = at / "rewriters";
  const json& rw = array(member(value, at, "rewriters"), rwp, "an array of rewriters");
  for (std::size_t i = 0; i < rw.size(); ++i) {
    const Path e = rwp[i];
    object(rw[i], e, "a rewriter object");
    RewriterRow r;
    r.name = string(member(rw[i], e, "name"), e / "name");
    r.phase = string(member(rw[i], e, "phase"), e / "phase");
    r.tried = integer(member(rw[i], e, "tried"), e / "tried", 0, "a count (integer >= 0)");
    r.applied = integer(member(rw[i], e, "applied"), e / "applied", 0, "a count (integer >= 0)");
    r.refused = integer(member(rw[i], e, "refused"), e / "refused", 0, "a count (integer >= 0)");
    r.seconds = seconds(member(rw[i], e, "seconds"), e / "seconds");
    p.rewriters.push_back(std::move(r));
  }
  if (auto c = value.find("calibration"); c != value.end()) {
    object(*c, at / "calibration", "the machine's calibration (an object)");
    p.calibration = *c;
  }
  const Path cap = at / "capture";
  const json& c = object(member(value, at, "capture"), cap, "a capture object");
  p.capture.maxEvents = integer(member(c, cap, "maxEvents"), cap / "maxEvents", 0, "a count");
  p.capture.keptEvents = integer(member(c, cap, "keptEvents"), cap / "keptEvents", 0, "a count");
  p.capture.droppedEvents =
      integer(member(c, cap, "droppedEvents"), cap / "droppedEvents", 0, "a count");
  p.originNs = integer(member(value, at, "originNs"), at / "originNs",
                       std::numeric_limits<std::int64_t>::min(), "nanoseconds (an integer)");

  const Path rsp = at / "runs";
  const json& runs = array(member(value, at, "runs"), rsp, "an array of [run, startNs, endNs]");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Path e = rsp[i];
    if (!runs[i].is_array() || runs[i].size() != 3) fail(e, "[run, startNs, endNs]", runs[i]);
    RunSpan r;
    r.run = index32(runs[i][0], e[0], "a run index (integer >= 0)");
    r.startNs = integer(runs[i][1], e[1], std::numeric_limits<std::int64_t>::min(), "nanoseconds");
    r.endNs = integer(runs[i][2], e[2], r.startNs, "nanoseconds (>= the run's start)");
    p.runs.push_back(r);
  }
  const Path evp = at / "events";
  const json& events = array(member(value, at, "events"), evp,
                             "an array of [run, node, thread, startNs, endNs, liveBytes]");
  p.events.reserve(events.size());
  const auto nNodes = static_cast<std::int64_t>(p.nodes.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& ev = events[i];
    const Path e = evp[i];
    if (!ev.is_array() || ev.size() != 6)
      fail(e, "[run, node, thread, startNs, endNs, liveBytes]", ev);
    NodeEventRecord r;
    r.run = index32(ev[0], e[0], "a run index (integer >= 0)");
    r.node = static_cast<std::int32_t>(integer(ev[1], e[1], 0, "an index into \"nodes\""));
    if (r.node >= nNodes)
      fail(e[1], "an index into \"nodes\" (< " + std::to_string(nNodes) + ")", ev[1]);
    r.thread = index32(ev[2], e[2], "a thread number (integer >= 0)");
    r.startNs = integer(ev[3], e[3], std::numeric_limits<std::int64_t>::min(), "nanoseconds");
    r.endNs = integer(ev[4], e[4], r.startNs, "nanoseconds (>= the event's start)");
    r.liveBytes = integer(ev[5], e[5], std::numeric_limits<std::int64_t>::min(), "bytes");
    p.events.push_back(r);
  }
  if (auto g = value.find("gpu"); g != value.end()) {
    const Path gp = at / "gpu";
    object(*g, gp, "a GPU summary object");
    GpuSummary s;
    s.source = string(member(*g, gp, "source"), gp / "source");
    s.kernels = integer(member(*g, gp, "kernels"), gp / "kernels", 0, "a count");
    s.memcpys = integer(member(*g, gp, "memcpys"), gp / "memcpys", 0, "a count");
    s.memsets = integer(member(*g, gp, "memsets"), gp / "memsets", 0, "a count");
    s.unattributed = integer(member(*g, gp, "unattributed"), gp / "unattributed", 0, "a count");
    s.dropped = integer(member(*g, gp, "dropped"), gp / "dropped", 0, "a count");
    s.invalidTimestamps =
        integer(member(*g, gp, "invalidTimestamps"), gp / "invalidTimestamps", 0, "a count");
    s.unattributedSeconds =
        seconds(member(*g, gp, "unattributedSeconds"), gp / "unattributedSeconds");
    p.gpu = std::move(s);
    const Path gep = at / "gpuEvents";
    const json& ge = array(member(value, at, "gpuEvents"), gep,
                           "an array of [kind, run, node, name, device, stream, startNs, endNs, "
                           "bytes]");
    for (std::size_t i = 0; i < ge.size(); ++i) {
      const json& ev = ge[i];
      const Path e = gep[i];
      if (!ev.is_array() || ev.size() != 9)
        fail(e, "[kind, run, node, name, device, stream, startNs, endNs, bytes]", ev);
      GpuEventRecord r;
      const std::string kind = string(ev[0], e[0]);
      if (kind == "kernel")
        r.kind = GpuEventRecord::Kind::Kernel;
      else if (kind == "memcpy")
        r.kind = GpuEventRecord::Kind::Memcpy;
      else if (kind == "memset")
        r.kind = GpuEventRecord::Kind::Memset;
      else
        fail(e[0], "\"kernel\", \"memcpy\" or \"memset\"", ev[0]);
      r.run = index32(ev[1], e[1], "a run index (integer >= 0)");
      const std::int64_t node = integer(ev[2], e[2], -1, "an index into \"nodes\" or -1");
      if (node >= nNodes)
        fail(e[2], "an index into \"nodes\" (< " + std::to_string(nNodes) + ") or -1", ev[2]);
      r.node = static_cast<std::int32_t>(node);
      r.name = string(ev[3], e[3]);
      r.device = index32(ev[4], e[4], "a device number (integer >= 0)");
      r.stream = index32(ev[5], e[5], "a stream number (integer >= 0)");
      r.startNs = integer(ev[6], e[6], std::numeric_limits<std::int64_t>::min(), "nanoseconds");
      r.endNs = integer(ev[7], e[7], r.startNs, "nanoseconds (>= the record's start)");
      r.bytes = integer(ev[8], e[8], 0, "bytes (integer >= 0)");
      p.gpuEvents.push_back(std::move(r));
    }
  }
  return p;
}

}  // namespace tscope::prof
