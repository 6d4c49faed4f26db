#include "engine/debug/nan_guard.h"

#include "engine/compile/function.h"
#include "engine/debug/failure.h"
#include "engine/debug/fused_origin.h"
#include "engine/debug/nan_scan.h"
#include "engine/debug/value_bounds.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/transfer/transfer.h"
#include "engine/tensor/device_memory.h"
#include "engine/vm/vm.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace tscope::engine::debug {

// --- options ---

AllowRule AllowRule::parse(std::string_view spec) {
  const std::string text(spec);
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("bad allow rule '" + text + "': " + why +
                                 "; expected [node:|var:|op:|scope:]TARGET:CHECKS, e.g. "
                                 "scope:attention/mask:-inf");
  };
  AllowRule rule;
  std::string_view rest = spec;
  for (auto [prefix, kind] : {std::pair{"node:", Kind::Node}, std::pair{"var:", Kind::Variable},
                              std::pair{"op:", Kind::Op}, std::pair{"scope:", Kind::Scope}}) {
    const std::string_view p(prefix);
    if (rest.substr(0, p.size()) == p) {
      rule.kind = kind;
      rest.remove_prefix(p.size());
      break;
    }
  }
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) throw bad("no ':CHECKS' part");
  rule.target = std::string(rest.substr(0, colon));
  const std::string_view checks = rest.substr(colon + 1);
  if (rule.target.empty()) throw bad("the target is empty");
  if (checks.empty()) throw bad("no checks after the last ':'");
  try {
    rule.checks = parseChecks(checks);
  } catch (const std::invalid_argument& e) {
    throw bad(e.what());
  }
  if (rule.kind == Kind::Node) {
    std::size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(rule.target, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != rule.target.size() || id < 0)
      throw bad("node id '" + rule.target + "' is not a non-negative integer");
    rule.nodeId = id;
  }
  while (rule.kind == Kind::Scope && rule.target.size() > 1 && rule.target.back() == '/')
    rule.target.pop_back();
  return rule;
}

std::string AllowRule::str() const {
  const char* kinds[] = {"node:", "var:", "op:", "scope:"};
  return kinds[static_cast<int>(kind)] + target + ":" + checksText(checks);
}

bool AllowRule::matchesScope(std::string_view scope) const {
  if (scope.size() < target.size() || scope.substr(0, target.size()) != target) return false;
  return scope.size() == target.size() || scope[target.size()] == '/';
}

std::string_view actionName(NanAction action) {
  switch (action) {
    case NanAction::Raise:
      return "raise";
    case NanAction::Warn:
      return "warn";
    case NanAction::Pause:
      return "pause";
  }
  return "?";
}

NanAction parseAction(std::string_view text) {
  if (text == "raise") return NanAction::Raise;
  if (text == "warn") return NanAction::Warn;
  if (text == "pause") return NanAction::Pause;
  throw std::invalid_argument("unknown NanGuard action '" + std::string(text) +
                              "'; expected raise, warn or pause");
}

void NanGuardOptions::validate() const {
  auto checkThreshold = [](double t, const std::string& what) {
    if (!(t > 0) || std::isinf(t))
      throw std::invalid_argument("NanGuard: the big threshold" + what +
                                  " must be a finite number > 0, found " + valueText(t));
  };
  checkThreshold(bigThreshold, "");
  for (const auto& [d, t] : bigThresholds) checkThreshold(t, " for " + std::string(dtypeName(d)));
  for (const AllowRule& r : allow) {
    if (r.checks == 0)
      throw std::invalid_argument("NanGuard: allow rule '" + r.str() + "' allows no check");
    if (r.target.empty())
      throw std::invalid_argument("NanGuard: an allow rule has an empty target");
  }
}

double NanGuardOptions::thresholdFor(DType dtype) const {
  if (auto it = bigThresholds.find(dtype); it != bigThresholds.end()) return it->second;
  if (dtype == DType::Float16) return 1e4;
  return bigThreshold;
}

NanGuardError::NanGuardError(NanReport report)
    : std::runtime_error("NanGuard: " + report.summary()), m_report(std::move(report)) {}

// --- per-call state ---

