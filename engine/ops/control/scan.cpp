#include "engine/ops/control/scan.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/traversal.h"
#include "engine/io/graph_json.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan_internal.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/register_ops.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace tscope::engine {

namespace {

std::string tapsText(const std::vector<int>& taps) {
  std::string s = "{";
  for (std::size_t k = 0; k < taps.size(); ++k) s += (k ? ", " : "") + std::to_string(taps[k]);
  return s + "}";
}

int minTap0(const std::vector<int>& taps) {
  return std::min(0, *std::min_element(taps.begin(), taps.end()));
}
int maxTap0(const std::vector<int>& taps) {
  return std::max(0, *std::max_element(taps.begin(), taps.end()));
}

// The type of one row of `t` (its leading axis dropped).
TensorType rowType(const TensorType& t) {
  std::vector<std::int64_t> shape(t.shape().begin() + 1, t.shape().end());
  return TensorType(t.dtype(), std::move(shape), t.device());
}

TensorType stackedType(const TensorType& row, std::int64_t steps) {
  std::vector<std::int64_t> shape{steps};
  shape.insert(shape.end(), row.shape().begin(), row.shape().end());
  return TensorType(row.dtype(), std::move(shape), row.device());
}

bool sameKind(const TensorType& a, const TensorType& b) {
  return a.dtype() == b.dtype() && a.ndim() == b.ndim() && a.device() == b.device() &&
         a.isCompatibleWith(b);
}

void checkTaps(const std::string& op, const std::vector<int>& taps, const std::string& what,
               bool output) {
  if (taps.empty()) throw GraphError(op + ": " + what + " has no taps; expected at least one");
  std::set<int> seen;
  for (int d : taps) {
    if (!seen.insert(d).second)
      throw GraphError(op + ": " + what + " lists tap " + std::to_string(d) + " twice in " +
                       tapsText(taps));
    if (output && d >= 0)
      throw GraphError(op + ": " + what + " has tap " + std::to_string(d) + " in " +
                       tapsText(taps) +
                       "; a recurrent output's taps must be negative (-1: the previous step)");
  }
}

std::string shapeText(const Shape& s) {
  return shapeToString(s);
}

}  // namespace

// ---- The op -------------------------------------------------------------------------------------

