// ProfileRecord, the per-node time profile a .tsg keeps: JSON round trip, the records a document's
// profiles array is searched for, and malformed records refused with their JSON path.

#include "profiling/profile_record.h"
#include "test_main.h"

using nlohmann::json;
using tscope::prof::firstNodeTimes;
using tscope::prof::NodeTime;
using tscope::prof::ProfileError;
using tscope::prof::ProfileRecord;

Q_DECLARE_METATYPE(json)
Q_DECLARE_METATYPE(ProfileRecord)

namespace {

// The message of the ProfileError that reading `value` at `path` throws; empty when none is thrown.
std::string refusal(const json& value, const std::string& path) {
  try {
    ProfileRecord::fromJson(value, path);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestProfileRecord : public QObject {
  Q_OBJECT

 private slots:
  void testRoundTrip_data() {
    QTest::addColumn<ProfileRecord>("record");
    ProfileRecord full;
    full.graph = "optimized";
    full.seconds = 0.25;
    full.nodes = {{3, 0.125}, {7, 0.0625}, {3, 0.03125}};
    QTest::newRow("graph, seconds, repeated id") << full;
    ProfileRecord bare;
    bare.nodes = {{0, 0}, {-1, 1e-9}};
    QTest::newRow("nodes only") << bare;
    QTest::newRow("no nodes") << ProfileRecord{};
  }
  void testRoundTrip() {
    QFETCH(ProfileRecord, record);
    const json written = record.toJson();
    QCOMPARE(written["kind"], json("time"));
    QVERIFY(ProfileRecord::recognises(written));
    // Through text too, as a .tsg file holds it.
    const ProfileRecord read = ProfileRecord::fromJson(json::parse(written.dump()), "/profiles/0");
    QVERIFY(read == record);
    QCOMPARE(read.toJson(), written);
  }

  // Files written before "kind" existed: a profile with "nodes" is read as one.
  void testRecordWithoutKind() {
    const json value = json::parse(
        R"({"graph": "original", "nodes": [{"id": 4, "seconds": 2}, {"id": 5, "seconds": 6}]})");
    QVERIFY(ProfileRecord::recognises(value));
    const ProfileRecord r = ProfileRecord::fromJson(value, "/profiles/1");
    QCOMPARE(r.graph, std::optional<std::string>("original"));
    QCOMPARE(r.nodes, (std::vector<NodeTime>{{4, 2}, {5, 6}}));
    QCOMPARE(r.totalSeconds(), 8.0);  // no call time: the sum of the nodes
    ProfileRecord timed = r;
    timed.seconds = 16;
    QCOMPARE(timed.totalSeconds(), 16.0);
  }

  void testRefusedWithJsonPath_data() {
    QTest::addColumn<json>("value");
    QTest::addColumn<QString>("message");
    auto row = [](const char* name, const char* text, const char* message) {
      QTest::newRow(name) << json::parse(text) << QString(message);
    };
    row("not an object", R"([1])", "/profiles/2: expected a profile object, found an array");
    row("kind", R"({"kind": "memory", "nodes": []})", "/profiles/2/kind: expected \"time\"");
    row("graph", R"({"graph": "both", "nodes": []})",
        "/profiles/2/graph: expected \"original\" or \"optimized\", found the string \"both\"");
    row("call seconds", R"({"seconds": -1, "nodes": []})",
        "/profiles/2/seconds: expected a number of seconds (>= 0), found -1");
    row("no nodes", R"({"graph": "original"})",
        "/profiles/2: a per-node time profile needs \"nodes\"");
    row("nodes not an array", R"({"nodes": {"id": 1}})", "/profiles/2/nodes: expected an array");
    row("entry not an object", R"({"nodes": [{"id": 1, "seconds": 1}, 5]})",
        "/profiles/2/nodes/1: expected {\"id\": integer");
    row("entry without id", R"({"nodes": [{"seconds": 1}]})",
        "/profiles/2/nodes/0: a node's time needs \"id\"");
    row("fractional id", R"({"nodes": [{"id": 1.5, "seconds": 1}]})",
        "/profiles/2/nodes/0/id: expected an integer Apply id, found 1.5");
    row("entry without seconds", R"({"nodes": [{"id": 1}]})",
        "/profiles/2/nodes/0: a node's time needs \"seconds\"");
    row("seconds a string",
        R"({"nodes": [{"id": 1, "seconds": 0.5}, {"id": 2, "seconds": "fast"}]})",
        "/profiles/2/nodes/1/seconds: expected a number of seconds (>= 0), found the string "
        "\"fast\"");
  }
  void testRefusedWithJsonPath() {
    QFETCH(json, value);
    QFETCH(QString, message);
    const std::string got = refusal(value, "/profiles/2");
    QVERIFY2(!got.empty(), "the malformed record was read");
    QVERIFY2(got.find(message.toStdString()) == 0, got.c_str());
  }

  // The first record with times of the wanted graph; records of other kinds are left alone; a
  // recognised record that does not fit is refused even when another one would do.
  void testFirstNodeTimes() {
    const json profiles = json::parse(R"([
      {"kind": "rewriter", "seconds": 1, "nodes_before": 10, "nodes_after": 5},
      {"kind": "time", "graph": "optimized", "nodes": [{"id": 1, "seconds": 1}]},
      {"kind": "time", "graph": "original", "nodes": []},
      {"kind": "time", "nodes": [{"id": 2, "seconds": 3}]},
      {"kind": "time", "graph": "original", "nodes": [{"id": 9, "seconds": 9}]}
    ])");
    const auto original = firstNodeTimes(profiles, "original");
    QVERIFY(original.has_value());
    QCOMPARE(original->nodes, (std::vector<NodeTime>{{2, 3}}));
    const auto optimized = firstNodeTimes(profiles, "optimized");
    QVERIFY(optimized.has_value());
    QCOMPARE(optimized->nodes, (std::vector<NodeTime>{{1, 1}}));
    QVERIFY(!firstNodeTimes(json::array(), "original").has_value());
    QVERIFY(!firstNodeTimes(json::parse(R"([{"kind": "rewriter"}])"), "original").has_value());

    json bad = profiles;
    bad.push_back(json::parse(R"({"nodes": [{"id": "x", "seconds": 1}]})"));
    try {
      firstNodeTimes(bad, "original");
      QFAIL("a malformed record was accepted");
    } catch (const ProfileError& e) {
      QVERIFY2(std::string(e.what()).find("/profiles/5/nodes/0/id: ") == 0, e.what());
    }
  }
};

TSCOPE_TEST_MAIN(TestProfileRecord)
#include "tst_profile_record.moc"
