#pragma once
// DocumentLoader: opens a graph file on a worker and hands the window a finished Document.
//
// Stages, reported by `progress`: reading the file (openGraphFile: .tsg or ONNX), building the view
// model of the original graph, building the view model of the optimized graph. Cancelling sets a
// flag the worker checks between stages; a cancelled load emits `cancelled` and never a half
// document. A new load() cancels the one running: only the newest load's signals are emitted.

#include "gui/app/document.h"

#include <QFuture>
#include <QObject>
#include <QString>

#include <memory>

template <class T>
class QFutureWatcher;

namespace tscope::gui {

class DocumentLoader : public QObject {
  Q_OBJECT
 public:
  static constexpr int kStageCount = 3;

  explicit DocumentLoader(QObject* parent = nullptr);
  ~DocumentLoader() override;

  // Starts loading `path` (made absolute); cancels a load in progress.
  void load(const QString& path);
  void cancel();
  bool isLoading() const;
  QString path() const;  // the file being loaded, or the last one loaded

  // Loads synchronously on the calling thread (command line, tests); throws std::runtime_error
  // with openGraphFile's message.
  static std::shared_ptr<const Document> loadNow(const QString& path);

 signals:
  void started(QString path);
  // stage in 0..kStageCount-1, text says what it does ("Reading mlp.tsg").
  void progress(int stage, QString text);
  void loaded(std::shared_ptr<const tscope::gui::Document> document);
  void failed(QString path, QString message);
  void cancelled(QString path);

 private:
  struct Result;
  void finish(quint64 generation, const std::shared_ptr<Result>& result);

  QFutureWatcher<void>* m_watcher = nullptr;  // progress and cancelling
  quint64 m_generation = 0;
  int m_stage = 0;  // of the progress report being delivered
  QString m_path;
};

}  // namespace tscope::gui

Q_DECLARE_METATYPE(std::shared_ptr<const tscope::gui::Document>)
