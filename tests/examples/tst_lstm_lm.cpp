// examples/lstm_lm and examples/alexnet_like: the LSTM language model's loss falls over 100 SGD
// steps (learning rate 4, one thread) with a fixed seed (a behavioural check: the loss at the end
// against the first batch's and against log(vocab), never a time), and both saved graphs hold what
// the examples promise: Scan nodes per LSTM layer, nodes scoped by module, parameters named by
// their dotted path, test values.
#include "engine/graph/apply.h"
#include "engine/io/tsg.h"
#include "engine/ops/control/scan.h"
#include "test_main.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cmath>
#include <set>

using namespace tscope::engine;

namespace {

QString runExample(const QString& name, const QStringList& args, int& exitCode) {
  QProcess p;
  p.start(QString(TSCOPE_BINARY_DIR) + "/examples/" + name, args);
  if (!p.waitForFinished(600000)) return "timed out";
  exitCode = p.exitCode();
  return QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
}

std::set<std::string> scopes(const FunctionGraph& g) {
  std::set<std::string> out;
  for (const Apply* a : g.nodes()) out.insert(a->scope());
  return out;
}

bool hasInput(const FunctionGraph& g, const std::string& name) {
  for (const VarPtr& v : g.inputs())
    if (v->name() == name) return true;
  return false;
}

}  // namespace

class TestLstmLm : public QObject {
  Q_OBJECT

 private slots:
  void testLossFalls() {
    QTemporaryDir dir;
    const QString tsg = dir.filePath("lstm_lm.tsg");
    int code = -1;
    const QString out = runExample(
        "example_lstm_lm",
        {"--steps", "100", "--seed", "3", "--lr", "4", "--threads", "1", "--out", tsg}, code);
    QVERIFY2(code == 0, qPrintable(out));
    const QRegularExpression re("loss ([0-9.]+) -> ([0-9.]+) \\(log\\(vocab\\) = ([0-9.]+)\\)");
    const auto m = re.match(out);
    QVERIFY2(m.hasMatch(), qPrintable(out));
    const double first = m.captured(1).toDouble(), last = m.captured(2).toDouble(),
                 logVocab = m.captured(3).toDouble();
    // Starts near chance, ends clearly below it (the text's entropy is ~0.9 nats per word).
    QVERIFY2(std::abs(first - logVocab) < 0.3, qPrintable(out));
    QVERIFY2(last < first - 0.8, qPrintable(out));

    const io::TsgDocument doc = io::loadTsg(tsg.toStdString());
    const FunctionGraph& g = *doc.original;
    std::set<std::string> labels;
    for (const Apply* a : g.nodes())
      if (auto* s = dynamic_cast<const Scan*>(&a->op())) labels.insert(s->label());
    QVERIFY(labels.count("lstm_l0") && labels.count("lstm_l1"));
    const std::set<std::string> sc = scopes(g);
    QVERIFY(sc.count("lm/embed") && sc.count("lm/lstm") && sc.count("lm/decoder"));
    QVERIFY(hasInput(g, "lstm.weight_hh_l1"));
    QVERIFY(hasInput(g, "decoder.bias"));
    bool testValue = false;
    for (const VarPtr& v : g.inputs())
      if (v->name() == "words") testValue = v->testValue().has_value();
    QVERIFY(testValue);
  }

  void testBadConfigRefused() {
    int code = -1;
    const QString out = runExample("example_lstm_lm", {"--config", "huge"}, code);
    QCOMPARE(code, 2);
    QVERIFY2(out.contains("small, medium or large"), qPrintable(out));
  }

  void testAlexNetLike() {
    QTemporaryDir dir;
    const QString tsg = dir.filePath("alexnet_like.tsg");
    int code = -1;
    const QString out = runExample("example_alexnet_like", {tsg, "3"}, code);
    QVERIFY2(code == 0, qPrintable(out));
    const io::TsgDocument doc = io::loadTsg(tsg.toStdString());
    const std::set<std::string> sc = scopes(*doc.original);
    QVERIFY(sc.count("alexnet/features/0") && sc.count("alexnet/features/12"));
    QVERIFY(sc.count("alexnet/classifier/6"));
    QVERIFY(hasInput(*doc.original, "features.10.weight"));
    QVERIFY(hasInput(*doc.original, "classifier.1.weight"));
  }
};

TSCOPE_TEST_MAIN(TestLstmLm)
#include "tst_lstm_lm.moc"
