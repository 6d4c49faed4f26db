#pragma once
// Op: an immutable operation. Its props (a small JSON record) define equality, hash and str; it
// types its inputs and declares which outputs view or destroy which inputs.
//
// Adding an op (docs/adding-an-op.md; examples/custom_op): subclass Op and implement
//   name(), props()            what the op is; equality, hash and str() follow from them
//   outputTypes(inputs)        check the inputs (throwInputError names op, argument and both types)
//   perform(node, in, out)     the CPU reference implementation
//   inferShape(node, shapes)   the output shapes as symbolic int64 scalars of the input shapes
//   pullback(node, grads)      one gradient per input (Grad::disconnected / Grad::undefined
//   allowed) pushforward(node, tangents) optional R-op; without it Rop() derives it from the
//   pullback viewMap()/destroyMap()     which outputs alias or overwrite which inputs
// and register a factory in your family's registerXxxOps(OpRegistry&) so files can name it. For a
// quick op without a gradient, wrap a lambda with asOp() (engine/ops/as_op.h).

#include "engine/graph/apply.h"
#include "engine/graph/op_cost.h"
#include "engine/graph/type.h"

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <source_location>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tscope::engine {

class Tensor;
class FunctionGraph;

// A symbolic shape: one 0-d int64 variable per dimension (a Constant where the size is static).
using ShapeExpr = std::vector<VarPtr>;

// One input's gradient from Op::pullback: a symbolic value, or a marker. Note [Gradient markers]:
// *disconnected* means the outputs do not depend on the input at all (grad() treats it as zero, or
// raises when the caller asked for a connected gradient); *undefined* means the gradient exists
// mathematically but the op cannot express it (an integer index, a non-differentiable point);
// grad() raises with the reason if such a gradient reaches a requested input.
struct Grad {
  enum class Kind : std::uint8_t { Value, Disconnected, Undefined };
  Kind kind = Kind::Disconnected;
  VarPtr value;
  std::string why;  // for Undefined

  Grad() = default;
  Grad(VarPtr v)
      : kind(v ? Kind::Value : Kind::Disconnected),
        value(std::move(v)) {}  // NOLINT: implicit by design
  static Grad disconnected() { return Grad(); }
  static Grad undefined(std::string why) {
    Grad g;
    g.kind = Kind::Undefined;
    g.why = std::move(why);
    return g;
  }
  bool isValue() const { return kind == Kind::Value; }
};

// Thrown by the default pullback/inferShape/perform of an op that lacks them.
class NotImplementedError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// output index -> the input indices that output aliases (view) or overwrites (destroy).
using ViewMap = std::map<int, std::vector<int>>;
using DestroyMap = std::map<int, std::vector<int>>;

class Op : public std::enable_shared_from_this<Op> {
 public:
  Op() = default;
  // A copy computes its own hash: a derived op may change its props after copying.
  Op(const Op&) noexcept : std::enable_shared_from_this<Op>() {}
  Op& operator=(const Op&) noexcept {
    m_hash.store(0, std::memory_order_relaxed);
    return *this;
  }
  virtual ~Op() = default;

  // The registry name: "Elemwise", "Dot", "DimShuffle".
  virtual std::string name() const = 0;
  // The parameters as a JSON object; {} for an op without parameters.
  virtual nlohmann::json props() const { return nlohmann::json::object(); }
  // "Elemwise{add}", "Sum{axis=[1]}"; default: name{key=value,...} from props(), name alone when
  // there are no props.
  virtual std::string str() const;

  // Equal when the dynamic type, the name and the props are equal.
  bool equals(const Op& other) const;
  // From the name and props, computed once per op (an op is immutable once built; merge hashes
  // every node of a graph, twice per compile).
  std::size_t hash() const;

  // The output types for these inputs; throws TypeError when they do not fit.
  virtual std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const = 0;
  // Checks the inputs, builds the Apply (stamped with the current scope and the caller's site).
  ApplyPtr makeNode(std::vector<VarPtr> inputs,
                    std::source_location site = std::source_location::current()) const;
  // makeNode(...)->output(0): for single-output ops.
  VarPtr operator()(std::vector<VarPtr> inputs,
                    std::source_location site = std::source_location::current()) const;

  // --- Execution -------------------------------------------------------------------------------
  // The CPU reference implementation. inputs[i] holds the value of node.input(i); outputs[o] holds
  // what the output storage held before (an undefined Tensor, or the buffer of a previous call
  // that the op may reuse when dtype and shape fit: see reuseOrAllocate() in
  // engine/tensor/tensor.h). Must not modify an input unless destroyMap() says so; an output that
  // viewMap() declares may be a view of its input.
  virtual void perform(const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) const;

  // --- Shapes ----------------------------------------------------------------------------------
  // Output shapes from the input shapes (each a ShapeExpr). Default: throws NotImplementedError.
  virtual std::vector<ShapeExpr> inferShape(const Apply& node,
                                            std::span<const ShapeExpr> inputShapes) const;

  // --- Cost ------------------------------------------------------------------------------------
  // The cost of one call of `node` given its inputs' shapes (one per input, in order; dtypes from
  // node.inputs()[i]->type()): flops and bytes read and written (conventions in op_cost.h). Must
  // not run the kernel. Default: unknown (OpCost{} with known == false).
  virtual OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const;

  // --- Derivatives -----------------------------------------------------------------------------
  // outputGrads[o]: the gradient of the cost with respect to node.output(o); never null (grad()
  // passes zeros for an output the cost does not depend on). Returns one Grad per input.
  // Default: Grad::undefined for every input.
  virtual std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const;
  // R-op: tangents[i] is the direction for input i, or null when that input is held fixed.
  // Returns one tangent per output (null for a zero tangent), or nullopt when the op has no
  // pushforward (Rop() then derives it from the pullback).
  virtual std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                         std::span<const VarPtr> tangents) const;

  virtual ViewMap viewMap() const { return {}; }
  virtual DestroyMap destroyMap() const { return {}; }
  // pattern[i][o]: does output o depend on input i? Default: every output on every input.
  virtual std::vector<std::vector<bool>> connectionPattern(const Apply& node) const;
  // For an op that overwrites an input (destroyMap), the same computation out of place
  // (Elemwise{add,inplace} -> Elemwise{add}); null otherwise. DebugMode checks the in-place
  // kernel against it.
  virtual OpPtr outOfPlace() const { return nullptr; }
  // False for ops that can be drawn and inspected but not run (opaque ops from files).
  virtual bool isExecutable() const { return true; }
  // Note [Frames] (engine/vm/vm.h): an op whose computation is a graph of its own (an OpFromGraph
  // body) returns it; its inputs stand for the node's inputs and its outputs for the node's
  // outputs. compile links it into a child program and the VM runs it as a frame, so observers
  // see, time and check its nodes like outer ones; perform stays the reference. The viewer draws
  // such a node as a group. Null for every other op.
  virtual const FunctionGraph* innerGraph() const { return nullptr; }
  // Whether compile may rewrite the inner graph with the outer mode (true), or must link it as
  // it is (an op whose body is meant to run exactly as written).
  virtual bool optimizeInnerGraph() const { return true; }

 protected:
  // Helper for outputTypes(): throws TypeError "Op{props}: input <i> (<name>): expected <expected>,
  // found <type>", naming the variable's creation site when it has one.
  [[noreturn]] void throwInputError(std::span<const VarPtr> inputs, int index,
                                    const std::string& expected) const;
  void checkInputCount(std::span<const VarPtr> inputs, std::size_t expected) const;

 private:
  mutable std::atomic<std::size_t> m_hash{0};  // 0: not computed yet
  // Note [Test values] in config.h.
  void computeTestValues(Apply& node) const;
  static bool valueSharesInput(const Tensor& out, std::span<const Tensor* const> inputs);
};

// The value a variable carries at graph-construction time: a Constant's or SharedVariable's value,
// else its test value; null when it has none.
const Tensor* valueOf(const Variable& v);

// An op a file names but the registry lacks (or whose props the registry refuses): it keeps the
// name and props so the graph can be drawn and inspected; it never executes.
class OpaqueOp final : public Op {
 public:
  OpaqueOp(std::string name, nlohmann::json props, std::string why);
  std::string name() const override { return m_name; }
  nlohmann::json props() const override { return m_props; }
  std::string str() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  bool isExecutable() const override { return false; }
  // Why the op is opaque ("no op named 'Foo' is registered").
  const std::string& why() const { return m_why; }

 private:
  std::string m_name;
  nlohmann::json m_props;
  std::string m_why;
};

}  // namespace tscope::engine
