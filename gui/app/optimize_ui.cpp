#include "gui/app/optimize_ui.h"

#include "engine/session/optimize_graph.h"
#include "gui/app/document_io.h"
#include "gui/app/main_window.h"
#include "visualizers/threads/hand_off.h"

#include <QAction>
#include <QComboBox>
#include <QCompleter>
#include <QDialog>
#include <QDialogButtonBox>
#include <QElapsedTimer>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QStatusBar>
#include <QStringListModel>
#include <QToolButton>

#include <stdexcept>

namespace tscope::gui {

namespace {

QStringList splitTags(const QString& text) {
  return text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts);
}

// Completion of the last word of a comma-separated list.
class TagCompleter : public QCompleter {
 public:
  TagCompleter(const QStringList& tags, QObject* parent) : QCompleter(tags, parent) {
    setCaseSensitivity(Qt::CaseInsensitive);
  }
  QStringList splitPath(const QString& path) const override {
    const QStringList words = splitTags(path);
    return {path.endsWith(QLatin1Char(',')) || path.endsWith(QLatin1Char(' ')) || words.isEmpty()
                ? QString()
                : words.last()};
  }
  QString pathFromIndex(const QModelIndex& index) const override {
    auto* edit = qobject_cast<QLineEdit*>(widget());
    QStringList words = splitTags(edit ? edit->text() : QString());
    if (!words.isEmpty() && edit && !edit->text().endsWith(QLatin1Char(',')) &&
        !edit->text().endsWith(QLatin1Char(' ')))
      words.removeLast();
    words << QCompleter::pathFromIndex(index);
    return words.join(QStringLiteral(", "));
  }
};

}  // namespace

OptimizeUi::OptimizeUi(MainWindow* window) : QObject(window), m_window(window) {
  m_action = new QAction(tr("&Optimize..."), this);
  m_action->setObjectName(QStringLiteral("actionOptimize"));
  m_action->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  m_action->setStatusTip(tr(
      "Optimize the original graph with the rewrites of a mode, as `tensorscope optimize` does"));
  m_action->setEnabled(false);
  connect(m_action, &QAction::triggered, this, &OptimizeUi::showDialog);
  m_window->registerAction(m_action);
  if (QMenu* menu = m_window->menu(QStringLiteral("menuGraph"))) menu->addAction(m_action);
  auto refresh = [this] { m_action->setEnabled(m_window->document() && !m_running); };
  connect(m_window, &MainWindow::documentLoaded, this, refresh);
  connect(m_window, &MainWindow::documentClosed, this, refresh);
}

engine::RewriteQuery OptimizeUi::queryFor(const QString& mode, const QStringList& include,
                                          const QStringList& exclude) {
  auto strings = [](const QStringList& list) {
    std::vector<std::string> out;
    for (const QString& s : list) out.push_back(s.toStdString());
    return out;
  };
  return engine::session::rewriteQueryFor(mode.toStdString(), strings(include), strings(exclude));
}

