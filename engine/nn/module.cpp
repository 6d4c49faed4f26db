#include "engine/nn/module.h"

#include "engine/graph/source_site.h"

#include <algorithm>
#include <atomic>
#include <sstream>

namespace tscope::engine::nn {

namespace {

std::atomic<HookId> g_nextHookId{1};

// The modules being called on this thread, outermost first (Note [Module scopes]).
thread_local std::vector<const Module*> t_active;

// The scopes a call opens, closed innermost first, and the module's place in t_active.
class CallScopes {
 public:
  CallScopes(const Module& module, const std::vector<const Module*>& chain) {
    for (const Module* m : chain)
      if (!m->name().empty()) m_scopes.push_back(std::make_unique<NameScope>(m->name()));
    t_active.push_back(&module);
  }
  ~CallScopes() {
    t_active.pop_back();
    while (!m_scopes.empty()) m_scopes.pop_back();
  }
  CallScopes(const CallScopes&) = delete;
  CallScopes& operator=(const CallScopes&) = delete;

 private:
  std::vector<std::unique_ptr<NameScope>> m_scopes;
};

std::string shapeText(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string joinKeys(const std::vector<std::string>& keys) {
  std::string s;
  for (const std::string& k : keys) s += (s.empty() ? "'" : ", '") + k + "'";
  return s;
}

void checkLocalName(const std::string& where, const std::string& what, const std::string& name) {
  if (name.empty() || name.find('.') != std::string::npos || name.find('/') != std::string::npos)
    throw std::invalid_argument(where + ": expected a " + what +
                                " name without '.' or '/', found '" + name + "'");
}

}  // namespace

Module::Module(std::string typeName) : m_typeName(std::move(typeName)) {}

Module::~Module() = default;

void Module::setName(std::string name) {
  if (m_parent)
    throw std::logic_error(where() + ": setName is for a root module; this one is named '" +
                           m_name + "' by its parent");
  checkLocalName(where(), "module", name);
  m_name = std::move(name);
}

std::string Module::where() const {
  std::string s = m_typeName + "(" + extraRepr() + ")";
  if (!m_path.empty()) s += " '" + m_path + "'";
  return s;
}

void Module::expectInputs(const std::vector<VarPtr>& inputs, std::size_t min,
                          std::size_t max) const {
  if (inputs.size() < min || inputs.size() > max) {
    const std::string want =
        min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max);
    throw std::invalid_argument(where() + ": expected " + want + " inputs, found " +
                                std::to_string(inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i])
      throw std::invalid_argument(where() + ": input " + std::to_string(i) + " is null");
}

std::vector<VarPtr> Module::call(const std::vector<VarPtr>& inputs) {
  // Note [Module scopes]: this module and its ancestors up to the innermost one being called.
  std::vector<const Module*> chain;
  for (const Module* m = this; m; m = m->m_parent) {
    if (m != this && std::find(t_active.begin(), t_active.end(), m) != t_active.end()) break;
    chain.insert(chain.begin(), m);
  }
  const CallScopes scopes(*this, chain);
  const std::string path = currentScope();
  if (std::find(m_scopes.begin(), m_scopes.end(), path) == m_scopes.end()) m_scopes.push_back(path);
  for (auto& [id, hook] : m_buildPreHooks) hook(*this, inputs);
  std::vector<VarPtr> outputs = forward(inputs);
  for (auto& [id, hook] : m_buildHooks) hook(*this, inputs, outputs);
  return outputs;
}

VarPtr Module::operator()(const VarPtr& x) {
  std::vector<VarPtr> out = call({x});
  if (out.empty()) throw std::logic_error(where() + ": forward returned no output");
  return out.front();
}

void Module::addChild(const std::string& name, ModulePtr child) {
  checkLocalName(where(), "child", name);
  if (!child) throw std::invalid_argument(where() + ": child '" + name + "' is null");
  for (const Module* m = this; m; m = m->m_parent)
    if (m == child.get())
      throw std::invalid_argument(where() + ": registering '" + name +
                                  "' would make the module its own descendant");
  child->m_parent = this;
  child->m_name = name;
  child->setPath(m_path.empty() ? name : m_path + "." + name);
  for (auto& [n, c] : m_children)
    if (n == name) {
      c = std::move(child);
      return;
    }
  m_children.emplace_back(name, std::move(child));
}

void Module::setPath(const std::string& path) {
  m_path = path;
  for (auto& [n, v] : m_parameters) v->setName(fullName(n));
  for (auto& [n, v] : m_buffers) v->setName(fullName(n));
  for (auto& [n, c] : m_children) c->setPath(m_path + "." + n);
}

std::string Module::fullName(const std::string& local) const {
  return m_path.empty() ? local : m_path + "." + local;
}

ModulePtr Module::child(const std::string& name) const {
  for (const auto& [n, c] : m_children)
    if (n == name) return c;
  return nullptr;
}

std::vector<std::pair<std::string, Module*>> Module::namedModules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (auto& [n, c] : m_children)
    for (auto& [sub, m] : c->namedModules()) out.emplace_back(sub.empty() ? n : n + "." + sub, m);
  return out;
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [n, m] : namedModules()) out.push_back(m);
  return out;
}

