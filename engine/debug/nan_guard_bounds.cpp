// NanGuard's proofs and guarded updates (nan_guard.h): the bounds that spare a scan (Note
// [Provably clean outputs] in value_bounds.h) and the copies that keep parameters whole with the
// Raise action (Note [Guarded updates]).
#include "engine/debug/nan_guard.h"
#include "engine/debug/value_bounds.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/tensor/device_memory.h"
#include "engine/vm/vm.h"

#include <algorithm>

namespace tscope::engine::debug {

// Note [Provably clean outputs]: the running node's outputs bounded from its inputs, before it
// runs; an output proven finite and within the big threshold needs no scan.
void NanGuard::prove(const NodeEvent& e, const NodeViews& views) {
  m_provenFor = nullptr;
  const Apply& node = e.node;
  // A frame's outputs are scanned; an op no bound covers is not worth the look-ups.
  if (!views.provable) return;
  std::optional<double> inBounds[8];
  const std::size_t n = static_cast<std::size_t>(node.nInputs());
  if (n > 8) return;
  for (std::size_t i = 0; i < n; ++i) {
    const Variable* v = node.input(static_cast<int>(i)).get();
    if (m_records.count(v)) return;  // a bad input: the output is explained, not proven
    if (auto b = m_bounds.find(v); b != m_bounds.end()) inBounds[i] = b->second;
  }
  m_proof = provenBounds(node, e.inputs, std::span<const std::optional<double>>(inBounds, n));
  bool any = false;
  for (std::size_t o = 0; o < m_proof.size(); ++o) {
    std::optional<double>& b = m_proof[o];
    if (!b) continue;
    const DType dtype = node.outputRef(static_cast<int>(o)).type().dtype();
    const bool bigOn =
        (m_options.checks & bit(NanCheck::Big)) && (isFloat(dtype) || m_options.bigForIntegers);
    if (bigOn && *b > m_options.thresholdFor(dtype)) b.reset();
    any = any || b.has_value();
  }
  if (any) m_provenFor = &node;
}

// Note [Guarded updates]: an in-place update of a parameter (Gemm{inplace} on W) writes into the
// shared variable's own buffer in a plain call. A NanGuard that raises must leave every parameter
// as it was (Note [Parameters stay whole] in function.cpp), so before such a node the guard copies
// the buffer (into a spare kept across calls), and a raise puts it back first — unless it can
// prove that nothing from this node to the end of the schedule can raise: every node's outputs
// bounded (Note [Provably clean outputs]) from the bounds known now, carried forward through the
// nodes not run yet. Then the copy is skipped, which is what keeping the parameters whole costs a
// plain step otherwise (Function's copy, made for any observer that may interrupt). A kernel's
// own error after an uncopied update leaves it applied, as in a call without observers.
bool NanGuard::tailProvable(const VM& vm, std::size_t from) {
  if (!m_options.proveClean) return false;
  if (m_tailProvenFrom <= from) return true;
  const std::vector<Apply*>& schedule = vm.schedule();
  // Bounds and element counts of the values not computed yet (views keep their input's count).
  std::unordered_map<const Variable*, double> ahead;
  std::unordered_map<const Variable*, std::int64_t> aheadSize;
  auto boundOf = [&](const Variable* v) -> std::optional<double> {
    if (auto b = ahead.find(v); b != ahead.end()) return b->second;
    if (auto b = m_bounds.find(v); b != m_bounds.end()) return b->second;
    return std::nullopt;
  };
  std::vector<const Tensor*> values;
  std::vector<std::optional<double>> bounds;
  std::vector<std::int64_t> sizes;
  for (std::size_t k = from; k < schedule.size(); ++k) {
    const Apply& node = *schedule[k];
    if (node.op().innerGraph()) return false;
    values.clear();
    bounds.clear();
    sizes.clear();
    for (const VarPtr& in : node.inputs()) {
      if (m_records.count(in.get())) return false;
      auto n = aheadSize.find(in.get());
      // A value this look-ahead made is not computed yet (its slot may hold last call's buffer).
      const Tensor* t = n == aheadSize.end() ? vm.value(*in) : nullptr;
      values.push_back(t && t->defined() ? t : nullptr);
      bounds.push_back(boundOf(in.get()));
      sizes.push_back(values.back()          ? values.back()->numel()
                      : n != aheadSize.end() ? n->second
                                             : -1);
    }
    const NodeViews& views = viewsOf(node);
    const auto proof = provenBounds(node, values, bounds, sizes);
    for (int o = 0; o < node.nOutputs(); ++o) {
      const Variable& out = node.outputRef(o);
      const DType dtype = out.type().dtype();
      const bool bigOn =
          (m_options.checks & bit(NanCheck::Big)) && (isFloat(dtype) || m_options.bigForIntegers);
      aheadSize[&out] = -1;
      if (!isFloat(dtype) && !bigOn) {  // never scanned: never raises
        ahead[&out] = dtypeMaxAbs(dtype);
        continue;
      }
      std::optional<double> b = proof[static_cast<std::size_t>(o)];
      if (const std::vector<int>& ins = views.of[static_cast<std::size_t>(o)]; !ins.empty()) {
        double m = 0;
        std::int64_t size = 0;
        bool all = true;
        for (int i : ins) {
          const auto ib = bounds[static_cast<std::size_t>(i)];
          all = all && ib.has_value() && sizes[static_cast<std::size_t>(i)] >= 0;
          if (ib) m = std::max(m, *ib);
          size = std::max(size, sizes[static_cast<std::size_t>(i)]);
        }
        if (all) b = m, aheadSize[&out] = size;  // a view holds at most its input's elements
      }
      if (!b || (bigOn && *b > m_options.thresholdFor(dtype))) return false;
      ahead[&out] = *b;
    }
  }
  m_tailProvenFrom = from;
  return true;
}

void NanGuard::guardUpdates(VM& vm, const NodeEvent& e, const std::vector<int>& overwrites) {
  for (int i : overwrites) {
    const Tensor* in = e.inputs[static_cast<std::size_t>(i)];
    if (!in || !in->defined()) continue;
    for (const VarPtr& g : vm.graph().inputs()) {
      if (g->kind() != Variable::Kind::Shared) continue;
      // The buffer the function reads: a device-resident twin's device copy.
      const Tensor& value = static_cast<const SharedVariable&>(*g).placedValue();
      if (!value.defined() || !value.sharesStorageWith(*in)) continue;
      const bool already = std::any_of(m_guarded.begin(), m_guarded.end(), [&](const Guarded& d) {
        return d.shared.sharesStorageWith(value);
      });
      if (already || tailProvable(vm, e.position)) break;
      Tensor& spare = m_guardSpares[g.get()];
      if (spare.defined() && spare.dtype() == value.dtype() && spare.shape() == value.shape() &&
          spare.device() == value.device() && spare.isContiguous() &&
          spare.storage().use_count() == 1)
        copyInto(spare, value);
      else
        spare = cloneOnDevice(value);
      m_guarded.push_back({value, spare});
      m_guardCopies.fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
}

void NanGuard::restoreGuarded() {
  for (Guarded& d : m_guarded) copyInto(d.shared, d.copy);
  m_guarded.clear();
}

}  // namespace tscope::engine::debug