Scan::Scan(std::shared_ptr<const FunctionGraph> body, Layout layout, std::string label)
    : m_body(std::move(body)), m_layout(std::move(layout)), m_label(std::move(label)) {
  if (m_label.empty()) throw GraphError("Scan: the label is empty");
  if (!m_body) throw GraphError(str() + ": the body is null");
  const std::size_t nOut = m_layout.outTaps.size();
  if (m_layout.outStore.empty()) m_layout.outStore.assign(nOut, Store::All);
  if (m_layout.outStore.size() != nOut)
    throw GraphError(str() + ": " + std::to_string(m_layout.outStore.size()) +
                     " output stores for " + std::to_string(nOut) + " outputs");
  if (m_layout.nNonSeqs < 0) throw GraphError(str() + ": a negative number of non-sequences");
  std::size_t nInner = 0;
  for (std::size_t i = 0; i < m_layout.seqTaps.size(); ++i) {
    checkTaps(str(), m_layout.seqTaps[i], "sequence " + std::to_string(i), false);
    m_seqInner.push_back(static_cast<int>(nInner));
    nInner += m_layout.seqTaps[i].size();
  }
  for (std::size_t o = 0; o < nOut; ++o) {
    m_outInner.push_back(static_cast<int>(nInner));
    if (m_layout.outTaps[o].empty()) {
      m_initInput.push_back(-1);
      if (m_layout.outStore[o] == Store::Last)
        throw GraphError(str() + ": output " + std::to_string(o) +
                         " keeps only its last state but is not recurrent");
      continue;
    }
    checkTaps(str(), m_layout.outTaps[o], "output " + std::to_string(o), true);
    if (m_layout.outStore[o] == Store::Last && m_layout.outTaps[o] != std::vector<int>{-1})
      throw GraphError(str() + ": output " + std::to_string(o) +
                       " keeps only its last state, which needs taps {-1}; found " +
                       tapsText(m_layout.outTaps[o]));
    m_initInput.push_back(1 + nSequences() + m_nRecurrent);
    ++m_nRecurrent;
    nInner += m_layout.outTaps[o].size();
  }
  nInner += static_cast<std::size_t>(m_layout.nNonSeqs);
  const auto& ins = m_body->inputs();
  const auto& outs = m_body->outputs();
  if (ins.size() != nInner)
    throw GraphError(str() + ": the body takes " + std::to_string(ins.size()) +
                     " inputs; the taps and non-sequences give " + std::to_string(nInner));
  if (outs.size() != nOut || nOut == 0)
    throw GraphError(str() + ": the body gives " + std::to_string(outs.size()) +
                     " outputs; expected one per output (" + std::to_string(nOut) +
                     ", at least one)");
  for (std::size_t o = 0; o < nOut; ++o) {
    if (!isRecurrent(static_cast<int>(o))) continue;
    const TensorType& got = outs[o]->type();
    for (std::size_t k = 0; k < m_layout.outTaps[o].size(); ++k) {
      const TensorType& state = ins[static_cast<std::size_t>(m_outInner[o]) + k]->type();
      if (!sameKind(got, state))
        throw TypeError(str() + ": output " + std::to_string(o) + " of the body is " + got.str() +
                        " but its state (tap " + std::to_string(m_layout.outTaps[o][k]) +
                        ", from its initial value) is " + state.str() +
                        "; expected the same dtype and shape");
    }
  }
  const std::vector<Apply*> order = m_body->toposort();
  for (const Apply* n : order) m_executable = m_executable && n->op().isExecutable();
  m_order.assign(order.begin(), order.end());
  // Node-level connection (Note [Scan gradient]): through the body, closed over the recurrences.
  const auto inner = innerConnectionPattern(*m_body, m_order);
  const std::size_t nNode = 1 + m_layout.seqTaps.size() + static_cast<std::size_t>(m_nRecurrent) +
                            static_cast<std::size_t>(m_layout.nNonSeqs);
  m_connection.assign(nNode, std::vector<bool>(nOut, false));
  auto innerOf = [&](std::size_t nodeInput) {
    std::vector<std::size_t> r;
    if (nodeInput == 0) return r;
    std::size_t i = nodeInput - 1;
    if (i < m_layout.seqTaps.size()) {
      for (std::size_t k = 0; k < m_layout.seqTaps[i].size(); ++k)
        r.push_back(static_cast<std::size_t>(m_seqInner[i]) + k);
      return r;
    }
    i -= m_layout.seqTaps.size();
    if (i < static_cast<std::size_t>(m_nRecurrent)) {
      int seen = 0;
      for (std::size_t o = 0; o < nOut; ++o) {
        if (!isRecurrent(static_cast<int>(o))) continue;
        if (seen++ == static_cast<int>(i))
          for (std::size_t k = 0; k < m_layout.outTaps[o].size(); ++k)
            r.push_back(static_cast<std::size_t>(m_outInner[o]) + k);
      }
      return r;
    }
    i -= static_cast<std::size_t>(m_nRecurrent);
    r.push_back(ins.size() - static_cast<std::size_t>(m_layout.nNonSeqs) + i);
    return r;
  };
  for (std::size_t o = 0; o < nOut; ++o) m_connection[0][o] = true;
  for (std::size_t n = 1; n < nNode; ++n)
    for (std::size_t in : innerOf(n))
      for (std::size_t o = 0; o < nOut; ++o)
        if (inner[in][o]) m_connection[n][o] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t j = 0; j < nOut; ++j) {
      if (!isRecurrent(static_cast<int>(j))) continue;
      for (std::size_t k = 0; k < m_layout.outTaps[j].size(); ++k) {
        const std::size_t state = static_cast<std::size_t>(m_outInner[j]) + k;
        for (std::size_t o = 0; o < nOut; ++o) {
          if (!inner[state][o]) continue;
          for (std::size_t n = 1; n < nNode; ++n)
            if (m_connection[n][j] && !m_connection[n][o]) {
              m_connection[n][o] = true;
              changed = true;
            }
        }
      }
    }
  }
  nlohmann::json outTaps = nlohmann::json::array(), outLast = nlohmann::json::array();
  for (std::size_t o = 0; o < nOut; ++o) {
    outTaps.push_back(isRecurrent(static_cast<int>(o)) ? nlohmann::json(m_layout.outTaps[o])
                                                       : nlohmann::json());
    outLast.push_back(m_layout.outStore[o] == Store::Last);
  }
  m_props = {{"label", m_label},
             {"body", io::graphToJson(*m_body)},
             {"seq_taps", m_layout.seqTaps},
             {"out_taps", outTaps},
             {"out_last", outLast},
             {"n_nonseqs", m_layout.nNonSeqs},
             {"truncate_gradient", m_layout.truncateGradient}};
}

