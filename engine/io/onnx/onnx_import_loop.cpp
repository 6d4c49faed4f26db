// ONNX Scan and Loop -> Scan (engine/ops/control/scan.h).
//
// Note [ONNX loops]: the body is a GraphProto whose nodes may name any value of the enclosing
// scopes (as an If's branches, Note [ONNX If]). The importer converts it inside scan()'s body
// function with the body's inputs bound to the Scan's inner variables, then restores the value
// table; the outer values the body reaches become non-sequences (scan() without strict).
// - Scan (opset >= 9): inputs [N states, M scan inputs], body [states, slices] -> [new states,
//   K scan outputs]; outputs [N final states, K stacked]. The states are Scan outputs that keep
//   their last state (Store::Last), the scan outputs stacked ones. Scan inputs and outputs along
//   axis 0 forwards only (others are refused, named). Scan-8: Note [Scan before opset 9].
// - Loop: inputs [M, cond, N carried], body [iteration, cond, carried] -> [cond, new carried, K
//   scan outputs]; outputs [N final carried, K stacked]. A for loop: the trip count M is required,
//   and the body's cond output must be its cond input (directly or through Identity) or a
//   constant true (PyTorch's scripted for loops, EmbeddingBag, ONNX's Range function); the
//   initial cond may be computed (Note [Loop with a run-time cond]). The iteration number is a
//   sequence, arange(M).
#include "engine/io/onnx/onnx_import.h"
#include "engine/io/onnx/onnx_importer.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/control/scan_internal.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"

