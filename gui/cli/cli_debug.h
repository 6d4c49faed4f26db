#pragma once
// The debugger's sub-commands: `tensorscope run` with --nan-guard or --break (a guarded run that
// prints the NanGuard report or the pause state), and `tensorscope debug`, the interactive
// terminal debugger (engine/session/debug_console.h) with line editing and history on a terminal,
// commands from standard input otherwise.

#include "engine/io/tsg.h"
#include "engine/session/run_graph.h"

#include <QCommandLineParser>

#include <string>

namespace tscope::gui {

// --nan-guard, --nan-checks, --big-threshold, --nan-action, --allow, --report-json,
// --save-failure and --break, shared by run and debug.
void addDebugOptions(QCommandLineParser& p);
// Whether a run needs the guarded path (any of the options above).
bool wantsGuardedRun(const QCommandLineParser& p);
// A guarded `run`: compiles doc's original graph (inputs.mode), runs it with NanGuard and the
// breakpoints, writes the outputs of a clean run to outputDir. Returns the exit code (cli.h).
int runGuarded(const QCommandLineParser& p, const engine::io::TsgDocument& doc,
               const std::string& file, const engine::session::RunInputs& inputs,
               const std::string& outputDir, std::string& out, std::string& err);
// `tensorscope debug FILE [run options]`: reads commands until quit or the end of input. Writes
// straight to stdout (the session is interactive); `out` stays empty.
int runDebugConsole(const QCommandLineParser& p, const engine::io::TsgDocument& doc,
                    const engine::session::RunInputs& inputs, std::string& out, std::string& err);

}  // namespace tscope::gui
