#include "engine/rewrite/rules/fusion.h"

#include "engine/graph/flat_hash_map.h"
#include "engine/graph/op.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tscope::engine {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A producer with more clients than the group has members plus this many cannot join as a member,
// and is not scanned for an extra output or a copy: the scan of its clients would otherwise be
// repeated by every group that reaches it.
constexpr std::size_t kMaxOutsideClients = 64;

const Composite* asComposite(const Apply& node) {
  return dynamic_cast<const Composite*>(&node.op());
}
const Elemwise* asElemwise(const Apply& node) {
  return dynamic_cast<const Elemwise*>(&node.op());
}

// An Elemwise or Composite node that is not inplace, runs on the CPU and whose outputs share one
// static shape.
bool isFusible(const Apply& node) {
  if (const Elemwise* e = asElemwise(node)) {
    if (!e->inplacePattern().empty()) return false;
  } else if (const Composite* c = asComposite(node)) {
    if (!c->inplacePattern().empty()) return false;
  } else {
    return false;
  }
  for (const VarPtr& in : node.inputs())
    if (in->type().device() != Device::Cpu) return false;
  for (int o = 0; o < node.nOutputs(); ++o) {
    const TensorType& t = node.outputRef(o).type();
    if (t.device() != Device::Cpu || t.shape() != node.outputRef(0).type().shape()) return false;
  }
  return true;
}

// Cheap enough to compute twice: one load and a few instructions per element.
bool isCheapUnary(const Apply& node) {
  const Elemwise* e = asElemwise(node);
  if (e == nullptr || node.nInputs() != 1) return false;
  switch (e->scalarOp()) {
    case ScalarOp::Neg:
    case ScalarOp::Abs:
    case ScalarOp::Sqr:
    case ScalarOp::Sign:
    case ScalarOp::Identity:
    case ScalarOp::Cast:
    case ScalarOp::Not:
    case ScalarOp::Relu:
      return true;
    default:
      return false;
  }
}

struct ShapeFit {
  bool full = true;    // the outputs can have the group's shape (no axis statically broadcast)
  bool scalar = true;  // every output dimension is statically 1
};

ShapeFit fitOf(const Apply& node, const std::vector<std::int64_t>& groupShape) {
  ShapeFit fit;
  const std::vector<std::int64_t>& s = node.outputRef(0).type().shape();  // all outputs share it
  for (std::int64_t d : s) fit.scalar = fit.scalar && d == 1;
  if (s.size() != groupShape.size()) {
    fit.full = false;
  } else {
    for (std::size_t a = 0; a < s.size() && fit.full; ++a) {
      const std::int64_t d = s[a], g = groupShape[a];
      if ((d == 1) != (g == 1)) fit.full = false;
      if (d != kUnknownDim && g != kUnknownDim && d != g) fit.full = false;
    }
  }
  return fit;
}

struct Group {
  std::vector<std::uint32_t> members;  // positions, the root first
  std::vector<std::uint32_t> copies;   // positions of duplicated cheap producers
};

class Fuser {
 public:
  Fuser(FunctionGraph& fg, const FusionOptions& options) : m_fg(fg), m_options(options) {
    m_order = fg.toposort();
    const std::size_t n = m_order.size();
    // Replacing a group prunes its nodes from the graph, which may free them; later groups still
    // look at them (to see that they are gone), so the pass holds them.
    m_hold.reserve(n);
    for (Apply* node : m_order) m_hold.push_back(node->shared_from_this());
    // Positions and input marks by id (Note [Node ids]: below nextId()): plain arrays, where a
    // hash map would miss the cache on every lookup of a large graph.
    m_idCount = static_cast<std::size_t>(fg.nextId());
    m_pos.assign(m_idCount, kNoPosition);
    for (std::size_t i = 0; i < n; ++i)
      m_pos[static_cast<std::size_t>(m_order[i]->id())] = static_cast<std::uint32_t>(i);
    m_inputMark.assign(m_idCount, -1);
    m_fusible.resize(n);
    for (std::size_t i = 0; i < n; ++i) m_fusible[i] = isFusible(*m_order[i]);
    m_groupOf.assign(n, -1);
    m_copyOf.assign(n, -1);
    m_queued.assign(n, -1);
  }

