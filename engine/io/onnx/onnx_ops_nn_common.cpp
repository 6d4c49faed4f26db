// The window geometry and the padding / sliding-window compositions shared by the
// neural-network converters (onnx_ops_nn_common.h).
#include "engine/io/onnx/onnx_ops_nn_common.h"

#include "engine/ops/basic.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>

namespace tscope::engine::io::onnx_import {

namespace {

// An integer list attribute of exactly n entries (fallback: n copies of `fill`), each >= minimum.
std::vector<std::int64_t> listAttr(const NodeContext& ctx, std::string_view name, std::size_t n,
                                   std::int64_t fill, std::int64_t minimum) {
  std::vector<std::int64_t> values = ctx.attrInts(name, std::vector<std::int64_t>(n, fill));
  if (values.size() != n)
    ctx.fail("expected " + std::string(name) + " with " + std::to_string(n) + " entries, found " +
             std::to_string(values.size()));
  for (std::int64_t v : values)
    if (v < minimum)
      ctx.fail("expected " + std::string(name) + " entries >= " + std::to_string(minimum) +
               ", found " + std::to_string(v));
  return values;
}

}  // namespace

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::string readAutoPad(const NodeContext& ctx) {
  std::string mode = ctx.attrString("auto_pad", std::string("NOTSET"));
  if (mode.empty()) mode = "NOTSET";
  if (mode != "NOTSET" && mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID")
    ctx.fail("expected auto_pad NOTSET, SAME_UPPER, SAME_LOWER or VALID, found '" + mode + "'");
  return mode;
}

std::vector<WindowAxis> readWindow(const NodeContext& ctx, const std::vector<std::int64_t>& kernel,
                                   bool withDilations) {
  const std::size_t n = kernel.size();
  const TensorType& x = ctx.input(0)->type();
  if (static_cast<std::size_t>(x.ndim()) != n + 2)
    ctx.fail("expected input 0 of rank " + std::to_string(n + 2) + " for a kernel of " +
             std::to_string(n) + " spatial axes, found " + x.str());
  const auto strides = listAttr(ctx, "strides", n, 1, 1);
  const auto dilations =
      withDilations ? listAttr(ctx, "dilations", n, 1, 1) : std::vector<std::int64_t>(n, 1);
  const auto pads = listAttr(ctx, "pads", 2 * n, 0, 0);
  std::vector<WindowAxis> axes(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (kernel[i] < 1) ctx.fail("expected kernel sizes >= 1, found " + std::to_string(kernel[i]));
    axes[i] =
        WindowAxis{x.shape()[i + 2], kernel[i], strides[i], dilations[i], pads[i], pads[i + n]};
  }
  return axes;
}

void applyAutoPad(const NodeContext& ctx, std::vector<WindowAxis>& axes) {
  const std::string mode = readAutoPad(ctx);
  if (mode == "NOTSET") return;
  for (WindowAxis& a : axes) {
    if (mode == "VALID") {
      a.padBegin = a.padEnd = 0;
      continue;
    }
    if (!a.known()) ctx.unsupported("auto_pad " + mode + " on an input of dynamic spatial size");
    const std::int64_t out = (a.in + a.stride - 1) / a.stride;
    const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * a.stride + a.extent() - a.in);
    const std::int64_t half = total / 2;
    a.padBegin = mode == "SAME_UPPER" ? half : total - half;
    a.padEnd = total - a.padBegin;
  }
}

VarPtr padAxis(const VarPtr& x, int axis, std::int64_t before, std::int64_t after, double value) {
  if (before == 0 && after == 0) return x;
  const VarPtr fill = constant(value, x->type().dtype());
  const auto block = [&](std::int64_t size) {
    ShapeExpr shape = shapeOf(x);
    shape[static_cast<std::size_t>(axis)] = constantInt(size);
    return alloc(fill, shape);
  };
  std::vector<VarPtr> parts;
  if (before > 0) parts.push_back(block(before));
  parts.push_back(x);
  if (after > 0) parts.push_back(block(after));
  return join(axis, parts);
}

VarPtr cropOrExtend(const VarPtr& x, int axis, std::int64_t dropBegin, std::int64_t dropEnd,
                    double value) {
  const VarPtr padded = padAxis(x, axis, std::max<std::int64_t>(0, -dropBegin),
                                std::max<std::int64_t>(0, -dropEnd), value);
  if (dropBegin <= 0 && dropEnd <= 0) return padded;
  return slice(padded, axis, dropBegin > 0 ? IdxBound(dropBegin) : IdxBound(),
               dropEnd > 0 ? IdxBound(-dropEnd) : IdxBound());
}

VarPtr windowReduce(const VarPtr& x, int axis, std::int64_t kernel, std::int64_t stride,
                    std::int64_t dilation, std::int64_t count, bool takeMax) {
  VarPtr acc;
  for (std::int64_t j = 0; j < kernel; ++j) {
    const std::int64_t start = j * dilation;
    const VarPtr part = slice(x, axis, start, start + (count - 1) * stride + 1, stride);
    acc = !acc ? part : takeMax ? maximum(acc, part) : add(acc, part);
  }
  return acc;
}

VarPtr channelVector(const VarPtr& v, int rank) {
  std::vector<int> order(static_cast<std::size_t>(rank), DimShuffle::kNewAxis);
  order[1] = 0;
  return dimshuffle(v, std::move(order));
}

VarPtr dimProduct(const VarPtr& a, const VarPtr& b) {
  const auto ca = constantIntValue(a), cb = constantIntValue(b);
  if (ca && cb) return constantInt(*ca * *cb);
  return mul(a, b);
}

}  // namespace tscope::engine::io::onnx_import
