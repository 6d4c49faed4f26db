// The converters of recurrent layers (RNN, GRU, LSTM) and of Pad, Resize/Upsample and TopK: tiny
// models built here with ONNX's protobuf API, imported, run in modes none and fast_run and
// compared with naive references written below (a step loop per cell, pad and nearest-index
// loops, a stable sort), one row per variant: directions, layouts, optional inputs, activations,
// clip, opsets. Error rows check that what is not supported yet says so, naming the op.
#include "onnx_builder.h"
#include "test_main.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

using namespace tscope::engine;
using namespace tscope::engine::io;
using namespace tscope::test::onnx;

namespace {

// --- Helpers (onnx_builder.h has the rest) ---------------------------------------------------

void attrFloats(::onnx::NodeProto& n, const std::string& name, const std::vector<double>& v) {
  auto& a = newAttr(n, name, ::onnx::AttributeProto::FLOATS);
  for (auto x : v) a.add_floats(static_cast<float>(x));
}
void attrStrings(::onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto& a = newAttr(n, name, ::onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a.add_strings(x);
}

// Uniform float32 values in [-scale, scale).
Tensor uniform(Shape shape, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(static_cast<std::size_t>(shapeNumel(shape)));
  for (double& x : v) x = dist(rng);
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

Tensor ints(DType dtype, Shape shape, const std::vector<std::int64_t>& v) {
  return Tensor::fromDoubles(dtype, std::move(shape), std::vector<double>(v.begin(), v.end()));
}

// --- Recurrent layers ----------------------------------------------------------------------------

struct RecurrentCase {
  std::string cell = "LSTM";  // RNN, GRU, LSTM
  int opset = 14;
  std::string direction = "forward";
  int layout = 0;
  bool bias = true, initialH = false, initialC = false, peepholes = false, seqLens = false;
  std::vector<std::string> activations{};  // empty: the node leaves the defaults
  std::vector<double> alphas{}, betas{};
  std::optional<double> clip{};
  bool inputForget = false, linearBeforeReset = false, wantY = true;
};

constexpr std::int64_t kS = 3, kB = 2, kI = 3, kH = 4;  // steps, batch, inputs, hidden

// An activation by name, taking alpha/beta in order as it uses them (the defaults of the ONNX ops).
std::function<double(double)> refActivation(std::string name, const std::vector<double>& alphas,
                                            std::size_t& na, const std::vector<double>& betas,
                                            std::size_t& nb) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  auto take = [](const std::vector<double>& l, std::size_t& i, double d) {
    return i < l.size() ? l[i++] : d;
  };
  if (name == "sigmoid") return [](double x) { return 1 / (1 + std::exp(-x)); };
  if (name == "tanh") return [](double x) { return std::tanh(x); };
  if (name == "relu") return [](double x) { return std::max(x, 0.0); };
  if (name == "softsign") return [](double x) { return x / (1 + std::abs(x)); };
  if (name == "softplus") return [](double x) { return std::log1p(std::exp(x)); };
  if (name == "leakyrelu")
    return [a = take(alphas, na, 0.01)](double x) { return x >= 0 ? x : a * x; };
  if (name == "thresholdedrelu")
    return [a = take(alphas, na, 1.0)](double x) { return x > a ? x : 0; };
  if (name == "elu")
    return [a = take(alphas, na, 1.0)](double x) { return x >= 0 ? x : a * (std::exp(x) - 1); };
  const double a = take(alphas, na, name == "hardsigmoid" ? 0.2 : 1.0);
  const double b = take(betas, nb, name == "hardsigmoid" ? 0.5 : name == "scaledtanh" ? 1.0 : 0.0);
  if (name == "hardsigmoid") return [a, b](double x) { return std::clamp(a * x + b, 0.0, 1.0); };
  if (name == "scaledtanh") return [a, b](double x) { return a * std::tanh(b * x); };
  return [a, b](double x) { return a * x + b; };  // affine
}

struct RecurrentData {
  Tensor x, w, r, b, h0, c0, p;  // time-major x (S, B, I), h0/c0 (D, B, H)
};

// The step loop of ONNX's equations; y (S, D, B, H), y_h and y_c (D, B, H), all time-major.
std::vector<Tensor> referenceRecurrent(const RecurrentCase& c, const RecurrentData& d) {
  const int dirs = c.direction == "bidirectional" ? 2 : 1;
  const int nGates = c.cell == "LSTM" ? 4 : c.cell == "GRU" ? 3 : 1;
  const std::size_t per = c.cell == "LSTM" ? 3 : c.cell == "GRU" ? 2 : 1;
  std::vector<std::string> names = c.activations;
  if (names.empty())
    names = c.cell == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
            : c.cell == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                              : std::vector<std::string>{"Tanh"};
  if (names.size() == per && dirs == 2) {
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != per * dirs) return {};  // a model the importer must refuse
  std::size_t na = 0, nb = 0;
  std::vector<std::function<double(double)>> acts;
  for (const auto& n : names) acts.push_back(refActivation(n, c.alphas, na, c.betas, nb));
  auto clip = [&](double v) { return c.clip ? std::clamp(v, -*c.clip, *c.clip) : v; };
  Tensor y(DType::Float64, {kS, dirs, kB, kH}), yh(DType::Float64, {dirs, kB, kH}),
      yc(DType::Float64, {dirs, kB, kH});
  const std::int64_t G = nGates * kH;
  for (int dir = 0; dir < dirs; ++dir) {
    const bool reverse = c.direction == "reverse" || dir == 1;
    auto act = [&](std::size_t k, double v) { return acts[dir * per + k](v); };
    auto wb = [&](std::int64_t g) { return c.bias ? d.b.at({dir, g}) : 0.0; };
    auto rb = [&](std::int64_t g) { return c.bias ? d.b.at({dir, G + g}) : 0.0; };
    std::vector<std::vector<double>> h(kB, std::vector<double>(kH, 0)), cs = h;
    for (std::int64_t b = 0; b < kB; ++b)
      for (std::int64_t j = 0; j < kH; ++j) {
        if (c.initialH) h[b][j] = d.h0.at({dir, b, j});
        if (c.initialC) cs[b][j] = d.c0.at({dir, b, j});
      }
    for (std::int64_t s = 0; s < kS; ++s) {
      const std::int64_t t = reverse ? kS - 1 - s : s;
      for (std::int64_t b = 0; b < kB; ++b) {
        std::vector<double> xw(G), hr(G);
        for (std::int64_t g = 0; g < G; ++g) {
          xw[g] = wb(g);
          hr[g] = rb(g);
          for (std::int64_t k = 0; k < kI; ++k) xw[g] += d.x.at({t, b, k}) * d.w.at({dir, g, k});
          for (std::int64_t k = 0; k < kH; ++k) hr[g] += h[b][k] * d.r.at({dir, g, k});
        }
        std::vector<double> hn(kH);
        if (c.cell == "RNN") {
          for (std::int64_t j = 0; j < kH; ++j) hn[j] = act(0, clip(xw[j] + hr[j]));
        } else if (c.cell == "GRU") {  // gates z, r, h
          std::vector<double> z(kH), rg(kH);
          for (std::int64_t j = 0; j < kH; ++j) {
            z[j] = act(0, clip(xw[j] + hr[j]));
            rg[j] = act(0, clip(xw[kH + j] + hr[kH + j]));
          }
          for (std::int64_t j = 0; j < kH; ++j) {
            double cand = xw[2 * kH + j];
            if (c.linearBeforeReset) {
              cand += rg[j] * hr[2 * kH + j];
            } else {
              cand += rb(2 * kH + j);
              for (std::int64_t k = 0; k < kH; ++k)
                cand += rg[k] * h[b][k] * d.r.at({dir, 2 * kH + j, k});
            }
            hn[j] = (1 - z[j]) * act(1, clip(cand)) + z[j] * h[b][j];
          }
        } else {  // LSTM gates i, o, f, c; peepholes i, o, f
          auto peep = [&](int k, std::int64_t j) {
            return c.peepholes ? d.p.at({dir, k * kH + j}) : 0.0;
          };
          for (std::int64_t j = 0; j < kH; ++j) {
            const double cPrev = cs[b][j];
            const double i = act(0, clip(xw[j] + hr[j] + peep(0, j) * cPrev));
            const double f =
                c.inputForget ? 1 - i
                              : act(0, clip(xw[2 * kH + j] + hr[2 * kH + j] + peep(2, j) * cPrev));
            const double cell = f * cPrev + i * act(1, clip(xw[3 * kH + j] + hr[3 * kH + j]));
            const double o = act(0, clip(xw[kH + j] + hr[kH + j] + peep(1, j) * cell));
            cs[b][j] = cell;
            hn[j] = o * act(2, cell);
          }
        }
        h[b] = hn;
        for (std::int64_t j = 0; j < kH; ++j) y.set({t, dir, b, j}, hn[j]);
      }
    }
    for (std::int64_t b = 0; b < kB; ++b)
      for (std::int64_t j = 0; j < kH; ++j) {
        yh.set({dir, b, j}, h[b][j]);
        yc.set({dir, b, j}, cs[b][j]);
      }
  }
  return {y.astype(DType::Float32), yh.astype(DType::Float32), yc.astype(DType::Float32)};
}

// The model of a case and its expected outputs (in the node's layout).
ModelBuilder recurrentModel(const RecurrentCase& c, std::vector<Tensor>& expected,
                            std::int64_t seqDim = kS) {
  const int dirs = c.direction == "bidirectional" ? 2 : 1;
  const std::int64_t G = (c.cell == "LSTM" ? 4 : c.cell == "GRU" ? 3 : 1) * kH;
  RecurrentData d{uniform({kS, kB, kI}, 1),       uniform({dirs, G, kI}, 2, 0.6),
                  uniform({dirs, G, kH}, 3, 0.6), uniform({dirs, 2 * G}, 4, 0.5),
                  uniform({dirs, kB, kH}, 5),     uniform({dirs, kB, kH}, 6),
                  uniform({dirs, 3 * kH}, 7, 0.5)};
  const bool bm = c.layout == 1;
  auto batchMajor = [&](const Tensor& t, std::vector<int> perm) {
    return bm ? t.transpose(perm).contiguous() : t;
  };
  ModelBuilder m(c.opset);
  m.input(
      "X", batchMajor(d.x, {1, 0, 2}),
      bm ? std::vector<std::int64_t>{kB, seqDim, kI} : std::vector<std::int64_t>{seqDim, kB, kI});
  m.initializer("W", d.w);
  m.initializer("R", d.r);
  std::vector<std::string> ins{"X", "W", "R", c.bias ? "B" : "", c.seqLens ? "lens" : ""};
  if (c.bias) m.initializer("B", d.b);
  if (c.seqLens) m.initializer("lens", ints(DType::Int32, {kB}, {kS, kS}));
  if (c.initialH) m.input("h0", batchMajor(d.h0, {1, 0, 2}));
  ins.push_back(c.initialH ? "h0" : "");
  if (c.cell == "LSTM") {
    if (c.initialC) m.input("c0", batchMajor(d.c0, {1, 0, 2}));
    if (c.peepholes) m.initializer("P", d.p);
    ins.push_back(c.initialC ? "c0" : "");
    ins.push_back(c.peepholes ? "P" : "");
  }
  while (ins.back().empty()) ins.pop_back();
  std::vector<std::string> outs{c.wantY ? "Y" : "", "Y_h"};
  if (c.cell == "LSTM") outs.push_back("Y_c");
  auto& n = m.node(c.cell, ins, outs);
  attrInt(n, "hidden_size", kH);
  if (c.direction != "forward") attrString(n, "direction", c.direction);
  if (c.layout) attrInt(n, "layout", c.layout);
  if (!c.activations.empty()) attrStrings(n, "activations", c.activations);
  if (!c.alphas.empty()) attrFloats(n, "activation_alpha", c.alphas);
  if (!c.betas.empty()) attrFloats(n, "activation_beta", c.betas);
  if (c.clip) attrFloat(n, "clip", *c.clip);
  if (c.inputForget) attrInt(n, "input_forget", 1);
  if (c.linearBeforeReset) attrInt(n, "linear_before_reset", 1);
  std::vector<Tensor> ref = referenceRecurrent(c, d);
  expected.clear();
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (outs[k].empty()) continue;
    m.output(outs[k], DType::Float32);
    if (!ref.empty())
      expected.push_back(k == 0 ? batchMajor(ref[0], {2, 0, 1, 3}) : batchMajor(ref[k], {1, 0, 2}));
  }
  return m;
}

// --- Pad, Resize, TopK references ----------------------------------------------------------------

// Every element of the padded tensor from its source position: out - begin, mapped into range by
// the mode (constant: the value outside; edge: clamped; reflect: mirrored without the edge).
Tensor referencePad(const Tensor& x, const std::vector<std::int64_t>& begin,
                    const std::vector<std::int64_t>& end, const std::string& mode, double value) {
  Shape shape = x.shape();
  for (std::size_t a = 0; a < shape.size(); ++a) shape[a] += begin[a] + end[a];
  Tensor out(x.dtype(), shape);
  std::vector<std::int64_t> at(shape.size()), src(shape.size());
  for (std::int64_t flat = 0; flat < shapeNumel(shape); ++flat) {
    std::int64_t rest = flat;
    bool inside = true;
    for (std::size_t a = shape.size(); a-- > 0;) {
      at[a] = rest % shape[a];
      rest /= shape[a];
      const std::int64_t n = x.shape()[a];
      std::int64_t p = at[a] - begin[a];
      if (mode == "edge") p = std::clamp<std::int64_t>(p, 0, n - 1);
      if (mode == "reflect") p = p < 0 ? -p : p >= n ? 2 * (n - 1) - p : p;
      inside = inside && p >= 0 && p < n;
      src[a] = p;
    }
    out.set(at, inside ? x.at(src) : value);
  }
  return out;
}

// Nearest resize, one axis at a time: output position o reads the input position that ONNX's
// coordinate transformation and rounding mode give, clamped to the axis.
Tensor referenceResize(const Tensor& x, const std::vector<double>& scales,
                       const std::vector<std::int64_t>& outShape, const std::string& transform,
                       const std::string& rounding) {
  Tensor cur = x;
  for (std::size_t a = 0; a < outShape.size(); ++a) {
    const std::int64_t in = cur.shape()[a], out = outShape[a];
    const float scale = static_cast<float>(scales[a]);
    std::vector<std::int64_t> src;
    for (std::int64_t o = 0; o < out; ++o) {
      const float xo = static_cast<float>(o);
      float orig = xo / scale;
      if (transform == "half_pixel") orig = (xo + 0.5f) / scale - 0.5f;
      if (transform == "pytorch_half_pixel") orig = out > 1 ? (xo + 0.5f) / scale - 0.5f : 0.0f;
      if (transform == "tf_half_pixel_for_nn") orig = (xo + 0.5f) / scale;
      if (transform == "align_corners")
        orig = out == 1 ? 0.0f : xo * float(in - 1) / float(out - 1);
      double idx = std::floor(orig);
      const double frac = orig - std::floor(orig);
      if (rounding == "ceil" || (rounding == "round_prefer_ceil" && frac >= 0.5) ||
          (rounding == "round_prefer_floor" && frac > 0.5) || (rounding == "legacy" && scale < 1))
        idx = std::ceil(orig);
      src.push_back(std::clamp<std::int64_t>(static_cast<std::int64_t>(idx), 0, in - 1));
    }
    Shape shape = cur.shape();
    shape[a] = out;
    Tensor next(cur.dtype(), shape);
    std::vector<std::int64_t> at(shape.size());
    for (std::int64_t flat = 0; flat < shapeNumel(shape); ++flat) {
      std::int64_t rest = flat;
      for (std::size_t d = shape.size(); d-- > 0;) at[d] = rest % shape[d], rest /= shape[d];
      std::vector<std::int64_t> from = at;
      from[a] = src[static_cast<std::size_t>(at[a])];
      next.set(at, cur.at(from));
    }
    cur = next;
  }
  return cur;
}

// The last axis's k largest (smallest) of a 2-d tensor by a stable sort: ties keep the lower index.
std::pair<Tensor, Tensor> referenceTopk(const Tensor& x, std::int64_t k, bool largest) {
  const std::int64_t rows = x.shape()[0], n = x.shape()[1];
  Tensor values(x.dtype(), {rows, k}), indices(DType::Int64, {rows, k});
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return largest ? x.at({r, a}) > x.at({r, b}) : x.at({r, a}) < x.at({r, b});
    });
    for (std::int64_t j = 0; j < k; ++j) {
      values.set({r, j}, x.at({r, order[static_cast<std::size_t>(j)]}));
      indices.set({r, j}, static_cast<double>(order[static_cast<std::size_t>(j)]));
    }
  }
  return {values, indices};
}

}  // namespace