Scan::~Scan() = default;

std::string Scan::str() const {
  return "Scan{" + m_label + "}";
}

int Scan::initRows(int o) const {
  const auto& taps = m_layout.outTaps[static_cast<std::size_t>(o)];
  return taps.empty() ? 0 : -*std::min_element(taps.begin(), taps.end());
}

int Scan::nodeInputOfInner(std::size_t inner) const {
  std::size_t p = 0;
  for (std::size_t i = 0; i < m_layout.seqTaps.size(); ++i) {
    p += m_layout.seqTaps[i].size();
    if (inner < p) return 1 + static_cast<int>(i);
  }
  for (int o = 0; o < nOutputs(); ++o) {
    p += m_layout.outTaps[static_cast<std::size_t>(o)].size();
    if (inner < p) return initInput(o);
  }
  const std::size_t k = inner - p;
  return k < static_cast<std::size_t>(m_layout.nNonSeqs) ? nonSeqInput(static_cast<int>(k)) : -1;
}

bool Scan::initIsState(int o) const {
  return m_layout.outTaps[static_cast<std::size_t>(o)] == std::vector<int>{-1};
}

std::shared_ptr<const Scan> Scan::with(std::shared_ptr<const FunctionGraph> body,
                                       Layout layout) const {
  return std::make_shared<const Scan>(std::move(body), std::move(layout), m_label);
}

std::vector<TensorType> Scan::outputTypes(std::span<const VarPtr> inputs) const {
  const auto& ins = m_body->inputs();
  checkInputCount(inputs, 1 + m_layout.seqTaps.size() + static_cast<std::size_t>(m_nRecurrent) +
                              static_cast<std::size_t>(m_layout.nNonSeqs));
  const TensorType& nt = inputs[0]->type();
  if (nt.ndim() != 0 || !isInteger(nt.dtype()))
    throwInputError(inputs, 0, "a 0-d integer number of steps (nSteps; -1: from the sequences)");
  std::optional<std::int64_t> steps;
  if (const auto c = constantIntValue(inputs[0]); c && *c >= 0) steps = *c;
  bool fromSeqs = !steps && constantIntValue(inputs[0]) == std::optional<std::int64_t>(-1);
  std::optional<std::int64_t> seqSteps;
  for (std::size_t i = 0; i < m_layout.seqTaps.size(); ++i) {
    const TensorType& t = inputs[1 + i]->type();
    const TensorType& want = ins[static_cast<std::size_t>(m_seqInner[i])]->type();
    if (t.ndim() != want.ndim() + 1 || t.dtype() != want.dtype() ||
        !rowType(t).isCompatibleWith(want))
      throwInputError(
          inputs, static_cast<int>(1 + i),
          "a sequence whose rows are " + want.str() + " (sequence " + std::to_string(i) + ")");
    if (fromSeqs) {
      const std::int64_t n = t.shape()[0];
      const auto& taps = m_layout.seqTaps[i];
      if (n == kUnknownDim) {
        fromSeqs = false;
      } else {
        const std::int64_t s = n - (maxTap0(taps) - minTap0(taps));
        seqSteps = seqSteps ? std::min(*seqSteps, s) : s;
      }
    }
  }
  if (fromSeqs && seqSteps && *seqSteps >= 0) steps = seqSteps;
  std::vector<TensorType> types;
  for (int o = 0; o < nOutputs(); ++o) {
    TensorType row = m_body->outputs()[static_cast<std::size_t>(o)]->type();
    if (isRecurrent(o)) {
      const int in = initInput(o);
      const TensorType& state =
          ins[static_cast<std::size_t>(m_outInner[static_cast<std::size_t>(o)])]->type();
      const TensorType& t = inputs[static_cast<std::size_t>(in)]->type();
      const bool ok = initIsState(o)
                          ? (t.dtype() == state.dtype() && t.isCompatibleWith(state))
                          : (t.ndim() == state.ndim() + 1 && t.dtype() == state.dtype() &&
                             rowType(t).isCompatibleWith(state));
      if (!ok)
        throwInputError(inputs, in,
                        (initIsState(o) ? state.str()
                                        : "rows " + state.str() + ", " +
                                              std::to_string(initRows(o)) + " of them") +
                            " (the initial value of output " + std::to_string(o) + ", taps " +
                            tapsText(m_layout.outTaps[static_cast<std::size_t>(o)]) + ")");
      std::vector<std::int64_t> shape(row.shape());
      for (std::size_t d = 0; d < shape.size(); ++d)
        if (shape[d] == kUnknownDim) shape[d] = state.shape()[d];
      row = TensorType(row.dtype(), std::move(shape), row.device());
      if (m_layout.outStore[static_cast<std::size_t>(o)] == Store::Last) {
        types.push_back(row);
        continue;
      }
    }
    types.push_back(stackedType(row, steps ? *steps : kUnknownDim));
  }
  for (int k = 0; k < m_layout.nNonSeqs; ++k) {
    const int in = nonSeqInput(k);
    const TensorType& want =
        ins[ins.size() - static_cast<std::size_t>(m_layout.nNonSeqs) + static_cast<std::size_t>(k)]
            ->type();
    const TensorType& got = inputs[static_cast<std::size_t>(in)]->type();
    if (got.dtype() != want.dtype() || !got.isCompatibleWith(want))
      throwInputError(inputs, in,
                      want.str() + " (the type of non-sequence " + std::to_string(k) + ")");
  }
  return types;
}