std::shared_ptr<SharedVariable> Module::addState(const std::string& name, const Tensor& value,
                                                 bool buffer) {
  checkLocalName(where(), buffer ? "buffer" : "parameter", name);
  if (!value.defined())
    throw std::invalid_argument(where() + ": the value of '" + name + "' is undefined");
  for (const auto* list : {&m_parameters, &m_buffers})
    for (const auto& [n, v] : *list)
      if (n == name)
        throw std::invalid_argument(where() + ": '" + name + "' is already registered");
  auto var = SharedVariable::create(value, fullName(name));
  (buffer ? m_buffers : m_parameters).emplace_back(name, var);
  return var;
}

std::shared_ptr<SharedVariable> Module::registerParameter(const std::string& name,
                                                          const Tensor& value) {
  return addState(name, value, false);
}

std::shared_ptr<SharedVariable> Module::registerBuffer(const std::string& name,
                                                       const Tensor& value) {
  return addState(name, value, true);
}

void Module::collectState(const std::string& prefix, bool buffers, bool recurse,
                          std::vector<NamedParameter>& out) const {
  for (const auto& [n, v] : buffers ? m_buffers : m_parameters) out.emplace_back(prefix + n, v);
  if (!recurse) return;
  for (const auto& [n, c] : m_children) c->collectState(prefix + n + ".", buffers, true, out);
}

std::vector<NamedParameter> Module::namedParameters(bool recurse) const {
  std::vector<NamedParameter> out;
  collectState("", false, recurse, out);
  return out;
}

std::vector<std::shared_ptr<SharedVariable>> Module::parameters(bool recurse) const {
  std::vector<std::shared_ptr<SharedVariable>> out;
  for (auto& [n, v] : namedParameters(recurse)) out.push_back(v);
  return out;
}

std::vector<NamedParameter> Module::namedBuffers(bool recurse) const {
  std::vector<NamedParameter> out;
  collectState("", true, recurse, out);
  return out;
}

std::shared_ptr<SharedVariable> Module::findState(const std::string& dottedName) const {
  for (const auto& list : {namedParameters(), namedBuffers()})
    for (const auto& [n, v] : list)
      if (n == dottedName) return v;
  return nullptr;
}

StateDict Module::stateDict() const {
  StateDict dict;
  for (const auto& list : {namedParameters(), namedBuffers()})
    for (const auto& [n, v] : list) dict[n] = v->value().clone();
  return dict;
}

