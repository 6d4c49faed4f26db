#include "engine/rewrite/rules/inplace.h"

#include "engine/graph/destroy_handler.h"
#include "engine/graph/errors.h"
#include "engine/graph/history.h"
#include "engine/graph/op.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/nn/channel_blocks.h"
#include "engine/ops/nn/fused_conv2d.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tscope::engine {

namespace {

// Whether node may write an output into input k (Note [Inplace candidates]), apart from the types,
// which the caller checks.
bool mayOverwrite(const FunctionGraph& fg, const DestroyHandler& dh, const Apply& node, int k) {
  const Variable& in = *node.input(k);
  if (in.fgraph() != &fg || dh.isProtected(in) || !dh.destroyersOf(in).empty()) return false;
  const Variable* root = dh.viewRoot(in);
  for (int j = 0; j < node.nInputs(); ++j)
    if (node.input(j).get() != &in && dh.viewRoot(*node.input(j)) == root) return false;
  return true;
}

// A convolution's residual (input 3) may take the sum only when no other input of the node is
// that buffer: the kernel reads the input's neighbourhood of each output while it writes, so
// y = conv(x) + x must not write into x (mayOverwrite lets an input repeat, which an elementwise op
// reads only at the element it writes).
bool mayOverwriteResidual(const FunctionGraph& fg, const DestroyHandler& dh, const Apply& node) {
  if (!mayOverwrite(fg, dh, node, 3)) return false;
  const Variable* root = dh.viewRoot(*node.input(3));
  for (int j = 0; j < 3; ++j)
    if (dh.viewRoot(*node.input(j)) == root) return false;
  return true;
}

// Whether the buffer of input k dies at node: node is its only client and it is no view.
bool diesAt(const FunctionGraph& fg, const DestroyHandler& dh, const Apply& node, int k) {
  const Variable& in = *node.input(k);
  if (dh.viewRoot(in) != &in) return false;
  for (const Client& c : fg.clients(in))
    if (c.node != &node) return false;
  return true;
}

// The inputs that output o of an elementwise node may be written into, best first.
std::vector<int> elementwiseTargets(const FunctionGraph& fg, const DestroyHandler& dh,
                                    const Apply& node, int o) {
  const TensorType& out = node.outputRef(o).type();
  if (out.ndim() == 0) return {};
  std::vector<int> dying, others;
  for (int k = 0; k < node.nInputs(); ++k) {
    bool repeated = false;  // the same variable at an earlier input: already a candidate
    for (int j = 0; j < k && !repeated; ++j) repeated = node.input(j) == node.input(k);
    if (repeated || !(node.input(k)->type() == out) || !mayOverwrite(fg, dh, node, k)) continue;
    (diesAt(fg, dh, node, k) ? dying : others).push_back(k);
  }
  dying.insert(dying.end(), others.begin(), others.end());
  return dying;
}

// Note [Inplace candidates]: the elementwise ops and their inplace patterns. The inplace
// pattern of node's op, or null when it is not an elementwise op.
const std::map<int, int>* elementwisePattern(const Op& op) {
  if (const auto* e = dynamic_cast<const Elemwise*>(&op)) return &e->inplacePattern();
  if (const auto* c = dynamic_cast<const Composite*>(&op)) return &c->inplacePattern();
  return nullptr;
}

// The same elementwise op with another inplace pattern.
OpPtr withPattern(const Op& op, std::map<int, int> pattern) {
  if (const auto* e = dynamic_cast<const Elemwise*>(&op))
    return std::make_shared<Elemwise>(e->scalarOp(), std::move(pattern), e->target());
  return dynamic_cast<const Composite&>(op).withInplace(std::move(pattern));
}

// The inplace form of a BLAS op (it destroys input 0), or null.
OpPtr blasInplace(const Op& op) {
  const auto* blas = dynamic_cast<const BlasOp*>(&op);
  if (!blas || blas->inplace()) return nullptr;
  if (dynamic_cast<const Gemm*>(blas)) return std::make_shared<Gemm>(true);
  if (dynamic_cast<const Gemv*>(blas)) return std::make_shared<Gemv>(true);
  if (dynamic_cast<const Ger*>(blas)) return std::make_shared<Ger>(true);
  return nullptr;
}

std::string_view blasReason(const Op& op) {
  if (dynamic_cast<const Gemm*>(&op)) return "inplace_gemm";
  if (dynamic_cast<const Gemv*>(&op)) return "inplace_gemv";
  return "inplace_ger";
}

// node's twin with another op: same inputs, output types and metadata.
ApplyPtr twinOf(const Apply& node, OpPtr op) {
  std::vector<TensorType> types;
  types.reserve(static_cast<std::size_t>(node.nOutputs()));
  for (int o = 0; o < node.nOutputs(); ++o) types.push_back(node.outputRef(o).type());
  ApplyPtr twin = Apply::create(std::move(op), node.inputs(), std::move(types), node.site());
  twin->setScope(node.scope());
  for (int o = 0; o < node.nOutputs(); ++o) {
    const Variable& src = node.outputRef(o);
    Variable& dst = twin->outputRef(o);
    dst.setName(src.name());
    dst.setScope(src.scope());
    if (src.testValue()) dst.setTestValue(*src.testValue());
  }
  return twin;
}

// One pass over a graph: every switch is validated by the handler and undone when refused.
class InplacePass {
 public:
  InplacePass(FunctionGraph& fg, DestroyHandler& dh, History& history)
      : m_fg(fg), m_dh(dh), m_history(history) {}

