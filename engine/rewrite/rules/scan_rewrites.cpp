// Scan's rewrites (Theano's scan_opt): loop-invariant code moved out of the body, unused outputs
// removed, and scans over the same sequences merged into one loop. Canonicalize phase, fast_run.
//
// Note [Scan rewrites]:
// - scan_pushout_invariant: a body node whose inputs are all non-sequences or constants computes
//   the same value in every step; it is rebuilt outside the loop and its value enters the body as
//   a new non-sequence. Random ops and BreakPoints stay inside (a draw per step; a pause per step).
//   Nodes of constants alone are constant folding's.
// - scan_remove_unused_outputs: an output nobody reads is dropped with its body output, unless a
//   kept output reads its states (the closure over the body's recurrences).
// - scan_merge: two Scans with the same steps (the same nSteps variable or the same constant), the
//   same sequences with the same taps and the same truncateGradient, neither reading the other,
//   become one Scan whose body computes both bodies on the shared sequence slices: the loop runs
//   once. Labels join as "a+b".
#include "engine/graph/traversal.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/rewrite/rewrite_db.h"

#include <unordered_map>
#include <unordered_set>

namespace tscope::engine {

namespace {

using VarMap = std::unordered_map<const Variable*, VarPtr>;

// Every node of g rebuilt (through makeNode) on the variables `map` gives for g's inputs (and any
// other variable it already maps); returns the new variable of each of `wanted`.
std::vector<VarPtr> rebuildOn(const FunctionGraph& g, VarMap& map,
                              const std::vector<VarPtr>& wanted) {
  auto lookup = [&](const VarPtr& v) -> VarPtr {
    if (auto it = map.find(v.get()); it != map.end()) return it->second;
    VarPtr copy = v->cloneDetached();  // a constant of g
    copy->presetId(-1);
    map.emplace(v.get(), copy);
    return copy;
  };
  for (const Apply* node : g.toposort()) {
    if (map.count(&node->outputRef(0))) continue;  // given (hoisted)
    std::vector<VarPtr> ins;
    for (const VarPtr& in : node->inputs()) ins.push_back(lookup(in));
    ApplyPtr copy = node->op().makeNode(std::move(ins));
    copy->setSite(node->site());
    copy->setScope(node->scope());
    for (int o = 0; o < node->nOutputs(); ++o) {
      copy->outputRef(o).setName(node->outputRef(o).name());
      map.emplace(&node->outputRef(o), copy->output(o));
    }
  }
  std::vector<VarPtr> out;
  for (const VarPtr& v : wanted) out.push_back(lookup(v));
  return out;
}

VarPtr freshLike(const Variable& v) {
  return Variable::create(v.type(), v.name());
}

bool stepsEqual(const VarPtr& a, const VarPtr& b) {
  if (a == b) return true;
  const auto ca = constantIntValue(a), cb = constantIntValue(b);
  return ca && cb && *ca == *cb;
}

bool hoistable(const Apply& node) {
  const std::string name = node.op().name();
  return name.find("Random") == std::string::npos && name != "BreakPoint" &&
         node.op().destroyMap().empty();
}

Replacements pushoutInvariant(RewriteContext&, Apply& node) {
  const auto* op = dynamic_cast<const Scan*>(&node.op());
  if (!op || !op->isExecutable()) return {};
  const FunctionGraph& body = op->body();
  const auto& ins = body.inputs();
  const std::size_t nNonSeq = static_cast<std::size_t>(op->layout().nNonSeqs);
  const std::size_t firstNonSeq = ins.size() - nNonSeq;
  std::unordered_set<const Variable*> invariant;
  for (std::size_t k = firstNonSeq; k < ins.size(); ++k) invariant.insert(ins[k].get());
  std::vector<const Apply*> hoisted;
  std::unordered_set<const Apply*> hoistedSet;
  const std::vector<Apply*> order = body.toposort();
  for (const Apply* n : order) {
    bool all = hoistable(*n), anyVariable = false;
    for (const VarPtr& in : n->inputs()) {
      if (in->kind() == Variable::Kind::Constant) continue;
      anyVariable = true;
      all = all && invariant.count(in.get()) > 0;
    }
    if (!all || !anyVariable) continue;
    hoisted.push_back(n);
    hoistedSet.insert(n);
    for (int o = 0; o < n->nOutputs(); ++o) invariant.insert(&n->outputRef(o));
  }
  if (hoisted.empty()) return {};
  // The hoisted values the rest of the body (or its outputs) reads.
  std::vector<const Variable*> boundary;
  std::unordered_set<const Variable*> inBoundary;
  auto addBoundary = [&](const Variable* v) {
    if (v->owner() && hoistedSet.count(v->owner()) && inBoundary.insert(v).second)
      boundary.push_back(v);
  };
  for (const Apply* n : order)
    if (!hoistedSet.count(n))
      for (const VarPtr& in : n->inputs()) addBoundary(in.get());
  for (const VarPtr& out : body.outputs()) addBoundary(out.get());
  if (boundary.empty()) return {};
  // Outside: the hoisted nodes on the outer non-sequences.
  VarMap outer;
  for (std::size_t k = 0; k < nNonSeq; ++k)
    outer.emplace(ins[firstNonSeq + k].get(), node.input(op->nonSeqInput(static_cast<int>(k))));
  for (const Apply* n : hoisted) {
    std::vector<VarPtr> args;
    for (const VarPtr& in : n->inputs()) {
      auto it = outer.find(in.get());
      if (it != outer.end()) {
        args.push_back(it->second);
      } else {
        VarPtr c = in->cloneDetached();  // a constant of the body
        c->presetId(-1);
        args.push_back(c);
      }
    }
    ApplyPtr copy = n->op().makeNode(std::move(args));
    copy->setSite(n->site());
    copy->setScope(joinScope(node.scope(), n->scope()));
    for (int o = 0; o < n->nOutputs(); ++o) outer.emplace(&n->outputRef(o), copy->output(o));
  }
  // Inside: the old inputs and one new non-sequence per boundary value.
  VarMap inner;
  std::vector<VarPtr> newInputs;
  for (const VarPtr& in : ins) {
    newInputs.push_back(freshLike(*in));
    inner.emplace(in.get(), newInputs.back());
  }
  std::vector<VarPtr> nodeInputs = node.inputs();
  for (const Variable* v : boundary) {
    newInputs.push_back(freshLike(*v));
    inner.emplace(v, newInputs.back());
    nodeInputs.push_back(outer.at(v));
  }
  const std::vector<VarPtr> outs = rebuildOn(body, inner, body.outputs());
  Scan::Layout layout = op->layout();
  layout.nNonSeqs += static_cast<int>(boundary.size());
  auto newBody = std::make_shared<const FunctionGraph>(newInputs, outs);
  const std::vector<VarPtr> replaced =
      op->with(newBody, layout)
          ->makeNode(std::move(nodeInputs), std::source_location::current())
          ->outputs();
  Replacements r;
  for (int o = 0; o < node.nOutputs(); ++o)
    r.emplace_back(node.output(o), replaced[static_cast<std::size_t>(o)]);
  return r;
}

Replacements removeUnusedOutputs(RewriteContext& ctx, Apply& node) {
  const auto* op = dynamic_cast<const Scan*>(&node.op());
  if (!op || op->nOutputs() < 2) return {};
  const FunctionGraph& body = op->body();
  const int nOut = op->nOutputs();
  std::vector<bool> needed(static_cast<std::size_t>(nOut), false);
  bool any = false;
  for (int o = 0; o < nOut; ++o) {
    needed[static_cast<std::size_t>(o)] = !ctx.graph().clients(node.outputRef(o)).empty();
    any = any || needed[static_cast<std::size_t>(o)];
  }
  if (!any) return {};
  const std::vector<Apply*> order = body.toposort();
  const std::vector<const Apply*> corder(order.begin(), order.end());
  const auto pattern = innerConnectionPattern(body, corder);
  // First inner input of each output's states.
  std::vector<std::size_t> stateBase(static_cast<std::size_t>(nOut), 0);
  std::size_t p = 0;
  for (const auto& taps : op->layout().seqTaps) p += taps.size();
  for (int o = 0; o < nOut; ++o) {
    stateBase[static_cast<std::size_t>(o)] = p;
    p += op->layout().outTaps[static_cast<std::size_t>(o)].size();
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int o = 0; o < nOut; ++o) {
      if (!needed[static_cast<std::size_t>(o)]) continue;
      for (int j = 0; j < nOut; ++j) {
        if (needed[static_cast<std::size_t>(j)]) continue;
        const auto& taps = op->layout().outTaps[static_cast<std::size_t>(j)];
        for (std::size_t d = 0; d < taps.size(); ++d)
          if (pattern[stateBase[static_cast<std::size_t>(j)] + d][static_cast<std::size_t>(o)]) {
            needed[static_cast<std::size_t>(j)] = true;
            changed = true;
          }
      }
    }
  }
  bool removable = false;
  for (bool n : needed) removable = removable || !n;
  if (!removable) return {};
  const auto& ins = body.inputs();
  Scan::Layout layout = op->layout();
  layout.outTaps.clear();
  layout.outStore.clear();
  VarMap inner;
  std::vector<VarPtr> newInputs, nodeInputs{node.input(0)};
  std::size_t q = 0;
  for (std::size_t i = 0; i < op->layout().seqTaps.size(); ++i) {
    nodeInputs.push_back(node.input(1 + static_cast<int>(i)));
    for (std::size_t d = 0; d < op->layout().seqTaps[i].size(); ++d, ++q) {
      newInputs.push_back(freshLike(*ins[q]));
      inner.emplace(ins[q].get(), newInputs.back());
    }
  }
  std::vector<VarPtr> wanted;
  for (int o = 0; o < nOut; ++o) {
    const auto so = static_cast<std::size_t>(o);
    const auto& taps = op->layout().outTaps[so];
    if (!needed[so]) {
      q += taps.size();
      continue;
    }
    layout.outTaps.push_back(taps);
    layout.outStore.push_back(op->layout().outStore[so]);
    wanted.push_back(body.outputs()[so]);
    if (op->isRecurrent(o)) nodeInputs.push_back(node.input(op->initInput(o)));
    for (std::size_t d = 0; d < taps.size(); ++d, ++q) {
      newInputs.push_back(freshLike(*ins[q]));
      inner.emplace(ins[q].get(), newInputs.back());
    }
  }
  for (int k = 0; k < op->layout().nNonSeqs; ++k, ++q) {
    newInputs.push_back(freshLike(*ins[q]));
    inner.emplace(ins[q].get(), newInputs.back());
    nodeInputs.push_back(node.input(op->nonSeqInput(k)));
  }
  const std::vector<VarPtr> outs = rebuildOn(body, inner, wanted);
  auto newBody = std::make_shared<const FunctionGraph>(newInputs, outs);
  const std::vector<VarPtr> replaced =
      op->with(newBody, layout)
          ->makeNode(std::move(nodeInputs), std::source_location::current())
          ->outputs();
  Replacements r;
  std::size_t k = 0;
  for (int o = 0; o < nOut; ++o)
    if (needed[static_cast<std::size_t>(o)]) r.emplace_back(node.output(o), replaced[k++]);
  return r;
}

// The inner inputs of a scan grouped: sequence taps, each output's states, non-sequences.
struct Parts {
  std::vector<VarPtr> seq, state, nonSeq;
};
Parts partsOf(const Scan& op) {
  Parts p;
  const auto& ins = op.body().inputs();
  std::size_t q = 0;
  for (const auto& taps : op.layout().seqTaps)
    for (std::size_t d = 0; d < taps.size(); ++d) p.seq.push_back(ins[q++]);
  for (const auto& taps : op.layout().outTaps)
    for (std::size_t d = 0; d < taps.size(); ++d) p.state.push_back(ins[q++]);
  while (q < ins.size()) p.nonSeq.push_back(ins[q++]);
  return p;
}

bool mergeable(const Apply& a, const Apply& b) {
  const auto* oa = dynamic_cast<const Scan*>(&a.op());
  const auto* ob = dynamic_cast<const Scan*>(&b.op());
  if (!oa || !ob || oa->nSequences() == 0) return false;
  if (!stepsEqual(a.input(0), b.input(0))) return false;
  if (oa->layout().seqTaps != ob->layout().seqTaps) return false;
  if (oa->layout().truncateGradient != ob->layout().truncateGradient) return false;
  for (int i = 0; i < oa->nSequences(); ++i)
    if (a.input(1 + i) != b.input(1 + i)) return false;
  // b must not read a (a comes first in the schedule, so a cannot read b).
  const std::vector<VarPtr> bIns = b.inputs();
  for (const Apply* n : ancestorNodes(bIns))
    if (n == &a) return false;
  return true;
}

std::size_t mergeScans(RewriteContext& ctx) {
  std::size_t changes = 0;
  for (bool again = true; again;) {
    again = false;
    std::vector<Apply*> scans;
    for (Apply* n : ctx.graph().toposort())
      if (n->op().name() == "Scan") scans.push_back(n);
    for (std::size_t i = 0; i < scans.size() && !again; ++i)
      for (std::size_t j = i + 1; j < scans.size() && !again; ++j) {
        Apply& a = *scans[i];
        Apply& b = *scans[j];
        if (!mergeable(a, b)) continue;
        const auto& oa = static_cast<const Scan&>(a.op());
        const auto& ob = static_cast<const Scan&>(b.op());
        const Parts pa = partsOf(oa), pb = partsOf(ob);
        std::vector<VarPtr> seq, sa, sb, wa, wb;
        for (const VarPtr& v : pa.seq) seq.push_back(freshLike(*v));
        for (const VarPtr& v : pa.state) sa.push_back(freshLike(*v));
        for (const VarPtr& v : pb.state) sb.push_back(freshLike(*v));
        for (const VarPtr& v : pa.nonSeq) wa.push_back(freshLike(*v));
        for (const VarPtr& v : pb.nonSeq) wb.push_back(freshLike(*v));
        VarMap ma, mb;
        for (std::size_t k = 0; k < seq.size(); ++k) {
          ma.emplace(pa.seq[k].get(), seq[k]);
          mb.emplace(pb.seq[k].get(), seq[k]);
        }
        for (std::size_t k = 0; k < sa.size(); ++k) ma.emplace(pa.state[k].get(), sa[k]);
        for (std::size_t k = 0; k < sb.size(); ++k) mb.emplace(pb.state[k].get(), sb[k]);
        for (std::size_t k = 0; k < wa.size(); ++k) ma.emplace(pa.nonSeq[k].get(), wa[k]);
        for (std::size_t k = 0; k < wb.size(); ++k) mb.emplace(pb.nonSeq[k].get(), wb[k]);
        std::vector<VarPtr> outs = rebuildOn(oa.body(), ma, oa.body().outputs());
        const std::vector<VarPtr> outsB = rebuildOn(ob.body(), mb, ob.body().outputs());
        outs.insert(outs.end(), outsB.begin(), outsB.end());
        std::vector<VarPtr> inputs(seq);
        for (const auto* part : {&sa, &sb, &wa, &wb})
          inputs.insert(inputs.end(), part->begin(), part->end());
        Scan::Layout layout = oa.layout();
        layout.outTaps.insert(layout.outTaps.end(), ob.layout().outTaps.begin(),
                              ob.layout().outTaps.end());
        layout.outStore.insert(layout.outStore.end(), ob.layout().outStore.begin(),
                               ob.layout().outStore.end());
        layout.nNonSeqs = oa.layout().nNonSeqs + ob.layout().nNonSeqs;
        std::vector<VarPtr> nodeInputs{a.input(0)};
        for (int s = 0; s < oa.nSequences(); ++s) nodeInputs.push_back(a.input(1 + s));
        for (int o = 0; o < oa.nOutputs(); ++o)
          if (oa.isRecurrent(o)) nodeInputs.push_back(a.input(oa.initInput(o)));
        for (int o = 0; o < ob.nOutputs(); ++o)
          if (ob.isRecurrent(o)) nodeInputs.push_back(b.input(ob.initInput(o)));
        for (int k = 0; k < oa.layout().nNonSeqs; ++k)
          nodeInputs.push_back(a.input(oa.nonSeqInput(k)));
        for (int k = 0; k < ob.layout().nNonSeqs; ++k)
          nodeInputs.push_back(b.input(ob.nonSeqInput(k)));
        auto merged =
            std::make_shared<const Scan>(std::make_shared<const FunctionGraph>(inputs, outs),
                                         std::move(layout), oa.label() + "+" + ob.label());
        const std::vector<VarPtr> got =
            merged->makeNode(std::move(nodeInputs), std::source_location::current())->outputs();
        Replacements r;
        for (int o = 0; o < a.nOutputs(); ++o)
          r.emplace_back(a.output(o), got[static_cast<std::size_t>(o)]);
        for (int o = 0; o < b.nOutputs(); ++o)
          r.emplace_back(b.output(o), got[static_cast<std::size_t>(a.nOutputs() + o)]);
        if (ctx.replace(r, "scan_merge")) {
          ++changes;
          again = true;
        }
      }
  }
  return changes;
}

}  // namespace

void registerScanRewrites(RewriteDb& db) {
  const std::vector<std::string> tags{"fast_run", "scan"};
  //   before: y = Scan{rnn}(n, x, h0, W)        body: tanh(x[t] + h[t-1] * (W * 2))
  //   after:  y = Scan{rnn}(n, x, h0, W, W * 2) body: tanh(x[t] + h[t-1] * w2)
  db.add(Phase::Canonicalize, nodeRewriter("scan_pushout_invariant", {"Scan"}, pushoutInvariant),
         tags);
  //   before: (a, b) = Scan{s}(...) with only a read; after: a = Scan{s}(...) without b
  db.add(Phase::Canonicalize,
         nodeRewriter("scan_remove_unused_outputs", {"Scan"}, removeUnusedOutputs), tags);
  //   before: a = Scan{p}(n, x, ...), b = Scan{q}(n, x, ...); after: (a, b) = Scan{p+q}(n, x, ...)
  db.add(Phase::Canonicalize, graphRewriter("scan_merge", mergeScans), tags);
}

}  // namespace tscope::engine
