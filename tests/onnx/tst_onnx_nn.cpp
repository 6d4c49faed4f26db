// The converters of the windowed neural-network ops (Conv, ConvTranspose, MaxPool, AveragePool,
// the global pools, LRN): tiny models built with onnx_builder.h, imported, run in modes none and
// fast_run and compared with naive references written below (an N-d convolution, a scatter-add
// transposed convolution, an N-d pool with ONNX's rounding and divisors), one row per variant:
// 1/2/3-d, groups, dilation, stride, asymmetric and auto pads, ceil mode, count_include_pad,
// output_padding / output_shape, dynamic sizes, opsets. Rows that name an engine op check that the
// ONNX node became exactly one such node (the direct mapping). Error rows check that what is not
// supported says so. MatMul, Gemm, Softmax and the normalizations: tst_onnx_nn_dense.cpp.
#include "onnx_builder.h"
#include "test_main.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace tscope::engine;
using namespace tscope::test::onnx;

namespace {

// --- Naive references ----------------------------------------------------------------------------

Shape tail(const Shape& s, std::size_t from) {
  return Shape(s.begin() + static_cast<long>(from), s.end());
}
std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(std::floor(double(a) / double(b)));
}
std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(std::ceil(double(a) / double(b)));
}

// Per spatial axis: strides, dilations and pads (begin..., end...) as ONNX lists them.
struct Geometry {
  Ints strides, dilations, pads;
  std::int64_t stride(std::size_t i) const { return strides.empty() ? 1 : strides[i]; }
  std::int64_t dilation(std::size_t i) const { return dilations.empty() ? 1 : dilations[i]; }
  std::int64_t padBegin(std::size_t i) const { return pads.empty() ? 0 : pads[i]; }
  std::int64_t padEnd(std::size_t i) const { return pads.empty() ? 0 : pads[i + pads.size() / 2]; }
};

// y[n, o, p] = b[o] + sum_{c in o's group, k} x[n, c, p * s - pb + k * d] w[o, c, k].
Tensor refConv(const Tensor& x, const Tensor& w, const Tensor* b, const Geometry& g,
               std::int64_t group) {
  const std::size_t ns = static_cast<std::size_t>(x.ndim() - 2);
  const Shape kernel = tail(w.shape(), 2);
  Shape out{x.shape()[0], w.shape()[0]};
  for (std::size_t i = 0; i < ns; ++i)
    out.push_back(floorDiv(x.shape()[i + 2] + g.padBegin(i) + g.padEnd(i) -
                               g.dilation(i) * (kernel[i] - 1) - 1,
                           g.stride(i)) +
                  1);
  Tensor y(DType::Float64, out);
  const std::int64_t cg = w.shape()[1], og = w.shape()[0] / group;
  forEachIndex(out, [&](const Shape& o) {
    double acc = b ? b->at({o[1]}) : 0.0;
    for (std::int64_t c = 0; c < cg; ++c)
      forEachIndex(kernel, [&](const Shape& k) {
        Shape xi{o[0], (o[1] / og) * cg + c};
        for (std::size_t i = 0; i < ns; ++i) {
          const std::int64_t p = o[i + 2] * g.stride(i) - g.padBegin(i) + k[i] * g.dilation(i);
          if (p < 0 || p >= x.shape()[i + 2]) return;
          xi.push_back(p);
        }
        acc += x.at(xi) * w.at(cat({o[1], c}, k));
      });
    y.set(o, acc);
  });
  return y.astype(x.dtype());
}

// y[n, g * Cout/g + co, i * s + k * d - pb] += x[n, ci, i] w[ci, co, k] (ci in group g), for the
// output sizes given.
Tensor refConvTranspose(const Tensor& x, const Tensor& w, const Tensor* b, const Geometry& g,
                        std::int64_t group, const Shape& outSpatial) {
  const std::size_t ns = static_cast<std::size_t>(x.ndim() - 2);
  const Shape kernel = tail(w.shape(), 2);
  const std::int64_t coutg = w.shape()[1], cinPerGroup = x.shape()[1] / group;
  Tensor y(DType::Float64, cat({x.shape()[0], coutg * group}, outSpatial));
  forEachIndex(x.shape(), [&](const Shape& xi) {
    for (std::int64_t co = 0; co < coutg; ++co)
      forEachIndex(kernel, [&](const Shape& k) {
        Shape yi{xi[0], (xi[1] / cinPerGroup) * coutg + co};
        for (std::size_t i = 0; i < ns; ++i) {
          const std::int64_t p = xi[i + 2] * g.stride(i) + k[i] * g.dilation(i) - g.padBegin(i);
          if (p < 0 || p >= outSpatial[i]) return;
          yi.push_back(p);
        }
        y.set(yi, y.at(yi) + x.at(xi) * w.at(cat({xi[1], co}, k)));
      });
  });
  if (b) forEachIndex(y.shape(), [&](const Shape& i) { y.set(i, y.at(i) + b->at({i[1]})); });
  return y.astype(x.dtype());
}

