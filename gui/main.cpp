// tensorscope: with a sub-command, the command-line front end (a QCoreApplication: no display
// needed).

#include "gui/cli/cli.h"

#include <QCoreApplication>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  QCoreApplication app(argc, argv);
  QCoreApplication::setApplicationName("tensorscope");
  QCoreApplication::setOrganizationName("Tensorscope");
  std::string out, err;
  int code = tscope::gui::runCli(args, out, err);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fwrite(err.data(), 1, err.size(), stderr);
  return code;
}