Q_DECLARE_METATYPE(RecurrentCase)

class TestOnnxRnnMisc : public QObject {
  Q_OBJECT

 private slots:
  void testRecurrent_data();
  void testRecurrent();
  void testPad_data();
  void testPad();
  void testResize_data();
  void testResize();
  void testUpsampleMatchesOnnxExample();
  void testTopK();
  void testRefused_data();
  void testRefused();
};

void TestOnnxRnnMisc::testRecurrent_data() {
  QTest::addColumn<RecurrentCase>("c");
  auto row = [](const char* name, RecurrentCase c) { QTest::newRow(name) << c; };
  row("lstm forward, defaults, opset 7", {.opset = 7});
  row("lstm reverse, initial states, sequence_lens",
      {.direction = "reverse", .initialH = true, .initialC = true, .seqLens = true});
  row("lstm bidirectional, peepholes, no bias", {.direction = "bidirectional",
                                                 .bias = false,
                                                 .initialH = true,
                                                 .initialC = true,
                                                 .peepholes = true});
  row("lstm clip, input_forget", {.opset = 13, .clip = 0.3, .inputForget = true});
  row("lstm layout 1, bidirectional",
      {.opset = 14, .direction = "bidirectional", .layout = 1, .initialH = true, .initialC = true});
  row("lstm activations, both directions",
      {.direction = "bidirectional",
       .activations = {"HardSigmoid", "LeakyRelu", "Softsign", "sigmoid", "Elu", "ScaledTanh"},
       .alphas = {0.3, 0.1, 0.7, 1.2},
       .betas = {0.4, 0.9}});
  row("lstm only Y_h, opset 18", {.opset = 18, .peepholes = true, .wantY = false});
  row("gru forward, opset 7", {.cell = "GRU", .opset = 7});
  row("gru linear_before_reset, bidirectional",
      {.cell = "GRU", .direction = "bidirectional", .initialH = true, .linearBeforeReset = true});
  row("gru reverse, clip, no bias",
      {.cell = "GRU", .direction = "reverse", .bias = false, .clip = 0.5});
  row("gru layout 1, activations", {.cell = "GRU",
                                    .opset = 17,
                                    .layout = 1,
                                    .initialH = true,
                                    .activations = {"Relu", "Softplus"}});
  row("rnn forward", {.cell = "RNN", .opset = 9});
  row("rnn bidirectional relu + affine", {.cell = "RNN",
                                          .direction = "bidirectional",
                                          .initialH = true,
                                          .activations = {"Relu", "Affine"},
                                          .alphas = {0.5},
                                          .betas = {0.25}});
  row("rnn reverse, thresholded relu, layout 1", {.cell = "RNN",
                                                  .direction = "reverse",
                                                  .layout = 1,
                                                  .activations = {"ThresholdedRelu"},
                                                  .alphas = {0.1}});
}

