#pragma once
// nn::Module: a tree of layers that own their parameters, as PyTorch's torch.nn.Module does.
//
//   struct Net : nn::Module {
//     std::shared_ptr<nn::Linear> fc1, fc2;
//     Net() : Module("Net") {
//       fc1 = registerModule("fc1", std::make_shared<nn::Linear>(784, 100));
//       fc2 = registerModule("fc2", std::make_shared<nn::Linear>(100, 10));
//     }
//     std::vector<VarPtr> forward(const std::vector<VarPtr>& in) override {
//       return {(*fc2)(relu((*fc1)(in[0])))};
//     }
//   };
//   auto net = std::make_shared<Net>();
//   VarPtr logits = (*net)(x);               // nodes scoped "fc1", "fc2"
//   net->namedParameters();                  // fc1.weight, fc1.bias, fc2.weight, fc2.bias
//   Function f = compile({x}, {logits}, net->updates());
//
// Note [Module names]: a module registered under `name` by its parent has the dotted path
// parent.path + "." + name from the root ("features.0"); its parameters and buffers are the
// engine's SharedVariables named by their full dotted path ("features.0.weight"), renamed when a
// subtree is registered under a new parent. namedParameters() / stateDict() use paths relative to
// the module they are called on, as PyTorch's do.
//
// Note [Module scopes]: calling a module opens the NameScopes of its place in the tree: its own
// name, and those of its ancestors up to the innermost one being called on this thread (all of
// them when none is: a root's name when setName() gave it one, then the path). So the nodes of
// blocks.0.fc get the scope "net/blocks/0/fc" whether net's forward calls fc through the
// ModuleList or not, the viewer groups by module, and the profiler's scope tree is the module
// tree. The module records each scope path it was called under; its execution hooks fire for the
// nodes whose scope is that path or below it (its children's nodes included, as a PyTorch
// module's forward includes its children's).
//
// Note [Build mode]: a Module builds a symbolic graph. train()/eval() decide what the *next* call
// builds (Dropout draws a mask or is the identity; BatchNorm2d normalizes with the batch's
// statistics and records updates of its running statistics, or uses them): build one graph in
// train mode and another in eval mode, as Theano users did. State a call must carry over to the
// next run (BatchNorm's running statistics, Dropout's generator) is returned by updates(), to
// pass to compile().

