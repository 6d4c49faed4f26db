// tensorscope: with a sub-command, the command-line front end; without one, the main window.
// Sub-commands never show a window, so they run on Qt's offscreen platform unless the caller chose
// another: `tensorscope export g.tsg -o g.png` works on a machine without a display.

#include "gui/app/application.h"
#include "gui/cli/cli.h"

#include <QApplication>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv) {
  // Graphs are millions of small objects freed at once; glibc's fastbins then make every later
  // large allocation consolidate them (a fifth of loading a 100k-node file). Without fastbins the
  // thread caches still serve small sizes.
  mallopt(M_MXFAST, 0);
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool cli = tscope::gui::isSubCommand(args);
  if (cli && !std::getenv("QT_QPA_PLATFORM")) ::setenv("QT_QPA_PLATFORM", "offscreen", 1);
  if (cli && !std::getenv("XDG_RUNTIME_DIR")) {
    // Without it Qt warns on stderr and then uses /tmp/runtime-<user>; choosing that directory
    // ourselves keeps a sub-command's stderr to its own messages.
    const std::string dir = "/tmp/runtime-" + std::to_string(::getuid());
    if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST)
      ::setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("tensorscope");
  QApplication::setOrganizationName("Tensorscope");
  QApplication::setApplicationVersion("0.1.0");
  if (!cli) return tscope::gui::runApplication(app);
  std::string out, err;
  int code = tscope::gui::runCli(args, out, err);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fwrite(err.data(), 1, err.size(), stderr);
  return code;
}
