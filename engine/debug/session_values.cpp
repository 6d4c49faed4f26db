// DebugSession: reading values at a pause, edits, undo and recompute (Note [Session values],
// Note [Edits and recompute] in debug_session.h).
#include "engine/debug/debug_session_impl.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/ops/transfer/transfer.h"
#include "engine/tensor/device_memory.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace tscope::engine::debug {

namespace {

std::string frameText(std::size_t frame) {
  return frame == 0 ? "frame 0 (the outer graph)" : "frame " + std::to_string(frame);
}

bool parseInt(std::string_view text, std::int64_t& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

std::string typeText(const Tensor& t) {
  return std::string(dtypeName(t.dtype())) + " " + shapeToString(t.shape());
}

}  // namespace

const Variable& DebugSession::Impl::lookup(std::string_view key, std::size_t frame) const {
  if (frame > vm.depth())
    throw std::out_of_range("no " + frameText(frame) + ": the execution has " +
                            std::to_string(vm.depth() + 1) + " frame(s)");
  const Program& p = *vm.frame(frame).program;
  const FunctionGraph& g = p.graph();
  const std::string where = " in " + frameText(frame);
  if (!key.empty() && key.front() == '#') {
    std::int64_t id = -1;
    if (!parseInt(key.substr(1), id))
      throw std::invalid_argument("expected a variable id after '#', found '" + std::string(key) +
                                  "'");
    for (const Variable* v : g.variables())
      if (v->id() == id) return *v;
    throw std::invalid_argument("no variable #" + std::to_string(id) + where);
  }
  if (key.substr(0, 5) == "node:") {
    std::string_view rest = key.substr(5);
    std::int64_t output = 0, id = -1;
    const std::size_t dot = rest.find('.');
    if (dot != std::string_view::npos) {
      if (!parseInt(rest.substr(dot + 1), output) || output < 0)
        throw std::invalid_argument("expected node:ID.K with an output index K, found '" +
                                    std::string(key) + "'");
      rest = rest.substr(0, dot);
    }
    if (!parseInt(rest, id))
      throw std::invalid_argument("expected node:ID with a node id, found '" + std::string(key) +
                                  "'");
    for (const Apply* node : p.schedule()) {
      if (node->id() != id) continue;
      if (output >= node->nOutputs())
        throw std::invalid_argument("node " + std::to_string(id) + " (" + node->op().str() +
                                    ") has " + std::to_string(node->nOutputs()) +
                                    " output(s), found output " + std::to_string(output));
      return node->outputRef(static_cast<int>(output));
    }
    throw std::invalid_argument("no node " + std::to_string(id) + where);
  }
  // Note [Names across transfers]: a value placed on a device and the host copy a transfer makes
  // of it (engine/rewrite/rules/gpu_placement.cpp) share the user's name and hold the same
  // values; the name means the one no transfer made.
  const Variable* found = nullptr;
  std::string ids;
  for (int pass = 0; pass < 2 && !found; ++pass) {
    std::vector<const Variable*> named;
    for (const Variable* v : g.variables())
      if ((pass == 0 ? v->name() : v->displayName()) == key) named.push_back(v);
    if (named.size() > 1)
      std::erase_if(named,
                    [](const Variable* v) { return v->owner() && isTransfer(v->owner()->op()); });
    for (const Variable* v : named) {
      ids += (ids.empty() ? "#" : ", #") + std::to_string(v->id());
      if (found)
        throw std::invalid_argument("'" + std::string(key) + "' names several variables" + where +
                                    " (" + ids + "...); give one as #ID");
      found = v;
    }
  }
  if (!found)
    throw std::invalid_argument("no variable '" + std::string(key) + "'" + where +
                                " (names: a variable name, #ID, or node:ID.K)");
  return *found;
}

ValueView DebugSession::Impl::view(const Variable& var, std::size_t frame,
                                   const Tensor& value) const {
  ValueView v;
  v.varId = var.id();
  v.name = var.displayName();
  v.producerId = var.owner() ? var.owner()->id() : -1;
  v.outputIndex = var.owner() ? var.index() : 0;
  v.frame = frame;
  v.value = hostCopy(value);  // Note [Reading device values]
  v.stats = statsOf(v.value);
  const Program* p = vm.frame(frame).program;
  v.edited = std::any_of(edits.begin(), edits.end(),
                         [&](const Edit& e) { return e.var == &var && e.program == p; });
  return v;
}

std::vector<ValueView> DebugSession::Impl::values(std::size_t frame) const {
  if (frame > vm.depth())
    throw std::out_of_range("values: no " + frameText(frame) + ": the execution has " +
                            std::to_string(vm.depth() + 1) + " frame(s)");
  const VM::FrameInfo info = vm.frame(frame);
  const Program& p = *info.program;
  std::vector<ValueView> out;
  for (const VarPtr& in : p.graph().inputs())
    if (const Tensor* t = vm.value(frame, *in)) out.push_back(view(*in, frame, *t));
  for (std::size_t pos = 0; pos < info.pc && pos < p.schedule().size(); ++pos) {
    const Apply& node = *p.schedule()[pos];
    for (int o = 0; o < node.nOutputs(); ++o)
      if (const Tensor* t = vm.value(frame, node.outputRef(o)))
        out.push_back(view(node.outputRef(o), frame, *t));
  }
  return out;
}

void DebugSession::Impl::setValue(std::string_view key, const Tensor& value, std::size_t frame) {
  const Variable& var = lookup(key, frame);
  const TensorType& type = var.type();
  const std::string name = "'" + var.displayName() + "' (#" + std::to_string(var.id()) + ")";
  if (!value.defined())
    throw std::invalid_argument("setValue: the new value of " + name + " is an undefined tensor");
  bool fits = value.dtype() == type.dtype() && value.ndim() == type.ndim();
  for (int a = 0; fits && a < type.ndim(); ++a)
    fits = !type.isDimKnown(a) || type.shape()[static_cast<std::size_t>(a)] == value.shape()[a];
  if (!fits)
    throw std::invalid_argument("setValue: " + name + " expects " + type.str() + ", found " +
                                typeText(value));
  const Tensor* current = vm.value(frame, var);
  if (!current)
    throw std::logic_error("setValue: " + name + " is not computed yet" +
                           (var.owner() ? " (its node " + std::to_string(var.owner()->id()) + ", " +
                                              var.owner()->op().str() + ", has not run)"
                                        : "") +
                           "; a value can be replaced once its node ran");
  const Program* p = vm.frame(frame).program;
  const bool known = std::any_of(edits.begin(), edits.end(),
                                 [&](const Edit& e) { return e.var == &var && e.program == p; });
  if (!known) edits.push_back({p, frame, &var, *current});
  // The new value goes where the run keeps this one (a device slot gets a device copy).
  vm.setValue(var, current->device() == value.device() ? cloneOnDevice(value)
                                                       : toDevice(value, current->device()));
  dirty.insert(&var);
}

void DebugSession::Impl::undoEdit(std::string_view key, std::size_t frame) {
  const Variable& var = lookup(key, frame);
  const Program* p = vm.frame(frame).program;
  const auto it = std::find_if(edits.begin(), edits.end(),
                               [&](const Edit& e) { return e.var == &var && e.program == p; });
  if (it == edits.end())
    throw std::invalid_argument("undoEdit: '" + var.displayName() + "' (#" +
                                std::to_string(var.id()) + ") has no edit to undo in " +
                                frameText(frame));
  vm.setValue(var, it->original);
  edits.erase(it);
  dirty.insert(&var);
}

void DebugSession::Impl::dropStaleEdits() {
  std::erase_if(edits, [&](const Edit& e) {
    return e.frame > vm.depth() || vm.frame(e.frame).program != e.program;
  });
}

// Note [Recompute]: the session re-runs a node itself, with the kernel the linker chose (an
// inner-graph node through its op's perform), on the values its inputs hold now, into fresh
// output tensors; an input the node overwrites in place is copied first, so no retained value
// changes. The VM's observers see each re-run node as they see any node (beforeNode, afterNode)
// except the session's breakpoints, which do not count re-runs as hits. A node re-runs when one
// of its inputs changed; an output that comes out bitwise the same stops the propagation.
RecomputeResult DebugSession::Impl::recompute() {
  if (phase != SessionPhase::Paused && phase != SessionPhase::Ready)
    refuseInPhase("recompute", phase, "a paused execution");
  if (vm.retain() != Retain::All)
    throw std::logic_error(
        "recompute: needs every value of the execution (DebugSessionOptions::retain = "
        "Retain::All)");
  dropStaleEdits();
  RecomputeResult result;
  struct Unmute {
    BreakpointObserver* o;
    ~Unmute() {
      if (o) o->setMuted(false);
    }
  } unmute{breakpointObserver.get()};
  if (breakpointObserver) breakpointObserver->setMuted(true);
  const auto observers = vm.observers();
  for (std::size_t k = 0; k <= vm.depth(); ++k) {
    const VM::FrameInfo info = vm.frame(k);
    const Program& p = *info.program;
    std::unordered_set<const Variable*> changed;
    for (const Variable* v : dirty)
      if (p.slotOf(*v) >= 0) changed.insert(v);
    if (changed.empty()) continue;
    const std::span<const std::int64_t> path(vm.framePath().data(), k);
    for (std::size_t pos = 0; pos < info.pc && pos < p.schedule().size(); ++pos) {
      const Apply& node = *p.schedule()[pos];
      const bool affected = std::any_of(node.inputs().begin(), node.inputs().end(),
                                        [&](const VarPtr& in) { return changed.count(in.get()); });
      if (!affected) continue;
      std::vector<Tensor> ins(static_cast<std::size_t>(node.nInputs()));
      for (int i = 0; i < node.nInputs(); ++i) {
        const Tensor* t = vm.value(k, *node.input(i));
        if (!t)
          throw std::logic_error("recompute: input " + std::to_string(i) + " of node " +
                                 std::to_string(node.id()) + " (" + node.op().str() +
                                 ") is not available");
        ins[static_cast<std::size_t>(i)] = *t;
      }
      for (const auto& [output, inputs] : node.op().destroyMap())
        for (int i : inputs)
          if (i < node.nInputs())
            ins[static_cast<std::size_t>(i)] = cloneOnDevice(ins[static_cast<std::size_t>(i)]);
      std::vector<Tensor> outs(static_cast<std::size_t>(node.nOutputs()));
      std::vector<const Tensor*> inPtrs, outSeen;
      std::vector<Tensor*> outPtrs;
      for (Tensor& t : ins) inPtrs.push_back(&t);
      for (Tensor& t : outs) {
        outPtrs.push_back(&t);
        outSeen.push_back(&t);
      }
      const NodeEvent event{path, pos, node, inPtrs, outSeen, 0, 0};
      for (const auto& o : observers) o->beforeNode(vm, event);
      const LinkedNode& linked = p.nodes()[pos];
      try {
        if (linked.child < 0 && linked.kernel.fn)
          linked.kernel.fn(*linked.op, node, inPtrs, outPtrs);
        else
          linked.op->perform(node, inPtrs, outPtrs);
      } catch (const std::exception& e) {
        throw std::runtime_error("recompute: node " + std::to_string(node.id()) + " (" +
                                 node.op().str() + ") failed: " + e.what());
      }
      for (std::size_t o = observers.size(); o-- > 0;) observers[o]->afterNode(vm, event);
      result.rerunNodes.push_back(node.id());
      for (int o = 0; o < node.nOutputs(); ++o) {
        const Variable& out = node.outputRef(o);
        const Tensor* before = vm.value(k, out);
        const bool same = before && before->shape() == outs[static_cast<std::size_t>(o)].shape() &&
                          before->dtype() == outs[static_cast<std::size_t>(o)].dtype() &&
                          before->bitwiseEqual(outs[static_cast<std::size_t>(o)]);
        vm.setValue(out, outs[static_cast<std::size_t>(o)]);
        if (same) continue;
        changed.insert(&out);
        result.changedVars.push_back(out.id());
      }
    }
  }
  dirty.clear();
  return result;
}

}  // namespace tscope::engine::debug
