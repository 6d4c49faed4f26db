#pragma once
// DebugConsole: the command interpreter of `tensorscope debug`, a terminal debugger over a
// DebugSession in the spirit of pdb and gdb. It reads one command line at a time and writes what
// a person reads; the front end (gui/cli/cli_debug.cpp) adds line editing and history on a
// terminal and feeds standard input otherwise, so scripts and tests drive it the same way.
//
//   DebugSession session(f);
//   DebugConsole console(session, args, std::cout);
//   console.execute("break op:Elemwise{log}@nan");
//   console.execute("run");          // prints the pause: reason, frames, the node's values
//   console.execute("print h[0:2, :]");
//   while (console.execute(readLine())) {}   // false after `quit`
//
// Note [Console errors]: every bad command or argument prints one line "error: ..." (what was
// expected and what was found) and changes nothing; the console goes on. Commands that need a
// paused execution say which state they found.
//
// The commands (helpText() lists them): break/tbreak/delete/disable/enable/info breakpoints,
// run/restart, step/next/stepi/finish/continue/until, where/frame/up/down, print, set, recompute,
// undo, save, nanguard, list, info (inputs, node, frame), help, quit.

#include "engine/debug/debug_session.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::session {

// The text of a session state for a person: the reason of the pause (or the outcome), the frame
// stack with each frame's program counter, and for the node that ran last its outputs and for
// the next node its inputs, each with shape, dtype and statistics. `run --break` prints it too.
std::string formatPause(debug::DebugSession& session, const debug::SessionState& state);

class DebugConsole {
 public:
  // args: the values of the function's inputs, used by every `run` and `restart`.
  DebugConsole(debug::DebugSession& session, std::vector<Tensor> args, std::ostream& out);

  // Runs one command line (blank lines and '#' comments do nothing). Returns false after `quit`
  // (or at the end of input, which the front end reports by not calling it again).
  bool execute(std::string_view line);
  // The outcome of the last execution, as `tensorscope run` exit codes count it: "clean",
  // "nan", "breakpoint", "error", or "" before anything ran.
  const std::string& lastOutcome() const { return m_outcome; }
  static std::string helpText();

 private:
  void dispatch(const std::string& cmd, std::string_view rest);
  void show(const debug::SessionState& state);
  void requirePaused(const char* what) const;
  debug::SessionState ensureStarted();
  void cmdBreak(std::string_view rest, bool temporary);
  void cmdDelete(std::string_view rest);
  void cmdEnable(std::string_view rest, bool enabled);
  void cmdInfo(std::string_view rest);
  void cmdPrint(std::string_view rest);
  void cmdSet(std::string_view rest);
  void cmdSave(std::string_view rest);
  void cmdFrame(std::string_view rest);
  void cmdList(std::string_view rest);
  void cmdNanGuard(std::string_view rest);

  debug::DebugSession& m_session;
  std::vector<Tensor> m_args;
  std::ostream& m_out;
  std::size_t m_frame = 0;  // the selected frame (where, frame N, up, down)
  std::string m_outcome;
  std::vector<std::string> m_edits;  // names edited since the last recompute/undo, in order
};

}  // namespace tscope::engine::session