// ONNX pooling: output floor/ceil((in + pads - extent) / s) + 1, a ceil-mode window starting in
// the end padding dropped; max over the image; average over the image, divided by the window's
// positions inside the padded input (include_pad) or inside the image.
Tensor refPool(const Tensor& x, const Shape& kernel, const Geometry& g, bool ceilMode,
               bool includePad, bool takeMax) {
  const std::size_t ns = kernel.size();
  Shape out{x.shape()[0], x.shape()[1]};
  for (std::size_t i = 0; i < ns; ++i) {
    const std::int64_t in = x.shape()[i + 2];
    const std::int64_t span =
        in + g.padBegin(i) + g.padEnd(i) - g.dilation(i) * (kernel[i] - 1) - 1;
    std::int64_t o = (ceilMode ? ceilDiv(span, g.stride(i)) : floorDiv(span, g.stride(i))) + 1;
    if (ceilMode && (o - 1) * g.stride(i) >= in + g.padBegin(i)) --o;
    out.push_back(o);
  }
  Tensor y(DType::Float64, out);
  forEachIndex(out, [&](const Shape& o) {
    double best = -std::numeric_limits<double>::infinity(), sum = 0, count = 0;
    forEachIndex(kernel, [&](const Shape& k) {
      Shape xi{o[0], o[1]};
      bool image = true, padded = true;
      for (std::size_t i = 0; i < ns; ++i) {
        const std::int64_t p = o[i + 2] * g.stride(i) - g.padBegin(i) + k[i] * g.dilation(i);
        image = image && p >= 0 && p < x.shape()[i + 2];
        padded = padded && p < x.shape()[i + 2] + g.padEnd(i);
        xi.push_back(p);
      }
      if (image) best = std::max(best, x.at(xi)), sum += x.at(xi);
      count += (includePad ? padded : image) ? 1 : 0;
    });
    y.set(o, takeMax ? best : sum / count);
  });
  return y.astype(x.dtype());
}

// --- Windowed-op cases ---------------------------------------------------------------------------

// The rows below are designated initializers that leave most fields at their defaults, which
// GCC 12 reports under -Wextra.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

struct WindowCase {
  std::string op;       // Conv, ConvTranspose, MaxPool, AveragePool
  Shape x, w;           // w: the filters (convolutions)
  Ints kernel;          // kernel_shape (pools)
  Geometry attrs;       // the attributes written (empty lists: omitted)
  std::string autoPad;  // empty: omitted
  Ints refPads;         // the pads the reference uses (empty: attrs.pads)
  std::int64_t group = 1;
  bool bias = false;
  Ints outputPadding, outputShape;  // ConvTranspose
  bool ceilMode = false, includePad = false;
  bool dynamic = false;  // N and the spatial sizes symbolic in the model
  DType dtype = DType::Float32;
  std::string directOp;  // the one engine node expected, or empty
  int opset = 13;
  Ints declaredOutput;  // the graph output's shape as an exporter declares it (empty: none)
};

}  // namespace

Q_DECLARE_METATYPE(WindowCase)