  std::size_t run() {
    for (std::size_t r = m_order.size(); r-- > 0;)
      if (m_fusible[r] && m_groupOf[r] < 0) formGroup(static_cast<std::uint32_t>(r));
    std::size_t created = 0;
    for (std::size_t g = 0; g < m_groups.size(); ++g)
      created += apply(m_groups[g], m_groupIds[g]) ? 1 : 0;
    return created;
  }

 private:
  // --- Forming groups (Note [Fusion groups]) ---

  // Null for a node the pass created (a Composite).
  const std::uint32_t* posOf(const Apply* node) const {
    const auto id = static_cast<std::size_t>(node->id());
    return id < m_idCount && m_pos[id] != kNoPosition ? &m_pos[id] : nullptr;
  }
  int& inputMark(const Variable& v) { return m_inputMark[static_cast<std::size_t>(v.id())]; }

  // The node's position in the quotient graph (Note [Fusion keeps a topological order]).
  double qpos(const Apply* node) const {
    const std::uint32_t p = *posOf(node);
    const int g = m_groupOf[p];
    return g >= 0 ? m_groupPos[static_cast<std::size_t>(g)] : static_cast<double>(p);
  }

  // Computed inside the current group: by a member or a copy.
  bool isInternal(const Variable& v) const {
    const Apply* owner = v.owner();
    if (owner == nullptr) return false;
    const std::uint32_t p = *posOf(owner);
    return m_groupOf[p] == m_gid || m_copyOf[p] == m_gid;
  }

  struct Pred {
    double pos;
    const Variable* var;
    bool operator<(const Pred& other) const { return pos < other.pos; }
  };

  void addInput(const VarPtr& v) {
    int& mark = inputMark(*v);
    if (mark == m_gid) return;
    mark = m_gid;
    ++m_inputCount;
    if (const Apply* owner = v->owner()) {
      m_preds.push_back({qpos(owner), v.get()});
      std::push_heap(m_preds.begin(), m_preds.end());
    }
  }

  void pushProducers(const Apply& node) {
    for (const VarPtr& in : node.inputs()) {
      const Apply* owner = in->owner();
      if (owner == nullptr) continue;
      const std::uint32_t p = *posOf(owner);
      if (m_queued[p] == m_gid || m_groupOf[p] >= 0 || !m_fusible[p]) continue;
      m_queued[p] = m_gid;
      m_frontier.push_back(p);
      std::push_heap(m_frontier.begin(), m_frontier.end());
    }
  }

  void formGroup(std::uint32_t root) {
    m_gid = m_nextGid++;
    Group group;
    group.members.push_back(root);
    m_groupOf[root] = m_gid;
    m_preds.clear();
    m_frontier.clear();
    m_inputCount = 0;
    m_minSucc = kInf;
    const Apply& rootNode = *m_order[root];
    m_groupShape = rootNode.outputRef(0).type().shape();
    for (const VarPtr& in : rootNode.inputs()) addInput(in);
    for (int o = 0; o < rootNode.nOutputs(); ++o)
      for (const Client& c : m_fg.clients(rootNode.outputRef(o)))
        if (!c.isOutput()) m_minSucc = std::min(m_minSucc, qpos(c.node));
    pushProducers(rootNode);
    while (!m_frontier.empty()) {
      std::pop_heap(m_frontier.begin(), m_frontier.end());
      const std::uint32_t q = m_frontier.back();
      m_frontier.pop_back();
      tryAdd(group, q);
    }
    if (group.members.size() + group.copies.size() < 2) {
      m_groupOf[root] = -1;  // a single node stays as it is
      return;
    }
    // The group's place in the quotient order: strictly between its input producers and the
    // consumers of its outputs (tryAdd kept maxPred < minSucc).
    const double lo = maxPred(nullptr), hi = m_minSucc;
    double at = static_cast<double>(root);
    if (lo > -kInf && hi < kInf)
      at = lo + (hi - lo) / 2;
    else if (lo > -kInf)
      at = lo + 0.5;
    else if (hi < kInf)
      at = hi - 0.5;
    if (!(lo < at &&
          at < hi)) {  // no representable position left between them: keep the nodes apart
      for (std::uint32_t m : group.members) m_groupOf[m] = -1;
      return;
    }
    m_groupPos.resize(static_cast<std::size_t>(m_nextGid), 0.0);
    m_groupPos[static_cast<std::size_t>(m_gid)] = at;
    m_groups.push_back(std::move(group));
    m_groupIds.push_back(m_gid);
  }

