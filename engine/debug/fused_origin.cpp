#include "engine/debug/fused_origin.h"

#include "engine/debug/nan_scan.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/vm/vm.h"

#include <cmath>

namespace tscope::engine::debug {

namespace {

bool isBad(double x, NanChecks kinds, double bigThreshold) {
  if (std::isnan(x)) return kinds & bit(NanCheck::NaN);
  if (std::isinf(x)) return kinds & bit(x > 0 ? NanCheck::PosInf : NanCheck::NegInf);
  return (kinds & bit(NanCheck::Big)) && std::fabs(x) > bigThreshold;
}

// Records the first node of the expanded program whose 0-d output is bad while its operands are
// good.
struct FirstBad final : ExecutionObserver {
  NanChecks kinds;
  double threshold;
  const Apply* node = nullptr;
  std::size_t position = 0;
  std::vector<double> operands;
  double value = 0;
  FirstBad(NanChecks k, double t) : kinds(k), threshold(t) {}
  void afterNode(VM&, const NodeEvent& e) override {
    if (node) return;
    for (const Tensor* in : e.inputs)
      if (in && in->numel() == 1 && isBad(in->item(), kAllNanChecks, threshold)) return;
    for (const Tensor* out : e.outputs) {
      if (!out || out->numel() != 1) continue;
      const double v = out->item();
      if (!isBad(v, kinds, threshold)) continue;
      node = &e.node;
      position = e.position;
      value = v;
      for (const Tensor* in : e.inputs) operands.push_back(in ? in->item() : 0.0);
      return;
    }
  }
};

}  // namespace

std::optional<FusedOrigin> findFusedOrigin(const Apply& node, std::span<const Tensor* const> inputs,
                                           int output, const std::vector<std::int64_t>& outIndex,
                                           NanChecks kinds, double bigThreshold) {
  const auto* comp = dynamic_cast<const Composite*>(&node.op());
  if (!comp || static_cast<int>(inputs.size()) != comp->nInputs()) return std::nullopt;
  (void)output;
  std::vector<VarPtr> scalars;
  std::vector<std::vector<std::int64_t>> indices;
  for (int i = 0; i < comp->nInputs(); ++i) {
    const Tensor* in = inputs[static_cast<std::size_t>(i)];
    if (!in || !in->defined()) return std::nullopt;
    auto idx = broadcastIndex(outIndex, in->shape());
    if (!idx) return std::nullopt;
    indices.push_back(*idx);
    const double v = in->at(*idx);
    scalars.push_back(
        Constant::create(Tensor::scalar(comp->inputDTypes()[static_cast<std::size_t>(i)], v)));
  }
  std::vector<VarPtr> expanded = expandComposite(*comp, scalars);
  // Adopt: the nodes keep their inputs, so an operand is recognised as the Composite's input.
  FunctionGraph fg({}, expanded, FunctionGraph::Ownership::Adopt);
  const std::vector<Apply*> order = fg.toposort();
  VM vm(fg, order);
  auto finder = std::make_shared<FirstBad>(kinds, bigThreshold);
  vm.addObserver(finder);
  vm.start({});
  while (vm.status() != VM::Status::Finished && vm.status() != VM::Status::Failed) {
    if (vm.run() == VM::Status::Finished) break;
  }
  if (!finder->node) return std::nullopt;
  FusedOrigin out;
  out.op = finder->node->op().str();
  out.instruction = static_cast<int>(finder->position);
  for (std::size_t k = 0; k < finder->position && k < order.size(); ++k)
    if (order[k]->op().str() == out.op) ++out.occurrence;
  out.value = finder->value;
  for (std::size_t k = 0; k < finder->operands.size(); ++k) {
    InputSample s;
    s.input = static_cast<int>(k);
    const Variable& v = *finder->node->input(static_cast<int>(k));
    for (std::size_t i = 0; i < scalars.size(); ++i)
      if (scalars[i].get() == &v) {
        s.variable = node.input(static_cast<int>(i))->displayName() + " (Composite input " +
                     std::to_string(i) + ")";
        s.index = indices[i];
      }
    if (s.variable.empty() && v.owner()) s.variable = "(fused " + v.owner()->op().str() + ")";
    s.value = finder->operands[k];
    out.inputs.push_back(std::move(s));
  }
  return out;
}

}  // namespace tscope::engine::debug