void TestOnnxRnnMisc::testRecurrent() {
  QFETCH(RecurrentCase, c);
  std::vector<Tensor> expected;
  const ModelBuilder m = recurrentModel(c, expected);
  checkModel(m, expected);
}

void TestOnnxRnnMisc::testPad_data() {
  QTest::addColumn<int>("opset");
  QTest::addColumn<QString>("mode");
  QTest::addColumn<QVector<qint64>>("shape");
  QTest::addColumn<QVector<qint64>>("pads");  // begins then ends, for every axis (or `axes`)
  QTest::addColumn<QVector<qint64>>("axes");  // opset 18's axes input; empty: none
  QTest::addColumn<double>("value");
  QTest::addColumn<bool>("int64");
  QTest::addColumn<bool>("symbolicFirst");  // axis 0 of the input is a symbolic dim
  QTest::newRow("opset 7 attribute, value")
      << 7 << "constant" << QVector<qint64>{3, 4} << QVector<qint64>{1, 0, 2, 1}
      << QVector<qint64>{} << 1.5 << false << false;
  QTest::newRow("opset 11 constant input, 3-d")
      << 11 << "constant" << QVector<qint64>{2, 3, 4} << QVector<qint64>{0, 1, 2, 1, 0, 3}
      << QVector<qint64>{} << -2.0 << false << false;
  QTest::newRow("opset 13 crop and pad")
      << 13 << "constant" << QVector<qint64>{4, 5} << QVector<qint64>{-1, 2, 1, -2}
      << QVector<qint64>{} << 0.0 << false << false;
  QTest::newRow("opset 11 reflect")
      << 11 << "reflect" << QVector<qint64>{3, 4} << QVector<qint64>{2, 1, 2, 3}
      << QVector<qint64>{} << 0.0 << false << false;
  QTest::newRow("opset 13 edge, 3-d")
      << 13 << "edge" << QVector<qint64>{2, 3, 2} << QVector<qint64>{1, 0, 2, 0, 3, 1}
      << QVector<qint64>{} << 0.0 << false << false;
  QTest::newRow("opset 11 edge with a crop")
      << 11 << "edge" << QVector<qint64>{3, 5} << QVector<qint64>{2, -1, 0, 2} << QVector<qint64>{}
      << 0.0 << false << false;
  QTest::newRow("opset 18 axes, reflect")
      << 18 << "reflect" << QVector<qint64>{2, 3, 4} << QVector<qint64>{1, 2, 2, 0}
      << QVector<qint64>{-1, 1} << 0.0 << false << false;
  QTest::newRow("opset 11 int64 constant")
      << 11 << "constant" << QVector<qint64>{2, 3} << QVector<qint64>{1, 1, 0, 2}
      << QVector<qint64>{} << 7.0 << true << false;
  QTest::newRow("symbolic axis, constant")
      << 13 << "constant" << QVector<qint64>{3, 2} << QVector<qint64>{2, 1, 1, 0}
      << QVector<qint64>{} << 0.5 << false << true;
  QTest::newRow("symbolic axis, edge")
      << 13 << "edge" << QVector<qint64>{3, 2} << QVector<qint64>{0, 2, 0, 1} << QVector<qint64>{}
      << 0.0 << false << true;
}

