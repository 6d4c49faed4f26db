#pragma once
// DebugController: the window's debugger over engine/debug's DebugSession, for the open document.
// It compiles the document's original graph (the chosen mode) on a worker, owns the Function and
// the session, and turns the session's futures into queued signals that carry immutable
// snapshots. The GUI thread never waits for a future.
//
//   DebugController c;
//   c.setDocument(doc);                                  // breakpoints and inputs from QSettings
//   c.addBreakpoint(parseBreakSpec("node:12"));          // on the original graph
//   connect(&c, &DebugController::snapshotChanged, ...); // each pause, finish, stop, failure
//   c.run();                                             // compiles first when needed
//
// Note [Debugger threads]: every command (compile, start, run, step, values, edits) runs as one
// job on the controller's command thread, in the order it was given; the job waits for the
// session's future there and posts the result (the state and every value of every frame, read in
// the same job) to the GUI thread. stop() and interrupt() do not queue behind a running command:
// the session acts on them at once (the next node boundary) and a second thread waits for their
// answer. The session and its Function live in a holder shared with the jobs, so a job still
// waiting when the document changes finishes on a live session; results of an older holder
// (generation) are dropped.

#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/debug/lineage.h"
#include "engine/debug/nan_guard.h"
#include "gui/app/document.h"
#include "visualizers/threads/hand_off.h"

#include <QObject>
#include <QString>
#include <QThreadPool>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tscope::gui {

