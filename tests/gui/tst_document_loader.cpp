// DocumentLoader: loads .tsg and ONNX files on a worker into whole Documents (models built, the
// optimized graph when the file has one), reports progress, refuses bad files with the reason and
// the file's name, and a cancelled or superseded load never delivers a document.
#include "engine/io/tsg.h"
#include "engine/session/optimize_graph.h"
#include "gui/app/document_loader.h"
#include "gui_test_main.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>

using tscope::gui::Document;
using tscope::gui::DocumentLoader;

namespace {

const QString kMlp = QStringLiteral(TSCOPE_SOURCE_DIR "/examples/graphs/mlp.tsg");
const QString kLogistic =
    QStringLiteral(TSCOPE_SOURCE_DIR "/examples/graphs/logistic_regression.tsg");

std::shared_ptr<const Document> loadedDocument(const QSignalSpy& spy) {
  return spy.at(0).at(0).value<std::shared_ptr<const Document>>();
}

}  // namespace

class TestDocumentLoader : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void testLoadsTsg();
  void testLoadsOptimizedTsg();
  void testLoadsOnnx();
  void testBadFile_data();
  void testBadFile();
  void testCancel();
  void testNewLoadSupersedes();
  void testLoadNow();

 private:
  QTemporaryDir m_dir;
  QString m_optimized;
};

void TestDocumentLoader::initTestCase() {
  QVERIFY(m_dir.isValid());
  tscope::engine::io::TsgDocument doc = tscope::engine::io::loadTsg(kLogistic.toStdString());
  tscope::engine::session::optimizeDocument(doc, tscope::engine::RewriteQuery::forMode("fast_run"));
  m_optimized = m_dir.filePath(QStringLiteral("optimized.tsg"));
  tscope::engine::io::saveTsg(doc, m_optimized.toStdString());
}

void TestDocumentLoader::testLoadsTsg() {
  DocumentLoader loader;
  QSignalSpy started(&loader, &DocumentLoader::started);
  QSignalSpy progress(&loader, &DocumentLoader::progress);
  QSignalSpy loaded(&loader, &DocumentLoader::loaded);
  QSignalSpy failed(&loader, &DocumentLoader::failed);
  loader.load(kMlp);
  QVERIFY(loader.isLoading());
  QCOMPARE(started.count(), 1);
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
  QCOMPARE(failed.count(), 0);
  QVERIFY(!loader.isLoading());
  const auto document = loadedDocument(loaded);
  QVERIFY(document);
  QCOMPARE(document->path, QFileInfo(kMlp).absoluteFilePath());
  QCOMPARE(document->info.format, std::string("tsg"));
  QVERIFY(document->original);
  QVERIFY(document->originalModel);
  QCOMPARE(&document->originalModel->graph(), document->original.get());
  QVERIFY(!document->optimized);
  QVERIFY(!document->optimizedModel);
  QVERIFY(!document->originalModel->nodes().empty());
  // Progress is throttled by QFuture, but the first stage always comes through.
  QVERIFY(progress.count() >= 1);
  QCOMPARE(progress.at(0).at(0).toInt(), 0);
  QVERIFY(progress.at(0).at(1).toString().contains(QStringLiteral("mlp.tsg")));
}

void TestDocumentLoader::testLoadsOptimizedTsg() {
  DocumentLoader loader;
  QSignalSpy loaded(&loader, &DocumentLoader::loaded);
  loader.load(m_optimized);
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
  const auto document = loadedDocument(loaded);
  QVERIFY(document->optimized);
  QVERIFY(document->optimizedModel);
  QCOMPARE(&document->optimizedModel->graph(), document->optimized.get());
  QVERIFY(!document->rewrites.empty());
  QVERIFY(document->optimized->nodeCount() < document->original->nodeCount());
}

