#pragma once
// Variable: a symbolic value in a graph. Constant: a Variable with a fixed value. SharedVariable: a
// named, persistent value that compiled functions read and update.

#include "engine/graph/source_site.h"
#include "engine/graph/type.h"
#include "engine/graph/walk_marks.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace tscope::engine {

class Apply;
class FunctionGraph;
class Variable;
using VarPtr = std::shared_ptr<Variable>;

// A use of a variable: input `index` of `node`, or graph output `index` when node is null.
// Note [Clients are exact]: a node that takes the same variable twice is two clients.
struct Client {
  Apply* node = nullptr;
  int index = 0;
  bool isOutput() const { return node == nullptr; }
  friend bool operator==(const Client&, const Client&) = default;
};

class Variable {
 public:
  enum class Kind : std::uint8_t { Regular, Constant, Shared };

  // A free variable (a graph input). Records the current scope and the caller's line.
  static VarPtr create(TensorType type, std::string name = {},
                       std::source_location site = std::source_location::current());
  virtual ~Variable();
  Variable(const Variable&) = delete;
  Variable& operator=(const Variable&) = delete;

  const TensorType& type() const { return m_type; }
  Kind kind() const { return m_kind; }
  // The Apply that computes this variable, or null for a free variable, constant or shared value.
  Apply* owner() const { return m_owner; }
  // The output position in owner()->outputs().
  int index() const { return m_index; }

  const std::string& name() const { return m_name; }
  void setName(std::string name) { m_name = std::move(name); }
  const std::string& scope() const { return m_scope; }
  void setScope(SharedString scope) { m_scope = std::move(scope); }
  const SourceSite& site() const { return m_site; }
  void setSite(SourceSite site) { m_site = std::move(site); }

  // Test value (Theano's tag.test_value): filtered against the type when set.
  const std::optional<Tensor>& testValue() const { return m_testValue; }
  void setTestValue(const Tensor& value);
  void clearTestValue() { m_testValue.reset(); }

  // Note [Node ids]: the id is unique among the variables and applies of the FunctionGraph that
  // holds this variable, stable for the graph's life and through clone() and .tsg round trips;
  // -1 before the variable joins a graph.
  std::int64_t id() const { return m_id; }
  FunctionGraph* fgraph() const { return m_fgraph; }
  // Sets the id before the object joins a graph (loaders and clones keep ids); throws GraphError
  // once it is in a graph, whose ids are the graph's to give.
  void presetId(std::int64_t id);

  // "x", else "Elemwise{add}.0" style for an owned variable, else the short type.
  std::string displayName() const;

  // A new variable of the same kind and type with the same name, scope, site, test value and id,
  // no owner and no graph (used by clone; a Constant keeps its value, a SharedVariable its
  // storage).
  virtual VarPtr cloneDetached() const;

 protected:
  Variable(TensorType type, Kind kind, std::string name);
  // Copies scope, site, test value and id (not the graph state) from another variable.
  void copyMetadataFrom(const Variable& other);

 private:
  friend class Apply;
  friend class FunctionGraph;
  friend class WalkMemo;

  // What graph walks read (owner, graph, slot, clients) shares the first cache line with the vtable
  // pointer: a walk over a 100k-node graph touches one line per variable, not three.
  // Graph-owned state (FunctionGraph is the only writer): the graph, the slot and the clients.
  FunctionGraph* m_fgraph = nullptr;
  Apply* m_owner = nullptr;
  std::size_t m_slot = 0;  // position in FunctionGraph's variable list
  int m_index = 0;
  Kind m_kind;
  std::vector<Client> m_clients;
  mutable WalkMark m_walk;  // Note [Walk marks]
  std::int64_t m_id = -1;
  TensorType m_type;
  std::string m_name;
  SharedString m_scope;
  SourceSite m_site;
  std::optional<Tensor> m_testValue;
};

class Constant final : public Variable {
 public:
  // The type has the value's dtype and full static shape.
  static std::shared_ptr<Constant> create(
      Tensor value, std::string name = {},
      std::source_location site = std::source_location::current());
  // Keeps `value` itself instead of the copy create() makes: the caller hands over a tensor that
  // nobody writes into (a .tsg file's memory-mapped bytes, read only when first used).
  static std::shared_ptr<Constant> adopt(Tensor value, std::string name = {});
  const Tensor& value() const { return m_value; }
  VarPtr cloneDetached() const override;

 private:
  Constant(Tensor value, std::string name);
  Tensor m_value;
};

class SharedVariable final : public Variable {
 public:
  // A shared value of the given type (defaults to the value's type with all dimensions known).
  static std::shared_ptr<SharedVariable> create(
      Tensor value, std::string name, std::optional<TensorType> type = std::nullopt,
      std::source_location site = std::source_location::current());
  // Like create, but keeps `value` itself (no copy) when the type fits without a conversion: the
  // caller hands the buffer over (a private memory map of a .tsg file's bytes).
  static std::shared_ptr<SharedVariable> adopt(Tensor value, std::string name,
                                               std::optional<TensorType> type = std::nullopt);
  // The value on the host. Note [Device-resident shared variables] (engine/rewrite/rules/
  // gpu_placement.h): when the last update left the newest value on a device, this copies it
  // back first (once per update; later reads copy nothing), so it is never stale.
  const Tensor& value() const;
  // The value where this variable's type puts it, with no copy when it is already there: the
  // host value for a host-typed variable; for a device-typed twin (onDevice) the device copy,
  // uploaded from the host value when there is none (the first call, or after a setValue).
  const Tensor& placedValue() const;
  // Whether a device holds the newest value (value() will copy it back).
  bool newestOnDevice() const;
  // Replaces the value (filtered against the type, on whichever device the value is); every
  // clone and twin of this variable sees it. A host value drops the device copy (the next
  // device call uploads the new one); a device value becomes the device copy and the host value
  // is brought back only when read.
  void setValue(const Tensor& value);
  // Like setValue, but keeps the given buffer instead of copying it when the type fits without a
  // conversion: the caller hands the buffer over and must not write into it afterwards (compiled
  // functions apply their updates this way).
  void setValueBorrowed(Tensor value);
  // A twin typed for `device` (same name, scope, site and id, no test value) that shares this
  // variable's value: the gpu phase makes a shared input device-resident with it.
  std::shared_ptr<SharedVariable> onDevice(Device device) const;
  VarPtr cloneDetached() const override;

 private:
  struct State;  // variable.cpp: the host value, the device copy, which one is newest
  SharedVariable(TensorType type, std::shared_ptr<State> state, std::string name);
  std::shared_ptr<State> m_state;  // shared by the clones and twins: one persistent value
};

}  // namespace tscope::engine