namespace {

void runWindowCase(const WindowCase& c) {
  ModelBuilder m(c.opset);
  const Tensor x = randomTensor(c.x, 1, c.dtype);
  Ints dims = c.x;
  if (c.dynamic)
    for (std::size_t i = 0; i < dims.size(); ++i) dims[i] = i == 1 ? dims[i] : kUnknownDim;
  m.input("x", x, dims);
  std::vector<std::string> ins{"x"};
  const bool conv = c.op == "Conv" || c.op == "ConvTranspose";
  const Tensor w = randomTensor(conv ? c.w : Shape{1}, 2, c.dtype);
  const std::int64_t outChannels = !conv ? 1 : c.op == "Conv" ? c.w[0] : c.w[1] * c.group;
  const Tensor b = randomTensor({outChannels}, 3, c.dtype);
  if (conv) m.initializer("w", w), ins.push_back("w");
  if (c.bias) m.initializer("b", b), ins.push_back("b");
  auto& n = m.node(c.op, ins, {"y"});
  attrInts(n, "kernel_shape", c.kernel);
  attrInts(n, "strides", c.attrs.strides);
  attrInts(n, "dilations", c.attrs.dilations);
  attrInts(n, "pads", c.attrs.pads);
  attrInts(n, "output_padding", c.outputPadding);
  attrInts(n, "output_shape", c.outputShape);
  if (!c.autoPad.empty()) attrString(n, "auto_pad", c.autoPad);
  if (c.group != 1) attrInt(n, "group", c.group);
  if (c.ceilMode) attrInt(n, "ceil_mode", 1);
  if (c.includePad) attrInt(n, "count_include_pad", 1);
  m.output("y", c.dtype, c.declaredOutput);

  Geometry g = c.attrs;
  if (!c.refPads.empty()) g.pads = c.refPads;
  const Tensor* bias = c.bias ? &b : nullptr;
  Tensor expected;
  if (c.op == "Conv") {
    expected = refConv(x, w, bias, g, c.group);
  } else if (c.op == "ConvTranspose") {
    Shape out;
    for (std::size_t i = 0; i + 2 < c.x.size(); ++i)
      out.push_back(g.stride(i) * (c.x[i + 2] - 1) +
                    (c.outputPadding.empty() ? 0 : c.outputPadding[i]) +
                    g.dilation(i) * (c.w[i + 2] - 1) + 1 - g.padBegin(i) - g.padEnd(i));
    expected = refConvTranspose(x, w, bias, g, c.group, out);
  } else {
    expected = refPool(x, c.kernel, g, c.ceilMode, c.includePad, c.op == "MaxPool");
  }
  checkModel(m, {expected}, c.directOp, c.dtype == DType::Float64 ? 1e-9 : 1e-4);
}

void addRow(const char* name, WindowCase c) {
  QTest::newRow(name) << c;
}

}  // namespace

class TestOnnxNn : public QObject {
  Q_OBJECT

 private slots:
  void testConv_data();
  void testConv() {
    QFETCH(WindowCase, c);
    runWindowCase(c);
  }
  void testConvTranspose_data();
  void testConvTranspose() {
    QFETCH(WindowCase, c);
    runWindowCase(c);
  }
  void testPool_data();
  void testPool() {
    QFETCH(WindowCase, c);
    runWindowCase(c);
  }
  void testPyTorchLayersNeedNoPadding();
  void testGlobalPool();
  void testLrn();
  void testRefused_data();
  void testRefused();
};