std::vector<std::vector<bool>> Scan::connectionPattern(const Apply&) const {
  return m_connection;
}

// ---- Execution (Note [Scan execution]) ----------------------------------------------------------

namespace {

struct ScanState final : LoopState {
  std::vector<Tensor> inputs;   // the node's input values (handles)
  std::vector<Tensor> buffers;  // per output: stacked (with the initial rows), or the last state
  std::vector<bool> allocated;  // per output
};

}  // namespace

std::unique_ptr<LoopState> Scan::loopBegin(const Apply&,
                                           std::span<const Tensor* const> inputs) const {
  auto s = std::make_unique<ScanState>();
  for (const Tensor* t : inputs) s->inputs.push_back(*t);
  const double requested = inputs[0]->item();
  const auto n = static_cast<std::int64_t>(requested);
  if (n < -1)
    throw std::invalid_argument(str() + ": nSteps is " + std::to_string(n) +
                                "; expected a number of steps >= 0");
  if (n == -1 && m_layout.seqTaps.empty())
    throw std::invalid_argument(str() +
                                ": nSteps is -1 (from the sequences) but the scan has no "
                                "sequences");
  std::int64_t steps = n;
  for (std::size_t i = 0; i < m_layout.seqTaps.size(); ++i) {
    const Tensor& seq = *inputs[1 + i];
    const auto& taps = m_layout.seqTaps[i];
    const std::int64_t span = maxTap0(taps) - minTap0(taps);
    const std::int64_t rows = seq.ndim() > 0 ? seq.shape()[0] : 0;
    const std::int64_t avail = rows - span;
    if (n >= 0 && avail < n)
      throw std::invalid_argument(
          str() + ": sequence " + std::to_string(i) + " has " + std::to_string(rows) +
          " rows, which with taps " + tapsText(taps) + " give " +
          std::to_string(std::max<std::int64_t>(avail, 0)) + " steps; nSteps is " +
          std::to_string(n) + " (expected at least " + std::to_string(n + span) + " rows)");
    if (avail < 0)
      throw std::invalid_argument(str() + ": sequence " + std::to_string(i) + " has " +
                                  std::to_string(rows) + " rows, fewer than its taps " +
                                  tapsText(taps) + " span (" + std::to_string(span + 1) + ")");
    if (n == -1) steps = steps < 0 ? avail : std::min(steps, avail);
  }
  s->steps = steps;
  s->buffers.resize(m_layout.outTaps.size());
  s->allocated.assign(m_layout.outTaps.size(), false);
  for (int o = 0; o < nOutputs(); ++o) {
    if (!isRecurrent(o)) continue;
    const std::size_t so = static_cast<std::size_t>(o);
    const Tensor& init = *inputs[static_cast<std::size_t>(initInput(o))];
    const int rows = initRows(o);
    if (m_layout.outStore[so] == Store::Last) {
      s->buffers[so] = init;
      s->allocated[so] = true;
      continue;
    }
    Shape shape;
    if (initIsState(o)) {
      shape = init.shape();
    } else {
      if (init.ndim() == 0 || init.shape()[0] != rows)
        throw std::invalid_argument(str() + ": the initial value of output " + std::to_string(o) +
                                    " has shape " + shapeText(init.shape()) + "; its taps " +
                                    tapsText(m_layout.outTaps[so]) + " need " +
                                    std::to_string(rows) + " leading rows (the oldest first)");
      shape.assign(init.shape().begin() + 1, init.shape().end());
    }
    Shape full{rows + steps};
    full.insert(full.end(), shape.begin(), shape.end());
    Tensor buffer = Tensor::empty(init.dtype(), full);
    if (initIsState(o))
      buffer.select(0, 0).copyFrom(init);
    else
      buffer.slice(0, 0, rows).copyFrom(init);
    s->buffers[so] = std::move(buffer);
    s->allocated[so] = true;
  }
  return s;
}

