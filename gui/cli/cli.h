#pragma once
// The command-line front end: `tensorscope <sub-command> ...`. Every sub-command prints to stdout
// and, on error, one line "tensorscope: <reason>" to stderr with a non-zero exit status.

#include <string>
#include <vector>

namespace tscope::gui {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // the file or the work failed (a broken graph, an I/O error)
  kExitUsage = 2,    // the command line was wrong
};

// Runs one sub-command; args excludes the program name. Output goes to out/err.
int runCli(const std::vector<std::string>& args, std::string& out, std::string& err);

// True when args name a sub-command (as opposed to opening the window).
bool isSubCommand(const std::vector<std::string>& args);

}  // namespace tscope::gui