// One variant per row reads best as a table.
// clang-format off
void TestOnnxNn::testConv_data() {
  QTest::addColumn<WindowCase>("c");
  addRow("1d stride asymmetric pads bias", {.op = "Conv", .x = {2, 3, 9}, .w = {4, 3, 3},
         .attrs = {.strides = {2}, .pads = {1, 2}}, .bias = true, .directOp = "Conv2d"});
  addRow("1d groups dilation", {.op = "Conv", .x = {1, 6, 10}, .w = {6, 2, 3},
         .attrs = {.dilations = {2}}, .group = 3});
  addRow("2d pytorch", {.op = "Conv", .x = {2, 3, 7, 6}, .w = {4, 3, 3, 2},
         .attrs = {.strides = {1, 1}, .pads = {1, 0, 1, 0}}, .bias = true, .directOp = "Conv2d"});
  addRow("2d asymmetric pads stride", {.op = "Conv", .x = {1, 2, 7, 8}, .w = {3, 2, 3, 3},
         .attrs = {.strides = {2, 1}, .pads = {0, 1, 2, 1}}, .directOp = "Conv2d"});
  addRow("2d groups dilation stride", {.op = "Conv", .x = {1, 4, 9, 8}, .w = {6, 2, 3, 3},
         .attrs = {.strides = {1, 2}, .dilations = {2, 1}, .pads = {1, 1, 1, 1}}, .group = 2, .bias = true});
  addRow("2d depthwise", {.op = "Conv", .x = {2, 4, 5, 5}, .w = {4, 1, 3, 3},
         .attrs = {.pads = {1, 1, 1, 1}}, .group = 4});
  // H: out ceil(7/2) = 4, total 3*2 + 3 - 7 = 2; W: out 3, total 2*2 + 3 - 6 = 1 (odd).
  addRow("2d SAME_UPPER", {.op = "Conv", .x = {1, 2, 7, 6}, .w = {3, 2, 3, 3},
         .attrs = {.strides = {2, 2}}, .autoPad = "SAME_UPPER", .refPads = {1, 0, 1, 1}});
  addRow("2d SAME_LOWER", {.op = "Conv", .x = {1, 2, 7, 6}, .w = {3, 2, 3, 3},
         .attrs = {.strides = {2, 2}}, .autoPad = "SAME_LOWER", .refPads = {1, 1, 1, 0}});
  addRow("2d VALID", {.op = "Conv", .x = {1, 2, 6, 7}, .w = {2, 2, 3, 3},
         .attrs = {.strides = {2, 2}}, .autoPad = "VALID"});
  addRow("2d dynamic asymmetric", {.op = "Conv", .x = {2, 3, 7, 6}, .w = {4, 3, 3, 3},
         .attrs = {.strides = {2, 1}, .pads = {2, 0, 1, 1}}, .dynamic = true, .directOp = "Conv2d"});
  addRow("2d float64 opset 7", {.op = "Conv", .x = {1, 2, 5, 5}, .w = {2, 2, 3, 3},
         .attrs = {.pads = {1, 1, 1, 1}}, .bias = true, .dtype = DType::Float64, .opset = 7});
  addRow("3d stride asymmetric pads bias", {.op = "Conv", .x = {2, 3, 5, 6, 4}, .w = {4, 3, 3, 2, 2},
         .attrs = {.strides = {2, 1, 2}, .pads = {1, 0, 1, 1, 1, 0}}, .bias = true, .directOp = "Conv2d"});
  addRow("3d groups dilation", {.op = "Conv", .x = {1, 4, 7, 5, 5}, .w = {4, 2, 2, 3, 3},
         .attrs = {.strides = {1, 2, 1}, .dilations = {2, 1, 2}, .pads = {0, 1, 1, 1, 0, 1}}, .group = 2});
  // D: out 2, total 2 + 3 - 4 = 1; H: out 3, total 4 + 3 - 5 = 2; W: out 3, total 2 + 2 - 3 = 1.
  addRow("3d SAME_UPPER", {.op = "Conv", .x = {1, 2, 4, 5, 3}, .w = {2, 2, 3, 3, 2},
         .attrs = {.strides = {2, 2, 1}}, .autoPad = "SAME_UPPER", .refPads = {0, 1, 0, 1, 1, 1}});
  addRow("3d one depth tap", {.op = "Conv", .x = {2, 2, 3, 4, 4}, .w = {3, 2, 1, 3, 3},
         .attrs = {.pads = {0, 1, 1, 0, 1, 1}}, .directOp = "Conv2d"});
}

