#include "gui/app/document_loader.h"

#include "visualizers/threads/hand_off.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QFutureInterface>
#include <QFutureWatcher>
#include <QThreadPool>

#include <exception>
#include <functional>

namespace tscope::gui {

struct DocumentLoader::Result {
  std::shared_ptr<const Document> document;  // null when failed or cancelled
  QString error;
};

namespace {

using ProgressFn = std::function<void(int stage, const QString& text)>;
using CancelledFn = std::function<bool()>;

// Runs the stages; returns null when cancelled between two of them. Throws what openGraphFile and
// ViewModel::build throw.
std::shared_ptr<const Document> buildDocument(const QString& path, const ProgressFn& progress,
                                              const CancelledFn& cancelled) {
  const QString name = QFileInfo(path).fileName();
  progress(0, QCoreApplication::translate("DocumentLoader", "Reading %1").arg(name));
  auto document = std::make_shared<Document>();
  document->path = path;
  engine::io::TsgDocument file =
      engine::session::openGraphFile(path.toStdString(), &document->info);
  if (cancelled()) return nullptr;
  document->original = std::shared_ptr<const engine::FunctionGraph>(std::move(file.original));
  document->optimized = std::shared_ptr<const engine::FunctionGraph>(std::move(file.optimized));
  document->rewrites = std::move(file.rewrites);
  document->profiles = std::move(file.profiles);

  progress(
      1, QCoreApplication::translate("DocumentLoader", "Building the view of the original graph"));
  document->originalModel = vis::ViewModel::build(document->original);
  if (cancelled()) return nullptr;
  if (document->optimized) {
    progress(2, QCoreApplication::translate("DocumentLoader",
                                            "Building the view of the optimized graph"));
    document->optimizedModel = vis::ViewModel::build(document->optimized);
    if (cancelled()) return nullptr;
  }
  return document;
}

}  // namespace

DocumentLoader::DocumentLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const tscope::gui::Document>>();
}

DocumentLoader::~DocumentLoader() {
  // The worker owns only its copies; it finishes on its own and its result is dropped.
  if (m_watcher) m_watcher->future().cancel();
}

void DocumentLoader::load(const QString& path) {
  cancel();  // the previous load, if any: it reports `cancelled` for its own path
  m_path = QFileInfo(path).absoluteFilePath();
  const quint64 generation = ++m_generation;
  const QString absolute = m_path;
  m_watcher = new QFutureWatcher<void>(this);
  // One progress report arrives as progressValueChanged then progressTextChanged (the value read
  // from the future later may already be the next stage's).
  connect(m_watcher, &QFutureWatcherBase::progressValueChanged, this,
          [this](int value) { m_stage = value - 1; });
  connect(m_watcher, &QFutureWatcherBase::progressTextChanged, this,
          [this, generation](const QString& text) {
            vis::handOffAcquire();  // the text was made on the worker
            if (generation != m_generation || !m_watcher) return;
            emit progress(m_stage, text);
          });
  // The future carries the progress and the cancel flag; the result comes through the mailbox
  // (Note [Hand-offs TSan can see]: a result kept in the future would be freed by whichever
  // thread drops the future last, in a hand-off TSan cannot see).
  QFutureInterface<void> promise;
  promise.reportStarted();
  promise.setProgressRange(0, kStageCount + 1);
  m_watcher->setFuture(promise.future());
  const vis::Mailbox mail(this);
  vis::startOnPool(
      *QThreadPool::globalInstance(), [this, mail, promise, absolute, generation]() mutable {
        auto result = std::make_shared<Result>();
        try {
          result->document = buildDocument(
              absolute,
              // QFuture drops a progress value that does not grow, so stage s reports s + 1.
              [&promise](int stage, const QString& text) {
                vis::handOffRelease();
                promise.setProgressValueAndText(stage + 1, text);
              },
              [&promise] { return promise.isCanceled(); });
        } catch (const std::exception& e) {
          result->error = QString::fromUtf8(e.what());
        } catch (...) {
          result->error = QStringLiteral("%1: an unknown error").arg(absolute);
        }
        if (!result->document && result->error.isEmpty()) result.reset();  // cancelled
        promise.reportFinished();
        mail.post([this, generation, result] { finish(generation, result); });
      });
  emit started(m_path);
}

void DocumentLoader::cancel() {
  if (!m_watcher) return;
  m_watcher->future().cancel();
  m_watcher->disconnect(this);
  m_watcher->deleteLater();
  m_watcher = nullptr;
  ++m_generation;  // whatever the old worker still reports is stale
  emit cancelled(m_path);
}

bool DocumentLoader::isLoading() const {
  return m_watcher != nullptr;
}

QString DocumentLoader::path() const {
  return m_path;
}

void DocumentLoader::finish(quint64 generation, const std::shared_ptr<Result>& result) {
  if (generation != m_generation || !m_watcher) return;
  m_watcher->deleteLater();
  m_watcher = nullptr;
  if (!result) {
    emit cancelled(m_path);
    return;
  }
  if (!result->document) {
    emit failed(m_path, result->error.isEmpty() ? tr("%1: could not be loaded").arg(m_path)
                                                : result->error);
    return;
  }
  emit loaded(result->document);
}

std::shared_ptr<const Document> DocumentLoader::loadNow(const QString& path) {
  return buildDocument(
      QFileInfo(path).absoluteFilePath(), [](int, const QString&) {}, [] { return false; });
}

}  // namespace tscope::gui
