#pragma once
// The emitters that write Tensorscope nodes as ONNX nodes (internal to engine/io/onnx).
//
// An emitter receives a NodeExport: the engine node (its op already in out-of-place form), the
// ONNX names of its inputs (created on first use: initializers for constants, Cast nodes for
// conversions), the names its outputs must take, and builders for ONNX nodes and constants. It
// writes one ONNX node where a direct form exists, a few otherwise, and ends each chain in the
// node that writes output(i). Node names follow the engine node's scope (Note [ONNX export] in
// onnx_export.h). An op or props without an ONNX form: n.unsupported("why"), which names the node.
//
//   void emitSoftmax(NodeExport& n) {
//     auto& node = n.add("Softmax", {n.input(0)}, {n.output(0)});
//     attrInt(node, "axis", n.op<Softmax>().axisFor(n.inType(0).ndim()));
//   }

#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/io/onnx/onnx_convert.h"
#include "engine/io/onnx/onnx_export.h"

#include <cstdint>
#include <map>
#include <onnx/onnx_pb.h>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::io::onnx_export {

// --- ONNX type constraints ---------------------------------------------------------------------
// A set of dtypes (one bit per DType): what an ONNX op accepts for a type parameter.
using DTypeSet = std::uint16_t;
static_assert(kDTypeCount <= 16, "a DTypeSet has one bit per DType");
constexpr DTypeSet dtypeBit(DType d) {
  return static_cast<DTypeSet>(1u << static_cast<unsigned>(d));
}
inline constexpr DTypeSet kFloatTypes =
    dtypeBit(DType::Float16) | dtypeBit(DType::Float32) | dtypeBit(DType::Float64);
inline constexpr DTypeSet kWideIntTypes = dtypeBit(DType::Int32) | dtypeBit(DType::Int64);
inline constexpr DTypeSet kNarrowIntTypes =
    dtypeBit(DType::Int8) | dtypeBit(DType::Int16) | dtypeBit(DType::UInt8);
// uint16..uint64: in every "all numeric types" constraint of the opsets written (13..17).
inline constexpr DTypeSet kUnsignedIntTypes =
    dtypeBit(DType::UInt16) | dtypeBit(DType::UInt32) | dtypeBit(DType::UInt64);
inline constexpr DTypeSet kNumericTypes =
    kFloatTypes | kWideIntTypes | kNarrowIntTypes | kUnsignedIntTypes;
inline constexpr DTypeSet kAllTypes = kNumericTypes | dtypeBit(DType::Bool);
inline bool contains(DTypeSet set, DType d) {
  return (set & dtypeBit(d)) != 0;
}
// The dtype to compute in for an ONNX op that accepts `allowed`: d itself when allowed, else the
// narrowest allowed dtype that holds every value of d (bool and narrow integers -> int32 or
// int64, float16 -> float32); nullopt when there is none. Integer results cast back to d wrap as
// the engine's do, so add/sub/mul/neg computed wider and cast back are exact.
std::optional<DType> computeDTypeFor(DType d, DTypeSet allowed);

// The value as a TensorProto (raw little-endian data), named `name`.
void tensorToOnnx(const Tensor& value, const std::string& name, onnx::TensorProto& proto);

// --- Attributes --------------------------------------------------------------------------------
void attrInt(onnx::NodeProto& node, std::string_view name, std::int64_t value);
void attrFloat(onnx::NodeProto& node, std::string_view name, double value);
void attrInts(onnx::NodeProto& node, std::string_view name,
              const std::vector<std::int64_t>& values);
void attrString(onnx::NodeProto& node, std::string_view name, std::string_view value);

class ModelWriter;

class NodeExport {
 public:
  // node: the engine node (a graph node, or one of an expansion such as expandComposite's);
  // op: the op to export (node's op in out-of-place form); reported: the graph node errors name.
  NodeExport(ModelWriter& writer, const Apply& node, const Op& op, const Apply& reported);

  const Apply& node() const { return m_node; }
  const Op& op() const { return m_op; }
  // The graph node this one belongs to (itself, or the node an expansion came from).
  const Apply& reported() const { return m_reported; }
  template <class T>
  const T& op() const {
    return dynamic_cast<const T&>(m_op);
  }
  int opset() const;

  int nInputs() const { return m_node.nInputs(); }
  int nOutputs() const { return m_node.nOutputs(); }
  const TensorType& inType(int i) const { return m_node.input(i)->type(); }
  const TensorType& outType(int i) const { return m_node.outputRef(i).type(); }
  // The value of input i when it is a Constant (not a shared variable: its value may change).
  const Tensor* constantInput(int i) const;
  // constantInput(i) as integers / as one number; nullopt when input i is not a constant.
  std::optional<std::vector<std::int64_t>> constantInts(int i) const;
  std::optional<double> constantScalar(int i) const;