  // The highest quotient position among the group's input producers, not counting the outputs of
  // `joining` (which would become internal). Entries of inputs that became internal are dropped;
  // those of `joining` are set aside in m_setAside for restoreSetAside().
  double maxPred(const Apply* joining) {
    m_setAside.clear();
    while (!m_preds.empty()) {
      const Pred& top = m_preds.front();
      if (inputMark(*top.var) != m_gid) {
        std::pop_heap(m_preds.begin(), m_preds.end());
        m_preds.pop_back();
      } else if (joining != nullptr && top.var->owner() == joining) {
        m_setAside.push_back(top);
        std::pop_heap(m_preds.begin(), m_preds.end());
        m_preds.pop_back();
      } else {
        return top.pos;
      }
    }
    return -kInf;
  }

  void restoreSetAside() {
    for (const Pred& p : m_setAside) {
      m_preds.push_back(p);
      std::push_heap(m_preds.begin(), m_preds.end());
    }
    m_setAside.clear();
  }

  void tryAdd(Group& group, std::uint32_t q) {
    const Apply& node = *m_order[q];
    if (m_groupOf[q] >= 0) return;
    const ShapeFit fit = fitOf(node, m_groupShape);
    if (!fit.full && !fit.scalar)
      return;  // smaller and broadcast: it would be recomputed per element

    // Clients: inside when a member consumes the output. Note that a copy's original stays
    // outside, consuming what the copy consumes.
    std::size_t clients = 0;
    for (int o = 0; o < node.nOutputs(); ++o) clients += m_fg.clients(node.outputRef(o)).size();
    if (clients > group.members.size() + kMaxOutsideClients) return;
    bool outside = false;
    double succ = kInf;
    for (int o = 0; o < node.nOutputs(); ++o) {
      for (const Client& c : m_fg.clients(node.outputRef(o))) {
        if (c.isOutput()) {
          outside = true;
          continue;
        }
        const std::uint32_t pc = *posOf(c.node);
        if (m_groupOf[pc] == m_gid) continue;
        outside = true;
        succ = std::min(succ, qpos(c.node));
      }
    }
    enum class Join { Member, Copy, Output } join = Join::Member;
    if (outside) {
      if (m_options.duplicateCheap && (isCheapUnary(node) || fit.scalar))
        join = Join::Copy;
      else if (fit.full)
        join = Join::Output;
      else
        return;
    }

    // The inputs it adds (each distinct variable once) and the outputs that stop being inputs.
    std::size_t removed = 0;
    for (int o = 0; o < node.nOutputs(); ++o) {
      removed += inputMark(node.outputRef(o)) == m_gid ? 1 : 0;
    }
    std::size_t added = 0;
    double pred = -kInf;
    for (std::size_t i = 0; i < node.inputs().size(); ++i) {
      const VarPtr& in = node.inputs()[i];
      if (isInternal(*in)) continue;
      if (in->owner() != nullptr) pred = std::max(pred, qpos(in->owner()));
      const bool counted = inputMark(*in) == m_gid;
      bool repeated = false;
      for (std::size_t k = 0; k < i && !repeated; ++k) repeated = node.inputs()[k] == in;
      added += !counted && !repeated ? 1 : 0;
    }
    if (m_inputCount - removed + added > m_options.maxInputs) return;

    // Note [Fusion keeps a topological order].
    pred = std::max(pred, maxPred(&node));
    const double minSucc = join == Join::Output ? std::min(m_minSucc, succ) : m_minSucc;
    if (!(pred < minSucc)) {
      restoreSetAside();
      return;
    }
    m_setAside.clear();  // the joining node's outputs are internal now

    if (join == Join::Copy) {
      m_copyOf[q] = m_gid;
      group.copies.push_back(q);
    } else {
      m_groupOf[q] = m_gid;
      group.members.push_back(q);
    }
    m_minSucc = minSucc;
    for (int o = 0; o < node.nOutputs(); ++o) {
      int& mark = inputMark(node.outputRef(o));
      if (mark == m_gid) {
        mark = -1;
        --m_inputCount;
      }
    }
    for (const VarPtr& in : node.inputs())
      if (!isInternal(*in)) addInput(in);
    pushProducers(node);
  }

