// The profile section of a .tsg (profiling/profile_io.h): save -> load gives an equal Profile
// (doubles exactly, through the text too), a real profile round-trips, malformed sections are
// refused with the JSON path of what does not fit, and firstNodeTimes reads a full profile's
// top-level mean times (what `tensorscope export --heatmap` colours a graph with).
#include "engine/compile/function.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "profile_test_support.h"
#include "profiling/profile_io.h"
#include "profiling/profile_record.h"
#include "profiling/profile_run.h"
#include "test_main.h"

using namespace tscope;
using nlohmann::json;

namespace {

// The message of the ProfileError that loading `value` throws ("" when it loads).
std::string refusal(const json& value) {
  try {
    prof::profileFromJson(value, "/profiles/1");
  } catch (const prof::ProfileError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class TestProfileIo : public QObject {
  Q_OBJECT

 private slots:
  void testRoundTripIsExact() {
    const prof::Profile p = prof::testing::syntheticProfile();
    const json j = prof::profileToJson(p);
    QVERIFY(prof::isProfileJson(j));
    QCOMPARE(j["kind"], json("profile"));
    QCOMPARE(j["schema"], json(1));
    QCOMPARE(prof::profileFromJson(j, "/profiles/0"), p);
    // Through the text, as a .tsg stores it.
    const json back = json::parse(j.dump());
    QCOMPARE(prof::profileFromJson(back, "/profiles/0"), p);
    QCOMPARE(prof::profileToJson(prof::profileFromJson(back, "/profiles/0")).dump(), j.dump());
  }

  void testKernelNoteRoundTrips() {
    // Written only when set (older files and graphs without such kernels are unchanged), read
    // back exactly.
    prof::Profile p = prof::testing::syntheticProfile();
    QVERIFY(prof::profileToJson(p).dump().find("kernelNote") == std::string::npos);
    p.nodes[0].kernelNote = "cudnn bwd_filter ALGO_1 (guess_once, ws 512 B)";
    const json j = json::parse(prof::profileToJson(p).dump());
    QCOMPARE(j["nodes"][0]["kernelNote"], json(p.nodes[0].kernelNote));
    QCOMPARE(prof::profileFromJson(j, "/profiles/0"), p);
    json bad = j;
    bad["nodes"][0]["kernelNote"] = 3;
    QVERIFY(!refusal(bad).empty());
  }

  void testRealProfileRoundTrips() {
    auto x = engine::Variable::create(engine::TensorType(engine::DType::Float32, {4}), "x");
    engine::Function f = engine::compile({x}, {engine::exp(x) * 2.0 + 1.0});
    prof::ProfileRunOptions o;
    o.runs = 3;
    prof::Profile p = prof::profileFunction(
        f, {engine::Tensor::fromDoubles(engine::DType::Float32, {4}, {1, 2, 3, 4})}, o);
    p.name = "chain";
    const json j = json::parse(prof::profileToJson(p).dump(2));
    QCOMPARE(prof::profileFromJson(j, "/profiles/0"), p);
  }

  void testThroughATsgFile() {
    // Saved in a .tsg next to its graph, read back by the .tsg reader: equal.
    auto x = engine::Variable::create(engine::TensorType(engine::DType::Float32, {4}), "x");
    const engine::VarPtr y = engine::exp(x) * 2.0;
    engine::Function f = engine::compile({x}, {y});
    const prof::Profile p = prof::profileFunction(
        f, {engine::Tensor::fromDoubles(engine::DType::Float32, {4}, {1, 2, 3, 4})});
    engine::io::TsgDocument doc;
    doc.original = std::make_unique<engine::FunctionGraph>(std::vector<engine::VarPtr>{x},
                                                           std::vector<engine::VarPtr>{y},
                                                           engine::FunctionGraph::Ownership::Clone);
    doc.profiles.push_back(prof::profileToJson(p));
    const engine::io::TsgDocument back = engine::io::readTsg(engine::io::writeTsg(doc));
    QCOMPARE(back.profiles.size(), std::size_t(1));
    QCOMPARE(prof::profileFromJson(back.profiles[0], "/profiles/0"), p);
  }

  void testNotAProfile() {
    QVERIFY(!prof::isProfileJson(json{{"kind", "time"}, {"nodes", json::array()}}));
    QVERIFY(!prof::isProfileJson(json::array()));
    QVERIFY(prof::isProfileJson(json{{"kind", "profile"}}));
  }

  void testMalformedSectionsNameTheirPath() {
    const json good = prof::profileToJson(prof::testing::syntheticProfile());
    QCOMPARE(refusal(good), std::string());
    struct Case {
      std::function<void(json&)> edit;
      std::string expected;  // the start of the message
    };
    const std::vector<Case> cases = {
        {[](json& j) { j = json::array(); }, "/profiles/1: expected a profile section"},
        {[](json& j) { j["schema"] = 2; }, "/profiles/1/schema: expected schema 1"},
        {[](json& j) { j.erase("nodes"); }, "/profiles/1: expected a member \"nodes\""},
        {[](json& j) { j["nodes"][3]["time"]["p95"] = "x"; },
         "/profiles/1/nodes/3/time/p95: expected a number of seconds (>= 0), found the string "
         "\"x\""},
        {[](json& j) { j["nodes"][0]["time"]["min"] = -1.0; },
         "/profiles/1/nodes/0/time/min: expected a number of seconds (>= 0), found -1.0"},
        {[](json& j) { j["nodes"][1]["time"]["median"] = 5.0; },
         "/profiles/1/nodes/1/time: expected min <= median <= p95 <= max"},
        {[](json& j) { j["nodes"][2]["outputs"][0]["kind"] = "borrowed"; },
         "/profiles/1/nodes/2/outputs/0/kind: expected \"created\", \"inplace\" or \"view\""},
        {[](json& j) { j["nodes"][4]["framePath"][0] = -3; },
         "/profiles/1/nodes/4/framePath/0: expected an outer node id (integer >= 0), found -3"},
        {[](json& j) { j["nodes"][0]["inputShapes"][0][1] = 1.5; },
         "/profiles/1/nodes/0/inputShapes/0/1: expected a size (integer >= 0), found 1.5"},
        {[](json& j) { j["function"]["device"] = "tpu"; },
         "/profiles/1/function/device: expected \"cpu\" or \"cuda\""},
        {[](json& j) { j["graph"] = "both"; },
         "/profiles/1/graph: expected \"original\" or \"optimized\""},
        {[](json& j) {
           j["events"][2] = json::array({0, 1});
         },
         "/profiles/1/events/2: expected [run, node, thread, startNs, endNs, liveBytes]"},
        {[](json& j) { j["events"][0][1] = 99; },
         "/profiles/1/events/0/1: expected an index into \"nodes\" (< 5), found 99"},
        {[](json& j) { j["events"][1][4] = 0; },
         "/profiles/1/events/1/4: expected nanoseconds (>= the event's start)"},
        {[](json& j) { j["runs"][0] = json::object(); },
         "/profiles/1/runs/0: expected [run, startNs, endNs], found an object"},
        {[](json& j) { j["memory"]["peakLiveBytes"] = -5; },
         "/profiles/1/memory/peakLiveBytes: expected a byte count (integer >= 0), found -5"},
        {[](json& j) { j["calibration"] = 3; },
         "/profiles/1/calibration: expected the machine's calibration (an object)"},
        {[](json& j) { j["rewriters"][0].erase("applied"); },
         "/profiles/1/rewriters/0: expected a member \"applied\""},
    };
    for (const Case& c : cases) {
      json bad = good;
      c.edit(bad);
      const std::string message = refusal(bad);
      if (message.rfind(c.expected, 0) != 0)
        QFAIL(("expected a message starting with\n  " + c.expected + "\nfound\n  " + message)
                  .c_str());
    }
  }

  void testFirstNodeTimesReadsAFullProfile() {
    const prof::Profile p = prof::testing::syntheticProfile();
    json profiles = json::array({json{{"kind", "rewrite"}}, prof::profileToJson(p)});
    const auto record = prof::firstNodeTimes(profiles, "optimized");
    QVERIFY(record.has_value());
    QCOMPARE(record->graph, std::optional<std::string>("optimized"));
    QCOMPARE(record->seconds, std::optional<double>(p.function.call.mean));
    // The top-level nodes with their mean time per run; inner nodes are in their caller's.
    QCOMPARE(record->nodes.size(), std::size_t(3));
    for (std::size_t k = 0; k < 3; ++k) {
      QCOMPARE(record->nodes[k].id, p.nodes[k].id);
      QCOMPARE(record->nodes[k].seconds, p.nodes[k].time.mean);
    }
    QVERIFY(!prof::firstNodeTimes(profiles, "original").has_value());
    // A malformed full profile is refused with its path, as a time record is.
    profiles[1]["nodes"][0]["calls"] = "many";
    try {
      prof::firstNodeTimes(profiles, "optimized");
      QFAIL("expected a ProfileError");
    } catch (const prof::ProfileError& e) {
      QVERIFY(std::string(e.what()).rfind("/profiles/1/nodes/0/calls: ", 0) == 0);
    }
  }
};

TSCOPE_TEST_MAIN(TestProfileIo)
#include "tst_profile_io.moc"