// The engine's names (std::string_view, not NUL-terminated in general) as a QString.
inline QString qstr(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

// Where the inputs of a run come from (remembered per file, Note [Debugger settings]).
struct DebugInputs {
  enum class Kind { TestValues, Random };
  // TestValues: each input's test value, else random values from the seed. Random: random values
  // (of the test value's shape when there is one) for every input without a .npy file.
  Kind kind = Kind::TestValues;
  quint64 seed = 0;
  std::map<QString, QString> npy;  // input name -> .npy file (replaces the other sources)
  friend bool operator==(const DebugInputs&, const DebugInputs&) = default;
};

// One value computed at a pause, with the counts a health pill shows.
struct DebugValue {
  engine::debug::ValueView view;
  std::int64_t negative = 0, zero = 0, positive = 0;  // finite elements
};

// What the window shows of one pause (or finish, stop, failure): immutable.
struct DebugSnapshot {
  engine::debug::SessionState state;
  std::vector<std::vector<DebugValue>> frames;  // the values of each frame (state.frames order)
  std::vector<engine::debug::BreakpointInfo> breakpoints;
  std::uint64_t run = 0;  // which start() of the controller this belongs to (1, 2, ...)
  // The value of a variable of frame `frame` by producer node and output (or by name for inputs
  // and shared values, producer -1); null when not computed.
  const DebugValue* find(std::size_t frame, std::int64_t producer, int output,
                         const std::string& name = {}) const;
  const DebugValue* findByName(const std::string& name, std::size_t frame = 0) const;
  // Indexes frames for find and findByName (constant time instead of a pass over a frame's
  // values: the window looks up every node's value, 20,000 of them on a long chain). Called once
  // the frames are filled, on the worker that builds the snapshot; without it the look-ups scan.
  void buildIndex();

 private:
  struct FrameIndex {
    std::unordered_map<std::uint64_t, std::size_t> byOutput;   // (producer << 16 | output)
    std::unordered_map<std::string, std::size_t> byName;       // the first value of each name
    std::unordered_map<std::string, std::size_t> inputByName;  // producer -1 only
  };
  std::vector<FrameIndex> m_index;
};

class DebugController : public QObject {
  Q_OBJECT
 public:
  struct Breakpoint {
    engine::debug::BreakpointSpec spec;  // node targets name the original graph's node ids
    int sessionId = -1;                  // in the current session; -1 when not set there
    engine::debug::BreakpointInfo info;  // hits, where it landed (from the latest snapshot)
    QString error;                       // why the session refused it
  };

  explicit DebugController(QObject* parent = nullptr);
  ~DebugController() override;

  // The document to debug (null: none). Drops the session; reads the file's settings.
  void setDocument(std::shared_ptr<const Document> document);
  const std::shared_ptr<const Document>& document() const { return m_document; }

  // The compile mode (the next compile uses it; the session is dropped).
  void setMode(engine::Mode mode);
  engine::Mode mode() const { return m_mode; }
  // Where the debugged function runs (the Run toolbar's device chooser); remembered per file.
  // Changing it drops the session, as a mode change does.
  void setDevice(engine::Device device);
  engine::Device device() const { return m_device; }
  void setInputs(DebugInputs inputs);
  const DebugInputs& inputs() const { return m_inputs; }

  // NanGuard (action pause, or collect: every event is listed and the run goes on).
  void setNanGuardEnabled(bool on);
  bool nanGuardEnabled() const { return m_nanGuardOn; }
  // Throws std::invalid_argument (NanGuardOptions::validate) and changes nothing then.
  void setNanGuardOptions(engine::debug::NanGuardOptions options, bool collect);
  const engine::debug::NanGuardOptions& nanGuardOptions() const { return m_nanOptions; }
  bool nanGuardCollects() const { return m_nanCollect; }
  // Every NanGuard event of the current run (pauses and, when collecting, the rest).
  const std::vector<std::shared_ptr<const engine::debug::NanReport>>& nanEvents() const {
    return m_nanEvents;
  }

  // Breakpoints, kept across sessions and saved with the file's settings.
  const std::vector<Breakpoint>& breakpoints() const { return m_breakpoints; }
  void addBreakpoint(const engine::debug::BreakpointSpec& spec);
  void removeBreakpoint(int index);
  void setBreakpointEnabled(int index, bool enabled);
  // The breakpoint on original node `id` ("node:ID" without condition), or -1.
  int nodeBreakpoint(std::int64_t originalId) const;
  void toggleNodeBreakpoint(std::int64_t originalId);

  // Commands (queued; results arrive as snapshotChanged). Run and the steps start a new
  // execution when none is active.
  void run();
  void step();
  void stepInto();
  void stepOut();
  void runToNode(std::int64_t nodeId);  // a node of the compiled graph
  void restart();
  void stop();
  void interrupt();
  // Edits at a pause (Note [Edits and recompute] of debug_session.h).
  void setValue(const QString& nameOrId, engine::Tensor value, std::size_t frame = 0);
  void recompute();
  void undoEdit(const QString& nameOrId, std::size_t frame = 0);
  // Writes the replayable .tsg of the current run (engine/debug/failure.h); errors go to failed().
  void saveFailure(const QString& path);

  // State, on the GUI thread.
  engine::debug::SessionPhase phase() const;
  bool isBusy() const { return m_pending > 0; }  // a command is queued or running
  bool isCompiled() const { return m_holder != nullptr; }
  std::shared_ptr<const DebugSnapshot> snapshot() const { return m_snapshot; }
  // The compiled function and its lineage to the original graph (null before the first compile).
  const engine::Function* function() const;
  std::shared_ptr<const engine::debug::NodeLineage> lineage() const;
  // The names edited and not undone, per frame.
  const std::vector<std::pair<std::size_t, QString>>& edits() const { return m_edits; }

  // The settings key prefix of a file (Note [Debugger settings]).
  static QString settingsKey(const QString& path);

 signals:
  void documentChanged();  // setDocument (before breakpointsChanged)
  void compiled();
  void busyChanged(bool busy);
  void snapshotChanged(std::shared_ptr<const DebugSnapshot> snapshot);
  void breakpointsChanged();
  void nanEventsChanged();
  // After recompute(): the nodes that ran again and the variables whose value changed.
  void recomputed(engine::debug::RecomputeResult result);
  void editsChanged();
  void failed(QString message);
  void message(QString text);

 private:
  struct Holder;
  struct Result;
  using Job = std::function<void(Holder&, Result&)>;
  void submit(Job job, bool start);
  void ensureHolder();
  void finishJob(std::uint64_t generation, std::shared_ptr<Result> result);
  void dropSession();
  void loadSettings();
  void saveBreakpoints() const;
  void saveInputs() const;
  std::optional<engine::debug::NanGuardOptions> sessionNanOptions() const;

  std::shared_ptr<const Document> m_document;
  engine::Mode m_mode = engine::Mode::None;
  engine::Device m_device = engine::Device::Cpu;
  DebugInputs m_inputs;
  bool m_nanGuardOn = false;
  bool m_nanCollect = false;
  engine::debug::NanGuardOptions m_nanOptions;
  std::vector<Breakpoint> m_breakpoints;
  std::vector<std::shared_ptr<const engine::debug::NanReport>> m_nanEvents;
  std::vector<std::pair<std::size_t, QString>> m_edits;

  std::shared_ptr<Holder> m_holder;
  std::uint64_t m_generation = 0;
  std::uint64_t m_runs = 0;
  int m_pending = 0;
  std::shared_ptr<const DebugSnapshot> m_snapshot;
  QThreadPool m_commands;        // one thread: the commands in order
  QThreadPool m_waiters;         // stop / interrupt answers
  vis::Mailbox m_mailbox{this};  // the jobs' results, to the GUI thread
};

}  // namespace tscope::gui

Q_DECLARE_METATYPE(std::shared_ptr<const tscope::gui::DebugSnapshot>)
Q_DECLARE_METATYPE(tscope::engine::debug::RecomputeResult)