void TestOnnxRnnMisc::testPad() {
  QFETCH(int, opset);
  QFETCH(QString, mode);
  QFETCH(QVector<qint64>, shape);
  QFETCH(QVector<qint64>, pads);
  QFETCH(QVector<qint64>, axes);
  QFETCH(double, value);
  QFETCH(bool, int64);
  QFETCH(bool, symbolicFirst);
  const Shape xShape(shape.begin(), shape.end());
  const int rank = static_cast<int>(xShape.size());
  Tensor x = uniform(xShape, 11, 5.0);
  if (int64) x = x.astype(DType::Int64);
  std::vector<std::int64_t> begin(rank, 0), end(rank, 0);
  const std::vector<std::int64_t> padList(pads.begin(), pads.end());
  std::vector<int> padAxes;
  for (qint64 a : axes) padAxes.push_back(static_cast<int>(a < 0 ? a + rank : a));
  if (padAxes.empty())
    for (int a = 0; a < rank; ++a) padAxes.push_back(a);
  for (std::size_t i = 0; i < padAxes.size(); ++i) {
    begin[padAxes[i]] = padList[i];
    end[padAxes[i]] = padList[padAxes.size() + i];
  }
  ModelBuilder m(opset);
  std::vector<std::int64_t> dims = xShape;
  if (symbolicFirst) dims[0] = kUnknownDim;
  m.input("x", x, dims);
  std::vector<std::string> ins{"x"};
  if (opset >= 11) {
    m.initializer("pads", ints(DType::Int64, {static_cast<std::int64_t>(padList.size())}, padList));
    m.initializer("value", Tensor::scalar(x.dtype(), value));
    ins.push_back("pads");
    ins.push_back(mode == "constant" ? "value" : "");
    if (!axes.empty()) {
      m.initializer("axes", ints(DType::Int64, {axes.size()},
                                 std::vector<std::int64_t>(axes.begin(), axes.end())));
      ins.push_back("axes");
    }
    while (ins.back().empty()) ins.pop_back();
  }
  auto& n = m.node("Pad", ins, {"y"});
  if (mode != "constant") attrString(n, "mode", mode.toStdString());
  if (opset < 11) {
    attrInts(n, "pads", padList);
    attrFloat(n, "value", value);
  }
  m.output("y", x.dtype());
  checkModel(m, {referencePad(x, begin, end, mode.toStdString(), value)});
}