void TestOnnxNn::testConvTranspose_data() {
  QTest::addColumn<WindowCase>("c");
  addRow("1d output_padding bias", {.op = "ConvTranspose", .x = {2, 3, 5}, .w = {3, 2, 3},
         .attrs = {.strides = {2}, .pads = {1, 1}}, .bias = true, .outputPadding = {1},
         .directOp = "Conv2dGradInputs"});
  addRow("2d pytorch", {.op = "ConvTranspose", .x = {1, 4, 4, 5}, .w = {4, 3, 3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .bias = true, .outputPadding = {1, 1},
         .directOp = "Conv2dGradInputs"});
  addRow("2d asymmetric pads", {.op = "ConvTranspose", .x = {1, 2, 3, 4}, .w = {2, 3, 3, 2},
         .attrs = {.strides = {2, 3}, .pads = {0, 2, 1, 0}}, .directOp = "Conv2dGradInputs"});
  addRow("2d groups dilation", {.op = "ConvTranspose", .x = {2, 4, 3, 4}, .w = {4, 2, 2, 3},
         .attrs = {.strides = {1, 2}, .dilations = {2, 1}}, .group = 2});
  // ONNX's own test_convtranspose_output_shape: full 9 x 7, total -1 each: one zero row/column
  // at the end.
  addRow("2d output_shape", {.op = "ConvTranspose", .x = {1, 1, 3, 3}, .w = {1, 2, 3, 3},
         .attrs = {.strides = {3, 2}}, .refPads = {0, 0, -1, -1}, .outputShape = {10, 8}});
  // out 6, full 2*2 + 3 = 7, total 1: SAME_UPPER puts it at the end.
  addRow("2d SAME_UPPER", {.op = "ConvTranspose", .x = {1, 2, 3, 3}, .w = {2, 2, 3, 3},
         .attrs = {.strides = {2, 2}}, .autoPad = "SAME_UPPER", .refPads = {0, 0, 1, 1}});
  addRow("2d SAME_LOWER", {.op = "ConvTranspose", .x = {1, 2, 3, 3}, .w = {2, 2, 3, 3},
         .attrs = {.strides = {2, 2}}, .autoPad = "SAME_LOWER", .refPads = {1, 1, 0, 0}});
  addRow("2d dynamic", {.op = "ConvTranspose", .x = {2, 3, 4, 4}, .w = {3, 2, 3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .outputPadding = {1, 1}, .dynamic = true,
         .directOp = "Conv2dGradInputs"});
  addRow("2d dynamic asymmetric", {.op = "ConvTranspose", .x = {1, 2, 3, 4}, .w = {2, 2, 3, 3},
         .attrs = {.strides = {2, 2}, .pads = {2, 0, 0, 1}}, .dynamic = true});
  addRow("2d float64", {.op = "ConvTranspose", .x = {1, 2, 3, 3}, .w = {2, 2, 2, 2},
         .attrs = {.strides = {2, 1}}, .bias = true, .dtype = DType::Float64});
  addRow("3d output_padding bias", {.op = "ConvTranspose", .x = {1, 2, 3, 4, 3}, .w = {2, 3, 3, 2, 2},
         .attrs = {.strides = {2, 1, 2}, .pads = {1, 0, 0, 0, 1, 1}}, .bias = true,
         .outputPadding = {1, 0, 1}, .directOp = "Conv2dGradInputs"});
  addRow("3d groups dilation", {.op = "ConvTranspose", .x = {1, 4, 2, 3, 3}, .w = {4, 1, 2, 2, 2},
         .attrs = {.strides = {1, 2, 1}, .dilations = {2, 1, 1}}, .group = 2});
}

void TestOnnxNn::testPool_data() {
  QTest::addColumn<WindowCase>("c");
  const auto max = [](WindowCase c) { c.op = "MaxPool"; return c; };
  const auto avg = [](WindowCase c) { c.op = "AveragePool"; return c; };
  addRow("max 2d k3 s2 p1", max({.x = {1, 2, 7, 7}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .directOp = "MaxPool2d"}));
  addRow("max 2d ceil", max({.x = {1, 2, 6, 7}, .kernel = {3, 2}, .attrs = {.strides = {2, 2}},
         .ceilMode = true, .directOp = "MaxPool2d"}));
  addRow("max 2d asymmetric pads", max({.x = {2, 1, 6, 5}, .kernel = {2, 3},
         .attrs = {.strides = {1, 2}, .pads = {0, 1, 1, 0}}, .directOp = "MaxPool2d"}));
  addRow("max 1d", max({.x = {2, 3, 9}, .kernel = {3}, .attrs = {.strides = {2}, .pads = {1, 1}},
         .directOp = "MaxPool2d"}));
  addRow("max 3d ceil", max({.x = {1, 2, 5, 6, 5}, .kernel = {2, 3, 2},
         .attrs = {.strides = {2, 1, 2}, .pads = {1, 0, 0, 0, 1, 1}}, .ceilMode = true}));
  addRow("max 2d dilations", max({.x = {1, 2, 8, 7}, .kernel = {2, 3},
         .attrs = {.strides = {1, 2}, .dilations = {2, 1}, .pads = {1, 0, 1, 1}}}));
  addRow("max 1d dilations ceil", max({.x = {2, 2, 10}, .kernel = {3},
         .attrs = {.strides = {2}, .dilations = {2}}, .ceilMode = true}));
  // H: out 4, total 6 + 3 - 7 = 2; W: out 3, total 4 + 3 - 6 = 1.
  addRow("max SAME_UPPER", max({.x = {1, 1, 7, 6}, .kernel = {3, 3}, .attrs = {.strides = {2, 2}},
         .autoPad = "SAME_UPPER", .refPads = {1, 0, 1, 1}}));
  addRow("max SAME_LOWER", max({.x = {1, 1, 7, 6}, .kernel = {3, 3}, .attrs = {.strides = {2, 2}},
         .autoPad = "SAME_LOWER", .refPads = {1, 1, 1, 0}}));
  addRow("max dynamic asymmetric", max({.x = {2, 3, 7, 6}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {0, 1, 2, 1}}, .dynamic = true, .directOp = "MaxPool2d"}));
  // ceil((4 + 2 - 2) / 3) + 1 = 3 windows, the last starting in the end padding: dropped, as
  // PyTorch does and declares in its exports (ONNX 1.12's shape inference still says 3).
  addRow("max ceil drops padding window", max({.x = {1, 1, 4, 4}, .kernel = {2, 2},
         .attrs = {.strides = {3, 3}, .pads = {1, 1, 1, 1}}, .ceilMode = true,
         .declaredOutput = {1, 1, 2, 2}}));
  addRow("max opset 8 float64", max({.x = {1, 2, 5, 5}, .kernel = {2, 2}, .dtype = DType::Float64,
         .opset = 8}));
  addRow("avg 2d exclude pad", avg({.x = {1, 2, 7, 7}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .directOp = "AvgPool2d"}));
  addRow("avg 2d include pad", avg({.x = {1, 2, 7, 7}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .includePad = true, .directOp = "AvgPool2d"}));
  addRow("avg asymmetric exclude", avg({.x = {1, 2, 6, 7}, .kernel = {3, 2},
         .attrs = {.strides = {2, 1}, .pads = {0, 1, 2, 0}}, .directOp = "AvgPool2d"}));
  addRow("avg asymmetric include", avg({.x = {1, 2, 6, 7}, .kernel = {3, 2},
         .attrs = {.strides = {2, 1}, .pads = {0, 1, 2, 0}}, .includePad = true, .directOp = "AvgPool2d"}));
  addRow("avg ceil include", avg({.x = {1, 2, 6, 7}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .ceilMode = true, .includePad = true}));
  addRow("avg ceil exclude", avg({.x = {1, 2, 6, 7}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .ceilMode = true}));
  addRow("avg 1d include", avg({.x = {2, 3, 8}, .kernel = {3}, .attrs = {.strides = {2}, .pads = {1, 0}},
         .includePad = true}));
  addRow("avg 3d ceil include", avg({.x = {1, 2, 5, 6, 5}, .kernel = {2, 3, 2},
         .attrs = {.strides = {2, 2, 2}, .pads = {1, 1, 0, 0, 1, 1}}, .ceilMode = true, .includePad = true}));
  addRow("avg 3d exclude", avg({.x = {2, 1, 4, 5, 6}, .kernel = {3, 2, 3},
         .attrs = {.strides = {1, 2, 2}, .pads = {1, 0, 1, 1, 1, 1}}}));
  addRow("avg dynamic symmetric exclude", avg({.x = {2, 3, 7, 6}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .dynamic = true, .directOp = "AvgPool2d"}));
  addRow("avg dynamic asymmetric include", avg({.x = {2, 3, 7, 6}, .kernel = {3, 2},
         .attrs = {.strides = {2, 2}, .pads = {0, 1, 1, 0}}, .includePad = true, .dynamic = true,
         .directOp = "AvgPool2d"}));
  addRow("avg opset 7 include", avg({.x = {1, 2, 5, 5}, .kernel = {3, 3},
         .attrs = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}, .includePad = true, .opset = 7}));
  addRow("avg SAME_UPPER exclude", avg({.x = {1, 1, 7, 6}, .kernel = {3, 3}, .attrs = {.strides = {2, 2}},
         .autoPad = "SAME_UPPER", .refPads = {1, 0, 1, 1}}));
}
// clang-format on