  // --- Replacing groups by Composites ---

  bool isMemberOf(const Apply* node, int gid) const {
    const std::uint32_t* p = posOf(node);
    return p != nullptr && m_groupOf[*p] == gid;
  }

  // Builds the group's Composite from the graph as it is now (earlier groups may have replaced
  // some of its inputs) and replaces the group's outputs used outside it. False when nothing is
  // left to fuse.
  bool apply(const Group& group, int gid) {
    std::vector<std::uint32_t> positions;
    for (std::uint32_t p : group.members)
      if (m_fg.contains(*m_order[p])) positions.push_back(p);
    for (std::uint32_t p : group.copies)
      if (m_fg.contains(*m_order[p])) positions.push_back(p);
    std::sort(positions.begin(), positions.end());
    if (positions.size() < 2) return false;

    // Variables computed inside, and the inputs in order of first use.
    FlatHashMap<const Variable*, int> reg(positions.size() * 2);
    for (std::uint32_t p : positions)
      for (int o = 0; o < m_order[p]->nOutputs(); ++o) reg.set(&m_order[p]->outputRef(o), -1);
    std::vector<VarPtr> inputs;
    for (std::uint32_t p : positions)
      for (const VarPtr& in : m_order[p]->inputs())
        if (reg.tryEmplace(in.get(), static_cast<int>(inputs.size())).second) inputs.push_back(in);
    const int nIn = static_cast<int>(inputs.size());

    std::vector<CompositeInstruction> program;
    std::vector<std::size_t> source;  // the node (index into positions) of each instruction
    for (std::size_t k = 0; k < positions.size(); ++k) {
      const Apply& node = *m_order[positions[k]];
      if (const Elemwise* e = asElemwise(node)) {
        CompositeInstruction ins{e->scalarOp(), {}, e->target()};
        for (const VarPtr& in : node.inputs()) ins.args.push_back(*reg.find(in.get()));
        program.push_back(std::move(ins));
        source.push_back(k);
        reg.set(&node.outputRef(0), nIn + static_cast<int>(program.size()) - 1);
      } else {
        const Composite& c = *asComposite(node);
        std::vector<int> local;
        for (const VarPtr& in : node.inputs()) local.push_back(*reg.find(in.get()));
        for (const CompositeInstruction& inner : c.program()) {
          CompositeInstruction ins{inner.op, {}, inner.target};
          for (int a : inner.args) ins.args.push_back(local[static_cast<std::size_t>(a)]);
          program.push_back(std::move(ins));
          source.push_back(k);
          local.push_back(nIn + static_cast<int>(program.size()) - 1);
        }
        for (int o = 0; o < node.nOutputs(); ++o)
          reg.set(
              &node.outputRef(o),
              local[static_cast<std::size_t>(c.outputRegisters()[static_cast<std::size_t>(o)])]);
      }
    }

    // The members' outputs used outside the group.
    std::vector<VarPtr> exported;
    std::vector<int> outputs;
    const Apply* root = nullptr;
    for (std::size_t k = positions.size(); k-- > 0;) {
      Apply* node = m_order[positions[k]];
      if (!isMemberOf(node, gid)) continue;
      if (root == nullptr) root = node;
      for (int o = 0; o < node->nOutputs(); ++o) {
        const Variable& v = node->outputRef(o);
        bool outside = false;
        for (const Client& c : m_fg.clients(v))
          outside = outside || c.isOutput() || !isMemberOf(c.node, gid);
        if (!outside) continue;
        exported.push_back(node->output(o));
        outputs.push_back(*reg.find(&v));
      }
    }
    if (exported.empty() || root == nullptr) return false;

    // Keep what the exported outputs need; renumber.
    std::vector<bool> needed(static_cast<std::size_t>(nIn) + program.size(), false);
    for (int r : outputs) needed[static_cast<std::size_t>(r)] = true;
    for (std::size_t j = program.size(); j-- > 0;)
      if (needed[static_cast<std::size_t>(nIn) + j])
        for (int a : program[j].args) needed[static_cast<std::size_t>(a)] = true;
    std::vector<int> renumber(needed.size(), -1);
    std::vector<VarPtr> keptInputs;
    std::vector<DType> dtypes;
    for (int i = 0; i < nIn; ++i) {
      if (!needed[static_cast<std::size_t>(i)]) continue;
      renumber[static_cast<std::size_t>(i)] = static_cast<int>(keptInputs.size());
      keptInputs.push_back(inputs[static_cast<std::size_t>(i)]);
      dtypes.push_back(inputs[static_cast<std::size_t>(i)]->type().dtype());
    }
    std::vector<CompositeInstruction> kept;
    std::vector<std::size_t> keptSources;
    for (std::size_t j = 0; j < program.size(); ++j) {
      if (!needed[static_cast<std::size_t>(nIn) + j]) continue;
      CompositeInstruction ins = program[j];
      for (int& a : ins.args) a = renumber[static_cast<std::size_t>(a)];
      renumber[static_cast<std::size_t>(nIn) + j] =
          static_cast<int>(keptInputs.size() + kept.size());
      kept.push_back(std::move(ins));
      if (std::find(keptSources.begin(), keptSources.end(), source[j]) == keptSources.end())
        keptSources.push_back(source[j]);
    }
    if (keptSources.size() < 2 || keptInputs.size() > m_options.maxInputs) return false;
    for (int& r : outputs) r = renumber[static_cast<std::size_t>(r)];

    std::shared_ptr<Composite> op;
    std::vector<TensorType> types;
    try {
      op = std::make_shared<Composite>(std::move(dtypes), std::move(kept), std::move(outputs));
      types = op->outputTypes(keptInputs);
    } catch (const std::invalid_argument&) {
      return false;  // an instruction without a CPU kernel: the unfused nodes keep their behaviour
    }
    for (std::size_t k = 0; k < exported.size(); ++k)
      if (!types[k].isSubtypeOf(exported[k]->type())) return false;
    ApplyPtr fused = Apply::create(op, keptInputs, std::move(types), root->site());
    fused->setScope(root->scope());
    std::vector<std::pair<VarPtr, VarPtr>> pairs;
    for (std::size_t k = 0; k < exported.size(); ++k) {
      const Variable& old = *exported[k];
      Variable& fresh = fused->outputRef(static_cast<int>(k));
      fresh.setName(old.name());
      fresh.setScope(old.scope());
      if (old.testValue()) fresh.setTestValue(*old.testValue());
      pairs.emplace_back(exported[k], fused->output(static_cast<int>(k)));
    }
    m_fg.replaceAll(pairs, "elemwise_fusion");
    return true;
  }

