// Replaying the optimizer step by step: replay k reproduces the first k records of the log, each
// step's graph is the previous one minus the record's removed nodes plus its added ones, the end
// of the replay is the saved optimized graph, and a log the optimizer cannot reproduce is refused.

#include "engine/graph/function_graph.h"
#include "engine/io/tsg.h"
#include "engine/session/optimize_graph.h"
#include "engine/session/replay_rewrites.h"
#include "test_main.h"

#include <algorithm>
#include <limits>
#include <set>

using namespace tscope::engine;
using session::replayRewrites;
using session::sameChange;

namespace {

constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();

// Every node in topological order with its op, inputs and outputs (ids and types), then the
// graph's inputs and outputs: equal strings mean the same graph with the same ids.
std::string structure(const FunctionGraph& fg) {
  std::string s;
  for (const Apply* a : fg.toposort()) {
    s += a->op().str() + "#" + std::to_string(a->id()) + "(";
    for (const auto& in : a->inputs()) s += std::to_string(in->id()) + ",";
    s += ")->";
    for (int o = 0; o < a->nOutputs(); ++o)
      s += std::to_string(a->outputRef(o).id()) + a->outputRef(o).type().str();
    s += "\n";
  }
  for (const auto& in : fg.inputs()) s += "in " + std::to_string(in->id()) + "\n";
  for (const auto& out : fg.outputs()) s += "out " + std::to_string(out->id()) + "\n";
  return s;
}

std::set<std::int64_t> nodeIds(const FunctionGraph& fg) {
  std::set<std::int64_t> ids;
  for (const Apply* a : fg.nodes()) ids.insert(a->id());
  return ids;
}

// mlp.tsg optimized with `query`, written and read back (as the GUI sees a saved file).
io::TsgDocument optimizedMlp(const RewriteQuery& query) {
  io::TsgDocument doc =
      io::loadTsg(std::filesystem::path(TSCOPE_SOURCE_DIR) / "examples/graphs/mlp.tsg");
  session::optimizeDocument(doc, query);
  return io::readTsg(io::writeTsg(doc), "mlp-optimized");
}

}  // namespace

class TestReplayRewrites : public QObject {
  Q_OBJECT

 private slots:
  void testEveryStepReproducesTheLog_data() {
    QTest::addColumn<QString>("mode");
    QTest::newRow("fast_run") << "fast_run";
    QTest::newRow("fast_compile") << "fast_compile";
  }

  void testEveryStepReproducesTheLog() {
    QFETCH(QString, mode);
    const io::TsgDocument doc = optimizedMlp(RewriteQuery::forMode(mode.toStdString()));
    const std::vector<RewriteRecord>& log = doc.rewrites;
    QVERIFY2(log.size() >= 3, "mlp.tsg should need several rewrites");
    std::unique_ptr<FunctionGraph> previous =
        replayRewrites(*doc.original, RewriteQuery::forMode(mode.toStdString()), 0);
    QCOMPARE(structure(*previous), structure(*doc.original));
    for (std::size_t k = 1; k <= log.size(); ++k) {
      std::vector<RewriteRecord> replayed;
      std::unique_ptr<FunctionGraph> g =
          replayRewrites(*doc.original, RewriteQuery::forMode(mode.toStdString()), k, &replayed);
      g->checkIntegrity();
      QCOMPARE(replayed.size(), k);
      for (std::size_t i = 0; i < k; ++i)
        QVERIFY2(sameChange(replayed[i], log[i]),
                 qPrintable(QString("step %1: record %2 differs").arg(k).arg(i)));
      // The graph of step k is step k-1's minus what record k-1 removed plus what it added.
      std::set<std::int64_t> expected = nodeIds(*previous);
      for (auto id : log[k - 1].removedNodes) QVERIFY(expected.erase(id) == 1);
      for (auto id : log[k - 1].addedNodes) QVERIFY(expected.insert(id).second);
      QCOMPARE(nodeIds(*g), expected);
      previous = std::move(g);
    }
    QCOMPARE(structure(*previous), structure(*doc.optimized));
  }