// A ResNet stem and a decoder layer as PyTorch exports them (symmetric pads, output_padding <
// stride): each ONNX node is its engine op alone, with no explicit padding, crop or scatter.
void TestOnnxNn::testPyTorchLayersNeedNoPadding() {
  ModelBuilder m(13);
  m.input("x", randomTensor({1, 3, 16, 16}, 1), {kUnknownDim, 3, 16, 16});
  m.initializer("w", randomTensor({4, 3, 7, 7}, 2));
  m.initializer("wt", randomTensor({4, 2, 3, 3}, 3));
  auto& conv = m.node("Conv", {"x", "w"}, {"c"});
  attrInts(conv, "strides", {2, 2});
  attrInts(conv, "pads", {3, 3, 3, 3});
  auto& pool = m.node("MaxPool", {"c"}, {"p"});
  attrInts(pool, "kernel_shape", {3, 3});
  attrInts(pool, "strides", {2, 2});
  attrInts(pool, "pads", {1, 1, 1, 1});
  auto& avg = m.node("AveragePool", {"p"}, {"a"});
  attrInts(avg, "kernel_shape", {3, 3});
  attrInts(avg, "pads", {1, 1, 1, 1});
  auto& up = m.node("ConvTranspose", {"a", "wt"}, {"y"});
  attrInts(up, "strides", {2, 2});
  attrInts(up, "pads", {1, 1, 1, 1});
  attrInts(up, "output_padding", {1, 1});
  m.output("y", DType::Float32);
  const io::OnnxImportResult imported = io::readOnnx(m.bytes(), "stem.onnx");
  const FunctionGraph& g = *imported.document.original;
  for (const char* op : {"Conv2d", "MaxPool2d", "AvgPool2d", "Conv2dGradInputs"})
    QCOMPARE(countOps(g, op), 1);
  for (const char* op : {"Join", "Alloc", "Subtensor", "IncSubtensor", "Reshape"})
    QCOMPARE(countOps(g, op), 0);
  QCOMPARE(g.outputs()[0]->type().shape(), (Shape{kUnknownDim, 2, 8, 8}));
}

