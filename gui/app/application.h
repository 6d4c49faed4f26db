#pragma once
// The window side of the executable: parses the command line (files to open, --screenshot) and
// runs the main window's event loop.

class QApplication;

namespace tscope::gui {

// Opens the main window (on the files named on the command line) and runs the event loop;
// returns the exit status.
int runApplication(QApplication& app);

}  // namespace tscope::gui
