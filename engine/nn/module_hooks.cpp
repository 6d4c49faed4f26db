// hookObserver: the execution hooks of a module tree as one ExecutionObserver (Note [Module scopes]
// in module.h).

#include "engine/graph/apply.h"
#include "engine/nn/module.h"

#include <unordered_map>

namespace tscope::engine::nn {

namespace {

class HookObserver final : public ExecutionObserver {
 public:
  explicit HookObserver(ModulePtr root) : m_root(std::move(root)) {}

  // The tree and its hooks may have changed since the last execution: look again.
  void onStart(VM&) override {
    m_hooked.clear();
    m_matches.clear();
    for (Module* m : m_root->modules())
      if (!m->executionHooks().pre.empty() || !m->executionHooks().post.empty())
        m_hooked.push_back(m);
  }

  void beforeNode(VM&, const NodeEvent& event) override {
    for (const Module* m : matching(event.node))
      for (const auto& [id, hook] : m->executionHooks().pre) hook(*m, event);
  }

  // Reverse order, so a module's post-hooks nest around its children's like its pre-hooks do.
  void afterNode(VM&, const NodeEvent& event) override {
    const std::vector<const Module*>& ms = matching(event.node);
    for (auto it = ms.rbegin(); it != ms.rend(); ++it)
      for (const auto& [id, hook] : (*it)->executionHooks().post) hook(**it, event);
  }

 private:
  // The hooked modules whose scopes hold the node, outermost first (pre-order); cached per node
  // for the execution.
  const std::vector<const Module*>& matching(const Apply& node) {
    auto [it, inserted] = m_matches.try_emplace(&node);
    if (inserted)
      for (const Module* m : m_hooked)
        for (const std::string& scope : m->scopes())
          if (scopeWithin(node.scope(), scope)) {
            it->second.push_back(m);
            break;
          }
    return it->second;
  }

  ModulePtr m_root;
  std::vector<const Module*> m_hooked;
  std::unordered_map<const Apply*, std::vector<const Module*>> m_matches;
};

}  // namespace

std::shared_ptr<ExecutionObserver> hookObserver(ModulePtr root) {
  if (!root) throw std::invalid_argument("nn::hookObserver: the root module is null");
  return std::make_shared<HookObserver>(std::move(root));
}

}  // namespace tscope::engine::nn
