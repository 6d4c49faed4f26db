// Scan's gradient (backpropagation through time) and R-op: Note [Scan gradient] in scan.h.
#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/control/scan_internal.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/subtensor.h"

#include <algorithm>
#include <unordered_map>

namespace tscope::engine {

std::vector<VarPtr> rebuildGraph(const FunctionGraph& g, std::span<const VarPtr> inputs) {
  std::unordered_map<const Variable*, VarPtr> map;
  for (std::size_t i = 0; i < inputs.size(); ++i) map.emplace(g.inputs()[i].get(), inputs[i]);
  auto lookup = [&](const VarPtr& v) -> VarPtr {
    if (auto it = map.find(v.get()); it != map.end()) return it->second;
    VarPtr copy = v->cloneDetached();  // a constant of g: a variable belongs to one graph
    copy->presetId(-1);
    map.emplace(v.get(), copy);
    return copy;
  };
  for (const Apply* node : g.toposort()) {
    std::vector<VarPtr> ins;
    for (const VarPtr& in : node->inputs()) ins.push_back(lookup(in));
    ApplyPtr copy = node->op().makeNode(std::move(ins));
    copy->setSite(node->site());
    copy->setScope(node->scope());
    for (int o = 0; o < node->nOutputs(); ++o) map.emplace(&node->outputRef(o), copy->output(o));
  }
  std::vector<VarPtr> outs;
  for (const VarPtr& out : g.outputs()) outs.push_back(lookup(out));
  return outs;
}

namespace {

int minTap0(const std::vector<int>& taps) {
  return std::min(0, *std::min_element(taps.begin(), taps.end()));
}
int maxTap0(const std::vector<int>& taps) {
  return std::max(0, *std::max_element(taps.begin(), taps.end()));
}

// a + c for a 0-d int64 a (folded when a is a constant).
VarPtr plus(const VarPtr& a, std::int64_t c) {
  if (const auto v = constantIntValue(a)) return constantInt(*v + c);
  return c == 0 ? a : add(a, constantInt(c));
}

VarPtr reversed(const VarPtr& x) {
  return slice(x, 0, IdxBound(), IdxBound(), IdxBound(std::int64_t{-1}));
}

std::vector<int> negated(const std::vector<int>& taps) {
  std::vector<int> r;
  for (int d : taps) r.push_back(-d);
  return r;
}

}  // namespace

std::vector<Grad> Scan::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> result(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  auto connected = [&](int input) {
    for (bool c : m_connection[static_cast<std::size_t>(input)])
      if (c) return isFloat(node.input(input)->type().dtype());
    return false;
  };
  for (const Store s : m_layout.outStore)
    if (s == Store::Last) {
      for (int i = 1; i < node.nInputs(); ++i)
        if (connected(i))
          result[static_cast<std::size_t>(i)] =
              Grad::undefined(str() +
                              " keeps only the last state of an output (a gradient scan); its own "
                              "gradient (a second derivative through a loop) is not supported");
      return result;
    }
  const int nSeq = nSequences(), nOut = nOutputs();
  const auto& body = *m_body;
  const std::size_t nNonSeq = static_cast<std::size_t>(m_layout.nNonSeqs);
  Apply& self = const_cast<Apply&>(node);
  // Note [Scan gradient]: the steps the gradient runs over, [t0, T).
  const VarPtr T = shapeI(self.output(0), 0);
  VarPtr G = T, t0 = constantInt(0);
  if (m_layout.truncateGradient > 0) {
    G = minimum(T, constantInt(m_layout.truncateGradient));
    t0 = sub(T, G);
  }
  std::vector<ScanSequence> seqs;
  // a. The forward sequences' windows, reversed, taps negated.
  for (int i = 0; i < nSeq; ++i) {
    const auto& taps = m_layout.seqTaps[static_cast<std::size_t>(i)];
    const std::int64_t span = maxTap0(taps) - minTap0(taps);
    const VarPtr& S = node.input(1 + i);
    VarPtr window = slice(S, 0, IdxBound(t0), IdxBound(plus(add(t0, G), span)));
    seqs.emplace_back(reversed(window), negated(taps));
  }
  // b. The recurrent outputs with their initial rows, from t0, reversed, taps negated.
  std::vector<int> floatRec;  // recurrent outputs whose states carry a gradient
  for (int o = 0; o < nOut; ++o) {
    if (!isRecurrent(o)) continue;
    const VarPtr& init = node.input(initInput(o));
    VarPtr rows = initIsState(o) ? expandDims(init, 0) : init;
    VarPtr B = concatenate({rows, self.output(o)}, 0);
    VarPtr window = slice(B, 0, IdxBound(t0), IdxBound());
    seqs.emplace_back(reversed(window), negated(m_layout.outTaps[static_cast<std::size_t>(o)]));
    if (isFloat(init->type().dtype())) floatRec.push_back(o);
  }
  // c. The output gradients, reversed.
  for (int o = 0; o < nOut; ++o) {
    VarPtr g =
        slice(outputGrads[static_cast<std::size_t>(o)], 0, IdxBound(t0), IdxBound(add(t0, G)));
    seqs.emplace_back(reversed(g), std::vector<int>{0});
  }
  // Accumulators: R_j per float recurrent output (pending gradients of its last R_j states),
  // then one per differentiated non-sequence.
  std::vector<ScanOutputInfo> infos;
  std::vector<Store> stores;
  for (int o : floatRec) {
    const VarPtr& init = node.input(initInput(o));
    const VarPtr zero = initIsState(o) ? zerosLike(init) : zerosLike(select(init, 0, 0));
    for (int k = 0; k < initRows(o); ++k) {
      infos.emplace_back(zero);
      stores.push_back(Store::Last);
    }
  }
  std::vector<int> wNeeded;  // non-sequence indices
  for (int k = 0; k < static_cast<int>(nNonSeq); ++k)
    if (connected(nonSeqInput(k))) {
      wNeeded.push_back(k);
      infos.emplace_back(zerosLike(node.input(nonSeqInput(k))));
      stores.push_back(Store::Last);
    }
  std::vector<int> seqNeeded;
  for (int i = 0; i < nSeq; ++i)
    if (connected(1 + i)) {
      seqNeeded.push_back(i);
      for (std::size_t d = 0; d < m_layout.seqTaps[static_cast<std::size_t>(i)].size(); ++d) {
        infos.push_back(ScanOutputInfo::none());
        stores.push_back(Store::All);
      }
    }
  if (infos.empty()) return result;
  std::vector<VarPtr> nonSeqs;
  for (int k = 0; k < static_cast<int>(nNonSeq); ++k) nonSeqs.push_back(node.input(nonSeqInput(k)));

  std::size_t nSeqArgs = 0;
  for (int i = 0; i < nSeq; ++i) nSeqArgs += m_layout.seqTaps[static_cast<std::size_t>(i)].size();
  std::size_t nStateArgs = 0;
  for (int o = 0; o < nOut; ++o)
    if (isRecurrent(o)) nStateArgs += m_layout.outTaps[static_cast<std::size_t>(o)].size();

  auto fn = [&](const std::vector<VarPtr>& a) {
    std::size_t p = 0;
    std::vector<VarPtr> forward;  // the forward body's inputs: x taps, y taps, w
    for (std::size_t k = 0; k < nSeqArgs + nStateArgs; ++k) forward.push_back(a[p++]);
    std::vector<VarPtr> gy;
    for (int o = 0; o < nOut; ++o) gy.push_back(a[p++]);
    std::vector<std::vector<VarPtr>> acc;
    for (int o : floatRec) {
      acc.emplace_back();
      for (int k = 0; k < initRows(o); ++k) acc.back().push_back(a[p++]);
    }
    std::vector<VarPtr> dw;
    for (std::size_t k = 0; k < wNeeded.size(); ++k) dw.push_back(a[p++]);
    std::vector<VarPtr> w;
    for (std::size_t k = 0; k < nNonSeq; ++k) w.push_back(a[p++]);
    forward.insert(forward.end(), w.begin(), w.end());
    const std::vector<VarPtr> outs = rebuildGraph(body, forward);
    // The gradient reaching each output at this step: from outside, and from the later steps.
    std::vector<VarPtr> fOuts, fGrads;
    for (int o = 0; o < nOut; ++o) {
      if (!isFloat(outs[static_cast<std::size_t>(o)]->type().dtype())) continue;
      VarPtr g = gy[static_cast<std::size_t>(o)];
      const auto it = std::find(floatRec.begin(), floatRec.end(), o);
      if (it != floatRec.end()) g = g + acc[static_cast<std::size_t>(it - floatRec.begin())][0];
      fOuts.push_back(outs[static_cast<std::size_t>(o)]);
      fGrads.push_back(g);
    }
    // wrt: the differentiated sequences' taps, every float state tap, the needed non-sequences.
    std::vector<VarPtr> wrt;
    for (int i : seqNeeded) {
      const std::size_t first = static_cast<std::size_t>(m_seqInner[static_cast<std::size_t>(i)]);
      for (std::size_t d = 0; d < m_layout.seqTaps[static_cast<std::size_t>(i)].size(); ++d)
        wrt.push_back(forward[first + d]);
    }
    const std::size_t nSeqWrt = wrt.size();
    for (int o : floatRec) {
      const std::size_t first = static_cast<std::size_t>(m_outInner[static_cast<std::size_t>(o)]);
      for (std::size_t d = 0; d < m_layout.outTaps[static_cast<std::size_t>(o)].size(); ++d)
        wrt.push_back(forward[first + d]);
    }
    for (int k : wNeeded) wrt.push_back(w[static_cast<std::size_t>(k)]);
    GradOptions options;
    options.disconnected = DisconnectedPolicy::Ignore;
    options.allowUndefined = true;
    std::vector<VarPtr> grads =
        fOuts.empty() ? std::vector<VarPtr>(wrt.size()) : grad(fOuts, fGrads, wrt, options);
    for (std::size_t k = 0; k < grads.size(); ++k)
      if (!grads[k]) grads[k] = zerosLike(wrt[k]);
    std::vector<VarPtr> next;
    std::size_t q = nSeqWrt;
    for (std::size_t r = 0; r < floatRec.size(); ++r) {
      const int o = floatRec[r];
      const auto& taps = m_layout.outTaps[static_cast<std::size_t>(o)];
      const int R = initRows(o);
      std::vector<VarPtr> dy(grads.begin() + static_cast<std::ptrdiff_t>(q),
                             grads.begin() + static_cast<std::ptrdiff_t>(q + taps.size()));
      q += taps.size();
      for (int k = 0; k < R; ++k) {
        VarPtr v = k + 1 < R ? acc[r][static_cast<std::size_t>(k + 1)] : VarPtr();
        for (std::size_t d = 0; d < taps.size(); ++d)
          if (-taps[d] == k + 1) v = v ? v + dy[d] : dy[d];
        next.push_back(v ? v : zerosLike(acc[r][static_cast<std::size_t>(k)]));
      }
    }
    for (std::size_t k = 0; k < wNeeded.size(); ++k) next.push_back(dw[k] + grads[q++]);
    for (std::size_t k = 0; k < nSeqWrt; ++k) next.push_back(grads[k]);
    return next;
  };
  ScanOptions options;
  options.label = "grad_" + m_label;
  options.strict = true;
  const std::vector<VarPtr> g = buildScan(fn, seqs, infos, nonSeqs, ScanSteps(G), -1, options,
                                          std::source_location::current(), stores);
  std::size_t p = 0;
  const VarPtr fromStart = m_layout.truncateGradient > 0 ? eq(t0, constantInt(0)) : VarPtr();
  for (int o : floatRec) {
    const int R = initRows(o);
    VarPtr v;
    if (initIsState(o)) {
      v = g[p];
    } else {
      std::vector<VarPtr> rows;
      for (int r = 0; r < R; ++r) rows.push_back(g[p + static_cast<std::size_t>(R - 1 - r)]);
      v = stack(rows, 0);
    }
    p += static_cast<std::size_t>(R);
    if (fromStart) v = where(fromStart, v, zerosLike(v));
    if (connected(initInput(o))) result[static_cast<std::size_t>(initInput(o))] = Grad(v);
  }
  for (int k : wNeeded) result[static_cast<std::size_t>(nonSeqInput(k))] = Grad(g[p++]);
  for (int i : seqNeeded) {
    const auto& taps = m_layout.seqTaps[static_cast<std::size_t>(i)];
    const int m = minTap0(taps);
    const VarPtr& S = node.input(1 + i);
    VarPtr dS = zerosLike(S);
    for (int d : taps) {
      const VarPtr start = plus(t0, d - m);
      dS = incSubtensor(slice(dS, 0, IdxBound(start), IdxBound(add(start, G))), reversed(g[p++]));
    }
    result[static_cast<std::size_t>(1 + i)] = Grad(dS);
  }
  return result;
}

std::optional<std::vector<VarPtr>> Scan::pushforward(const Apply& node,
                                                     std::span<const VarPtr> tangents) const {
  for (const Store s : m_layout.outStore)
    if (s == Store::Last) return std::nullopt;
  const int nSeq = nSequences(), nOut = nOutputs();
  const std::size_t nNonSeq = static_cast<std::size_t>(m_layout.nNonSeqs);
  auto tangentOf = [&](int input) -> VarPtr {
    const VarPtr& t = tangents[static_cast<std::size_t>(input)];
    return t && isFloat(node.input(input)->type().dtype()) ? t : VarPtr();
  };
  bool any = false;
  for (int i = 1; i < node.nInputs(); ++i) any = any || tangentOf(i);
  if (!any) return std::vector<VarPtr>(static_cast<std::size_t>(nOut));
  // Note [Scan gradient]: one Scan carrying the forward values and their tangents.
  std::vector<ScanSequence> seqs;
  std::vector<int> seqT;  // sequences with a tangent
  for (int i = 0; i < nSeq; ++i)
    seqs.emplace_back(node.input(1 + i), m_layout.seqTaps[static_cast<std::size_t>(i)]);
  for (int i = 0; i < nSeq; ++i)
    if (tangentOf(1 + i)) {
      seqT.push_back(i);
      seqs.emplace_back(tangentOf(1 + i), m_layout.seqTaps[static_cast<std::size_t>(i)]);
    }
  std::vector<ScanOutputInfo> infos;
  for (int o = 0; o < nOut; ++o)
    infos.push_back(isRecurrent(o) ? ScanOutputInfo(node.input(initInput(o)),
                                                    m_layout.outTaps[static_cast<std::size_t>(o)])
                                   : ScanOutputInfo::none());
  std::vector<int> outT;  // outputs with a tangent (float)
  for (int o = 0; o < nOut; ++o) {
    if (!isFloat(node.outputRef(o).type().dtype())) continue;
    outT.push_back(o);
    if (isRecurrent(o)) {
      VarPtr t0 = tangentOf(initInput(o));
      if (!t0) t0 = zerosLike(node.input(initInput(o)));
      infos.emplace_back(t0, m_layout.outTaps[static_cast<std::size_t>(o)]);
    } else {
      infos.push_back(ScanOutputInfo::none());
    }
  }
  std::vector<VarPtr> nonSeqs;
  for (std::size_t k = 0; k < nNonSeq; ++k)
    nonSeqs.push_back(node.input(nonSeqInput(static_cast<int>(k))));
  std::vector<int> wT;
  for (std::size_t k = 0; k < nNonSeq; ++k)
    if (tangentOf(nonSeqInput(static_cast<int>(k)))) {
      wT.push_back(static_cast<int>(k));
      nonSeqs.push_back(tangentOf(nonSeqInput(static_cast<int>(k))));
    }
  auto fn = [&](const std::vector<VarPtr>& a) {
    std::size_t p = 0;
    std::vector<VarPtr> x, dx, y, dy, w, dw;
    for (int i = 0; i < nSeq; ++i)
      for (std::size_t d = 0; d < m_layout.seqTaps[static_cast<std::size_t>(i)].size(); ++d)
        x.push_back(a[p++]);
    for (int i : seqT)
      for (std::size_t d = 0; d < m_layout.seqTaps[static_cast<std::size_t>(i)].size(); ++d)
        dx.push_back(a[p++]);
    for (int o = 0; o < nOut; ++o)
      if (isRecurrent(o))
        for (std::size_t d = 0; d < m_layout.outTaps[static_cast<std::size_t>(o)].size(); ++d)
          y.push_back(a[p++]);
    std::vector<std::vector<VarPtr>> dyOf(static_cast<std::size_t>(nOut));
    for (int o : outT)
      if (isRecurrent(o))
        for (std::size_t d = 0; d < m_layout.outTaps[static_cast<std::size_t>(o)].size(); ++d)
          dyOf[static_cast<std::size_t>(o)].push_back(a[p++]);
    for (std::size_t k = 0; k < nNonSeq; ++k) w.push_back(a[p++]);
    for (std::size_t k = 0; k < wT.size(); ++k) dw.push_back(a[p++]);
    std::vector<VarPtr> forward(x);
    forward.insert(forward.end(), y.begin(), y.end());
    forward.insert(forward.end(), w.begin(), w.end());
    const std::vector<VarPtr> outs = rebuildGraph(*m_body, forward);
    std::vector<VarPtr> wrt, points;
    for (std::size_t r = 0; r < seqT.size(); ++r) {
      const int i = seqT[r];
      const std::size_t first = static_cast<std::size_t>(m_seqInner[static_cast<std::size_t>(i)]);
      std::size_t before = 0;
      for (std::size_t s = 0; s < r; ++s)
        before += m_layout.seqTaps[static_cast<std::size_t>(seqT[s])].size();
      for (std::size_t d = 0; d < m_layout.seqTaps[static_cast<std::size_t>(i)].size(); ++d) {
        wrt.push_back(forward[first + d]);
        points.push_back(dx[before + d]);
      }
    }
    for (int o : outT) {
      if (!isRecurrent(o)) continue;
      const std::size_t first = static_cast<std::size_t>(m_outInner[static_cast<std::size_t>(o)]);
      for (std::size_t d = 0; d < dyOf[static_cast<std::size_t>(o)].size(); ++d) {
        wrt.push_back(forward[first + d]);
        points.push_back(dyOf[static_cast<std::size_t>(o)][d]);
      }
    }
    for (std::size_t r = 0; r < wT.size(); ++r) {
      wrt.push_back(w[static_cast<std::size_t>(wT[r])]);
      points.push_back(dw[r]);
    }
    std::vector<VarPtr> f;
    for (int o : outT) f.push_back(outs[static_cast<std::size_t>(o)]);
    std::vector<VarPtr> t = wrt.empty() ? std::vector<VarPtr>(f.size()) : Rop(f, wrt, points);
    std::vector<VarPtr> result(outs);
    for (std::size_t k = 0; k < f.size(); ++k) result.push_back(t[k] ? t[k] : zerosLike(f[k]));
    return result;
  };
  ScanOptions options;
  options.label = "rop_" + m_label;
  options.strict = true;
  const VarPtr& n = node.input(0);
  const auto c = constantIntValue(n);
  ScanSteps steps = c && *c == -1 ? ScanSteps() : c ? ScanSteps(*c) : ScanSteps(n);
  const std::vector<VarPtr> all =
      buildScan(fn, seqs, infos, nonSeqs, steps, -1, options, std::source_location::current(), {});
  std::vector<VarPtr> result(static_cast<std::size_t>(nOut));
  for (std::size_t k = 0; k < outT.size(); ++k)
    result[static_cast<std::size_t>(outT[k])] = all[static_cast<std::size_t>(nOut) + k];
  return result;
}

}  // namespace tscope::engine
