// Converters of ONNX's recurrent layers: RNN, GRU and LSTM (opsets 7 to 18), unrolled over time.
//
// Note [Unrolled recurrences]: Tensorscope graphs have no loop, so a recurrent layer becomes one
// block of nodes per time step. This needs the sequence length to be static (the X input's time
// axis); a dynamic one is refused with "not supported yet". Per direction the input projection
// X·Wᵀ (+ biases) is computed once for every step as a single batched Dot over the whole sequence,
// then each step adds the recurrent product H·Rᵀ, splits the gates (ONNX orders them iofc for
// LSTM, zrh for GRU) with one Split and applies the activations. Y stacks every step's hidden
// state (at the step's own time index, so a reverse direction's Y[t] belongs to input t), Y_h and
// Y_c stack the last state of each direction. layout 1 (batch-major, opset 14) is a transpose in
// and out of the time-major form.
//
// Semantics ONNX leaves to the runtime follow onnxruntime: `clip` bounds the input of every gate
// activation (not h(C)); LSTM's input_forget couples the gates as f = 1 - i; activation_alpha and
// activation_beta are consumed in order by the activations that take them (LeakyRelu,
// ThresholdedRelu, Elu: alpha; HardSigmoid, ScaledTanh, Affine: both), missing ones taking the
// corresponding ONNX operator's default. sequence_lens is accepted only when it is a constant
// equal to the sequence length for every batch entry (padded batches would need masking).
#include "engine/io/onnx/onnx_convert.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>
#include <cctype>
#include <functional>

namespace tscope::engine::io::onnx_import {

namespace {

enum class Cell { Rnn, Gru, Lstm };

struct CellInfo {
  const char* name;
  int nGates;        // rows of W per direction, in units of hidden_size
  int nActivations;  // per direction
  std::vector<std::string> defaultActivations;
};

CellInfo cellInfo(Cell cell) {
  switch (cell) {
    case Cell::Rnn:
      return {"RNN", 1, 1, {"Tanh"}};
    case Cell::Gru:
      return {"GRU", 3, 2, {"Sigmoid", "Tanh"}};
    case Cell::Lstm:
      break;
  }
  return {"LSTM", 4, 3, {"Sigmoid", "Tanh", "Tanh"}};
}

using Activation = std::function<VarPtr(const VarPtr&)>;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> attrStrings(const NodeContext& ctx, const std::string& name) {
  for (const auto& a : ctx.proto().attribute()) {
    if (a.name() != name) continue;
    if (a.type() != onnx::AttributeProto::STRINGS)
      ctx.fail("attribute '" + name + "': expected a list of strings, found another kind");
    return {a.strings().begin(), a.strings().end()};
  }
  return {};
}

// One activation function by its ONNX name (case-insensitive), taking alpha/beta from the lists
// in order when it uses them (Note [Unrolled recurrences]).
Activation makeActivation(const NodeContext& ctx, const std::string& name,
                          const std::vector<double>& alphas, std::size_t& nextAlpha,
                          const std::vector<double>& betas, std::size_t& nextBeta) {
  auto take = [](const std::vector<double>& list, std::size_t& next, double fallback) {
    return next < list.size() ? list[next++] : fallback;
  };
  const std::string n = lower(name);
  if (n == "sigmoid") return [](const VarPtr& x) { return sigmoid(x); };
  if (n == "tanh") return [](const VarPtr& x) { return tanh(x); };
  if (n == "relu") return [](const VarPtr& x) { return relu(x); };
  if (n == "softsign") return [](const VarPtr& x) { return x / (1.0 + abs(x)); };
  if (n == "softplus") return [](const VarPtr& x) { return softplus(x); };
  if (n == "leakyrelu") {
    const double alpha = take(alphas, nextAlpha, 0.01);
    return [alpha](const VarPtr& x) { return where(ge(x, scalarLike(0.0, x)), x, x * alpha); };
  }
  if (n == "thresholdedrelu") {
    const double alpha = take(alphas, nextAlpha, 1.0);
    return [alpha](const VarPtr& x) {
      return where(gt(x, scalarLike(alpha, x)), x, scalarLike(0.0, x));
    };
  }
  if (n == "elu") {
    const double alpha = take(alphas, nextAlpha, 1.0);
    return
        [alpha](const VarPtr& x) { return where(ge(x, scalarLike(0.0, x)), x, expm1(x) * alpha); };
  }
  if (n == "hardsigmoid") {
    const double alpha = take(alphas, nextAlpha, 0.2), beta = take(betas, nextBeta, 0.5);
    return [alpha, beta](const VarPtr& x) {
      return clip(x * alpha + beta, scalarLike(0.0, x), scalarLike(1.0, x));
    };
  }
  if (n == "scaledtanh") {
    const double alpha = take(alphas, nextAlpha, 1.0), beta = take(betas, nextBeta, 1.0);
    return [alpha, beta](const VarPtr& x) { return tanh(x * beta) * alpha; };
  }
  if (n == "affine") {
    const double alpha = take(alphas, nextAlpha, 1.0), beta = take(betas, nextBeta, 0.0);
    return [alpha, beta](const VarPtr& x) { return x * alpha + beta; };
  }
  ctx.unsupported(std::string(ctx.opType()) + " activation '" + name + "'");
}

// What every recurrent layer reads before unrolling, with X and the initial states time-major.
struct Recurrence {
  CellInfo info;
  int nDirections = 1;
  bool reverseOnly = false;  // direction "reverse"
  bool batchMajor = false;   // layout 1
  std::int64_t hidden = 0;
  std::int64_t seqLength = 0;
  VarPtr x;                                          // (seq, batch, input)
  std::vector<std::vector<Activation>> activations;  // per direction
  std::optional<double> clip;

