#pragma once
// RecentFiles: the most recently opened files, newest first, kept in QSettings ("recentFiles"),
// at most kMaxCount. Each window's File > Open Recent menu follows `changed`.

#include <QObject>
#include <QStringList>

class QMenu;

namespace tscope::gui {

class RecentFiles : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMaxCount = 10;
  static constexpr const char* kSettingsKey = "recentFiles";

  explicit RecentFiles(QObject* parent = nullptr);

  QStringList files() const;         // read from QSettings, so every window sees the same list
  void add(const QString& path);     // moves it to the front (absolute path), caps the list
  void remove(const QString& path);  // e.g. a recent file that no longer opens
  void clear();

  // Fills `menu` with one action per file (Ctrl+Alt+1..9 for the first nine) and "Clear Recent
  // Files"; a triggered file action emits openRequested.
  void fillMenu(QMenu* menu);

 signals:
  void changed();
  void openRequested(QString path);

 private:
  void store(const QStringList& files);
};

}  // namespace tscope::gui