#include "engine/compile/function.h"
#include "engine/graph/variable.h"
#include "engine/vm/observer.h"

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tscope::engine::nn {

// Parameters and buffers by dotted name (sorted); the values are copies.
using StateDict = std::map<std::string, Tensor>;

// A state dict that does not fit the module: the message names the keys and, for a wrong shape,
// both shapes.
class StateDictError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What loadStateDict did not match (PyTorch's _IncompatibleKeys).
struct LoadResult {
  std::vector<std::string> missingKeys;     // the module's, absent from the dict
  std::vector<std::string> unexpectedKeys;  // the dict's, unknown to the module
};

class Module;
using ModulePtr = std::shared_ptr<Module>;
using NamedParameter = std::pair<std::string, std::shared_ptr<SharedVariable>>;

// Execution hooks see the node events of the module's nodes (Note [Module scopes]); build hooks
// run when the module is called symbolically (the outputs may be replaced, as a PyTorch forward
// hook's return value replaces the output).
using NodeHook = std::function<void(const Module& module, const NodeEvent& event)>;
using BuildPreHook = std::function<void(Module& module, const std::vector<VarPtr>& inputs)>;
using BuildHook = std::function<void(Module& module, const std::vector<VarPtr>& inputs,
                                     std::vector<VarPtr>& outputs)>;
using HookId = std::uint64_t;

class Module {
 public:
  explicit Module(std::string typeName);
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // "Linear", "Sequential", or the user's class name.
  const std::string& typeName() const { return m_typeName; }
  // The name its parent registered it under; a root's is empty unless setName() gave one.
  const std::string& name() const { return m_name; }
  // Gives a root module a name (its scope when called). Throws std::logic_error for a registered
  // module, whose name is its parent's.
  void setName(std::string name);
  // The dotted path from the root (Note [Module names]); empty for the root.
  const std::string& path() const { return m_path; }

  // --- Calling (Note [Module scopes]) ---
  // Opens the module's scope, runs the build pre-hooks, forward, then the build hooks.
  std::vector<VarPtr> call(const std::vector<VarPtr>& inputs);
  // call({x})[0].
  VarPtr operator()(const VarPtr& x);
  // The scope paths this module was called under, in first-call order.
  const std::vector<std::string>& scopes() const { return m_scopes; }

  // --- Tree ---
  // Adds (or replaces) child `name`, renaming its subtree (Note [Module names]). name: non-empty,
  // no '.' or '/'; throws std::invalid_argument naming the module and the name otherwise.
  template <class M>
  std::shared_ptr<M> registerModule(const std::string& name, std::shared_ptr<M> child) {
    addChild(name, child);
    return child;
  }
  const std::vector<std::pair<std::string, ModulePtr>>& namedChildren() const { return m_children; }
  // The child of that name, null when none.
  ModulePtr child(const std::string& name) const;
  // This module and every descendant, pre-order, with relative dotted names ("" for this one).
  std::vector<std::pair<std::string, Module*>> namedModules();
  std::vector<Module*> modules();

  // --- Parameters and buffers ---
  // A trainable value (a float tensor); the shared variable is named by its full dotted path.
  std::shared_ptr<SharedVariable> registerParameter(const std::string& name, const Tensor& value);
  // A state value that is not trained (BatchNorm's running statistics).
  std::shared_ptr<SharedVariable> registerBuffer(const std::string& name, const Tensor& value);
  // Own ones first, then the children's in registration order; names relative to this module.
  std::vector<NamedParameter> namedParameters(bool recurse = true) const;
  std::vector<std::shared_ptr<SharedVariable>> parameters(bool recurse = true) const;
  std::vector<NamedParameter> namedBuffers(bool recurse = true) const;
  // The parameter or buffer of that relative dotted name ("fc1.weight"), null when none.
  std::shared_ptr<SharedVariable> findState(const std::string& dottedName) const;

  // --- State dicts ---
  // Copies of every parameter and buffer by relative dotted name.
  StateDict stateDict() const;
  // Sets parameters and buffers from the dict (a value of another dtype is converted). Nothing is
  // set unless everything checks: a key whose shape differs is refused (StateDictError naming the
  // key and both shapes) in either mode; strict refuses missing and unexpected keys, non-strict
  // returns them.
  LoadResult loadStateDict(const StateDict& dict, bool strict = true);

  // --- Train / eval (Note [Build mode]) ---
  // Sets the mode of this module and every descendant.
  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return m_training; }

  // --- Updates (Note [Build mode]) ---
  // The updates recorded by every call of the modules of this tree, in module order.
  std::vector<Update> updates() const;
  // Forgets them (after compiling a training function, before building another graph).
  void clearUpdates();

  // --- Hooks ---
  HookId registerForwardPreHook(NodeHook hook);  // before each of the module's nodes runs
  HookId registerForwardHook(NodeHook hook);     // after each, its outputs computed
  HookId registerBuildPreHook(BuildPreHook hook);
  HookId registerBuildHook(BuildHook hook);
  // Removes the hook with that id from this module; false when it has none of that id.
  bool removeHook(HookId id);
  struct ExecutionHooks {
    std::vector<std::pair<HookId, NodeHook>> pre, post;
  };
  const ExecutionHooks& executionHooks() const { return m_execHooks; }

 protected:
  // The layer's computation; inputs and outputs as the module documents them.
  virtual std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) = 0;
  // Records an update a call makes (Note [Build mode]).
  void addUpdate(Update update) { m_updates.push_back(std::move(update)); }
  // What the module was built with, PyTorch's extra_repr: "in_features=4, out_features=3".
  virtual std::string extraRepr() const { return {}; }
  // "Linear(in_features=4, out_features=3) 'fc1'": for error messages.
  std::string where() const;
  // Throws std::invalid_argument "<where>: expected <n> inputs, found <k>" unless min <= k <= max.
  void expectInputs(const std::vector<VarPtr>& inputs, std::size_t min, std::size_t max) const;

 private:
  void addChild(const std::string& name, ModulePtr child);
  void setPath(const std::string& path);
  void collectState(const std::string& prefix, bool buffers, bool recurse,
                    std::vector<NamedParameter>& out) const;
  std::string fullName(const std::string& local) const;
  std::shared_ptr<SharedVariable> addState(const std::string& name, const Tensor& value,
                                           bool buffer);

  std::string m_typeName, m_name, m_path;
  Module* m_parent = nullptr;
  bool m_training = true;
  std::vector<std::pair<std::string, ModulePtr>> m_children;
  std::vector<NamedParameter> m_parameters, m_buffers;
  std::vector<Update> m_updates;
  std::vector<std::string> m_scopes;
  ExecutionHooks m_execHooks;
  std::vector<std::pair<HookId, BuildPreHook>> m_buildPreHooks;
  std::vector<std::pair<HookId, BuildHook>> m_buildHooks;
};

// An observer that runs the execution hooks of every module of the tree for the nodes in its
// scopes (Note [Module scopes]): add it to a compiled function (CompileOptions::observers or
// function.vm().addObserver). It keeps the tree alive; hooks registered later are seen at the next
// execution.
std::shared_ptr<ExecutionObserver> hookObserver(ModulePtr root);

// Whether a node of scope `scope` lies in scope path `moduleScope` (equal, or below it).
bool scopeWithin(std::string_view scope, std::string_view moduleScope);

}  // namespace tscope::engine::nn
