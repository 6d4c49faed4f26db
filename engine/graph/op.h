#pragma once
// Op: an immutable operation. Its props (a small JSON record) define equality, hash and str; it
// types its inputs and declares which outputs view or destroy which inputs.
//
// Adding an op: subclass Op, implement name(), props(), outputTypes() (throw TypeError with the
// op, the argument and both types when an input does not fit), declare viewMap()/destroyMap() when
// an output aliases or overwrites an input, and register a factory in your family's
// registerXxxOps(OpRegistry&) so files can name it.

#include "engine/graph/apply.h"
#include "engine/graph/type.h"

#include <nlohmann/json.hpp>

#include <map>
#include <source_location>
#include <span>
#include <string>
#include <vector>

namespace tscope::engine {

// output index -> the input indices that output aliases (view) or overwrites (destroy).
using ViewMap = std::map<int, std::vector<int>>;
using DestroyMap = std::map<int, std::vector<int>>;

class Op : public std::enable_shared_from_this<Op> {
 public:
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
  std::size_t hash() const;

  // The output types for these inputs; throws TypeError when they do not fit.
  virtual std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const = 0;
  // Checks the inputs, builds the Apply (stamped with the current scope and the caller's site).
  ApplyPtr makeNode(std::vector<VarPtr> inputs,
                    std::source_location site = std::source_location::current()) const;
  // makeNode(...)->output(0): for single-output ops.
  VarPtr operator()(std::vector<VarPtr> inputs,
                    std::source_location site = std::source_location::current()) const;

  virtual ViewMap viewMap() const { return {}; }
  virtual DestroyMap destroyMap() const { return {}; }
  // pattern[i][o]: does output o depend on input i? Default: every output on every input.
  virtual std::vector<std::vector<bool>> connectionPattern(const Apply& node) const;
  // False for ops that can be drawn and inspected but not run (opaque ops from files).
  virtual bool isExecutable() const { return true; }

 protected:
  // Helper for outputTypes(): throws TypeError "Op{props}: input <i> (<name>): expected <expected>,
  // found <type>", naming the variable's creation site when it has one.
  [[noreturn]] void throwInputError(std::span<const VarPtr> inputs, int index,
                                    const std::string& expected) const;
  void checkInputCount(std::span<const VarPtr> inputs, std::size_t expected) const;
};

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