void TestOnnxRnnMisc::testResize_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<int>("opset");
  QTest::addColumn<QVector<double>>("scales");  // empty: sizes
  QTest::addColumn<QVector<qint64>>("sizes");
  QTest::addColumn<QString>("transform");
  QTest::addColumn<QString>("rounding");      // nearest_mode, or "legacy" (Upsample, Resize-10)
  QTest::addColumn<QVector<qint64>>("axes");  // opset 18's axes attribute
  const QVector<qint64> none;
  QTest::newRow("upsample 7 attribute")
      << "Upsample" << 7 << QVector<double>{1, 1, 2, 3} << none << "asymmetric"
      << "legacy" << none;
  QTest::newRow("upsample 9 input")
      << "Upsample" << 9 << QVector<double>{1, 2, 1.5, 2} << none << "asymmetric"
      << "legacy" << none;
  QTest::newRow("resize 10 downsample")
      << "Resize" << 10 << QVector<double>{1, 1, 0.6, 0.8} << none << "asymmetric"
      << "legacy" << none;
  QTest::newRow("half_pixel round_prefer_floor")
      << "Resize" << 11 << QVector<double>{1, 1, 1.5, 0.75} << none << "half_pixel"
      << "round_prefer_floor" << none;
  QTest::newRow("asymmetric floor sizes")
      << "Resize" << 13 << QVector<double>{} << QVector<qint64>{2, 3, 7, 3} << "asymmetric"
      << "floor" << none;
  QTest::newRow("align_corners round_prefer_ceil")
      << "Resize" << 13 << QVector<double>{} << QVector<qint64>{2, 3, 5, 9} << "align_corners"
      << "round_prefer_ceil" << none;
  QTest::newRow("pytorch_half_pixel ceil")
      << "Resize" << 13 << QVector<double>{1, 1, 2.5, 1} << none << "pytorch_half_pixel"
      << "ceil" << none;
  QTest::newRow("tf_half_pixel_for_nn, to one row")
      << "Resize" << 11 << QVector<double>{} << QVector<qint64>{2, 3, 1, 6}
      << "tf_half_pixel_for_nn"
      << "round_prefer_floor" << none;
  QTest::newRow("opset 18 axes, sizes")
      << "Resize" << 18 << QVector<double>{} << QVector<qint64>{6, 2} << "half_pixel"
      << "round_prefer_ceil" << QVector<qint64>{2, -1};
}