  bool reverse(int d) const { return reverseOnly || d == 1; }
};

// v bounded to [-clip, clip] when the node has a clip attribute.
VarPtr clipTo(const Recurrence& r, const VarPtr& v) {
  return r.clip ? clip(v, scalarLike(-*r.clip, v), scalarLike(*r.clip, v)) : v;
}

// A time-major (dirs, batch, hidden) optional state input, or nullptr.
VarPtr stateInput(const NodeContext& ctx, int i, const Recurrence& r) {
  if (!ctx.hasInput(i)) return nullptr;
  if (ctx.rank(i) != 3)
    ctx.fail("input " + std::to_string(i) + ": expected a 3-d initial state, found rank " +
             std::to_string(ctx.rank(i)));
  return r.batchMajor ? dimshuffle(ctx.input(i), {1, 0, 2}) : ctx.input(i);
}

Recurrence readRecurrence(NodeContext& ctx, Cell cell) {
  Recurrence r;
  r.info = cellInfo(cell);
  const std::string op = r.info.name;
  const std::string direction = ctx.attrString("direction", "forward");
  if (direction == "bidirectional")
    r.nDirections = 2;
  else if (direction == "reverse")
    r.reverseOnly = true;
  else if (direction != "forward")
    ctx.fail("attribute 'direction': expected forward, reverse or bidirectional, found '" +
             direction + "'");
  const std::int64_t layout = ctx.opset() >= 14 ? ctx.attrInt("layout", 0) : 0;
  if (layout != 0 && layout != 1)
    ctx.fail("attribute 'layout': expected 0 or 1, found " + std::to_string(layout));
  r.batchMajor = layout == 1;

  for (int i = 0; i < 3; ++i)
    if (ctx.rank(i) != 3)
      ctx.fail("input " + std::to_string(i) + ": expected a 3-d tensor, found rank " +
               std::to_string(ctx.rank(i)));
  r.x = r.batchMajor ? dimshuffle(ctx.input(0), {1, 0, 2}) : ctx.input(0);
  if (!isFloat(r.x->type().dtype()))
    ctx.fail("input 0: expected a float tensor, found " + r.x->type().str());
  r.seqLength = r.x->type().shape()[0];
  if (r.seqLength == kUnknownDim) ctx.unsupported(op + " with a dynamic sequence length");

  const auto& w = ctx.input(1)->type().shape();
  const auto& rr = ctx.input(2)->type().shape();
  if (w[0] != kUnknownDim && w[0] != r.nDirections)
    ctx.fail("input 1 (W): expected " + std::to_string(r.nDirections) +
             " direction(s) for direction '" + direction + "', found " + std::to_string(w[0]));
  if (ctx.hasAttr("hidden_size"))
    r.hidden = ctx.attrInt("hidden_size");
  else if (rr[2] != kUnknownDim)
    r.hidden = rr[2];
  else
    ctx.fail("expected the attribute hidden_size or an R input of static shape, found neither");
  if (r.hidden <= 0)
    ctx.fail("hidden_size: expected a positive size, found " + std::to_string(r.hidden));
  const std::int64_t rows = r.info.nGates * r.hidden;
  if ((w[1] != kUnknownDim && w[1] != rows) || (rr[1] != kUnknownDim && rr[1] != rows) ||
      (rr[2] != kUnknownDim && rr[2] != r.hidden))
    ctx.fail("expected W of shape (" + std::to_string(r.nDirections) + ", " + std::to_string(rows) +
             ", input_size) and R of shape (" + std::to_string(r.nDirections) + ", " +
             std::to_string(rows) + ", " + std::to_string(r.hidden) + "), found " +
             ctx.input(1)->type().str() + " and " + ctx.input(2)->type().str());

  if (ctx.hasInput(3)) {
    const auto& b = ctx.input(3)->type().shape();
    if (b.size() != 2 || (b[1] != kUnknownDim && b[1] != 2 * rows))
      ctx.fail("input 3 (B): expected shape (" + std::to_string(r.nDirections) + ", " +
               std::to_string(2 * rows) + "), found " + ctx.input(3)->type().str());
  }
  if (ctx.hasInput(4)) {
    const auto lens = ctx.constantInput(4);
    if (!lens) ctx.needsConstant(4, op + "'s sequence_lens");
    for (double value : lens->toDoubles())
      if (const auto len = static_cast<std::int64_t>(value); len != r.seqLength)
        ctx.unsupported(op + " with sequence_lens other than the sequence length (" +
                        std::to_string(len) + " of " + std::to_string(r.seqLength) + " steps)");
  }

  std::vector<std::string> names = attrStrings(ctx, "activations");
  const auto per = static_cast<std::size_t>(r.info.nActivations);
  if (names.empty()) names = r.info.defaultActivations;
  if (names.size() == per && r.nDirections == 2) {  // one set for both directions
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != per * static_cast<std::size_t>(r.nDirections))
    ctx.fail("attribute 'activations': expected " + std::to_string(per * r.nDirections) +
             " names, found " + std::to_string(names.size()));
  const std::vector<double> alphas = ctx.attrFloats("activation_alpha", std::vector<double>{});
  const std::vector<double> betas = ctx.attrFloats("activation_beta", std::vector<double>{});
  std::size_t nextAlpha = 0, nextBeta = 0;
  for (int d = 0; d < r.nDirections; ++d) {
    r.activations.emplace_back();
    for (std::size_t k = 0; k < per; ++k)
      r.activations.back().push_back(
          makeActivation(ctx, names[d * per + k], alphas, nextAlpha, betas, nextBeta));
  }
  if (ctx.hasAttr("clip")) {
    r.clip = ctx.attrFloat("clip");
    if (*r.clip <= 0)
      ctx.fail("attribute 'clip': expected a positive threshold, found " + std::to_string(*r.clip));
  }
  return r;
}

// The (batch, hidden) state of direction d: from the input, or zeros.
VarPtr initialState(const VarPtr& given, int d, const Recurrence& r) {
  if (given) return select(given, 0, d);
  return zeros(ShapeExpr{shapeI(r.x, 1), constantInt(r.hidden)}, r.x->type().dtype());
}

// Per direction: X·Wᵀ + bias for every step, (seq, batch, gates*hidden). biasOf picks the part of
// B's (Wb, Rb) row that belongs in the precomputed projection.
VarPtr inputProjection(const NodeContext& ctx, const Recurrence& r, int d,
                       const std::function<VarPtr(const VarPtr&)>& biasOf) {
  VarPtr xw = dot(r.x, transpose(select(ctx.input(1), 0, d)));
  if (ctx.hasInput(3)) xw = xw + biasOf(select(ctx.input(3), 0, d));
  return xw;
}

std::vector<VarPtr> gates(const VarPtr& v, int n, std::int64_t hidden) {
  return split(v, std::vector<std::int64_t>(static_cast<std::size_t>(n), hidden), 1);
}

// The outputs from the per-direction hidden states: Y (seq, dirs, batch, hidden) with each state
// at its time index, and (dirs, batch, hidden) stacks of the final states.
std::vector<VarPtr> recurrenceOutputs(const NodeContext& ctx, const Recurrence& r,
                                      const std::vector<std::vector<VarPtr>>& ys,
                                      const std::vector<VarPtr>& lastH,
                                      const std::vector<VarPtr>& lastC) {
  std::vector<VarPtr> out(static_cast<std::size_t>(ctx.nOutputs()));
  if (ctx.wantsOutput(0)) {
    std::vector<VarPtr> perDirection;
    for (const auto& steps : ys) perDirection.push_back(stack(steps, 0));
    VarPtr y = stack(perDirection, 1);
    out[0] = r.batchMajor ? dimshuffle(y, {2, 0, 1, 3}) : y;
  }
  auto finals = [&](const std::vector<VarPtr>& states) {
    VarPtr s = stack(states, 0);
    return r.batchMajor ? dimshuffle(s, {1, 0, 2}) : s;
  };
  if (out.size() > 1 && ctx.wantsOutput(1)) out[1] = finals(lastH);
  if (out.size() > 2 && ctx.wantsOutput(2) && lastC[0]) out[2] = finals(lastC);
  return out;
}

// One direction unrolled: the hidden state of every step by time index, the final h (and c).
struct DirectionResult {
  std::vector<VarPtr> ys;
  VarPtr h, c;
};

// Runs step(d) -> DirectionResult for each direction and assembles the node's outputs.
template <class Step>
std::vector<VarPtr> unroll(NodeContext& ctx, const Recurrence& r, const Step& step) {
  std::vector<std::vector<VarPtr>> ys;
  std::vector<VarPtr> lastH, lastC;
  for (int d = 0; d < r.nDirections; ++d) {
    DirectionResult res = step(d);
    ys.push_back(std::move(res.ys));
    lastH.push_back(res.h);
    lastC.push_back(res.c);
  }
  return recurrenceOutputs(ctx, r, ys, lastH, lastC);
}

// Time indices in processing order.
std::vector<std::int64_t> timeOrder(const Recurrence& r, int d) {
  std::vector<std::int64_t> ts;
  for (std::int64_t s = 0; s < r.seqLength; ++s)
    ts.push_back(r.reverse(d) ? r.seqLength - 1 - s : s);
  return ts;
}

std::vector<VarPtr> convertRnn(NodeContext& ctx) {
  const Recurrence r = readRecurrence(ctx, Cell::Rnn);
  const VarPtr h0 = stateInput(ctx, 5, r);
  const std::int64_t H = r.hidden;
  auto clipped = [&](const VarPtr& v) { return clipTo(r, v); };
  return unroll(ctx, r, [&](int d) {
    const VarPtr xw = inputProjection(
        ctx, r, d, [&](const VarPtr& b) { return slice(b, 0, 0, H) + slice(b, 0, H, 2 * H); });
    const VarPtr rt = transpose(select(ctx.input(2), 0, d));
    const Activation& f = r.activations[static_cast<std::size_t>(d)][0];
    DirectionResult res{std::vector<VarPtr>(static_cast<std::size_t>(r.seqLength)),
                        initialState(h0, d, r), nullptr};
    for (std::int64_t t : timeOrder(r, d)) {
      res.h = f(clipped(select(xw, 0, t) + dot(res.h, rt)));
      res.ys[static_cast<std::size_t>(t)] = res.h;
    }
    return res;
  });
}

std::vector<VarPtr> convertGru(NodeContext& ctx) {
  const Recurrence r = readRecurrence(ctx, Cell::Gru);
  const VarPtr h0 = stateInput(ctx, 5, r);
  const std::int64_t H = r.hidden;
  const bool linearBeforeReset = ctx.attrInt("linear_before_reset", 0) != 0;
  auto clipped = [&](const VarPtr& v) { return clipTo(r, v); };
  return unroll(ctx, r, [&](int d) {
    // B = (Wbz, Wbr, Wbh, Rbz, Rbr, Rbh). Without linear_before_reset every bias is additive and
    // goes into the projection; with it, Rbh sits inside r * (H·Rhᵀ + Rbh) and stays per step.
    const VarPtr b = ctx.hasInput(3) ? select(ctx.input(3), 0, d) : nullptr;
    const VarPtr xw = inputProjection(ctx, r, d, [&](const VarPtr& bd) {
      if (!linearBeforeReset) return slice(bd, 0, 0, 3 * H) + slice(bd, 0, 3 * H, 6 * H);
      const VarPtr rbzr = join(
          0, {slice(bd, 0, 3 * H, 5 * H), zeros(std::vector<std::int64_t>{H}, bd->type().dtype())});
      return slice(bd, 0, 0, 3 * H) + rbzr;
    });
    const VarPtr rd = select(ctx.input(2), 0, d);
    const VarPtr rzrT = transpose(slice(rd, 0, 0, 2 * H));
    const VarPtr rhT = transpose(slice(rd, 0, 2 * H, 3 * H));
    const VarPtr rbh = b ? slice(b, 0, 5 * H, 6 * H) : nullptr;
    const Activation& f = r.activations[static_cast<std::size_t>(d)][0];
    const Activation& g = r.activations[static_cast<std::size_t>(d)][1];
    DirectionResult res{std::vector<VarPtr>(static_cast<std::size_t>(r.seqLength)), nullptr,
                        nullptr};
    VarPtr h = initialState(h0, d, r);
    for (std::int64_t t : timeOrder(r, d)) {
      const auto xg = gates(select(xw, 0, t), 3, H);  // xz, xr, xh
      const auto hg = gates(dot(h, rzrT), 2, H);      // hz, hr
      const VarPtr z = f(clipped(xg[0] + hg[0]));
      const VarPtr reset = f(clipped(xg[1] + hg[1]));
      VarPtr candidate;
      if (linearBeforeReset) {
        VarPtr hh = dot(h, rhT);
        if (rbh) hh = hh + rbh;
        candidate = g(clipped(xg[2] + reset * hh));
      } else {
        candidate = g(clipped(xg[2] + dot(reset * h, rhT)));
      }
      h = (1.0 - z) * candidate + z * h;
      res.ys[static_cast<std::size_t>(t)] = h;
    }
    res.h = h;
    return res;
  });
}

std::vector<VarPtr> convertLstm(NodeContext& ctx) {
  const Recurrence r = readRecurrence(ctx, Cell::Lstm);
  const VarPtr h0 = stateInput(ctx, 5, r);
  const VarPtr c0 = stateInput(ctx, 6, r);
  const std::int64_t H = r.hidden;
  const bool inputForget = ctx.attrInt("input_forget", 0) != 0;
  if (ctx.hasInput(7)) {
    const auto& p = ctx.input(7)->type().shape();
    if (p.size() != 2 || (p[1] != kUnknownDim && p[1] != 3 * H))
      ctx.fail("input 7 (P): expected shape (" + std::to_string(r.nDirections) + ", " +
               std::to_string(3 * H) + "), found " + ctx.input(7)->type().str());
  }
  auto clipped = [&](const VarPtr& v) { return clipTo(r, v); };
  return unroll(ctx, r, [&](int d) {
    const VarPtr xw = inputProjection(ctx, r, d, [&](const VarPtr& b) {
      return slice(b, 0, 0, 4 * H) + slice(b, 0, 4 * H, 8 * H);
    });
    const VarPtr rt = transpose(select(ctx.input(2), 0, d));
    VarPtr pi, po, pf;  // peepholes, P = (Pi, Po, Pf)
    if (ctx.hasInput(7)) {
      const VarPtr p = select(ctx.input(7), 0, d);
      pi = slice(p, 0, 0, H);
      po = slice(p, 0, H, 2 * H);
      pf = slice(p, 0, 2 * H, 3 * H);
    }
    const auto& acts = r.activations[static_cast<std::size_t>(d)];
    const Activation &f = acts[0], &g = acts[1], &hAct = acts[2];
    DirectionResult res{std::vector<VarPtr>(static_cast<std::size_t>(r.seqLength)), nullptr,
                        nullptr};
    VarPtr h = initialState(h0, d, r), c = initialState(c0, d, r);
    for (std::int64_t t : timeOrder(r, d)) {
      const auto gs = gates(select(xw, 0, t) + dot(h, rt), 4, H);  // i, o, f, c
      const VarPtr i = f(clipped(pi ? gs[0] + pi * c : gs[0]));
      const VarPtr forget = inputForget ? 1.0 - i : f(clipped(pf ? gs[2] + pf * c : gs[2]));
      c = forget * c + i * g(clipped(gs[3]));
      const VarPtr o = f(clipped(po ? gs[1] + po * c : gs[1]));
      h = o * hAct(c);
      res.ys[static_cast<std::size_t>(t)] = h;
    }
    res.h = h;
    res.c = c;
    return res;
  });
}

}  // namespace

void registerRnnConverters(ConverterTable& table) {
  table.add("RNN", &convertRnn);
  table.add("GRU", &convertGru);
  table.add("LSTM", &convertLstm);
}

}  // namespace tscope::engine::io::onnx_import