struct NanGuard::Record {
  const Variable* var = nullptr;
  const Apply* node = nullptr;  // null for an input or shared value
  std::string where;
  std::vector<std::int64_t> shape;
  BadDetail detail;
  NanChecks kinds = 0;
  double threshold = 0;
  ChainLink link;
  std::vector<std::shared_ptr<Record>> badInputs;
};

struct NanGuard::GraphInfo {
  const FunctionGraph* graph = nullptr;
  std::unordered_map<const Variable*, std::string> updateOf;  // graph output -> shared name
  std::unordered_set<const Variable*> updated;                // shared inputs with an update
  // Note [Shared values checked once]: the buffer each read-only shared value had when it was
  // last found clean.
  std::unordered_map<const Variable*, const void*> sharedSeen;
  // Note [Provably clean outputs]: what is known of the values not scanned at the start: max |x|
  // of each read-only shared value when last found clean, of each updated one as its last clean
  // update (update output -> its shared input).
  std::unordered_map<const Variable*, double> sharedBound;
  std::unordered_map<const Variable*, const Variable*> updateTarget;
  std::unordered_map<const Variable*, double> updatedBound;
};

NanGuard::NanGuard(NanGuardOptions options) : m_options(std::move(options)) {
  m_options.validate();
}

NanGuard::~NanGuard() = default;

void NanGuard::setOptions(NanGuardOptions options) {
  options.validate();
  m_options = std::move(options);
}

void NanGuard::watch(const Function& f, const FunctionGraph* original) {
  // With the bodies' lineages (Note [Inner lineage]): inner nodes are named as built too.
  m_lineage = std::make_shared<NodeLineage>(f.program(), f.rewriteLog());
  m_watchedGraph = &f.graph();
  m_original = original;
}

std::vector<NanReport> NanGuard::events() const {
  std::lock_guard lock(m_mutex);
  return m_events;
}

std::size_t NanGuard::eventCount() const {
  std::lock_guard lock(m_mutex);
  return m_eventCount;
}

std::optional<NanReport> NanGuard::takePauseReport() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_pauseReport, std::nullopt);
}

bool NanGuard::hasPauseReport() const {
  std::lock_guard lock(m_mutex);
  return m_pauseReport.has_value();
}

void NanGuard::reset() {
  std::lock_guard lock(m_mutex);
  m_events.clear();
  m_eventCount = 0;
  m_pauseReport.reset();
  m_records.clear();
  m_lastInFrame.clear();
}

std::string NanGuard::lastFailureFile() const {
  std::lock_guard lock(m_mutex);
  return m_lastFailureFile;
}

// --- naming ---

namespace {
// The slot of a kind in BadDetail's arrays.
int kindSlot(NanCheck c) {
  return c == NanCheck::NaN ? 0 : c == NanCheck::PosInf ? 1 : c == NanCheck::NegInf ? 2 : 3;
}
std::string siteText(const SourceSite& site) {
  return site.empty() ? std::string() : site.str();
}
std::string originText(const GradientOrigin& g) {
  std::string out = g.kind == "rop" ? "R-op (forward derivative) of " : "gradient of ";
  out += g.op;
  if (!g.scope.empty()) out += " at " + g.scope;
  if (!g.site.empty()) out += " (created at " + g.site.str() + ")";
  return out;
}
}  // namespace

std::pair<const NodeLineage*, const FunctionGraph*> NanGuard::namingFor(const Apply& node) const {
  if (!m_lineage) return {nullptr, nullptr};
  if (node.fgraph() == m_watchedGraph) return {m_lineage.get(), m_original};
  const NodeLineage* inner = m_lineage->forGraph(node.fgraph());
  return inner ? std::pair{inner, inner->original()} : std::pair{nullptr, nullptr};
}

