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
  // Note [Debugger exit codes] (gui/cli/cli_debug.cpp): how a guarded run or a debug session ended.
  kExitNanEvent = 3,        // NanGuard found a NaN, an Inf or a big value
  kExitBreakpoint = 4,      // a breakpoint or a BreakPoint op paused the run
  kExitExecutionError = 5,  // a node failed while running
  kExitNoDevice = 6,        // --device cuda, and the CUDA backend found no device
};

// Runs one sub-command; args excludes the program name. Output goes to out/err.
int runCli(const std::vector<std::string>& args, std::string& out, std::string& err);

// True when args name a sub-command (as opposed to opening the window).
bool isSubCommand(const std::vector<std::string>& args);

}  // namespace tscope::gui