void TestOnnxNn::testGlobalPool() {
  for (const Shape& shape : {Shape{2, 3, 5}, Shape{2, 3, 4, 5}, Shape{1, 2, 3, 4, 2}}) {
    for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      ModelBuilder m(13);
      const Tensor x = randomTensor(shape, 5);
      m.input("x", x);
      m.node(op, {"x"}, {"y"});
      m.output("y", DType::Float32);
      Shape kernel = tail(shape, 2);
      checkModel(m, {refPool(x, kernel, Geometry{}, false, false, op == "GlobalMaxPool")});
    }
  }
}

void TestOnnxNn::testLrn() {
  for (std::int64_t size : {3, 4}) {
    ModelBuilder m(13);
    const Tensor x = randomTensor({2, 5, 3, 2}, 6);
    m.input("x", x);
    auto& n = m.node("LRN", {"x"}, {"y"});
    attrInt(n, "size", size);
    attrFloat(n, "alpha", 0.5);
    attrFloat(n, "beta", 0.75);
    attrFloat(n, "bias", 2.0);
    m.output("y", DType::Float32);
    Tensor y(DType::Float64, x.shape());
    forEachIndex(x.shape(), [&](const Shape& i) {
      double sum = 0;
      for (std::int64_t c = i[1] - (size - 1) / 2; c <= i[1] + size / 2; ++c)
        if (c >= 0 && c < x.shape()[1]) sum += std::pow(x.at({i[0], c, i[2], i[3]}), 2);
      y.set(i, x.at(i) / std::pow(2.0 + 0.5 / double(size) * sum, 0.75));
    });
    checkModel(m, {y.astype(DType::Float32)});
  }
}

