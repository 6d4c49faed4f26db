#include "engine/io/onnx/onnx_ops_common.h"

#include "engine/graph/apply.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>

namespace tscope::engine::io::onnx_import {

namespace {

// Note [Vector entries]: appends the entries of the 1-d integer vector v; false when its length
// is not static.
bool appendEntries(const VarPtr& v, ShapeExpr& out) {
  const TensorType& t = v->type();
  if (t.ndim() != 1 || t.shape()[0] == kUnknownDim) return false;
  if (v->kind() == Variable::Kind::Constant) {
    for (std::int64_t i : tensorInts(static_cast<const Constant&>(*v).value()))
      out.push_back(constantInt(clampHugeBound(i)));
    return true;
  }
  if (const Apply* node = v->owner()) {
    const Op& op = node->op();
    if (const auto* join = dynamic_cast<const Join*>(&op); join && join->axis() == 0) {
      for (const VarPtr& part : node->inputs())
        if (!appendEntries(part, out)) return false;
      return true;
    }
    if (const auto* shuffle = dynamic_cast<const DimShuffle*>(&op);
        shuffle && shuffle->inputNdim() == 0 && node->inputs()[0]->type().dtype() != DType::Bool) {
      out.push_back(asInt64(node->inputs()[0]));
      return true;
    }
    if (dynamic_cast<const ShapeOp*>(&op)) {
      const ShapeExpr dims = shapeOf(node->inputs()[0]);
      out.insert(out.end(), dims.begin(), dims.end());
      return true;
    }
    if (const auto* cast = dynamic_cast<const Elemwise*>(&op);
        cast && cast->scalarOp() == ScalarOp::Cast && isInteger(node->inputs()[0]->type().dtype()))
      return appendEntries(node->inputs()[0], out);
  }
  auto entries = vectorEntries(v);
  if (!entries) return false;
  out.insert(out.end(), entries->begin(), entries->end());
  return true;
}

}  // namespace

std::optional<std::vector<std::int64_t>> intsAttrOrInput(const NodeContext& ctx,
                                                         std::string_view name, int input,
                                                         int inputSince) {
  // Note [Attributes that became inputs]
  if (ctx.opset() < inputSince) {
    if (!ctx.hasAttr(name)) return std::nullopt;
    return ctx.attrInts(name);
  }
  if (ctx.hasAttr(name))
    ctx.fail("'" + std::string(name) + "' is an input since opset " + std::to_string(inputSince) +
             ", found it as an attribute (the model's opset is " + std::to_string(ctx.opset()) +
             ")");
  if (!ctx.hasInput(input)) return std::nullopt;
  return ctx.constantInts(input, name);
}

std::vector<std::int64_t> tensorInts(const Tensor& t) {
  std::vector<std::int64_t> out;
  if (t.dtype() == DType::Int64) {
    const Tensor c = t.contiguous();
    const auto* p = c.data<std::int64_t>();
    out.assign(p, p + c.numel());
  } else {
    for (double d : t.toDoubles()) out.push_back(static_cast<std::int64_t>(d));
  }
  return out;
}

Tensor tensorOfInts(const std::vector<std::int64_t>& values) {
  Tensor t(DType::Int64, {static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  return t;
}

VarPtr asInt64(const VarPtr& v) {
  if (v->type().dtype() == DType::Int64) return v;
  // A constant stays one, so the entries it gives stay visible (Note [Vector entries]).
  if (v->kind() == Variable::Kind::Constant && v->type().ndim() == 0 &&
      isInteger(v->type().dtype()))
    return constantInt(tensorInts(static_cast<const Constant&>(*v).value()).at(0));
  return cast(v, DType::Int64);
}

ShapeExpr vectorInputEntries(const NodeContext& ctx, int input, std::string_view what) {
  const VarPtr& v = ctx.input(input);
  const TensorType& t = v->type();
  if (t.ndim() != 1 || !isInteger(t.dtype()))
    ctx.fail("expected " + std::string(what) + " to be a 1-d integer tensor, found " + t.str());
  ShapeExpr out;
  if (auto known = ctx.constantInput(input)) {
    for (std::int64_t i : tensorInts(*known)) out.push_back(constantInt(clampHugeBound(i)));
    return out;
  }
  if (!appendEntries(v, out))
    ctx.unsupported(std::string(what) + " of a length unknown while importing (" + t.str() + ")");
  return out;
}

VarPtr sizeProduct(std::span<const VarPtr> dims) {
  std::int64_t known = 1;
  VarPtr symbolic;
  for (const VarPtr& d : dims) {
    if (auto c = constantIntValue(d)) {
      known *= *c;
    } else {
      symbolic = symbolic ? mul(symbolic, d) : d;
    }
  }
  if (!symbolic) return constantInt(known);
  return known == 1 ? symbolic : mul(symbolic, constantInt(known));
}

}  // namespace tscope::engine::io::onnx_import