void TestOnnxRnnMisc::testResize() {
  QFETCH(QString, op);
  QFETCH(int, opset);
  QFETCH(QVector<double>, scales);
  QFETCH(QVector<qint64>, sizes);
  QFETCH(QString, transform);
  QFETCH(QString, rounding);
  QFETCH(QVector<qint64>, axes);
  const Tensor x = uniform({2, 3, 4, 5}, 21);
  // The scale and output size of every axis.
  std::vector<double> allScales(4, 1.0);
  std::vector<std::int64_t> outShape = x.shape();
  std::vector<int> named;
  for (qint64 a : axes) named.push_back(static_cast<int>(a < 0 ? a + 4 : a));
  if (named.empty()) named = {0, 1, 2, 3};
  for (std::size_t k = 0; k < named.size(); ++k) {
    const auto a = static_cast<std::size_t>(named[k]);
    if (!scales.empty()) {
      allScales[a] = scales[static_cast<qsizetype>(k)];
      outShape[a] = static_cast<std::int64_t>(static_cast<float>(allScales[a]) *
                                              static_cast<float>(x.shape()[a]));
    } else {
      outShape[a] = sizes[static_cast<qsizetype>(k)];
      allScales[a] = static_cast<float>(outShape[a]) / static_cast<float>(x.shape()[a]);
    }
  }
  ModelBuilder m(opset);
  // A symbolic batch where the node leaves it alone (sizes name every axis's size, so need them).
  if (!scales.empty() || !axes.empty())
    m.input("x", x, {kUnknownDim, 3, 4, 5});
  else
    m.input("x", x);
  const std::vector<double> given(scales.begin(), scales.end());
  auto floats = [](const std::vector<double>& v) {
    return Tensor::fromDoubles(DType::Float32, {static_cast<std::int64_t>(v.size())}, v);
  };
  std::vector<std::string> ins{"x"};
  if (op == "Upsample" && opset < 9) {
    // scales is an attribute
  } else if (op == "Upsample" || opset < 11) {
    m.initializer("scales", floats(given));
    ins.push_back("scales");
  } else {
    m.initializer("roi", floats({}));
    ins.push_back(opset >= 13 ? "" : "roi");
    if (!given.empty()) {
      m.initializer("scales", floats(given));
      ins.push_back("scales");
    } else {
      m.initializer("scales", floats({}));
      m.initializer("sizes", ints(DType::Int64, {sizes.size()},
                                  std::vector<std::int64_t>(sizes.begin(), sizes.end())));
      ins.push_back(opset >= 13 ? "" : "scales");
      ins.push_back("sizes");
    }
  }
  auto& n = m.node(op.toStdString(), ins, {"y"});
  attrString(n, "mode", "nearest");
  if (op == "Upsample" && opset < 9) attrFloats(n, "scales", given);
  if (rounding != "legacy") {
    attrString(n, "coordinate_transformation_mode", transform.toStdString());
    attrString(n, "nearest_mode", rounding.toStdString());
  }
  if (!axes.empty()) attrInts(n, "axes", std::vector<std::int64_t>(axes.begin(), axes.end()));
  m.output("y", DType::Float32);
  // One gather node (Note [Nearest resize as a gather]).
  const Tensor expected =
      referenceResize(x, allScales, outShape, transform.toStdString(), rounding.toStdString());
  checkModel(m, {expected}, "AdvancedSubtensor");
}