void Scan::loopInputs(LoopState& state, std::int64_t k,
                      std::span<Tensor* const> innerInputs) const {
  auto& s = static_cast<ScanState&>(state);
  std::size_t p = 0;
  for (std::size_t i = 0; i < m_layout.seqTaps.size(); ++i) {
    const auto& taps = m_layout.seqTaps[i];
    const int m = minTap0(taps);
    for (int d : taps) *innerInputs[p++] = s.inputs[1 + i].select(0, k + d - m);
  }
  for (int o = 0; o < nOutputs(); ++o) {
    if (!isRecurrent(o)) continue;
    const std::size_t so = static_cast<std::size_t>(o);
    if (m_layout.outStore[so] == Store::Last) {
      *innerInputs[p++] = s.buffers[so];
      continue;
    }
    const int rows = initRows(o);
    for (int d : m_layout.outTaps[so]) *innerInputs[p++] = s.buffers[so].select(0, rows + k + d);
  }
  for (int j = 0; j < m_layout.nNonSeqs; ++j)
    *innerInputs[p++] = s.inputs[static_cast<std::size_t>(nonSeqInput(j))];
}

void Scan::loopCollect(LoopState& state, std::int64_t k,
                       std::span<const Tensor* const> innerOutputs) const {
  auto& s = static_cast<ScanState&>(state);
  for (int o = 0; o < nOutputs(); ++o) {
    const std::size_t so = static_cast<std::size_t>(o);
    const Tensor& out = *innerOutputs[so];
    if (!out.defined())
      throw std::runtime_error(str() + ": step " + std::to_string(k) +
                               " gave no value for output " + std::to_string(o));
    if (m_layout.outStore[so] == Store::Last) {
      if (out.dtype() != s.buffers[so].dtype() || out.shape() != s.buffers[so].shape())
        throw std::invalid_argument(
            str() + ": step " + std::to_string(k) + ": output " + std::to_string(o) + " is " +
            std::string(dtypeName(out.dtype())) + " " + shapeText(out.shape()) + ", expected " +
            std::string(dtypeName(s.buffers[so].dtype())) + " " + shapeText(s.buffers[so].shape()) +
            " (the shape of its initial value)");
      s.buffers[so] = out;
      continue;
    }
    if (!s.allocated[so]) {
      Shape full{s.steps};
      full.insert(full.end(), out.shape().begin(), out.shape().end());
      s.buffers[so] = Tensor::empty(out.dtype(), full);
      s.allocated[so] = true;
    }
    const int rows = initRows(o);
    Tensor row = s.buffers[so].select(0, rows + k);
    if (out.dtype() != row.dtype() || out.shape() != row.shape())
      throw std::invalid_argument(
          str() + ": step " + std::to_string(k) + ": output " + std::to_string(o) + " is " +
          std::string(dtypeName(out.dtype())) + " " + shapeText(out.shape()) + ", expected " +
          std::string(dtypeName(row.dtype())) + " " + shapeText(row.shape()) +
          (isRecurrent(o) ? " (the shape of its initial value)" : " (the shape of step 0)"));
    row.copyFrom(out);
  }
}

