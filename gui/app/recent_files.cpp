#include "gui/app/recent_files.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenu>
#include <QSettings>

namespace tscope::gui {

RecentFiles::RecentFiles(QObject* parent) : QObject(parent) {}

QStringList RecentFiles::files() const {
  QStringList list = QSettings().value(kSettingsKey).toStringList();
  list.removeAll(QString());
  if (list.size() > kMaxCount) list = list.mid(0, kMaxCount);
  return list;
}

void RecentFiles::add(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList list = files();
  list.removeAll(absolute);
  list.prepend(absolute);
  store(list.mid(0, kMaxCount));
}

void RecentFiles::remove(const QString& path) {
  QStringList list = files();
  if (list.removeAll(QFileInfo(path).absoluteFilePath()) > 0) store(list);
}

void RecentFiles::clear() {
  store({});
}

void RecentFiles::store(const QStringList& files) {
  QSettings().setValue(kSettingsKey, files);
  emit changed();
}

void RecentFiles::fillMenu(QMenu* menu) {
  menu->clear();
  const QStringList list = files();
  for (int i = 0; i < list.size(); ++i) {
    const QString& path = list[i];
    // "&1 mlp.tsg  (/home/me/graphs)": the name first, where it lives after it.
    const QFileInfo info(path);
    const QString text = QStringLiteral("&%1 %2  (%3)")
                             .arg(i + 1 < 10 ? QString::number(i + 1) : QStringLiteral("1&0"))
                             .arg(info.fileName(), QDir::toNativeSeparators(info.absolutePath()));
    QAction* action = menu->addAction(text);
    action->setToolTip(path);
    action->setData(path);
    if (i < 9) action->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key(Qt::Key_1 + i)));
    connect(action, &QAction::triggered, this, [this, path] { emit openRequested(path); });
  }
  if (list.isEmpty()) menu->addAction(tr("No recent files"))->setEnabled(false);
  menu->addSeparator();
  QAction* clearAction = menu->addAction(tr("Clear Recent Files"));
  clearAction->setEnabled(!list.isEmpty());
  connect(clearAction, &QAction::triggered, this, &RecentFiles::clear);
}

}  // namespace tscope::gui
