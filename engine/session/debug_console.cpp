#include "engine/session/debug_console.h"

#include "engine/compile/program.h"
#include "engine/debug/nan_guard.h"
#include "engine/graph/op.h"
#include "engine/io/npy.h"
#include "engine/session/value_expr.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <sstream>
#include <stdexcept>

namespace tscope::engine::session {

namespace {

using debug::DebugSession;
using debug::PauseKind;
using debug::SessionPhase;
using debug::SessionState;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The first word and the rest.
std::pair<std::string, std::string_view> word(std::string_view s) {
  s = trim(s);
  std::size_t n = 0;
  while (n < s.size() && !std::isspace(static_cast<unsigned char>(s[n]))) ++n;
  return {std::string(s.substr(0, n)), trim(s.substr(n))};
}

int parseCount(std::string_view s, std::string_view what) {
  s = trim(s);
  int v = 0;
  bool ok = !s.empty();
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || v > 100000000) {
      ok = false;
      break;
    }
    v = v * 10 + (c - '0');
  }
  if (!ok)
    throw std::invalid_argument("expected " + std::string(what) +
                                " (a non-negative integer), found '" + std::string(s) + "'");
  return v;
}

// Every program of a function: the outer one and its children, depth first.
void collectPrograms(const Program& p, std::vector<const Program*>& out) {
  out.push_back(&p);
  for (const auto& c : p.children()) collectPrograms(*c, out);
}

const Apply* findNode(const Program& root, std::int64_t id) {
  std::vector<const Program*> programs;
  collectPrograms(root, programs);
  for (const Program* p : programs)
    if (const Apply* n = p->graph().nodeById(id)) return n;
  return nullptr;
}

std::string nodeLine(const Apply& n) {
  std::string s = "node " + std::to_string(n.id()) + " " + n.op().str();
  if (!n.scope().empty()) s += " at " + n.scope();
  // Note [Gradient origin]: a gradient node's own site is the pullback's code; the user's line is
  // the forward node's.
  if (const auto& g = n.gradientOf()) {
    s += std::string(" [") + (g->kind == "rop" ? "R-op" : "gradient") + " of " + g->op;
    if (!g->scope.empty()) s += " at " + g->scope;
    if (!g->site.empty()) s += " (" + g->site.str() + ")";
    return s + "]";
  }
  if (!n.site().empty()) s += " (" + n.site().str() + ")";
  return s;
}

std::string valueLine(const debug::ValueView& v) {
  std::string s = v.name + " (#" + std::to_string(v.varId) + ")";
  if (v.edited) s += " [edited]";
  return s + ": " + debug::toString(v.stats);
}

}  // namespace

