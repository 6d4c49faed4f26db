// The Chrome trace (profiling/trace.h): every event has the fields Perfetto needs, slices nest on
// each track (no partial overlap), scope slices enclose the stretches of nodes that share a scope
// prefix, the runs option writes only the runs asked for (and refuses others), memory counters,
// the written file is the same document, and the bytes per event are bounded (what keeps a
// 1,000-run ResNet-18 trace under 100 MB; bench_profiler measures the real one).
#include "engine/compile/function.h"
#include "engine/graph/source_site.h"
#include "engine/ops/basic.h"
#include "engine/ops/graph/op_from_graph.h"
#include "profile_test_support.h"
#include "profiling/profile_run.h"
#include "profiling/trace.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

using namespace tscope;
using nlohmann::json;

namespace {

std::int64_t ns(const json& us) {
  return std::llround(us.get<double>() * 1000.0);
}

// Checks the fields of every event; returns the X slices per track as (start, end, name).
std::map<std::pair<int, int>, std::vector<std::tuple<std::int64_t, std::int64_t, std::string>>>
checkedSlices(const json& doc) {
  std::map<std::pair<int, int>, std::vector<std::tuple<std::int64_t, std::int64_t, std::string>>>
      tracks;
  [&] {
    QVERIFY(doc.contains("traceEvents") && doc["traceEvents"].is_array());
    QVERIFY(doc.contains("displayTimeUnit"));
    for (const json& e : doc["traceEvents"]) {
      QVERIFY(e.is_object());
      for (const char* key : {"ph", "name", "pid", "tid"}) QVERIFY2(e.contains(key), key);
      QVERIFY(e["pid"].is_number_integer() && e["tid"].is_number_integer());
      const std::string ph = e["ph"];
      QVERIFY(ph == "X" || ph == "M" || ph == "C");
      if (ph == "M") {
        QVERIFY(e["args"].contains("name") || e["args"].contains("sort_index"));
        continue;
      }
      QVERIFY(e["ts"].is_number() && e["ts"].get<double>() >= 0);
      // Three decimals at most: nanosecond resolution.
      const double us = e["ts"].get<double>();
      QVERIFY(std::abs(us * 1000.0 - std::round(us * 1000.0)) < 1e-3);
      if (ph == "C") {
        QVERIFY(e["args"].contains("bytes"));
        continue;
      }
      QVERIFY(e["dur"].is_number() && e["dur"].get<double>() >= 0);
      QVERIFY(e.contains("cat") && e["args"].is_object());
      tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(
          ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"].get<std::string>());
    }
  }();
  return tracks;
}

// Slices on one track nest: any two are disjoint or one contains the other.
bool nests(const std::vector<std::tuple<std::int64_t, std::int64_t, std::string>>& slices) {
  for (std::size_t a = 0; a < slices.size(); ++a)
    for (std::size_t b = a + 1; b < slices.size(); ++b) {
      const auto [s1, e1, n1] = slices[a];
      const auto [s2, e2, n2] = slices[b];
      const bool disjoint = e1 <= s2 || e2 <= s1;
      const bool contains = (s1 <= s2 && e2 <= e1) || (s2 <= s1 && e1 <= e2);
      if (!disjoint && !contains) {
        qWarning("partial overlap: %s [%lld, %lld] and %s [%lld, %lld]", n1.c_str(),
                 static_cast<long long>(s1), static_cast<long long>(e1), n2.c_str(),
                 static_cast<long long>(s2), static_cast<long long>(e2));
        return false;
      }
    }
  return true;
}

}  // namespace

class TestTrace : public QObject {
  Q_OBJECT