bool OptimizeUi::optimize(const QString& mode, const QStringList& include,
                          const QStringList& exclude) {
  const std::shared_ptr<const Document> document = m_window->document();
  if (!document || m_running) return false;
  engine::RewriteQuery query;
  try {
    query = queryFor(mode, include, exclude);
  } catch (const std::exception& e) {
    m_window->showError(tr("Optimize"), QString::fromStdString(e.what()));
    emit finished(false, QString::fromStdString(e.what()));
    return false;
  }
  m_running = true;
  m_action->setEnabled(false);
  const quint64 generation = ++m_generation;
  // The status bar shows the run with a Cancel button.
  auto* bar = new QProgressBar;
  bar->setObjectName(QStringLiteral("optimizeProgress"));
  bar->setRange(0, 0);  // the optimizer reports no progress: busy
  bar->setMaximumWidth(240);
  bar->setFormat(tr("Optimizing (%1)").arg(mode));
  bar->setTextVisible(true);
  auto* stop = new QToolButton;
  stop->setObjectName(QStringLiteral("cancelOptimizeButton"));
  stop->setIcon(QIcon(QStringLiteral(":/icons/close.svg")));
  stop->setToolTip(tr("Cancel optimizing"));
  stop->setAutoRaise(true);
  m_window->statusBar()->addPermanentWidget(bar);
  m_window->statusBar()->addPermanentWidget(stop);
  connect(stop, &QToolButton::clicked, this, &OptimizeUi::cancel);
  connect(this, &OptimizeUi::finished, bar, &QObject::deleteLater, Qt::SingleShotConnection);
  connect(this, &OptimizeUi::finished, stop, &QObject::deleteLater, Qt::SingleShotConnection);

  struct Result {
    std::shared_ptr<const Document> document;
    QString error;
    double seconds = 0;
  };
  vis::runOnWorker(
      this,
      [document, query] {
        Result r;
        QElapsedTimer clock;
        clock.start();
        try {
          r.document = optimizedDocument(*document, query);
        } catch (const std::exception& e) {
          r.error = QString::fromStdString(e.what());
        }
        r.seconds = double(clock.nsecsElapsed()) / 1e9;
        return r;
      },
      [this, generation, document, mode](Result r) {
        if (generation != m_generation) return;  // cancelled
        m_running = false;
        m_action->setEnabled(m_window->document() != nullptr);
        if (!r.document) {
          m_window->showError(tr("Optimize"),
                              tr("Optimizing %1 failed: %2").arg(document->path, r.error));
          emit finished(false, r.error);
          return;
        }
        if (m_window->document() != document) {
          emit finished(false, tr("the document changed while it was optimized"));
          return;
        }
        const QString message = tr("Optimized with %1 in %2 s: %3 nodes -> %4, %5 rewrites")
                                    .arg(mode)
                                    .arg(r.seconds, 0, 'f', 2)
                                    .arg(r.document->original->nodeCount())
                                    .arg(r.document->optimized->nodeCount())
                                    .arg(r.document->rewrites.size());
        m_window->replaceDocument(r.document, /*modified=*/true);
        m_window->showOptimized();
        m_window->statusBar()->showMessage(message, 10000);
        emit finished(true, message);
      });
  return true;
}

void OptimizeUi::cancel() {
  if (!m_running) return;
  ++m_generation;  // the worker's result is dropped
  m_running = false;
  m_action->setEnabled(m_window->document() != nullptr);
  m_window->statusBar()->showMessage(tr("Optimizing cancelled"), 5000);
  emit finished(false, tr("cancelled"));
}

QDialog* OptimizeUi::dialog() {
  if (m_dialog) return m_dialog;
  auto* d = new QDialog(m_window);
  d->setObjectName(QStringLiteral("optimizeDialog"));
  d->setWindowTitle(tr("Optimize"));
  auto* form = new QFormLayout(d);
  auto* mode = new QComboBox;
  mode->setObjectName(QStringLiteral("mode"));
  mode->addItems({QStringLiteral("fast_run"), QStringLiteral("fast_compile"),
                  QStringLiteral("debug"), QStringLiteral("none")});
  QStringList tags;
  for (const std::string& tag : engine::RewriteDb::standard().knownTags())
    tags << QString::fromStdString(tag);
  auto* include = new QLineEdit;
  include->setObjectName(QStringLiteral("include"));
  include->setPlaceholderText(tr("tags or rewrite names, comma separated"));
  include->setCompleter(new TagCompleter(tags, include));
  auto* exclude = new QLineEdit;
  exclude->setObjectName(QStringLiteral("exclude"));
  exclude->setPlaceholderText(tr("e.g. fusion, inplace"));
  exclude->setCompleter(new TagCompleter(tags, exclude));
  auto* error = new QLabel;
  error->setObjectName(QStringLiteral("error"));
  error->setStyleSheet(QStringLiteral("color: #b00020"));
  error->setWordWrap(true);
  error->hide();
  form->addRow(tr("&Mode:"), mode);
  form->addRow(tr("&Include:"), include);
  form->addRow(tr("&Exclude:"), exclude);
  form->addRow(error);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Optimize"));
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::rejected, d, &QDialog::reject);
  connect(buttons, &QDialogButtonBox::accepted, d, [=, this] {
    // Checked here first, so a typo keeps the dialog open with the reason.
    try {
      queryFor(mode->currentText(), splitTags(include->text()), splitTags(exclude->text()));
    } catch (const std::exception& e) {
      error->setText(QString::fromStdString(e.what()));
      error->show();
      return;
    }
    error->hide();
    d->accept();
    optimize(mode->currentText(), splitTags(include->text()), splitTags(exclude->text()));
  });
  m_dialog = d;
  return d;
}

void OptimizeUi::showDialog() {
  QDialog* d = dialog();
  d->show();
  d->raise();
  d->activateWindow();
}

}  // namespace tscope::gui