std::string formatPause(DebugSession& session, const SessionState& st) {
  std::ostringstream os;
  const Program& root = session.function().program();
  os << "[" << debug::phaseName(st.phase);
  if (st.serial) os << " #" << st.serial;
  os << "] ";
  switch (st.reason) {
    case PauseKind::Breakpoint:
      os << "breakpoint " << st.breakpointId;
      for (const auto& b : session.breakpoints().get())
        if (b.id == st.breakpointId)
          os << " (" << debug::toString(b.spec) << ", hit " << b.hits << ")";
      break;
    case PauseKind::BreakPointOp:
      os << "BreakPoint op '" << st.breakOpName << "' (node " << st.breakOpNodeId
         << "): its condition holds";
      break;
    case PauseKind::NanGuard:
      os << "NanGuard";
      break;
    case PauseKind::Error:
      os << "error at node " << st.errorNodeId;
      break;
    default:
      os << debug::pauseKindName(st.reason);
  }
  os << "\n";
  // The reason line above already says what a breakpoint, a step or the end says.
  const bool said = st.reason == PauseKind::Breakpoint || st.reason == PauseKind::Step ||
                    st.reason == PauseKind::Finished || st.reason == PauseKind::BreakPointOp;
  if (!st.message.empty() && !said) os << "  " << st.message << "\n";
  if (st.reason == PauseKind::NanGuard && st.nan) os << st.nan->toText();
  if (st.reason == PauseKind::Error && !st.error.empty()) os << "  " << st.error << "\n";
  if (st.lastNodeId >= 0)
    if (const Apply* n = findNode(root, st.lastNodeId)) os << "after " << nodeLine(*n) << "\n";
  for (std::size_t i = 0; i < st.frames.size(); ++i) {
    const debug::FrameView& f = st.frames[i];
    os << "  #" << i << " "
       << (f.callerNodeId < 0 ? std::string("<graph>")
                              : "node " + std::to_string(f.callerNodeId) + " " + f.callerOp)
       << "  pc " << f.pc << "/" << f.scheduleSize;
    if (f.iteration >= 0) os << "  iteration " << f.iteration << "/" << f.iterations;
    if (f.nextNodeId >= 0) os << ", next: node " << f.nextNodeId << " " << f.nextNodeOp;
    os << "\n";
  }
  if (st.phase != SessionPhase::Paused) return os.str();
  // The outputs of the node that ran last, and the inputs of the next one.
  const std::size_t inner = st.frames.empty() ? 0 : st.frames.size() - 1;
  if (st.lastNodeId >= 0) {
    if (const Apply* n = findNode(root, st.lastNodeId)) {
      bool header = false;
      for (int k = 0; k < n->nOutputs(); ++k) {
        auto v =
            session.value("node:" + std::to_string(n->id()) + "." + std::to_string(k), inner).get();
        if (!v) continue;
        if (!header) os << "outputs of node " << n->id() << ":\n";
        header = true;
        os << "  " << valueLine(*v) << "\n";
      }
    }
  }
  const auto next = session.nextInputs().get();
  if (!next.empty()) {
    os << "inputs of the next node:\n";
    for (const auto& v : next) os << "  " << valueLine(v) << "\n";
  }
  return os.str();
}

DebugConsole::DebugConsole(DebugSession& session, std::vector<Tensor> args, std::ostream& out)
    : m_session(session), m_args(std::move(args)), m_out(out) {}

std::string DebugConsole::helpText() {
  return "commands (SPEC: node:ID | var:NAME | op:TYPE | scope:PATH, then @nan @inf @max>K "
         "@min<K @norm>K @changed>K, then #HIT):\n"
         "  break SPEC, b SPEC      set a breakpoint          tbreak SPEC   one that deletes "
         "itself\n"
         "  delete [N]              delete breakpoint N (all) disable N / enable N\n"
         "  info breakpoints        list breakpoints          info inputs   the next node's "
         "inputs\n"
         "  info node [ID]          a node (default: next)    info frame    the selected frame\n"
         "  run, r                  start (again) and run     restart       start again, same "
         "inputs\n"
         "  continue, c             run to the next pause     until NODE    run until before NODE\n"
         "  step, s                 one node, into inner graphs\n"
         "  next, n                 one node, over inner graphs\n"
         "  stepi [N]               N nodes (default 1), into inner graphs\n"
         "  finish                  run until the frame returns\n"
         "  iter NODE K             run to the start of iteration K of loop NODE (a Scan)\n"
         "  where, bt               the frame stack           frame N, up, down   select a frame\n"
         "  print VAR[SLICE], p     statistics and values (VAR: name, #ID or node:ID[.K])\n"
         "  set VAR = EDIT          EDIT: FILE.npy | zeros | fill K | scale K | nan@I,J | inf@I,J\n"
         "  recompute               re-run the nodes downstream of edited values\n"
         "  undo [VAR]              put an edited value back (default: the last edit)\n"
         "  save VAR FILE.npy       write a value          nanguard on|off\n"
         "  list [N]                the schedule around the program counter\n"
         "  help, quit (q)\n";
}

