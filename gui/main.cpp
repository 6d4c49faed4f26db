// tensorscope: with a sub-command, the command-line front end (a QCoreApplication: no display
// needed).

#include "gui/cli/cli.h"

#include <QCoreApplication>

#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  // Graphs are millions of small objects freed at once; glibc's fastbins then make every later
  // large allocation consolidate them (a fifth of loading a 100k-node file). Without fastbins the
  // thread caches still serve small sizes.
  mallopt(M_MXFAST, 0);
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
