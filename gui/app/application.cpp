#include "gui/app/application.h"

#include <QApplication>
#include <QMainWindow>

namespace tscope::gui {

int runApplication(QApplication& app) {
  QMainWindow window;  // replaced by MainWindow as the GUI lands
  window.show();
  return app.exec();
}

}  // namespace tscope::gui