 private slots:
  void testStructure() {
    const prof::Profile p = prof::testing::syntheticProfile();
    const json doc = prof::chromeTrace(p);
    const auto tracks = checkedSlices(doc);
    QCOMPARE(tracks.size(), std::size_t(2));  // threads 0 and 1 of the CPU process
    for (const auto& [track, slices] : tracks) QVERIFY(nests(slices));
    // The main track per run: the run, scopes enc, enc/l1, dec (and dec/block has no top-level
    // node), the five node slices.
    std::map<std::string, int> names;
    for (const auto& [s, e, name] : tracks.at({1, 1})) ++names[name];
    QCOMPARE(names["run 0"], 1);
    QCOMPARE(names["run 1"], 1);
    QCOMPARE(names["enc"], 2);
    QCOMPARE(names["enc/l1"], 2);
    QCOMPARE(names["dec"], 2);
    QCOMPARE(names["Elemwise{exp}"], 4);
    QCOMPARE(names["OpFromGraph{block}"], 2);
    QCOMPARE(names["Elemwise{tanh}"], 4);
    // "enc/l1" spans nodes 0 and 1 of run 0: from 1000 ns to 202000 ns.
    bool found = false;
    for (const auto& [s, e, name] : tracks.at({1, 1}))
      if (name == "enc/l1" && s == 1000 && e == 202000) found = true;
    QVERIFY(found);
    // Node args and process/thread names.
    bool processNamed = false, threadNamed = false, nodeArgs = false;
    int counters = 0;
    for (const json& e : doc["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "CPU")
        processNamed = true;
      if (e["ph"] == "M" && e["name"] == "thread_name") threadNamed = true;
      if (e["ph"] == "C") ++counters;
      if (e["ph"] == "X" && e["name"] == "Elemwise{tanh}") {
        QCOMPARE(e["args"]["framePath"], json::array({12}));
        QCOMPARE(e["args"]["scope"], json("dec/block"));
      }
      if (e["ph"] == "X" && e["name"] == "Elemwise{exp}" && e["tid"] == 1) {
        QCOMPARE(e["args"]["inputs"], json::array({"(128, 784)", "()"}));
        QVERIFY(e["args"].contains("node") && e["args"].contains("run"));
        nodeArgs = true;
      }
    }
    QVERIFY(processNamed && threadNamed && nodeArgs);
    QCOMPARE(counters, 12);  // one per event (memory was measured)
    QCOMPARE(doc["otherData"]["droppedEvents"], json(0));
  }

  void testRealProfileNests() {
    // Scoped nodes and an OpFromGraph frame, timed by the VM: the slices nest on the track.
    using namespace tscope::engine;
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "x");
    auto a = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "a");
    auto body = opFromGraph({a}, {exp(a) * 2.0}, "body");
    VarPtr y;
    {
      NameScope enc("enc");
      VarPtr h;
      {
        NameScope l1("l1");
        h = tanh(x) + 1.0;
      }
      y = (*body)({h}) * 3.0;
    }
    y = y - 1.0;
    Function f = compile({x}, {y});
    prof::ProfileRunOptions o;
    o.runs = 4;
    const prof::Profile p =
        prof::profileFunction(f, {Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3})}, o);
    const json doc = prof::chromeTrace(p);
    const auto tracks = checkedSlices(doc);
    QCOMPARE(tracks.size(), std::size_t(1));
    const auto& slices = tracks.begin()->second;
    QVERIFY(nests(slices));
    std::map<std::string, int> names;
    for (const auto& [s, e, name] : slices) ++names[name];
    QCOMPARE(names["run 3"], 1);
    QCOMPARE(names["enc"], 4);     // one stretch per run: the l1 nodes, the frame, the product
    QCOMPARE(names["enc/l1"], 4);  // tanh and + 1
    QCOMPARE(names["Elemwise{tanh}"], 4);
  }

  void testRunsOption() {
    const prof::Profile p = prof::testing::syntheticProfile(5);
    prof::TraceOptions o;
    o.runs = {1, 3};
    o.memoryCounters = false;
    const json doc = prof::chromeTrace(p, o);
    std::set<int> runs;
    for (const json& e : doc["traceEvents"]) {
      QVERIFY(e["ph"] != "C");
      if (e["ph"] == "X") runs.insert(e["args"]["run"].get<int>());
    }
    QCOMPARE(runs, (std::set<int>{1, 3}));
    for (const auto& [track, slices] : checkedSlices(doc)) QVERIFY(nests(slices));
    o.runs = {7};
    try {
      prof::chromeTrace(p, o);
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      QVERIFY(std::string(e.what()).find("run 7 is not in the profile (it kept runs 0 to 4)") !=
              std::string::npos);
    }
  }

  void testWrittenFileIsTheDocument() {
    const prof::Profile p = prof::testing::syntheticProfile();
    QTemporaryDir dir;
    const std::string path = dir.filePath("trace.json").toStdString();
    prof::writeChromeTrace(p, path);
    std::ifstream in(path);
    const json read = json::parse(in);
    QCOMPARE(read, prof::chromeTrace(p));
    // A folder that does not exist: a clear error naming the path, nothing left behind.
    const std::string bad = dir.filePath("missing/trace.json").toStdString();
    try {
      prof::writeChromeTrace(p, bad);
      QFAIL("expected std::runtime_error");
    } catch (const std::runtime_error& e) {
      QVERIFY(std::string(e.what()).find("writing the trace " + bad + " failed") == 0);
    }
  }

  void testBytesPerEventAreBounded() {
    // 200 runs of the synthetic profile: the document grows linearly, under 400 bytes per node
    // event (slice + counter + its share of scope and run slices). ResNet-18 fast_run runs about
    // 50 nodes: 1,000 runs x 50 x 400 B = 20 MB, well under 100 MB.
    const prof::Profile p = prof::testing::syntheticProfile(200);
    const std::size_t bytes = prof::chromeTrace(p).dump().size();
    const double perEvent = static_cast<double>(bytes) / static_cast<double>(p.events.size());
    qInfo("%.1f bytes per node event", perEvent);
    QVERIFY(perEvent < 400);
  }
};

TSCOPE_TEST_MAIN(TestTrace)
#include "tst_trace.moc"
