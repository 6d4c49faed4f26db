#include "gui/app/debug/debug_controller.h"

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/debug/failure.h"
#include "engine/io/npy.h"
#include "engine/session/run_graph.h"
#include "gui/app/device_choice.h"

#include <QCryptographicHash>
#include <QFileInfo>
#include <QMetaObject>
#include <QSettings>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>

namespace tscope::gui {

namespace debug = engine::debug;
using debug::SessionPhase;

// Note [Debugger settings]: per file (keyed by a hash of its absolute path, as the group states
// are): the breakpoints ("1|node:12@nan" for enabled|spec), the mode, the inputs' kind, seed and
// .npy files.
QString DebugController::settingsKey(const QString& path) {
  const QByteArray hash = QCryptographicHash::hash(QFileInfo(path).absoluteFilePath().toUtf8(),
                                                   QCryptographicHash::Sha1)
                              .toHex()
                              .left(16);
  return QStringLiteral("debug/%1").arg(QString::fromLatin1(hash));
}

namespace {
std::uint64_t outputKey(std::int64_t producer, int output) {
  return (static_cast<std::uint64_t>(producer) << 16) ^ static_cast<std::uint64_t>(output);
}
}  // namespace

void DebugSnapshot::buildIndex() {
  m_index.assign(frames.size(), {});
  for (std::size_t f = 0; f < frames.size(); ++f) {
    FrameIndex& ix = m_index[f];
    for (std::size_t k = 0; k < frames[f].size(); ++k) {
      const engine::debug::ValueView& v = frames[f][k].view;
      if (v.producerId >= 0) ix.byOutput.emplace(outputKey(v.producerId, v.outputIndex), k);
      if (v.producerId < 0) ix.inputByName.emplace(v.name, k);
      ix.byName.emplace(v.name, k);  // emplace keeps the first, as the scan finds it
    }
  }
}

const DebugValue* DebugSnapshot::find(std::size_t frame, std::int64_t producer, int output,
                                      const std::string& name) const {
  if (frame >= frames.size()) return nullptr;
  if (frame < m_index.size()) {
    const FrameIndex& ix = m_index[frame];
    if (producer >= 0) {
      auto it = ix.byOutput.find(outputKey(producer, output));
      return it == ix.byOutput.end() ? nullptr : &frames[frame][it->second];
    }
    if (name.empty()) return nullptr;
    auto it = ix.inputByName.find(name);
    return it == ix.inputByName.end() ? nullptr : &frames[frame][it->second];
  }
  for (const DebugValue& v : frames[frame]) {
    if (producer >= 0 && v.view.producerId == producer && v.view.outputIndex == output) return &v;
    if (producer < 0 && v.view.producerId < 0 && !name.empty() && v.view.name == name) return &v;
  }
  return nullptr;
}

const DebugValue* DebugSnapshot::findByName(const std::string& name, std::size_t frame) const {
  if (frame >= frames.size()) return nullptr;
  if (frame < m_index.size()) {
    auto it = m_index[frame].byName.find(name);
    return it == m_index[frame].byName.end() ? nullptr : &frames[frame][it->second];
  }
  for (const DebugValue& v : frames[frame])
    if (v.view.name == name) return &v;
  return nullptr;
}

struct DebugController::Holder {
  std::shared_ptr<const Document> document;
  engine::Mode mode = engine::Mode::None;
  engine::Device device = engine::Device::Cpu;
  DebugInputs inputs;
  std::optional<debug::NanGuardOptions> nanPause;    // NanGuard pausing (the session's)
  std::optional<debug::NanGuardOptions> nanCollect;  // NanGuard collecting (our observer)
  std::shared_ptr<engine::Function> function;
  std::shared_ptr<debug::NodeLineage> lineage;
  std::shared_ptr<debug::NanGuard> collector;
  std::unique_ptr<debug::DebugSession> session;  // destroyed before the function
  std::vector<engine::Tensor> args;
  QString compileError;
  // Command thread only: breakpoint keys -> session ids; executions started.
  std::map<int, int> breakpointIds;
  std::atomic<std::uint64_t> runs{0};
  std::atomic<bool> ready{false};