void TestDocumentLoader::testLoadsOnnx() {
#ifndef TSCOPE_HAVE_ONNX
  QSKIP("built without ONNX support");
#else
  DocumentLoader loader;
  QSignalSpy loaded(&loader, &DocumentLoader::loaded);
  QSignalSpy failed(&loader, &DocumentLoader::failed);
  loader.load(QStringLiteral(TSCOPE_TEST_DATA_DIR "/onnx/models/lenet5.onnx"));
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count() + failed.count(), 1, 20000);
  QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(1).toString()));
  const auto document = loadedDocument(loaded);
  QCOMPARE(document->info.format, std::string("onnx"));
  QVERIFY(document->originalModel);
  QVERIFY(document->originalModel->nodes().size() > 10);
#endif
}

void TestDocumentLoader::testBadFile_data() {
  QTest::addColumn<QByteArray>("content");  // null: the file does not exist
  QTest::addColumn<QString>("name");
  QTest::addColumn<QString>("reason");  // a part of the message
  QTest::newRow("missing") << QByteArray() << "missing.tsg"
                           << "";
  QTest::newRow("not json") << QByteArray("this is not a graph") << "garbage.tsg"
                            << "";
  QTest::newRow("truncated") << QByteArray("{\"format\": \"tensorscope-graph\", \"vers")
                             << "truncated.tsg"
                             << "";
  QTest::newRow("wrong format") << QByteArray(R"({"format": "something-else", "version": 1})")
                                << "other.tsg"
                                << "format";
}

void TestDocumentLoader::testBadFile() {
  QFETCH(QByteArray, content);
  QFETCH(QString, name);
  QFETCH(QString, reason);
  const QString path = m_dir.filePath(name);
  if (!content.isNull()) {
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(content);
  }
  DocumentLoader loader;
  QSignalSpy loaded(&loader, &DocumentLoader::loaded);
  QSignalSpy failed(&loader, &DocumentLoader::failed);
  loader.load(path);
  QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
  QCOMPARE(loaded.count(), 0);
  QCOMPARE(failed.at(0).at(0).toString(), path);
  const QString message = failed.at(0).at(1).toString();
  QVERIFY2(message.contains(name), qPrintable(message));
  if (!reason.isEmpty()) QVERIFY2(message.contains(reason), qPrintable(message));
  QVERIFY(!loader.isLoading());
}

void TestDocumentLoader::testCancel() {
  DocumentLoader loader;
  QSignalSpy loaded(&loader, &DocumentLoader::loaded);
  QSignalSpy cancelled(&loader, &DocumentLoader::cancelled);
  loader.load(kMlp);
  loader.cancel();
  QCOMPARE(cancelled.count(), 1);
  QCOMPARE(cancelled.at(0).at(0).toString(), QFileInfo(kMlp).absoluteFilePath());
  QVERIFY(!loader.isLoading());
  // The worker finishes on its own; its document must never arrive.
  QTest::qWait(1500);
  QCOMPARE(loaded.count(), 0);
  QCOMPARE(cancelled.count(), 1);
  loader.cancel();  // nothing to cancel: no signal
  QCOMPARE(cancelled.count(), 1);
}

void TestDocumentLoader::testNewLoadSupersedes() {
  DocumentLoader loader;
  QSignalSpy loaded(&loader, &DocumentLoader::loaded);
  QSignalSpy cancelled(&loader, &DocumentLoader::cancelled);
  loader.load(kMlp);
  loader.load(kLogistic);
  QCOMPARE(cancelled.count(), 1);
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
  QTest::qWait(500);
  QCOMPARE(loaded.count(), 1);
  QCOMPARE(loadedDocument(loaded)->path, QFileInfo(kLogistic).absoluteFilePath());
  QCOMPARE(loader.path(), QFileInfo(kLogistic).absoluteFilePath());
}

void TestDocumentLoader::testLoadNow() {
  const auto document = DocumentLoader::loadNow(m_optimized);
  QVERIFY(document && document->originalModel && document->optimizedModel);
  bool threw = false;
  try {
    DocumentLoader::loadNow(m_dir.filePath(QStringLiteral("nope.tsg")));
  } catch (const std::runtime_error& e) {
    threw = QString::fromUtf8(e.what()).contains(QStringLiteral("nope.tsg"));
  }
  QVERIFY(threw);
}

TSCOPE_GUI_TEST_MAIN(TestDocumentLoader)
#include "tst_document_loader.moc"