  FunctionGraph& m_fg;
  const FusionOptions& m_options;
  std::vector<Apply*> m_order;
  std::vector<ApplyPtr> m_hold;
  static constexpr std::uint32_t kNoPosition = ~std::uint32_t{0};
  std::size_t m_idCount = 0;
  std::vector<std::uint32_t> m_pos;  // by node id
  std::vector<bool> m_fusible;
  std::vector<int> m_groupOf;  // the group a node is a member of
  std::vector<int> m_copyOf;   // the latest group a node was copied into
  std::vector<int> m_queued;   // the latest group whose frontier held the node
  std::vector<double> m_groupPos;
  std::vector<Group> m_groups;
  std::vector<int> m_groupIds;
  int m_nextGid = 0;

  // The group being formed.
  int m_gid = -1;
  std::vector<std::int64_t> m_groupShape;
  std::vector<std::uint32_t> m_frontier;  // max-heap of positions
  std::vector<Pred> m_preds;              // max-heap of the input producers' quotient positions
  std::vector<Pred> m_setAside;
  std::vector<int> m_inputMark;  // by variable id: == m_gid while it is an input of the group
  std::size_t m_inputCount = 0;
  double m_minSucc = kInf;
};

}  // namespace

std::size_t fuseElementwise(FunctionGraph& fg, const FusionOptions& options) {
  return Fuser(fg, options).run();
}

}  // namespace tscope::engine