  // --- ONNX values ---
  // The ONNX value of input i (of the engine variable v).
  std::string input(int i);
  std::string value(const VarPtr& v);
  // Input i converted to dtype `as` (a Cast node when its dtype differs).
  std::string input(int i, DType as);
  std::string cast(const std::string& value, DType from, DType to);
  // The name output i must take (a graph output's name, or one made from the node's name).
  std::string output(int i);
  // A fresh value name, "/<scope>/<what>" made unique, for a node with several outputs.
  std::string newValue(std::string_view what);

  // --- ONNX nodes and constants ---
  // Adds a node named after the engine node's scope and opType; an empty `outputs` gives it one
  // output named after the node.
  onnx::NodeProto& add(std::string_view opType, std::vector<std::string> inputs,
                       std::vector<std::string> outputs = {});
  // add() with one output; returns its name.
  std::string add1(std::string_view opType, std::vector<std::string> inputs,
                   std::string output = {});
  // Runs a one-output op whose inputs must share one dtype that `allowed` lists: each input is
  // converted to `dtype` or the wider computeDTypeFor(dtype, allowed), and the result back to
  // `resultDType` (none: the compute dtype). Returns the output name (`output` when given).
  std::string compute(std::string_view opType,
                      const std::vector<std::pair<std::string, DType>>& inputs, DType dtype,
                      DTypeSet allowed, std::optional<DType> resultDType, std::string output = {});
  // A 1-d int64 constant, a 0-d constant, any constant.
  std::string ints(const std::vector<std::int64_t>& values);
  std::string scalar(double value, DType dtype);
  std::string tensor(const Tensor& value);
  // Exports the engine nodes between this node's inputs and `outputs` (built on those inputs, e.g.
  // by expandComposite) as part of this node, output k becoming output(k).
  void emitExpansion(const std::vector<VarPtr>& outputs);
  // Writes `body` as the ONNX subgraph `into` (an If branch), named `name`: body input k stands
  // for the ONNX value inputs[k] of the enclosing graph; its outputs are "<name>_output_<k>".
  // Note [Exported subgraphs] in onnx_export.cpp.
  void emitSubgraph(const FunctionGraph& body, const std::vector<std::string>& inputs,
                    const std::string& name, onnx::GraphProto& into);

  // Throws OnnxExportError naming the reported node: "... to ONNX: <why>".
  [[noreturn]] void unsupported(const std::string& why) const;

 private:
  ModelWriter& m_writer;
  const Apply& m_node;
  const Op& m_op;
  const Apply& m_reported;
};

using Emitter = void (*)(NodeExport& n);

// Note [Export patterns]: a few engine compositions have one ONNX node of their own (the engine's
// mean is sum / count; ONNX has ReduceMean). A pattern rooted at an op name matches a graph node
// and lists the upstream nodes it covers, each used by the pattern alone (not by another node, not
// a graph output); those nodes are not exported and the pattern's emitter writes the root's
// outputs from the pattern's inputs. Patterns are tried in a first pass over the graph.
using PatternMatcher = bool (*)(const FunctionGraph& graph, const Apply& root,
                                std::vector<const Apply*>& covered);
struct ExportPattern {
  PatternMatcher match;
  Emitter emit;
};

// Op name (Op::name()) -> emitter, and the patterns rooted at an op name.
class EmitterTable {
 public:
  void add(std::string opName, Emitter fn) { m_table[std::move(opName)] = fn; }
  Emitter find(const std::string& opName) const {
    auto it = m_table.find(opName);
    return it == m_table.end() ? nullptr : it->second;
  }
  void addPattern(std::string rootOpName, ExportPattern pattern) {
    m_patterns[std::move(rootOpName)].push_back(pattern);
  }
  const std::vector<ExportPattern>& patterns(const std::string& rootOpName) const {
    static const std::vector<ExportPattern> kNone;
    auto it = m_patterns.find(rootOpName);
    return it == m_patterns.end() ? kNone : it->second;
  }

 private:
  std::map<std::string, Emitter, std::less<>> m_table;
  std::map<std::string, std::vector<ExportPattern>, std::less<>> m_patterns;
};

// True when v is used by exactly one node input and is not a graph output (a pattern may cover
// the node that computes it).
bool usedOnlyOnce(const FunctionGraph& graph, const Variable& v);

// One per file: onnx_export_elemwise.cpp (Elemwise, Composite, reductions, SumToShape),
// onnx_export_shape.cpp (shape and indexing ops), onnx_export_nn.cpp (BLAS, convolution, pooling,
// softmax, batch normalization, losses), onnx_export_control.cpp (IfElse).
void registerElemwiseEmitters(EmitterTable& table);
void registerShapeEmitters(EmitterTable& table);
void registerNnEmitters(EmitterTable& table);
void registerControlEmitters(EmitterTable& table);

const EmitterTable& defaultEmitters();

}  // namespace tscope::engine::io::onnx_export