void Scan::loopFinish(LoopState& state, std::span<Tensor* const> outputs) const {
  auto& s = static_cast<ScanState&>(state);
  for (int o = 0; o < nOutputs(); ++o) {
    const std::size_t so = static_cast<std::size_t>(o);
    Tensor value;
    if (m_layout.outStore[so] == Store::Last) {
      value = s.buffers[so];
      // The last state may be an input (no step ran) or a view of one (a body returning its
      // slice): the node declares no view, so it gets its own buffer.
      for (const Tensor& in : s.inputs)
        if (value.sharesStorageWith(in)) {
          value = value.clone();
          break;
        }
    } else if (!s.allocated[so]) {
      // No step ran and the output is not recurrent: the row shape is the static one (unknown
      // dimensions as 0).
      Shape full{0};
      for (std::int64_t d : m_body->outputs()[so]->type().shape())
        full.push_back(d == kUnknownDim ? 0 : d);
      value = Tensor::zeros(m_body->outputs()[so]->type().dtype(), full);
    } else {
      const int rows = initRows(o);
      value = rows == 0 ? s.buffers[so] : s.buffers[so].slice(0, rows, rows + s.steps);
    }
    *outputs[so] = std::move(value);
  }
}

void Scan::perform(const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) const {
  std::unique_ptr<LoopState> state = loopBegin(node, inputs);
  const std::size_t nIn = m_body->inputs().size(), nOut = m_body->outputs().size();
  std::vector<Tensor> in(nIn), out(nOut);
  std::vector<Tensor*> inPtrs, outPtrs;
  for (Tensor& t : in) inPtrs.push_back(&t);
  for (Tensor& t : out) outPtrs.push_back(&t);
  const std::vector<const Tensor*> inConst(inPtrs.begin(), inPtrs.end());
  const std::vector<const Tensor*> outConst(outPtrs.begin(), outPtrs.end());
  for (std::int64_t k = 0; k < state->steps; ++k) {
    loopInputs(*state, k, inPtrs);
    for (Tensor& t : out) t = Tensor();
    evaluateGraph(*m_body, m_order, inConst, outPtrs, str() + " step " + std::to_string(k));
    loopCollect(*state, k, outConst);
  }
  loopFinish(*state, outputs);
}

std::vector<ShapeExpr> Scan::inferShape(const Apply& node,
                                        std::span<const ShapeExpr> inputShapes) const {
  VarPtr steps;
  const auto c = constantIntValue(node.input(0));
  if (c && *c >= 0) {
    steps = constantInt(*c);
  } else if (c && *c == -1) {
    for (std::size_t i = 0; i < m_layout.seqTaps.size(); ++i) {
      const auto& taps = m_layout.seqTaps[i];
      const std::int64_t span = maxTap0(taps) - minTap0(taps);
      VarPtr n = inputShapes[1 + i][0];
      const auto cn = constantIntValue(n);
      VarPtr avail = span == 0 ? n : cn ? constantInt(*cn - span) : sub(n, constantInt(span));
      steps = steps ? minimum(steps, avail) : avail;
    }
  } else {
    steps = node.input(0);
  }
  std::vector<ShapeExpr> result, bodyShapes;
  for (int o = 0; o < nOutputs(); ++o) {
    const std::size_t so = static_cast<std::size_t>(o);
    ShapeExpr row;
    if (isRecurrent(o)) {
      const ShapeExpr& init = inputShapes[static_cast<std::size_t>(initInput(o))];
      row.assign(initIsState(o) ? init.begin() : init.begin() + 1, init.end());
    } else {
      const TensorType& t = node.outputRef(o).type();
      // Through the body: a dimension that is a constant or one of the given input dimensions;
      // else the output's own.
      if (bodyShapes.empty()) bodyShapes = innerOutputShapes(inputShapes);
      const ShapeExpr& inner = bodyShapes[so];
      for (int d = 1; d < t.ndim(); ++d) {
        const auto k = static_cast<std::size_t>(d - 1);
        const VarPtr e = k < inner.size() ? inner[k] : VarPtr();
        if (t.isDimKnown(d))
          row.push_back(constantInt(t.shape()[static_cast<std::size_t>(d)]));
        else
          row.push_back(e ? e : shapeI(const_cast<Apply&>(node).output(o), d));
      }
    }
    if (m_layout.outStore[so] == Store::Last) {
      result.push_back(std::move(row));
      continue;
    }
    ShapeExpr s{steps};
    s.insert(s.end(), row.begin(), row.end());
    result.push_back(std::move(s));
  }
  return result;
}