void DebugConsole::show(const SessionState& st) {
  if (m_frame >= st.frames.size()) m_frame = st.frames.empty() ? 0 : st.frames.size() - 1;
  if (!st.frames.empty()) m_frame = st.frames.size() - 1;
  switch (st.phase) {
    case SessionPhase::Finished: {
      m_outcome = "clean";
      m_out << formatPause(m_session, st);
      const std::vector<Tensor> outputs = m_session.finish().get();
      for (std::size_t i = 0; i < outputs.size(); ++i)
        m_out << "  output " << i << ": " << debug::toString(debug::statsOf(outputs[i])) << "\n";
      m_out << "the updates were applied; `run` starts the next call\n";
      return;
    }
    case SessionPhase::Failed:
      m_outcome = "error";
      break;
    case SessionPhase::Paused:
      if (st.reason == PauseKind::NanGuard)
        m_outcome = "nan";
      else if (st.reason == PauseKind::Breakpoint || st.reason == PauseKind::BreakPointOp)
        m_outcome = "breakpoint";
      break;
    default:
      break;
  }
  m_out << formatPause(m_session, st);
}

void DebugConsole::requirePaused(const char* what) const {
  const SessionState st = m_session.state();
  if (st.phase != SessionPhase::Paused && st.phase != SessionPhase::Ready)
    throw std::logic_error(std::string(what) + " needs a paused execution; the session is " +
                           std::string(debug::phaseName(st.phase)) +
                           (st.phase == SessionPhase::Idle ? " (use `run` or `step`)" : ""));
}

SessionState DebugConsole::ensureStarted() {
  const SessionState st = m_session.state();
  if (st.phase == SessionPhase::Ready || st.phase == SessionPhase::Paused) return st;
  m_edits.clear();
  return m_session.start(m_args).get();
}

bool DebugConsole::execute(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() == '#') return true;
  auto [cmd, rest] = word(line);
  if (cmd == "quit" || cmd == "q" || cmd == "exit") return false;
  try {
    dispatch(cmd, rest);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    m_out << "error: " << msg << "\n";
  }
  m_out.flush();
  return true;
}

