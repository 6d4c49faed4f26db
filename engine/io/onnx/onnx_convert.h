#pragma once
// The converters from ONNX nodes to Tensorscope graphs (internal to engine/io/onnx).
//
// A converter receives a NodeContext: the node's inputs as variables (already converted), its
// attributes, constant values of inputs where they are known, and ONNX's inferred output types;
// it builds Tensorscope nodes with the engine's builders (engine/ops/...) and returns one variable
// per ONNX output (nullptr for an output the model does not use and the converter did not build).
// The importer names the returned variables after the ONNX outputs, sets the scope (a NameScope
// is live during the call) and the creation site, and checks the returned types against ONNX's
// shape inference. Errors go through ctx.fail(), which names the node.
#include "engine/graph/variable.h"
#include "engine/io/onnx/onnx_import.h"

#include <cstdint>
#include <map>
#include <onnx/onnx_pb.h>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::io::onnx_import {

// ONNX TensorProto.DataType -> DType; nullopt for types Tensorscope has no dtype for.
std::optional<DType> dtypeFromOnnx(int onnxType);
// DType -> ONNX TensorProto.DataType.
int dtypeToOnnx(DType dtype);
std::string onnxTypeName(int onnxType);
// A TensorProto (raw_data, typed fields, or external data relative to `baseDir`) as a Tensor;
// throws std::invalid_argument saying what does not fit (size, dtype, missing data).
Tensor tensorFromOnnx(const onnx::TensorProto& proto, const std::string& baseDir = {});
// The TensorType of a ValueInfo/TypeProto: symbolic and missing dims are unknown; nullopt when
// the type is not a tensor, has no rank, or has an unsupported element type.
std::optional<TensorType> typeFromOnnx(const onnx::TypeProto& type);

// Text from the model (names, string attributes) made safe for JSON: valid UTF-8 unchanged, other
// bytes and control characters as \xNN.
std::string safeText(std::string_view text);

class Importer;

// What a converter throws when it needs input `input` as a constant and the model computes it:
// the importer then converts the node at run time instead (Note [Run-time ONNX values] in
// onnx_runtime_node.h), or, where it cannot, reports this error as it is.
class OnnxRuntimeValue : public OnnxError {
 public:
  OnnxRuntimeValue(std::string source, std::string where, std::string message, int input)
      : OnnxError(std::move(source), std::move(where), std::move(message)), input(input) {}
  int input;
};

class NodeContext {
 public:
  NodeContext(Importer& importer, const onnx::NodeProto& node, int index,
              std::vector<VarPtr> inputs);

  const onnx::NodeProto& proto() const { return m_node; }
  const std::string& opType() const { return m_node.op_type(); }
  const std::string& nodeName() const { return m_node.name(); }
  int nodeIndex() const { return m_index; }
  // The model's default-domain ("" / "ai.onnx") opset version.
  int opset() const;

  // The same node seen with other input variables (a converter that rewrites its operands, e.g.
  // ConvInteger as a float Conv of the shifted inputs, hands them to another converter).
  NodeContext withInputs(std::vector<VarPtr> inputs) const {
    return NodeContext(m_importer, m_node, m_index, std::move(inputs));
  }

  // --- inputs ---
  int nInputs() const { return static_cast<int>(m_inputs.size()); }
  // Present: listed and not the empty name ONNX uses for an omitted optional input.
  bool hasInput(int i) const;
  // Input i; fails naming the node when it is absent.
  const VarPtr& input(int i) const;
  // The value of input i when it is known while importing: an initializer, a Constant node, or a
  // small computation over those (folded on demand; the graph keeps the nodes). nullopt otherwise.
  std::optional<Tensor> constantInput(int i) const;
  // constantInput(i) as integers (any integer dtype); fails saying `what` must be a constant.
  std::vector<std::int64_t> constantInts(int i, std::string_view what) const;
  // constantInput(i) as doubles (any dtype); fails saying `what` must be a constant.
  std::vector<double> constantDoubles(int i, std::string_view what) const;

  // --- outputs ---
  int nOutputs() const { return m_node.output_size(); }
  // The model uses output i (listed with a non-empty name).
  bool wantsOutput(int i) const;
  // ONNX shape inference's type for output i (nullopt when inference did not give one).
  std::optional<TensorType> inferredOutputType(int i) const;

  // --- attributes (a missing attribute takes the default; without one it is an error, as is a
  // present attribute of the wrong kind) ---
  bool hasAttr(std::string_view name) const;
  std::int64_t attrInt(std::string_view name,
                       std::optional<std::int64_t> fallback = std::nullopt) const;
  double attrFloat(std::string_view name, std::optional<double> fallback = std::nullopt) const;
  std::string attrString(std::string_view name,
                         std::optional<std::string> fallback = std::nullopt) const;
  std::vector<std::int64_t> attrInts(
      std::string_view name,
      std::optional<std::vector<std::int64_t>> fallback = std::nullopt) const;
  std::vector<double> attrFloats(std::string_view name,
                                 std::optional<std::vector<double>> fallback = std::nullopt) const;
  Tensor attrTensor(std::string_view name) const;
  // Every attribute as JSON (ints, floats, strings, lists; tensors as {"dtype","shape"}).
  nlohmann::json attrsJson() const;

  // --- errors ---
  // Throws OnnxError at this node: "<file>: graph.node[7] 'name' (Op): message".
  [[noreturn]] void fail(const std::string& message) const;
  // Throws OnnxError: "<what> is not supported yet" (e.g. a dynamic-length LSTM).
  [[noreturn]] void unsupported(const std::string& what) const;
  // Throws OnnxRuntimeValue: "expected <what> (input i) to be a constant or an initializer, found
  // a value computed at run time".
  [[noreturn]] void needsConstant(int i, std::string_view what) const;
  // Normalises a possibly negative axis against rank; fails when out of range.
  int axis(std::int64_t axis, int rank, std::string_view what = "axis") const;
  // The rank of input i (every Tensorscope variable has a static rank).
  int rank(int i) const;

 private:
  const onnx::AttributeProto* attr(std::string_view name) const;
  Importer& m_importer;
  const onnx::NodeProto& m_node;
  int m_index;
  std::vector<VarPtr> m_inputs;
};

using Converter = std::vector<VarPtr> (*)(NodeContext& ctx);

// op_type (default domain) -> converter.
class ConverterTable {
 public:
  void add(std::string opType, Converter fn);
  Converter find(const std::string& opType) const;
  std::vector<std::string> opTypes() const;

 private:
  std::map<std::string, Converter, std::less<>> m_table;
};

// Each family registers its converters (onnx_ops_*.cpp).
void registerMathConverters(ConverterTable& table);   // elementwise, logic, cast, reductions
void registerShapeConverters(ConverterTable& table);  // reshape, transpose, slice, gather, pad, ...
void registerNnConverters(ConverterTable& table);     // matmul, gemm, conv, pool, norms, softmax
void registerRnnConverters(ConverterTable& table);    // LSTM, GRU, RNN (unrolled)
void registerMiscConverters(ConverterTable& table);   // Pad, Resize, TopK

const ConverterTable& defaultConverters();

// The domain of ONNX's training optimizers, and its converters (onnx_ops_training.cpp: Adagrad,
// Adam, Momentum; Note [Training optimizers]).
inline constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";
void registerTrainingConverters(ConverterTable& table);
const ConverterTable& trainingConverters();

}  // namespace tscope::engine::io::onnx_import