namespace {

struct RefusedCase {
  const char* name;
  std::function<ModelBuilder()> build;
  std::string expected;
};

// One windowed node over x (dims: shape, kUnknownDim symbolic) and optional filters w.
ModelBuilder windowModel(const std::string& op, Shape x, Ints dims, Shape w,
                         const std::function<void(::onnx::NodeProto&)>& attrs, int nOutputs = 1,
                         DType dtype = DType::Float32) {
  ModelBuilder m(13);
  m.input("x", randomTensor(x, 1, dtype), dims);
  std::vector<std::string> ins{"x"};
  if (!w.empty()) m.initializer("w", randomTensor(w, 2, dtype)), ins.push_back("w");
  std::vector<std::string> outs{"y", "y1", "y2"};
  outs.resize(static_cast<std::size_t>(nOutputs));
  attrs(m.node(op, ins, outs));
  for (const auto& o : outs) m.output(o, o == "y1" && op == "MaxPool" ? DType::Int64 : dtype);
  return m;
}

std::vector<RefusedCase> refusedCases() {
  const auto none = [](::onnx::NodeProto&) {};
  const Ints dyn4{kUnknownDim, 2, kUnknownDim, kUnknownDim};
  const Ints dyn5{kUnknownDim, 2, kUnknownDim, kUnknownDim, kUnknownDim};
  return {
      {"conv 4 spatial axes",
       [=] {
         return windowModel("Conv", {1, 1, 2, 2, 2, 2}, {}, {1, 1, 1, 1, 1, 1}, none);
       },
       "Conv with 4 spatial axes is not supported"},
      {"conv channels and group",
       [=] {
         return windowModel("Conv", {1, 4, 5, 5}, {}, {2, 3, 3, 3},
                            [](auto& n) { attrInt(n, "group", 2); });
       },
       "(Conv): expected filters for 4 input channels in 2 group(s)"},
      {"conv kernel_shape",
       [=] {
         return windowModel("Conv", {1, 1, 5, 5}, {}, {1, 1, 3, 3}, [](auto& n) {
           attrInts(n, "kernel_shape", {2, 2});
         });
       },
       "(Conv): kernel_shape 2 disagrees with the filters"},
      {"conv float16",
       [=] {
         return windowModel("Conv", {1, 1, 5, 5}, {}, {1, 1, 3, 3}, none, 1, DType::Float16);
       },
       "Conv on float16 tensors is not supported"},
      {"conv auto_pad",
       [=] {
         return windowModel("Conv", {1, 1, 5, 5}, {}, {1, 1, 3, 3},
                            [](auto& n) { attrString(n, "auto_pad", "SAME"); });
       },
       "(Conv): expected auto_pad NOTSET, SAME_UPPER, SAME_LOWER or VALID, found 'SAME'"},
      {"conv 3d dynamic depth",
       [=] {
         return windowModel("Conv", {1, 2, 3, 3, 3}, dyn5, {1, 2, 2, 2, 2}, none);
       },
       "3-d Conv on an input of dynamic depth"},
      {"convtranspose SAME dynamic",
       [=] {
         return windowModel("ConvTranspose", {1, 2, 3, 3}, dyn4, {2, 1, 3, 3},
                            [](auto& n) { attrString(n, "auto_pad", "SAME_UPPER"); });
       },
       "on an input of dynamic spatial size"},
      {"maxpool indices dynamic",
       [=] {
         return windowModel(
             "MaxPool", {1, 2, 4, 4}, dyn4, {},
             [](auto& n) {
               attrInts(n, "kernel_shape", {2, 2});
             },
             2);
       },
       "MaxPool's Indices output on an input of dynamic spatial size is not supported"},
      {"pool ceil dynamic",
       [=] {
         return windowModel("MaxPool", {1, 2, 4, 4}, dyn4, {}, [](auto& n) {
           attrInts(n, "kernel_shape", {2, 2});
           attrInt(n, "ceil_mode", 1);
         });
       },
       "with ceil_mode on an input of dynamic spatial size"},
      {"avg dynamic asymmetric exclude",
       [=] {
         return windowModel("AveragePool", {1, 2, 4, 4}, dyn4, {}, [](auto& n) {
           attrInts(n, "kernel_shape", {2, 2});
           attrInts(n, "pads", {0, 1, 1, 0});
         });
       },
       "AveragePool with asymmetric pads on an input of dynamic spatial size"},
  };
}

}  // namespace

void TestOnnxNn::testRefused_data() {
  QTest::addColumn<int>("index");
  const auto cases = refusedCases();
  for (std::size_t i = 0; i < cases.size(); ++i)
    QTest::newRow(cases[i].name) << static_cast<int>(i);
}

void TestOnnxNn::testRefused() {
  QFETCH(int, index);
  const RefusedCase c = refusedCases()[static_cast<std::size_t>(index)];
  checkRefused(c.build(), c.expected);
}

TSCOPE_TEST_MAIN(TestOnnxNn)
#include "tst_onnx_nn.moc"