LoadResult Module::loadStateDict(const StateDict& dict, bool strict) {
  std::map<std::string, std::shared_ptr<SharedVariable>> own;
  for (const auto& list : {namedParameters(), namedBuffers()})
    for (const auto& [n, v] : list) own[n] = v;
  LoadResult result;
  std::vector<std::string> mismatches;
  for (const auto& [key, value] : dict) {
    auto it = own.find(key);
    if (it == own.end()) {
      result.unexpectedKeys.push_back(key);
      continue;
    }
    const Shape& want = it->second->value().shape();
    if (!value.defined() || value.shape() != want)
      mismatches.push_back("'" + key + "': expected shape " + shapeText(want) +
                           " (the module's), found " +
                           (value.defined() ? shapeText(value.shape()) : "an undefined tensor") +
                           " (the state dict's)");
  }
  for (const auto& [key, var] : own)
    if (!dict.count(key)) result.missingKeys.push_back(key);
  if (!mismatches.empty()) {
    std::string msg = where() + ": loadStateDict: size mismatch for ";
    for (std::size_t i = 0; i < mismatches.size(); ++i) msg += (i ? "; " : "") + mismatches[i];
    throw StateDictError(msg);
  }
  if (strict && (!result.missingKeys.empty() || !result.unexpectedKeys.empty())) {
    std::string msg = where() + ": loadStateDict (strict): ";
    if (!result.missingKeys.empty()) msg += "missing keys " + joinKeys(result.missingKeys);
    if (!result.unexpectedKeys.empty())
      msg += std::string(result.missingKeys.empty() ? "" : "; ") + "unexpected keys " +
             joinKeys(result.unexpectedKeys);
    throw StateDictError(msg);
  }
  for (const auto& [key, value] : dict) {
    auto it = own.find(key);
    if (it == own.end()) continue;
    const DType dtype = it->second->value().dtype();
    it->second->setValue(value.dtype() == dtype ? value.contiguous() : value.astype(dtype));
  }
  return result;
}

void Module::train(bool on) {
  for (Module* m : modules()) m->m_training = on;
}

std::vector<Update> Module::updates() const {
  std::vector<Update> out = m_updates;
  for (const auto& [n, c] : m_children) {
    std::vector<Update> sub = c->updates();
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

void Module::clearUpdates() {
  for (Module* m : modules()) m->m_updates.clear();
}

HookId Module::registerForwardPreHook(NodeHook hook) {
  const HookId id = g_nextHookId++;
  m_execHooks.pre.emplace_back(id, std::move(hook));
  return id;
}

HookId Module::registerForwardHook(NodeHook hook) {
  const HookId id = g_nextHookId++;
  m_execHooks.post.emplace_back(id, std::move(hook));
  return id;
}

HookId Module::registerBuildPreHook(BuildPreHook hook) {
  const HookId id = g_nextHookId++;
  m_buildPreHooks.emplace_back(id, std::move(hook));
  return id;
}

HookId Module::registerBuildHook(BuildHook hook) {
  const HookId id = g_nextHookId++;
  m_buildHooks.emplace_back(id, std::move(hook));
  return id;
}

bool Module::removeHook(HookId id) {
  auto drop = [id](auto& list) {
    const auto before = list.size();
    std::erase_if(list, [id](const auto& entry) { return entry.first == id; });
    return list.size() != before;
  };
  // Not short-circuited on purpose: an id lives in exactly one list.
  const bool a = drop(m_execHooks.pre), b = drop(m_execHooks.post), c = drop(m_buildPreHooks),
             d = drop(m_buildHooks);
  return a || b || c || d;
}

bool scopeWithin(std::string_view scope, std::string_view moduleScope) {
  if (moduleScope.empty()) return true;
  if (scope.size() < moduleScope.size() || scope.substr(0, moduleScope.size()) != moduleScope)
    return false;
  return scope.size() == moduleScope.size() || scope[moduleScope.size()] == kScopeSeparator;
}

}  // namespace tscope::engine::nn