void DebugConsole::dispatch(const std::string& cmd, std::string_view rest) {
  auto noArgs = [&] {
    if (!rest.empty())
      throw std::invalid_argument("`" + cmd + "` takes no argument, found '" + std::string(rest) +
                                  "'");
  };
  if (cmd == "help" || cmd == "h" || cmd == "?") {
    m_out << helpText();
  } else if (cmd == "break" || cmd == "b") {
    cmdBreak(rest, false);
  } else if (cmd == "tbreak") {
    cmdBreak(rest, true);
  } else if (cmd == "delete" || cmd == "d") {
    cmdDelete(rest);
  } else if (cmd == "disable") {
    cmdEnable(rest, false);
  } else if (cmd == "enable") {
    cmdEnable(rest, true);
  } else if (cmd == "info" || cmd == "i") {
    cmdInfo(rest);
  } else if (cmd == "run" || cmd == "r") {
    noArgs();
    const SessionState st = m_session.state();
    if (st.phase == SessionPhase::Ready || st.phase == SessionPhase::Paused)
      m_session.restart().get();
    else
      m_session.start(m_args).get();
    m_edits.clear();
    show(m_session.run().get());
  } else if (cmd == "restart") {
    noArgs();
    const SessionState st = m_session.state();
    m_edits.clear();
    show(st.phase == SessionPhase::Idle ? m_session.start(m_args).get()
                                        : m_session.restart().get());
  } else if (cmd == "continue" || cmd == "c" || cmd == "cont") {
    noArgs();
    ensureStarted();
    show(m_session.run().get());
  } else if (cmd == "step" || cmd == "s") {
    noArgs();
    ensureStarted();
    show(m_session.stepInto().get());
  } else if (cmd == "next" || cmd == "n") {
    noArgs();
    ensureStarted();
    show(m_session.step().get());
  } else if (cmd == "stepi" || cmd == "si") {
    const int n = rest.empty() ? 1 : parseCount(rest, "a step count");
    ensureStarted();
    SessionState st = m_session.state();
    for (int k = 0; k < n; ++k) {
      st = m_session.stepInto().get();
      if (st.phase != SessionPhase::Paused || st.reason != PauseKind::Step) break;
    }
    show(st);
  } else if (cmd == "finish") {
    noArgs();
    ensureStarted();
    show(m_session.stepOut().get());
  } else if (cmd == "until" || cmd == "u") {
    const std::string node(trim(rest));
    std::int64_t id = parseCount(node.starts_with("node:") ? node.substr(5) : node, "a node id");
    ensureStarted();
    show(m_session.runToNode(id).get());
  } else if (cmd == "iter") {
    // Note [Loop frames]: "iter NODE K" runs to the start of iteration K of loop node NODE.
    const std::string args(trim(rest));
    const std::size_t space = args.find(' ');
    if (space == std::string::npos)
      throw std::invalid_argument("expected `iter NODE K` (a loop node and an iteration)");
    const std::string node = args.substr(0, space);
    const std::int64_t id =
        parseCount(node.starts_with("node:") ? node.substr(5) : node, "a node id");
    const std::int64_t k = parseCount(trim(args.substr(space + 1)), "an iteration");
    ensureStarted();
    show(m_session.runToIteration(id, k).get());
  } else if (cmd == "where" || cmd == "bt" || cmd == "backtrace") {
    noArgs();
    const SessionState st = m_session.state();
    if (st.frames.empty()) {
      m_out << "no execution (" << debug::phaseName(st.phase) << ")\n";
      return;
    }
    for (std::size_t i = 0; i < st.frames.size(); ++i) {
      const auto& f = st.frames[i];
      m_out << (i == m_frame ? "> " : "  ") << "#" << i << " "
            << (f.callerNodeId < 0 ? std::string("<graph>")
                                   : "node " + std::to_string(f.callerNodeId) + " " + f.callerOp)
            << "  pc " << f.pc << "/" << f.scheduleSize;
      if (f.iteration >= 0) m_out << "  iteration " << f.iteration << "/" << f.iterations;
      if (f.nextNodeId >= 0) m_out << ", next: node " << f.nextNodeId << " " << f.nextNodeOp;
      m_out << "\n";
    }
  } else if (cmd == "frame" || cmd == "f" || cmd == "up" || cmd == "down") {
    cmdFrame(cmd == "frame" || cmd == "f" ? rest : std::string_view(cmd == "up" ? "up" : "down"));
  } else if (cmd == "print" || cmd == "p") {
    cmdPrint(rest);
  } else if (cmd == "set") {
    cmdSet(rest);
  } else if (cmd == "recompute") {
    noArgs();
    const debug::RecomputeResult r = m_session.recompute().get();
    m_out << "recomputed " << r.rerunNodes.size() << " node(s)";
    if (!r.rerunNodes.empty()) {
      m_out << ":";
      for (auto id : r.rerunNodes) m_out << " " << id;
    }
    m_out << "; " << r.changedVars.size() << " value(s) changed";
    if (!r.changedVars.empty()) {
      m_out << ":";
      for (auto id : r.changedVars) m_out << " #" << id;
    }
    m_out << "\n";
  } else if (cmd == "undo") {
    std::string name(trim(rest));
    if (name.empty()) {
      if (m_edits.empty()) throw std::logic_error("nothing to undo: no value was edited");
      name = m_edits.back();
    }
    m_session.undoEdit(name, m_frame).get();
    std::erase(m_edits, name);
    m_out << "restored " << name << " (`recompute` propagates it)\n";
  } else if (cmd == "save") {
    cmdSave(rest);
  } else if (cmd == "nanguard") {
    cmdNanGuard(rest);
  } else if (cmd == "list" || cmd == "l") {
    cmdList(rest);
  } else {
    throw std::invalid_argument("unknown command '" + cmd + "' (type `help`)");
  }
}

void DebugConsole::cmdBreak(std::string_view rest, bool temporary) {
  if (rest.empty()) throw std::invalid_argument("`break` expects a SPEC such as node:12 or op:Dot");
  debug::BreakpointSpec spec = debug::parseBreakSpec(rest);
  spec.temporary = temporary;
  const int id = m_session.addBreakpoint(spec).get();
  for (const auto& b : m_session.breakpoints().get()) {
    if (b.id != id) continue;
    m_out << (temporary ? "temporary breakpoint " : "breakpoint ") << id << ": "
          << debug::toString(b.spec) << " on " << b.nodes.size() << " node(s)";
    if (!b.note.empty()) m_out << " (" << b.note << ")";
    m_out << "\n";
  }
}