namespace tscope::engine::io::onnx_import {

namespace {

const onnx::GraphProto* bodyOf(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.name() == "body" && a.has_g()) return &a.g();
  return nullptr;
}

std::vector<std::int64_t> intsOf(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

std::optional<std::int64_t> intOf(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return std::nullopt;
}

std::string labelOf(const onnx::NodeProto& node, const char* type) {
  std::string label = node.name().empty() ? type : safeText(node.name());
  for (char& c : label)
    if (c == '/') c = '_';
  return label;
}

VarPtr scalarOf(const VarPtr& v) {
  return v->type().ndim() == 0 ? v : reshape(v, std::vector<std::int64_t>{});
}

}  // namespace

std::vector<VarPtr> Importer::convertBody(const onnx::GraphProto& g, const std::string& where,
                                          const std::vector<VarPtr>& bound) {
  const auto saved = m_values;
  std::vector<VarPtr> outs;
  try {
    if (static_cast<std::size_t>(g.input_size()) != bound.size())
      fail(where, "the body takes " + std::to_string(g.input_size()) + " inputs; expected " +
                      std::to_string(bound.size()));
    for (int i = 0; i < g.input_size(); ++i)
      m_values[g.input(i).name()] = bound[static_cast<std::size_t>(i)];
    readInitializers(g);
    for (int k : nodeOrder(g)) convertNode(g.node(k), k);
    for (int o = 0; o < g.output_size(); ++o) {
      auto it = m_values.find(g.output(o).name());
      if (it == m_values.end())
        fail(where, "body output " + std::to_string(o) + " '" + safeText(g.output(o).name()) +
                        "' is defined by no node of the body or the enclosing graph");
      outs.push_back(it->second);
    }
  } catch (...) {
    m_values = saved;
    throw;
  }
  m_values = saved;
  return outs;
}

std::vector<VarPtr> Importer::convertScan(const onnx::NodeProto& node, int index,
                                          const std::vector<VarPtr>& inputs) {
  const std::string where = nodeWhere(node, index);
  const onnx::GraphProto* body = bodyOf(node);
  if (!body) fail(where, "the attribute body (a graph) is missing");
  // Note [Scan before opset 9]: Scan-8 takes an optional sequence_lens first, and its states,
  // sequences and outputs carry a batch axis 0 (the sequences' scan axis is 1). Without
  // sequence_lens it is the opset-9 Scan of each batch entry, stacked: unrolled over a static
  // batch size.
  if (m_opset < 9) {
    if (!inputs.empty() && inputs[0])
      fail(where, "Scan before opset 9 with a sequence_lens input is not supported");
    const std::vector<VarPtr> rest(inputs.begin() + (inputs.empty() ? 0 : 1), inputs.end());
    if (rest.empty() || !rest[0]) fail(where, "expected states or sequences, found none");
    const std::int64_t batch =
        rest[0]->type().shape().empty() ? kUnknownDim : rest[0]->type().shape()[0];
    if (batch == kUnknownDim || batch < 1 || batch > 256)
      fail(where, "Scan before opset 9: expected a static batch size from 1 to 256 (axis 0 of " +
                      rest[0]->type().str() + ")");
    std::vector<std::vector<VarPtr>> perEntry;
    for (std::int64_t b = 0; b < batch; ++b) {
      std::vector<VarPtr> entry;
      for (const VarPtr& v : rest) {
        if (!v || v->type().ndim() < 1) fail(where, "expected every input to have a batch axis");
        entry.push_back(select(v, 0, IdxBound(b)));
      }
      perEntry.push_back(scanBody(node, index, entry));
    }
    std::vector<VarPtr> outs;
    for (std::size_t k = 0; k < perEntry[0].size(); ++k) {
      std::vector<VarPtr> parts;
      for (const auto& entry : perEntry) parts.push_back(entry[k]);
      outs.push_back(stack(parts, 0));
    }
    return outs;
  }
  return scanBody(node, index, inputs);
}

std::vector<VarPtr> Importer::scanBody(const onnx::NodeProto& node, int index,
                                       const std::vector<VarPtr>& inputs) {
  const std::string where = nodeWhere(node, index);
  const onnx::GraphProto* body = bodyOf(node);
  const auto m = intOf(node, "num_scan_inputs");
  if (!m || *m < 1 || *m > static_cast<std::int64_t>(inputs.size()))
    fail(where, "num_scan_inputs must be between 1 and the number of inputs (" +
                    std::to_string(inputs.size()) + ")");
  for (const char* attr : {"scan_input_axes", "scan_input_directions", "scan_output_axes",
                           "scan_output_directions", "directions"})
    for (std::int64_t v : intsOf(node, attr))
      if (v != 0)
        fail(where, std::string(attr) + " holds " + std::to_string(v) +
                        "; only axis 0, forwards, is supported");
  const std::size_t nScan = static_cast<std::size_t>(*m);
  const std::size_t nState = inputs.size() - nScan;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) fail(where, "input " + std::to_string(i) + " is missing");
  const int nOut = body->output_size();
  if (static_cast<std::size_t>(nOut) < nState)
    fail(where, "the body gives " + std::to_string(nOut) + " outputs, fewer than its " +
                    std::to_string(nState) + " states");
  std::vector<ScanSequence> seqs;
  for (std::size_t i = nState; i < inputs.size(); ++i) seqs.emplace_back(inputs[i]);
  std::vector<ScanOutputInfo> infos;
  std::vector<Scan::Store> stores;
  for (std::size_t s = 0; s < nState; ++s) {
    infos.emplace_back(inputs[s]);
    stores.push_back(Scan::Store::Last);
  }
  for (std::size_t k = nState; k < static_cast<std::size_t>(nOut); ++k) {
    infos.push_back(ScanOutputInfo::none());
    stores.push_back(Scan::Store::All);
  }
  auto fn = [&](const std::vector<VarPtr>& a) {  // slices, states
    std::vector<VarPtr> bound(a.begin() + static_cast<std::ptrdiff_t>(nScan),
                              a.begin() + static_cast<std::ptrdiff_t>(nScan + nState));
    bound.insert(bound.end(), a.begin(), a.begin() + static_cast<std::ptrdiff_t>(nScan));
    return convertBody(*body, where + " body", bound);
  };
  try {
    return buildScan(fn, seqs, infos, {}, {}, -1, {.label = labelOf(node, "Scan")},
                     std::source_location::current(), stores);
  } catch (const OnnxError&) {
    throw;
  } catch (const std::exception& e) {
    fail(where, std::string("cannot convert: ") + e.what());
  }
}