std::vector<ShapeExpr> Scan::innerOutputShapes(std::span<const ShapeExpr> inputShapes) const {
  std::unordered_set<const Variable*> given;
  for (const ShapeExpr& s : inputShapes)
    for (const VarPtr& d : s) given.insert(d.get());
  std::unordered_map<const Variable*, ShapeExpr> shapes;
  const auto& ins = m_body->inputs();
  std::size_t p = 0;
  for (std::size_t i = 0; i < m_layout.seqTaps.size(); ++i) {
    const ShapeExpr& s = inputShapes[1 + i];
    for (std::size_t d = 0; d < m_layout.seqTaps[i].size(); ++d)
      shapes[ins[p++].get()] = ShapeExpr(s.begin() + 1, s.end());
  }
  for (int o = 0; o < nOutputs(); ++o) {
    if (!isRecurrent(o)) continue;
    const ShapeExpr& init = inputShapes[static_cast<std::size_t>(initInput(o))];
    const ShapeExpr row(initIsState(o) ? init.begin() : init.begin() + 1, init.end());
    for (std::size_t d = 0; d < m_layout.outTaps[static_cast<std::size_t>(o)].size(); ++d)
      shapes[ins[p++].get()] = row;
  }
  for (int k = 0; k < m_layout.nNonSeqs; ++k)
    shapes[ins[p++].get()] = inputShapes[static_cast<std::size_t>(nonSeqInput(k))];
  auto shapeFor = [&](const VarPtr& v) -> ShapeExpr {
    if (auto it = shapes.find(v.get()); it != shapes.end()) return it->second;
    ShapeExpr s;  // unknown dims as null; constants from the type
    for (std::int64_t d : v->type().shape())
      s.push_back(d == kUnknownDim ? VarPtr() : constantInt(d));
    return s;
  };
  for (const Apply* inner : m_order) {
    std::vector<ShapeExpr> in;
    bool complete = true;
    for (const VarPtr& v : inner->inputs()) {
      in.push_back(shapeFor(v));
      for (const VarPtr& d : in.back()) complete = complete && d != nullptr;
    }
    std::vector<ShapeExpr> out;
    if (complete) {
      try {
        out = inner->op().inferShape(*inner, in);
      } catch (const std::exception&) {
        out.clear();
      }
    }
    for (int o = 0; o < inner->nOutputs(); ++o) {
      ShapeExpr s = o < static_cast<int>(out.size())
                        ? out[static_cast<std::size_t>(o)]
                        : shapeFor(const_cast<Apply*>(inner)->output(o));
      // An expression on inner variables would compute the body outside the loop.
      for (VarPtr& d : s)
        if (d && !given.count(d.get()) && !constantIntValue(d)) d = nullptr;
      shapes[&inner->outputRef(o)] = std::move(s);
    }
  }
  std::vector<ShapeExpr> result;
  for (const VarPtr& out : m_body->outputs()) result.push_back(shapeFor(out));
  return result;
}

OpCost Scan::cost(const Apply&, std::span<const Shape>) const {
  return OpCost{};
}

std::string scanTapsText(const std::vector<int>& taps) {
  return tapsText(taps);
}

void checkScanTaps(const std::string& op, const std::vector<int>& taps, const std::string& what,
                   bool output) {
  checkTaps(op, taps, what, output);
}

}  // namespace tscope::engine