  void testReplayToTheEndIsTheOptimizedGraph() {
    const io::TsgDocument doc = optimizedMlp(RewriteQuery::forMode("fast_run"));
    std::vector<RewriteRecord> replayed;
    auto g = replayRewrites(*doc.original, RewriteQuery::forMode("fast_run"), kAll, &replayed);
    QCOMPARE(structure(*g), structure(*doc.optimized));
    QCOMPARE(replayed.size(), doc.rewrites.size());
    QVERIFY(std::equal(replayed.begin(), replayed.end(), doc.rewrites.begin(), sameChange));
    QVERIFY(g->features().empty());
  }

  void testStoppedGraphCanBeEditedAgain() {
    // The stop leaves the optimizer mid-phase; the graph handed out must be a clean graph that
    // features see edits of (Note [Stopping a replay]).
    const io::TsgDocument doc = optimizedMlp(RewriteQuery::forMode("fast_run"));
    auto g =
        replayRewrites(*doc.original, RewriteQuery::forMode("fast_run"), doc.rewrites.size() / 2);
    auto recorder = std::make_shared<RewriteRecorder>();
    g->attachFeature(recorder);
    optimize(*g, RewriteQuery::forMode("fast_run"));
    g->checkIntegrity();
    QVERIFY(!recorder->records().empty());
  }

  void testOptimizeDocumentRecordsItsQuery() {
    RewriteQuery query = RewriteQuery::forMode("fast_run");
    query.exclude.insert("inplace");
    io::TsgDocument doc = optimizedMlp(query);
    const std::optional<RewriteQuery> recorded = session::recordedRewriteQuery(doc.profiles);
    QVERIFY(recorded.has_value());
    QVERIFY(recorded->include == query.include);
    QVERIFY(recorded->exclude == query.exclude);
    const RewriteQuery checked =
        session::checkedReplayQuery(*doc.original, doc.rewrites, doc.profiles);
    QVERIFY(checked.exclude == query.exclude);
  }

  void testRecordedQueryWithMode() {
    const nlohmann::json profiles = nlohmann::json::parse(
        R"([{"kind": "run"}, {"kind": "rewriter", "query": {"mode": "fast_compile", "exclude": ["merge"]}}])");
    const auto q = session::recordedRewriteQuery(profiles);
    QVERIFY(q.has_value());
    QVERIFY(q->include == std::set<std::string>{"fast_compile"});
    QVERIFY(q->exclude == std::set<std::string>{"merge"});
    QVERIFY(!session::recordedRewriteQuery(nlohmann::json::array()).has_value());
    QVERIFY_THROWS_EXCEPTION(session::ReplayError,
                             session::recordedRewriteQuery(nlohmann::json::parse(
                                 R"([{"kind": "rewriter", "query": {"include": [3]}}])")));
  }

  void testLogFromAnotherOptimizerIsRefused() {
    // A log made with fast_compile, in a file that does not say so: fast_run is assumed and does
    // not reproduce it.
    io::TsgDocument doc = optimizedMlp(RewriteQuery::forMode("fast_compile"));
    for (auto& p : doc.profiles) p.erase("query");
    try {
      session::checkedReplayQuery(*doc.original, doc.rewrites, doc.profiles);
      QFAIL("a fast_compile log replayed as fast_run was accepted");
    } catch (const session::ReplayError& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("recorded with another optimizer; stepping is unavailable"),
               qPrintable(msg));
      QVERIFY2(msg.contains("fast_run was assumed"), qPrintable(msg));
    }
    // Without a recorded query a fast_run log is accepted.
    io::TsgDocument fast = optimizedMlp(RewriteQuery::forMode("fast_run"));
    for (auto& p : fast.profiles) p.erase("query");
    const RewriteQuery q =
        session::checkedReplayQuery(*fast.original, fast.rewrites, fast.profiles);
    QVERIFY(q.include == RewriteQuery::forMode("fast_run").include);
  }
};

TSCOPE_TEST_MAIN(TestReplayRewrites)
#include "tst_replay_rewrites.moc"