NodeRef NanGuard::nodeRef(const Apply& node, std::span<const std::int64_t> frames) const {
  NodeRef ref;
  ref.id = node.id();
  ref.op = node.op().str();
  ref.scope = node.scope();
  ref.site = siteText(node.site());
  ref.frames.assign(frames.begin(), frames.end());
  // A node a rewrite made names what it was made from (Composites: Note [Fused code keeps
  // names], done by the caller with the offending element); inner nodes through their body's
  // lineage (Note [Inner lineage]).
  const auto [lineage, original] = namingFor(node);
  if (lineage && !dynamic_cast<const Composite*>(&node.op())) {
    const std::vector<std::int64_t> from = lineage->originalNodesFor(node.id());
    if (!from.empty() && !std::binary_search(from.begin(), from.end(), node.id())) {
      std::string reasons;
      for (std::int64_t o : from)
        for (const std::string& r : lineage->reasonsFor(o))
          if (reasons.find(r) == std::string::npos) reasons += (reasons.empty() ? "" : ", ") + r;
      const Apply* orig = original ? original->nodeById(from.front()) : nullptr;
      if (orig) {
        ref.scope = orig->scope();
        ref.site = siteText(orig->site());
        ref.originalId = orig->id();
        ref.rewrittenFrom = orig->op().str() + " (node " + std::to_string(orig->id()) + ")" +
                            (orig->scope().empty() ? "" : " at " + orig->scope()) +
                            (orig->site().empty() ? "" : " (created at " + ref.site + ")");
      } else {
        ref.rewrittenFrom = "original node";
        for (std::int64_t o : from) ref.rewrittenFrom += " " + std::to_string(o);
      }
      if (!reasons.empty()) ref.rewrittenFrom += " by " + reasons;
    }
  }
  const GradientOrigin* g = node.gradientOf().get();
  // A rewritten gradient node keeps the name of the original nodes it stands for.
  if (!g && lineage && original)
    for (std::int64_t o : lineage->originalNodesFor(node.id()))
      if (const Apply* orig = original->nodeById(o); orig && orig->gradientOf()) {
        g = orig->gradientOf().get();
        break;
      }
  if (g) ref.gradientOf = originText(*g);
  return ref;
}

NanChecks NanGuard::allowedFor(const Apply* node, const Variable& var) const {
  NanChecks allowed = 0;
  if (m_options.allow.empty()) return 0;
  auto rec = m_records.find(&var);
  const NodeRef* named = rec != m_records.end() ? &rec->second->link.node : nullptr;
  for (const AllowRule& r : m_options.allow) {
    bool match = false;
    switch (r.kind) {
      case AllowRule::Kind::Node:
        if (node) {
          match = node->id() == r.nodeId || (named && named->originalId == r.nodeId);
          if (!match && m_lineage && node->fgraph() == m_watchedGraph) {
            const auto from = m_lineage->originalNodesFor(node->id());
            match = std::find(from.begin(), from.end(), r.nodeId) != from.end();
          }
        }
        break;
      case AllowRule::Kind::Variable:
        match =
            var.name() == r.target || (!var.name().empty() ? false : var.displayName() == r.target);
        break;
      case AllowRule::Kind::Op:
        match = node && (node->op().name() == r.target || node->op().str() == r.target ||
                         (named && named->op == r.target));
        break;
      case AllowRule::Kind::Scope:
        match = node ? r.matchesScope(node->scope()) || (named && r.matchesScope(named->scope))
                     : r.matchesScope(var.scope());
        break;
    }
    if (match) allowed |= r.checks;
  }
  return allowed;
}

// --- callbacks ---