void DebugConsole::cmdDelete(std::string_view rest) {
  if (rest.empty()) {
    const auto all = m_session.breakpoints().get();
    for (const auto& b : all) m_session.removeBreakpoint(b.id).get();
    m_out << "deleted " << all.size() << " breakpoint(s)\n";
    return;
  }
  const int id = parseCount(rest, "a breakpoint number");
  m_session.removeBreakpoint(id).get();
  m_out << "deleted breakpoint " << id << "\n";
}

void DebugConsole::cmdEnable(std::string_view rest, bool enabled) {
  const int id = parseCount(rest, "a breakpoint number");
  m_session.setBreakpointEnabled(id, enabled).get();
  m_out << (enabled ? "enabled" : "disabled") << " breakpoint " << id << "\n";
}

void DebugConsole::cmdInfo(std::string_view rest) {
  auto [what, arg] = word(rest);
  if (what == "breakpoints" || what == "b" || what == "break") {
    const auto all = m_session.breakpoints().get();
    if (all.empty()) m_out << "no breakpoints\n";
    for (const auto& b : all) {
      m_out << b.id << "  " << debug::toString(b.spec) << (b.spec.enabled ? "" : "  [disabled]")
            << (b.spec.temporary ? "  [temporary]" : "") << "  hits " << b.hits << "  nodes";
      for (auto n : b.nodes) m_out << " " << n;
      if (!b.note.empty()) m_out << "  (" << b.note << ")";
      m_out << "\n";
    }
  } else if (what == "inputs") {
    requirePaused("info inputs");
    const auto next = m_session.nextInputs().get();
    if (next.empty()) m_out << "no next node\n";
    for (const auto& v : next) m_out << valueLine(v) << "\n";
  } else if (what == "node") {
    const SessionState st = m_session.state();
    std::int64_t id = -1;
    if (!arg.empty())
      id = parseCount(arg.starts_with("node:") ? arg.substr(5) : arg, "a node id");
    else if (!st.frames.empty())
      id = st.frames.back().nextNodeId;
    const Apply* n = id >= 0 ? findNode(m_session.function().program(), id) : nullptr;
    if (!n) throw std::invalid_argument("no node " + std::to_string(id) + " in the function");
    m_out << nodeLine(*n) << "\n";
    for (std::size_t i = 0; i < n->inputs().size(); ++i)
      m_out << "  input " << i << ": " << n->inputs()[i]->displayName() << " "
            << n->inputs()[i]->type().str() << "\n";
    for (int i = 0; i < n->nOutputs(); ++i)
      m_out << "  output " << i << ": " << n->outputRef(i).displayName() << " "
            << n->outputRef(i).type().str() << "\n";
  } else if (what == "frame") {
    const SessionState st = m_session.state();
    if (st.frames.empty()) throw std::logic_error("no execution is active");
    const auto values = m_session.values(m_frame).get();
    m_out << "frame #" << m_frame << ": " << values.size() << " value(s) computed\n";
    for (const auto& v : values) m_out << "  " << valueLine(v) << "\n";
  } else {
    throw std::invalid_argument("`info` expects breakpoints, inputs, node [ID] or frame, found '" +
                                what + "'");
  }
}

void DebugConsole::cmdPrint(std::string_view rest) {
  if (rest.empty())
    throw std::invalid_argument("`print` expects a variable: a name, #ID or node:ID");
  auto [name, sliceText] = splitSliceSuffix(rest);
  const SliceSpec slice = sliceText.empty() ? SliceSpec{} : parseSlice(sliceText);
  const SessionState st = m_session.state();
  if (st.frames.empty())
    throw std::logic_error("no execution is active (" + std::string(debug::phaseName(st.phase)) +
                           "); values exist while paused");
  auto v = m_session.value(name, m_frame).get();
  if (!v) {
    m_out << name << ": not computed yet\n";
    return;
  }
  m_out << valueLine(*v) << "\n";
  const Tensor shown = sliceText.empty() ? v->value : applySlice(v->value, slice);
  m_out << shown.toString() << "\n";
}