  ~Holder() {
    session.reset();  // joins the session's thread before the Function goes
  }
};

struct DebugController::Result {
  std::shared_ptr<DebugSnapshot> snapshot;
  QString error;
  QString message;
  bool compiledNow = false;
  bool compileFailed = false;
  bool hasBreakpoints = false;
  std::shared_ptr<engine::Function> function;
  std::shared_ptr<debug::NodeLineage> lineage;
  // Breakpoint keys and what the session made of them.
  std::vector<std::pair<int, QString>> breakpointErrors;
  std::map<int, int> breakpointIds;
  std::optional<debug::RecomputeResult> recompute;
  std::vector<std::shared_ptr<const debug::NanReport>> collected;
  std::optional<std::pair<std::size_t, QString>> editAdded, editUndone;
};

namespace {

// Breakpoint keys: stable across index changes (Holder::breakpointIds).
int g_nextKey = 1;

DebugValue withCounts(debug::ValueView view) {
  DebugValue v;
  const engine::Tensor& t = view.value;
  if (t.defined() && t.numel() > 0) {
    const engine::Tensor d = t.astype(engine::DType::Float64);
    const double* p = d.data<double>();
    for (std::int64_t i = 0, n = d.numel(); i < n; ++i) {
      if (!std::isfinite(p[i])) continue;
      if (p[i] < 0)
        ++v.negative;
      else if (p[i] > 0)
        ++v.positive;
      else
        ++v.zero;
    }
  }
  v.view = std::move(view);
  return v;
}

engine::Tensor randomValue(engine::DType dtype, const engine::Shape& shape, std::mt19937_64& rng) {
  engine::Tensor t(dtype, shape);
  std::vector<double> values(static_cast<std::size_t>(t.numel()));
  std::uniform_real_distribution<double> real(-1, 1);
  std::uniform_int_distribution<int> integer(0, 9), boolean(0, 1);
  for (double& x : values)
    x = dtype == engine::DType::Bool ? boolean(rng)
        : engine::isFloat(dtype)     ? real(rng)
                                     : integer(rng);
  return engine::Tensor::fromDoubles(dtype, shape, values);
}

std::vector<engine::Tensor> prepareArgs(const engine::FunctionGraph& graph, const DebugInputs& in,
                                        engine::Mode mode, std::vector<engine::VarPtr>& inputs) {
  engine::session::RunInputs ri;
  ri.mode = mode;
  ri.randomSeed = in.seed;
  for (const auto& [name, path] : in.npy) {
    try {
      ri.byName[name.toStdString()] = engine::io::loadNpy(path.toStdString());
    } catch (const std::exception& e) {
      throw std::runtime_error("input '" + name.toStdString() + "': cannot read " +
                               path.toStdString() + ": " + e.what());
    }
  }
  if (in.kind == DebugInputs::Kind::Random) {
    std::mt19937_64 rng(in.seed);
    for (const engine::VarPtr& v : graph.inputs()) {
      if (dynamic_cast<const engine::SharedVariable*>(v.get()) ||
          dynamic_cast<const engine::Constant*>(v.get()))
        continue;
      if (ri.byName.count(v->name()) || !v->testValue()) continue;
      ri.byName[v->name()] = randomValue(v->type().dtype(), v->testValue()->shape(), rng);
    }
  }
  engine::session::PreparedRun run = engine::session::prepareRun(graph, ri);
  inputs = run.inputs;
  return run.args;
}

bool active(SessionPhase p) {
  return p == SessionPhase::Ready || p == SessionPhase::Paused || p == SessionPhase::Running;
}

}  // namespace

DebugController::DebugController(QObject* parent) : QObject(parent) {
  m_commands.setMaxThreadCount(1);
  m_waiters.setMaxThreadCount(2);
}

DebugController::~DebugController() {
  dropSession();
  m_commands.waitForDone();
  m_waiters.waitForDone();
}

void DebugController::dropSession() {
  ++m_generation;
  if (m_holder) {
    if (m_holder->ready.load() && m_holder->session) m_holder->session->stop();
    m_holder.reset();  // the last job holding it destroys it on the command thread
  }
  for (Breakpoint& b : m_breakpoints) {
    b.sessionId = -1;
    b.info = {};
    b.error.clear();
  }
  m_snapshot.reset();
  m_nanEvents.clear();
  m_edits.clear();
  if (m_pending != 0) {
    m_pending = 0;
    emit busyChanged(false);
  }
  emit snapshotChanged(nullptr);
  emit breakpointsChanged();
  emit nanEventsChanged();
  emit editsChanged();
}

void DebugController::setDocument(std::shared_ptr<const Document> document) {
  dropSession();
  m_document = std::move(document);
  m_breakpoints.clear();
  m_inputs = {};
  m_mode = engine::Mode::None;
  m_device = engine::Device::Cpu;
  if (m_document) loadSettings();
  emit documentChanged();
  emit breakpointsChanged();
}

void DebugController::loadSettings() {
  QSettings s;
  const QString key = settingsKey(m_document->path);
  for (const QString& entry : s.value(key + "/breakpoints").toStringList()) {
    const qsizetype bar = entry.indexOf('|');
    if (bar < 0) continue;
    try {
      Breakpoint b;
      b.spec = debug::parseBreakSpec(entry.mid(bar + 1).toStdString());
      b.spec.enabled = entry.left(bar) == QLatin1String("1");
      b.info.id = g_nextKey++;
      m_breakpoints.push_back(std::move(b));
    } catch (const std::exception& e) {
      emit message(tr("Ignored a saved breakpoint: %1").arg(QString::fromUtf8(e.what())));
    }
  }
  const QString mode = s.value(key + "/mode").toString();
  for (engine::Mode m :
       {engine::Mode::None, engine::Mode::FastCompile, engine::Mode::FastRun, engine::Mode::Debug})
    if (mode == qstr(engine::modeName(m))) m_mode = m;
  // A file last debugged on a GPU opens on the GPU again only where there is one.
  if (s.value(key + "/device").toString() == QLatin1String("cuda") && cudaAvailable())
    m_device = engine::Device::Cuda;
  m_inputs.kind = s.value(key + "/inputs/kind").toString() == QLatin1String("random")
                      ? DebugInputs::Kind::Random
                      : DebugInputs::Kind::TestValues;
  m_inputs.seed = s.value(key + "/inputs/seed", 0).toULongLong();
  const QVariantMap npy = s.value(key + "/inputs/npy").toMap();
  for (auto it = npy.begin(); it != npy.end(); ++it) m_inputs.npy[it.key()] = it.value().toString();
}

void DebugController::saveBreakpoints() const {
  if (!m_document) return;
  QStringList list;
  for (const Breakpoint& b : m_breakpoints)
    list << QStringLiteral("%1|%2")
                .arg(b.spec.enabled ? 1 : 0)
                .arg(QString::fromStdString(debug::toString(b.spec)));
  QSettings().setValue(settingsKey(m_document->path) + "/breakpoints", list);
}

void DebugController::saveInputs() const {
  if (!m_document) return;
  QSettings s;
  const QString key = settingsKey(m_document->path);
  s.setValue(key + "/mode", qstr(engine::modeName(m_mode)));
  s.setValue(key + "/device", qstr(engine::deviceName(m_device)));
  s.setValue(key + "/inputs/kind", m_inputs.kind == DebugInputs::Kind::Random
                                       ? QStringLiteral("random")
                                       : QStringLiteral("test"));
  s.setValue(key + "/inputs/seed", m_inputs.seed);
  QVariantMap npy;
  for (const auto& [name, path] : m_inputs.npy) npy.insert(name, path);
  s.setValue(key + "/inputs/npy", npy);
}

void DebugController::setMode(engine::Mode mode) {
  if (mode == m_mode) return;
  m_mode = mode;
  saveInputs();
  dropSession();
}

void DebugController::setDevice(engine::Device device) {
  if (device == m_device) return;
  m_device = device;
  saveInputs();
  dropSession();
}

void DebugController::setInputs(DebugInputs inputs) {
  if (inputs == m_inputs) return;
  m_inputs = std::move(inputs);
  saveInputs();
  dropSession();
}

void DebugController::setNanGuardEnabled(bool on) {
  if (on == m_nanGuardOn) return;
  m_nanGuardOn = on;
  dropSession();  // takes effect with the next start (a new session: Note [Debugger threads])
}

void DebugController::setNanGuardOptions(debug::NanGuardOptions options, bool collect) {
  options.validate();
  m_nanOptions = std::move(options);
  m_nanCollect = collect;
  if (m_nanGuardOn) dropSession();
}

std::optional<debug::NanGuardOptions> DebugController::sessionNanOptions() const {
  if (!m_nanGuardOn) return std::nullopt;
  return m_nanOptions;
}

engine::debug::SessionPhase DebugController::phase() const {
  if (!m_holder) return SessionPhase::Idle;
  if (m_pending > 0) return SessionPhase::Running;
  return m_snapshot ? m_snapshot->state.phase : SessionPhase::Idle;
}

const engine::Function* DebugController::function() const {
  return m_holder && m_holder->ready.load() ? m_holder->function.get() : nullptr;
}

std::shared_ptr<const debug::NodeLineage> DebugController::lineage() const {
  return m_holder && m_holder->ready.load() ? m_holder->lineage : nullptr;
}

void DebugController::ensureHolder() {
  if (m_holder || !m_document) return;
  auto h = std::make_shared<Holder>();
  h->document = m_document;
  h->mode = m_mode;
  h->device = m_device;
  h->inputs = m_inputs;
  if (auto o = sessionNanOptions()) (m_nanCollect ? h->nanCollect : h->nanPause) = *o;
  m_holder = h;
  std::vector<std::pair<int, debug::BreakpointSpec>> specs;
  for (const Breakpoint& b : m_breakpoints) specs.emplace_back(b.info.id, b.spec);
  submit(
      [specs](Holder& h, Result& r) {
        const engine::FunctionGraph& graph = *h.document->original;
        std::vector<engine::VarPtr> inputs;
        h.args = prepareArgs(graph, h.inputs, h.mode, inputs);
        engine::CompileOptions options;
        options.mode = h.mode;
        options.device = h.device;
        // Starts the runtime once; without a device it throws CudaUnavailable, whose message
        // the window shows as the reason the run could not be prepared.
        if (h.device == engine::Device::Cuda) engine::cuda::registerCudaBackend();
        h.function = std::make_shared<engine::Function>(
            engine::compile(inputs, graph.outputs(), {}, options));
        h.lineage =
            std::make_shared<debug::NodeLineage>(h.function->graph(), h.function->rewriteLog());
        debug::DebugSessionOptions so;
        if (h.nanCollect) {
          debug::NanGuardOptions o = *h.nanCollect;
          o.action = debug::NanAction::Warn;
          h.collector = std::make_shared<debug::NanGuard>(o);
          h.collector->watch(*h.function, &graph);
          so.observers.push_back(h.collector);
        }
        h.session = std::make_unique<debug::DebugSession>(*h.function, so);
        if (h.nanPause) h.session->setNanGuard(*h.nanPause).get();
        for (const auto& [key, spec] : specs) {
          try {
            const int id = h.session->addBreakpoint(spec, true).get();
            h.breakpointIds[key] = id;
            if (!spec.enabled) h.session->setBreakpointEnabled(id, false).get();
          } catch (const std::exception& e) {
            r.breakpointErrors.emplace_back(key, QString::fromUtf8(e.what()));
          }
        }
        h.ready.store(true);
        r.compiledNow = true;
        r.function = h.function;
        r.lineage = h.lineage;
        r.message = tr("Compiled %1 nodes (%2)")
                        .arg(h.function->graph().nodes().size())
                        .arg(qstr(engine::modeName(h.mode)));
      },
      false);
}

// Runs `job` on the command thread, then reads the snapshot there (Note [Debugger threads]).
void DebugController::submit(Job job, bool start) {
  ensureHolder();
  if (!m_holder) {
    emit failed(tr("Open a graph first."));
    return;
  }
  std::shared_ptr<Holder> holder = m_holder;
  const std::uint64_t generation = m_generation;
  if (m_pending++ == 0) emit busyChanged(true);
  vis::startOnPool(m_commands, [this, holder, generation, job = std::move(job), start] {
    auto r = std::make_shared<Result>();
    try {
      if (start && !holder->session)
        throw std::runtime_error(holder->compileError.isEmpty()
                                     ? std::string("the graph is not compiled")
                                     : holder->compileError.toStdString());
      job(*holder, *r);
    } catch (const std::exception& e) {
      r->error = QString::fromUtf8(e.what());
      if (!start) {
        holder->compileError = tr("Could not prepare the run of %1: %2")
                                   .arg(QFileInfo(holder->document->path).fileName(), r->error);
        r->error = holder->compileError;
        r->compileFailed = true;
      }
    }
    if (holder->session) {
      try {
        auto snap = std::make_shared<DebugSnapshot>();
        debug::DebugSession& s = *holder->session;
        snap->state = s.state();
        snap->run = holder->runs;
        const std::size_t frames = std::max<std::size_t>(1, snap->state.frames.size());
        if (snap->state.phase != SessionPhase::Idle) {
          for (std::size_t f = 0; f < frames; ++f) {
            std::vector<DebugValue> values;
            try {
              for (debug::ValueView& v : s.values(f).get())
                values.push_back(withCounts(std::move(v)));
            } catch (const std::exception&) {
            }
            snap->frames.push_back(std::move(values));
          }
        }
        snap->buildIndex();
        snap->breakpoints = s.breakpoints().get();
        r->breakpointIds = holder->breakpointIds;
        r->hasBreakpoints = true;
        if (holder->collector) {
          const std::uint64_t call = holder->collector->calls();
          for (debug::NanReport& e : holder->collector->events())
            if (e.call == call)
              r->collected.push_back(std::make_shared<const debug::NanReport>(std::move(e)));
        }
        r->snapshot = std::move(snap);
      } catch (const std::exception& e) {
        if (r->error.isEmpty()) r->error = QString::fromUtf8(e.what());
      }
    }
    m_mailbox.post([this, generation, r] { finishJob(generation, r); });
  });
}

void DebugController::finishJob(std::uint64_t generation, std::shared_ptr<Result> r) {
  if (generation != m_generation) return;  // an older session's answer
  if (r->compileFailed) {
    // Nothing runs without a function: the next command compiles again (new inputs, a mode).
    m_holder.reset();
    ++m_generation;
    m_pending = 0;
    emit failed(r->error);
    emit busyChanged(false);
    return;
  }
  if (r->compiledNow) emit compiled();
  for (const auto& [key, error] : r->breakpointErrors)
    for (Breakpoint& b : m_breakpoints)
      if (b.info.id == key) b.error = error;
  if (!r->error.isEmpty()) emit failed(r->error);
  if (!r->message.isEmpty()) emit message(r->message);
  if (r->editAdded) m_edits.push_back(*r->editAdded);
  if (r->editUndone) {
    auto it = std::find(m_edits.begin(), m_edits.end(), *r->editUndone);
    if (it != m_edits.end()) m_edits.erase(it);
  }
  if (r->editAdded || r->editUndone) emit editsChanged();
  if (r->snapshot) {
    const bool newer = !m_snapshot || r->snapshot->state.serial >= m_snapshot->state.serial ||
                       r->snapshot->run > m_snapshot->run;
    if (newer) {
      if (m_snapshot && r->snapshot->run != m_snapshot->run) {
        m_nanEvents.clear();
        m_edits.clear();
        emit editsChanged();
      }
      // Breakpoint hits and where they landed, by key.
      for (Breakpoint& b : m_breakpoints) {
        if (!r->hasBreakpoints) break;
        auto id = r->breakpointIds.find(b.info.id);
        b.sessionId = id == r->breakpointIds.end() ? -1 : id->second;
        for (const debug::BreakpointInfo& info : r->snapshot->breakpoints)
          if (info.id == b.sessionId) {
            const int key = b.info.id;
            b.info = info;
            b.info.id = key;
          }
      }
      bool nanChanged = false;
      const debug::SessionState& st = r->snapshot->state;
      if (st.reason == debug::PauseKind::NanGuard && st.nan &&
          (!m_snapshot || m_snapshot->state.serial != st.serial)) {
        m_nanEvents.push_back(st.nan);
        nanChanged = true;
      }
      if (!r->collected.empty() || (m_nanCollect && m_nanGuardOn)) {
        if (r->collected.size() != m_nanEvents.size()) nanChanged = true;
        m_nanEvents = r->collected;
      }
      m_snapshot = r->snapshot;
      emit breakpointsChanged();
      if (nanChanged) emit nanEventsChanged();
      emit snapshotChanged(m_snapshot);
    }
  }
  if (r->recompute) emit recomputed(*r->recompute);
  if (m_pending > 0 && --m_pending == 0) emit busyChanged(false);
}

void DebugController::run() {
  submit(
      [](Holder& h, Result&) {
        debug::DebugSession& s = *h.session;
        if (!active(s.state().phase)) {
          ++h.runs;
          s.run(h.args).get();
        } else {
          s.run().get();
        }
      },
      true);
}

namespace {
// The steps start an execution when none is active.
void startIfNeeded(debug::DebugSession& s, const std::vector<engine::Tensor>& args,
                   std::atomic<std::uint64_t>& runs) {
  if (active(s.state().phase)) return;
  ++runs;
  s.start(args).get();
}
}  // namespace

void DebugController::step() {
  submit(
      [](Holder& h, Result&) {
        startIfNeeded(*h.session, h.args, h.runs);
        h.session->step().get();
      },
      true);
}

void DebugController::stepInto() {
  submit(
      [](Holder& h, Result&) {
        startIfNeeded(*h.session, h.args, h.runs);
        h.session->stepInto().get();
      },
      true);
}

void DebugController::stepOut() {
  submit(
      [](Holder& h, Result&) {
        startIfNeeded(*h.session, h.args, h.runs);
        h.session->stepOut().get();
      },
      true);
}

void DebugController::runToNode(std::int64_t nodeId) {
  submit(
      [nodeId](Holder& h, Result&) {
        startIfNeeded(*h.session, h.args, h.runs);
        h.session->runToNode(nodeId).get();
      },
      true);
}

void DebugController::restart() {
  submit(
      [](Holder& h, Result&) {
        ++h.runs;
        if (h.session->state().phase == SessionPhase::Idle)
          h.session->start(h.args).get();
        else
          h.session->restart().get();
      },
      true);
}

void DebugController::stop() {
  if (!m_holder || !m_holder->ready.load()) return;
  std::shared_ptr<Holder> holder = m_holder;
  const std::uint64_t generation = m_generation;
  auto answer = std::make_shared<std::future<debug::SessionState>>(holder->session->stop());
  if (m_pending++ == 0) emit busyChanged(true);  // until the answer arrives
  vis::startOnPool(m_waiters, [this, holder, generation, answer] {
    auto r = std::make_shared<Result>();
    try {
      auto snap = std::make_shared<DebugSnapshot>();
      snap->state = answer->get();
      snap->run = holder->runs;  // may be a newer run's: only compared for "a newer run"
      r->snapshot = std::move(snap);
    } catch (const std::exception& e) {
      r->error = QString::fromUtf8(e.what());
    }
    m_mailbox.post([this, generation, r] { finishJob(generation, r); });
  });
}

void DebugController::interrupt() {
  if (!m_holder || !m_holder->ready.load()) return;
  m_holder->session->interrupt();  // the running command answers with the pause
}

void DebugController::setValue(const QString& nameOrId, engine::Tensor value, std::size_t frame) {
  submit(
      [name = nameOrId, value = std::move(value), frame](Holder& h, Result& r) {
        h.session->setValue(name.toStdString(), value, frame).get();
        r.editAdded = std::pair{frame, name};
        r.message = tr("Edited %1: press Recompute to update the nodes downstream").arg(name);
      },
      true);
}

void DebugController::recompute() {
  submit(
      [](Holder& h, Result& r) {
        r.recompute = h.session->recompute().get();
        r.message = tr("Recomputed %1 nodes, %2 values changed")
                        .arg(r.recompute->rerunNodes.size())
                        .arg(r.recompute->changedVars.size());
      },
      true);
}

void DebugController::undoEdit(const QString& nameOrId, std::size_t frame) {
  submit(
      [name = nameOrId, frame](Holder& h, Result& r) {
        h.session->undoEdit(name.toStdString(), frame).get();
        r.editUndone = std::pair{frame, name};
        r.message = tr("Restored %1: press Recompute to update the nodes downstream").arg(name);
      },
      true);
}

void DebugController::saveFailure(const QString& path) {
  const std::shared_ptr<const debug::NanReport> report =
      m_nanEvents.empty() ? nullptr : m_nanEvents.front();
  submit(
      [path, report](Holder& h, Result& r) {
        debug::saveReplay(path.toStdString(), *h.document->original, h.args, report.get());
        r.message =
            tr("Saved the failure to %1 (`tensorscope run %1 --nan-guard` replays it)").arg(path);
      },
      true);
}

void DebugController::addBreakpoint(const debug::BreakpointSpec& spec) {
  Breakpoint b;
  b.spec = spec;
  b.info.id = g_nextKey++;
  const int key = b.info.id;
  m_breakpoints.push_back(std::move(b));
  saveBreakpoints();
  emit breakpointsChanged();
  if (!m_holder) return;  // the next compile sets it
  submit(
      [key, spec](Holder& h, Result& r) {
        try {
          h.breakpointIds[key] = h.session->addBreakpoint(spec, true).get();
        } catch (const std::exception& e) {
          r.breakpointErrors.emplace_back(key, QString::fromUtf8(e.what()));
          r.error =
              tr("Breakpoint %1: %2")
                  .arg(QString::fromStdString(debug::toString(spec)), QString::fromUtf8(e.what()));
        }
      },
      true);
}

void DebugController::removeBreakpoint(int index) {
  if (index < 0 || index >= static_cast<int>(m_breakpoints.size())) return;
  const int key = m_breakpoints[static_cast<std::size_t>(index)].info.id;
  m_breakpoints.erase(m_breakpoints.begin() + index);
  saveBreakpoints();
  emit breakpointsChanged();
  if (!m_holder) return;
  submit(
      [key](Holder& h, Result&) {
        auto it = h.breakpointIds.find(key);
        if (it == h.breakpointIds.end()) return;
        h.session->removeBreakpoint(it->second).get();
        h.breakpointIds.erase(it);
      },
      true);
}

void DebugController::setBreakpointEnabled(int index, bool enabled) {
  if (index < 0 || index >= static_cast<int>(m_breakpoints.size())) return;
  Breakpoint& b = m_breakpoints[static_cast<std::size_t>(index)];
  if (b.spec.enabled == enabled) return;
  b.spec.enabled = enabled;
  const int key = b.info.id;
  saveBreakpoints();
  emit breakpointsChanged();
  if (!m_holder) return;
  submit(
      [key, enabled](Holder& h, Result&) {
        auto it = h.breakpointIds.find(key);
        if (it != h.breakpointIds.end()) h.session->setBreakpointEnabled(it->second, enabled).get();
      },
      true);
}

int DebugController::nodeBreakpoint(std::int64_t originalId) const {
  const std::string key = std::to_string(originalId);
  for (std::size_t i = 0; i < m_breakpoints.size(); ++i) {
    const debug::BreakpointSpec& s = m_breakpoints[i].spec;
    if (s.target == debug::BreakpointSpec::Target::Node && s.key == key &&
        s.condition.kind == debug::BreakCondition::Kind::Always)
      return static_cast<int>(i);
  }
  return -1;
}

void DebugController::toggleNodeBreakpoint(std::int64_t originalId) {
  const int index = nodeBreakpoint(originalId);
  if (index >= 0) return removeBreakpoint(index);
  debug::BreakpointSpec spec;
  spec.target = debug::BreakpointSpec::Target::Node;
  spec.key = std::to_string(originalId);
  addBreakpoint(spec);
}

}  // namespace tscope::gui