  // Switches node to an inplace form if one is accepted; returns whether it did.
  bool visit(const ApplyPtr& node) {
    if (const std::map<int, int>* pattern = elementwisePattern(node->op())) {
      if (!pattern->empty()) return false;
      // Output by output: each switch adds one (output -> input) pair to the pattern.
      ApplyPtr current = node;
      std::map<int, int> accepted;
      for (int o = 0; o < node->nOutputs(); ++o)
        for (int k : elementwiseTargets(m_fg, m_dh, *current, o)) {
          std::map<int, int> tried = accepted;
          tried[o] = k;
          ApplyPtr twin = twinOf(*current, withPattern(current->op(), tried));
          if (trySwitch(*current, twin, "inplace_elemwise")) {
            current = std::move(twin);
            accepted = std::move(tried);
            break;
          }
        }
      return !accepted.empty();
    }
    if (OpPtr op = blasInplace(node->op())) {
      if (!mayOverwrite(m_fg, m_dh, *node, 0)) return false;
      return trySwitch(*node, twinOf(*node, std::move(op)), blasReason(node->op()));
    }
    if (const auto* conv = dynamic_cast<const FusedConv2d*>(&node->op());
        conv && conv->residual() && !conv->inplace()) {
      // Note [Residual sum]: the convolution's sum lands in the residual's buffer.
      if (!mayOverwriteResidual(m_fg, m_dh, *node)) return false;
      return trySwitch(*node, twinOf(*node, conv->withInplace()), "inplace_conv_residual");
    }
    if (const auto* conv = dynamic_cast<const BlockedConv2d*>(&node->op());
        conv && conv->residual() && !conv->inplace()) {
      if (!mayOverwriteResidual(m_fg, m_dh, *node)) return false;
      return trySwitch(*node, twinOf(*node, conv->withInplace()), "inplace_conv_residual");
    }
    return false;
  }

 private:
  bool trySwitch(Apply& node, const ApplyPtr& twin, std::string_view reason) {
    std::vector<std::pair<VarPtr, VarPtr>> pairs;
    for (int o = 0; o < node.nOutputs(); ++o) pairs.emplace_back(node.output(o), twin->output(o));
    const History::Checkpoint cp = m_history.checkpoint();
    m_fg.replaceAll(pairs, reason);
    try {
      m_dh.validate(m_fg);
      return true;
    } catch (const InconsistencyError&) {
      m_history.revert(cp);
      return false;
    }
  }

  FunctionGraph& m_fg;
  DestroyHandler& m_dh;
  History& m_history;
};

}  // namespace

std::size_t insertInplace(FunctionGraph& fg) {
  DestroyHandler* dh = fg.feature<DestroyHandler>();
  if (!dh) {
    auto handler = std::make_shared<DestroyHandler>();
    // Theano's mutable inputs: a shared variable with an update gets its new value at the end of
    // the call, so its old buffer may be overwritten in place (W -= lr * g as Gemm{inplace}) once
    // every reader of the old value has run; the handler's other rules still hold (no update that
    // is W itself or a view of it, no output that views it).
    std::vector<VarPtr> updated;
    for (const auto& [outputIndex, inputIndex] : fg.updateMapping())
      updated.push_back(fg.inputs()[inputIndex]);
    handler->setMutableInputs(std::move(updated));
    fg.attachFeature(handler);
    dh = handler.get();
  }
  History* history = fg.feature<History>();
  std::shared_ptr<History> ownHistory;
  if (!history) {
    ownHistory = std::make_shared<History>();
    fg.attachFeature(ownHistory);
    history = ownHistory.get();
  }
  // The History this pass attached goes again, with the pruned nodes it keeps alive.
  struct DetachOnExit {
    FunctionGraph& fg;
    const std::shared_ptr<History>& history;
    ~DetachOnExit() {
      if (history) fg.detachFeature(*history);
    }
  } detach{fg, ownHistory};

  // A graph that is refused as it stands would refuse every switch.
  dh->validate(fg);

  // Handles keep the visited nodes alive while switches prune them.
  std::vector<ApplyPtr> order;
  order.reserve(fg.nodeCount());
  for (Apply* node : fg.toposort()) order.push_back(node->shared_from_this());

  InplacePass pass(fg, *dh, *history);
  std::size_t switched = 0;
  for (const ApplyPtr& node : order)
    if (fg.contains(*node) && pass.visit(node)) ++switched;
  return switched;
}

}  // namespace tscope::engine
