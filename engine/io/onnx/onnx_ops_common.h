#pragma once
// Helpers the ONNX converters share (internal to engine/io/onnx): the registration functions of
// the files the math and shape families are split into, and the recurring reads of a node —
// integer lists that moved from an attribute to an input in some opset, shape vectors that may be
// constant or computed, scalar constants typed like an operand.

#include "engine/io/onnx/onnx_convert.h"
#include "engine/ops/basic.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tscope::engine::io::onnx_import {

// The families' files (registerMathConverters / registerShapeConverters / registerMiscConverters
// call these).
void registerElementwiseConverters(ConverterTable& table);   // onnx_ops_math.cpp
void registerActivationConverters(ConverterTable& table);    // onnx_ops_math_activation.cpp
void registerReduceConverters(ConverterTable& table);        // onnx_ops_math_reduce.cpp
void registerEinsumConverters(ConverterTable& table);        // onnx_ops_einsum.cpp
void registerIndexConverters(ConverterTable& table);         // onnx_ops_shape_index.cpp
void registerTensorMakingConverters(ConverterTable& table);  // onnx_ops_shape_make.cpp
void registerResizeConverters(ConverterTable& table);        // onnx_ops_resize.cpp
void registerGridSampleConverters(ConverterTable& table);    // onnx_ops_grid_sample.cpp
void registerLossConverters(ConverterTable& table);          // onnx_ops_loss.cpp
void registerExtraMathConverters(ConverterTable& table);     // onnx_ops_math_extra.cpp
void registerExtraMiscConverters(ConverterTable& table);     // onnx_ops_misc_extra.cpp
void registerSignalConverters(ConverterTable& table);        // onnx_ops_signal.cpp

// Note [Attributes that became inputs]: ONNX moved several integer lists from an attribute to an
// optional input (Squeeze/Unsqueeze/Split/ReduceSum axes or sizes at opset 13, the other Reduce*
// axes at 18, Slice's starts/ends/axes/steps at 10). Before `inputSince` the list is the
// attribute `name`; from it on, input `input`, which must then be a constant (the engine's ops
// take these lists as props). nullopt when the node omits it.
std::optional<std::vector<std::int64_t>> intsAttrOrInput(const NodeContext& ctx,
                                                         std::string_view name, int input,
                                                         int inputSince);

// Note [Vector entries]: the entries of a 1-d integer input that holds a shape or per-axis
// bounds (Reshape, Expand, ConstantOfShape, Slice), as 0-d int64 variables: constants when the
// input is known while importing; else the scalars the vector was built from, looking through
// the Concat/Unsqueeze/Cast chains exporters write (`Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])`
// gives {ShapeI{0}(x), -1}; Shape(x) gives x's dimensions), so constant entries stay visible;
// else one element read per entry.
// Constant entries are clamped (Note [Huge bounds]). Fails when the input is not a 1-d integer
// vector; unsupported when its length is not static.
ShapeExpr vectorInputEntries(const NodeContext& ctx, int input, std::string_view what);

// The values of an integer (or bool) tensor, int64 ones read exactly (not through doubles).
std::vector<std::int64_t> tensorInts(const Tensor& t);

// A 1-d int64 tensor of the values (exact; Tensor::fromDoubles goes through doubles).
Tensor tensorOfInts(const std::vector<std::int64_t>& values);

// v as int64 (itself when it is already).
VarPtr asInt64(const VarPtr& v);

// Note [Huge bounds]: exporters write INT64_MAX and INT64_MIN for "to the end" (Slice ends), and
// the engine keeps 0-d integer constants as doubles on the way (constantInt, constantIntValue),
// where those values do not survive. They are clamped to +-2^62, which is exact in a double and
// still past every axis, so slicing reads the same.
inline constexpr std::int64_t kHugeBound = std::int64_t{1} << 62;
inline std::int64_t clampHugeBound(std::int64_t v) {
  return std::clamp(v, -kHugeBound, kHugeBound);
}

// The product of 0-d integer sizes: a constant when every entry is one, else a chain of muls.
VarPtr sizeProduct(std::span<const VarPtr> dims);

// A 0-d constant of `dtype` (ONNX operands already agree on the dtype; this keeps it so).
inline VarPtr scalarOf(double value, DType dtype) {
  return constant(value, dtype);
}

}  // namespace tscope::engine::io::onnx_import
