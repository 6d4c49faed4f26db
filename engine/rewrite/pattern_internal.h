#pragma once
// The parsed form of patterns, shared by the parser (pattern_parse.cpp) and the matcher and
// builder (pattern.cpp). Not part of the engine's API: use pattern.h.

#include "engine/rewrite/pattern.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::pattern_detail {

enum class Kind : std::uint8_t { Variable, Number, Scalar, Function };

// A tensor function the pattern language names besides the scalar ops (pattern.h lists them).
struct FunctionInfo {
  std::string_view name;    // as written in rules: "log_softmax"
  std::string_view opName;  // the Op::name() it matches; empty: a builder, right side only
  int arity;
  std::string_view attr;  // its one attribute ("axis"), or empty
  // When node is this function's node: the attribute's value (normalised axes; empty when the
  // function has no attribute); nullopt when the node is another op.
  std::optional<std::vector<int>> (*read)(const Apply& node);
  // Builds it on the operands; axes is the attribute's value (null when it has none).
  VarPtr (*build)(const std::vector<VarPtr>& args, const std::vector<int>* axes);
};
const FunctionInfo* findFunction(std::string_view name);
// "softmax, log_softmax, ..." for error messages.
std::string functionNames();

// add and mul: the ops whose operands match in any order (Note [Commutative patterns]).
inline bool isCommutative(ScalarOp op) {
  return op == ScalarOp::Add || op == ScalarOp::Mul;
}

struct Attr {
  std::string name;          // "axis"
  std::string param;         // bound name ("a" in axis=a), or empty when value is set
  std::optional<int> value;  // a literal axis
  int column = 0;
};

struct Node {
  Kind kind = Kind::Variable;
  int column = 0;                    // 0-based position in the text
  std::string name;                  // variable or function name
  double number = 0;                 // Kind::Number
  ScalarOp scalar{};                 // Kind::Scalar
  const FunctionInfo* fn = nullptr;  // Kind::Function
  std::vector<Node> args;
  std::vector<Attr> attrs;
  // Left side, add/mul only: the operand that may take the rest of a wider node, or -1.
  int restIndex = -1;
};

struct ParsedRule {
  std::shared_ptr<const Node> lhs;
  std::shared_ptr<const Node> rhs;
  bool rhsElementwise = true;
};

// Both throw std::invalid_argument "<context>, column N: <problem>".
std::shared_ptr<const Node> parseExpression(std::string_view text, const std::string& context);
ParsedRule parseRule(std::string_view text, const std::string& context);

}  // namespace tscope::engine::pattern_detail
