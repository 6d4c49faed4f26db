#pragma once
// Graph > Optimize...: gives the open document an optimized graph on a worker — what
// `tensorscope optimize` does — so a model opened without one (every ONNX file) gets the
// Optimized tab, side by side and the rewrite history in the window; File > Save As then writes
// the .tsg. The dialog asks for the mode and the tags or rewrite names to include and exclude
// (checked against the rewrite database, with completion); the status bar shows the work with a
// Cancel button (the result of a cancelled run is dropped; the optimizer itself runs to its end on
// the worker, leaving the document untouched).
//
//   auto* ui = new OptimizeUi(window);          // adds Graph > Optimize... (Ctrl+Shift+O)
//   ui->optimize("fast_run", {}, {"fusion"});    // what the dialog's OK does

#include "engine/rewrite/rewrite_db.h"

#include <QObject>
#include <QPointer>
#include <QStringList>

class QAction;
class QDialog;

namespace tscope::gui {

class MainWindow;

class OptimizeUi : public QObject {
  Q_OBJECT
 public:
  explicit OptimizeUi(MainWindow* window);

  // The query of a mode and tags; throws std::invalid_argument naming an unknown mode or tag.
  static engine::RewriteQuery queryFor(const QString& mode, const QStringList& include,
                                       const QStringList& exclude);
  // Starts optimizing the open document (nothing when none or a run is going); errors go to the
  // window's error dialog. Returns false when it did not start.
  bool optimize(const QString& mode, const QStringList& include = {},
                const QStringList& exclude = {});
  void cancel();
  bool isRunning() const { return m_running; }
  // The dialog (made on first use, kept: it remembers the last choice).
  QDialog* dialog();

 signals:
  void finished(bool ok, QString message);

 private:
  void showDialog();
  MainWindow* m_window;
  QAction* m_action = nullptr;
  QPointer<QDialog> m_dialog;
  bool m_running = false;
  quint64 m_generation = 0;
};

}  // namespace tscope::gui