void TestOnnxRnnMisc::testUpsampleMatchesOnnxExample() {
  // ONNX's own example (Upsample, nearest, scales 1, 1, 2, 3): pins the reference above too.
  ModelBuilder m(9);
  m.input("x", Tensor::fromDoubles(DType::Float32, {1, 1, 2, 2}, {1, 2, 3, 4}));
  m.initializer("scales", Tensor::fromDoubles(DType::Float32, {4}, {1, 1, 2, 3}));
  attrString(m.node("Upsample", {"x", "scales"}, {"y"}), "mode", "nearest");
  m.output("y", DType::Float32);
  checkModel(
      m, {Tensor::fromDoubles(DType::Float32, {1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                             3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4})});
}

void TestOnnxRnnMisc::testTopK() {
  // Few distinct values, so ties must keep the lower index first.
  const Tensor x = uniform({4, 7}, 31, 3.0).astype(DType::Int64).astype(DType::Float32);
  for (int opset : {7, 10, 11}) {  // TopK-1 (k an attribute), TopK-10 (k an input), TopK-11
    for (bool largest : {true, false}) {
      if (!largest && opset < 11) continue;
      for (bool onAxis0 : {false, true}) {
        const Tensor input = onAxis0 ? x.transpose().contiguous() : x;
        ModelBuilder m(opset);
        m.input("x", input);
        std::vector<std::string> ins{"x"};
        if (opset >= 10) {
          m.initializer("k", ints(DType::Int64, {1}, {3}));
          ins.push_back("k");
        }
        auto& n = m.node("TopK", ins, {"values", "indices"});
        if (opset < 10) attrInt(n, "k", 3);
        if (onAxis0) attrInt(n, "axis", 0);
        if (!largest) attrInt(n, "largest", 0);
        m.output("values", DType::Float32);
        m.output("indices", DType::Int64);
        auto [values, indices] = referenceTopk(x, 3, largest);
        if (onAxis0) {
          values = values.transpose().contiguous();
          indices = indices.transpose().contiguous();
        }
        checkModel(m, {values, indices}, "TopK", 0, 0);
      }
    }
  }
}