void NanGuard::onStart(VM& vm) {
  if (!enabled()) {
    m_lastCallClean = false;  // its updates go unchecked (Note [Shared values checked once])
    return;
  }
  m_calls.fetch_add(1, std::memory_order_relaxed);
  m_records.clear();
  m_lastInFrame.clear();
  m_savedThisCall = false;
  m_reportedThisCall = false;
  m_savedFor = nullptr;
  m_bounds.clear();
  m_provenFor = nullptr;
  m_guarded.clear();
  m_tailProvenFrom = static_cast<std::size_t>(-1);
  const FunctionGraph& g = vm.graph();
  if (!m_info || m_info->graph != &g) {
    m_info = std::make_unique<GraphInfo>();
    m_views.clear();
    m_saved.clear();
    m_info->graph = &g;
    for (const auto& [out, in] : g.updateMapping()) {
      m_info->updateOf[g.outputs()[out].get()] = g.inputs()[in]->displayName();
      m_info->updated.insert(g.inputs()[in].get());
      m_info->updateTarget[g.outputs()[out].get()] = g.inputs()[in].get();
    }
    m_lastCallClean = false;
  }
  m_startInputs.clear();
  for (const VarPtr& in : g.inputs()) {
    const Tensor* value = vm.value(*in);
    const Tensor* shared = nullptr;
    if (in->kind() == Variable::Kind::Shared)
      shared = &static_cast<const SharedVariable&>(*in).placedValue();
    else if (!m_options.saveFailure.empty())
      m_startInputs.push_back(value ? value->clone() : Tensor());
    if (!m_options.checkInputs) continue;
    const Tensor* v = value && value->defined() ? value : shared;
    if (!v || !v->defined()) continue;
    // Note [Shared values checked once]: a shared value this graph updates was checked as its
    // update when the last call wrote it; one it only reads is checked again only when its buffer
    // changed (another buffer, as setValue and double-buffered updates give). A weight that a
    // function without a guard overwrote in place in the same buffer is then caught where it is
    // first read (the chain names it as the input), not at the start.
    if (shared && m_lastCallClean) {
      auto known = [&](const std::unordered_map<const Variable*, double>& from) {
        if (auto b = from.find(in.get()); b != from.end()) m_bounds[in.get()] = b->second;
      };
      if (m_info->updated.count(in.get())) {
        known(m_info->updatedBound);
        continue;
      }
      auto seen = m_info->sharedSeen.find(in.get());
      if (seen != m_info->sharedSeen.end() && seen->second == v->rawData()) {
        known(m_info->sharedBound);
        continue;
      }
    }
    const std::size_t before = m_records.size();
    checkValue(vm, nullptr, *in, 0, *v, shared ? "shared" : "input");
    if (shared && m_records.size() == before) {
      m_info->sharedSeen[in.get()] = v->rawData();
      if (auto b = m_bounds.find(in.get()); b != m_bounds.end())
        m_info->sharedBound[in.get()] = b->second;
      else
        m_info->sharedBound.erase(in.get());
    }
  }
  m_lastCallClean = false;  // until onFinish
}

void NanGuard::onFinish(VM&) {
  if (!enabled()) return;
  m_guarded.clear();  // the copies' buffers stay in m_guardSpares for the next call
  // Every update was checked as it was computed: the next call need not scan it again.
  m_lastCallClean = !m_reportedThisCall;
  if (m_lastCallClean && m_info)
    for (const auto& [out, in] : m_info->updateTarget) {
      if (auto b = m_bounds.find(out); b != m_bounds.end())
        m_info->updatedBound[in] = b->second;
      else
        m_info->updatedBound.erase(in);
    }
}

const NanGuard::NodeViews& NanGuard::viewsOf(const Apply& node) {
  auto it = m_views.find(&node);
  if (it != m_views.end() && it->second.op == &node.op()) return it->second;
  NodeViews v{
      &node.op(), std::vector<std::vector<int>>(static_cast<std::size_t>(node.nOutputs())), {}};
  for (const auto& [out, ins] : node.op().viewMap())
    if (out >= 0 && out < node.nOutputs()) v.of[static_cast<std::size_t>(out)] = ins;
  for (const auto& [out, ins] : node.op().destroyMap())
    for (int i : ins)
      if (i >= 0 && i < node.nInputs()) v.overwrites.push_back(i);
  const std::string name = node.op().name();
  if (name == "Elemwise" || name == "Composite")
    for (const auto& [out, ins] : node.op().destroyMap())
      for (int i : ins)
        if (i >= 0 && i < node.nInputs()) v.destroyed.push_back(i);
  v.provable = !node.op().innerGraph() && node.nOutputs() > 0 && mayBound(node.op());
  return m_views.insert_or_assign(&node, std::move(v)).first->second;
}

// Note [Inplace inputs]: an elementwise node that overwrites an input leaves nothing of it to
// explain a bad output with; the guard keeps a copy (reusing its buffer across calls).
void NanGuard::beforeNode(VM& vm, const NodeEvent& e) {
  if (!enabled()) return;
  const NodeViews& views = viewsOf(e.node);
  if (m_options.proveClean)
    prove(e, views);
  else
    m_provenFor = nullptr;
  if (m_options.action == NanAction::Raise && e.depth() == 0 && !views.overwrites.empty())
    guardUpdates(vm, e, views.overwrites);
  if (!m_options.explainInplace) return;
  if (views.destroyed.empty()) return;
  // An output proven clean needs no explaining: nothing to copy (Note [Provably clean outputs]).
  if (m_provenFor == &e.node &&
      std::all_of(m_proof.begin(), m_proof.end(), [](const auto& b) { return b.has_value(); }))
    return;
  std::vector<Tensor>& saved = m_saved[&e.node];
  saved.resize(static_cast<std::size_t>(e.node.nInputs()));
  for (int i : views.destroyed) {
    const Tensor* in = e.inputs[static_cast<std::size_t>(i)];
    if (!in || !in->defined() || !isFloat(in->dtype())) continue;
    Tensor& copy = saved[static_cast<std::size_t>(i)];
    if (in->device() == Device::Cpu && copy.defined() && copy.device() == Device::Cpu &&
        copy.dtype() == in->dtype() && copy.shape() == in->shape() &&
        copy.storage().use_count() == 1)
      copy.copyFrom(*in);
    else
      copy = cloneOnDevice(*in);  // a device input stays on its device
  }
  m_savedFor = &e.node;
}

