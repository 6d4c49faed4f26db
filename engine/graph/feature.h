#pragma once
// Feature: a listener attached to a FunctionGraph (Theano's fgraph features).
//
// The contract: onAttach when attached (a feature may refuse by throwing), onDetach when removed
// or when the graph dies; onImport for every node that enters the graph (in topological order),
// onPrune for every node that leaves it; onChangeInput after an input of a node (or a graph output,
// node == null) was changed from oldVar to newVar; orderings() adds "must run before" constraints
// that toposort() honours; validate() throws InconsistencyError when the graph is not acceptable.
// onChangeBegin/onChangeEnd bracket one outermost graph edit (a replaceAll, an import, ...): every
// event of that edit happens between them.

#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tscope::engine {

class Apply;
class FunctionGraph;
class Variable;
using VarPtr = std::shared_ptr<Variable>;

// node -> the nodes that must run before it.
using Orderings = std::unordered_map<Apply*, std::vector<Apply*>>;

class Feature {
 public:
  virtual ~Feature() = default;
  virtual void onAttach(FunctionGraph& fg) {}
  virtual void onDetach(FunctionGraph& fg) {}
  virtual void onImport(FunctionGraph& fg, Apply& node, std::string_view reason) {}
  virtual void onPrune(FunctionGraph& fg, Apply& node, std::string_view reason) {}
  virtual void onChangeInput(FunctionGraph& fg, Apply* node, int index, const VarPtr& oldVar,
                             const VarPtr& newVar, std::string_view reason) {}
  virtual void onChangeBegin(FunctionGraph& fg, std::string_view reason) {}
  virtual void onChangeEnd(FunctionGraph& fg, std::string_view reason) {}
  virtual Orderings orderings(const FunctionGraph& fg) const { return {}; }
  virtual void validate(const FunctionGraph& fg) const {}
};

}  // namespace tscope::engine