void TestOnnxRnnMisc::testRefused_data() {
  QTest::addColumn<QString>("what");
  QTest::addColumn<QString>("expected");
  QTest::newRow("lstm dynamic sequence")
      << "lstm dynamic"
      << "LSTM with a dynamic sequence length is not supported yet";
  QTest::newRow("gru short sequence_lens")
      << "gru lens"
      << "GRU with sequence_lens other than the sequence length";
  QTest::newRow("rnn unknown activation") << "rnn activation"
                                          << "RNN activation 'Swish' is not supported yet";
  QTest::newRow("lstm activation count") << "lstm activations"
                                         << "expected 3 names, found 2";
  QTest::newRow("resize antialias") << "resize antialias"
                                    << "Resize with antialias = 1 is not supported yet";
  QTest::newRow("resize unknown mode")
      << "resize area"
      << "attribute 'mode': expected nearest, linear or cubic, found 'area'";
  QTest::newRow("resize crop without roi")
      << "resize crop"
      << "tf_crop_and_resize: expected the roi input, found none";
  QTest::newRow("resize dynamic axis") << "resize dynamic"
                                       << "Resize of an axis whose size is not static (axis 0)";
  QTest::newRow("pad wrap") << "pad wrap"
                            << "Pad mode 'wrap' is not supported yet";
  QTest::newRow("pad reflect too far") << "pad reflect"
                                       << "expected each smaller than the axis size 3";
  QTest::newRow("pad pads count") << "pad count"
                                  << "pads: expected 4 values";
  // TopK with k computed at run time is no longer refused: tst_onnx_node runs it (Note [Run-time
  // ONNX values]).
  QTest::newRow("topk k too large") << "topk large"
                                    << "k = 9 is larger than axis 1 of size 7";
}

void TestOnnxRnnMisc::testRefused() {
  QFETCH(QString, what);
  QFETCH(QString, expected);
  const std::string w = what.toStdString();
  std::vector<Tensor> unused;
  if (w == "lstm dynamic")
    return checkRefused(recurrentModel({}, unused, kUnknownDim), expected.toStdString());
  if (w == "lstm activations")
    return checkRefused(recurrentModel({.activations = {"Tanh", "Tanh"}}, unused),
                        expected.toStdString());
  if (w == "rnn activation")
    return checkRefused(recurrentModel({.cell = "RNN", .activations = {"Swish"}}, unused),
                        expected.toStdString());
  if (w == "gru lens") {
    // sequence_lens shorter than the sequence for one batch entry.
    ModelBuilder m = recurrentModel({.cell = "GRU", .seqLens = true}, unused);
    ::onnx::ModelProto proto;
    proto.ParseFromString(m.bytes());
    for (auto& init : *proto.mutable_graph()->mutable_initializer())
      if (init.name() == "lens") init.set_raw_data(std::string("\x03\0\0\0\x02\0\0\0", 8));
    try {
      readOnnx(proto.SerializeAsString(), "bad.onnx");
      QFAIL("the model imported");
    } catch (const OnnxError& e) {
      QVERIFY2(std::string(e.what()).find(expected.toStdString()) != std::string::npos, e.what());
    }
    return;
  }
  // x (2, 7); for the reflect row (2, 3), too narrow for a reflect pad of 3.
  const Tensor x = uniform({2, w == "pad reflect" ? 3 : 7}, 41);
  ModelBuilder m(w == "pad wrap" || w == "resize antialias" ? 18 : 13);
  m.input("x", x,
          w == "resize dynamic" ? std::vector<std::int64_t>{kUnknownDim, 7}
                                : std::vector<std::int64_t>{});
  if (w.rfind("resize", 0) == 0) {
    m.initializer("scales", Tensor::fromDoubles(DType::Float32, {2}, {2, 1}));
    auto& n = m.node("Resize", {"x", "", "scales"}, {"y"});
    attrString(n, "mode",
               w == "resize antialias" ? "linear"
               : w == "resize area"    ? "area"
                                       : "nearest");
    if (w == "resize antialias") attrInt(n, "antialias", 1);
    if (w == "resize crop") attrString(n, "coordinate_transformation_mode", "tf_crop_and_resize");
  } else if (w.rfind("pad", 0) == 0) {
    const std::vector<std::int64_t> pads =
        w == "pad count" ? std::vector<std::int64_t>{1, 1} : std::vector<std::int64_t>{0, 3, 0, 0};
    m.initializer("pads", ints(DType::Int64, {static_cast<std::int64_t>(pads.size())}, pads));
    attrString(m.node("Pad", {"x", "pads"}, {"y"}), "mode", w == "pad wrap" ? "wrap" : "reflect");
  } else {
    m.initializer("k", ints(DType::Int64, {1}, {9}));
    m.node("TopK", {"x", "k"}, {"y", "i"});
    m.output("i", DType::Int64);
  }
  m.output("y", DType::Float32);
  checkRefused(m, expected.toStdString());
}

TSCOPE_TEST_MAIN(TestOnnxRnnMisc)
#include "tst_onnx_rnn_misc.moc"