void DebugConsole::cmdSet(std::string_view rest) {
  const std::size_t eq = rest.find('=');
  if (eq == std::string_view::npos)
    throw std::invalid_argument(
        "`set` expects VAR = FILE.npy | zeros | fill K | scale K | nan@I,J, found '" +
        std::string(rest) + "'");
  const std::string name(trim(rest.substr(0, eq)));
  const ValueEdit edit = parseValueEdit(rest.substr(eq + 1));
  requirePaused("set");
  auto v = m_session.value(name, m_frame).get();
  if (!v) throw std::logic_error(name + " is not computed yet; it can be set once its node ran");
  const Tensor edited = applyValueEdit(v->value, edit);
  m_session.setValue(name, edited, m_frame).get();
  m_edits.push_back(name);
  m_out << "set " << name << ": " << debug::toString(debug::statsOf(edited))
        << " (`recompute` re-runs what already read it)\n";
}

void DebugConsole::cmdSave(std::string_view rest) {
  auto [name, path] = word(rest);
  if (name.empty() || path.empty()) throw std::invalid_argument("`save` expects VAR FILE.npy");
  auto v = m_session.value(name, m_frame).get();
  if (!v) throw std::logic_error(name + " is not computed yet");
  io::saveNpy(v->value, std::string(path));
  m_out << "saved " << name << " to " << path << "\n";
}

void DebugConsole::cmdFrame(std::string_view rest) {
  const SessionState st = m_session.state();
  if (st.frames.empty()) throw std::logic_error("no execution is active");
  const std::size_t top = st.frames.size() - 1;
  if (rest == "up") {
    if (m_frame == 0) throw std::logic_error("already at the outermost frame #0");
    --m_frame;
  } else if (rest == "down") {
    if (m_frame >= top)
      throw std::logic_error("already at the innermost frame #" + std::to_string(top));
    ++m_frame;
  } else {
    const int n = parseCount(rest, "a frame number");
    if (static_cast<std::size_t>(n) > top)
      throw std::invalid_argument("no frame #" + std::to_string(n) + "; frames are #0..#" +
                                  std::to_string(top));
    m_frame = static_cast<std::size_t>(n);
  }
  const auto& f = st.frames[m_frame];
  m_out << "#" << m_frame << " "
        << (f.callerNodeId < 0 ? std::string("<graph>")
                               : "node " + std::to_string(f.callerNodeId) + " " + f.callerOp)
        << "  pc " << f.pc << "/" << f.scheduleSize << "\n";
}

void DebugConsole::cmdList(std::string_view rest) {
  const int around = rest.empty() ? 5 : parseCount(rest, "a line count");
  const SessionState st = m_session.state();
  const Program& root = m_session.function().program();
  const Program* p = st.frames.empty() ? &root : st.frames[m_frame].program;
  if (!p)
    throw std::logic_error("the program of frame #" + std::to_string(m_frame) + " is not known");
  const std::size_t pc = st.frames.empty() ? 0 : st.frames[m_frame].pc;
  const auto& schedule = p->schedule();
  const std::size_t lo = pc > static_cast<std::size_t>(around) ? pc - around : 0;
  const std::size_t hi = std::min(schedule.size(), pc + static_cast<std::size_t>(around) + 1);
  for (std::size_t i = lo; i < hi; ++i)
    m_out << (i == pc ? "=> " : "   ") << i << "  " << nodeLine(*schedule[i]) << "\n";
  if (pc >= schedule.size()) m_out << "=> " << pc << "  (end)\n";
}

void DebugConsole::cmdNanGuard(std::string_view rest) {
  if (rest == "on") {
    m_session.setNanGuard(debug::NanGuardOptions{}).get();
    m_out << "NanGuard on (nan, inf, big) from the next run\n";
  } else if (rest == "off") {
    m_session.setNanGuard(std::nullopt).get();
    m_out << "NanGuard off from the next run\n";
  } else {
    throw std::invalid_argument("`nanguard` expects on or off, found '" + std::string(rest) + "'");
  }
}

}  // namespace tscope::engine::session
