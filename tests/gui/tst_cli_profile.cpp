// The profiler from the command line: `tensorscope profile` (the report's tables, --json,
// --memory, --sort, --trace with --trace-runs, -o and what it stores, --compare-modes through the
// rewrite log, --compare-threads), `tensorscope diff-profile` on saved profiles, `tensorscope
// calibrate` and the roofline columns it enables, and the clear one-line errors of bad command
// lines.

#include "cli_test_support.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/io/tsg.h"
#include "gui_test_main.h"

#include <QTemporaryDir>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

using namespace tscope;
using test::cli;

namespace {

const std::string kMlp = std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/mlp.tsg";
const std::string kScoped = std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/scoped_model.tsg";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

class TestCliProfile : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    // The calibration cache of these tests lives in a folder of their own.
    QVERIFY(m_cache.isValid());
    qputenv("TSCOPE_CACHE_DIR", m_cache.path().toUtf8());
  }

  void reportHasEveryTable() {
    const auto r = cli({"profile", kMlp, "--runs", "3", "--no-roofline", "--memory"});
    QVERIFY2(r.code == 0, r.err.c_str());
    for (const char* part :
         {"Function profile: mlp.tsg", "mode fast_run", "3 measured calls", "\nClass\n", "\nOps",
          "\nApply", "\nScopes", "\nMemory\n", "peak with the current plan", "\nRewrites\n", "Dot"})
      QVERIFY2(has(r.out, part), (std::string(part) + "\n" + r.out).c_str());
  }

  void jsonHasEveryRow() {
    const auto r = cli({"profile", kScoped, "--runs", "2", "--warmup", "0", "--json",
                        "--no-roofline", "--sort", "p95"});
    QVERIFY2(r.code == 0, r.err.c_str());
    const nlohmann::json j = nlohmann::json::parse(r.out);
    QCOMPARE(j["schema"].get<int>(), 1);
    QCOMPARE(j["function"]["measured_runs"].get<int>(), 2);
    QCOMPARE(j["function"]["warmup_runs"].get<int>(), 0);
    QVERIFY(j["applies"].size() > 10);
    for (std::size_t i = 1; i < j["applies"].size(); ++i)
      QVERIFY(j["applies"][i - 1]["p95"].get<double>() >= j["applies"][i]["p95"].get<double>());
    // The scoped model's module tree: the root and its blocks.
    bool block = false;
    for (const auto& s : j["scopes"])
      block |= s["path"].get<std::string>().find("block1") != std::string::npos;
    QVERIFY(block);
  }

  void traceAndSavedProfile() {
    QTemporaryDir dir;
    const std::string trace = dir.filePath("t.json").toStdString();
    const std::string saved = dir.filePath("p.tsg").toStdString();
    const auto r = cli({"profile", kMlp, "--runs", "3", "--no-roofline", "--trace", trace,
                        "--trace-runs", "0,2", "-o", saved});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(has(r.out, "wrote " + trace), r.out.c_str());
    const nlohmann::json t = readJson(trace);
    QVERIFY(t.contains("traceEvents") && t["traceEvents"].size() > 10);
    std::set<int> runs;
    for (const auto& e : t["traceEvents"])
      if (e.contains("args") && e["args"].contains("run")) runs.insert(e["args"]["run"].get<int>());
    QCOMPARE(runs, (std::set<int>{0, 2}));
    // The saved file holds the profiled (optimized) graph and its profile.
    const engine::io::TsgDocument doc = engine::io::loadTsg(saved);
    QVERIFY(doc.optimized);
    bool profile = false;
    for (const auto& p : doc.profiles) profile |= p.value("kind", "") == "profile";
    QVERIFY(profile);
    // A second profile of it compares with the first.
    const std::string saved2 = dir.filePath("p2.tsg").toStdString();
    QCOMPARE(cli({"profile", kMlp, "--runs", "2", "--no-roofline", "-o", saved2}).code, 0);
    const auto d = cli({"diff-profile", saved, saved2});
    QVERIFY2(d.code == 0, d.err.c_str());
    QVERIFY2(has(d.out, "Profile diff: A = p.tsg (fast_run), B = p2.tsg (fast_run)"),
             d.out.c_str());
    const auto dj = cli({"diff-profile", saved, saved2, "--json"});
    QCOMPARE(dj.code, 0);
    QVERIFY(nlohmann::json::parse(dj.out)["rows"].size() > 5);
    // The heat-map export colours the graph with the saved full profile.
    const std::string svg = dir.filePath("heat.svg").toStdString();
    const auto e = cli({"export", saved, "-o", svg, "--graph", "optimized", "--heatmap"});
    QVERIFY2(e.code == 0, e.err.c_str());
  }

  void compareModesRelatesFusedNodes() {
    const auto r =
        cli({"profile", kMlp, "--runs", "2", "--no-roofline", "--compare-modes", "none,fast_run"});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(has(r.out, "Profile diff: A = none, B = fast_run"), r.out.c_str());
    // The optimizer fuses the MLP's elementwise chains: a row has several nodes before and the
    // Composite after.
    QVERIFY2(has(r.out, "-> Composite"), r.out.c_str());
  }

  // Each node on one thread and on two: one row per node (the same graph both times), labelled
  // with the counts.
  void compareThreadsRowPerNode() {
    const auto r = cli(
        {"profile", kMlp, "--runs", "2", "--no-roofline", "--compare-threads", "1,2", "--json"});
    QVERIFY2(r.code == 0, r.err.c_str());
    const nlohmann::json j = nlohmann::json::parse(r.out);
    QCOMPARE(j["a"].get<std::string>(), std::string("1 thread"));
    QCOMPARE(j["b"].get<std::string>(), std::string("2 threads"));
    QCOMPARE(j["nodes_a"].size(), j["nodes_b"].size());
    for (const auto& row : j["rows"]) {
      QCOMPARE(row["nodes_a"].size(), std::size_t(1));
      QCOMPARE(row["nodes_b"].size(), std::size_t(1));
    }
    const auto bad = cli({"profile", kMlp, "--compare-threads", "1,x"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(has(bad.err, "--compare-threads expects two thread counts A,B of at least 1"),
             bad.err.c_str());
    const auto both = cli({"profile", kMlp, "--compare-threads", "1,2", "--threads", "2"});
    QCOMPARE(both.code, 2);
  }

  void calibrateEnablesTheRoofline() {
    const auto c = cli({"calibrate", "--json"});
    QVERIFY2(c.code == 0, c.err.c_str());
    const nlohmann::json j = nlohmann::json::parse(c.out);
    QVERIFY(j["gemm_gflops_one"].get<double>() > 0);
    const auto r = cli({"profile", kMlp, "--runs", "2", "--json"});
    QVERIFY2(r.code == 0, r.err.c_str());
    const nlohmann::json p = nlohmann::json::parse(r.out);
    bool roof = false;
    for (const auto& a : p["applies"])
      if (a["roofline"].is_object()) roof |= a["roofline"]["fraction"].get<double>() > 0;
    QVERIFY2(roof, "a Dot of the MLP has a known cost and a roofline fraction");
    const auto t = cli({"profile", kMlp, "--runs", "2"});
    QVERIFY2(has(t.out, "% roof"), t.out.c_str());
  }

  void badCommandLines() {
    QTemporaryDir dir;
    struct Case {
      std::vector<std::string> args;
      int code;
      const char* message;
    };
    std::vector<Case> cases = {
        {{"profile", kMlp, "--device", "tpu"}, 2, "--device expects cpu or cuda, found 'tpu'"},
        {{"run", kMlp, "--device", "tpu"}, 2, "--device expects cpu or cuda, found 'tpu'"},
        {{"debug", kMlp, "--device", "tpu"}, 2, "--device expects cpu or cuda, found 'tpu'"},
        {{"profile", kMlp, "--runs", "0"}, 2, "--runs expects an integer >= 1, found '0'"},
        {{"profile", kMlp, "--sort", "fastest"}, 2, "--sort expects total, mean, p95 or calls"},
        {{"profile", kMlp, "--runs", "3", "--trace", dir.filePath("t.json").toStdString(),
          "--trace-runs", "3"},
         2,
         "--trace-runs expects measured run numbers from 0 to 2, found '3'"},
        {{"profile", kMlp, "--trace-runs", "0"}, 2, "give --trace"},
        {{"profile", kMlp, "--compare-modes", "none"}, 2, "expects two modes"},
        {{"profile", kMlp, "--compare-modes", "none,turbo"}, 2, "found 'turbo'"},
        {{"profile", kMlp, "-o", dir.filePath("x.json").toStdString()}, 2, "-o expects a .tsg"},
        {{"diff-profile", kMlp}, 2, "expected two FILEs, found 1"},
        {{"diff-profile", kMlp, kMlp}, 1, "holds no profile"},
        {{"calibrate", kMlp}, 2, "expected no FILE, found 1"},
    };
    // --device cuda without a GPU: one line, exit 6 with the CUDA backend built (issue 22), 1
    // without it.
    const engine::cuda::CudaStatus cuda = engine::cuda::cudaStatus();
    if (!cuda.deviceFound) {
      const int code = cuda.built ? 6 : 1;
      const char* message = cuda.built ? "tensorscope: no CUDA device: " : "no CUDA backend";
      cases.push_back({{"profile", kMlp, "--device", "cuda"}, code, message});
      cases.push_back({{"run", kMlp, "--device", "cuda", "--random-inputs", "0", "--output-dir",
                        dir.path().toStdString()},
                       code,
                       message});
      // The debugger's session and a run with breakpoints compile for the device too.
      cases.push_back({{"debug", kMlp, "--device", "cuda"}, code, message});
      cases.push_back({{"run", kMlp, "--device", "cuda", "--break", "var:loss", "--random-inputs",
                        "0", "--output-dir", dir.path().toStdString()},
                       code,
                       message});
    }
    for (const Case& c : cases) {
      const auto r = cli(c.args);
      std::string all;
      for (const auto& a : c.args) all += a + " ";
      QVERIFY2(r.code == c.code, (all + "-> " + std::to_string(r.code) + ": " + r.err).c_str());
      QVERIFY2(has(r.err, c.message), (all + "-> " + r.err).c_str());
      QVERIFY2(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err.c_str());
    }
  }

 private:
  QTemporaryDir m_cache;
};

TSCOPE_GUI_TEST_MAIN(TestCliProfile)
#include "tst_cli_profile.moc"