void NanGuard::afterNode(VM& vm, const NodeEvent& e) {
  if (!enabled()) return;
  // Note [Transfers are not scanned]: a GpuFromHost or HostFromGpu output holds exactly its
  // input's values, which were checked where they were computed (or at the call's start). It
  // takes over the input's record and bound, so a node that reads the copy on the other side
  // finds the value bad (the chain goes through) or clean, and no event names the copy: a NaN is
  // reported once, at the node that made it, as on the CPU. Scanning a GpuFromHost output would
  // also copy back to the host what was just sent (Note [Device scans] in nan_scan.h).
  if (isTransfer(e.node.op()) && e.node.nInputs() == 1 && e.node.nOutputs() == 1) {
    const Variable* in = e.node.input(0).get();
    const Variable* out = &e.node.outputRef(0);
    if (auto r = m_records.find(in); r != m_records.end()) m_records[out] = r->second;
    if (auto b = m_bounds.find(in); b != m_bounds.end()) m_bounds[out] = b->second;
    m_checked.fetch_add(1, std::memory_order_relaxed);
    m_savedFor = nullptr;
    m_provenFor = nullptr;
    return;
  }
  // Note [Views are not scanned]: an output an op declares as a view of an input holds a subset
  // of that input's values: good when the input was good (no record), so it is scanned only when
  // the input was bad. This saves a strided copy and a pass per transpose, reshape or slice.
  const NodeViews& views = viewsOf(e.node);
  for (int o = 0; o < e.node.nOutputs(); ++o) {
    const Tensor* t = e.outputs[static_cast<std::size_t>(o)];
    if (!t || !t->defined()) continue;
    const Variable& var = e.node.outputRef(o);
    if (const std::vector<int>& ins = views.of[static_cast<std::size_t>(o)]; !ins.empty()) {
      bool inputBad = false;
      double bound = 0;
      bool bounded = true;
      for (int i : ins) {
        if (i < 0 || i >= e.node.nInputs()) continue;
        const Variable* in = e.node.input(i).get();
        if (m_records.count(in)) inputBad = true;
        auto b = m_bounds.find(in);
        bounded = bounded && b != m_bounds.end();
        if (b != m_bounds.end()) bound = std::max(bound, b->second);
      }
      if (!inputBad) {
        if (bounded) m_bounds[&var] = bound;  // a view holds a subset of its input's values
        continue;
      }
    }
    if (m_provenFor == &e.node && static_cast<std::size_t>(o) < m_proof.size() &&
        m_proof[static_cast<std::size_t>(o)]) {
      m_bounds[&var] = *m_proof[static_cast<std::size_t>(o)];
      m_checked.fetch_add(1, std::memory_order_relaxed);
      m_proven.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const bool update = e.depth() == 0 && m_info && m_info->updateOf.count(&var);
    checkValue(vm, &e, var, o, *t, update ? "update" : "node");
  }
  m_savedFor = nullptr;  // the copies are this node's only (Note [Inplace inputs])
  m_provenFor = nullptr;
}

namespace {
std::string summaryOf(const Tensor& t) {
  const BadDetail d = countBad(t, false, 0);
  double lo = INFINITY, hi = -INFINITY;
  const std::vector<double> v = t.numel() <= (1 << 22) ? t.toDoubles() : std::vector<double>{};
  for (double x : v)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  std::string out = "shape " + shapeToString(t.shape());
  if (!v.empty() && lo <= hi) out += ", min " + valueText(lo) + ", max " + valueText(hi);
  out += ", " + std::to_string(d.counts.nan + d.counts.posInf + d.counts.negInf) + " non-finite";
  return out;
}
bool destroys(const Apply& node, int input) {
  for (const auto& [out, ins] : node.op().destroyMap())
    if (std::find(ins.begin(), ins.end(), input) != ins.end()) return true;
  return false;
}
}  // namespace

void NanGuard::checkValue(VM& vm, const NodeEvent* e, const Variable& var, int output,
                          const Tensor& value, const std::string& where) {
  if (value.defined() && value.device() != Device::Cpu) {
    // Note [Reading device values]: a device value is scanned from a host copy.
    checkValue(vm, e, var, output, toHost(value), where);
    return;
  }
  const DType dtype = value.dtype();
  const bool isF = isFloat(dtype);
  const bool bigOn = (m_options.checks & bit(NanCheck::Big)) && (isF || m_options.bigForIntegers);
  if (!isF && !bigOn) return;
  const double threshold = m_options.thresholdFor(dtype);
  m_checked.fetch_add(1, std::memory_order_relaxed);
  // max |x| of floats in the same pass, for the bounds (Note [Provably clean outputs]).
  const QuickScan q = quickScan(value, bigOn || isF);
  if (!q.nonFinite && !(bigOn && q.maxAbs > threshold)) {
    m_bounds[&var] = q.maxAbs;
    return;
  }

  // The bad path: everything below runs once per bad value.
  auto rec = std::make_shared<Record>();
  rec->var = &var;
  rec->node = e ? &e->node : nullptr;
  rec->where = where;
  rec->shape = value.shape();
  rec->detail = countBad(value, bigOn, threshold);
  rec->kinds = rec->detail.counts.kinds();
  rec->threshold = threshold;
  ChainLink& link = rec->link;
  link.output = output;
  link.variable = var.displayName();
  link.counts = rec->detail.counts;
  const std::int64_t first = rec->detail.firstOf(rec->kinds, &link.firstKind);
  link.firstIndex = unflatten(first, value.shape());
  link.firstValue = rec->detail.firstValue[static_cast<std::size_t>(kindSlot(link.firstKind))];
  if (e) {
    // The inputs as the node read them (Note [Inplace inputs]).
    std::vector<const Tensor*> read(e->inputs.begin(), e->inputs.end());
    std::vector<bool> lost(read.size(), false);
    {
      const NodeViews& views = viewsOf(e->node);
      auto saved = m_savedFor == &e->node ? m_saved.find(&e->node) : m_saved.end();
      for (int i : views.destroyed) {
        const auto k = static_cast<std::size_t>(i);
        if (saved != m_saved.end() && k < saved->second.size() && saved->second[k].defined())
          read[k] = &saved->second[k];
        else
          lost[k] = true;
      }
    }
    std::vector<Tensor> onHost(read.size());  // Note [Reading device values]
    for (std::size_t k = 0; k < read.size(); ++k)
      if (read[k] && read[k]->defined() && read[k]->device() != Device::Cpu) {
        onHost[k] = toHost(*read[k]);
        read[k] = &onHost[k];
      }
    link.node = nodeRef(e->node, e->framePath);
    link.node.iterations.assign(e->iterations.begin(), e->iterations.end());
    // Which inputs already held bad values (Note [Root-cause chain]).
    for (int i = 0; i < e->node.nInputs(); ++i) {
      const Variable& in = *e->node.input(i);
      if (auto it = m_records.find(&in); it != m_records.end()) {
        rec->badInputs.push_back(it->second);
        continue;
      }
      if (in.owner()) continue;  // computed and checked: it was good
      const Tensor* t = read[static_cast<std::size_t>(i)];
      if (in.kind() == Variable::Kind::Constant) t = &static_cast<const Constant&>(in).value();
      if (!t || !t->defined() || (lost[static_cast<std::size_t>(i)] && destroys(e->node, i)) ||
          !isFloat(t->dtype()))
        continue;
      if (!quickScan(*t, false).nonFinite) continue;
      // A constant, or an input of an inner frame: bad before any node of this frame ran.
      auto src = std::make_shared<Record>();
      src->var = &in;
      src->where = in.kind() == Variable::Kind::Constant ? "constant" : "input";
      src->shape = t->shape();
      src->detail = countBad(*t, false, threshold);
      src->kinds = src->detail.counts.kinds();
      src->link.role = ChainLink::Role::Creator;
      src->link.node.op = src->where + " '" + in.displayName() + "'";
      src->link.node.scope = in.scope();
      src->link.node.site = siteText(in.site());
      src->link.node.frames.assign(e->framePath.begin(), e->framePath.end());
      src->link.node.iterations.assign(e->iterations.begin(), e->iterations.end());
      src->link.variable = in.displayName();
      src->link.counts = src->detail.counts;
      const std::int64_t f = src->detail.firstOf(src->kinds, &src->link.firstKind);
      src->link.firstIndex = unflatten(f, t->shape());
      src->link.firstValue =
          src->detail.firstValue[static_cast<std::size_t>(kindSlot(src->link.firstKind))];
      m_records[&in] = src;
      rec->badInputs.push_back(src);
    }
    // A node with an inner graph returns what its frame computed: the bad value came from there.
    if (rec->badInputs.empty() && e->node.op().innerGraph())
      if (auto it = m_lastInFrame.find(e->node.id()); it != m_lastInFrame.end())
        rec->badInputs.push_back(it->second);
    NanChecks inKinds = 0;
    for (const auto& b : rec->badInputs) inKinds |= b->kinds;
    link.role = rec->badInputs.empty()             ? ChainLink::Role::Creator
                : !(inKinds & bit(link.firstKind)) ? ChainLink::Role::Converter
                                                   : ChainLink::Role::Propagator;
    // What the node read at the offending element: for a creator or converter, each input's
    // element (with broadcasting) or a summary; for a propagator, which inputs were bad.
    for (int i = 0; i < e->node.nInputs(); ++i) {
      const Variable& in = *e->node.input(i);
      InputSample s;
      s.input = i;
      s.variable = in.displayName();
      s.bad = std::any_of(rec->badInputs.begin(), rec->badInputs.end(),
                          [&](const auto& b) { return b->var == &in; });
      const Tensor* t = read[static_cast<std::size_t>(i)];
      if (link.role == ChainLink::Role::Propagator) {
        if (s.bad) link.inputs.push_back(std::move(s));
        continue;
      }
      if (!t || !t->defined()) continue;
      if (lost[static_cast<std::size_t>(i)] && destroys(e->node, i)) {
        s.summary = "overwritten in place by the node";
      } else if (auto idx = broadcastIndex(link.firstIndex, t->shape());
                 idx && t->ndim() > 0 && value.ndim() > 0) {
        s.index = *idx;
        s.value = t->at(*idx);
      } else if (t->numel() == 1) {
        s.index = std::vector<std::int64_t>(static_cast<std::size_t>(t->ndim()), 0);
        s.value = t->contiguous().toDoubles()[0];
      } else {
        s.summary = summaryOf(*t);
      }
      link.inputs.push_back(std::move(s));
    }
    // Note [Fused code keeps names].
    if (link.role != ChainLink::Role::Propagator &&
        dynamic_cast<const Composite*>(&e->node.op()) != nullptr) {
      if (auto fused = findFusedOrigin(e->node, read, output, link.firstIndex, bit(link.firstKind),
                                       threshold)) {
        NodeRef ref = link.node;
        ref.fusedInto = e->node.op().str() + " node " + std::to_string(e->node.id());
        ref.op = fused->op;
        if (const auto [lineage, original] = namingFor(e->node); lineage && original) {
          // The original node with the inner op, or one the op was canonicalized from
          // (log(1 + x) -> log1p: "Elemwise{log" begins "Elemwise{log1p"); in an inner graph,
          // among the body's original nodes (Note [Inner lineage]).
          std::vector<std::int64_t> same, similar;
          const std::string inner = fused->op.substr(0, fused->op.size() - 1);
          for (std::int64_t o : lineage->originalNodesFor(e->node.id()))
            if (const Apply* orig = original->nodeById(o)) {
              const std::string op = orig->op().str();
              if (op == fused->op)
                same.push_back(o);
              else if (op.size() > 1 && inner.rfind(op.substr(0, op.size() - 1), 0) == 0)
                similar.push_back(o);
            }
          if (same.empty()) same = similar;
          if (!same.empty()) {
            const std::int64_t o = same[std::min<std::size_t>(
                static_cast<std::size_t>(fused->occurrence), same.size() - 1)];
            const Apply& orig = *original->nodeById(o);
            ref.originalId = o;
            // Named as written; what ran is noted ("Elemwise{log}" computed as log1p).
            if (orig.op().str() != fused->op) {
              ref.fusedInto += ", computed as " + fused->op;
              ref.op = orig.op().str();
            }
            ref.scope = orig.scope();
            ref.site = siteText(orig.site());
            ref.gradientOf = orig.gradientOf() ? originText(*orig.gradientOf()) : ref.gradientOf;
          }
        }
        link.node = std::move(ref);
        std::vector<InputSample> inner = fused->inputs;
        link.inputs = std::move(inner);
      }
    }
    if (!e->framePath.empty()) m_lastInFrame[e->framePath.back()] = rec;
  } else {
    link.role = ChainLink::Role::Creator;
    link.node.op = where + " '" + var.displayName() + "'";
    link.node.scope = var.scope();
    link.node.site = siteText(var.site());
  }
  m_records[&var] = rec;

  NanChecks reportable = rec->kinds & m_options.checks;
  if (!bigOn) reportable &= ~bit(NanCheck::Big);
  if (reportable) reportable &= ~allowedFor(rec->node, var);
  if (!reportable) return;
  NanCheck check = NanCheck::NaN;
  rec->detail.firstOf(reportable, &check);
  handle(vm, buildReport(*rec, check, where));
}

NanReport NanGuard::buildReport(const Record& rec, NanCheck check, const std::string& where) {
  NanReport r;
  r.check = check;
  r.where = where;
  r.node = rec.link.node;
  r.output = rec.link.output;
  r.variable = rec.link.variable;
  if (where == "update" && m_info) r.updateOf = m_info->updateOf.at(rec.var);
  r.shape = rec.shape;
  const int k = kindSlot(check);
  r.firstIndex = unflatten(rec.detail.first[static_cast<std::size_t>(k)], rec.shape);
  r.firstValue = rec.detail.firstValue[static_cast<std::size_t>(k)];
  r.counts = rec.detail.counts;
  r.bigThreshold = rec.threshold;
  r.call = calls();
  if (rec.node) {
    // Note [Root-cause chain]: follow the bad inputs back, preferring one that holds the kind
    // being followed.
    std::unordered_set<const Record*> seen;
    const Record* cur = &rec;
    while (cur && seen.insert(cur).second && r.chain.size() < 10000) {
      r.chain.push_back(cur->link);
      const NanCheck kind = cur->link.firstKind;
      const Record* next = nullptr;
      for (const auto& b : cur->badInputs)
        if (b->kinds & bit(kind)) {
          next = b.get();
          break;
        }
      if (!next && !cur->badInputs.empty()) next = cur->badInputs.front().get();
      cur = next;
    }
    ChainLink& head = r.chain.front();
    if (head.role != ChainLink::Role::Creator || r.chain.size() == 1) {
      head.firstKind = check;
      head.firstIndex = r.firstIndex;
      head.firstValue = r.firstValue;
    }
  }
  return r;
}

void NanGuard::handle(VM& vm, NanReport report) {
  // Note [Guarded updates]: the parameters as they were, before the replay file reads them.
  if (m_options.action == NanAction::Raise) restoreGuarded();
  std::string saved;
  if (!m_options.saveFailure.empty() && !m_savedThisCall) {
    m_savedThisCall = true;
    const FunctionGraph& graph =
        m_original && m_watchedGraph == &vm.graph() ? *m_original : vm.graph();
    saveReplay(m_options.saveFailure, graph, m_startInputs, &report);
    saved = m_options.saveFailure;
  }
  {
    std::lock_guard lock(m_mutex);
    ++m_eventCount;
    if (m_events.size() < m_options.maxEvents) m_events.push_back(report);
    if (!saved.empty()) m_lastFailureFile = saved;
    if (m_options.action == NanAction::Pause && !m_reportedThisCall) m_pauseReport = report;
  }
  const bool first = !std::exchange(m_reportedThisCall, true);
  switch (m_options.action) {
    case NanAction::Raise:
      throw NanGuardError(std::move(report));
    case NanAction::Pause:
      // Note [NanGuard actions]: one pause per call; what follows is recorded as events.
      if (first) vm.requestPause();
      break;
    case NanAction::Warn:
      break;
  }
}

}  // namespace tscope::engine::debug