std::vector<VarPtr> Importer::convertLoop(const onnx::NodeProto& node, int index,
                                          const std::vector<VarPtr>& inputs) {
  const std::string where = nodeWhere(node, index);
  const onnx::GraphProto* body = bodyOf(node);
  if (!body) fail(where, "the attribute body (a graph) is missing");
  if (inputs.size() < 2) fail(where, "Loop expects inputs M, cond and the loop-carried values");
  if (!inputs[0])
    fail(where, "a Loop without a trip count M (a while loop) is not supported; only for loops");
  // Note [Loop with a run-time cond]: the body passes its cond through (checked below), so the
  // cond never changes: the loop runs M times when the initial cond is true and not at all when
  // it is false, whether the cond is a constant or computed at run time; the trip count is then
  // where(cond, M, 0).
  VarPtr trips = scalarOf(inputs[0]);
  if (inputs[1]) {
    const std::optional<Tensor> c = constantValue(inputs[1]);
    if (c && c->numel() != 1)
      fail(where,
           "expected the initial cond to hold one value, found " + std::to_string(c->numel()));
    if (c && c->item() == 0)
      trips = constantInt(0);
    else if (!c)
      trips = engine::where(cast(scalarOf(inputs[1]), DType::Bool), trips, constantInt(0));
  }
  const std::size_t nCarried = inputs.size() - 2;
  for (std::size_t i = 2; i < inputs.size(); ++i)
    if (!inputs[i]) fail(where, "loop-carried input " + std::to_string(i - 2) + " is missing");
  const int nOut = body->output_size();
  if (static_cast<std::size_t>(nOut) < 1 + nCarried)
    fail(where, "the body gives " + std::to_string(nOut) + " outputs; expected cond and " +
                    std::to_string(nCarried) + " loop-carried values first");
  std::vector<ScanSequence> seqs{ScanSequence(arange(trips))};
  std::vector<ScanOutputInfo> infos;
  std::vector<Scan::Store> stores;
  for (std::size_t s = 0; s < nCarried; ++s) {
    infos.emplace_back(inputs[2 + s]);
    stores.push_back(Scan::Store::Last);
  }
  for (std::size_t k = 1 + nCarried; k < static_cast<std::size_t>(nOut); ++k) {
    infos.push_back(ScanOutputInfo::none());
    stores.push_back(Scan::Store::All);
  }
  auto fn = [&](const std::vector<VarPtr>& a) {  // iteration, carried
    const VarPtr condIn = constant(Tensor::scalar(DType::Bool, 1));
    std::vector<VarPtr> bound{a[0], condIn};
    bound.insert(bound.end(), a.begin() + 1, a.end());
    std::vector<VarPtr> outs = convertBody(*body, where + " body", bound);
    // The body's cond: its input passed through, or a constant true.
    VarPtr c = outs[0];
    while (c != condIn && c->owner() && c->owner()->op().str() == "Elemwise{identity}")
      c = c->owner()->input(0);
    const std::optional<Tensor> cv = c == condIn ? std::nullopt : constantValue(c);
    if (c != condIn && (!cv || cv->numel() != 1 || cv->item() == 0))
      fail(where,
           "the body computes its cond output; only for loops (cond passed through or "
           "constant true) are supported");
    outs.erase(outs.begin());
    return outs;
  };
  try {
    return buildScan(fn, seqs, infos, {}, {}, -1, {.label = labelOf(node, "Loop")},
                     std::source_location::current(), stores);
  } catch (const OnnxError&) {
    throw;
  } catch (const std::exception& e) {
    fail(where, std::string("cannot convert: ") + e.what());
  }
}

}  // namespace tscope::engine::io::onnx_import
